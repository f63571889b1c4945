package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uplinksim/uplink/protocols/cell"
)

// validRecord is a valid record (sweep.CheckRecord) with key and version
// v: 5 nodes, every receiver complete.
func validRecord(key, v string) *cell.Record {
	p50, last := 0.7, 1.2
	late := 0
	return &cell.Record{Schema: cell.RecordSchema, Key: key, Version: v, Arm: "wholend", Profile: "harness", N: 5, Total: 4,
		Completed: 4, PayloadBytes: 1024, WindowS: 8, P50S: &p50, P90S: &last, P99S: &last, LastS: &last, Late: &late,
		CompletionUS: []int64{500000, 700000, 900000, 1200000}, Partitions: 1}
}

// recordLine is a records file line of a valid record with key and
// version v.
func recordLine(t *testing.T, key, v string) string {
	t.Helper()
	b, err := json.Marshal(validRecord(key, v))
	require.NoError(t, err)
	return string(b) + "\n"
}

// TestAppendAfterPartialLine: a records file whose last line was cut short
// gets a newline before the next record, which reads back whole; the cut
// line is skipped with a warning naming its line.
func TestAppendAfterPartialLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "records.jsonl")
	first := recordLine(t, "a", "v")
	require.NoError(t, os.WriteFile(path, []byte(first+`{"key":"b","ar`), 0o644))
	f, err := openRecordFile(path)
	require.NoError(t, err)
	require.NoError(t, appendRecord(f, validRecord("c", "v")))
	require.NoError(t, f.Close())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, first+`{"key":"b","ar`+"\n"+recordLine(t, "c", "v"), string(data))

	var stderr bytes.Buffer
	recs, err := readRecords(path, "--cache", "v", false, &stderr)
	require.NoError(t, err)
	require.Len(t, recs, 2)
	require.NotNil(t, recs["a"])
	require.NotNil(t, recs["c"])
	require.Contains(t, stderr.String(), path+" line 2: a record cut short")

	// A file that ends in a newline gets none added.
	f, err = openRecordFile(path)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	again, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, data, again)
}

// TestReadRecordsErrors: a bad line names its file and line, and the
// flag that gave the file.
func TestReadRecordsErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
		return path
	}
	good := recordLine(t, "a", "v")
	cases := []struct {
		name, content, flag, want string
	}{
		{"bom.jsonl", "\ufeff" + good, "--cache", "line 1: starts with a UTF-8 byte-order mark"},
		{"middle.jsonl", good + "{not json}\n" + good, "--reuse", "line 2: not a cell record: invalid character 'n'"},
		{"nokey.jsonl", good + good + `{"arm":"x"}` + "\n", "--cache", "line 3: not a cell record: no cell key"},
		{"two.jsonl", good + `{"key":"a"} {"key":"b"}` + "\n", "--reuse", "line 2: not a cell record: more than one JSON value"},
	}
	for _, c := range cases {
		path := write(c.name, c.content)
		_, err := readRecords(path, c.flag, "v", false, &bytes.Buffer{})
		require.ErrorContains(t, err, c.flag+" "+path+" "+c.want, c.name)
		require.ErrorAs(t, err, new(usageError), c.name)
	}
	// A truncated last line is skipped with a warning.
	var stderr bytes.Buffer
	recs, err := readRecords(write("cut.jsonl", good+good[:20]), "--cache", "v", false, &stderr)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	require.Contains(t, stderr.String(), "line 2: a record cut short")

	// A --reuse file that cannot be read is named as such.
	_, err = readAllRecords(filepath.Join(dir, "missing.jsonl"), []string{dir}, "v", false, false, &bytes.Buffer{})
	require.ErrorContains(t, err, "--reuse "+dir+": ")
	require.NotContains(t, err.Error(), "--cache")
}

// TestCachedOnlyMissingCache: --cached-only with a cache file that does
// not exist is a usage error naming the file.
func TestCachedOnlyMissingCache(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.jsonl")
	var stdout, stderr bytes.Buffer
	code := run([]string{"validate", "--table", "appendix_d_home", "--nodes", "6", "--seeds", "7", "--arm", "wholend",
		"--backend", "harness", "--cached-only", "--cache", missing}, &stdout, &stderr)
	require.Equal(t, 2, code, stderr.String())
	require.Contains(t, stderr.String(), "--cached-only: the --cache file "+missing+" does not exist")
	require.Empty(t, stdout.String())
}
