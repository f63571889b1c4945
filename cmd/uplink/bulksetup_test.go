package main

import (
	"context"
	"io"
	"math"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/netmodel"
	"github.com/uplinksim/uplink/protocols/bulk"
	"github.com/uplinksim/uplink/transports/tcp"
)

// parsedBulk is the configuration of an uplink bulk command line.
func parsedBulk(t *testing.T, args ...string) bulk.Config {
	t.Helper()
	inv, err := parseBulk(args, io.Discard)
	require.NoError(t, err, "%v", args)
	require.NotNil(t, inv)
	return inv.cfg
}

// TestBulkSetupValues: each setup resolves to its documented values for
// TCP and QUIC, and a flag given overrides the setup's value.
func TestBulkSetupValues(t *testing.T) {
	lo := parsedBulk(t, "--setup", "loopback-netem", "--transport", "tcp")
	require.Equal(t, 65535, lo.MTU)
	require.Zero(t, lo.Rate, "loopback is unshaped")
	require.Equal(t, 1000, lo.NetemLimit)
	require.Equal(t, 212992, lo.SockBufMax)
	require.Zero(t, lo.SndBufMax, "wmem_max equals rmem_max")
	require.Empty(t, lo.UpQdisc+lo.DownQdisc, "bulk's defaults: unshaped links never queue")
	require.Equal(t, 65495, lo.TCP.MSS, "MTU − 40: the model carries no timestamps")
	require.Equal(t, tcp.CUBIC, lo.TCP.CongestionControl)
	require.False(t, lo.TCP.Pacing, "CUBIC on a non-fq qdisc is unpaced")
	require.Equal(t, tcp.LinuxRmem, lo.TCP.RecvBuffer)
	require.Equal(t, tcp.LinuxWmem, lo.TCP.SendBuffer)
	require.Equal(t, tcp.LinuxRmemMax, lo.TCP.RmemMax)
	require.False(t, lo.GSO)

	loq := parsedBulk(t, "--setup", "loopback-netem")
	require.True(t, loq.GSO)
	require.Equal(t, netmodel.BlockWhenFull, loq.SendMode)
	require.Equal(t, 65535, loq.MTU)
	require.Zero(t, loq.Rate)
	require.Equal(t, 1000, loq.NetemLimit)
	require.Equal(t, 212992, loq.SockBufMax)
	require.Nil(t, loq.TCP)

	veth := parsedBulk(t, "--setup", "veth-htb", "--transport", "tcp", "--rate", "50Mbit")
	require.Zero(t, veth.MTU, "1 500, bulk's default")
	require.Equal(t, int64(50e6), veth.Rate)
	require.Equal(t, "pfifo:limit=1000", veth.UpQdisc)
	require.Equal(t, "pfifo:limit=1000", veth.DownQdisc)
	require.Equal(t, 1000, veth.NetemLimit)
	require.Equal(t, 1460, veth.TCP.MSS)
	require.False(t, veth.TCP.Pacing)
	require.Equal(t, 212992, veth.SockBufMax)

	vethq := parsedBulk(t, "--setup", "veth-htb")
	require.True(t, vethq.GSO)
	require.Equal(t, netmodel.BlockWhenFull, vethq.SendMode)

	over := parsedBulk(t, "--setup", "veth-htb", "--transport", "tcp", "--pacing", "on", "--mtu", "9000",
		"--qdisc", "down=fq_codel", "--netem-limit", "0", "--tcp-wmem", "4096 65536 8388608")
	require.True(t, over.TCP.Pacing)
	require.Equal(t, 8960, over.TCP.MSS)
	require.Equal(t, "pfifo:limit=1000", over.UpQdisc)
	require.Equal(t, "fq_codel", over.DownQdisc)
	require.Zero(t, over.NetemLimit)
	require.Equal(t, tcp.BufferSizes{Min: 4096, Default: 65536, Max: 8388608}, over.TCP.SendBuffer)

	loop := parsedBulk(t, "--setup", "loopback-netem")
	require.Equal(t, 1000, loop.NetemLimit)
	require.True(t, loop.NetemShared, "lo's one qdisc queues both directions")
	require.False(t, veth.NetemShared, "a netem on each veth end")
	require.False(t, parsedBulk(t, "--setup", "loopback-netem", "--netem-limit", "0").NetemShared)
	require.Equal(t, int64(1e9), parsedBulk(t, "--setup", "loopback-netem", "--rate", "1Gbit").Rate)
	require.False(t, parsedBulk(t, "--setup", "loopback-netem", "--gso=false").GSO)
	require.Equal(t, netmodel.NeverBlock, parsedBulk(t, "--setup", "veth-htb", "--block-sends=false").SendMode)

	checkUsageErrors(t, []usageCase{
		{[]string{"bulk", "--setup", "lo"}, `--setup "lo": valid setups are: loopback-netem, veth-htb`},
		{[]string{"bulk", "--rate", "unlimited", "--rtt", "0"}, "--rate unlimited needs a positive --rtt"},
		{[]string{"bulk", "--setup", "loopback-netem", "--backend", "simnet"}, "--backend simnet"},
		{[]string{"bulk", "--netem-shared"}, "--netem-shared shares netem's queue between the directions: give its --netem-limit too"},
	})
}

// runSetup runs an uplink bulk command line's transfer.
func runSetup(t *testing.T, args ...string) bulk.Result {
	t.Helper()
	cfg := parsedBulk(t, args...)
	var res bulk.Result
	synctest.Test(t, func(t *testing.T) {
		var err error
		res, err = bulk.Run(context.Background(), cfg)
		require.NoError(t, err)
	})
	return res
}

// TestBulkSetupLoopbackMathis: under loopback-netem with 0.25 % loss each
// way, TCP (MSS 65 495, window far from the buffers' limits) is
// loss-limited, and its goodput over 60 s is within 15 % of Mathis et
// al.'s MSS/RTT · √(3/2)/√p: 321 Mbit/s (CUBIC's window is in its
// Reno-friendly region, and Linux counts acknowledged segments, not
// ACKs, so delayed ACKs do not slow the growth).
func TestBulkSetupLoopbackMathis(t *testing.T) {
	if testing.Short() {
		t.Skip("60 s of virtual time")
	}
	const p, rtt = 0.0025, 0.040
	res := runSetup(t, "--setup", "loopback-netem", "--transport", "tcp", "--rtt", "40ms", "--loss", "0.25%", "--duration", "60s")
	mathis := 65495 * 8 / rtt * math.Sqrt(1.5) / math.Sqrt(p)
	require.Positive(t, res.FastRecoveries)
	require.Zero(t, res.NetemDrops)
	require.InEpsilon(t, mathis, res.GoodputBps, 0.15, "goodput %.1f Mbit/s, Mathis %.1f", res.GoodputBps/1e6, mathis/1e6)
}

// TestBulkSetupVethHTBRate: under veth-htb without loss, TCP fills the
// HTB rate: goodput over 20 s at 50 Mbit/s within 3 % of the rate's
// payload share, 1 460 of every 1 500 bytes (48.67 Mbit/s), and nothing
// is dropped.
func TestBulkSetupVethHTBRate(t *testing.T) {
	if testing.Short() {
		t.Skip("20 s of virtual time")
	}
	res := runSetup(t, "--setup", "veth-htb", "--transport", "tcp", "--rate", "50Mbit", "--rtt", "40ms", "--duration", "20s")
	payload := 50e6 * 1460 / 1500
	require.LessOrEqual(t, res.GoodputBps, payload)
	require.InEpsilon(t, payload, res.GoodputBps, 0.03, "goodput %.2f Mbit/s", res.GoodputBps/1e6)
	require.Zero(t, res.QueueDrops+res.NetemDrops+res.LossDrops)
}

// TestBulkSetupNetemLimit: under loopback-netem at MSS 1 460, TCP's window
// (up to tcp_rmem's 6 MiB) outgrows netem's 1 000 packets: with netem's
// limit lifted the data direction's pipe holds more than 1 000 packets
// (goodput × RTT/2 over the packet size) and nothing is dropped; with the
// setup's limit the pipe drops at its tail and nothing else does.
func TestBulkSetupNetemLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("two 10 s transfers")
	}
	args := []string{"--setup", "loopback-netem", "--transport", "tcp", "--mtu", "1500", "--rtt", "40ms", "--duration", "10s"}
	free := runSetup(t, append(args, "--netem-limit", "0")...)
	require.Zero(t, free.NetemDrops+free.QueueDrops)
	require.Greater(t, free.GoodputBps*0.020/8/1460, 1000.0, "goodput %.1f Mbit/s", free.GoodputBps/1e6)
	limited := runSetup(t, args...)
	require.Positive(t, limited.NetemDrops)
	require.Zero(t, limited.QueueDrops+limited.LossDrops)
	require.Positive(t, limited.FastRecoveries)
	t.Logf("unlimited %.1f Mbit/s; limit 1000: %.1f Mbit/s, %d netem drops", free.GoodputBps/1e6, limited.GoodputBps/1e6, limited.NetemDrops)
}
