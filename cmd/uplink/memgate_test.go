package main

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// sizes is a memGate need of fixed sizes, one per waiting cell.
func sizes(b ...int64) func(k int) int64 { return func(k int) int64 { return b[k] } }

// acquired admits one cell of b bytes, which must start at once.
func acquired(t *testing.T, g *memGate, b int64) {
	t.Helper()
	k, got, ok := g.admit(context.Background(), 1, sizes(b))
	require.True(t, ok)
	require.Equal(t, 0, k)
	require.Equal(t, b, got)
}

// inUse is the gate's running cells' count and bytes.
func inUse(g *memGate) (int, int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.running), sum(g.running)
}

// TestMemGate: a cell starts beside others only within jobs and within
// the memory; one that does not fit waits for a release and then runs
// alone; a cell larger than the memory still runs when nothing else does;
// with no memory figure only jobs limits; a cancelled wait returns false.
func TestMemGate(t *testing.T) {
	const gib = 1 << 30
	ctx := context.Background()
	g := newMemGate(2, 20*gib)
	acquired(t, g, 6*gib)
	acquired(t, g, 7*gib) // 13 GiB of 20

	g.mu.Lock()
	require.False(t, g.fits(1), "a third cell past --jobs 2")
	g.mu.Unlock()

	g.release(7 * gib)
	g.mu.Lock()
	require.False(t, g.fits(14*gib+1), "6 + 14 GiB and a byte is over 20")
	require.True(t, g.fits(14*gib))
	g.mu.Unlock()

	// A 15 GiB cell waits for the 6 GiB one, then runs alone.
	got := make(chan bool)
	go func() {
		_, _, ok := g.admit(ctx, 1, sizes(15*gib))
		got <- ok
	}()
	select {
	case <-got:
		t.Fatal("a 15 GiB cell started beside a 6 GiB one within 20 GiB")
	case <-time.After(50 * time.Millisecond):
	}
	g.release(6 * gib)
	require.True(t, <-got)
	n, b := inUse(g)
	require.Equal(t, 1, n)
	require.Equal(t, int64(15*gib), b)
	g.mu.Lock()
	require.False(t, g.fits(5*gib+1))
	g.mu.Unlock()
	g.release(15 * gib)

	// Alone, even a cell larger than the memory is let in: whether it may
	// run at all is checkMemory's question, asked before the sweep.
	acquired(t, g, 30*gib)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, _, ok := g.admit(cctx, 1, sizes(1))
	require.False(t, ok, "a cancelled wait")

	free := newMemGate(2, 0)
	acquired(t, free, 100*gib)
	acquired(t, free, 100*gib)
	free.mu.Lock()
	require.False(t, free.fits(1))
	free.mu.Unlock()
}

// TestMemGateAsksAgain: a waiting cell's estimate is asked again after
// each release, so a cell estimated too large to run beside another starts
// beside it once a finished cell has brought its estimate down, and counts
// the estimate it started with.
func TestMemGateAsksAgain(t *testing.T) {
	const gib = 1 << 30
	g := newMemGate(2, 20*gib)
	acquired(t, g, 12*gib)
	acquired(t, g, 6*gib)
	var need atomic.Int64
	need.Store(12 * gib) // 12 + 12 > 20
	got := make(chan int64)
	go func() {
		_, n, ok := g.admit(context.Background(), 1, func(int) int64 { return need.Load() })
		require.True(t, ok)
		got <- n
	}()
	select {
	case <-got:
		t.Fatal("a 12 GiB cell started beside a 12 GiB one within 20 GiB")
	case <-time.After(50 * time.Millisecond):
	}
	need.Store(7 * gib) // the finished 6 GiB cell measured its kind
	g.release(6 * gib)
	require.Equal(t, int64(7*gib), <-got)
	n, b := inUse(g)
	require.Equal(t, 2, n)
	require.Equal(t, int64(19*gib), b)
}

// TestMemGateBackfill: while the first waiting cell does not fit, a later
// one that fits starts in its place only where it cannot delay the first.
func TestMemGateBackfill(t *testing.T) {
	const gib = 1 << 30
	ctx := context.Background()

	// A whole message's seeds (14 GiB) cannot pair in 22 GiB; a 7 GiB
	// segmented cell behind them fits beside each, so it runs beside the
	// first while the second waits, and the second starts when the first
	// ends, as it would have. The 9 GiB cell before it does not fit.
	g := newMemGate(2, 22*gib)
	acquired(t, g, 14*gib)
	k, b, ok := g.admit(ctx, 3, sizes(14*gib, 9*gib, 7*gib))
	require.True(t, ok)
	require.Equal(t, 2, k, "the first later cell that fits")
	require.Equal(t, int64(7*gib), b)
	g.mu.Lock()
	require.False(t, g.fits(1), "both slots taken")
	g.mu.Unlock()

	// A later cell that fits now but not beside the first waits: the 8
	// GiB cell would hold the 15 GiB one back when the 14 GiB cell ends.
	g = newMemGate(2, 22*gib)
	acquired(t, g, 14*gib)
	got := make(chan int)
	go func() {
		k, _, ok := g.admit(ctx, 2, sizes(15*gib, 8*gib))
		require.True(t, ok)
		got <- k
	}()
	select {
	case k := <-got:
		t.Fatalf("cell %d started beside the 14 GiB cell", k)
	case <-time.After(50 * time.Millisecond):
	}
	g.release(14 * gib)
	require.Equal(t, 0, <-got, "the first, once the 14 GiB cell ended")

	// Three jobs: running 10 and 5 GiB, the first waiting 12 GiB fits
	// beside the 10 once the 5 ends; a 3 GiB cell fits now (18 of 22) but
	// would then hold it back (25), so it waits.
	g = newMemGate(3, 22*gib)
	acquired(t, g, 10*gib)
	acquired(t, g, 5*gib)
	g.mu.Lock()
	require.True(t, g.fits(3*gib))
	require.False(t, g.passes(12*gib, 3*gib))
	g.mu.Unlock()

	// A first cell larger than the memory runs alone: nothing passes it.
	g = newMemGate(2, 22*gib)
	acquired(t, g, 5*gib)
	g.mu.Lock()
	require.True(t, g.fits(3*gib))
	require.False(t, g.passes(30*gib, 3*gib))
	g.mu.Unlock()

	// One job: nothing runs beside anything, so nothing passes.
	g = newMemGate(1, 0)
	acquired(t, g, 1)
	g.mu.Lock()
	require.False(t, g.passes(1, 1))
	g.mu.Unlock()
}

// TestAloneWeights: for the ETA, a cell that cannot run beside the
// smallest other cell within the memory counts jobs times its wall time;
// the others, and every cell without a memory figure or with one job,
// count once.
func TestAloneWeights(t *testing.T) {
	const gib = 1 << 30
	est := []time.Duration{600 * time.Second, 200 * time.Second, 250 * time.Second}
	rss := []int64{14 * gib, 6 * gib, 7 * gib}
	// 14 + 6 > 18: the whole message runs alone; 6 + 7 fit.
	require.Equal(t, []time.Duration{1200 * time.Second, 200 * time.Second, 250 * time.Second}, aloneWeights(est, rss, 2, 18*gib))
	require.Equal(t, est, aloneWeights(est, rss, 2, 22*gib))
	require.Equal(t, est, aloneWeights(est, rss, 1, 18*gib))
	require.Equal(t, est, aloneWeights(est, rss, 2, 0))
	// The smallest cell's partner is the second smallest: 6 + 7 > 12.
	require.Equal(t, []time.Duration{1200 * time.Second, 400 * time.Second, 500 * time.Second}, aloneWeights(est, rss, 2, 12*gib))
}
