package netmodel

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/des"
)

// arrival is one datagram a socket read: when, its first payload byte and
// its length.
type arrival struct {
	At   des.Time
	ID   byte
	Size int
}

// recordReads empties s whenever it becomes readable.
func recordReads(sim *des.Sim, s *Socket) *[]arrival {
	var got []arrival
	buf := make([]byte, 2048)
	s.OnReadable = func() {
		for {
			n, _, _, ok := s.Recv(buf)
			if !ok {
				return
			}
			got = append(got, arrival{sim.Now(), buf[0], n})
		}
	}
	return &got
}

// arrivalIDs are the first payload bytes of the datagrams read, in order.
func arrivalIDs(got []arrival) []byte {
	ids := make([]byte, len(got))
	for i, a := range got {
		ids[i] = a.ID
	}
	return ids
}

func payload(id byte, size int) []byte {
	b := make([]byte, size)
	b[0] = id
	return b
}

// TestGSOUnitDelivery: datagrams of 1 000, 1 000 and 400 bytes sent in one
// instant form one unit, closed at once by the shorter last: 2 484 wire
// bytes, 2.484 ms on an 8 Mbit/s uplink, then 7 ms; its datagrams arrive
// in order at that one instant with their own sizes. Two full-size
// datagrams leave the unit open until the instant is over, one nanosecond
// later. The queue holds each unit as one packet; the counters count
// datagrams.
func TestGSOUnitDelivery(t *testing.T) {
	const lat = 7 * des.Millisecond
	sim, n := twoNodes(t, Config{Latency: FixedLatency(lat), GSO: true}, OneMTUBurst(8e6), nil)
	tx, _ := n.Node(0).Bind(ProtoUDP, 1, NeverBlock)
	rx, _ := n.Node(1).Bind(ProtoUDP, 1, NeverBlock)
	got := recordReads(sim, rx)
	require.NoError(t, tx.Send(1, 1, payload(1, 1000), 0))
	require.NoError(t, tx.Send(1, 1, payload(2, 1000), 0))
	require.NoError(t, tx.Send(1, 1, payload(3, 400), 0))
	at := 20 * des.Millisecond
	sim.RunUntil(at)
	require.NoError(t, tx.Send(1, 1, payload(4, 1000), at))
	require.NoError(t, tx.Send(1, 1, payload(5, 1000), at))
	sim.Run()
	first := 2484*des.Microsecond + lat
	second := at + 1 + 2056*des.Microsecond + lat
	require.Equal(t, []arrival{
		{first, 1, 1000}, {first, 2, 1000}, {first, 3, 400},
		{second, 4, 1000}, {second, 5, 1000},
	}, *got)
	st := n.Node(0).Up().Qdisc().Stats()
	require.Equal(t, uint64(2), st.Enqueued, "units in the uplink queue")
	c0, c1 := n.Node(0).Counters, n.Node(1).Counters
	require.Equal(t, uint64(5), c0.SentPackets)
	require.Equal(t, uint64(2484+2056), c0.SentBytes)
	require.Equal(t, uint64(5), c1.RecvPackets)
}

// TestGSOUnitLimits: 20 full-size datagrams (1 452 bytes, quic-go's
// largest) in one instant make a unit of 14, the most its 20 KiB buffer
// holds, and one of the remaining 6; a datagram to another port, or a
// larger one, starts a new unit.
func TestGSOUnitLimits(t *testing.T) {
	sim, n := twoNodes(t, Config{Latency: FixedLatency(des.Millisecond), GSO: true}, ShaperConfig{}, nil)
	tx, _ := n.Node(0).Bind(ProtoUDP, 1, NeverBlock)
	rx, _ := n.Node(1).Bind(ProtoUDP, 1, NeverBlock)
	rx.SetRecvBuffer(1 << 20)
	got := recordReads(sim, rx)
	for i := range 20 {
		require.NoError(t, tx.Send(1, 1, payload(byte(i), 1452), 0))
	}
	require.Equal(t, uint64(1), n.Node(0).Up().Qdisc().Stats().Enqueued, "the first unit goes as soon as it is full")
	require.NoError(t, tx.Send(1, 2, payload(20, 100), 0)) // another port
	require.NoError(t, tx.Send(1, 1, payload(21, 100), 0))
	require.NoError(t, tx.Send(1, 1, payload(22, 200), 0)) // larger than the unit's first
	sim.Run()
	require.Equal(t, uint64(5), n.Node(0).Up().Qdisc().Stats().Enqueued)
	require.Len(t, *got, 22) // the datagram to port 2 finds no socket
	require.Equal(t, uint64(1), n.Node(1).Counters.Drops[DropNoPort])
	for i, a := range *got {
		id := byte(i)
		if i >= 20 {
			id++
		}
		require.Equal(t, id, a.ID, "datagram %d out of order", i)
	}
}

// TestGSOUnitLostWhole: under random loss a unit is lost as a whole: of 40
// units of 5 datagrams, each arrives complete or not at all, some are lost
// (seed 1: 10 of 40), and every datagram of a lost unit counts as a loss.
func TestGSOUnitLostWhole(t *testing.T) {
	sim, n := twoNodes(t, Config{Latency: FixedLatency(des.Millisecond), GSO: true, Loss: 0.3, Seed: 1}, ShaperConfig{}, nil)
	tx, _ := n.Node(0).Bind(ProtoUDP, 1, NeverBlock)
	rx, _ := n.Node(1).Bind(ProtoUDP, 1, NeverBlock)
	got := recordReads(sim, rx)
	const units, per = 40, 5
	for u := range units {
		at := des.Time(u) * des.Millisecond
		sim.RunUntil(at)
		for range per {
			require.NoError(t, tx.Send(1, 1, payload(byte(u), 1000), at))
		}
	}
	sim.Run()
	perUnit := map[byte]int{}
	for _, a := range *got {
		perUnit[a.ID]++
	}
	for u, k := range perUnit {
		require.Equal(t, per, k, "unit %d arrived in part", u)
	}
	lost := units - len(perUnit)
	require.Equal(t, 10, lost)
	require.Equal(t, uint64(lost*per), n.Node(0).Counters.Drops[DropLoss])
	require.Equal(t, uint64(units*per), n.Node(0).Counters.SentPackets)
}

// TestNetemLimitTailDrop: with a limit of 5 packets per pipe, a burst of 8
// that all leave the uplink at once loses exactly 3 at the tail, the 6th
// onward, counted at the receiver under the netem reason; once the
// admitted ones have arrived, the pipe takes packets again. A GSO unit is
// one packet of netem's queue.
func TestNetemLimitTailDrop(t *testing.T) {
	const limit, extra = 5, 3
	sim, n := twoNodes(t, Config{Latency: FixedLatency(10 * des.Millisecond), NetemLimit: limit}, ShaperConfig{}, nil)
	tx, _ := n.Node(0).Bind(ProtoUDP, 1, NeverBlock)
	rx, _ := n.Node(1).Bind(ProtoUDP, 1, NeverBlock)
	got := recordReads(sim, rx)
	for i := range limit + extra {
		require.NoError(t, tx.Send(1, 1, payload(byte(i), 100), 0))
	}
	sim.RunUntil(10 * des.Millisecond)
	require.NoError(t, tx.Send(1, 1, payload(9, 100), sim.Now()))
	sim.Run()
	require.Equal(t, []byte{0, 1, 2, 3, 4, 9}, arrivalIDs(*got))
	require.Equal(t, uint64(extra), n.Node(1).Counters.Drops[DropNetem])
	require.Equal(t, [NumDropReasons]uint64{}, n.Node(0).Counters.Drops)
	require.Equal(t, "netem", DropNetem.String())

	// With GSO, 6 units of 3 datagrams: 5 pass, the 6th's 3 datagrams are
	// dropped.
	sim, n = twoNodes(t, Config{Latency: FixedLatency(10 * des.Millisecond), NetemLimit: limit, GSO: true}, ShaperConfig{}, nil)
	tx, _ = n.Node(0).Bind(ProtoUDP, 1, NeverBlock)
	rx, _ = n.Node(1).Bind(ProtoUDP, 1, NeverBlock)
	got = recordReads(sim, rx)
	for u := range 6 {
		for range 2 {
			require.NoError(t, tx.Send(1, 1, payload(byte(u), 100), 0))
		}
		require.NoError(t, tx.Send(1, 1, payload(byte(u), 50), 0)) // closes the unit
	}
	sim.Run()
	require.Len(t, *got, 15)
	require.Equal(t, uint64(3), n.Node(1).Counters.Drops[DropNetem])
}

// TestNetemSharedQueue: with a limit of 5 and NetemShared, the two
// directions of a pair fill one queue, as both pass lo's one root qdisc:
// node 0 sends 3 and then node 1 sends 4 at the same instant, and node 1's
// 3rd and 4th are dropped (5 held). Each direction alone would hold them
// all. Packets that have arrived leave the shared queue: 10 ms later node
// 1 sends again and it passes. A shared queue without a limit, or across
// partitions, is refused.
func TestNetemSharedQueue(t *testing.T) {
	for _, shared := range []bool{false, true} {
		sim, n := twoNodes(t, Config{Latency: FixedLatency(10 * des.Millisecond), NetemLimit: 5, NetemShared: shared}, ShaperConfig{}, nil)
		s0, _ := n.Node(0).Bind(ProtoUDP, 1, NeverBlock)
		s1, _ := n.Node(1).Bind(ProtoUDP, 1, NeverBlock)
		got0, got1 := recordReads(sim, s0), recordReads(sim, s1)
		for i := range 3 {
			require.NoError(t, s0.Send(1, 1, payload(byte(i), 100), 0))
		}
		for i := range 4 {
			require.NoError(t, s1.Send(0, 1, payload(byte(10+i), 100), 0))
		}
		sim.RunUntil(10 * des.Millisecond)
		require.NoError(t, s1.Send(0, 1, payload(20, 100), sim.Now()))
		sim.Run()
		ids := arrivalIDs(*got0)
		require.Len(t, *got1, 3, "node 0's packets")
		if !shared {
			require.Equal(t, []byte{10, 11, 12, 13, 20}, ids)
			continue
		}
		require.Equal(t, []byte{10, 11, 20}, ids)
		require.Equal(t, uint64(2), n.Node(0).Counters.Drops[DropNetem])
		require.ErrorContains(t, n.Inject(Crossing{At: sim.Now(), From: 0, To: 1}, sim.Now()), "shared netem queue")
	}
	_, err := New(des.NewSim(), Config{Latency: FixedLatency(des.Millisecond), NetemShared: true})
	require.ErrorContains(t, err, "NetemShared without NetemLimit")
}
