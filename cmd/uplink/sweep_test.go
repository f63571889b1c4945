package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestListCellsShards: the shards of a sweep, listed with --list-cells,
// hold every cell of the whole sweep once.
func TestListCellsShards(t *testing.T) {
	keys := func(args ...string) []string {
		return listedKeys(t, append([]string{"run", "--seeds", "7-13"}, args...)...)
	}
	all := keys()
	require.Len(t, all, 14)
	var union []string
	for _, s := range []string{"0/3", "1/3", "2/3"} {
		part := keys("--shard", s)
		require.NotEmpty(t, part, s)
		union = append(union, part...)
	}
	require.ElementsMatch(t, all, union)
	checkUsageErrors(t, []usageCase{
		{[]string{"run", "--shard", "3/3"}, "--shard: shard \"3/3\": want I/N"},
		{[]string{"validate", "--table", "appendix_d_home", "--shard", "x"}, "--shard"},
		{[]string{"records"}, "want check or merge"},
		{[]string{"records", "merge", "out.jsonl"}, "want OUT and at least one"},
		{[]string{"summarize"}, "name the records files"},
	})
}

// TestRecordsCommands: records check reports each bad line and fails;
// records merge writes one record per cell; summarize prints run's table
// from the merged file.
func TestRecordsCommands(t *testing.T) {
	dir := t.TempDir()
	rec := func(key, seed, p50 string) string {
		return `{"key":"` + key + `","arm":"wholend","profile":"harness","version":"v1","seed":` + seed + `,"n":10,"total":9,"completed":9,"payload_bytes":1024,"p50_s":` + p50 + `,"p90_s":` + p50 + `,"p99_s":` + p50 + `,"last_s":` + p50 + "}\n"
	}
	a := filepath.Join(dir, "a.jsonl")
	b := filepath.Join(dir, "b.jsonl")
	require.NoError(t, os.WriteFile(a, []byte(rec("k1", "7", "1.25")+"{\"key\":\"k9\",\n"), 0o644))
	require.NoError(t, os.WriteFile(b, []byte(rec("k1", "7", "1.5")+rec("k2", "8", "2.5")), 0o644))

	var out, errb bytes.Buffer
	require.Equal(t, 1, run([]string{"records", "check", a, b}, &out, &errb))
	require.Contains(t, out.String(), a+" line 2: a record cut short")
	require.Contains(t, out.String(), b+": 2 records valid, 0 lines wrong")

	// k1 has two different records: refused unless the newest is kept.
	merged := filepath.Join(dir, "merged.jsonl")
	out.Reset()
	errb.Reset()
	require.Equal(t, 1, run([]string{"records", "merge", merged, a, b}, &out, &errb))
	require.Contains(t, errb.String(), "cell k1 has 2 different records, of uplink v1, v1")
	require.NoFileExists(t, merged)
	errb.Reset()
	require.Equal(t, 0, run([]string{"records", "merge", "--on-conflict", "newest", merged, a, b}, &out, &errb), errb.String())
	require.Contains(t, out.String(), "2 records from 3 read (0 duplicates, 1 conflicts, 1 lines skipped)")
	out.Reset()
	require.Equal(t, 0, run([]string{"records", "check", merged}, &out, &errb), out.String())

	out.Reset()
	errb.Reset()
	require.Equal(t, 0, run([]string{"summarize", merged}, &out, &errb), errb.String())
	require.Contains(t, out.String(), "medians across seeds")
	require.Contains(t, out.String(), "1.500")
	require.Contains(t, out.String(), "2.500")
}

// TestRecordsFileLocked: a second writer of a records file is refused
// while the first holds it, and may write once it is closed.
func TestRecordsFileLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	f, err := openRecordFile(path)
	require.NoError(t, err)
	_, err = openRecordFile(path)
	require.ErrorContains(t, err, "another uplink process is writing to it")
	require.NoError(t, f.Close())
	g, err := openRecordFile(path)
	require.NoError(t, err)
	require.NoError(t, g.Close())
}
