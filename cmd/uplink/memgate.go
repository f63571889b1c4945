package main

import (
	"context"
	"sync"
	"time"
)

// memGate admits cells to run: at most jobs at once, and a cell only while
// the estimated memory of the cells running, its own added, fits in mem.
// A cell that does not fit beside the others waits for them to finish and
// then runs alone; one that does not fit even alone is refused before the
// sweep starts (checkMemory). Cells are admitted in their order, so a
// large cell is not passed over by the smaller ones behind it. mem 0: no
// memory limit.
type memGate struct {
	jobs int
	mem  int64

	mu      sync.Mutex
	running int
	inUse   int64
	changed chan struct{} // closed and replaced on every release
}

func newMemGate(jobs int, mem int64) *memGate {
	return &memGate{jobs: max(jobs, 1), mem: mem, changed: make(chan struct{})}
}

// fits reports whether a cell of rss bytes may start now; g.mu held.
func (g *memGate) fits(rss int64) bool {
	if g.running == 0 {
		return true
	}
	return g.running < g.jobs && (g.mem == 0 || g.inUse+rss <= g.mem)
}

// acquire waits until a cell may start and counts it in, returning the
// bytes it counted (for release); false if ctx ended first. need is the
// cell's estimated memory, asked again after every release, since a
// finished cell can change the estimate (sweep.Estimator).
func (g *memGate) acquire(ctx context.Context, need func() int64) (int64, bool) {
	for {
		rss := need()
		g.mu.Lock()
		if g.fits(rss) {
			g.running++
			g.inUse += rss
			g.mu.Unlock()
			return rss, true
		}
		ch := g.changed
		g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return 0, false
		}
	}
}

// release counts out a cell of rss bytes that acquire let in.
func (g *memGate) release(rss int64) {
	g.mu.Lock()
	g.running--
	g.inUse -= rss
	close(g.changed)
	g.changed = make(chan struct{})
	g.mu.Unlock()
}

// aloneWeights is the cells' estimated wall times est weighted for the
// ETA: a cell of rss[i] bytes that cannot run beside even the smallest
// other cell within mem holds every one of the jobs slots while it runs,
// so it counts jobs times its wall time.
func aloneWeights(est []time.Duration, rss []int64, jobs int, mem int64) []time.Duration {
	out := make([]time.Duration, len(est))
	copy(out, est)
	if mem == 0 || jobs < 2 || len(rss) < 2 {
		return out
	}
	// The two smallest estimates: the smallest other cell of cell i is
	// the smallest, or the second smallest where i is the smallest.
	small := [2]int{-1, -1}
	for i, r := range rss {
		switch {
		case small[0] < 0 || r < rss[small[0]]:
			small[1], small[0] = small[0], i
		case small[1] < 0 || r < rss[small[1]]:
			small[1] = i
		}
	}
	for i, r := range rss {
		other := rss[small[0]]
		if i == small[0] {
			other = rss[small[1]]
		}
		if r+other > mem {
			out[i] = est[i] * time.Duration(jobs)
		}
	}
	return out
}
