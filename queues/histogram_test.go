package queues

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/des"
)

// TestHistogramBuckets: the non-empty buckets hold every duration added,
// each within its bounds, shortest first; the last bucket reaches the
// largest duration.
func TestHistogramBuckets(t *testing.T) {
	var h Histogram
	require.Empty(t, h.Buckets())
	ds := []des.Time{0, des.Microsecond, 3 * des.Microsecond, 3 * des.Microsecond, des.Millisecond, 40 * 24 * 3600 * des.Second}
	for _, d := range ds {
		h.Add(d)
	}
	bs := h.Buckets()
	var total uint64
	for i, b := range bs {
		require.NotZero(t, b.Count)
		require.Less(t, b.Lower, b.Upper)
		if i > 0 {
			require.LessOrEqual(t, bs[i-1].Upper, b.Lower)
		}
		total += b.Count
	}
	require.Equal(t, h.Count(), total)
	require.Equal(t, des.Time(0), bs[0].Lower)
	require.Equal(t, uint64(2), bs[0].Count) // 0 and 1 µs
	require.Equal(t, h.Max(), bs[len(bs)-1].Upper)
	for _, d := range ds[1:] {
		n := 0
		for _, b := range bs {
			if d > b.Lower && d <= b.Upper {
				n++
			}
		}
		require.Equal(t, 1, n, "duration %v", d)
	}
}
