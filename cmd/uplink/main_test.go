package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBinaryEntersBubble builds the real uplink binary and runs a small
// bulk transfer with it: a plain binary (not go test) must enter the
// synctest bubble, finish, and shut down cleanly.
func TestBinaryEntersBubble(t *testing.T) {
	bin := buildUplink(t)
	cmd := exec.Command(bin, "bulk", "--rate", "50Mbit", "--rtt", "20ms", "--bytes", "1MiB")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("uplink bulk: %v\nstderr:\n%s", err, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"received                     1048576 bytes", "sha256", "wall µs per sim packet"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "PASS") || strings.Contains(stderr.String(), "blocked goroutines") {
		t.Fatalf("testing framework output leaked:\nstdout:\n%s\nstderr:\n%s", out, stderr.String())
	}
}

// TestReproducible: a binary built with testing.testBinary=1 and run with
// --reproducible gives the same virtual-time results twice over a lossy
// link; a plain binary refuses the flag with an error naming the fix.
func TestReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary and runs two transfers")
	}
	bin := filepath.Join(t.TempDir(), "uplink")
	build := exec.Command("go", "build", "-ldflags=-X=testing.testBinary=1", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	results := func() string {
		out, err := exec.Command(bin, "bulk", "--reproducible", "--rate", "100Mbit", "--rtt", "40ms",
			"--loss", "0.25%", "--bytes", "4MiB", "--seed", "9").Output()
		if err != nil {
			t.Fatalf("uplink bulk --reproducible: %v", err)
		}
		var keep []string
		for _, line := range strings.Split(string(out), "\n") {
			if !strings.HasPrefix(line, "wall") && !strings.HasPrefix(line, "simulated MiB") {
				keep = append(keep, line)
			}
		}
		return strings.Join(keep, "\n")
	}
	a, b := results(), results()
	if a != b {
		t.Fatalf("two reproducible runs differ:\n%s\n---\n%s", a, b)
	}
	plain := buildUplink(t)
	out, err := exec.Command(plain, "bulk", "--reproducible", "--bytes", "1KiB").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "testing.testBinary=1") {
		t.Fatalf("plain binary: %v, output %q; want a refusal naming the build flag", err, out)
	}
}

// buildUplink builds the plain uplink binary into a temporary folder.
func buildUplink(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "uplink")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func TestUsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"bulk", "--rate", "fast"}, "--rate"},
		{[]string{"bulk", "--loss", "150%"}, "--loss"},
		{[]string{"bulk", "--qdisc", "up=pfifo:limit=0"}, "at least 1 packet"},
		{[]string{"bulk", "--qdisc", "sideways=pie"}, "unknown direction"},
		{[]string{"bulk", "--qdisc", "up=wred"}, "unknown discipline"},
		{[]string{"bulk", "--flows", "0"}, "--flows"},
		{[]string{"bulk", "--transport", "sctp"}, "valid transports"},
		{[]string{"bulk", "--bytes", "-5"}, "--bytes"},
		{[]string{"frobnicate"}, "unknown command"},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		if code := run(c.args, &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2", c.args, code)
		}
		if !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: stderr %q lacks %q", c.args, errb.String(), c.want)
		}
	}
}

func TestParseUnits(t *testing.T) {
	rates := map[string]int64{"50Mbit": 50e6, "1Gbit": 1e9, "100kbit": 1e5, "2000000": 2e6, "1.5Gbps": 15e8}
	for s, want := range rates {
		if got, err := parseRate(s); err != nil || got != want {
			t.Errorf("parseRate(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	fr := map[string]float64{"0.5%": 0.005, "0.25%": 0.0025, "0.01": 0.01, "0": 0}
	for s, want := range fr {
		if got, err := parseFraction(s); err != nil || got != want {
			t.Errorf("parseFraction(%q) = %g, %v; want %g", s, got, err, want)
		}
	}
	sizes := map[string]int64{"1MiB": 1 << 20, "16MiB": 16 << 20, "512KiB": 512 << 10, "1MB": 1e6, "1000": 1000}
	for s, want := range sizes {
		if got, err := parseSize(s); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
}
