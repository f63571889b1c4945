package netmodel

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/queues"
)

// traceEvent is one delivery a node's socket saw.
type traceEvent struct {
	At       des.Time
	From, ID int
}

// gossipTraffic builds the nodes of split part self (all of them when
// split has one partition) with a 40-packet uplink FIFO, then starts
// traffic: every node sends 30 packets to peers at start (all at once and
// at one rate with lockstep, so that packets from different senders reach
// a node at the same instant), and each node
// forwards every packet it receives to another peer until the packet has
// made 5 hops. Peers are chosen by a hash of the packet and the node, so
// the traffic does not depend on the order in which anything runs. It
// returns the network and the per-node delivery logs (nil for remote
// nodes). gso and netemLimit set Config.GSO and Config.NetemLimit.
func gossipTraffic(t *testing.T, n int, lat LatencyModel, loss float64, lockstep, gso bool, netemLimit int, split Split, self int, ids *SocketIDs) (*Network, [][]traceEvent) {
	t.Helper()
	sim := des.NewSim()
	nw, err := New(sim, Config{Latency: lat, Loss: loss, Seed: 3, SocketIDs: ids, GSO: gso, NetemLimit: netemLimit})
	require.NoError(t, err)
	logs := make([][]traceEvent, n)
	socks := make([]*Socket, n)
	for i := range n {
		if split.Of[i] != self {
			nw.AddRemoteNode(0, 0)
			continue
		}
		q, err := queues.NewFIFO(40, 0)
		require.NoError(t, err)
		rate := int64(20e6 + 5e6*int64(i%3))
		if lockstep {
			rate = 20e6
		}
		_, err = nw.AddNode(NodeConfig{Up: LinkConfig{Qdisc: q, Shaper: OneMTUBurst(rate)}, Down: LinkConfig{Shaper: OneMTUBurst(2 * rate)}})
		require.NoError(t, err)
	}
	// Each partition is built from id 0 and skips the ids of the other
	// partitions' sockets, which bind in node order too: every socket gets
	// the id it has without a split (its node's index).
	ids.next.Store(0)
	for i := range n {
		if split.Of[i] == self {
			s, err := nw.Node(i).Bind(ProtoUDP, 1, NeverBlock)
			require.NoError(t, err)
			socks[i] = s
		} else {
			ids.next.Add(1)
		}
	}
	peer := func(node, id, hop int) int {
		j := int(des.Mix64(uint64(node)<<32^uint64(id)<<8^uint64(hop)) % uint64(n-1))
		if j >= node {
			j++
		}
		return j
	}
	send := func(s *Socket, node, id, hop int, now des.Time) {
		payload := make([]byte, 1000)
		payload[0], payload[1], payload[2] = byte(id), byte(id>>8), byte(hop)
		require.NoError(t, s.Send(peer(node, id, hop), 1, payload, now))
	}
	buf := make([]byte, 2048)
	for i, s := range socks {
		if s == nil {
			continue
		}
		s.OnReadable = func() {
			for {
				_, src, _, ok := s.Recv(buf)
				if !ok {
					return
				}
				id, hop := int(buf[0])|int(buf[1])<<8, int(buf[2])
				logs[i] = append(logs[i], traceEvent{sim.Now(), src, id})
				if hop < 5 {
					send(s, i, id, hop+1, sim.Now())
				}
			}
		}
		start := sim.NewTimer(func(now des.Time) {
			for k := range 30 {
				send(s, i, i*100+k, 0, now)
			}
		})
		at := des.Time(i) * des.Millisecond
		if lockstep {
			at = 0
		}
		sim.Schedule(start, at)
	}
	return nw, logs
}

// TestPartitionsSameTrace: a model-only network split into 1, 2, 3 and 4
// partitions, run in windows of the smallest latency between them, gives
// every node the same deliveries at the same instants in the same order,
// with drops and random loss, under a latency that differs per pair and
// under one fixed latency, with senders in lock-step (where packets of
// several senders reach a node at the same instant, in an order the
// pipes' order keys fix), and with GSO units and netem's limit on the
// pipes (a unit or a limited pipe across partitions decides as in one).
func TestPartitionsSameTrace(t *testing.T) {
	const n = 12
	uniform, err := NewUniformLatency(5*des.Millisecond, 40*des.Millisecond, 9)
	require.NoError(t, err)
	for _, c := range []struct {
		name       string
		lat        LatencyModel
		loss       float64
		lockstep   bool
		gso        bool
		netemLimit int
	}{
		{"uniform", uniform, 0.01, false, false, 0},
		{"fixed", FixedLatency(10 * des.Millisecond), 0, false, false, 0},
		{"lockstep", FixedLatency(10 * des.Millisecond), 0, true, false, 0},
		{"gso-netem", uniform, 0.01, true, true, 3},
		{"netem", FixedLatency(10 * des.Millisecond), 0, true, false, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			var want [][]traceEvent
			var wantDrops [NumDropReasons]uint64
			for _, k := range []int{1, 2, 3, 4} {
				split, err := BalancedSplit(n, k, 5)
				require.NoError(t, err)
				ids := &SocketIDs{}
				parts := make([]*Network, k)
				logs := make([][]traceEvent, n)
				var streams []([][]traceEvent)
				for p := range k {
					var l [][]traceEvent
					parts[p], l = gossipTraffic(t, n, c.lat, c.loss, c.lockstep, c.gso, c.netemLimit, split, p, ids)
					streams = append(streams, l)
				}
				window := MinCrossLatency(c.lat, split)
				if k == 1 {
					window = des.Second
				}
				require.NoError(t, RunPartitions(parts, window, 5*des.Second))
				for i := range n {
					logs[i] = streams[split.Of[i]][i]
				}
				total := 0
				for _, l := range logs {
					total += len(l)
				}
				require.Greater(t, total, n*30, "k=%d: deliveries", k)
				var drops [NumDropReasons]uint64
				var sent, queued uint64
				for _, p := range parts {
					for _, nd := range p.Nodes() {
						for r, d := range nd.Counters.Drops {
							drops[r] += d
						}
						if !nd.Remote() {
							sent += nd.Counters.SentPackets
							queued += nd.Up().Qdisc().Stats().Enqueued
						}
					}
				}
				if c.gso {
					require.Less(t, queued, sent, "k=%d: no GSO unit formed", k)
				}
				if c.netemLimit > 0 {
					require.NotZero(t, drops[DropNetem], "k=%d: netem drops", k)
				}
				if want == nil {
					want, wantDrops = logs, drops
					continue
				}
				require.Equal(t, wantDrops, drops, "k=%d: drops", k)
				for i := range n {
					require.Equal(t, want[i], logs[i], "k=%d: node %d's deliveries", k, i)
				}
			}
		})
	}
}

// TestCrossingExactTimes: a packet between partitions arrives at its exact
// instant: departure plus its serialisation and the pair's latency; a
// window longer than the latency is an error, not a late packet.
func TestCrossingExactTimes(t *testing.T) {
	split := Split{K: 2, Of: []int{0, 1}}
	ids := &SocketIDs{}
	lat := FixedLatency(7 * des.Millisecond)
	build := func(self int) (*Network, *Socket, *[]des.Time) {
		sim := des.NewSim()
		nw, err := New(sim, Config{Latency: lat, SocketIDs: ids})
		require.NoError(t, err)
		for i := range 2 {
			if split.Of[i] != self {
				nw.AddRemoteNode(0, 0)
				continue
			}
			_, err := nw.AddNode(NodeConfig{Up: LinkConfig{Shaper: OneMTUBurst(8e6)}, Down: LinkConfig{Shaper: OneMTUBurst(8e6)}})
			require.NoError(t, err)
		}
		s, err := nw.Node(self).Bind(ProtoUDP, 1, NeverBlock)
		require.NoError(t, err)
		var got []des.Time
		buf := make([]byte, 2000)
		s.OnReadable = func() {
			for {
				if _, _, _, ok := s.Recv(buf); !ok {
					return
				}
				got = append(got, sim.Now())
			}
		}
		return nw, s, &got
	}
	a, sa, _ := build(0)
	b, _, gotB := build(1)
	// 972 bytes of payload are 1 000 on the wire: 1 ms at 8 Mbit/s on the
	// uplink and 1 ms on the downlink; the second packet waits 1 ms more.
	require.NoError(t, sa.Send(1, 1, make([]byte, 972), 0))
	require.NoError(t, sa.Send(1, 1, make([]byte, 972), 0))
	require.NoError(t, RunPartitions([]*Network{a, b}, 7*des.Millisecond, 100*des.Millisecond))
	require.Equal(t, []des.Time{9 * des.Millisecond, 10 * des.Millisecond}, *gotB)
	require.Equal(t, uint64(2), a.Node(0).Counters.CrossedPackets, "both packets crossed")
	require.Zero(t, b.Node(1).Counters.CrossedPackets)

	// The packet leaves the uplink at 1 ms and arrives at 8 ms: a 9 ms
	// window would have had to hold it.
	a, sa, _ = build(0)
	b, _, _ = build(1)
	require.NoError(t, sa.Send(1, 1, make([]byte, 972), 0))
	err := RunPartitions([]*Network{a, b}, 9*des.Millisecond, 100*des.Millisecond)
	require.ErrorContains(t, err, "inside the window that ended at 9ms")
}
