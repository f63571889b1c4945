package queues

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/internal/unitcases"
)

// TestSizeUnitsSpec: every spelling of unitcases.Sizes reads as its value
// in a spec's byte count (bfifo's limit, fq_codel's memory_limit) or is
// refused, an ambiguous unit with des's error giving both readings, as
// des.ParseBytes reads it.
func TestSizeUnitsSpec(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range unitcases.Sizes {
		q, err := New("bfifo:limit="+c.In, rng)
		q2, err2 := New("fq_codel:memory_limit="+c.In, rng)
		if c.Err != "" {
			want := "want a byte count"
			if strings.Contains(c.Err, "ambiguous") {
				want = c.Err
			}
			require.ErrorContains(t, err, want, c.In)
			require.ErrorContains(t, err2, want, c.In)
			continue
		}
		require.NoError(t, err, c.In)
		require.NoError(t, err2, c.In)
		_, b := q.(*FIFO).Limits()
		require.Equal(t, c.Bytes, int64(b), c.In)
		require.Equal(t, c.Bytes, int64(q2.(*FQCoDel).Config().MemoryLimit), c.In)
	}
}
