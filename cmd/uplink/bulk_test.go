package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// TestBulkTCPFlagErrors: the TCP flags are refused with QUIC, and bad
// values and QUIC-only flags with TCP, each with an error naming the fix.
func TestBulkTCPFlagErrors(t *testing.T) {
	cases := []usageCase{
		{[]string{"bulk", "--cc", "cubic"}, "--cc applies to TCP: add --transport tcp"},
		{[]string{"bulk", "--transport", "quic", "--pacing", "off"}, "--pacing applies to TCP: add --transport tcp"},
		{[]string{"bulk", "--tcp", "shadow"}, "--tcp applies to TCP"},
		{[]string{"bulk", "--transport", "tcp", "--cc", "bbr"}, "valid congestion controls are: cubic, newreno, shadow-reno"},
		{[]string{"bulk", "--transport", "tcp", "--pacing", "yes"}, "--pacing \"yes\": want on or off"},
		{[]string{"bulk", "--transport", "tcp", "--tcp", "bsd"}, "valid models are: linux, shadow"},
		{[]string{"bulk", "--transport", "tcp", "--block-sends"}, "--block-sends applies to QUIC"},
		{[]string{"bulk", "--transport", "udp"}, "valid transports are: quic, tcp"},
	}
	checkUsageErrors(t, cases)
}

// TestBinaryBulkTCP: the uplink binary runs a 1 MiB TCP transfer with
// Shadow's Reno, unpaced, and prints the TCP counters instead of QUIC's.
func TestBinaryBulkTCP(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := buildUplink(t)
	cmd := exec.Command(bin, "bulk", "--transport", "tcp", "--cc", "shadow-reno", "--pacing", "off",
		"--rate", "50Mbit", "--rtt", "20ms", "--bytes", "1MiB")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("uplink bulk --transport tcp: %v\nstderr:\n%s", err, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"received                     1048576 bytes", "sha256", "tcp segments sent", "tcp segments retransmitted"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "quic packets") {
		t.Fatalf("a TCP run printed QUIC counters:\n%s", out)
	}
	if !strings.Contains(stderr.String(), "tcp (linux model, shadow-reno, unpaced)") {
		t.Fatalf("stderr does not describe the TCP model: %q", stderr.String())
	}
}

// TestBulkSimnetFlagErrors: --backend simnet refuses the flags whose
// settings simnet does not model, each with an error naming the flag.
func TestBulkSimnetFlagErrors(t *testing.T) {
	checkUsageErrors(t, []usageCase{
		{[]string{"bulk", "--backend", "ns3"}, `--backend "ns3": valid backends are: uplink, simnet`},
		{[]string{"bulk", "--backend", "simnet", "--transport", "tcp"}, "--backend simnet carries datagrams only: drop --transport tcp"},
		{[]string{"bulk", "--backend", "simnet", "--loss", "1%"}, "drop --loss"},
		{[]string{"bulk", "--backend", "simnet", "--qdisc", "up=pie"}, "drop --qdisc and --host-rate"},
		{[]string{"bulk", "--backend", "simnet", "--host-rate", "1Gbit"}, "drop --qdisc and --host-rate"},
		{[]string{"bulk", "--backend", "simnet", "--block-sends"}, "drop --block-sends"},
		{[]string{"bulk", "--backend", "simnet", "--reproducible"}, "drop --reproducible"},
	})
}

// TestBinaryBulkSimnet: the uplink binary runs a 1 MiB QUIC transfer on
// simnet and prints simnet's datagram count instead of uplink's queues.
func TestBinaryBulkSimnet(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := buildUplink(t)
	cmd := exec.Command(bin, "bulk", "--backend", "simnet", "--rate", "50Mbit", "--rtt", "40ms", "--bytes", "1MiB")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("uplink bulk --backend simnet: %v\nstderr:\n%s", err, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"received                     1048576 bytes", "sha256", "quic packets sent", "network datagrams"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "queue delay") || strings.Contains(out, "model events") {
		t.Fatalf("a simnet run printed uplink's queue or event counters:\n%s", out)
	}
	if !strings.Contains(stderr.String(), "quic on simnet") {
		t.Fatalf("stderr does not name the backend: %q", stderr.String())
	}
	t.Logf("%s", out)
}
