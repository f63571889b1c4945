package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/protocols/arms"
	"github.com/uplinksim/uplink/protocols/cell"
)

// helperEnv names the environment variable that turns this test binary
// into one of TestHelperProcess's helper processes.
const helperEnv = "UPLINK_TEST_HELPER"

// helperCommand is the command line and environment that run this test
// binary as the helper process mode, with args after "--".
func helperCommand(t *testing.T, mode string, args ...string) (path string, argv, env []string) {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	argv = append([]string{"-test.run=^TestHelperProcess$", "--"}, args...)
	return self, argv, append(os.Environ(), helperEnv+"="+mode)
}

// TestHelperProcess is not a test: run with helperEnv set, it is a child
// process for the tests of runProcess and runCells.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("a helper process of other tests")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	switch mode {
	case "long-line":
		// A line far over any line limit, then the line that says what
		// went wrong.
		os.Stderr.Write(bytes.Repeat([]byte("q"), 3<<20))
		os.Stderr.WriteString("\nthe real error: queue spec too long\n")
		os.Exit(1)
	case "interfaces":
		// The addresses of every interface this process sees.
		addrs, err := net.InterfaceAddrs()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		for _, a := range addrs {
			fmt.Println(a)
		}
		os.Exit(0)
	case "sleep":
		fmt.Fprintf(os.Stderr, "pid %d\n", os.Getpid())
		time.Sleep(5 * time.Minute)
		os.Exit(0)
	case "spawn":
		// A child in this process's group, then sleep.
		path, argv, env := helperCommand(t, "sleep")
		cmd := exec.Command(path, argv...)
		cmd.Env, cmd.Stderr = env, os.Stderr
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		fmt.Fprintf(os.Stderr, "pid %d\n", os.Getpid())
		cmd.Wait()
		os.Exit(0)
	case "parent":
		// The parent side of runCells: a sleeping child, its lines on
		// standard output.
		path, argv, env := helperCommand(t, "sleep")
		_, _, err := runProcess(context.Background(), path, argv, env, nil, false, func(line string) { fmt.Println(line) })
		fmt.Println("runProcess:", err)
		os.Exit(0)
	case "run":
		os.Exit(run(args, os.Stdout, os.Stderr))
	}
	fmt.Fprintf(os.Stderr, "unknown helper mode %q\n", mode)
	os.Exit(3)
}

// TestRunProcessLongStderrLine: a child that writes a 3 MiB line to its
// standard error and exits 1 does not hang its parent; the error quotes
// the line after it, and the long line is shown cut with a note.
func TestRunProcessLongStderrLine(t *testing.T) {
	path, argv, env := helperCommand(t, "long-line")
	var shown []string
	done := make(chan error, 1)
	go func() {
		_, _, err := runProcess(context.Background(), path, argv, env, nil, false, func(line string) { shown = append(shown, line) })
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("runProcess hangs on a child's 3 MiB line of standard error")
	}
	require.Error(t, err)
	require.Contains(t, err.Error(), "exit status 1")
	require.Contains(t, err.Error(), "the real error: queue spec too long")
	require.Len(t, shown, 2)
	require.Equal(t, strings.Repeat("q", maxShownLine)+fmt.Sprintf(" [... %d more bytes of this line not shown]", 3<<20-maxShownLine), shown[0])
	require.Equal(t, "the real error: queue spec too long", shown[1])
	require.Less(t, len(err.Error()), 2*maxShownLine, "the error quotes the long line whole")
}

// TestLineWriter: lines split across writes are put together, a long
// line is cut at a character boundary with the count of what was cut, a
// last line without a newline is flushed, and the tail keeps the last
// tailLines lines.
func TestLineWriter(t *testing.T) {
	var got []string
	w := &lineWriter{emit: func(s string) { got = append(got, s) }}
	for _, p := range []string{"hel", "lo\nwor", "ld\n", "\n"} {
		n, err := w.Write([]byte(p))
		require.NoError(t, err)
		require.Equal(t, len(p), n)
	}
	require.Equal(t, []string{"hello", "world", ""}, got)

	// A two-byte character across the cut: it is not split.
	got = nil
	long := strings.Repeat("a", maxShownLine-1) + "é" + strings.Repeat("b", 10)
	w.Write([]byte(long + "\nlast"))
	w.flush()
	require.Len(t, got, 2)
	require.True(t, utf8.ValidString(got[0]))
	require.Equal(t, strings.Repeat("a", maxShownLine-1)+" [... 12 more bytes of this line not shown]", got[0])
	require.Equal(t, "last", got[1])

	for i := range 30 {
		fmt.Fprintf(w, "line %d\n", i)
	}
	require.Len(t, w.tail, tailLines)
	require.Equal(t, "line 29", w.tail[tailLines-1])
}

// tinyCell is a six-node cell that runs in well under a second.
func tinyCell(t *testing.T) cell.Config {
	t.Helper()
	p, err := cell.LookupProfile("harness")
	require.NoError(t, err)
	c := cell.Config{Arm: "wholend", Profile: p, Seed: 7, N: 6, Degree: 2, Payload: 64 << 10, Net: "home", Latency: "geo",
		Transport: "quic", Window: 8 * des.Second, Deadline: 3 * des.Second, Gossip: cell.StudyGossip(), Version: buildVersion(),
		Encoding: arms.EncodingSnappy}
	require.NoError(t, c.Check())
	return c
}

// notADir is a path whose parent is a regular file: nothing can be
// created there, even by root.
func notADir(t *testing.T) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	return filepath.Join(file, "sub")
}

// TestBracketed: the chosen word of a sysfs choice file.
func TestBracketed(t *testing.T) {
	require.Equal(t, "madvise", bracketed("always [madvise] never\n"))
	require.Equal(t, "always", bracketed("[always] madvise never\n"))
	require.Equal(t, "", bracketed("always madvise never\n"))
	require.Equal(t, "", bracketed(""))
}

// TestEnvInt: the GOGC or GOMAXPROCS an environment sets, the last one
// winning; none, or not a positive integer, is 0.
func TestEnvInt(t *testing.T) {
	env := []string{"HOME=/x", "GOGC=400", "GOMAXPROCS=1", "GOGC=100"}
	require.Equal(t, 100, envInt(env, "GOGC"))
	require.Equal(t, 1, envInt(env, "GOMAXPROCS"))
	require.Equal(t, 0, envInt([]string{"HOME=/x"}, "GOGC"))
	require.Equal(t, 0, envInt([]string{"GOGC=off"}, "GOGC"))
	require.Equal(t, 0, envInt([]string{"GOMAXPROCS=0"}, "GOMAXPROCS"))
	require.Equal(t, 0, envInt(nil, "GOGC"))
}

// TestEnvMemLimit: the soft memory limit an environment sets, in bytes,
// the last one winning, with the runtime's suffixes; none, "off" or one
// the runtime would refuse is 0.
func TestEnvMemLimit(t *testing.T) {
	require.Equal(t, int64(10<<30), envMemLimit([]string{"GOMEMLIMIT=1GiB", "HOME=/x", "GOMEMLIMIT=10737418240"}))
	require.Equal(t, int64(6656<<20), envMemLimit([]string{"GOMEMLIMIT=6656MiB"}))
	require.Equal(t, int64(512), envMemLimit([]string{"GOMEMLIMIT=512B"}))
	require.Equal(t, int64(0), envMemLimit([]string{"GOMEMLIMIT=off"}))
	require.Equal(t, int64(0), envMemLimit([]string{"GOMEMLIMIT=10GB"}))
	require.Equal(t, int64(0), envMemLimit([]string{"GOMEMLIMIT=9999999TiB"}))
	require.Equal(t, int64(0), envMemLimit(nil))
}

// TestCellEnvMemLimitRecorded: --memlimit's environment reads back as the
// limit a record names.
func TestCellEnvMemLimitRecorded(t *testing.T) {
	env, err := cellEnv(1, 100, "6.5GiB")
	require.NoError(t, err)
	require.Equal(t, int64(6.5*(1<<30)), envMemLimit(env))
}
