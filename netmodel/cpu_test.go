package netmodel

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uplinksim/uplink/des"
)

// cpuPair builds two nodes 10 ms apart on unlimited links, but node 0's
// uplink at rate, node 1 with the given cpu.
func cpuPair(t *testing.T, rate int64, spec string) (*des.Sim, *Network) {
	t.Helper()
	c, err := des.ParseCPU(spec)
	require.NoError(t, err)
	sim := des.NewSim()
	n, err := New(sim, Config{Latency: FixedLatency(10 * des.Millisecond)})
	require.NoError(t, err)
	_, err = n.AddNode(NodeConfig{Up: LinkConfig{Shaper: OneMTUBurst(rate)}})
	require.NoError(t, err)
	_, err = n.AddNode(NodeConfig{CPU: c})
	require.NoError(t, err)
	return sim, n
}

// TestCPUReceiverFallsBehind: 1 000-byte datagrams (1 028 on the wire)
// leave node 0's uplink at 82.24 Mbit/s, one every T = 100 µs, and
// datagram k reaches node 1 at 10 ms + (k+1)·T. Node 1 spends c = 233 µs
// on each, one at a time, so datagram j becomes readable, and leaves the
// buffer, at 10.1 ms + (j+1)·c. The socket holds B/P = 10 datagrams
// (a request of 5 000 bytes, stored doubled), so datagram k finds
// k − ⌊k·T/c⌋ in the buffer and the first that finds 10 is dropped:
// k = 16 (16 − 6), at 10 ms + 17 · 100 µs = 11.7 ms. Without the cpu
// nothing is dropped.
func TestCPUReceiverFallsBehind(t *testing.T) {
	for _, spec := range []string{"rx:233us", "off"} {
		sim, n := cpuPair(t, 82_240_000, spec)
		tx, err := n.Node(0).Bind(ProtoUDP, 1000, NeverBlock)
		require.NoError(t, err)
		rx, err := n.Node(1).Bind(ProtoUDP, 2000, NeverBlock)
		require.NoError(t, err)
		rx.SetRecvBuffer(5000)
		require.Equal(t, 10000, rx.RecvBuffer())
		got := drainOnRead(sim, rx)
		for range 40 {
			require.NoError(t, tx.Send(1, 2000, make([]byte, 1000), 0))
		}
		drops := func() uint64 { return n.Node(1).Counters.Drops[DropSockBuf] }
		first := 11_700 * des.Microsecond
		sim.RunUntil(first - 1)
		require.Zero(t, drops(), spec)
		sim.RunUntil(first)
		if spec == "off" {
			require.Zero(t, drops())
			sim.Run()
			require.Len(t, *got, 40)
			require.Equal(t, 10_100*des.Microsecond, (*got)[0])
			continue
		}
		require.EqualValues(t, 1, drops(), "first drop at 11.7 ms")
		require.Equal(t, 10_100*des.Microsecond+233*des.Microsecond, (*got)[0])
		require.Equal(t, 10_100*des.Microsecond+6*233*des.Microsecond, (*got)[5])
		require.Equal(t, 10_100*des.Microsecond+16*233*des.Microsecond, n.Node(1).Busy(),
			"datagrams 6 to 15 wait in the buffer, 6 in process: busy until all 16 accepted are done")
		sim.Run()
		require.EqualValues(t, 40, uint64(len(*got))+drops())
	}
}

// TestCPUDelaysReply: node 1 echoes a datagram of 1 000 bytes (1 028 on
// the wire) back to node 0. With cpu rx:3us+0.2ns/B,tx:2us+0.1ns/B the
// echo arrives later by the receive cost, 3 µs + ⌈205.6 ns⌉ = 3 206 ns,
// plus the send cost, 2 µs + ⌈102.8 ns⌉ = 2 103 ns: 20 ms + 5 309 ns.
// A packet for an event-driven transport (OnPacket) waits the receive
// cost alone, and three sends of one instant leave one send cost apart.
func TestCPUDelaysReply(t *testing.T) {
	const spec = "rx:3us+0.2ns/B,tx:2us+0.1ns/B"
	for want, s := range map[des.Time]string{20 * des.Millisecond: "off", 20*des.Millisecond + 5309: spec} {
		sim, n := cpuPair(t, 0, s)
		a, _ := n.Node(0).Bind(ProtoUDP, 1000, NeverBlock)
		b, _ := n.Node(1).Bind(ProtoUDP, 2000, NeverBlock)
		buf := make([]byte, 2048)
		b.OnReadable = func() {
			for {
				k, src, port, ok := b.Recv(buf)
				if !ok {
					return
				}
				require.NoError(t, b.Send(src, port, buf[:k], sim.Now()))
			}
		}
		got := drainOnRead(sim, a)
		require.NoError(t, a.Send(1, 2000, make([]byte, 1000), 0))
		sim.Run()
		require.Equal(t, []des.Time{want}, *got, s)
	}

	sim, n := cpuPair(t, 0, spec)
	a, _ := n.Node(0).Bind(ProtoTCP, 1000, NeverBlock)
	b, _ := n.Node(1).Bind(ProtoTCP, 2000, NeverBlock)
	var at []des.Time
	b.OnPacket = func(p *Packet, now des.Time) { at = append(at, now); b.Release(p) }
	require.NoError(t, a.SendSegment(1, 2000, make([]byte, 1000), nil, 8, false, 0, 0))
	sim.Run()
	require.Equal(t, []des.Time{10*des.Millisecond + 3206}, at)

	u, _ := n.Node(0).Bind(ProtoUDP, 1001, NeverBlock)
	got := drainOnRead(sim, u)
	c, _ := n.Node(1).Bind(ProtoUDP, 3000, NeverBlock)
	start := sim.Now()
	for range 3 {
		require.NoError(t, c.Send(0, 1001, make([]byte, 1000), start))
	}
	sim.Run()
	lat := 10 * des.Millisecond
	require.Equal(t, []des.Time{start + lat + 2103, start + lat + 2*2103, start + lat + 3*2103}, *got)
}
