package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// alive reports whether process pid exists and is not a zombie (a dead
// process not yet reaped, which an orphan's new parent may never do).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) S ...: the state follows the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// killOnCleanup kills pid at the end of the test, should it still run.
func killOnCleanup(t *testing.T, pid int) {
	t.Cleanup(func() {
		if alive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// requireGone waits up to 5 s for pid to end.
func requireGone(t *testing.T, pid int, what string) {
	t.Helper()
	require.Eventually(t, func() bool { return !alive(pid) }, 5*time.Second, 20*time.Millisecond, "%s (pid %d) still runs", what, pid)
}

// childPIDs lists the processes whose parent is ppid.
func childPIDs(t *testing.T, ppid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:])) // state, ppid, ...
		if len(f) > 1 && f[1] == strconv.Itoa(ppid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// readPID reads lines from r until one reads "pid N" and returns N.
func readPID(t *testing.T, lines <-chan string) int {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case line, ok := <-lines:
			require.True(t, ok, "the helper ended without naming its child")
			if rest, ok := strings.CutPrefix(line, "pid "); ok {
				pid, err := strconv.Atoi(rest)
				require.NoError(t, err)
				return pid
			}
		case <-timeout:
			t.Fatal("no child pid after a minute")
		}
	}
}

// scanLines sends r's lines on the channel it returns, closed at EOF.
func scanLines(r io.Reader) <-chan string {
	ch := make(chan string, 100)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

// TestChildDiesWithParent: a parent killed with SIGKILL while runProcess
// waits on its child leaves no orphan: the kernel kills the child.
func TestChildDiesWithParent(t *testing.T) {
	path, argv, env := helperCommand(t, "parent")
	cmd := exec.Command(path, argv...)
	cmd.Env = env
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	killOnCleanup(t, cmd.Process.Pid)
	pid := readPID(t, scanLines(stdout))
	killOnCleanup(t, pid)
	require.True(t, alive(pid))
	require.NoError(t, cmd.Process.Kill())
	cmd.Wait()
	requireGone(t, pid, "the child of a killed parent")
}

// TestRunProcessCancelKillsGroup: cancelling runProcess's context kills
// the child and what the child started, and runProcess returns at once
// (the grandchild holds the child's standard error open).
func TestRunProcessCancelKillsGroup(t *testing.T) {
	path, argv, env := helperCommand(t, "spawn")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lines := make(chan string, 10)
	done := make(chan error, 1)
	go func() {
		_, _, err := runProcess(ctx, path, argv, env, nil, false, func(line string) { lines <- line })
		done <- err
	}()
	a, b := readPID(t, lines), readPID(t, lines)
	killOnCleanup(t, a)
	killOnCleanup(t, b)
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		require.Error(t, err)
		require.Less(t, time.Since(start), 3*time.Second, "runProcess waited for the grandchild's pipe")
	case <-time.After(time.Minute):
		t.Fatal("runProcess did not return after its context was cancelled")
	}
	requireGone(t, a, "the cancelled child")
	requireGone(t, b, "the cancelled child's child")
}

// TestRunInterrupted: uplink run or validate sent SIGINT or SIGTERM while
// its cells run says it was interrupted, exits 128 plus the signal's
// number (130, 143), leaves no cell process and no partial record, and
// validate still prints its comparison (every row not run).
func TestRunInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("runs cells")
	}
	for _, c := range []struct {
		name  string
		sig   syscall.Signal
		args  []string
		table string // what stdout must hold
	}{
		{"run-SIGINT", syscall.SIGINT, []string{"run", "--nodes", "60", "--degree", "8", "--payload", "1MiB", "--profile", "harness", "--seeds", "7-8", "--jobs", "2", "--out"}, ""},
		{"run-SIGTERM", syscall.SIGTERM, []string{"run", "--nodes", "60", "--degree", "8", "--payload", "1MiB", "--profile", "harness", "--seeds", "7-8", "--jobs", "2", "--out"}, ""},
		{"validate-SIGINT", syscall.SIGINT, []string{"validate", "--table", "appendix_d_home", "--nodes", "60", "--seeds", "7", "--arm", "wholend", "--backend", "harness", "--cache"}, "not run"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "records.jsonl")
			path, argv, env := helperCommand(t, "run", append(c.args, out)...)
			cmd := exec.Command(path, argv...)
			cmd.Env = env
			var stdout bytes.Buffer
			cmd.Stdout = &stdout
			stderr, err := cmd.StderrPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			killOnCleanup(t, cmd.Process.Pid)
			lines := scanLines(stderr)
			var all []string
			// Wait for a cell's first progress line.
			timeout := time.After(2 * time.Minute)
			for started := false; !started; {
				select {
				case line, ok := <-lines:
					require.True(t, ok, "uplink %s ended before a cell started:\n%s", c.args[0], strings.Join(all, "\n"))
					all = append(all, line)
					started = strings.HasPrefix(line, "[wholend harness seed ")
				case <-timeout:
					t.Fatalf("no cell started after 2 minutes:\n%s", strings.Join(all, "\n"))
				}
			}
			kids := childPIDs(t, cmd.Process.Pid)
			require.NotEmpty(t, kids)
			for _, pid := range kids {
				killOnCleanup(t, pid)
			}
			require.NoError(t, cmd.Process.Signal(c.sig))
			// Read its standard error to the end before Wait, which closes
			// the pipe.
			drained := make(chan struct{})
			go func() {
				defer close(drained)
				for line := range lines {
					all = append(all, line)
				}
			}()
			select {
			case <-drained:
			case <-time.After(time.Minute):
				t.Fatalf("uplink %s did not end within a minute of the signal", c.args[0])
			}
			err = cmd.Wait()
			text := strings.Join(all, "\n")
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "%v\n%s", err, text)
			require.Equal(t, 128+int(c.sig), exit.ExitCode(), text)
			require.Contains(t, text, "interrupted; the records written so far are complete")
			require.Contains(t, stdout.String(), c.table)
			for _, pid := range kids {
				requireGone(t, pid, "a cell process")
			}
			data, err := os.ReadFile(out)
			require.NoError(t, err)
			require.True(t, len(data) == 0 || data[len(data)-1] == '\n', "a partial record in %s", out)
		})
	}
}

// TestChildNetworkIsolated: a cell process started with isolation sees no
// interface address of this machine (go-libp2p lists them), while this
// process sees its own.
func TestChildNetworkIsolated(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	require.NoError(t, netIsolation(self), "network namespaces must work on Linux for cells to be isolated")
	path, argv, env := helperCommand(t, "interfaces")
	out, _, err := runProcess(context.Background(), path, argv, env, nil, true, func(string) {})
	require.NoError(t, err)
	require.Empty(t, strings.TrimSpace(string(out)), "addresses a cell process sees")
	mine, err := net.InterfaceAddrs()
	require.NoError(t, err)
	require.NotEmpty(t, mine, "this machine has no interface address to hide; the test shows nothing")
	out, _, err = runProcess(context.Background(), path, argv, env, nil, false, func(string) {})
	require.NoError(t, err)
	require.NotEmpty(t, strings.TrimSpace(string(out)), "without isolation the helper sees this machine's addresses")
}
