package queues

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/des"
)

// TestSamplerMeanExact: an interval's mean sojourn is its own packets'
// exact mean. The first interval's one packet waits 5 ms + 1 ns; the
// second's waits nothing, which a difference of running means times
// counts would read as -1 ns (the running mean 2 500 000.5 ns truncated);
// the third's two wait 1 and 2 ns.
func TestSamplerMeanExact(t *testing.T) {
	q, err := NewFIFO(0, 0)
	require.NoError(t, err)
	s := Sampler{Q: q}
	pass := func(at, sojourn des.Time) {
		t.Helper()
		q.Enqueue(mkpkt(0, 100, 0), at)
		require.NotNil(t, q.Dequeue(at+sojourn))
	}

	pass(0, 5*ms+1)
	x := s.Next()
	require.Equal(t, uint64(1), x.Sojourned)
	require.Equal(t, 5.000001, x.SojournMeanMS)

	pass(10*ms, 0)
	x = s.Next()
	require.Equal(t, uint64(1), x.Sojourned)
	require.Zero(t, x.SojournMeanMS)
	require.Equal(t, ",0.000000,0,0,0,0", string(x.AppendCSV(nil)))

	pass(20*ms, 1)
	pass(21*ms, 2)
	x = s.Next()
	require.Equal(t, uint64(2), x.Sojourned)
	require.Equal(t, 1.5e-6, x.SojournMeanMS)

	// No packet dequeued: no mean, an empty field.
	x = s.Next()
	require.Zero(t, x.Sojourned)
	require.Equal(t, ",,0,0,0,0", string(x.AppendCSV(nil)))
}

// TestSamplerMeanWraps: the running sum is kept modulo 2^64, and an
// interval's sum is still its exact difference across the wrap.
func TestSamplerMeanWraps(t *testing.T) {
	q, err := NewFIFO(0, 0)
	require.NoError(t, err)
	q.Stats().Sojourn.nsum = math.MaxUint64 - 5
	s := Sampler{Q: q}
	s.Next()
	q.Enqueue(mkpkt(0, 100, 0), 0)
	q.Dequeue(20)
	x := s.Next()
	require.Equal(t, uint64(1), x.Sojourned)
	require.Equal(t, 20e-6, x.SojournMeanMS)
}

// TestHistogramMergeSum: a merged histogram's sum is both of theirs, so
// a sampler over merged statistics reads the same means.
func TestHistogramMergeSum(t *testing.T) {
	var a, b Histogram
	a.Add(3)
	a.Add(-7) // counted as 0
	b.Add(4 * des.Second)
	a.Merge(&b)
	require.Equal(t, uint64(3), a.Count())
	require.Equal(t, uint64(3+4*des.Second), a.nsum)
}
