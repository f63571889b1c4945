package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uplinksim/uplink/protocols/cell"
)

// TestPeakHeap: the watcher writes a heap profile at its first poll, and
// writes again only when the live heap has grown by a twentieth.
func TestPeakHeap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "peak.heap.prof")
	base := make([]byte, 32<<20) // a twentieth of the live heap is then over 1.6 MiB
	runtime.GC()
	stop := peakHeap(path, 20*time.Millisecond)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if st, err := os.Stat(path); err == nil && st.Size() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no heap profile after 5 s; error: %v", stop())
		}
		time.Sleep(10 * time.Millisecond)
	}
	first, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	// The live heap stays where it is: no new profile.
	runtime.GC()
	time.Sleep(100 * time.Millisecond)
	same, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !same.ModTime().Equal(first.ModTime()) {
		t.Errorf("profile rewritten without the live heap growing")
	}
	// Grow the live heap well past a twentieth: a new profile.
	hold := make([][]byte, 0, 64)
	for range 64 {
		hold = append(hold, make([]byte, 1<<20))
	}
	runtime.GC()
	deadline = time.Now().Add(5 * time.Second)
	for {
		st, err := os.Stat(path)
		if err == nil && st.ModTime().After(first.ModTime()) {
			break
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("no new profile after the live heap grew by 64 MiB")
		}
		time.Sleep(10 * time.Millisecond)
	}
	err = stop()
	runtime.KeepAlive(hold)
	runtime.KeepAlive(base)
	if err != nil {
		t.Errorf("error: %v", err)
	}
}

// requireNoTemp fails when dir holds a temporary file of writeFileAtomic.
func requireNoTemp(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		require.NotContains(t, e.Name(), ".tmp-", "a temporary file is left in %s", dir)
	}
}

// TestPhaseProfiler: the profiles of a cell's phases are written in place
// with no temporary file left; a prefix where nothing can be created fails
// at once, and one whose folder goes away fails at stop.
func TestPhaseProfiler(t *testing.T) {
	dir := t.TempDir()
	hook, stop, err := phaseProfiler(filepath.Join(dir, "cell"))
	require.NoError(t, err)
	for _, phase := range []string{"hosts", "delivery", "teardown"} {
		hook(phase)
	}
	require.NoError(t, stop())
	require.NoError(t, stop(), "a second stop")
	for _, f := range []string{"hosts.cpu", "delivery.cpu", "teardown.cpu", "delivery.heap"} {
		st, err := os.Stat(filepath.Join(dir, "cell-"+f+".prof"))
		require.NoError(t, err)
		require.NotZero(t, st.Size(), f)
	}
	requireNoTemp(t, dir)

	bad := notADir(t)
	_, _, err = phaseProfiler(filepath.Join(bad, "cell"))
	require.ErrorContains(t, err, "cannot create "+filepath.Join(bad, "cell-hosts.cpu.prof")+": not a directory")

	gone := filepath.Join(t.TempDir(), "gone")
	require.NoError(t, os.Mkdir(gone, 0o755))
	hook, stop, err = phaseProfiler(filepath.Join(gone, "cell"))
	require.NoError(t, err)
	require.NoError(t, os.Remove(gone))
	hook("hosts")
	hook("dial")
	require.ErrorContains(t, stop(), "cpu profile: cannot create "+filepath.Join(gone, "cell-hosts.cpu.prof"))
}

// TestCellProfileFailureFailsCell: a cell whose profiles cannot be written
// fails, and runCells reports it failed and writes no record.
func TestCellProfileFailureFailsCell(t *testing.T) {
	out := filepath.Join(t.TempDir(), "records.jsonl")
	var stderr bytes.Buffer
	recs, err := runCells([]cell.Config{tinyCell(t)}, runOpts{jobs: 1, out: out, profDir: notADir(t)}, &stderr)
	require.ErrorContains(t, err, "1 of 1 cells failed")
	require.ErrorContains(t, err, "cell: profiles: cannot create")
	require.ErrorContains(t, err, "not a directory")
	require.Equal(t, []*cell.Record{nil}, recs)
	data, rerr := os.ReadFile(out)
	require.NoError(t, rerr)
	require.Empty(t, data)
}

// TestBulkCPUProfileUnwritable: bulk's --cpuprofile where no file can be
// created fails with exit 1 naming the flag; a profile that is written is
// renamed into place with no temporary file left.
func TestBulkCPUProfileUnwritable(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, 1, run([]string{"bulk", "--bytes", "64KiB", "--cpuprofile", filepath.Join(notADir(t), "cpu.prof")}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "--cpuprofile: cannot create")

	dir := t.TempDir()
	path := filepath.Join(dir, "cpu.prof")
	stop, err := startCPUProfile(path)
	require.NoError(t, err)
	require.NoFileExists(t, path, "the profile is in place before it is complete")
	require.NoError(t, stop())
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.NotZero(t, st.Size())
	requireNoTemp(t, dir)
}
