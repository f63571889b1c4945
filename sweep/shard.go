package sweep

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/uplinksim/uplink/protocols/cell"
	"github.com/uplinksim/uplink/results"
)

// Cost is a cell's expected wall time on one core and its peak memory.
type Cost struct {
	Wall time.Duration
	RSS  int64 // bytes
}

// LimitedPeak is the peak memory to plan for a cell whose EstimateCost
// peak is rss when it runs under a soft memory limit of limit bytes
// (GOMEMLIMIT; 0 for none): the smaller of rss and the limit plus a
// quarter. The limit is soft: the garbage collector works harder near it
// but lets the heap grow past it rather than stall, and measured peaks
// ran up to 17 % over it (the whole message at 1 000 nodes, 22.2 GiB
// under a 19 GiB limit against about 28 GiB without one). A cell whose
// live heap alone exceeds the limit peaks higher still: the figure plans,
// it does not bound.
func LimitedPeak(rss, limit int64) int64 {
	if limit <= 0 {
		return rss
	}
	return min(rss, limit+limit/4)
}

// SplitWall is EstimateCost's factor for a split cell.
const SplitWall = 0.78

// EstimateCost is a cell's expected cost. Where the committed resource
// table (results/resources.json, generated from the records under
// results/) has a kind of cell like c (the same arm, transport, profile,
// network, encoding, payload and partitions), the cost is that kind's
// measured one scaled to c's dial graph (measuredCost); a split cell whose
// kind was measured only in one bubble takes SplitWall of its wall time;
// a kind measured only under other profiles costs the costliest of those
// (profileCost); a segmented arm never measured costs as much as the
// costliest segmented arm measured in its kind otherwise (segmentedCost);
// a warm-up never measured adds its own term to the cold cell's cost
// (warmupCost). Otherwise it is
// formulaCost. It orders and balances shards and sizes a
// Slurm task's memory; it does not promise a time.
func EstimateCost(c cell.Config) Cost {
	return costFrom(committedTable(), c)
}

// committedTable is the committed resource table, or none where it cannot
// be read (then formulaCost prices every cell).
func committedTable() []Resource {
	t, err := committedResources()
	if err != nil {
		return nil
	}
	return t
}

// costFrom is EstimateCost's rule on the resource table t.
func costFrom(t []Resource, c cell.Config) Cost {
	if cost, ok := measuredCost(t, c); ok {
		return cost
	}
	if c.Partitions > 1 {
		one := c
		one.Partitions = 1
		if cost, ok := measuredCost(t, one); ok {
			cost.Wall = time.Duration(float64(cost.Wall) * SplitWall)
			return cost
		}
	}
	if cost, ok := profileCost(t, c); ok {
		return cost
	}
	if cost, ok := segmentedCost(t, c); ok {
		return cost
	}
	if c.Warmup.Kind != "" {
		cold := c
		cold.Warmup = cell.Warmup{}
		return warmupCost(costFrom(t, cold), c)
	}
	return formulaCost(c)
}

// committedResources is the committed resource table, read once.
var committedResources = sync.OnceValues(func() ([]Resource, error) {
	return ReadResources(strings.NewReader(results.ResourcesJSON()))
})

// formulaCost is a cell's expected cost when no measured kind is like it:
// memory from cell.Config.EstimateMemory; wall time 5 s plus 16 ms per
// dial-graph edge for a 1 MiB payload, scaled by the payload (at least a
// quarter of that), fitted to whole-message cells at degree 70 (100 and
// 500 nodes took 54 and 279 s, BENCHMARKS.md) and to the 60-node default
// (14 s). A split cell (Partitions 2 or more) takes SplitWall of that: two
// partitions took the 100-, 250- and 500-node cells to 0.67, 0.86 and
// 0.78 of their wall time on two cores; no further gain is assumed from
// more partitions, which nothing here has measured.
func formulaCost(c cell.Config) Cost {
	scale := max(float64(max(c.Payload, 1))/(1<<20), 0.25)
	wall := 5 + 0.016*c.Edges()*scale
	if c.Partitions > 1 {
		wall *= SplitWall
	}
	return Cost{Wall: time.Duration(wall * float64(time.Second)), RSS: c.EstimateMemory()}
}

// warmupCost is the cost of c, a cell with a warm-up of a kind never
// measured, from cold, the cost of the same cell without it:
//   - A payload warm-up is a delivery of the cell's own shape before the
//     measured one: twice the wall time above formulaCost's fixed 5 s, and
//     the same memory (the warm-up's buffers are free again by the
//     measured publish). Reasoned, not measured.
//   - Streams (at once or in turn) add WarmupStreamRSS and
//     WarmupStreamWall per byte sent: 2 × Stream over every edge of the
//     dial graph. Measured with A-coded at 100, 250 and 500 nodes
//     (BENCHMARKS.md, "The streams warm-up's cost"), the memory added per
//     byte falls with the size (0.86, 0.65 and 0.51): the constant is the
//     largest, so that a warm kind never measured is not started beside
//     cells it cannot fit with; the wall time per byte is the 500-node
//     cell's (111 and 118 s per GiB at 250 and 500 nodes). Streams in
//     turn are priced as streams at once.
//
// A sweep's Estimator replaces this by the kind's own measured cost once
// one of its cells has run.
func warmupCost(cold Cost, c cell.Config) Cost {
	switch c.Warmup.Kind {
	case "payload":
		const fixedWall = 5 * time.Second
		cold.Wall = fixedWall + 2*max(cold.Wall-fixedWall, 0)
		return cold
	case "streams", "streams-seq":
		mib := c.Edges() * 2 * float64(c.Warmup.Stream) / (1 << 20)
		cold.RSS += int64(WarmupStreamRSS * mib * (1 << 20))
		cold.Wall += time.Duration(WarmupStreamWall * mib * float64(time.Second))
	}
	return cold
}

// WarmupStreamRSS and WarmupStreamWall are warmupCost's peak memory (bytes
// per byte) and wall time (seconds per MiB) of the streams warm-up, per
// byte sent both ways over every edge.
const (
	WarmupStreamRSS  = 0.86
	WarmupStreamWall = 0.115 // 118 s per GiB
)

// ParseShard reads --shard I/N: shard I of N, I from 0 to N-1 (as a Slurm
// array's task ids count).
func ParseShard(s string) (i, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || n < 1 || n > 100_000 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("shard %q: want I/N with N from 1 to 100000 and I from 0 to N-1, such as 0/4", s)
	}
	return i, n, nil
}

// Shard returns shard i of n of the cells: the cells are dealt to the
// shards largest first (by estimated wall time, then by key), each to the
// shard with the least work so far (the lowest index on a tie), so the
// shards' work is balanced and a cell always lands in the same shard. The
// shard's cells keep their order in cfgs.
func Shard(cfgs []cell.Config, i, n int) []cell.Config {
	if n <= 1 {
		return slices.Clone(cfgs)
	}
	type item struct {
		idx  int
		cost time.Duration
		key  string
	}
	items := make([]item, len(cfgs))
	for k, c := range cfgs {
		items[k] = item{k, EstimateCost(c).Wall, c.Key()}
	}
	slices.SortStableFunc(items, func(a, b item) int {
		if a.cost != b.cost {
			return cmp.Compare(b.cost, a.cost)
		}
		return strings.Compare(a.key, b.key)
	})
	load := make([]time.Duration, n)
	mine := make([]bool, len(cfgs))
	for _, it := range items {
		best := 0
		for s := 1; s < n; s++ {
			if load[s] < load[best] {
				best = s
			}
		}
		load[best] += it.cost
		if best == i {
			mine[it.idx] = true
		}
	}
	var out []cell.Config
	for k, c := range cfgs {
		if mine[k] {
			out = append(out, c)
		}
	}
	return out
}
