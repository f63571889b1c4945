package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/protocols/cell"
	"github.com/uplinksim/uplink/sweep"
)

// TestSweepETA: before a cell has finished, the ETA is the estimated wall
// time (sweep.EstimateCost) of the cells left over the jobs, at least the
// longest of them; after, the estimate of the cells left at the rate the
// finished ones were done.
func TestSweepETA(t *testing.T) {
	// 5 s plus 16 ms per edge at 1 MiB: 500 edges 13 s, 250 edges 9 s.
	big := cell.Config{N: 100, Degree: 10, Payload: 1 << 20}
	small := cell.Config{N: 50, Degree: 10, Payload: 1 << 20}
	est, _ := cellEstimates([]cell.Config{big, small, small}, sweep.NewEstimator(nil), 0)
	require.Equal(t, []time.Duration{13 * time.Second, 9 * time.Second, 9 * time.Second}, roundMS(est...))

	// (13 + 9 + 9) / 2 jobs.
	eta, how := sweepETA(est, []bool{false, false, false}, 2, 0)
	require.Equal(t, 15500*time.Millisecond, roundMS(eta)[0])
	require.Equal(t, "estimated from the cells' sizes", how)
	// Four jobs: the longest cell, 13 s, bounds it.
	eta, _ = sweepETA(est, []bool{false, false, false}, 4, 0)
	require.Equal(t, 13*time.Second, roundMS(eta)[0])

	// The big cell took 26 s: 0.5 s of estimate per s, 18 s left take 36 s.
	eta, how = sweepETA(est, []bool{true, false, false}, 2, 26*time.Second)
	require.Equal(t, 36*time.Second, roundMS(eta)[0])
	require.Equal(t, "at the rate so far", how)
	// All done: nothing left.
	eta, _ = sweepETA(est, []bool{true, true, true}, 2, 40*time.Second)
	require.Zero(t, eta)
}

func roundMS(ds ...time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}

// TestQuietRun: uplink run of a tiny cell prints the cell's phase lines
// and, with a short --progress-every, its progress lines; with --quiet it
// prints neither, and still the sweep's lines and the table.
func TestQuietRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs cells")
	}
	args := []string{"run", "--nodes", "6", "--degree", "2", "--payload", "64KiB", "--profile", "harness", "--progress-every", "10ms"}
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run(args, &stdout, &stderr), stderr.String())
	out := stderr.String()
	require.Contains(t, out, "cells: 1 to run, 1 at a time; ETA 5s (estimated from the cells' sizes)\n")
	require.Contains(t, out, "[wholend harness seed 7] cell seed 7: 6 hosts in ")
	require.Contains(t, out, "[wholend harness seed 7] progress: ")
	require.Regexp(t, `done 1/1 cells \(wholend harness seed 7: .*\); elapsed \d+s, ETA 0s \(at the rate so far\)\n`, out)
	require.Contains(t, stdout.String(), "medians across seeds")

	stdout.Reset()
	stderr.Reset()
	require.Equal(t, 0, run(append(args, "--quiet"), &stdout, &stderr), stderr.String())
	out = stderr.String()
	require.NotContains(t, out, "progress: ")
	require.NotContains(t, out, "cell seed 7:")
	require.Contains(t, out, "cells: 1 to run")
	require.Contains(t, out, "done 1/1 cells (wholend harness seed 7")
	require.Contains(t, stdout.String(), "medians across seeds")
}

// TestProgressEveryFlag: --progress-every is 0 or at least
// cell.MinProgressEvery.
func TestProgressEveryFlag(t *testing.T) {
	checkUsageErrors(t, []usageCase{
		{[]string{"run", "--progress-every", "1ms"}, "--progress-every 1ms: want 0 (no progress lines) or at least 10ms"},
		{[]string{"validate", "--table", "appendix_d_home", "--progress-every", "-1s"}, "--progress-every -1s"},
	})
}
