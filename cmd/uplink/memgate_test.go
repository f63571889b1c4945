package main

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// size is a memGate need of a fixed number of bytes.
func size(b int64) func() int64 { return func() int64 { return b } }

// acquired is memGate.acquire of a fixed size that must succeed, counting
// that size.
func acquired(t *testing.T, g *memGate, b int64) {
	t.Helper()
	got, ok := g.acquire(context.Background(), size(b))
	require.True(t, ok)
	require.Equal(t, b, got)
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
		_, ok := g.acquire(ctx, size(15*gib))
		got <- ok
	}()
	select {
	case <-got:
		t.Fatal("a 15 GiB cell started beside a 6 GiB one within 20 GiB")
	case <-time.After(50 * time.Millisecond):
	}
	g.release(6 * gib)
	require.True(t, <-got)
	g.mu.Lock()
	require.Equal(t, 1, g.running)
	require.Equal(t, int64(15*gib), g.inUse)
	require.False(t, g.fits(5*gib+1))
	g.mu.Unlock()
	g.release(15 * gib)

	// Alone, even a cell larger than the memory is let in: whether it may
	// run at all is checkMemory's question, asked before the sweep.
	acquired(t, g, 30*gib)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, ok := g.acquire(cctx, size(1))
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
		n, ok := g.acquire(context.Background(), need.Load)
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
	g.mu.Lock()
	require.Equal(t, 2, g.running)
	require.Equal(t, int64(19*gib), g.inUse)
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
