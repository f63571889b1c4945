package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/protocols/cell"
	"github.com/uplinksim/uplink/validate"
)

// TestValidateReplay: a 20-node replay of two Appendix D cells end to end
// (the whole message and A-tuned under the harness profile, seed 7): both
// statistics of both arms get an uplink value, a difference and a
// verdict, and the ranking line; a rerun takes every cell from the cache
// and runs nothing.
func TestValidateReplay(t *testing.T) {
	bin := buildUplink(t)
	cache := filepath.Join(t.TempDir(), "cache.jsonl")
	reportDir := filepath.Join(t.TempDir(), "report")
	args := []string{"validate", "--table", "appendix_d_home", "--nodes", "20", "--seeds", "7",
		"--arm", "wholend,atuned", "--backend", "harness", "--cache", cache, "--jobs", "2"}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("uplink validate: %v\n%s", err, stderr.String())
	}
	out := stdout.String()
	row := regexp.MustCompile(`(?m)^\s*(wholend|atuned)\s+harness quic fq_codel\s+(p50|p99)\s+\S+ s\s+\d+\.\d{3} s\s+.*\s1/1\s+\S+\s+(within|outside)\s*$`)
	if got := row.FindAllString(out, -1); len(got) != 4 {
		t.Fatalf("%d comparison rows, want 4:\n%s", len(got), out)
	}
	if !strings.Contains(out, "harness quic fq_codel p50") || !strings.Contains(stderr.String(), "2 to run") ||
		!strings.Contains(stderr.String(), "indicative only") {
		t.Fatalf("missing ranking, plan or shrink note:\n%s\n%s", out, stderr.String())
	}
	data, err := os.ReadFile(cache)
	if err != nil || strings.Count(string(data), "\n") != 2 {
		t.Fatalf("cache holds %q, %v; want two records", data, err)
	}
	stdout.Reset()
	stderr.Reset()
	cmd = exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("uplink validate (rerun): %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "2 from") || !strings.Contains(stderr.String(), "0 to run") || strings.Contains(stderr.String(), "done 1/") {
		t.Fatalf("the rerun did not take the cells from the cache:\n%s", stderr.String())
	}
	if got := row.FindAllString(stdout.String(), -1); len(got) != 4 {
		t.Fatalf("rerun: %d comparison rows, want 4:\n%s", len(got), stdout.String())
	}
	// A third run writes the report from the cache.
	cmd = exec.Command(bin, append(args, "--report", reportDir)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("uplink validate --report: %v\n%s", err, out)
	}
	for _, f := range []string{"report.md", "bars.png", "cdf-harness-quic-fq_codel.png"} {
		if st, err := os.Stat(filepath.Join(reportDir, f)); err != nil || st.Size() < 100 {
			t.Errorf("report file %s: %v", f, err)
		}
	}
	// Another cache with the first as --reuse runs nothing; a --reuse
	// file that does not exist is a usage error.
	other := append(slices.Clone(args), "--reuse", cache)
	other[slices.Index(other, cache)] = filepath.Join(t.TempDir(), "other.jsonl")
	if out, err := exec.Command(bin, other...).CombinedOutput(); err != nil || !strings.Contains(string(out), "0 to run") || strings.Contains(string(out), "done 1/") {
		t.Fatalf("--reuse did not reuse the first cache: %v\n%s", err, out)
	}
	// A quoted glob reads every file it matches; one that matches none is
	// a usage error too.
	other[len(other)-1] = filepath.Join(filepath.Dir(cache), "*.jsonl")
	if out, err := exec.Command(bin, other...).CombinedOutput(); err != nil || !strings.Contains(string(out), "0 to run") || strings.Contains(string(out), "done 1/") {
		t.Fatalf("--reuse with a glob did not reuse the first cache: %v\n%s", err, out)
	}
	for _, missing := range []string{"missing.jsonl", "missing-*.jsonl"} {
		other[len(other)-1] = filepath.Join(t.TempDir(), missing)
		if out, err := exec.Command(bin, other...).CombinedOutput(); err == nil || !strings.Contains(string(out), "--reuse") {
			t.Fatalf("a --reuse of %s was accepted: %v\n%s", missing, err, out)
		}
	}
	// --cached-only with an arm the cache lacks: nothing runs, the two
	// cached arms compare as before, the third prints as not run.
	stdout.Reset()
	stderr.Reset()
	only := append(slices.Clone(args), "--cached-only")
	only[slices.Index(only, "wholend,atuned")] = "wholend,atuned,bfixed"
	cmd = exec.Command(bin, only...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("uplink validate --cached-only: %v\n%s", err, stderr.String())
	}
	notRun := regexp.MustCompile(`(?m)^\s*bfixed\s+harness quic fq_codel\s+p(50|99)\s+\S+ s\s+-\s+-\s+0/1\s+-\s+not run\s*$`)
	if strings.Contains(stderr.String(), "done 1/") || len(row.FindAllString(stdout.String(), -1)) != 4 || len(notRun.FindAllString(stdout.String(), -1)) != 2 {
		t.Fatalf("--cached-only ran a cell or misprinted:\n%s\n%s", stdout.String(), stderr.String())
	}
	// --export writes the records the comparison used, one per run (a
	// results folder's records), and refuses to replace the cache.
	exported := filepath.Join(t.TempDir(), "records.jsonl")
	eout, err := exec.Command(bin, append(slices.Clone(only), "--export", exported)...).CombinedOutput()
	require.NoError(t, err, "%s", eout)
	require.Contains(t, string(eout), "exported 2 records to "+exported+" (1 run has none yet)")
	got, err := os.ReadFile(exported)
	require.NoError(t, err)
	require.Equal(t, 2, strings.Count(string(got), "\n"))
	for _, line := range strings.Split(strings.TrimSpace(string(got)), "\n") {
		var rec struct {
			Key string `json:"key"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		require.Contains(t, string(data), rec.Key, "an exported record is one of the cache's")
	}
	eout, err = exec.Command(bin, append(slices.Clone(only), "--export", cache)...).CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(eout), "is the --cache")
	// A record holding a field this build does not know (a newer build
	// wrote it) still compares, and is exported as the line it was read
	// from, the field kept.
	newer := filepath.Join(t.TempDir(), "newer.jsonl")
	lines := strings.SplitAfter(string(data), "\n")
	lines[0] = strings.TrimSuffix(strings.TrimSpace(lines[0]), "}") + `,"stamp_from_later":1}` + "\n"
	require.NoError(t, os.WriteFile(newer, []byte(strings.Join(lines, "")), 0o644))
	withNewer := slices.Clone(only)
	withNewer[slices.Index(withNewer, cache)] = newer
	withField := filepath.Join(t.TempDir(), "records.jsonl")
	eout, err = exec.Command(bin, append(withNewer, "--export", withField)...).CombinedOutput()
	require.NoError(t, err, "%s", eout)
	got, err = os.ReadFile(withField)
	require.NoError(t, err)
	require.Contains(t, string(got), strings.TrimSpace(lines[0])+"\n", "the line as read")
}

// TestValidateStudy: a study shrunk to 12 nodes and one seed runs its five
// variants and the rerun of its baseline and prints one row per variant
// with the baseline comparison, the reading, and the answer, whose
// claims count the rerun and read too few seeds.
func TestValidateStudy(t *testing.T) {
	bin := buildUplink(t)
	cache := filepath.Join(t.TempDir(), "study.jsonl")
	cmd := exec.Command(bin, "validate", "--study", "phase-queue", "--nodes", "12", "--seeds", "7", "--cache", cache, "--jobs", "2")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("uplink validate --study: %v\n%s", err, stderr.String())
	}
	out := stdout.String()
	if n := len(regexp.MustCompile(`(?m)^.*\slad_phase\s+1\s`).FindAllString(out, -1)); n != 6 {
		t.Fatalf("%d rows, want 6:\n%s", n, out)
	}
	// One seed cannot reach the noise test's level: every comparison and
	// claim says so; the claims against the baseline count its rerun.
	require.Contains(t, out, "reading: Each variant against the baseline \"shadow QUIC, FIFO\", p50 and p99, by the noise test (two-sided 5 %): 10 too few seeds.")
	require.Contains(t, out, "Over QUIC, fq_codel makes it slower: **too few seeds**")
	require.Contains(t, out, "noise test with 1 reruns")
}

// TestClaimsFirst: a study runs first the cells its answer reads
// (warm-gap: its coded arms cold, warm at once, after a 5 s gap and
// rerun, 40 runs at five seeds), then the rest in the table's order.
func TestClaimsFirst(t *testing.T) {
	var stdout, stderr bytes.Buffer
	cache := filepath.Join(t.TempDir(), "warm-gap.jsonl")
	code := run([]string{"validate", "--study", "warm-gap", "--seeds", "7-11", "--cache", cache, "--dry-run"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	require.Contains(t, stderr.String(), "210 runs (0 from ")
	require.Contains(t, stderr.String(), "\nthe 40 runs its answer reads go first\n")

	stdout.Reset()
	stderr.Reset()
	code = run([]string{"validate", "--study", "warm-gap", "--seeds", "7-11", "--cache", cache, "--dry-run", "--answer-only"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	require.Contains(t, stderr.String(), "\n--answer-only: the 40 runs its answer reads; 170 others left out\n")
	stderr.Reset()
	code = run([]string{"validate", "--table", "appendix_d_home", "--dry-run", "--answer-only"}, &stdout, &stderr)
	require.Equal(t, 2, code)
	require.Contains(t, stderr.String(), "--answer-only is for a --study")

	st, err := validate.LookupStudy("warm-gap")
	require.NoError(t, err)
	cells, err := st.Cells(0, []uint64{7, 8, 9, 10, 11}, cell.Config{Gossip: cell.StudyGossip()})
	require.NoError(t, err)
	var todo []cell.Config
	for _, c := range cells {
		todo = append(todo, c.Configs...)
	}
	got, n := claimsFirst(todo, st, cells)
	require.Equal(t, 40, n)
	require.ElementsMatch(t, todo, got)
	for i, cfg := range got {
		coded := cfg.Arm == "acoded_32k" || cfg.Arm == "bcodedfc1_32k"
		w := cfg.Warmup
		read := coded && (w.Kind == "" || w.Kind == "streams" && (w.Gap == 0 || w.Gap == 5*des.Second))
		require.Equal(t, i < n, read, "run %d: %s %+v", i, cfg.Arm, w)
	}
	require.Equal(t, todo[0], got[40], "the rest keep their order")
}
