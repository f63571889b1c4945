package main

import (
	"context"
	"slices"
	"sync"
	"time"
)

// memGate admits cells to run: at most jobs at once, and a cell only while
// the estimated memory of the cells running, its own added, fits in mem.
// A cell that does not fit beside the others waits for them to finish
// and, if it fits beside none, runs alone; one that does not fit even
// alone is refused before the sweep starts (checkMemory). Cells are
// admitted in their order, except that while the first waiting cell does
// not fit, a later one that fits may start in its place where it cannot
// delay the first (backfilling, admit): so a run of large cells that
// cannot pair, a whole message's seeds say, leaves the other cores to the
// smaller cells behind it. mem 0: no memory limit.
type memGate struct {
	jobs int
	mem  int64

	mu      sync.Mutex
	running []int64       // the counted sizes of the cells running
	changed chan struct{} // closed and replaced on every release
}

// maxBackfillRunning bounds the running cells over whose subsets admit
// looks for a cell that may pass the first (2^n subsets): with more, no
// cell passes.
const maxBackfillRunning = 16

func newMemGate(jobs int, mem int64) *memGate {
	return &memGate{jobs: max(jobs, 1), mem: mem, changed: make(chan struct{})}
}

// fitsBeside reports whether a cell of rss bytes may start beside cells
// running with n cells and inUse bytes: alone always; else within jobs
// and the memory.
func (g *memGate) fitsBeside(n int, inUse, rss int64) bool {
	if n == 0 {
		return true
	}
	return n < g.jobs && (g.mem == 0 || inUse+rss <= g.mem)
}

// fits reports whether a cell of rss bytes may start now; g.mu held.
func (g *memGate) fits(rss int64) bool {
	return g.fitsBeside(len(g.running), sum(g.running), rss)
}

// admit waits until one of n waiting cells, in their order, may start,
// counts it in and returns its index and the bytes counted (for release);
// false if ctx ended first. need(k) is cell k's estimated memory, asked
// again after every release, since a finished cell can change the
// estimate (sweep.Estimator); it is called with the gate locked. Cell 0
// starts as soon as it fits. While it does not, the first later cell that
// fits now starts instead if it cannot delay cell 0: whichever running
// cells finish first, wherever cell 0 would fit beside those left, it
// fits beside them and the later cell too (passes).
func (g *memGate) admit(ctx context.Context, n int, need func(k int) int64) (int, int64, bool) {
	for {
		g.mu.Lock()
		// Later cells' estimates are asked only while cell 0 waits.
		k, rss := 0, need(0)
		if first := rss; !g.fits(first) {
			k = -1
			for j := 1; j < n; j++ {
				if r := need(j); g.fits(r) && g.passes(first, r) {
					k, rss = j, r
					break
				}
			}
		}
		if k >= 0 {
			g.running = append(g.running, rss)
			g.mu.Unlock()
			return k, rss, true
		}
		ch := g.changed
		g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return 0, 0, false
		}
	}
}

// passes reports whether a cell of rss bytes may start before a waiting
// first cell of first bytes without delaying it: for every set of the
// running cells beside which the first would fit (those left when the
// others finish), the first fits beside that set and the new cell
// together. g.mu held.
func (g *memGate) passes(first, rss int64) bool {
	if len(g.running) > maxBackfillRunning {
		return false
	}
	for set := 0; set < 1<<len(g.running); set++ {
		var n int
		var inUse int64
		for i, r := range g.running {
			if set&(1<<i) != 0 {
				n++
				inUse += r
			}
		}
		if g.fitsBeside(n, inUse, first) && !g.fitsBeside(n+1, inUse+rss, first) {
			return false
		}
	}
	return true
}

// release counts out a cell of rss bytes that admit let in.
func (g *memGate) release(rss int64) {
	g.mu.Lock()
	if i := slices.Index(g.running, rss); i >= 0 {
		g.running = slices.Delete(g.running, i, i+1)
	}
	close(g.changed)
	g.changed = make(chan struct{})
	g.mu.Unlock()
}

func sum(x []int64) int64 {
	var s int64
	for _, v := range x {
		s += v
	}
	return s
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
