package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/protocols/cell"
)

// verdictCommand is "validate" on one cell: the whole message on 6 nodes,
// seed 7, under the harness's columns.
const verdictCommand = "validate --table appendix_d_home --nodes 6 --seeds 7 --arm wholend --backend harness"

// verdictRecord is a valid record of verdictCommand's one cell, as a
// JSON object to edit: every receiver complete.
func verdictRecord(t *testing.T) map[string]any {
	t.Helper()
	var out, errb bytes.Buffer
	require.Equal(t, 0, run(append(strings.Fields(verdictCommand), "--list-cells", "--cache", filepath.Join(t.TempDir(), "none.jsonl")), &out, &errb), errb.String())
	var key string
	for _, l := range strings.Split(out.String(), "\n")[1:] {
		if f := strings.Fields(l); len(f) == 10 {
			require.Empty(t, key, "one cell:\n%s", out.String())
			key = f[0]
		}
	}
	require.NotEmpty(t, key, out.String())
	p50, p90, late := 0.7, 1.2, 0
	r := cell.Record{Schema: cell.RecordSchema, Key: key, Arm: "wholend", ArmName: "wholend", Profile: "harness", Transport: "quic",
		Version: "test", Seed: 7, N: 6, NSize: 6, Degree: 5, Total: 5, Completed: 5, PayloadBytes: 1 << 20, WindowS: 8, DeadlineS: 8,
		RateK: 5, RateN: 5, P50S: &p50, P90S: &p90, P99S: &p90, LastS: &p90, Late: &late,
		CompletionUS: []int64{500000, 600000, 700000, 1100000, 1200000}, Partitions: 1, WallS: 3}
	b, err := json.Marshal(r)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

// lineWith is the record m with each field of sets (name, value pairs)
// set, or removed where the value is nil, as one line.
func lineWith(t *testing.T, m map[string]any, sets ...any) string {
	t.Helper()
	c := map[string]any{}
	for k, v := range m {
		c[k] = v
	}
	for i := 0; i < len(sets); i += 2 {
		if sets[i+1] == nil {
			delete(c, sets[i].(string))
		} else {
			c[sets[i].(string)] = sets[i+1]
		}
	}
	b, err := json.Marshal(c)
	require.NoError(t, err)
	return string(b)
}

// verdict is what one command made of a file of one line: whether it took
// the record, and what it said.
type verdict struct {
	took   bool
	output string
}

// verdicts runs every command that reads records on a file holding line
// alone: records check, records merge, summarize, validate --cache,
// validate --reuse, and results (which reads its folder's records.jsonl
// through validate --cache and again on its own).
func verdicts(t *testing.T, line string) map[string]verdict {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "records.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(line+"\n"), 0o644))
	exec := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		return code, out.String() + errb.String()
	}
	v := map[string]verdict{}

	code, out := exec("records", "check", path)
	v["records check"] = verdict{code == 0 && strings.Contains(out, "1 records valid"), out}

	merged := filepath.Join(dir, "merged.jsonl")
	code, out = exec("records", "merge", merged, path)
	took := false
	if code == 0 {
		b, err := os.ReadFile(merged)
		require.NoError(t, err)
		took = strings.Count(string(b), "\n") == 1
		require.Contains(t, out, fmt.Sprintf("%d records from %d read", map[bool]int{true: 1}[took], map[bool]int{true: 1}[took]))
	}
	v["records merge"] = verdict{took, out}

	code, out = exec("summarize", path)
	v["summarize"] = verdict{code == 0, out}

	plan := strings.Fields(verdictCommand)
	code, out = exec(append(plan, "--cached-only", "--any-version", "--cache", path)...)
	v["validate --cache"] = verdict{code == 0 && strings.Contains(out, "1 runs (1 from "+path+","), out}

	empty := filepath.Join(dir, "empty.jsonl")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	code, out = exec(append(plan, "--cached-only", "--any-version", "--cache", empty, "--reuse", path)...)
	v["validate --reuse"] = verdict{code == 0 && strings.Contains(out, "1 runs (1 from "+empty+" and 1 --reuse file,"), out}

	root := filepath.Join(dir, "results")
	folder := filepath.Join(root, "cell")
	require.NoError(t, os.MkdirAll(folder, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(folder, "command"), []byte("uplink "+verdictCommand+"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(folder, "records.jsonl"), []byte(line+"\n"), 0o644))
	code, out = exec("results", "--dir", root)
	v["results"] = verdict{code == 0, out}
	return v
}

// TestRecordVerdictsAgree: every command that reads records takes or
// refuses each line alike, and a command that refuses one names the file,
// the line and why, in the same words.
func TestRecordVerdictsAgree(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every command on each of 20 files")
	}
	m := verdictRecord(t)
	cases := []struct {
		name, line string
		want       string // "": every command takes the line
	}{
		{"valid", lineWith(t, m), ""},
		{"a field this build does not know", lineWith(t, m, "from_a_later_build", map[string]any{"x": 1}), ""},
		{"a schema-0 record without completion times", lineWith(t, m, "schema", nil, "completion_us", nil, "late_receivers", nil), ""},
		{"only key and version", fmt.Sprintf(`{"key":%q,"version":"test"}`, m["key"]), "arm: absent"},
		{"negative p50", lineWith(t, m, "p50_s", -0.7), "p50_s: -0.7 is negative"},
		{"p50 above p90", lineWith(t, m, "p50_s", 1.3), "p90_s: 1.2 is below p50_s 1.3"},
		{"p50 1e308", lineWith(t, m, "p50_s", 1e308), "p50_s: 1e+308 is beyond a day of virtual time in s (86400)"},
		{"empty completion_us", lineWith(t, m, "completion_us", []int{}), "completion_us: 0 times while 5 receivers completed"},
		{"negative completion_us", lineWith(t, m, "completion_us", []int{-1, 600000, 700000, 1100000, 1200000}), "completion_us[0]: -1 is negative"},
		{"completion_us out of order", lineWith(t, m, "completion_us", []int{600000, 500000, 700000, 1100000, 1200000}), "completion_us[1]: 500000 is below completion_us[0] 600000"},
		{"more completed than receivers", lineWith(t, m, "completed", 6), "completed: 6 is more than the receivers (5)"},
		{"negative count", lineWith(t, m, "dups", -1), "dups: -1 is negative"},
		{"negative wall", lineWith(t, m, "wall_s", -2), "wall_s: -2 is negative"},
		{"a newer schema", lineWith(t, m, "schema", 3), "record schema 3 is newer than this uplink's (2): update uplink"},
		{"not JSON", "{not json}", "invalid character 'n' looking for beginning of object key string"},
		{"two values", lineWith(t, m) + " {}", "more than one JSON value on the line"},
		{"cut short", lineWith(t, m)[:40], "a record cut short (a writer stopped mid-line)"},
		{"byte-order mark", "\ufeff" + lineWith(t, m), "starts with a UTF-8 byte-order mark"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vs := verdicts(t, c.line)
			for cmd, v := range vs {
				if c.want == "" {
					require.True(t, v.took, "%s refused it:\n%s", cmd, v.output)
					continue
				}
				require.False(t, v.took, "%s took it:\n%s", cmd, v.output)
				require.Contains(t, v.output, "records.jsonl line 1: ", cmd)
				require.Contains(t, v.output, c.want, cmd)
			}
		})
	}
}
