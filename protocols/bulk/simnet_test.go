package bulk

import (
	"context"
	"math"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
)

// quicInitialWindow is quic-go's initial congestion window in bytes:
// initialCongestionWindow (32 packets) × protocol.InitialPacketSize (1 280
// bytes), internal/congestion/cubic_sender.go in quic-go v0.64.
const quicInitialWindow = 32 * 1280

// minQUICTransfer is the analytic minimum of a bytes-long QUIC transfer
// over links of rate bit/s and round trip rtt, counted from the dial to the
// last byte's arrival: one round trip of handshake, then slow start from
// quicInitialWindow, doubling each round trip, for the k rounds whose
// window stays below the bandwidth-delay product (the line idles part of
// each), then the rest of the bytes at line rate, and the one-way latency
// of the last byte. It leaves out packet headers, acknowledgements and
// pacing.
func minQUICTransfer(bytes int64, rate float64, rtt des.Time) (des.Time, int) {
	bdp := rate / 8 * rtt.Seconds()
	k := 0
	sent := 0.0
	for w := float64(quicInitialWindow); w < bdp && sent+w < float64(bytes); w *= 2 {
		sent += w
		k++
	}
	rest := (float64(bytes) - sent) * 8 / rate
	return rtt + des.Time(k)*rtt + des.Time(math.Round(rest*1e9)) + rtt/2, k
}

// TestSimnetBulk: 1 MiB from node 0 to node 1 over quic-go on simnet at
// 50 Mbit/s both ways and 20 ms one way arrives intact (SHA-256) within
// [M, 1.15 M] of the analytic minimum M (minQUICTransfer: 40 ms of
// handshake, three slow-start rounds of 40 ms carrying 280 KiB, the other
// 744 KiB at line rate in 121.9 ms, 20 ms to the receiver: 301.9 ms). The
// same transfer on uplink's harness-like path (fq_codel:profile=simnet
// both ways, a one-MTU serialiser, writes that never block) is logged
// beside it and agrees within 5 %.
func TestSimnetBulk(t *testing.T) {
	const (
		size = 1 << 20
		rate = 50e6
		rtt  = 40 * des.Millisecond
	)
	least, rounds := minQUICTransfer(size+1, rate, rtt) // +1: the flow's id byte
	require.Equal(t, 3, rounds)
	run := func(cfg Config) Result {
		var res Result
		synctest.Test(t, func(t *testing.T) {
			var err error
			res, err = Run(context.Background(), cfg)
			require.NoError(t, err)
		})
		require.Equal(t, int64(size), res.BytesReceived)
		require.Equal(t, expectedSum(cfg.Seed, size), res.SHA256)
		return res
	}
	sn := run(Config{Transport: "quic", Backend: BackendSimnet, Rate: rate, RTT: rtt, Bytes: size, Seed: 2})
	up := run(Config{Transport: "quic", Rate: rate, RTT: rtt, Bytes: size, Seed: 2,
		UpQdisc: "fq_codel:profile=simnet", DownQdisc: "fq_codel:profile=simnet"})
	t.Logf("analytic minimum %v (%d slow-start rounds); 1.15 × it: %v", least, rounds, least*115/100)
	for _, r := range []struct {
		name string
		res  Result
	}{{"simnet", sn}, {"uplink harness-like", up}} {
		t.Logf("%-20s elapsed %v (%.3f × minimum), goodput %.2f Mbit/s, quic packets %d, lost %d, network datagrams %d, %d bytes",
			r.name, r.res.Elapsed, r.res.Elapsed.Seconds()/least.Seconds(), r.res.GoodputBps/1e6,
			r.res.PacketsSent, r.res.PacketsLost, r.res.NetPackets, r.res.NetBytes)
	}
	require.GreaterOrEqual(t, sn.Elapsed, least)
	require.LessOrEqual(t, sn.Elapsed, least*115/100)
	require.InEpsilon(t, up.Elapsed.Seconds(), sn.Elapsed.Seconds(), 0.05)
	require.Positive(t, sn.NetPackets)
}

// TestSimnetBulkFlows: two flows share node 0's one socket and quic-go
// transport on simnet, and both arrive intact.
func TestSimnetBulkFlows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res, err := Run(context.Background(), Config{
			Transport: "quic", Backend: BackendSimnet, Rate: 20e6, RTT: 20 * des.Millisecond,
			Bytes: 256 << 10, Flows: 2, Seed: 5,
		})
		require.NoError(t, err)
		require.Equal(t, int64(2*256<<10), res.BytesReceived)
		require.Equal(t, expectedSum(5, 256<<10), res.SHA256)
		require.Len(t, res.FlowGoodput, 2)
	})
}

// TestSimnetBulkRefuses: the simnet backend refuses what simnet does not
// model.
func TestSimnetBulkRefuses(t *testing.T) {
	base := Config{Transport: "quic", Backend: BackendSimnet, Rate: 10e6, RTT: 10 * des.Millisecond, Bytes: 1000}
	for name, edit := range map[string]func(*Config){
		"tcp":      func(c *Config) { c.Transport = "tcp" },
		"loss":     func(c *Config) { c.Loss = 0.01 },
		"no rate":  func(c *Config) { c.Rate = 0 },
		"up qdisc": func(c *Config) { c.UpQdisc = "pie" },
		"host":     func(c *Config) { c.HostQdisc = "fifo" },
		"blocking": func(c *Config) { c.SendMode = netmodel.BlockWhenFull },
		"backend":  func(c *Config) { c.Backend = "ns3" },
	} {
		c := base
		edit(&c)
		require.Error(t, c.defaults(), name)
	}
	c := base
	require.NoError(t, c.defaults())
}
