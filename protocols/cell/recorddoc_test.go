package cell

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRecordDoc: every JSON field of a record, its nested types'
// included, is named in docs/records.md (in backticks), and so is every
// nested type; a field added without its documentation fails here.
func TestRecordDoc(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "records.md"))
	require.NoError(t, err)
	text := string(doc)
	var missing []string
	types := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Array || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || types[typ] {
			return
		}
		types[typ] = true
		if !strings.Contains(text, "`"+typ.Name()+"`") {
			missing = append(missing, "type "+typ.Name())
		}
		for _, f := range reflect.VisibleFields(typ) {
			if !f.IsExported() || f.Anonymous {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if !strings.Contains(text, "`"+name+"`") {
				missing = append(missing, typ.Name()+"."+f.Name+" ("+name+")")
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeFor[Record]())
	slices.Sort(missing)
	require.Empty(t, missing, "fields of Record not named in docs/records.md")
	require.GreaterOrEqual(t, len(types), 6, "Record and its nested types") // Record, WireRecord, Phases, ConnState, QueueSummary, NodeRow
	require.Contains(t, text, "`"+CountsAtLastCompletion+"`")
	require.Contains(t, text, "`"+CountsAtWindowEnd+"`")
}
