package queues

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDisciplines: the description table has one entry per name of
// SpecNames, in its order, each with an about line and a source; its keys
// are the keys New reads, in New's order; and a spec giving every key its
// listed default builds the same discipline as the bare name.
func TestDisciplines(t *testing.T) {
	ds := Disciplines()
	names := make([]string, len(ds))
	for i, d := range ds {
		names[i] = d.Name
	}
	require.Equal(t, SpecNames(), names)
	for _, d := range ds {
		require.NotEmpty(t, d.About, d.Name)
		require.NotEmpty(t, d.Source, d.Name)
		// New names a discipline's keys when it is given one it lacks.
		_, err := New(d.Name+":no_such_key=1", rand.New(rand.NewPCG(1, 1)))
		require.Error(t, err)
		var keys, opts []string
		for _, k := range d.Keys {
			require.NotEmpty(t, k.Default, "%s %s", d.Name, k.Key)
			require.NotEmpty(t, k.Takes, "%s %s", d.Name, k.Key)
			keys = append(keys, k.Key)
			opts = append(opts, k.Key+"="+k.Default)
		}
		if len(keys) == 0 {
			require.ErrorContains(t, err, d.Name+" takes no options")
			continue
		}
		require.True(t, strings.HasSuffix(err.Error(), "; valid keys: "+strings.Join(keys, ", ")), "%s: %v", d.Name, err)

		spec := d.Name + ":" + strings.Join(opts, ",")
		bare, err := New(d.Name, rand.New(rand.NewPCG(1, 1)))
		require.NoError(t, err)
		full, err := New(spec, rand.New(rand.NewPCG(1, 1)))
		require.NoError(t, err, spec)
		require.True(t, reflect.DeepEqual(bare, full), "%s: the listed defaults build another discipline than the bare name", spec)
	}
}
