package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// TestPeakHeap: the watcher writes a heap profile at its first poll, and
// writes again only when the live heap has grown by a twentieth.
func TestPeakHeap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "peak.heap.prof")
	base := make([]byte, 32<<20) // a twentieth of the live heap is then over 1.6 MiB
	runtime.GC()
	var errw bytes.Buffer
	stop := peakHeap(path, 20*time.Millisecond, &errw)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if st, err := os.Stat(path); err == nil && st.Size() > 0 {
			break
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("no heap profile after 5 s; errors: %q", errw.String())
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
	stop()
	runtime.KeepAlive(hold)
	runtime.KeepAlive(base)
	if errw.Len() > 0 {
		t.Errorf("errors: %q", errw.String())
	}
}
