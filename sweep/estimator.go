package sweep

import (
	"slices"
	"sync"

	"github.com/uplinksim/uplink/protocols/cell"
)

// Estimator is EstimateCost that learns from records measured after the
// committed resource table was made: a sweep's reused records and the
// ones it makes as it runs. A kind of cell the table lacks then costs what
// its own records measured, not a stand-in (another profile's, the
// costliest segmented arm, or formulaCost): a 2 MiB sweep's first segmented cell,
// say, sizes the rest of its arm. A kind both have keeps the table's wall
// times and takes the larger peak memory. Safe for concurrent use.
type Estimator struct {
	mu    sync.Mutex
	recs  []*cell.Record
	table []Resource // the committed table with recs folded in
}

// NewEstimator is an Estimator that knows the committed resource table and
// recs (nil ones are skipped).
func NewEstimator(recs []*cell.Record) *Estimator {
	e := &Estimator{}
	for _, r := range recs {
		if r != nil {
			e.recs = append(e.recs, r)
		}
	}
	e.fold()
	return e
}

// Add adds a record measured since; nil is ignored.
func (e *Estimator) Add(r *cell.Record) {
	if r == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.recs = append(e.recs, r)
	e.fold()
}

// Cost is c's expected cost: EstimateCost's rule on the committed table
// with the records added.
func (e *Estimator) Cost(c cell.Config) Cost {
	e.mu.Lock()
	defer e.mu.Unlock()
	return costFrom(e.table, c)
}

// PlannedCost is c's Cost with the peak a sweep plans for it under a soft
// memory limit of limit bytes (0 for none; LimitedPeak).
func (e *Estimator) PlannedCost(c cell.Config, limit int64) Cost {
	cost := e.Cost(c)
	cost.RSS = LimitedPeak(cost.RSS, limit)
	return cost
}

// fold remakes e.table from the committed table and e.recs; e.mu held or
// e not yet shared.
func (e *Estimator) fold() {
	sources := make([]string, len(e.recs))
	for i := range sources {
		sources[i] = "measured since"
	}
	e.table = withMeasured(committedTable(), MeasureResources(e.recs, sources))
}

// withMeasured is the resource table t with the rows of measured folded
// in: a kind t lacks is added; a kind t has keeps its wall times and cell
// count and takes the larger of the two peak memories.
func withMeasured(t, measured []Resource) []Resource {
	out := slices.Clone(t)
	at := make(map[Kind]int, len(out))
	for i, r := range out {
		at[r.Kind] = i
	}
	for _, m := range measured {
		i, ok := at[m.Kind]
		if !ok {
			at[m.Kind] = len(out)
			out = append(out, m)
			continue
		}
		out[i].RSSMaxMiB = max(out[i].RSSMaxMiB, m.RSSMaxMiB)
	}
	slices.SortFunc(out, compareKinds)
	return out
}
