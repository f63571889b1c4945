package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// recordsOf reads a records file's keys and versions, "key@version" a
// line.
func recordsOf(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []string
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var r struct{ Key, Version string }
		require.NoError(t, json.Unmarshal([]byte(l), &r))
		out = append(out, r.Key+"@"+r.Version)
	}
	return out
}

// TestRecordsMergeOut: OUT among the inputs is merged into in place; an
// OUT that exists and is not among them is refused, naming --force, and
// kept whole; --force replaces it.
func TestRecordsMergeOut(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "merged.jsonl")
	a := filepath.Join(dir, "a.jsonl")
	require.NoError(t, os.WriteFile(out, []byte(recordLine(t, "k1", "v1")), 0o644))
	require.NoError(t, os.WriteFile(a, []byte(recordLine(t, "k2", "v1")), 0o644))
	exec := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"records", "merge"}, args...), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}

	code, _, stderr := exec(out, a)
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "records merge: OUT "+out+" exists and is not among the files merged: its records would be lost; name it among them too to merge into it, or --force to replace it")
	require.Equal(t, []string{"k1@v1"}, recordsOf(t, out), "kept whole")

	code, stdout, stderr := exec(out, out, a)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, out+": 2 records from 2 read (0 duplicates, 0 conflicts, 0 lines skipped)\n", stdout)
	require.Equal(t, []string{"k1@v1", "k2@v1"}, recordsOf(t, out))

	// Named through a link, OUT is still among the inputs.
	link := filepath.Join(dir, "link.jsonl")
	require.NoError(t, os.Symlink(out, link))
	code, _, stderr = exec(out, link, a)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, []string{"k1@v1", "k2@v1"}, recordsOf(t, out))

	code, _, stderr = exec("--force", out, a)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, []string{"k2@v1"}, recordsOf(t, out))

	code, _, stderr = exec(dir, a)
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "records merge: OUT "+dir+" is a folder")
}

// TestRecordsMergeConflict: a cell with records of two uplink versions
// (a sweep rerun with a rebuilt binary) is refused by merge and
// summarize, naming the cell, its versions and the flag; nothing is
// written. --on-conflict newest keeps the last read, one record a cell.
func TestRecordsMergeConflict(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "shard-0.jsonl")
	b := filepath.Join(dir, "shard-1.jsonl")
	require.NoError(t, os.WriteFile(a, []byte(recordLine(t, "k1", "v1")+recordLine(t, "k2", "v1")), 0o644))
	require.NoError(t, os.WriteFile(b, []byte(recordLine(t, "k1", "v2")+recordLine(t, "k2", "v1")), 0o644))
	out := filepath.Join(dir, "merged.jsonl")

	var stdout, stderr bytes.Buffer
	require.Equal(t, 1, run([]string{"records", "merge", out, a, b}, &stdout, &stderr))
	require.Equal(t, "uplink: records merge: 1 cell has several different records ("+out+" not written):\n"+
		"  cell k1 has 2 different records, of uplink v1, v2\n"+
		"--on-conflict newest keeps each cell's last record read (the files in the order given, lines in file order); or remove the records not wanted\n", stderr.String())
	require.NoFileExists(t, out)

	stderr.Reset()
	require.Equal(t, 1, run([]string{"summarize", a, b}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "uplink: summarize: 1 cell has several different records (no table):\n  cell k1 has 2 different records, of uplink v1, v2\n--on-conflict newest")

	stdout.Reset()
	stderr.Reset()
	require.Equal(t, 0, run([]string{"records", "merge", "--on-conflict", "newest", out, a, b}, &stdout, &stderr), stderr.String())
	require.Equal(t, out+": 2 records from 4 read (1 duplicates, 1 conflicts, 0 lines skipped)\n", stdout.String())
	require.Contains(t, stderr.String(), "uplink: conflict: cell k1 has 2 different records, of uplink v1, v2: kept the last read (--on-conflict newest)")
	require.Equal(t, []string{"k1@v2", "k2@v1"}, recordsOf(t, out))

	stdout.Reset()
	require.Equal(t, 0, run([]string{"summarize", "--on-conflict", "newest", a, b}, &stdout, &stderr))
	require.Contains(t, stdout.String(), "medians across seeds")

	checkUsageErrors(t, []usageCase{
		{[]string{"records", "merge", "--on-conflict", "oldest", out, a}, `records merge: --on-conflict "oldest": want refuse or newest`},
		{[]string{"summarize", "--on-conflict", "first", a}, `summarize: --on-conflict "first": want refuse or newest`},
		{[]string{"records", "merge", "--no-such", out, a}, "records merge: unknown flag: --no-such"},
	})
}

// TestRecordsFileErrors: a file that cannot be read, or is not a records
// file, is named in check, merge and summarize's error.
func TestRecordsFileErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "none.jsonl")
	good := filepath.Join(dir, "good.jsonl")
	require.NoError(t, os.WriteFile(good, []byte(recordLine(t, "k1", "v1")), 0o644))
	binary := filepath.Join(dir, "binary.jsonl")
	require.NoError(t, os.WriteFile(binary, nil, 0o644))
	require.NoError(t, os.Truncate(binary, 65<<20)) // zeros, without a newline
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"records", "check", good, missing}, "uplink: records check: " + missing + ": no such file or directory"},
		{[]string{"records", "merge", filepath.Join(dir, "out.jsonl"), good, missing}, "uplink: records merge: " + missing + ": no such file or directory"},
		{[]string{"summarize", good, missing}, "uplink: summarize: " + missing + ": no such file or directory"},
		{[]string{"records", "check", dir}, "uplink: records check: " + dir + ": a folder, not a records file"},
		{[]string{"records", "check", binary}, "uplink: records check: " + binary + " line 1: a line longer than 64 MiB: not a records file"},
		{[]string{"records", "merge", filepath.Join(dir, "out.jsonl"), binary}, "uplink: records merge: " + binary + " line 1: a line longer than 64 MiB: not a records file"},
		{[]string{"summarize", binary}, "uplink: summarize: " + binary + " line 1: a line longer than 64 MiB: not a records file"},
	} {
		var stdout, stderr bytes.Buffer
		require.NotEqual(t, 0, run(c.args, &stdout, &stderr), c.args)
		require.Contains(t, stderr.String(), c.want, c.args)
	}
	require.NoFileExists(t, filepath.Join(dir, "out.jsonl"))
}

// TestRecordsFromPipe: records read from a pipe (/dev/stdin, a FIFO) as
// from a file: only the length of a line is bounded.
func TestRecordsFromPipe(t *testing.T) {
	if _, err := os.Stat("/dev/fd/0"); err != nil {
		t.Skip("no /dev/fd")
	}
	r, w, err := os.Pipe()
	require.NoError(t, err)
	go func() {
		w.WriteString(recordLine(t, "k1", "v1") + recordLine(t, "k2", "v1"))
		w.Close()
	}()
	defer r.Close()
	var stdout, stderr bytes.Buffer
	path := "/dev/fd/" + strconv.Itoa(int(r.Fd()))
	require.Equal(t, 0, run([]string{"records", "check", path}, &stdout, &stderr), stderr.String())
	require.Equal(t, path+": 2 records valid, 0 lines wrong\n", stdout.String())
}

// TestRecordsMergeToPipe: OUT a pipe through a link only the kernel
// follows (as /dev/stdout is when piped): the records go down the pipe
// and the summary to stderr, off their stream.
func TestRecordsMergeToPipe(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.jsonl")
	require.NoError(t, os.WriteFile(a, []byte(recordLine(t, "k1", "v1")+recordLine(t, "k2", "v1")), 0o644))
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	out := "/proc/self/fd/" + strconv.Itoa(int(w.Fd()))
	if _, err := os.Lstat(out); err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	got := make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(r); got <- b }()
	var stdout, stderr bytes.Buffer
	code := run([]string{"records", "merge", out, a}, &stdout, &stderr)
	w.Close()
	require.Equal(t, 0, code, stderr.String())
	b := <-got
	require.Equal(t, 2, strings.Count(string(b), "\n"))
	require.Empty(t, stdout.String())
	require.Contains(t, stderr.String(), "2 records from 2 read")
}
