package sweep

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/protocols/cell"
)

// The same cell as a schema-0 line (no schema; no counts_at: the counts
// were read at the window's end, and publisher_bytes is the uplink's
// figure; no late_receivers) and as the schema-1 line a current build
// writes of it.
const (
	schema0Line = `{"key":"k","arm":"wholend","profile":"harness","version":"v1","n":5,"total":4,"completed":3,"payload_bytes":1024,` +
		`"window_s":8,"p50_s":0.7,"p90_s":null,"p99_s":null,"last_s":null,"publisher_bytes":1500,"completion_us":[500000,700000,1310000]}`
	schema1Line = `{"schema":1,"key":"k","arm":"wholend","profile":"harness","version":"v1","n":5,"total":4,"completed":3,"payload_bytes":1024,` +
		`"window_s":8,"p50_s":0.7,"p90_s":null,"p99_s":null,"last_s":null,"publisher_bytes":0,"publisher_wire_bytes":1500,` +
		`"counts_at":"window end","counts_at_s":8,"late_receivers":2,"completion_us":[500000,700000,1310000]}`
)

// TestParseRecordSchema: ParseRecord reads a schema-0 line and its
// schema-1 form to the same record, at the current schema, and refuses a
// schema newer than this build's, saying why.
func TestParseRecordSchema(t *testing.T) {
	old, err := ParseRecord([]byte(schema0Line))
	require.NoError(t, err)
	cur, err := ParseRecord([]byte(schema1Line))
	require.NoError(t, err)
	require.Equal(t, cur, old)
	require.Equal(t, cell.RecordSchema, old.Schema)
	require.Equal(t, cell.CountsAtWindowEnd, old.CountsAt)
	require.Equal(t, 2, *old.Late)
	require.NoError(t, CheckRecord(old))

	_, err = ParseRecord([]byte(`{"schema":99,"key":"k","arm":"wholend"}`))
	require.EqualError(t, err, fmt.Sprintf("record schema 99 is newer than this uplink's (%d): update uplink", cell.RecordSchema))
	var se *cell.SchemaError
	require.ErrorAs(t, err, &se)
	require.Equal(t, 99, se.Schema)
}

// TestCheckRecordSchema: CheckRecord takes only the current schema: a
// newer one, or an old one not migrated, is wrong; a records file with a
// newer record reports its line.
func TestCheckRecordSchema(t *testing.T) {
	r, err := ParseRecord([]byte(schema1Line))
	require.NoError(t, err)
	require.NoError(t, CheckRecord(r))
	r.Schema = 99
	require.EqualError(t, CheckRecord(r), fmt.Sprintf("record schema 99 is newer than this uplink's (%d): update uplink", cell.RecordSchema))
	r.Schema = 0
	require.ErrorContains(t, CheckRecord(r), fmt.Sprintf("record schema 0 is older than this uplink's (%d) and was not migrated", cell.RecordSchema))

	path := filepath.Join(t.TempDir(), "r.jsonl")
	newer := `{"schema":99,"key":"n","arm":"wholend","profile":"harness","version":"v9","n":5,"total":4,"completed":4,"payload_bytes":1024}`
	require.NoError(t, os.WriteFile(path, []byte(schema0Line+"\n"+newer+"\n"+schema1Line+"\n"), 0o644))
	n, problems, err := CheckFile(path)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Len(t, problems, 1)
	require.Equal(t, 2, problems[0].Line)
	require.ErrorContains(t, problems[0].Err, "record schema 99 is newer")

	recs, rep, err := Merge([]string{path}, MergeOptions{})
	require.NoError(t, err)
	require.Len(t, recs, 1)
	require.Equal(t, 2, rep.Duplicates+rep.Written)
	require.Len(t, rep.Problems, 1)
}

// TestRecordUnknownField: a line with a field this build does not know (a
// newer build added it, at the top or inside a known object) reads and
// checks valid, naming the field; written again (a merge, an export) it is
// the line as read, so the field is kept; a record without one writes as
// before.
func TestRecordUnknownField(t *testing.T) {
	known, err := ParseRecord([]byte(schema1Line))
	require.NoError(t, err)
	require.Empty(t, known.Unknown)
	require.Nil(t, known.RawLine)

	for line, field := range map[string]string{
		schema1Line[:len(schema1Line)-1] + `,"stamp_from_later":[186.6]}`:                 "stamp_from_later",
		schema1Line[:len(schema1Line)-1] + `,"wire_form":{"messages":32,"from_later":1}}`: "from_later",
	} {
		r, err := ParseRecord([]byte(line + "  "))
		require.NoError(t, err)
		require.Equal(t, field, r.Unknown)
		require.NoError(t, CheckRecord(r))
		var buf bytes.Buffer
		require.NoError(t, WriteRecords(&buf, []*cell.Record{known, r}))
		lines := strings.Split(buf.String(), "\n")
		require.Len(t, lines, 3)
		require.Equal(t, line, lines[1], "the line as read")
		again, err := ParseRecord([]byte(lines[1]))
		require.NoError(t, err)
		require.Equal(t, r, again)

		// Without its line (a record not read through ParseRecord) it is
		// refused: the field would be lost.
		r.RawLine = nil
		_, err = MarshalRecord(r)
		require.EqualError(t, err, fmt.Sprintf(`record k (arm wholend, profile harness, seed 0) holds a field this build does not know, %q (uplink v1 wrote it), and not the line it was read from: written again it would lose the field`, field))
	}

	var buf bytes.Buffer
	require.NoError(t, WriteRecords(&buf, []*cell.Record{known}))
	again, err := ParseRecord(bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}))
	require.NoError(t, err)
	require.Equal(t, known, again)
}
