package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
	"github.com/uplinksim/uplink/protocols/cell"
)

// TestRunTraceFlagErrors: run's bad trace, capture and plot flags are
// usage errors naming the problem and the limit, before any cell starts;
// the trace and captures reach the cells but not their keys.
func TestRunTraceFlagErrors(t *testing.T) {
	bad := notADir(t)
	ok := t.TempDir()
	base := []string{"run", "--nodes", "12", "--degree", "4", "--payload", "64KiB", "--profile", "harness", "--seeds", "7", "--window", "2s"}
	with := func(args ...string) []string { return append(append([]string{}, base...), args...) }
	checkUsageErrors(t, []usageCase{
		{with("--trace", bad), "--trace " + bad + ": cannot create the folder"},
		{with("--pcap", bad), "--pcap " + bad + ": cannot create the folder"},
		{with("--plot", bad), "--plot " + bad + ": cannot create the folder"},
		{with("--trace", ok, "--trace-nodes", "12"), `--trace-nodes "12": no node 12; the nodes are 0 to 11`},
		{with("--pcap", ok, "--pcap-nodes", "3-12"), `--pcap-nodes "3-12": no node 12; the nodes are 0 to 11`},
		{with("--trace", ok, "--trace-nodes", "1,1"), "node 1 is given twice"},
		{with("--pcap-nodes", "0"), "--pcap-nodes applies to --pcap"},
		{with("--trace-nodes", "0"), "--trace-nodes applies to --trace"},
		{with("--trace-every", "1ms"), "--trace-every applies to --trace: add --trace DIR"},
		{with("--plot", ok, "--trace-every", "1ms"), "--trace-every applies to --trace"},
		{with("--trace", ok, "--trace-every", "0s"), "--trace-every 0s: want at least 100µs, at most 2s (--window)"},
		{with("--trace", ok, "--trace-every", "3s"), "--trace-every 3s: beyond the run's 2s (--window); want 100µs to 2s"},
		{with("--network", "simnet", "--trace", ok), "--network simnet runs its links outside uplink's model: drop --trace and --pcap"},
		{with("--network", "simnet", "--pcap", ok), "--network simnet runs its links outside uplink's model: drop --trace and --pcap"},
	})
	entries, err := os.ReadDir(ok)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing ran")

	plain := planCells(t, base[0], base[1:]...)
	traced := planCells(t, base[0], with("--trace", ok, "--trace-nodes", "0,5", "--trace-every", "20ms", "--pcap", ok, "--pcap-nodes", "5")[1:]...)
	require.Equal(t, &cell.Trace{Every: 20 * des.Millisecond, Nodes: []int{0, 5}}, traced[0].Trace)
	require.Equal(t, []int{5}, traced[0].Captures)
	require.Equal(t, plain[0].Key(), traced[0].Key(), "a trace and captures change no result")
	// A cell checks them too (a --vary over --nodes, a library caller).
	c := traced[0]
	c.Trace = &cell.Trace{Every: des.Millisecond, Nodes: []int{12}}
	require.ErrorContains(t, c.Check(), "trace of node 12: the nodes are 0 to 11")
}

// readNodeTrace reads a node's trace CSV: its columns and rows.
func readNodeTrace(t *testing.T, path string) (map[string]int, [][]string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	require.NoError(t, err)
	require.Equal(t, cell.TraceHeader, string(bytes.SplitN(b, []byte("\n"), 2)[0]))
	cols := map[string]int{}
	for i, c := range rows[0] {
		cols[c] = i
	}
	return cols, rows[1:]
}

// TestRunTraceCapturePlot: a 12-node cell with --trace and --pcap on
// nodes 0 and 7 and --plot: each node's bytes and packets per interval
// between the trace's publish and counts rows add up to its record row;
// the interval rows fall on multiples of 10 ms; over the whole run, its
// packets sent and received are those of its capture; the completion CDF
// is written as SVG and PNG. The same cell in 2 partitions (nodes 0 and 7
// in different ones) writes both files of both nodes, the trace again
// matching the capture.
func TestRunTraceCapturePlot(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two cells")
	}
	num := func(s string) uint64 {
		v, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err)
		return v
	}
	runCell := func(extra ...string) (cell.Record, string) {
		dir := t.TempDir()
		out := filepath.Join(dir, "records.jsonl")
		args := append([]string{"run", "--nodes", "12", "--degree", "4", "--payload", "64KiB", "--profile", "harness", "--seeds", "7",
			"--trace", filepath.Join(dir, "trace"), "--trace-nodes", "0,7", "--pcap", filepath.Join(dir, "pcap"), "--pcap-nodes", "0,7",
			"--plot", filepath.Join(dir, "plot"), "--out", out, "--quiet"}, extra...)
		var stdout, stderr bytes.Buffer
		require.Equal(t, 0, run(args, &stdout, &stderr), stderr.String())
		data, err := os.ReadFile(out)
		require.NoError(t, err)
		var rec cell.Record
		require.NoError(t, json.Unmarshal(data, &rec))
		return rec, dir
	}
	// wholeRun checks a node's trace against its capture and returns the
	// trace's columns and rows.
	wholeRun := func(dir, key string, node int) (map[string]int, [][]string) {
		name := "wholend-harness-seed7-" + key
		cols, rows := readNodeTrace(t, filepath.Join(dir, "trace", name, "node-"+strconv.Itoa(node)+".csv"))
		var sent, recv uint64
		for _, r := range rows {
			sent += num(r[cols["sent_packets"]])
			recv += num(r[cols["recv_packets"]])
			if r[cols["reading"]] == "" {
				ts, err := strconv.ParseFloat(r[cols["time_s"]], 64)
				require.NoError(t, err)
				require.Zero(t, des.Time(ts*1e9+0.5)%(10*des.Millisecond), "interval row at %v", ts)
			}
		}
		require.Equal(t, "end", rows[len(rows)-1][cols["reading"]])
		out, in := countPcapng(t, filepath.Join(dir, "pcap", name, "node-"+strconv.Itoa(node)+".pcapng"))
		require.Equal(t, sent, out, "node %d: packets sent", node)
		require.Equal(t, recv, in, "node %d: packets received", node)
		require.Positive(t, sent)
		require.Positive(t, recv)
		return cols, rows
	}

	rec, dir := runCell("--per-node")
	require.Equal(t, 11, rec.Completed)
	require.Len(t, rec.Nodes, 12)
	for _, node := range []int{0, 7} {
		cols, rows := wholeRun(dir, rec.Key, node)
		at := map[string]int{}
		for i, r := range rows {
			if rd := r[cols["reading"]]; rd == "publish" || rd == "counts" {
				at[rd] = i
			}
		}
		require.Contains(t, at, "publish")
		require.Contains(t, at, "counts")
		sum := func(col string) uint64 {
			var s uint64
			for _, r := range rows[at["publish"]+1 : at["counts"]+1] {
				s += num(r[cols[col]])
			}
			return s
		}
		row := rec.Nodes[node]
		require.Equal(t, node, row.Index)
		require.Equal(t, row.WireTx, sum("sent_bytes"), "node %d: wire_tx_bytes", node)
		require.Equal(t, row.WireRx, sum("recv_bytes"), "node %d: wire_rx_bytes", node)
		require.Equal(t, row.PktTx, sum("sent_packets"), "node %d: packets_tx", node)
		require.Equal(t, row.PktRx, sum("recv_packets"), "node %d: packets_rx", node)
	}
	for _, ext := range []string{".svg", ".png"} {
		b, err := os.ReadFile(filepath.Join(dir, "plot", "wholend-harness-seed7-"+rec.Key, "completion-cdf"+ext))
		require.NoError(t, err)
		if ext == ".png" {
			_, err = png.Decode(bytes.NewReader(b))
			require.NoError(t, err)
		} else {
			require.Contains(t, string(b), "completion CDF: arm wholend, profile harness, seed 7")
		}
	}

	sp, err := netmodel.BalancedSplit(12, 2, 7)
	require.NoError(t, err)
	require.NotEqual(t, sp.Of[0], sp.Of[7], "the traced nodes live in different partitions")
	split, dir := runCell("--partitions", "2")
	require.Equal(t, 2, split.Partitions)
	require.Empty(t, split.Nodes, "the figure's per-node rows stay out of a record that did not ask for them")
	for _, node := range []int{0, 7} {
		wholeRun(dir, split.Key, node)
	}
	_, err = os.Stat(filepath.Join(dir, "plot", "wholend-harness-seed7-"+split.Key, "completion-cdf.svg"))
	require.NoError(t, err)
}

// TestRunTraceTCP: a 12-node TCP cell traced on every node writes each
// node's node-N-flows.csv besides node-N.csv: at each of the node trace's
// rows a row per connection (each numbered once), cwnd positive, and at
// the publish one ESTABLISHED connection to each of the node's
// neighbours in the dial graph. The queue columns' drops and CE marks of
// every node up to the counts row add up to the record's queue summary
// (the uplinks' queues are cut to 8 packets so that some drop), and a
// node's queue drops are among its drops.
func TestRunTraceTCP(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cell")
	}
	num := func(s string) uint64 {
		if s == "" {
			return 0
		}
		v, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err)
		return v
	}
	args := []string{"run", "--transport", "tcp", "--nodes", "12", "--degree", "4", "--payload", "64KiB", "--profile", "shadow", "--seeds", "7",
		"--uplink-qdisc", "codel:limit=8"} // a short uplink queue: drops to compare
	cfg := planCells(t, args[0], args[1:]...)[0]
	draw, err := netmodel.NewDraw(cfg.N, cfg.Degree, cfg.Seed, cfg.Latency, cfg.Net)
	require.NoError(t, err)
	g, err := draw.Graph()
	require.NoError(t, err)

	dir := t.TempDir()
	out := filepath.Join(dir, "records.jsonl")
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run(append(args, "--trace", filepath.Join(dir, "trace"), "--trace-nodes", "all", "--out", out, "--quiet"), &stdout, &stderr), stderr.String())
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	var rec cell.Record
	require.NoError(t, json.Unmarshal(data, &rec))
	folder := filepath.Join(dir, "trace", "wholend-shadow-seed7-"+rec.Key)

	queue := map[string]string{"up": "uplink", "down": "downlink", "host": "host"}
	kinds := []string{"overlimit", "aqm", "batch"}
	sums := map[string]uint64{}
	for node := range 12 {
		cols, rows := readNodeTrace(t, filepath.Join(folder, "node-"+strconv.Itoa(node)+".csv"))
		var drops, qdrops uint64
		counted := false
		for _, r := range rows {
			drops += num(r[cols["drops"]])
			for q := range queue {
				for _, k := range kinds {
					v := num(r[cols[q+"_drops_"+k]])
					qdrops += v
					if !counted {
						sums[q+" "+k] += v
					}
				}
				if !counted {
					sums[q+" ce"] += num(r[cols[q+"_ce_marks"]])
				}
			}
			counted = counted || r[cols["reading"]] == "counts"
		}
		require.LessOrEqual(t, qdrops, drops, "node %d: queue drops", node)

		b, err := os.ReadFile(filepath.Join(folder, "node-"+strconv.Itoa(node)+"-flows.csv"))
		require.NoError(t, err)
		require.Equal(t, cell.TraceFlowsHeader, string(bytes.SplitN(b, []byte("\n"), 2)[0]))
		frows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
		require.NoError(t, err)
		fcols := map[string]int{}
		for i, c := range frows[0] {
			fcols[c] = i
		}
		// Each flows row belongs to a node trace row, in order; a
		// connection appears once per row.
		k := 1
		var published []int
		for _, r := range rows {
			seen := map[string]bool{}
			for ; k < len(frows) && frows[k][fcols["time_s"]] == r[cols["time_s"]] && frows[k][fcols["reading"]] == r[cols["reading"]]; k++ {
				f := frows[k]
				require.False(t, seen[f[fcols["flow"]]], "node %d: flow %s twice at %s", node, f[fcols["flow"]], f[0])
				seen[f[fcols["flow"]]] = true
				require.Positive(t, num(f[fcols["cwnd_segments"]]), "node %d: cwnd", node)
				if r[cols["reading"]] == "publish" {
					require.Equal(t, "ESTABLISHED", f[fcols["state"]])
					p, err := strconv.Atoi(f[fcols["peer"]])
					require.NoError(t, err)
					published = append(published, p)
				}
			}
		}
		require.Equal(t, len(frows), k, "node %d: every flows row is at a row of the node's trace", node)
		require.ElementsMatch(t, g.Neighbors(node), published, "node %d: its connections at the publish", node)
	}
	for q, name := range queue {
		s, ok := rec.Queues[name]
		if !ok {
			continue
		}
		for _, k := range kinds {
			require.Equal(t, s.Drops[k], sums[q+" "+k], "%s drops %s", name, k)
		}
		require.Equal(t, s.CEMarks, sums[q+" ce"], "%s CE marks", name)
	}
	require.Positive(t, sums["up overlimit"], "some uplink drops to compare")
}
