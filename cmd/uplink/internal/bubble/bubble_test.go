package bubble

import (
	"errors"
	"flag"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRunFromBinary builds a plain binary that calls Run and
// checks that it enters the bubble, keeps the model and real timers on one
// clock, and turns errors and panics inside into ordinary errors.
func TestRunFromBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "bubbleprog")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/bubbleprog").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cases := map[string][]string{
		"sleep": {"virtual 1h0m0s, wall under a minute true", "err: <nil>"},
		"live":  {"model event seen at 250ms", "err: <nil>"},
		"error": {"err: boom inside"},
		"panic": {"err: panic inside the simulation: kaboom inside"},
		"leak":  {"err: bubble: deadlock: main bubble goroutine has exited but blocked goroutines remain"},
	}
	for mode, wants := range cases {
		out, err := exec.Command(bin, mode).CombinedOutput()
		if err != nil {
			t.Errorf("%s: %v\n%s", mode, err, out)
			continue
		}
		for _, w := range wants {
			if !strings.Contains(string(out), w) {
				t.Errorf("%s: output lacks %q:\n%s", mode, w, out)
			}
		}
		if strings.Contains(string(out), "PASS") {
			t.Errorf("%s: the testing framework's PASS leaked:\n%s", mode, out)
		}
	}
}

// TestRunInsideTest: under go test, Run's nested framework runs fn exactly
// once whatever the enclosing binary's filters and count, leaves its
// flags as they were, and does not touch its test log: go test passes
// -test.testlogfile when results may be cached, and a nested run that
// closed that file would fail this package at exit.
func TestRunInsideTest(t *testing.T) {
	set := map[string]string{"test.run": "^NoSuchTest$", "test.count": "3"}
	before := map[string]string{}
	for name, v := range set {
		f := flag.Lookup(name)
		before[name] = f.Value.String()
		require.NoError(t, f.Value.Set(v))
		t.Cleanup(func() { f.Value.Set(before[name]) })
	}
	calls := 0
	require.NoError(t, Run(func(*testing.T) error { calls++; return nil }))
	require.Equal(t, 1, calls)
	for name, v := range set {
		require.Equal(t, v, flag.Lookup(name).Value.String(), name)
	}
	require.ErrorContains(t, Run(func(*testing.T) error { return errors.New("inside") }), "inside")
}

// TestRunSplit: RunSplit runs fn outside any bubble and its Enter runs
// the bodies at once, each in a bubble of its own (each has its own
// clock: a sleep in one does not move the other's); errors and panics in
// bodies come back joined, as ordinary errors.
func TestRunSplit(t *testing.T) {
	hand := make(chan time.Duration) // made outside every bubble
	err := RunSplit(func(enter Enter) error {
		return enter(2, func(part int) error {
			start := time.Now()
			if part == 0 {
				time.Sleep(time.Hour)
				hand <- time.Since(start)
				return nil
			}
			if got := <-hand; got != time.Hour {
				return fmt.Errorf("partition 0 slept %v", got)
			}
			if d := time.Since(start); d != 0 {
				return fmt.Errorf("partition 1's clock moved %v while it waited on a channel made outside its bubble", d)
			}
			return nil
		})
	})
	require.NoError(t, err)
	err = RunSplit(func(enter Enter) error {
		return enter(3, func(part int) error {
			switch part {
			case 1:
				return errors.New("boom in 1")
			case 2:
				panic("kaboom in 2")
			}
			return nil
		})
	})
	require.ErrorContains(t, err, "boom in 1")
	require.ErrorContains(t, err, "kaboom in 2")
}
