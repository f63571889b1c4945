package main

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
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

// TestVaryLinesNameVariant: a --vary grid's cells name their variant on
// their lines (each phase line's prefix and the done line) and in
// --list-cells, a study's likewise in --list-cells, a plain run's none;
// summarize reads the grid's records back into the same variants and the
// same reading as run --vary printed.
func TestVaryLinesNameVariant(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "vary.jsonl")
	grid := []string{"run", "--profile", "harness", "--nodes", "6", "--degree", "2", "--seeds", "7-8", "--jobs", "1", "--progress-every", "0",
		"--vary", "uplink-qdisc=fq_codel,pie"}
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run(append(grid, "--list-cells"), &stdout, &stderr), stderr.String())
	rows := regexp.MustCompile(`(?m)^[0-9a-f]{24}  wholend .*  -        (.*)$`).FindAllStringSubmatch(stdout.String(), -1)
	require.Len(t, rows, 6)
	var listed []string
	for _, r := range rows {
		listed = append(listed, r[1])
	}
	require.Equal(t, []string{"uplink-qdisc=fq_codel", "uplink-qdisc=fq_codel", "uplink-qdisc=pie", "uplink-qdisc=pie",
		"uplink-qdisc=fq_codel, rerun 1", "uplink-qdisc=fq_codel, rerun 1"}, listed)
	require.Regexp(t, `(?m)^key +arm .* warm-up  variant$`, stdout.String())

	stdout.Reset()
	stderr.Reset()
	require.Equal(t, 0, run(append(grid, "--out", out), &stdout, &stderr), stderr.String())
	lines := stderr.String()
	require.Contains(t, lines, `[wholend harness seed 7 under "uplink-qdisc=pie"] cell seed 7: `)
	require.Contains(t, lines, `[wholend harness seed 8 under "uplink-qdisc=fq_codel, rerun 1"] cell seed 8: `)
	require.Regexp(t, `(?m)^done \d/6 cells \(wholend harness seed 8 under "uplink-qdisc=pie": p50 `, lines)
	require.Equal(t, 6, strings.Count(lines, "done "))
	require.NotRegexp(t, `(?m)^\[wholend harness seed \d\] `, lines)
	reading := stdout.String()[strings.Index(stdout.String(), "reading: "):]

	// summarize: the same variants, the same reading.
	stdout.Reset()
	stderr.Reset()
	require.Equal(t, 0, run([]string{"summarize", out}, &stdout, &stderr), stderr.String())
	require.Contains(t, stderr.String(), `summarize: 6 records of 1 arm: 2 variants by uplink-qdisc, 1 rerun; baseline "uplink-qdisc=fq_codel"`)
	require.Contains(t, stdout.String(), reading)

	// A study's cells, and a plain run's.
	study, err := filepath.Abs("../../docs/study-pie-share.json")
	require.NoError(t, err)
	stdout.Reset()
	require.Equal(t, 0, run([]string{"validate", "--study", study, "--nodes", "12", "--seeds", "7", "--list-cells", "--cache", filepath.Join(dir, "study.jsonl")}, &stdout, &stderr), stderr.String())
	require.Regexp(t, `(?m)^[0-9a-f]{24}  wholend .*  -        harness \(fq_codel\)$`, stdout.String())
	require.Regexp(t, `(?m)^[0-9a-f]{24}  wholend .*  -        30 % of nodes behind PIE$`, stdout.String())
	stdout.Reset()
	stderr.Reset()
	require.Equal(t, 0, run([]string{"run", "--profile", "harness", "--nodes", "6", "--degree", "2", "--seeds", "7", "--progress-every", "0"}, &stdout, &stderr), stderr.String())
	require.Contains(t, stderr.String(), "[wholend harness seed 7] cell seed 7: ")
	require.Regexp(t, `(?m)^done 1/1 cells \(wholend harness seed 7: p50 `, stderr.String())
	stdout.Reset()
	require.Equal(t, 0, run([]string{"run", "--profile", "harness", "--nodes", "6", "--degree", "2", "--seeds", "7", "--list-cells"}, &stdout, &stderr))
	require.Regexp(t, `(?m)^key +arm .* warm-up$`, stdout.String())
	require.NotContains(t, stdout.String(), "variant")
}
