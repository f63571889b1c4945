package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/protocols/cell"
	"github.com/uplinksim/uplink/sweep"
)

// TestSkipOverMem: a cell that needs more than --mem alone refuses the
// sweep, naming --skip-over-mem; with it the cell is left out, named with
// its estimate, and the others run in their order.
func TestSkipOverMem(t *testing.T) {
	small := tinyCell(t)
	other := tinyCell(t)
	other.Seed = 8
	big := tinyCell(t)
	big.N, big.Degree, big.Payload = 2000, 70, 2<<20
	require.NoError(t, big.Check())
	const mem = 4 << 30
	require.Less(t, sweep.EstimateCost(small).RSS, int64(mem))
	require.Greater(t, sweep.EstimateCost(big).RSS, int64(mem))
	cfgs := []cell.Config{small, big, other}

	var w bytes.Buffer
	_, err := checkCells(cfgs, memOpts{budget: "4GiB"}, false, &w)
	require.ErrorAs(t, err, new(usageError))
	require.ErrorContains(t, err, "a cell of 2000 nodes at degree 70 with a 2 MiB payload needs about")
	require.ErrorContains(t, err, "--skip-over-mem")
	require.Empty(t, w.String())

	fit, err := checkCells(cfgs, memOpts{budget: "4GiB"}, true, &w)
	require.NoError(t, err)
	require.Equal(t, []cell.Config{small, other}, fit)
	require.Contains(t, w.String(), "--skip-over-mem: not running wholend harness seed 7 ["+big.Key()+"] (2000 nodes, degree 70, 2 MiB payload): needs about ")
	require.Contains(t, w.String(), "--mem is 4.0 GiB")
	require.Equal(t, 1, bytes.Count(w.Bytes(), []byte("\n")))

	// Every cell over: nothing runs, and nothing is refused.
	w.Reset()
	fit, err = checkCells([]cell.Config{big}, memOpts{budget: "4GiB"}, true, &w)
	require.NoError(t, err)
	require.Empty(t, fit)
	require.Contains(t, w.String(), "not running")

	// Under a soft limit of 3 GiB the big cell plans for 3.75 GiB and
	// fits; under one of 3.5 GiB it plans for 4.375 GiB and is refused,
	// the refusal naming the limit.
	fit, err = checkCells(cfgs, memOpts{budget: "4GiB", limit: 3 << 30}, false, &w)
	require.NoError(t, err)
	require.Equal(t, cfgs, fit)
	_, err = checkCells(cfgs, memOpts{budget: "4GiB", limit: 7 << 29}, false, &w)
	require.ErrorAs(t, err, new(usageError))
	require.ErrorContains(t, err, "needs about 4.4 GiB (sweep.EstimateCost, at most the soft limit 3.5 GiB plus a quarter: sweep.LimitedPeak)")
	require.ErrorContains(t, err, "lower --memlimit")
}

// TestMemBudgetEnv: without --mem the memory is $UPLINK_MEM where set,
// named as such in a refusal; --mem overrides it; a bad value is a usage
// error naming the variable.
func TestMemBudgetEnv(t *testing.T) {
	t.Setenv(memEnv, "3GiB")
	mem, source, err := memBudget("")
	require.NoError(t, err)
	require.Equal(t, int64(3<<30), mem)
	require.Equal(t, memEnv, source)

	mem, source, err = memBudget("5GiB")
	require.NoError(t, err)
	require.Equal(t, int64(5<<30), mem)
	require.Equal(t, "--mem", source)

	big := tinyCell(t)
	big.N, big.Degree = 500, 70
	require.Greater(t, sweep.EstimateCost(big).RSS, int64(3<<30))
	_, err = checkCells([]cell.Config{big}, memOpts{}, false, new(bytes.Buffer))
	require.ErrorAs(t, err, new(usageError))
	require.ErrorContains(t, err, "UPLINK_MEM is 3.0 GiB")

	for _, bad := range []string{"lots", "1MiB", "-2GiB"} {
		t.Setenv(memEnv, bad)
		_, _, err := memBudget("")
		require.ErrorAs(t, err, new(usageError), bad)
		require.ErrorContains(t, err, "UPLINK_MEM (the default of --mem): ", bad)
	}
}

// TestCellName: a message names a cell's transport when not QUIC and its
// warm-up, with its key.
func TestCellName(t *testing.T) {
	c := tinyCell(t)
	require.Equal(t, "wholend harness seed 7 ["+c.Key()+"]", cellName(c))
	c.Arm, c.Transport, c.Warmup = "c_32k", "tcp", cell.Warmup{Kind: "streams", Stream: 320 << 10}
	require.Equal(t, "c_32k harness tcp warm-up streams:320KiB seed 7 ["+c.Key()+"]", cellName(c))
}

// TestRunMemoryPerArm: run checks each arm's own cell against --mem
// before it builds anything, so a segmented arm that fits is not refused
// for the whole message's size, and the whole message still is.
func TestRunMemoryPerArm(t *testing.T) {
	seg := tinyCell(t)
	seg.Arm, seg.N, seg.Degree, seg.Payload = "c_32k", 500, 70, 1<<20
	whole := seg
	whole.Arm = "wholend"
	segRSS, wholeRSS := sweep.EstimateCost(seg).RSS, sweep.EstimateCost(whole).RSS
	require.Less(t, segRSS, wholeRSS)
	mem := fmt.Sprintf("%dMiB", (segRSS+wholeRSS)/2>>20)
	args := []string{"run", "--nodes", "500", "--degree", "70", "--mem", mem, "--list-cells", "--arm"}

	var out, errb bytes.Buffer
	require.Equal(t, 0, run(append(args, "c32"), &out, &errb), errb.String())
	require.Contains(t, out.String(), "c_32k")

	out.Reset()
	errb.Reset()
	require.Equal(t, 2, run(append(args, "c32,whole"), &out, &errb))
	require.Contains(t, errb.String(), "a cell of 500 nodes at degree 70 with a 1 MiB payload needs about "+fmtGiB(wholeRSS))
}

// TestRunMemoryPerProfile: run's early check sizes each cell under its own
// profile, so a profile whose cells fit is not refused for the costliest
// profile's size, and one whose cells do not fit still is.
func TestRunMemoryPerProfile(t *testing.T) {
	c := tinyCell(t)
	c.Arm, c.N, c.Degree, c.Payload = "wholend", 500, 70, 1<<20
	cost := map[string]int64{}
	for _, name := range []string{"harness", "shadow"} {
		p, err := cell.LookupProfile(name)
		require.NoError(t, err)
		c.Profile = p
		cost[name] = sweep.EstimateCost(c).RSS
	}
	cheap, dear := "shadow", "harness"
	if cost[cheap] > cost[dear] {
		cheap, dear = dear, cheap
	}
	require.Less(t, cost[cheap], cost[dear], "the two profiles' whole messages are measured apart")
	mem := (cost[cheap] + cost[dear]) / 2 >> 20 << 20
	args := []string{"run", "--nodes", "500", "--degree", "70", "--arm", "whole", "--mem", fmt.Sprintf("%dMiB", mem>>20), "--list-cells", "--profile"}

	var out, errb bytes.Buffer
	require.Equal(t, 0, run(append(args, cheap), &out, &errb), errb.String())
	require.Contains(t, out.String(), cheap)

	out.Reset()
	errb.Reset()
	require.Equal(t, 2, run(append(args, cheap+","+dear), &out, &errb))
	need, have := fmtOver(cost[dear], mem)
	require.NotEqual(t, need, have)
	require.Contains(t, errb.String(), "needs about "+need+" (sweep.EstimateCost); --mem is "+have)
}

// TestFmtOver: a need and the memory it exceeds are printed apart.
func TestFmtOver(t *testing.T) {
	for _, c := range []struct {
		need, mem  int64
		want, have string
	}{
		{2 << 30, 1 << 30, "2.0 GiB", "1.0 GiB"},
		{14438 << 20, 14400 << 20, "14.10 GiB", "14.06 GiB"},
		{(1 << 30) + 1<<20, 1 << 30, "1.001 GiB", "1.000 GiB"},
		{(1 << 30) + 1, 1 << 30, "1073741825 bytes", "1073741824 bytes"},
	} {
		need, have := fmtOver(c.need, c.mem)
		require.Equal(t, c.want, need)
		require.Equal(t, c.have, have)
	}
}

// TestMachineMemory: a cell is held to the machine's memory whatever
// --mem says, the refusal naming MemTotal and the --mem it overrides;
// --skip-over-mem leaves it out on the same grounds; a machine with more
// memory than --mem changes nothing; and cells only planned for other
// machines (the early check, uplink slurm) are held to --mem alone.
func TestMachineMemory(t *testing.T) {
	big := tinyCell(t)
	big.N, big.Degree, big.Payload = 100000, 20, 1<<20
	need := sweep.EstimateCost(big).RSS
	require.Greater(t, need, int64(16<<30))
	require.Less(t, need, int64(1<<40))

	require.NoError(t, checkMemory([]cell.Config{big}, memOpts{budget: "1TiB"}))
	var w bytes.Buffer
	_, err := checkCells([]cell.Config{big}, memOpts{budget: "1TiB", machine: 16 << 30}, false, &w)
	require.ErrorAs(t, err, new(usageError))
	require.ErrorContains(t, err, "a cell of 100000 nodes at degree 20 with a 1 MiB payload needs about "+fmtGiB(need)+
		" (sweep.EstimateCost); this machine's memory (MemTotal in /proc/meminfo, less than the 1024.0 GiB of --mem) is 16.0 GiB: "+
		"use fewer nodes or a smaller degree, run it on a machine with more memory (uplink slurm),")

	small := tinyCell(t)
	fit, err := checkCells([]cell.Config{big, small}, memOpts{budget: "1TiB", machine: 16 << 30}, true, &w)
	require.NoError(t, err)
	require.Equal(t, []cell.Config{small}, fit)
	require.Contains(t, w.String(), "--skip-over-mem: not running wholend harness seed 7 ["+big.Key()+"]")
	require.Contains(t, w.String(), "this machine's memory (MemTotal in /proc/meminfo, less than the 1024.0 GiB of --mem) is 16.0 GiB")

	mid := tinyCell(t)
	mid.N, mid.Degree, mid.Payload = 2000, 70, 2<<20
	_, err = checkCells([]cell.Config{mid}, memOpts{budget: "4GiB", machine: 64 << 30}, false, &w)
	require.ErrorContains(t, err, "(sweep.EstimateCost); --mem is 4.0 GiB: use fewer nodes or a smaller degree, state the memory with --mem,")

	// The command line, on this machine where it has less memory than
	// the cell needs: run refuses it before any cell starts, and slurm
	// plans it for the nodes --mem describes.
	if m := machineMemory(); m > 0 && m < need {
		var out, errb bytes.Buffer
		require.Equal(t, 2, run([]string{"run", "--nodes", "100000", "--mem", "1TiB"}, &out, &errb))
		require.Contains(t, errb.String(), "needs about "+fmtGiB(need)+" (sweep.EstimateCost); this machine's memory (MemTotal in /proc/meminfo, less than the 1024.0 GiB of --mem) is "+fmtGiB(m))
		require.NotContains(t, errb.String(), "hosts in")

		out.Reset()
		errb.Reset()
		dir := t.TempDir()
		require.Equal(t, 0, run([]string{"slurm", "--dir", dir, "--shards", "1", "--", "run", "--nodes", "100000", "--profile", "harness", "--mem", "1TiB"}, &out, &errb), errb.String())
		require.FileExists(t, filepath.Join(dir, "plan.json"))
	}
}
