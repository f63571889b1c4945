package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSplitVaryValues: commas split values, except before a queue spec's
// own option (key=value), which stays with its spec.
func TestSplitVaryValues(t *testing.T) {
	require.Equal(t, []string{"fq_codel:profile=simnet", "pie@30%"}, splitVaryValues("uplink-qdisc", "fq_codel:profile=simnet,pie@30%"))
	require.Equal(t, []string{"drr:classify=pair,flows=128,quantum=1500", "pie", "pie:target=5ms,tupdate=30ms@30%;fq_codel"},
		splitVaryValues("uplink-qdisc", "drr:classify=pair,flows=128,quantum=1500, pie,pie:target=5ms,tupdate=30ms@30%;fq_codel"))
	require.Equal(t, []string{"0", "", "6"}, splitVaryValues("Dlazy", "0,,6"))
	require.Equal(t, []string{"a=1", "b=2"}, splitVaryValues("settle", "a=1,b=2"), "only queue knobs join options")
	require.Nil(t, splitVaryValues("Dlazy", " "))
}

// TestRunVaryUsage: a bad --vary is a usage error (exit 2) naming the
// problem, before any cell starts.
func TestRunVaryUsage(t *testing.T) {
	base := []string{"run", "--nodes", "12", "--degree", "4", "--profile", "harness"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--vary", "bogus=1,2"}, `--vary unknown setting "bogus"; valid: profile, transport, uplink-qdisc`},
		{[]string{"--vary", "uplink-qdisc="}, "--vary uplink-qdisc: no values"},
		{[]string{"--vary", "uplink-qdisc"}, `--vary "uplink-qdisc": want SETTING=V1,V2,...`},
		{[]string{"--vary", "uplink-qdisc=pie"}, "one value compares nothing"},
		{[]string{"--vary", "uplink-qdisc=pie,fq_codel,pie"}, `--vary uplink-qdisc: value "pie" given twice`},
		{[]string{"--vary", "uplink-qdisc=pie,nope"}, `--vary uplink-qdisc=nope: on profile harness: queues: spec "nope": unknown discipline`},
		{[]string{"--vary", "Dlazy=0,x"}, `--vary Dlazy=x: gossip knob Dlazy="x"`},
		{[]string{"--knob", "settle=3", "--vary", "settle=1,2"}, "--vary settle and --knob both set settle"},
		{[]string{"--uplink-qdisc", "pie", "--vary", "uplink-qdisc=fq_codel,pie"}, "--vary uplink-qdisc and --knob (or its shorthand --uplink-qdisc) both set uplink-qdisc"},
		{[]string{"--gossip", "Dlazy=0", "--vary", "Dlazy=0,6"}, "--vary Dlazy and --gossip both set Dlazy"},
		{[]string{"--transport", "tcp", "--vary", "transport=quic,tcp"}, "--vary transport and --transport both set transport"},
		{[]string{"--vary", "profile=harness,shadow"}, "--vary profile and --profile both set profile"},
		{[]string{"--vary", "phase-rules=fork,prose"}, `variants "phase-rules=fork" and "phase-rules=prose" make the same cell for arm wholend`},
		{[]string{"--vary", "Dlazy=0,1", "--vary", "Dlazy=2,3"}, "--vary Dlazy varied twice"},
		{[]string{"--seeds", "1-200", "--vary", "Dlazy=0,1,2,3,4,5"}, "7 variants (Dlazy ×6, 1 rerun of the baseline) × 1 profile × 1 arm × 200 seeds = 1400 cells: over the limit of 1000 cells"},
		{[]string{"--vary", "Dlazy=0,6", "--reruns", "11"}, "--reruns"},
		{[]string{"--vary", "Dlazy=0,6", "--reruns", "-1"}, "--reruns"},
		{[]string{"--reruns", "2"}, "--reruns goes with --vary"},
		{[]string{"--vary", "pacing=on,off"}, "knob [pacing=on] applies to --transport tcp"},
		{[]string{"--vary", "Dlazy=0,6", "--cpuprofile", t.TempDir()}, "--cpuprofile with --vary"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append(append([]string{}, base...), c.args...), &stdout, &stderr)
		require.Equal(t, 2, code, "%v: %s", c.args, stderr.String())
		require.Contains(t, stderr.String(), c.want, c.args)
		require.NotRegexp(t, `(?m)^cells: `, stderr.String(), "a cell started")
	}
}

// TestRunVary: a 12-node grid of two queue settings over two seeds, with
// a rerun of the baseline, runs six cells and prints a row per variant,
// each with its per-seed difference from the first; a rerun with --skip-done runs nothing and
// prints the same table; the study file of the same comparison
// (docs/study-pie-share.json, shrunk) reuses the records through
// validate --study.
func TestRunVary(t *testing.T) {
	bin := buildUplink(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "vary.jsonl")
	args := []string{"run", "--profile", "harness", "--nodes", "12", "--degree", "11", "--seeds", "7-8", "--jobs", "2",
		"--vary", "uplink-qdisc=fq_codel:profile=simnet,pie@30%", "--out", out, "--skip-done"}
	runIt := func(args ...string) (string, string) {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Run(), stderr.String())
		return stdout.String(), stderr.String()
	}
	stdout, stderr := runIt(args...)
	require.Contains(t, stderr, "run --vary: 3 variants (uplink-qdisc ×2, 1 rerun of the baseline) × 1 profile × 1 arm × 2 seeds = 6 cells (0 already in "+out+", 6 to run)")
	baseRow := regexp.MustCompile(`(?m)^\s*uplink-qdisc=fq_codel:profile=simnet\s+wholend\s+2\s+\d+\.\d{3} s\s.*\sbaseline\s`)
	pieRow := regexp.MustCompile(`(?m)^\s*uplink-qdisc=pie@30%\s+wholend\s+2\s+\d+\.\d{3} s\s.*\s(0%|[+−]\d+%) \[(0%|[+−]\d+%), (0%|[+−]\d+%)\]\s`)
	require.Regexp(t, baseRow, stdout)
	require.Regexp(t, pieRow, stdout)
	require.Regexp(t, `(?m)^\s*uplink-qdisc=fq_codel:profile=simnet, rerun 1\s+wholend\s+2\s`, stdout)
	// Two seeds reach no verdict: the reading says so for each.
	require.Contains(t, stdout, `reading: Each variant against the baseline "uplink-qdisc=fq_codel:profile=simnet", p50 and p99, by the noise test (two-sided 5 %): 4 too few seeds.`)
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, 6, strings.Count(string(data), "\n"))
	require.Contains(t, string(data), `"uplink-qdisc":"pie@30%;fq_codel:profile=simnet"`)

	again, stderr := runIt(args...)
	require.Contains(t, stderr, "(6 already in "+out+", 0 to run)")
	require.NotContains(t, stderr, "done 1/")
	require.Equal(t, stdout, again)

	// The study file's comparison is the same cells.
	study, err := filepath.Abs("../../docs/study-pie-share.json")
	require.NoError(t, err)
	stdout, stderr = runIt("validate", "--study", study, "--nodes", "12", "--seeds", "7-8", "--reuse", out, "--cache", filepath.Join(dir, "study.jsonl"))
	require.Contains(t, stderr, "4 runs (4 from")
	require.Contains(t, stderr, "0 to run")
	require.Regexp(t, `(?m)^\s*30 % of nodes behind PIE\s+wholend\s+2\s`, stdout)
	require.Contains(t, stdout, `reading: Each variant against the baseline "harness (fq_codel)"`)
}

// TestStudyCacheName: a study's default cache is named after the built-in
// study, the study file, or, for a results folder's study.json, the
// folder.
func TestStudyCacheName(t *testing.T) {
	for in, want := range map[string]string{
		"c-residual":                      "study-c-residual.jsonl",
		"docs/study-pie-share.json":       "study-study-pie-share.jsonl",
		"results/b-ledger-500/study.json": "study-b-ledger-500.jsonl",
		"results/network-size/study.json": "study-network-size.jsonl",
		"study.json":                      "study-study.jsonl",
		"/study.json":                     "study-study.jsonl",
	} {
		require.Equal(t, want, studyCacheName(in), in)
	}
}

// TestStudyFileUsage: a study file with a field the format does not know,
// or one that is missing, is a usage error naming it.
func TestStudyFileUsage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"name": "bad", "arms": ["wholend"], "nodes": 12, "seeds": [7],
		"variants": [{"label": "a", "profile": "harness"}, {"label": "b", "profile": "harness", "knob": {"settle": "1"}}]}`), 0o644))
	for file, want := range map[string]string{
		path:                      `--study ` + path + `: study file: json: unknown field "knob"`,
		path + ".missing.json":    "--study " + path + ".missing.json: no such file",
		"docs-missing/study.json": "--study docs-missing/study.json: no such file",
	} {
		var stdout, stderr bytes.Buffer
		require.Equal(t, 2, run([]string{"validate", "--study", file}, &stdout, &stderr), stderr.String())
		require.Contains(t, stderr.String(), want)
	}
}

// TestVaryPlan: uplink slurm plans a --vary grid's cells (planCommand),
// one per variant, profile, arm and seed.
func TestVaryPlan(t *testing.T) {
	sp, err := planCommand([]string{"run", "--nodes", "12", "--degree", "4", "--seeds", "7-8", "--vary", "Dlazy=6,0", "--vary", "transport=quic,tcp"}, &bytes.Buffer{}, &bytes.Buffer{})
	require.NoError(t, err)
	require.Len(t, sp.cells, (2*2+1)*2*2) // variants Dlazy × transport and the rerun, profiles harness and shadow, seeds
	keys := map[string]bool{}
	for _, c := range sp.cells {
		keys[c.Key()] = true
	}
	require.Len(t, keys, 20)
}
