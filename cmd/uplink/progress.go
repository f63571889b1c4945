package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/protocols/cell"
	"github.com/uplinksim/uplink/sweep"
	"github.com/uplinksim/uplink/validate"
)

// quietHelp and progressEveryHelp describe --quiet and --progress-every
// (run and validate).
const (
	quietHelp         = "print no per-cell progress: neither the cells' phase lines nor their progress lines (errors, warnings, the done lines and the final table stay)"
	progressEveryHelp = "how often, in wall time, each running cell prints a progress line: its phase, virtual time, receivers complete, packets simulated and the phase's ETA; 0: never"
)

// checkProgressEvery rejects a --progress-every that is neither 0 nor at
// least cell.MinProgressEvery.
func checkProgressEvery(d time.Duration) error {
	if d != 0 && d < cell.MinProgressEvery {
		return usageError{fmt.Errorf("--progress-every %v: want 0 (no progress lines) or at least %v, such as 5s", d, cell.MinProgressEvery)}
	}
	return nil
}

// syncWriter serialises the writes to w: a cell's phase lines come from
// inside its bubble, its progress lines from the watcher outside it.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// watchCell writes w's progress line to out every interval of wall time
// (at least cell.MinProgressEvery) until stop, which waits for it. It must
// be called outside the cell's bubble: there its ticker runs on the wall
// clock, and its reads of the cell (Watch.Line) neither wait on the
// bubble nor start its clock.
func watchCell(w *cell.Watch, every time.Duration, out io.Writer) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(max(every, cell.MinProgressEvery))
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if line := w.Line(des.WallNow()); line != "" {
				fmt.Fprintln(out, line)
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			<-finished
		})
	}
}

// cellEstimates is each cell's estimated wall time and peak memory by e,
// the memory planned under the cells' soft memory limit (limit bytes, 0
// for none; sweep.LimitedPeak).
func cellEstimates(cfgs []cell.Config, e *sweep.Estimator, limit int64) (wall []time.Duration, rss []int64) {
	wall, rss = make([]time.Duration, len(cfgs)), make([]int64, len(cfgs))
	for i, c := range cfgs {
		cost := e.PlannedCost(c, limit)
		wall[i], rss[i] = cost.Wall, cost.RSS
	}
	return wall, rss
}

// sweepETA is the wall time a sweep of cells with estimated wall times est
// has left after elapsed, with finished marking the cells that have
// finished (or failed). Until one has, it is the estimate of the cells
// left over the jobs, and at least the longest of them; from then on it
// is the measured rate (the estimated wall time of the finished cells per
// wall second elapsed) applied to the estimate of the cells left. how
// says which of the two it used.
func sweepETA(est []time.Duration, finished []bool, jobs int, elapsed time.Duration) (eta time.Duration, how string) {
	var done, left, longest time.Duration
	for i, e := range est {
		if finished[i] {
			done += e
			continue
		}
		left += e
		longest = max(longest, e)
	}
	if done == 0 {
		return max(left/time.Duration(max(jobs, 1)), longest), "estimated from the cells' sizes"
	}
	return time.Duration(float64(elapsed) * float64(left) / float64(done)), "at the rate so far"
}

// variantLabels are the variants each cell of studies runs under (cells
// by study, as validate.Study.Cells gives them), by the cell's key: one
// label for most, several where variants share a cell. The key stays the
// cell's alone; a sweep's lines and --list-cells name the variant by it.
func variantLabels(sts []validate.Study, cells [][]validate.StudyCell) map[string][]string {
	out := map[string][]string{}
	for i, st := range sts {
		for _, c := range cells[i] {
			label := st.Variants[c.Variant].Label
			for _, cfg := range c.Configs {
				k := cfg.Key()
				if !slices.Contains(out[k], label) {
					out[k] = append(out[k], label)
				}
			}
		}
	}
	return out
}

// cellsUnder is, for each of cfgs, the variant it runs under as its lines
// name it, ` under "uplink-qdisc=pie"` (labels by key, variantLabels), or
// "" for a cell of no variant.
func cellsUnder(cfgs []cell.Config, labels map[string][]string) []string {
	out := make([]string, len(cfgs))
	if len(labels) == 0 {
		return out
	}
	for i, c := range cfgs {
		if ls := labels[c.Key()]; len(ls) > 0 {
			q := make([]string, len(ls))
			for j, l := range ls {
				q[j] = strconv.Quote(l)
			}
			out[i] = " under " + strings.Join(q, " and ")
		}
	}
	return out
}
