package netmodel

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/queues"
)

// twoNodes builds a network of two nodes with the given uplink rate on node
// 0 and unlimited links elsewhere.
func twoNodes(t *testing.T, cfg Config, up ShaperConfig, upQ queues.Qdisc) (*des.Sim, *Network) {
	t.Helper()
	sim := des.NewSim()
	n, err := New(sim, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.AddNode(NodeConfig{Up: LinkConfig{Qdisc: upQ, Shaper: up}}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.AddNode(NodeConfig{}); err != nil {
		t.Fatal(err)
	}
	return sim, n
}

// drainOnRead empties s whenever it becomes readable, recording the instant
// of each datagram.
func drainOnRead(sim *des.Sim, s *Socket) *[]des.Time {
	var got []des.Time
	buf := make([]byte, 2048)
	s.OnReadable = func() {
		for {
			if _, _, _, ok := s.Recv(buf); !ok {
				return
			}
			got = append(got, sim.Now())
		}
	}
	return &got
}

// TestShaperOneMiB: 1 MiB of wire bytes handed over at once to a 50 Mbit/s
// one-MTU-burst shaper finishes leaving at 1 MiB × 8 / 50 Mbit/s =
// 167.77216 ms, and arrives one latency later.
func TestShaperOneMiB(t *testing.T) {
	const lat = 10 * des.Millisecond
	sim, n := twoNodes(t, Config{Latency: FixedLatency(lat)}, OneMTUBurst(50e6), nil)
	tx, _ := n.Node(0).Bind(ProtoUDP, 1000, NeverBlock)
	rx, _ := n.Node(1).Bind(ProtoUDP, 2000, NeverBlock)
	rx.SetRecvBuffer(4 << 20)
	got := drainOnRead(sim, rx)
	payload := make([]byte, 1024-IPv4Header-UDPHeader)
	for range 1024 {
		if err := tx.Send(1, 2000, payload, 0); err != nil {
			t.Fatal(err)
		}
	}
	sim.Run()
	if len(*got) != 1024 {
		t.Fatalf("received %d datagrams, want 1024", len(*got))
	}
	wantLast := des.Time(167_772_160) + lat
	if last := (*got)[1023]; last != wantLast {
		t.Fatalf("last arrival at %v, want %v (167.77216 ms + latency)", last, wantLast)
	}
	if first := (*got)[0]; first != 163_840+lat {
		t.Fatalf("first arrival at %v, want 163.84 µs + latency", first)
	}
	c := n.Node(0).Counters
	if c.SentPackets != 1024 || c.SentBytes != 1<<20 {
		t.Fatalf("sent %d packets, %d bytes", c.SentPackets, c.SentBytes)
	}
}

// TestShaperBurstCredit: a burst above one MTU lets an idle line send
// burst−MTU bytes ahead of the rate.
func TestShaperBurstCredit(t *testing.T) {
	s, err := newShaper(ShaperConfig{Rate: 8e6, Burst: 1500 + 3000}, 1500) // 1 byte/µs
	if err != nil {
		t.Fatal(err)
	}
	// Three 1 000-byte packets at 0: credit 3 000 µs covers all three.
	for i := range 3 {
		if d := s.Departure(1000, 0, 1500); d != 0 {
			t.Fatalf("packet %d left at %v, want 0 (credit)", i, d)
		}
	}
	if d := s.Departure(1000, 0, 1500); d != 1000*des.Microsecond {
		t.Fatalf("fourth packet left at %v, want 1ms", d)
	}
	// After 10 ms idle the credit is back to its cap (3 000 bytes), not more.
	now := 11 * des.Millisecond
	for i := range 3 {
		if d := s.Departure(1000, now, 1500); d != now {
			t.Fatalf("after idle, packet %d left at %v, want %v", i, d, now)
		}
	}
	if d := s.Departure(1000, now, 1500); d != now+des.Millisecond {
		t.Fatalf("after idle, fourth packet left at %v", d)
	}
}

// TestShadowBucket: Shadow's 1 ms refill. At 12 Mbit/s the bucket gains
// 1 500 bytes per ms and holds at most 3 000: two full packets go at once,
// then one per refill instant.
func TestShadowBucket(t *testing.T) {
	s, err := newShaper(ShadowBucket(12e6), 1500)
	if err != nil {
		t.Fatal(err)
	}
	want := []des.Time{0, 0, 1, 2, 3}
	now := des.Time(0)
	for i, w := range want {
		d := s.Departure(1500, now, 1500)
		if d != w*des.Millisecond {
			t.Fatalf("packet %d left at %v, want %v ms", i, d, w)
		}
		now = d
	}
	// Mid-period sends wait for the next refill instant.
	if d := s.Departure(1500, now+300*des.Microsecond, 1500); d != 4*des.Millisecond {
		t.Fatalf("mid-period packet left at %v, want 4ms", d)
	}
}

func TestShaperRejectsSmallBurst(t *testing.T) {
	if _, err := newShaper(ShaperConfig{Rate: 1e6, Burst: 1000}, 1500); err == nil {
		t.Fatal("a burst below the MTU should be rejected")
	}
	if _, err := newShaper(ShaperConfig{Rate: -1}, 1500); err == nil {
		t.Fatal("a negative rate should be rejected")
	}
}

// latencyTable is a per-pair latency for tests.
type latencyTable map[[2]int]des.Time

func (l latencyTable) Latency(from, to int) des.Time { return l[[2]int{from, to}] }

func TestPerPairLatency(t *testing.T) {
	lat := latencyTable{{0, 1}: 7 * des.Millisecond, {0, 2}: 23 * des.Millisecond, {1, 0}: 3 * des.Millisecond}
	sim := des.NewSim()
	n, err := New(sim, Config{Latency: lat})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := n.AddNode(NodeConfig{}); err != nil {
			t.Fatal(err)
		}
	}
	s0, _ := n.Node(0).Bind(ProtoUDP, 1, NeverBlock)
	r1, _ := n.Node(1).Bind(ProtoUDP, 1, NeverBlock)
	r2, _ := n.Node(2).Bind(ProtoUDP, 1, NeverBlock)
	got0 := drainOnRead(sim, s0)
	got1, got2 := drainOnRead(sim, r1), drainOnRead(sim, r2)
	sim.RunUntil(5 * des.Millisecond)
	s0.Send(1, 1, []byte("a"), sim.Now())
	s0.Send(2, 1, []byte("b"), sim.Now())
	r1.Send(0, 1, []byte("c"), sim.Now())
	sim.Run()
	if (*got1)[0] != 12*des.Millisecond || (*got2)[0] != 28*des.Millisecond || (*got0)[0] != 8*des.Millisecond {
		t.Fatalf("arrivals %v %v %v, want 12ms 28ms 8ms", *got1, *got2, *got0)
	}
}

// TestLossRate: independent loss at p = 0.1 over 20 000 packets lands
// within four standard deviations of the binomial mean, and the same seed
// loses the same packets.
func TestLossRate(t *testing.T) {
	run := func(seed uint64) (lost uint64, arrived int) {
		sim, n := twoNodes(t, Config{Latency: FixedLatency(des.Millisecond), Loss: 0.1, Seed: seed}, ShaperConfig{}, nil)
		tx, _ := n.Node(0).Bind(ProtoUDP, 1, NeverBlock)
		rx, _ := n.Node(1).Bind(ProtoUDP, 1, NeverBlock)
		rx.SetRecvBuffer(64 << 20)
		got := drainOnRead(sim, rx)
		for range 20000 {
			tx.Send(1, 1, make([]byte, 100), 0)
		}
		sim.Run()
		return n.Node(0).Counters.Drops[DropLoss], len(*got)
	}
	lost, arrived := run(1)
	mean, sd := 2000.0, math.Sqrt(20000*0.1*0.9)
	if math.Abs(float64(lost)-mean) > 4*sd || int(lost)+arrived != 20000 {
		t.Fatalf("lost %d (want %v ± %.0f), arrived %d", lost, mean, 4*sd, arrived)
	}
	if again, _ := run(1); again != lost {
		t.Fatalf("same seed lost %d then %d", lost, again)
	}
	if other, _ := run(2); other == lost {
		t.Fatalf("different seeds lost the same count %d (suspicious)", other)
	}
}

// TestFIFOLimitDrops: a pfifo of 10 packets in front of a slow uplink keeps
// 11 (one in the shaper, ten queued) of 30 sent at once.
func TestFIFOLimitDrops(t *testing.T) {
	q, _ := queues.NewFIFO(10, 0)
	sim, n := twoNodes(t, Config{Latency: FixedLatency(0)}, OneMTUBurst(1e6), q)
	tx, _ := n.Node(0).Bind(ProtoUDP, 1, NeverBlock)
	rx, _ := n.Node(1).Bind(ProtoUDP, 1, NeverBlock)
	got := drainOnRead(sim, rx)
	for range 30 {
		tx.Send(1, 1, make([]byte, 972), 0)
	}
	sim.Run()
	if len(*got) != 11 || n.Node(0).Counters.Drops[DropQueue] != 19 || q.Stats().Drops[queues.DropOverlimit] != 19 {
		t.Fatalf("received %d, queue drops %d; want 11 and 19", len(*got), n.Node(0).Counters.Drops[DropQueue])
	}
}

// TestSendBufferBlocks: in BlockWhenFull mode a socket may queue up to its
// send buffer (one packet of overshoot), then Send returns ErrWouldBlock
// until the shaper has taken enough; OnWritable fires when it has.
func TestSendBufferBlocks(t *testing.T) {
	sim, n := twoNodes(t, Config{Latency: FixedLatency(0)}, OneMTUBurst(8e6), nil) // 1 byte/µs
	tx, _ := n.Node(0).Bind(ProtoUDP, 1, BlockWhenFull)
	tx.SetSendBuffer(2500) // stored doubled: 5 000
	if tx.SendBuffer() != 5000 {
		t.Fatalf("send buffer %d, want 5000 (doubled)", tx.SendBuffer())
	}
	payload := make([]byte, 972) // 1 000 on the wire
	sent := 0
	for tx.Send(1, 1, payload, 0) == nil {
		sent++
	}
	if sent != 5 {
		t.Fatalf("sent %d before blocking, want 5", sent)
	}
	var writable des.Time = -1
	tx.OnWritable = func() { writable = sim.Now() }
	sim.Run()
	// The first packet leaves the shaper at 1 ms: 4 000 bytes queued < 5 000.
	if writable != des.Millisecond {
		t.Fatalf("writable at %v, want 1ms", writable)
	}
	if tx.SendQueued() != 0 {
		t.Fatalf("send queue %d bytes after drain, want 0", tx.SendQueued())
	}
}

// TestUnblock: a blocked socket's writer is woken at once by
// Network.Unblock, and its sends proceed from then on, past the send
// buffer; every packet still goes out.
func TestUnblock(t *testing.T) {
	sim, n := twoNodes(t, Config{Latency: FixedLatency(0)}, OneMTUBurst(8e6), nil)
	tx, _ := n.Node(0).Bind(ProtoUDP, 1, BlockWhenFull)
	rx, _ := n.Node(1).Bind(ProtoUDP, 1, NeverBlock)
	got := drainOnRead(sim, rx)
	tx.SetSendBuffer(2500)
	payload := make([]byte, 972)
	for tx.Send(1, 1, payload, 0) == nil {
	}
	woken := 0
	tx.OnWritable = func() { woken++ }
	n.Unblock()
	if woken != 1 || !tx.Writable() {
		t.Fatalf("after Unblock: woken %d times, writable %v; want once and true", woken, tx.Writable())
	}
	for range 10 {
		if err := tx.Send(1, 1, payload, 0); err != nil {
			t.Fatalf("send after Unblock: %v", err)
		}
	}
	sim.Run()
	if len(*got) != 15 {
		t.Fatalf("received %d datagrams, want 15 (5 before, 10 after)", len(*got))
	}
}

// TestRecvBufferDrops: a receive buffer of 2 048 bytes (1 024 requested)
// holds two 1 000-byte datagrams; the third is dropped and counted.
func TestRecvBufferDrops(t *testing.T) {
	sim, n := twoNodes(t, Config{Latency: FixedLatency(0)}, ShaperConfig{}, nil)
	tx, _ := n.Node(0).Bind(ProtoUDP, 1, NeverBlock)
	rx, _ := n.Node(1).Bind(ProtoUDP, 1, NeverBlock)
	rx.SetRecvBuffer(1024)
	for range 3 {
		tx.Send(1, 1, make([]byte, 1000), 0)
	}
	sim.Run()
	if n.Node(1).Counters.Drops[DropSockBuf] != 1 || n.Node(1).Counters.RecvPackets != 2 {
		t.Fatalf("counters %+v", n.Node(1).Counters)
	}
}

func TestMTUDropNoWedge(t *testing.T) {
	sim, n := twoNodes(t, Config{Latency: FixedLatency(0)}, OneMTUBurst(1e6), nil)
	tx, _ := n.Node(0).Bind(ProtoUDP, 1, NeverBlock)
	rx, _ := n.Node(1).Bind(ProtoUDP, 1, NeverBlock)
	got := drainOnRead(sim, rx)
	tx.Send(1, 1, make([]byte, 1473), 0) // 1 501 on the wire
	tx.Send(1, 1, make([]byte, 1472), 0) // exactly 1 500
	sim.Run()
	if n.Node(0).Counters.Drops[DropMTU] != 1 || len(*got) != 1 {
		t.Fatalf("MTU drops %d, received %d; want 1 and 1", n.Node(0).Counters.Drops[DropMTU], len(*got))
	}
}

func TestNoPortDrop(t *testing.T) {
	sim, n := twoNodes(t, Config{Latency: FixedLatency(0)}, ShaperConfig{}, nil)
	tx, _ := n.Node(0).Bind(ProtoUDP, 1, NeverBlock)
	tx.Send(1, 9, []byte("x"), 0)
	sim.Run()
	if n.Node(1).Counters.Drops[DropNoPort] != 1 {
		t.Fatalf("counters %+v", n.Node(1).Counters)
	}
}

// TestDeterministicTrace: two model-only runs with the same seed produce the
// same event trace (instant of every delivery, in order, with its source).
func TestDeterministicTrace(t *testing.T) {
	trace := func(seed uint64) []int64 {
		sim := des.NewSim()
		n, err := New(sim, Config{Latency: NewGeoLatency(8, seed), Loss: 0.05, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		socks := make([]*Socket, 8)
		var out []int64
		buf := make([]byte, 2048)
		for i := range socks {
			q, _ := queues.NewFIFO(50, 0)
			n.AddNode(NodeConfig{Up: LinkConfig{Qdisc: q, Shaper: OneMTUBurst(20e6)}, Down: LinkConfig{Shaper: OneMTUBurst(40e6)}})
			s, _ := n.Node(i).Bind(ProtoUDP, 1, NeverBlock)
			s.SetRecvBuffer(1 << 20)
			socks[i] = s
			s.OnReadable = func() {
				for {
					_, src, _, ok := s.Recv(buf)
					if !ok {
						return
					}
					out = append(out, int64(sim.Now()), int64(src), int64(i))
				}
			}
		}
		rng := des.NewStreams(seed).Stream("traffic")
		for range 400 {
			sim.RunUntil(sim.Now() + des.Time(rng.IntN(200_000)))
			from, to := rng.IntN(8), rng.IntN(8)
			socks[from].Send(to, 1, make([]byte, 100+rng.IntN(1300)), sim.Now())
		}
		sim.Run()
		return out
	}
	a, b := trace(3), trace(3)
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("trace lengths %d and %d", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("traces differ at %d", i)
		}
	}
}

// TestRecvBackPressure: with two receive slots that block the link, five
// datagrams sent at once are never dropped: two wait in the socket, one is
// held in the downlink, two stay queued; each read lets one more in.
func TestRecvBackPressure(t *testing.T) {
	sim, n := twoNodes(t, Config{Latency: FixedLatency(des.Millisecond), RecvSlots: 2, RecvBlock: true}, ShaperConfig{}, nil)
	tx, _ := n.Node(0).Bind(ProtoUDP, 1, NeverBlock)
	rx, _ := n.Node(1).Bind(ProtoUDP, 1, NeverBlock)
	for i := range 5 {
		tx.Send(1, 1, []byte{byte(i)}, 0)
	}
	sim.Run()
	down := n.Node(1).Down()
	if !rx.Readable() || !down.Busy() || down.Qdisc().Len() != 2 {
		t.Fatalf("readable %v, downlink busy %v, queued %d; want true, true, 2", rx.Readable(), down.Busy(), down.Qdisc().Len())
	}
	buf := make([]byte, 8)
	var got []byte
	for {
		k, _, _, ok := rx.Recv(buf)
		if !ok {
			break
		}
		got = append(got, buf[:k]...)
		sim.Run()
	}
	if string(got) != "\x00\x01\x02\x03\x04" || n.Node(1).Counters.Drops[DropSockBuf] != 0 {
		t.Fatalf("read %v, sockbuf drops %d; want 0..4 in order, no drops", got, n.Node(1).Counters.Drops[DropSockBuf])
	}
	if _, err := New(des.NewSim(), Config{Latency: FixedLatency(0), RecvBlock: true}); err == nil {
		t.Fatal("RecvBlock without RecvSlots should be rejected")
	}
}

// TestSockBufMax: Linux caps a request at rmem_max before doubling it.
func TestSockBufMax(t *testing.T) {
	_, n := twoNodes(t, Config{Latency: FixedLatency(0), SockBufMax: 212992}, ShaperConfig{}, nil)
	s, _ := n.Node(0).Bind(ProtoUDP, 1, NeverBlock)
	s.SetRecvBuffer(7 << 20)
	s.SetSendBuffer(1000)
	if s.RecvBuffer() != 425984 || s.SendBuffer() != 4096 {
		t.Fatalf("buffers %d / %d, want 425984 (capped, doubled) and 4096 (floor)", s.RecvBuffer(), s.SendBuffer())
	}
}

// TestSndBufMax: a send-only cap (wmem_max apart from rmem_max) bounds
// quic-go's 7 MiB send request and leaves its receive request alone; the
// tighter of the two caps wins.
func TestSndBufMax(t *testing.T) {
	_, n := twoNodes(t, Config{Latency: FixedLatency(0), SndBufMax: 32768}, ShaperConfig{}, nil)
	s, _ := n.Node(0).Bind(ProtoUDP, 1, BlockWhenFull)
	s.SetRecvBuffer(7 << 20)
	s.SetSendBuffer(7 << 20)
	if s.RecvBuffer() != 14<<20 || s.SendBuffer() != 65536 {
		t.Fatalf("buffers %d / %d, want 14 MiB (uncapped, doubled) and 64 KiB (capped at 32 KiB, doubled)", s.RecvBuffer(), s.SendBuffer())
	}
	_, n = twoNodes(t, Config{Latency: FixedLatency(0), SockBufMax: 16384, SndBufMax: 32768}, ShaperConfig{}, nil)
	s, _ = n.Node(0).Bind(ProtoUDP, 1, BlockWhenFull)
	s.SetSendBuffer(7 << 20)
	if s.SendBuffer() != 32768 {
		t.Fatalf("send buffer %d, want 32768 (the lower cap, 16 KiB, doubled)", s.SendBuffer())
	}
	if _, err := New(des.NewSim(), Config{Latency: FixedLatency(0), SndBufMax: -1}); err == nil {
		t.Fatal("a negative send buffer cap should be rejected")
	}
}

// TestHostQueueChain: a host queue drained at a 1 Gbit/s line rate in
// front of an 8 Mbit/s access queue. Send-buffer space comes back when a
// packet leaves the host (8 µs per 1 000 bytes), so a blocking sender with
// a 5 000-byte buffer pushes 20 packets in well under a millisecond and the
// backlog builds in the access queue, which drains at 1 ms per packet.
func TestHostQueueChain(t *testing.T) {
	sim := des.NewSim()
	n, err := New(sim, Config{Latency: FixedLatency(des.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	access, _ := queues.NewFIFO(100, 0)
	host, _ := queues.NewFIFO(0, 0)
	if _, err := n.AddNode(NodeConfig{
		Up:     LinkConfig{Qdisc: access, Shaper: OneMTUBurst(8e6)},
		UpHost: &LinkConfig{Qdisc: host, Shaper: OneMTUBurst(1e9)},
	}); err != nil {
		t.Fatal(err)
	}
	n.AddNode(NodeConfig{})
	tx, _ := n.Node(0).Bind(ProtoUDP, 1, BlockWhenFull)
	rx, _ := n.Node(1).Bind(ProtoUDP, 1, NeverBlock)
	rx.SetRecvBuffer(1 << 20)
	got := drainOnRead(sim, rx)
	tx.SetSendBuffer(2500)
	payload := make([]byte, 1000-IPv4Header-UDPHeader)
	sent := 0
	var lastSend des.Time
	var send func()
	send = func() {
		for sent < 20 && tx.Send(1, 1, payload, sim.Now()) == nil {
			sent++
			lastSend = sim.Now()
		}
	}
	tx.OnWritable = send
	send()
	sim.Run()
	if sent != 20 || lastSend > 200*des.Microsecond {
		t.Fatalf("sent %d, the last at %v; want 20 within 200µs (host drains at line rate)", sent, lastSend)
	}
	if access.Stats().MaxLen < 14 {
		t.Fatalf("access queue peaked at %d packets; the backlog should build there", access.Stats().MaxLen)
	}
	// The last packet leaves the access link at 20 ms (plus the first
	// packet's 8 µs in the host) and arrives 1 ms later.
	if len(*got) != 20 || (*got)[19] != 21*des.Millisecond+8*des.Microsecond {
		t.Fatalf("received %d, last at %v; want 20, at 21.008ms", len(*got), (*got)[len(*got)-1])
	}
}

// New refuses the package's latency models with parameters outside
// [0, des.MaxLatency], whichever way they were built.
func TestNewChecksLatencyBounds(t *testing.T) {
	maxL, over := des.MaxLatency.String(), (des.MaxLatency + 1).String()
	for _, c := range []struct {
		model LatencyModel
		want  string
	}{
		{FixedLatency(des.MaxLatency + 1), "netmodel: Config.Latency: fixed latency " + over + ": want 0 to " + maxL + " (des.MaxLatency)"},
		{FixedLatency(-1), "fixed latency -1ns: want 0 to"},
		{UniformLatency{Lo: 5, Hi: 1}, "uniform latency [5ns, 1ns]: need 0 <= lo <= hi"},
		{UniformLatency{Hi: des.Never}, "uniform latency [0s, never]: need 0 <= lo <= hi"},
		{&LatencyMatrix{N: 2, OneWay: []des.Time{0, 1, 2, des.Never}}, "latency_ns[1][1] = 9223372036854775807 ns is above the largest latency"},
		{&LatencyMatrix{N: 2, OneWay: []des.Time{0, -1, 2, 3}}, "latency_ns[0][1] = -1 ns is negative"},
		{&LatencyMatrix{N: 3, OneWay: []des.Time{0, 1, 2, 3}}, "latency_ns: a matrix of 4 entries for 3 nodes, want 3 x 3"},
		{&LatencyMatrix{N: 1 << 32}, "latency_ns: a matrix of 0 entries for 4294967296 nodes"},
	} {
		_, err := New(des.NewSim(), Config{Latency: c.model})
		require.ErrorContains(t, err, c.want, "%#v", c.model)
	}
	for _, ok := range []LatencyModel{FixedLatency(des.MaxLatency), UniformLatency{Hi: des.MaxLatency}, &LatencyMatrix{N: 1, OneWay: []des.Time{des.MaxLatency}}} {
		_, err := New(des.NewSim(), Config{Latency: ok})
		require.NoError(t, err, "%#v", ok)
	}
}

// A latency model of other code that breaks the bound is stopped where
// the arrival instant is computed, naming the pair, before the event queue
// sees an instant that wrapped past des.Never.
func TestDepartureLatencyOverflow(t *testing.T) {
	for _, c := range []struct {
		lat  des.Time
		want string
	}{
		{des.Never, "netmodel: latency model netmodel.latencyTable gives never from node 0 to node 1 at 5ms: want 0 to " + des.MaxLatency.String()},
		{-des.Millisecond, "netmodel: latency model netmodel.latencyTable gives -1ms from node 0 to node 1 at 5ms: want 0 to " + des.MaxLatency.String()},
	} {
		sim, n := twoNodes(t, Config{Latency: latencyTable{{0, 1}: c.lat}}, ShaperConfig{}, nil)
		tx, _ := n.Node(0).Bind(ProtoUDP, 1, NeverBlock)
		sim.RunUntil(5 * des.Millisecond)
		require.NoError(t, tx.Send(1, 1, []byte("x"), sim.Now()))
		require.PanicsWithValue(t, c.want, func() { sim.Run() })
		require.Zero(t, sim.Pending(), "nothing was scheduled at a wrapped instant")
	}
}
