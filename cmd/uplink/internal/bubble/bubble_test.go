package bubble

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
