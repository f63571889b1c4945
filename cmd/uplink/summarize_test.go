package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/protocols/cell"
)

// gridRecord is a valid record of arm wholend on the harness profile at
// seed, replicate and uplink queue qdisc, four receivers whose times give
// p50 and p99 (seconds, rounded to µs).
func gridRecord(seed uint64, replicate int, qdisc string, p50, p99 float64) *cell.Record {
	us := []int64{int64(math.Round(p50 * 5e5)), int64(math.Round(p50 * 1e6)), int64(math.Round((p50 + p99) * 5e5)), int64(math.Round(p99 * 1e6))}
	p50s, p99s := float64(us[1])/1e6, float64(us[3])/1e6
	late := 0
	return &cell.Record{Schema: cell.RecordSchema, Key: fmt.Sprintf("%s-%d-%d", qdisc, seed, replicate), Version: "v", Arm: "wholend", ArmName: "wholend",
		Profile: "harness", Knobs: map[string]string{"uplink-qdisc": qdisc}, Transport: "quic", Seed: seed, Replicate: replicate,
		N: 5, Total: 4, Completed: 4, PayloadBytes: 1024, WindowS: 8, P50S: &p50s, P90S: &p99s, P99S: &p99s, LastS: &p99s, Late: &late,
		CompletionUS: us, Partitions: 1}
}

// writeRecords writes recs as a records file in dir.
func writeRecords(t *testing.T, dir, name string, recs []*cell.Record) string {
	t.Helper()
	var b strings.Builder
	for _, r := range recs {
		line, err := json.Marshal(r)
		require.NoError(t, err)
		b.Write(line)
		b.WriteByte('\n')
	}
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	return path
}

// TestSummarizeGrid: the records of run --vary uplink-qdisc=fq_codel,pie
// over six seeds with a rerun of the baseline summarize into two variants
// named by the queue and the baseline's rerun, each with its own table,
// and their paired comparison: pie's p50 is 20 % above the baseline's on
// every seed (higher: one relabelling in 3^6 is as extreme), its p99 the
// same (no difference), and the rerun repeats the baseline (no
// difference either way).
func TestSummarizeGrid(t *testing.T) {
	const base = "fq_codel:profile=simnet"
	var recs []*cell.Record
	for seed := uint64(1); seed <= 6; seed++ {
		p50 := 1 + 0.1*float64(seed)
		recs = append(recs, gridRecord(seed, 0, base, p50, 2.5), gridRecord(seed, 1, base, p50, 2.5), gridRecord(seed, 0, "pie", 1.2*p50, 2.5))
	}
	path := writeRecords(t, t.TempDir(), "vary.jsonl", recs)
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"summarize", path}, &stdout, &stderr), stderr.String())
	require.Equal(t, `summarize: 18 records of 1 arm: 2 variants by uplink-qdisc, 1 rerun; baseline "uplink-qdisc=fq_codel:profile=simnet"`+"\n", stderr.String())
	out := stdout.String()

	// A table per variant, then the rerun's: six seeds each, none pooled.
	sections := regexp.MustCompile(`(?m)^variant (.*):$`).FindAllStringSubmatch(out, -1)
	require.Len(t, sections, 3)
	require.Equal(t, "uplink-qdisc=fq_codel:profile=simnet (baseline)", sections[0][1])
	require.Equal(t, "uplink-qdisc=pie", sections[1][1])
	require.Equal(t, "uplink-qdisc=fq_codel:profile=simnet, rerun 1", sections[2][1])
	require.Equal(t, 3, strings.Count(out, "medians across seeds:"))
	// Medians across seeds: 1.1 to 1.6 s, pie's 1.2 times those.
	medians := regexp.MustCompile(`medians across seeds:\n.*\n\s+wholend\s+harness( r1)?\s+6\s+(\d\.\d{3})\s`).FindAllStringSubmatch(out, -1)
	require.Len(t, medians, 3)
	require.Equal(t, []string{"", "1.350"}, medians[0][1:])
	require.Equal(t, []string{"", "1.620"}, medians[1][1:])
	require.Equal(t, []string{" r1", "1.350"}, medians[2][1:])

	// The comparison: run --vary's table and reading.
	require.Contains(t, out, "the variants compared, p50 and p99 paired by seed with their baseline's:")
	require.Regexp(t, `(?m)^\s+uplink-qdisc=fq_codel:profile=simnet\s+wholend\s+6\s+1\.350 s\s.*\sbaseline\s`, out)
	require.Regexp(t, `(?m)^\s+uplink-qdisc=pie\s+wholend\s+6\s+1\.620 s\s.*\s\+20% \[\+20%, \+20%\]\s`, out)
	require.Contains(t, out, `reading: Each variant against the baseline "uplink-qdisc=fq_codel:profile=simnet", p50 and p99, by the noise test (two-sided 5 %): 1 higher, 3 no difference.`)
	require.Contains(t, out, `wholend under "uplink-qdisc=pie": p50 higher, +20% [+20%, +20%]`)
	require.Contains(t, out, `over 6 seeds (6 up, 0 down), p higher 0.00137, lower 1, 6 reruns; p99 no difference, 0%`)
	require.Contains(t, out, `wholend under "uplink-qdisc=fq_codel:profile=simnet, rerun 1": p50 no difference, 0%`)
}

// TestSummarizeOneVariant: records of two seeds of one setting are one
// variant: run's table alone, no comparison.
func TestSummarizeOneVariant(t *testing.T) {
	recs := []*cell.Record{gridRecord(7, 0, "pie", 1, 2), gridRecord(8, 0, "pie", 1.5, 2)}
	path := writeRecords(t, t.TempDir(), "one.jsonl", recs)
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"summarize", path}, &stdout, &stderr), stderr.String())
	require.Equal(t, "summarize: 2 records of 1 arm: 1 variant (no setting differs but the seed)\n", stderr.String())
	var want bytes.Buffer
	printTable(&want, recs)
	require.Equal(t, want.String(), stdout.String())
	require.Regexp(t, `(?m)^\s+wholend\s+harness\s+2\s+1\.250\s`, stdout.String())
}

// TestSummarizeArmFixedSetting: a setting in which only arms differ names
// no variant (an arm may fix one); two arms under two queues are two
// variants, each arm compared with itself.
func TestSummarizeArmFixedSetting(t *testing.T) {
	var recs []*cell.Record
	for seed := uint64(1); seed <= 3; seed++ {
		for _, q := range []string{"fq_codel:profile=simnet", "pie"} {
			r := gridRecord(seed, 0, q, 1, 2)
			r.Gossip = map[string]string{"max-ihave-messages": "10"}
			lad := gridRecord(seed, 0, q, 1.1, 2)
			lad.Key += "-lad"
			lad.Arm, lad.ArmName = "lad", "lad"
			lad.Gossip = map[string]string{"max-ihave-messages": "1000"}
			recs = append(recs, r, lad)
		}
	}
	path := writeRecords(t, t.TempDir(), "arms.jsonl", recs)
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"summarize", path}, &stdout, &stderr), stderr.String())
	require.Contains(t, stderr.String(), `summarize: 12 records of 2 arms: 2 variants by uplink-qdisc; baseline "uplink-qdisc=fq_codel:profile=simnet"`)
	require.Contains(t, stdout.String(), `wholend under "uplink-qdisc=pie": p50 too few seeds, 0%`)
	require.Contains(t, stdout.String(), `under "uplink-qdisc=pie": p50 too few seeds`)
	require.Equal(t, 2, strings.Count(stdout.String(), `under "uplink-qdisc=pie": p50`))
}

// TestSummarizeMatchesStudy: summarize's comparison of the committed
// records of the partitions study is the study's own (its report's
// reading): the same engine, the same pairs, the rerun counted.
func TestSummarizeMatchesStudy(t *testing.T) {
	dir := filepath.Join("..", "..", "results", "partitions-fidelity-100")
	report, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"summarize", filepath.Join(dir, "records.jsonl")}, &stdout, &stderr), stderr.String())
	require.Contains(t, stderr.String(), `2 variants by partitions, 1 rerun; baseline "partitions=1"`)
	for label, studyLabel := range map[string]string{"partitions=2": "two partitions", "partitions=1, rerun 1": "one bubble, again"} {
		m := regexp.MustCompile(`wholend under "` + regexp.QuoteMeta(studyLabel) + `": (p50 [^;]*; p99 [^.]*\.\d+[^.]*\.\d*[^.]*)\.`).FindSubmatch(report)
		require.NotNil(t, m, studyLabel)
		require.Contains(t, stdout.String(), `wholend under "`+label+`": `+string(m[1]), label)
	}
}

// TestSummarizeHelp: summarize --help says what it does: the grouping,
// the baselines, the pairing and its verdicts, and its flag.
func TestSummarizeHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"summarize", "--help"}, &stdout, &stderr))
	require.Empty(t, stderr.String())
	for _, want := range []string{
		"uplink summarize [--on-conflict refuse|newest] FILE...",
		"Records that share every setting but the seed are one variant",
		"a rerun of a cell (its replicate) belongs to its variant's runs",
		"A variant whose cells were rerun is a baseline",
		`"higher" or "lower", "no difference", or "too few seeds"`,
		"pairs p50 and p99 seed by seed",
		"--on-conflict string",
	} {
		require.Contains(t, stdout.String(), want)
	}
}

// TestSummarizeUnlistedSetting: two records of one arm, seed and
// replicate whose listed settings agree are cells that differ in a
// setting records do not list: neither is lost or pooled with the other,
// and the note says how they were told apart.
func TestSummarizeUnlistedSetting(t *testing.T) {
	a, b := gridRecord(7, 0, "pie", 1, 2), gridRecord(7, 0, "pie", 1.5, 2)
	b.Key = "other-topology"
	path := writeRecords(t, t.TempDir(), "twins.jsonl", []*cell.Record{a, b})
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"summarize", path}, &stdout, &stderr), stderr.String())
	require.Contains(t, stderr.String(), "uplink: summarize: 1 record shares its variant, arm, seed and replicate with a record of another cell")
	require.Contains(t, stderr.String(), `summarize: 2 records of 1 arm: 2 variants by settings records do not list; baseline "baseline"`)
	require.Contains(t, stdout.String(), "variant baseline:\n")
	require.Contains(t, stdout.String(), "variant baseline [set 2]:\n")
	require.Contains(t, stdout.String(), `wholend under "baseline [set 2]": p50 too few seeds, −33%`)
}
