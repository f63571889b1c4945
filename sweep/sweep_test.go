package sweep

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/protocols/cell"
)

// sweepCells is a sweep of 24 cells: three sizes, two profiles, four seeds.
func sweepCells(t *testing.T) []cell.Config {
	var out []cell.Config
	for _, n := range []int{60, 100, 500} {
		for _, name := range []string{"harness", "shadow"} {
			p, err := cell.LookupProfile(name)
			require.NoError(t, err)
			for seed := uint64(7); seed < 11; seed++ {
				out = append(out, cell.Config{N: n, Degree: 20, Payload: 1 << 20, Seed: seed, Profile: p})
			}
		}
	}
	return out
}

// TestShard: every cell lands in exactly one shard, the same one on every
// call, in the sweep's order; the shards' estimated work differs by no
// more than the largest cell's; one shard is the whole sweep.
func TestShard(t *testing.T) {
	cells := sweepCells(t)
	const n = 5
	seen := map[string]int{}
	var loads []time.Duration
	var largest time.Duration
	for _, c := range cells {
		largest = max(largest, EstimateCost(c).Wall)
	}
	for i := range n {
		got := Shard(cells, i, n)
		require.Equal(t, got, Shard(cells, i, n), "shard %d twice", i)
		var load time.Duration
		last := -1
		for _, c := range got {
			seen[c.Key()]++
			load += EstimateCost(c).Wall
			idx := slices.IndexFunc(cells, func(x cell.Config) bool { return x.Key() == c.Key() })
			require.Greater(t, idx, last, "shard %d keeps the sweep's order", i)
			last = idx
		}
		loads = append(loads, load)
	}
	require.Len(t, seen, len(cells))
	for k, v := range seen {
		require.Equal(t, 1, v, "cell %s in %d shards", k, v)
	}
	require.LessOrEqual(t, slices.Max(loads)-slices.Min(loads), largest)
	require.Equal(t, cells, Shard(cells, 0, 1))
}

func TestParseShard(t *testing.T) {
	i, n, err := ParseShard("2/4")
	require.NoError(t, err)
	require.Equal(t, []int{2, 4}, []int{i, n})
	for _, s := range []string{"4/4", "-1/4", "0/0", "1", "a/b", "0/100001"} {
		_, _, err := ParseShard(s)
		require.Error(t, err, s)
	}
}

// TestEstimateCost: the wall estimate is within 30 % of the measured
// whole-message cells at degree 70 (100 and 500 nodes: 54 and 279 s), in
// one bubble and in two partitions.
func TestEstimateCost(t *testing.T) {
	for _, m := range []struct {
		n    int
		wall float64
	}{{100, 54.4}, {500, 279.2}} {
		got := EstimateCost(cell.Config{N: m.n, Degree: 70, Payload: 1 << 20}).Wall.Seconds()
		require.InEpsilon(t, m.wall, got, 0.3, "%d nodes", m.n)
	}
	// Two partitions on two cores: 121.5 and 216.6 s (BENCHMARKS.md,
	// "Partitions").
	for _, m := range []struct {
		n    int
		wall float64
	}{{250, 121.5}, {500, 216.6}} {
		got := EstimateCost(cell.Config{N: m.n, Degree: 70, Payload: 1 << 20, Partitions: 2}).Wall.Seconds()
		require.InEpsilon(t, m.wall, got, 0.3, "%d nodes, two partitions", m.n)
	}
}

// TestCheckFile: a byte-order mark, a record cut short, quantiles out of
// order and a record without its key are each reported with their line.
func TestCheckFile(t *testing.T) {
	dir := t.TempDir()
	good := `{"key":"a","arm":"wholend","profile":"harness","version":"v1","n":10,"total":9,"completed":9,"payload_bytes":1024,"p50_s":1.5,"p99_s":2}`
	path := filepath.Join(dir, "r.jsonl")
	content := "\xef\xbb\xbf" + good + "\n" + good + "\n" +
		`{"key":"b","arm":"wholend","profile":"harness","version":"v1","n":10,"total":9,"completed":9,"payload_bytes":1024,"p50_s":3,"p99_s":2}` + "\n" +
		`{"arm":"wholend"}` + "\n" + good[:40]
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	n, problems, err := CheckFile(path)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	var lines []int
	for _, p := range problems {
		lines = append(lines, p.Line)
	}
	require.Equal(t, []int{1, 3, 4, 5}, lines)
	require.ErrorIs(t, problems[0].Err, ErrBOM)
	require.ErrorContains(t, problems[1].Err, "p99_s: 2 is below p50_s 3")
	require.ErrorContains(t, problems[2].Err, "no cell key")
	require.ErrorIs(t, problems[3].Err, ErrRecordCut)
}
