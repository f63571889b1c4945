package tcp

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
	"github.com/uplinksim/uplink/queues"
)

// wireSeg is one segment as a node's tap saw it.
type wireSeg struct {
	at      des.Time
	out     bool // sent by the traced node (as it left the uplink); else received by it
	seq     SeqNum
	ack     SeqNum
	flags   Flags
	len     int
	numSACK int
	sack    SACKBlock // the first SACK block (the receiver's latest)
}

func (w wireSeg) String() string {
	dir := "<"
	if w.out {
		dir = ">"
	}
	return fmt.Sprintf("%v %s %s seq=%d ack=%d len=%d sack=%d", w.at, dir, w.flags, w.seq, w.ack, w.len, w.numSACK)
}

// wireTrace records the segments of one node: every segment it sends, as
// it leaves the node's uplink (before any loss downstream), and every
// segment handed to one of its sockets.
type wireTrace struct{ segs []wireSeg }

func traceNode(nd *netmodel.Node) *wireTrace {
	tr := &wireTrace{}
	nd.SetTap(func(p *netmodel.Packet, now des.Time, out bool) {
		h, ok := p.Hdr.(*Header)
		if !ok {
			return
		}
		tr.segs = append(tr.segs, wireSeg{at: now, out: out, seq: h.Seq, ack: h.Ack, flags: h.Flags,
			len: len(p.Payload), numSACK: int(h.NumSACK), sack: h.SACK[0]})
	})
	return tr
}

func (tr *wireTrace) String() string {
	var b strings.Builder
	for _, w := range tr.segs {
		b.WriteString(w.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// lossTrace runs a transfer of segs full segments from node 0 to node 1
// under cfg, unpaced and with an ACK per segment, and drops the given data
// segments (counted from 1 as they reach the receiver's downlink, a 10
// Mbit/s line that spaces the ACKs 1.2 ms apart). It returns the trace of
// the sender's node.
func lossTrace(t *testing.T, cfg Config, segs int, drops ...int) (*wireTrace, *flow) {
	t.Helper()
	cfg.Pacing = false
	cfg.DelayedAck = DelAckOff
	dq := newDropQueue(drops...)
	tn := newTestNet(t, cfg, netmodel.Config{}, link{}, link{down: 10e6, downQ: dq})
	tr := traceNode(tn.net.Node(0))
	f := tn.startFlow(0, 1, 80, int64(segs)*1460, 1)
	tn.sim.RunUntil(30 * des.Second)
	if !f.intact() {
		t.Fatalf("transfer not intact:\n%s", tr)
	}
	return tr, f
}

// ackResp is an ACK the sender received and the data segments it sent at
// the same instant, in response.
type ackResp struct {
	ack  wireSeg
	sent []wireSeg
}

// responses pairs each ACK arriving at the traced sender with the data it
// sent in response (unpaced, the sender answers at the ACK's instant).
func (tr *wireTrace) responses() []ackResp {
	var rs []ackResp
	for _, w := range tr.segs {
		switch {
		case !w.out && w.flags&FlagSYN == 0:
			rs = append(rs, ackResp{ack: w})
		case w.out && w.len > 0 && len(rs) > 0 && rs[len(rs)-1].ack.at == w.at:
			rs[len(rs)-1].sent = append(rs[len(rs)-1].sent, w)
		}
	}
	return rs
}

// seqOf returns the sequence number of the k-th data segment (from 1).
func (tr *wireTrace) seqOf(k int) SeqNum {
	for _, w := range tr.segs {
		if w.out && w.len > 0 {
			return w.seq.Add((k - 1) * 1460)
		}
	}
	return 0
}

// dupAcks returns the index in rs of the ACK that first acknowledges up to
// seq (the one before the duplicates) and the indices of its duplicates.
func dupAcks(rs []ackResp, seq SeqNum) (first int, dups []int) {
	first = -1
	for i, r := range rs {
		if r.ack.ack != seq || r.ack.len > 0 {
			continue
		}
		if first < 0 {
			first = i
		} else {
			dups = append(dups, i)
		}
	}
	return first, dups
}

func countSeq(ws []wireSeg, seq SeqNum) int {
	n := 0
	for _, w := range ws {
		if w.seq == seq {
			n++
		}
	}
	return n
}

// TestWireFastRetransmitThirdDupAck drops the 20th data segment under the
// Linux preset: the segments after it draw duplicate ACKs, each SACKing
// one more segment. The first two duplicates release new data only; the
// third sends the retransmission of the lost segment, once, and nothing
// else sends it again.
func TestWireFastRetransmitThirdDupAck(t *testing.T) {
	tr, f := lossTrace(t, LinuxConfig(), 200, 20)
	lost := tr.seqOf(20)
	rs := tr.responses()
	first, dups := dupAcks(rs, lost)
	if first < 0 || len(dups) < 3 {
		t.Fatalf("ACK of the hole at %d, %d duplicates\n%s", first, len(dups), tr)
	}
	for i, k := range dups {
		n := countSeq(rs[k].sent, lost)
		want := 0
		if i == 2 {
			want = 1
		}
		if n != want {
			t.Fatalf("duplicate ACK %d (%v) sent %d retransmissions of %d; want %d\n%s", i+1, rs[k].ack, n, lost, want, tr)
		}
		if i < 2 && len(rs[k].sent) != 1 {
			t.Fatalf("duplicate ACK %d sent %d segments; want 1 new one (one SACKed segment left the pipe)", i+1, len(rs[k].sent))
		}
	}
	total := 0
	for _, w := range tr.segs {
		if w.out && w.seq == lost && w.len > 0 {
			total++
		}
	}
	if total != 2 || f.cli.Stats().RTOs != 0 {
		t.Fatalf("segment %d sent %d times, %d RTOs; want twice (original and fast retransmission), no timeout", lost, total, f.cli.Stats().RTOs)
	}
}

// TestWirePRRPerAck checks every ACK of a fast recovery under the Linux
// preset (CUBIC, SACK) against RFC 6937 computed from the wire alone. One
// segment of a window is lost; each duplicate ACK delivers one segment
// (its SACK block grows by one), the pipe is the segments sent above the
// cumulative ACK less those SACKed, less the lost one until it is
// retransmitted, RecoverFS is the pipe before the ACK that starts
// recovery (the sender is window-limited, so that is its cwnd: Linux's
// prior_cwnd), and ssthresh is CUBIC's 717/1024 of it. Per ACK:
// sndcnt = ceil(ssthresh × prr_delivered / RecoverFS) − prr_out while the
// pipe is above ssthresh, else min(ssthresh − pipe, max(prr_delivered −
// prr_out, delivered)) (§3; no extra segment, as no duplicate advances
// snd_una), at least 1 while prr_out is 0 (Linux's floor); the sender
// sends max(sndcnt, 0) segments.
func TestWirePRRPerAck(t *testing.T) {
	cfg := LinuxConfig()
	cfg.RecvBuffer = BufferSizes{4096, 4 << 20, 4 << 20} // the receiver's window never limits
	tr, _ := lossTrace(t, cfg, 300, 40)
	lost := tr.seqOf(40)
	rs := tr.responses()
	_, dups := dupAcks(rs, lost)
	if len(dups) < 10 {
		t.Fatalf("%d duplicate ACKs\n%s", len(dups), tr)
	}
	// Replay the wire: snd_nxt from the data sent.
	nxt := SeqNum(0)
	nxtAt := func(upTo int) SeqNum { // snd_nxt before the responses to rs[upTo]
		n := nxt
		for _, r := range rs[:upTo] {
			for _, w := range r.sent {
				if e := w.seq.Add(w.len); e.After(n) {
					n = e
				}
			}
		}
		return n
	}
	for _, w := range tr.segs {
		if w.out && w.len > 0 && w.at <= rs[0].ack.at {
			if e := w.seq.Add(w.len); nxt == 0 || e.After(nxt) {
				nxt = e
			}
		}
	}
	// pipe is the pipe after rs[i] and the sends of the ACKs before it
	// (after rs[i]'s own sends with after set).
	pipe := func(i int, rtxSent, after bool) int {
		a := rs[i].ack
		n := nxtAt(i)
		if after {
			n = nxtAt(i + 1)
		}
		out := n.Sub(a.ack) / 1460
		sacked := 0
		if a.numSACK > 0 {
			sacked = a.sack.End.Sub(a.sack.Start) / 1460
		}
		p := out - sacked
		if !rtxSent {
			p-- // the lost segment, presumed lost and not yet retransmitted
		}
		return p
	}
	third := dups[2]
	recoverFS := pipe(third-1, true, true) // after the second duplicate's sends: nothing presumed lost yet
	if recoverFS < 10 {
		t.Fatalf("window at the loss %d; want a larger one", recoverFS)
	}
	ssthresh := recoverFS * 717 / 1024
	prrDelivered, prrOut := 0, 0
	rtx := false
	checked, proportional, ssrb := 0, 0, 0
	for _, k := range dups[2:] {
		prrDelivered++
		p := pipe(k, rtx, false)
		var sndcnt int
		if p > ssthresh {
			sndcnt = (ssthresh*prrDelivered+recoverFS-1)/recoverFS - prrOut
			proportional++
		} else {
			sndcnt = min(ssthresh-p, max(prrDelivered-prrOut, 1))
			ssrb++
		}
		if prrOut == 0 {
			sndcnt = max(sndcnt, 1)
		}
		want := max(sndcnt, 0)
		if got := len(rs[k].sent); got != want {
			t.Fatalf("recovery ACK %d (%v): pipe %d, ssthresh %d, delivered %d, out %d: sent %d; RFC 6937 says %d\n%s",
				checked+1, rs[k].ack, p, ssthresh, prrDelivered, prrOut, got, want, tr)
		}
		if countSeq(rs[k].sent, lost) > 0 {
			rtx = true
		}
		prrOut += want
		checked++
	}
	if !rtx || proportional == 0 || ssrb == 0 {
		t.Fatalf("retransmitted %v; %d ACKs with the pipe above ssthresh, %d at or below: want both", rtx, proportional, ssrb)
	}
	t.Logf("RecoverFS %d, ssthresh %d: %d recovery ACKs checked (%d proportional, %d slow-start bound), %d sent", recoverFS, ssthresh, checked, proportional, ssrb, prrOut)
}

// TestWirePRRFloor: the loss comes where the pipe is at ssthresh as
// recovery starts, so RFC 6937's count for the ACK that starts recovery
// is 0 and only Linux's one-segment floor (tcp_cwnd_reduction: "force a
// fast retransmit upon entering fast recovery") sends the retransmission
// on the third duplicate ACK. The application writes 11 segments with
// cwnd 10 and the first is lost: the first duplicate ACK releases the
// 11th segment, the second finds nothing new to send, and at the third
// 11 sent − 3 SACKed − 1 lost = 7 = ssthresh (10 × 717/1024).
func TestWirePRRFloor(t *testing.T) {
	tr, _ := lossTrace(t, LinuxConfig(), 11, 1)
	lost := tr.seqOf(1)
	rs := tr.responses()
	first, dups := dupAcks(rs, lost)
	dups = append([]int{first}, dups...) // the hole is the first segment: every ACK of data is a duplicate
	if len(dups) != 10 {
		t.Fatalf("%d duplicate ACKs; want 10\n%s", len(dups), tr)
	}
	want := [][]SeqNum{{tr.seqOf(11)}, nil, {lost}}
	for i, w := range want {
		got := rs[dups[i]].sent
		if len(got) != len(w) || (len(w) == 1 && got[0].seq != w[0]) {
			t.Fatalf("duplicate ACK %d sent %v; want seq %v\n%s", i+1, got, w, tr)
		}
	}
	for i, k := range dups[3:] {
		if len(rs[k].sent) != 0 {
			t.Fatalf("duplicate ACK %d sent %v; want nothing (no new data, pipe at ssthresh)", i+4, rs[k].sent)
		}
	}
}

// flightAfter is the data outstanding, in segments, once the sender has
// answered rs[i].
func flightAfter(rs []ackResp, i int, nxt SeqNum) int {
	for _, r := range rs[:i+1] {
		for _, w := range r.sent {
			if e := w.seq.Add(w.len); e.After(nxt) {
				nxt = e
			}
		}
	}
	return nxt.Sub(rs[i].ack.ack) / 1460
}

// TestWireShadowRenoHalves drops the 40th segment under the Shadow preset
// (Shadow's Reno, no SACK, no pacing). With W segments in flight at the
// loss, Shadow's rule is ssthresh = W/2 + 1 and cwnd = ssthresh + 3 on
// the third duplicate, +1 per further duplicate, cwnd = ssthresh on the
// next new ACK, whose W segments congestion avoidance then counts, one
// more segment (tcp_cong_reno.c). On the wire, as Shadow's _tcp_flush
// sends: the third duplicate sends the retransmission alone (the head is
// below snd_una + cwnd whatever the flight); no new segment leaves while
// the W segments above snd_una fill the window, that is until duplicate
// W − ssthresh, where cwnd = ssthresh + d first exceeds W; every later
// duplicate releases one new segment; and after the ACK that ends recovery
// exactly ssthresh + 1 = W/2 + 2 segments are in flight.
func TestWireShadowRenoHalves(t *testing.T) {
	cfg := ShadowConfig()
	// Neither the receiver's window nor the send buffer limits.
	cfg.RecvBuffer = BufferSizes{4 << 20, 4 << 20, 4 << 20}
	cfg.SendBuffer = cfg.RecvBuffer
	tr, f := lossTrace(t, cfg, 300, 40)
	lost := tr.seqOf(40)
	rs := tr.responses()
	first, dups := dupAcks(rs, lost)
	w := flightAfter(rs, first, lost)
	ssthresh := w/2 + 1
	if len(dups) < w-1 || w < 16 {
		t.Fatalf("window %d at the loss, %d duplicates\n%s", w, len(dups), tr)
	}
	newFrom := w - ssthresh + 1 // 1-based duplicate
	for i, k := range dups {
		n, rtx := len(rs[k].sent), countSeq(rs[k].sent, lost)
		switch d := i + 1; {
		case d == dupThresh && (n != 1 || rtx != 1):
			t.Fatalf("duplicate %d sent %v; want the retransmission of %d alone", d, rs[k].sent, lost)
		case d != dupThresh && d < newFrom && n != 0:
			t.Fatalf("duplicate %d sent %v; want nothing before duplicate %d but the retransmission (window %d, ssthresh %d)", d, rs[k].sent, newFrom, w, ssthresh)
		case d >= newFrom && (n != 1 || rtx != 0):
			t.Fatalf("duplicate %d sent %v; want one new segment (+1 per duplicate)", d, rs[k].sent)
		}
	}
	end := dups[len(dups)-1] + 1
	if !rs[end].ack.ack.After(lost) {
		t.Fatalf("ACK after the duplicates %v does not acknowledge the hole", rs[end].ack)
	}
	if got := flightAfter(rs, end, lost); got != ssthresh+1 {
		t.Fatalf("window %d at the loss: %d segments in flight after recovery; want %d = W/2 + 2\n%s", w, got, ssthresh+1, tr)
	}
	if st := f.cli.Stats(); st.FastRecoveries != 1 || st.RTOs != 0 {
		t.Fatalf("fast recoveries %d, RTOs %d; want 1, 0", st.FastRecoveries, st.RTOs)
	}
	t.Logf("window %d at the loss, ssthresh %d, new data again from duplicate %d", w, ssthresh, newFrom)
}

// TestWireShadowFastRetransmitAtThirdDup is a known answer for Shadow's
// fast retransmission: the 40th of 300 segments is dropped under the
// Shadow preset (lossTrace: 10 ms one way, the receiver's 10 Mbit/s
// downlink spacing the duplicates 1.2 ms apart). The window at the loss
// is 41 segments: 2 after the handshake, +1 per ACK of the 39 segments
// before the hole. Shadow's retransmit tally (tcp_retransmit_tally.cc,
// retransmit_tally_update) marks the head lost on the third duplicate,
// tcp_cong_reno.c halves the window on the same ACK (ssthresh = 41/2 + 1
// = 21, cwnd = ssthresh + 3 = 24), and _tcp_flush sends the head at once,
// since its sequence is below unacked + window: the retransmission leaves
// at the instant the third duplicate arrives, 139.2736 ms (the 40th
// segment is the tenth of the fifth round of 32, whose first ACK arrives
// at 126.0736 ms, 1.2 ms per segment after it: eight to the hole, which
// never reaches the link, and three behind it), and _tcp_retransmitPacket restarts the retransmission
// timer from there. Comparing the window with the flight instead held it
// back to the 20th duplicate (W − W/2 − 1).
func TestWireShadowFastRetransmitAtThirdDup(t *testing.T) {
	cfg := ShadowConfig()
	cfg.RecvBuffer = BufferSizes{4 << 20, 4 << 20, 4 << 20}
	cfg.SendBuffer = cfg.RecvBuffer
	cfg.Pacing = false
	cfg.DelayedAck = DelAckOff
	tn := newTestNet(t, cfg, netmodel.Config{}, link{}, link{down: 10e6, downQ: newDropQueue(40)})
	f := tn.startFlow(0, 1, 80, 300*1460, 1)

	// What the sender holds as the retransmission leaves, and when the
	// duplicates of the ACK of the hole arrive.
	type atRtx struct {
		at, timerAt    des.Time
		cwnd, ssthresh int
	}
	var rtxs []atRtx
	var dupAt []des.Time
	var lost SeqNum
	sent := 0
	tn.net.Node(0).SetTap(func(p *netmodel.Packet, now des.Time, out bool) {
		h, ok := p.Hdr.(*Header)
		switch {
		case !ok || len(p.Payload) > 0 && !out:
		case !out:
			if sent >= 40 && h.Ack == lost && h.Flags&FlagSYN == 0 {
				dupAt = append(dupAt, now) // the first is the ACK of the hole itself
			}
		case len(p.Payload) > 0:
			if sent++; sent == 40 {
				lost = h.Seq
			} else if sent > 40 && h.Seq == lost {
				s := &f.cli.snd
				rtxs = append(rtxs, atRtx{now, f.cli.timerAt, s.cc.Cwnd(), s.cc.Ssthresh()})
			}
		}
	})
	tn.sim.RunUntil(30 * des.Second)
	require.True(t, f.intact(), "transfer not intact")

	require.Len(t, rtxs, 1, "one retransmission of the lost segment")
	require.Greater(t, len(dupAt), 1+dupThresh)
	third := dupAt[dupThresh]
	require.Equal(t, 1200*des.Microsecond, dupAt[dupThresh]-dupAt[dupThresh-1], "duplicates 1.2 ms apart")
	require.Equal(t, 139273600*des.Nanosecond, third, "the third duplicate arrives")
	r := rtxs[0]
	require.Equal(t, third, r.at, "the retransmission leaves as the third duplicate arrives")
	require.Equal(t, 21, r.ssthresh, "ssthresh = 41/2 + 1")
	require.Equal(t, 24, r.cwnd, "cwnd = ssthresh + 3")
	require.Equal(t, r.at+f.cli.snd.rtt.current(), r.timerAt, "the retransmission restarts the timer")
	st := f.cli.Stats()
	require.Equal(t, uint64(1), uint64(st.FastRecoveries))
	require.Equal(t, uint64(0), uint64(st.RTOs))
}

// TestWireRTO drops the last three segments of a transfer under the Linux
// preset: no later segment draws a duplicate ACK, so the retransmission
// timer fires, at least RTOMin after the last ACK, with nothing sent
// between. The timeout sets cwnd to 1: one segment, the first lost, goes
// at the expiry; its ACK lets two go (slow start), the other two lost ones.
func TestWireRTO(t *testing.T) {
	cfg := LinuxConfig()
	tr, f := lossTrace(t, cfg, 30, 28, 29, 30)
	rs := tr.responses()
	var last int // the last ACK before the timeout
	for i, r := range rs {
		if r.ack.ack == tr.seqOf(28) {
			last = i
			break
		}
	}
	if len(rs[last].sent) != 0 {
		t.Fatalf("last ACK before the timeout sent %v", rs[last].sent)
	}
	var after []wireSeg
	for _, w := range tr.segs {
		if w.out && w.len > 0 && w.at > rs[last].ack.at {
			after = append(after, w)
		}
	}
	if len(after) != 3 {
		t.Fatalf("%d data segments after the last ACK; want 3 retransmissions\n%s", len(after), tr)
	}
	expiry := after[0].at
	if gap := expiry - rs[last].ack.at; gap < cfg.RTOMin || after[0].seq != tr.seqOf(28) {
		t.Fatalf("first retransmission %v, %v after the last ACK; want segment 28 at least %v later", after[0], gap, cfg.RTOMin)
	}
	if after[1].at == expiry || after[1].at != after[2].at || after[1].seq != tr.seqOf(29) || after[2].seq != tr.seqOf(30) {
		t.Fatalf("after the timeout: %v; want segment 28 alone, then 29 and 30 together on its ACK", after)
	}
	if st := f.cli.Stats(); st.RTOs != 1 || st.FastRecoveries != 0 {
		t.Fatalf("RTOs %d, fast recoveries %d; want 1, 0", st.RTOs, st.FastRecoveries)
	}
}

// synDropQueue is an unlimited FIFO that drops the first SYN it sees.
type synDropQueue struct {
	*queues.FIFO
	dropped bool
}

func (d *synDropQueue) Enqueue(p *queues.Packet, now des.Time) bool {
	if h, ok := p.Hdr.(*Header); ok && !d.dropped && h.Flags&FlagSYN != 0 {
		d.dropped = true
		return false
	}
	return d.FIFO.Enqueue(p, now)
}

// flights groups the data segments the traced node sent by instant: the
// time and size of each burst, up to max bursts.
func (tr *wireTrace) flights(max int) (at []des.Time, n []int) {
	for _, w := range tr.segs {
		if !w.out || w.len == 0 {
			continue
		}
		if len(at) == 0 || at[len(at)-1] != w.at {
			if len(at) == max {
				break
			}
			at, n = append(at, w.at), append(n, 0)
		}
		n[len(n)-1]++
	}
	return at, n
}

// TestWireShadowInitialWindow is a known answer for the first rounds of a
// fresh connection under the Shadow preset, 10 ms one way, no rate limit,
// buffer autotuning off (the receiver's reads then send no window update
// ahead of the delayed ACK).
// Shadow's tcp_new runs tcp_cong_reno_init, which leaves cwnd = 1 (its
// ca_reno_init_ sets 10, then the init sets 1), and nothing in tcp.c
// writes cwnd outside the controller's hooks. The SYN takes a sequence
// number, and _tcp_ackProcessing on the SYN-ACK (client) and on the
// handshake's ACK (server) acknowledges one packet: tcp_cong_new_ack_ev
// with n = 1, slow start, cwnd = 2 on both sides. _tcp_flush sends while
// the sequence is below unacked + min(cwnd, the peer's window). So: the
// SYN-ACK arrives at 20 ms and 2 segments leave; they reach the receiver
// at 30 ms, whose pure ACK waits 1 ms (Shadow's delayed ACK, one for
// both), arrives at 41 ms, acknowledges 2 (cwnd 4) and 4 segments leave;
// then 8 at 62 ms, 16 at 83 ms.
//
// With the first SYN lost, the client's retransmission timer expires
// once (1 s) and tcp_cong_reno_timeout_ev_ sets ssthresh = 1/2 + 1 = 1,
// cwnd = 10; the SYN-ACK's ACK of one packet then ends slow start at once
// (cwnd = ssthresh = 1) and hands the other 10 segments to congestion
// avoidance, which raises cwnd to 5 (1 + 2 + 3 + 4 of them): 5 segments
// leave at 1.02 s, and their ACK (5 acknowledged, one window of 5) makes
// cwnd 6: 6 segments at 1.041 s.
func TestWireShadowInitialWindow(t *testing.T) {
	const ms = des.Millisecond

	cfg := ShadowConfig()
	cfg.Autotune = AutotuneOff // no window update rides ahead of the delayed ACK
	tn := newTestNet(t, cfg, netmodel.Config{}, link{}, link{})
	tr := traceNode(tn.net.Node(0))
	f := tn.startFlow(0, 1, 80, 0, 1)
	var srvCwnd int
	tn.sample(35*ms, 35*ms, ms, func(des.Time) { srvCwnd = f.srv.snd.cc.Cwnd() })
	tn.sim.RunUntil(90 * ms)
	require.Equal(t, FlagSYN, tr.segs[0].flags)
	require.Equal(t, des.Time(0), tr.segs[0].at, "the SYN leaves at once")
	at, n := tr.flights(4)
	require.Equal(t, []des.Time{20 * ms, 41 * ms, 62 * ms, 83 * ms}, at, "one round per RTT, the ACK delayed 1 ms")
	require.Equal(t, []int{2, 4, 8, 16}, n, "first flight 2 (1 + the SYN's ACK), then doubling")
	require.Equal(t, 2, srvCwnd, "the server counts the handshake's ACK too")

	tn = newTestNet(t, cfg, netmodel.Config{}, link{upQ: &synDropQueue{FIFO: queues.NewUnlimitedFIFO()}}, link{})
	tr = traceNode(tn.net.Node(0))
	f = tn.startFlow(0, 1, 80, 0, 1)
	var cwnd, ssthresh int
	tn.sample(1030*ms, 1030*ms, ms, func(des.Time) { cwnd, ssthresh = f.cli.snd.cc.Cwnd(), f.cli.snd.cc.Ssthresh() })
	tn.sim.RunUntil(1100 * ms)
	require.Equal(t, uint64(1), uint64(f.cli.Stats().RTOs), "one SYN timeout")
	require.Equal(t, []int{5, 1}, []int{cwnd, ssthresh}, "after one SYN timeout: cwnd 5 in congestion avoidance, ssthresh 1")
	at, n = tr.flights(2)
	require.Equal(t, []des.Time{1020 * ms, 1041 * ms}, at)
	require.Equal(t, []int{5, 6}, n, "5, then +1 for a window of 5 acknowledged")
}
