package tcp

import (
	"math/bits"

	"github.com/uplinksim/uplink/des"
)

// Loss-recovery states of the sender (Linux's tcp_ca_state, less Disorder
// and CWR, which the model does not need).
type caState uint8

const (
	caOpen     caState = iota
	caRecovery         // fast recovery (RFC 5681 §3.2, RFC 6582, RFC 6675)
	caLoss             // after a retransmission timeout, until recover is acknowledged
)

// linuxPerMSS is Linux's memory per segment in tcp_sndbuf_expand, the
// worst case of one skb per segment with a kmalloced head:
// roundup_pow_of_two(mss + MAX_TCP_HEADER + skb_shared_info) +
// sizeof(sk_buff), the sizes aligned as SKB_DATA_ALIGN does on x86-64
// (320, 320 and 256 bytes): 4 352 for MSS 1 460, 131 328 for 65 495.
func linuxPerMSS(mss int) int {
	return 1<<bits.Len(uint(mss+320+320-1)) + 256
}

// tcpMinMSSPayload is the smallest segment tcp_bound_to_half_wnd leaves:
// 68 bytes less the TCP header (20 bytes; the model carries no
// timestamps).
const tcpMinMSSPayload = 68 - HeaderLen

// rtxRecord notes a retransmission for lost-retransmission detection: the
// segment, snd_nxt when it was retransmitted, and when.
type rtxRecord struct {
	seq, nxt SeqNum
	at       des.Time
}

// sender is the sending half of a connection: the send buffer, the
// retransmission queue and its scoreboard, loss detection and recovery,
// the retransmission and persist timers, pacing, and the congestion
// controller.
//
// The flight the congestion window is compared with is Linux's
// packets_in_flight: segments sent and not cumulatively acknowledged, less
// those SACKed, less those presumed lost, plus the retransmissions of lost
// ones in flight (RFC 6675's pipe). Without SACK nothing is SACKed, and
// Reno's window inflation on duplicate ACKs (in the controller) stands in
// for it, as RFC 5681 has it. Shadow's stack (seqWindow) compares the
// window with sequence space instead (fitsInWindow).
type sender struct {
	ep *Endpoint

	una, nxt  SeqNum // snd_una; snd_nxt, the highest sequence sent
	wnd       int    // the peer's window
	maxWnd    int
	wl1, wl2  SeqNum
	buf       byteRing // data from una on
	bufLen    int
	bufLimit  int // the send buffer size
	finQueued bool
	finSent   bool
	finSeq    SeqNum
	prios     prioRuns // the writes' packet priorities (prio.go)

	segs                           segRing
	seqWindow                      bool // the window limits sequence space, not the flight (Shadow's, fitsInWindow)
	sackedOut, lostOut, retransOut int
	renoSacked                     int // without SACK: duplicate ACKs standing for segments that left (Linux's tcp_add_reno_sack)
	dupAcks                        int
	ca                             caState
	recover                        SeqNum   // high_seq: snd_nxt when recovery or loss began
	lostMarkedTo                   SeqNum   // SACK loss marking has run below this
	rtxHint                        SeqNum   // no lost segment awaits retransmission below this
	sb                             rangeSet // SACKed ranges above una
	fresh                          []seqRange
	freshFn                        func(a, b SeqNum)
	rtxq                           []rtxRecord // retransmissions in the order sent (SACK only)
	rtxqHead                       int

	cc  CongestionControl
	lr  lossRecovery // fast recovery's strategy (recovery.go)
	rtt rttEstimator
	ev  AckEvent
	ack ackInfo

	paceTimer *des.Timer
	paceNext  des.Time
	dataSegs  int

	isCwndLimited bool
	maxPacketsOut int
	cwndUsageSeq  SeqNum
	prrOut        int
	probes        int

	writerBlocked bool
	lastDataSent  des.Time // lsndtime: when a segment carrying data last left
}

func (s *sender) init(ep *Endpoint) {
	s.ep = ep
	s.rtt.init(ep.cfg)
	s.bufLimit = ep.cfg.SendBuffer.Default
	s.cc = newCongestionControl(ep.cfg, ep.cfg.SACK)
	s.lr = newLossRecovery(ep.cfg.SACK, s.cc.Classic())
	s.seqWindow = shadowFlush(ep.cfg.SACK, s.cc.Classic())
	s.freshFn = func(a, b SeqNum) { s.fresh = append(s.fresh, seqRange{a, b}) }
	if ep.cfg.Pacing {
		s.paceTimer = ep.eng.sim.NewTimer(func(now des.Time) { s.trySend(now) })
	}
}

// established starts the data phase.
func (s *sender) established(now des.Time) {
	ep := s.ep
	if ep.sackOK != ep.cfg.SACK {
		s.cc = newCongestionControl(ep.cfg, ep.sackOK) // the peer did not offer SACK
	}
	s.lr = newLossRecovery(ep.sackOK, s.cc.Classic())
	s.seqWindow = shadowFlush(ep.sackOK, s.cc.Classic())
	s.recover, s.lostMarkedTo, s.rtxHint = s.una, s.una, s.una
	if s.cc.Name() == ShadowReno {
		s.countHandshake(now)
	}
	s.cwndUsageSeq = s.una
	s.lastDataSent = now // as Linux at the handshake: no restart on the first data
	switch ep.cfg.Autotune {
	case AutotuneLinux:
		s.expandLinux() // tcp_init_buffer_space
	case AutotuneShadow:
		s.bufLimit = ep.shadowInitialBuffer(ep.cfg.SendBuffer, true)
	}
}

// countHandshake counts the handshake in Shadow's Reno as Shadow's stack
// (src/main/host/descriptor/tcp.c) does. The SYN and the SYN-ACK take a
// sequence number (_tcp_createPacketWithoutPayload) and wait in the
// retransmission queue like data, so every expiry of their timer runs the
// controller's timeout hook (_tcp_runRetransmitTimerExpiredTask calls
// tcp_cong_timeout_ev: ssthresh = cwnd/2 + 1, cwnd = 10), and the ACK of
// the SYN acknowledges one packet: _tcp_processPacket runs
// _tcp_ackProcessing on the SYN-ACK (SYN-SENT) and on the ACK that
// completes the handshake (SYN-RECEIVED), which calls
// tcp_cong_new_ack_ev with n = 1. The Shadow preset's window of 1
// (tcp_cong_reno_init) is thus 2 once the connection is established, on
// both sides; after one SYN timeout it is 5, in congestion avoidance
// (ssthresh 1: slow start stops at once and hands the other 10 segments
// on). The expiries are replayed here rather than as they happen, which
// is the same: nothing reads the window before the connection is
// established (a SYN carries no data, so _tcp_flush's window test passes
// it). Nothing else in tcp.c writes cwnd, so there is no restart after
// idle either.
func (s *sender) countHandshake(now des.Time) {
	for range s.ep.synTries - 1 {
		s.cc.OnRTO(&AckEvent{Now: now}, true)
	}
	s.cc.OnAck(&AckEvent{Now: now, Acked: 1, SndUnaAdvanced: true, SndUna: s.una, SndNxt: s.nxt})
}

// segSize is the size new data is cut to (Linux's mss_cache): the peer's
// MSS, with Config.HalfWindowMSS at most half the largest window the peer
// has offered (tcp_bound_to_half_wnd: the whole window when that is at
// most 536 bytes, and never below tcpMinMSSPayload).
func (s *sender) segSize() int {
	mss := s.ep.mss
	if !s.ep.cfg.HalfWindowMSS {
		return mss
	}
	cutoff := s.maxWnd
	if cutoff > minRcvMSS {
		cutoff >>= 1
	}
	if cutoff > 0 && mss > cutoff {
		return max(cutoff, tcpMinMSSPayload)
	}
	return mss
}

// inFlight is the flight measure the window limits (see sender).
func (s *sender) inFlight() int { return s.segs.n - s.sackedOut - s.lostOut + s.retransOut }

// write appends as much of b as the buffer takes.
func (s *sender) write(b []byte) int {
	n := min(len(b), s.bufLimit-s.bufLen)
	if n <= 0 {
		return 0
	}
	s.buf.grow(s.bufLen+n, s.bufLen)
	s.buf.copyIn(s.bufLen, b[:n])
	s.prios.add(s.una.Add(s.bufLen), n, s.ep.mss, s.ep.sock.Priorities)
	s.bufLen += n
	return n
}

// restartAfterIdle is Linux's tcp_slow_start_after_idle_check, run when
// the application queues data (tcp_skb_entail): with nothing in flight and
// no data segment sent for longer than the RTO, the window restarts
// (tcp_cwnd_restart, Config.SlowStartAfterIdle).
func (s *sender) restartAfterIdle(now des.Time) {
	if !s.ep.cfg.SlowStartAfterIdle || s.segs.n > 0 {
		return
	}
	idle, rto := now-s.lastDataSent, s.rtt.current()
	if idle <= rto {
		return
	}
	cwnd, ssthresh := s.cc.Cwnd(), s.cc.Ssthresh()
	if s.ca == caOpen {
		ssthresh = max(ssthresh, cwnd>>1+cwnd>>2) // tcp_current_ssthresh
	}
	restart := min(s.ep.cfg.InitialCwnd, cwnd)
	for idle -= rto; idle > 0 && cwnd > restart; idle -= rto {
		cwnd >>= 1
	}
	s.cc.SetWindow(max(cwnd, restart), ssthresh)
}

// trySend transmits what the congestion window, the peer's window and the
// pacer allow: retransmissions of lost segments first, then new data.
func (s *sender) trySend(now des.Time) {
	ep := s.ep
	if !ep.state.sendsData() {
		return
	}
	sent := false
	cwndLimited := false
	for {
		if !s.seqWindow && s.inFlight() >= s.cc.Cwnd() {
			cwndLimited = true
			break
		}
		idx := -1
		if s.lostOut > s.retransOut {
			idx = s.nextLost()
		}
		var n int
		var fin bool
		if idx < 0 {
			var ok bool
			if n, fin, ok = s.nextNew(); !ok {
				break
			}
		}
		if s.seqWindow && !s.fitsInWindow(idx) {
			cwndLimited = true
			break
		}
		if s.paceTimer != nil && s.paceNext > now {
			if !s.paceTimer.Pending() {
				ep.eng.sim.Schedule(s.paceTimer, s.paceNext)
			}
			break
		}
		if idx >= 0 {
			s.retransmit(idx, now)
		} else {
			s.sendNew(n, fin, now)
		}
		sent = true
	}
	if sent || cwndLimited {
		s.cwndValidate(cwndLimited)
	}
	if s.segs.n > 0 {
		if ep.timerMode != tmRTO {
			ep.arm(tmRTO, now+s.rtt.current())
		}
	} else if s.bufLen > 0 && ep.timerMode != tmPersist && s.wnd < min(s.bufLen, s.segSize()) {
		// Window closed with data waiting: probe it (RFC 9293 §3.8.6.1).
		ep.arm(tmPersist, now+s.probeInterval())
	}
}

// fitsInWindow is the window test of Shadow's _tcp_flush
// (src/main/host/descriptor/tcp.c, its fitsInWindow), which the sender
// applies instead of comparing cwnd with the flight when seqWindow is set:
// a segment leaves when its sequence number is below unacked + window.
// Shadow numbers segments, not bytes, so the test here is on the segment's
// place above snd_una: the segment at index idx of the retransmission
// queue (new data, idx < 0: at segs.n) fits when fewer than cwnd segments
// precede it. The segment a fast retransmission resends is the head,
// which always fits, so it leaves on the ACK that presumes it lost; new
// data leaves only while fewer than cwnd segments are unacknowledged,
// however many of them duplicate ACKs show to have left the network (the
// inflation of cwnd in fast recovery is what opens the window again).
// Shadow's window is the smaller of cwnd and the peer's window; the
// peer's, in bytes, is nextNew's test, on new data only.
func (s *sender) fitsInWindow(idx int) bool {
	pos := s.segs.n
	if idx >= 0 {
		pos = idx
	}
	return pos < s.cc.Cwnd()
}

// cwndValidate is Linux's tcp_cwnd_validate: it remembers, for the current
// window of data, whether sending was limited by cwnd.
func (s *sender) cwndValidate(limited bool) {
	if !s.una.Before(s.cwndUsageSeq) || limited || (!s.isCwndLimited && s.segs.n > s.maxPacketsOut) {
		s.isCwndLimited = limited
		s.maxPacketsOut = s.segs.n
		s.cwndUsageSeq = s.nxt
	}
}

// cwndLimited is tcp_is_cwnd_limited.
func (s *sender) cwndLimited() bool {
	if s.isCwndLimited {
		return true
	}
	if s.cc.Cwnd() < s.cc.Ssthresh() {
		return s.cc.Cwnd() < 2*s.maxPacketsOut
	}
	return false
}

// nextLost returns the index of the first segment presumed lost and not
// retransmitted, or -1.
func (s *sender) nextLost() int {
	from := seqMax(s.rtxHint, s.una)
	for i := s.segs.search(from); i < s.segs.n; i++ {
		sg := s.segs.at(i)
		if sg.flags&(segLost|segRetrans|segSacked) == segLost {
			s.rtxHint = sg.seq
			return i
		}
	}
	s.rtxHint = s.nxt
	return -1
}

// nextNew sizes the next new segment: n payload bytes, and whether it
// carries the FIN. ok is false when nothing new may go.
func (s *sender) nextNew() (n int, fin, ok bool) {
	if s.finSent {
		return 0, false, false
	}
	mss := s.segSize()
	avail := s.bufLen - s.nxt.Sub(s.una)
	if avail > 0 {
		room := s.una.Add(s.wnd).Sub(s.nxt)
		n = min(avail, mss)
		if room < n {
			// Sender-side silly-window avoidance (RFC 9293 §3.8.6.2.1):
			// a short segment only if it fills half the largest window.
			if room <= 0 || room < s.maxWnd/2 {
				return 0, false, false
			}
			n = room
		}
		return n, s.finQueued && n == avail, true
	}
	if s.finQueued {
		return 0, true, true
	}
	return 0, false, false
}

// txStart is tcp_event_data_sent's CA_EVENT_TX_START, before a data
// segment leaves: with nothing in flight, the controller hears of the idle
// time since the last one.
func (s *sender) txStart(now des.Time) {
	if s.inFlight() != 0 {
		return
	}
	if c, ok := s.cc.(txStarter); ok {
		c.TxStart(s.lastDataSent, now)
	}
}

func (s *sender) sendNew(n int, fin bool, now des.Time) {
	if n > 0 {
		s.txStart(now)
	}
	sg := segment{seq: s.nxt, len: int32(n), sent: now}
	if fin {
		sg.flags = segFIN
		s.finSent = true
		s.finSeq = s.nxt.Add(n)
	}
	s.segs.push(sg)
	s.nxt = sg.end()
	s.xmit(&sg, now)
	s.ep.stats.BytesSent += uint64(n)
}

func (s *sender) retransmit(i int, now des.Time) {
	sg := s.segs.at(i)
	if sg.len > 0 {
		s.txStart(now)
	}
	sg.flags |= segRetrans | segEverRetrans
	sg.sent = now
	s.retransOut++
	s.rtxHint = sg.end()
	if s.ep.sackOK {
		s.rtxq = append(s.rtxq, rtxRecord{sg.seq, s.nxt, now})
	}
	s.ep.stats.Retransmits++
	s.ep.stats.BytesRetrans += uint64(sg.len)
	s.xmit(sg, now)
	if s.seqWindow && s.ca == caRecovery {
		s.retransmitPacket(now)
	}
}

// retransmitPacket is the timer rule of Shadow's _tcp_retransmitPacket
// (src/main/host/descriptor/tcp.c): queueing a segment for retransmission
// restarts the retransmission timer (_tcp_setRetransmitTimer), so the
// fast retransmission pushes the timeout one RTO past itself. Shadow's
// other retransmissions need no rule of their own: at an expiry it queues
// every lost segment at once, as the timer is set again, and sends them
// later as the window opens without touching the timer; new data only
// starts a timer that is not running (tcp_networkInterfaceIsAboutToSendPacket).
func (s *sender) retransmitPacket(now des.Time) {
	s.ep.arm(tmRTO, now+s.rtt.current())
}

// xmit puts a segment on the wire and advances the pacer.
func (s *sender) xmit(sg *segment, now des.Time) {
	ep := s.ep
	flags := FlagACK
	if sg.flags&segFIN != 0 {
		flags |= FlagFIN
	}
	var payload []byte
	var prio uint64
	if sg.len > 0 {
		payload = s.buf.view(sg.seq.Sub(s.una), int(sg.len), ep.eng.scratch)
		prio = s.prios.of(sg.seq)
	}
	ep.output(flags, sg.seq, payload, prio, now)
	if sg.len > 0 {
		s.lastDataSent = now
	}
	if s.ca == caRecovery {
		s.prrOut++
	}
	if s.paceTimer != nil && sg.len > 0 && s.rtt.srtt > 0 {
		s.dataSegs++
		if s.dataSegs > ep.cfg.PacingUnpaced {
			s.paceNext = max(s.paceNext, now) + s.paceGap(int(sg.len))
		}
	}
}

// paceGap is the pacing interval of n bytes: Linux's pacing rate is
// ratio × max(cwnd, packets out) × MSS / SRTT, with ratio 200 % while
// cwnd < ssthresh/2 and 120 % after (tcp_update_pacing_rate).
func (s *sender) paceGap(n int) des.Time {
	cfg := s.ep.cfg
	ratio := cfg.PacingCARatio
	if s.cc.Cwnd() < s.cc.Ssthresh()/2 {
		ratio = cfg.PacingSSRatio
	}
	w := max(s.cc.Cwnd(), s.segs.n, 1)
	return des.Time(int64(n) * int64(s.rtt.srtt) * 100 / (int64(ratio) * int64(w) * int64(s.segSize())))
}

// pacingRate is the current pacing rate in bytes per second (0: unpaced).
func (s *sender) pacingRate() float64 {
	if s.paceTimer == nil || s.rtt.srtt <= 0 {
		return 0
	}
	mss := s.segSize()
	g := s.paceGap(mss)
	if g <= 0 {
		return 0
	}
	return float64(mss) / g.Seconds()
}

func (s *sender) stopPacing() {
	if s.paceTimer != nil {
		s.ep.eng.sim.Cancel(s.paceTimer)
	}
}

// ---------------------------------------------------------------------
// Acknowledgements.

// onAck processes the ACK field, window and SACK blocks of a segment
// carrying segLen bytes of data: the scoreboard, the RTT sample, then loss
// recovery (recoveryStep, recovery.go). It returns false when the segment
// must be dropped (it acknowledges data never sent).
func (s *sender) onAck(h *Header, segLen int, now des.Time) bool {
	ep := s.ep
	ack := h.Ack
	if ack.After(s.nxt) {
		ep.rcv.ackNow = true // RFC 9293 §3.10.7.4: ACK it and drop it
		ep.rcv.ackPolicy(now)
		return false
	}
	prevWnd := s.wnd
	if s.wl1.Before(h.Seq) || (s.wl1 == h.Seq && s.wl2.BeforeEq(ack)) {
		s.wnd, s.wl1, s.wl2 = int(h.Window), h.Seq, ack
		s.maxWnd = max(s.maxWnd, s.wnd)
		if s.wnd > prevWnd && ep.timerMode == tmPersist {
			ep.disarm() // trySend follows
		}
	}
	if ack.Before(s.una) {
		return true // an old ACK
	}
	outstanding := s.segs.n
	prevUna := s.una

	acked, fresh, seqRTT, caRTT, rexmitAcked, finAcked := s.clean(ack)
	newlySacked, lostRetrans := 0, 0
	var sackRTT, sackCaRTT des.Time
	if ep.sackOK && h.NumSACK > 0 {
		newlySacked, sackRTT, sackCaRTT = s.onSACK(h, now)
		lostRetrans = s.markLostRetrans()
	}
	dup := acked == 0 && ack == prevUna && segLen == 0 && h.Flags&FlagFIN == 0 &&
		s.wnd == prevWnd && outstanding > 0 && newlyOrNoSACK(ep.sackOK, h)

	// RTT (RFC 6298 with Karn's rule; Linux's tcp_ack_update_rtt).
	if rexmitAcked {
		seqRTT, caRTT = 0, 0
	}
	if seqRTT == 0 {
		seqRTT = sackRTT
	}
	if caRTT == 0 {
		caRTT = sackCaRTT
	}
	if seqRTT > 0 {
		s.rtt.sample(seqRTT)
	}

	delivered := fresh + newlySacked
	if !ep.sackOK {
		if acked > 0 {
			s.renoSacked = max(s.renoSacked-(acked-1), 0)
		}
		if dup {
			delivered = 1
			s.renoSacked = min(s.renoSacked+1, max(s.segs.n-1, 0))
		}
	}
	if dup {
		ep.stats.DupAcks++
	}

	a := &s.ack
	*a = ackInfo{now: now, ack: ack, prevUna: prevUna, acked: acked, delivered: delivered, dup: dup, rtt: caRTT, newlyLost: lostRetrans}
	s.recoveryStep(a)

	if acked > 0 || s.una != prevUna {
		s.probes = 0
		if s.segs.n == 0 {
			if ep.timerMode == tmRTO {
				ep.disarm()
			}
		} else {
			ep.arm(tmRTO, now+s.rtt.current()) // RFC 6298 §5.3
		}
		s.spaceFreed(now)
	}
	if finAcked {
		ep.finAcked(now)
	}
	return true
}

// newlyOrNoSACK: with SACK, a duplicate ACK counts for recovery only if it
// carries SACK information (RFC 6675 §2's definition).
func newlyOrNoSACK(sackOK bool, h *Header) bool { return !sackOK || h.NumSACK > 0 }

// clean drops the segments ack covers from the retransmission queue and
// returns how many, how many of those were not SACKed before, the RTT
// samples (the oldest and the newest newly acknowledged, never
// retransmitted, segment), whether retransmitted data was acknowledged,
// and whether the FIN was.
func (s *sender) clean(ack SeqNum) (acked, fresh int, seqRTT, caRTT des.Time, rexmit, fin bool) {
	now := s.ep.eng.sim.Now()
	var first, last des.Time
	for s.segs.n > 0 {
		sg := s.segs.at(0)
		if sg.end().After(ack) {
			if sg.seq.Before(ack) { // part of a segment: trim it
				k := ack.Sub(sg.seq)
				sg.seq = ack
				sg.len -= int32(k)
			}
			break
		}
		f := sg.flags
		switch {
		case f&segEverRetrans != 0:
			rexmit = true
		case f&segSacked == 0:
			if first == 0 {
				first = sg.sent
			}
			last = sg.sent
		}
		if f&segSacked != 0 {
			s.sackedOut--
		} else {
			fresh++
			if f&segLost != 0 {
				s.lostOut--
			}
			if f&segRetrans != 0 {
				s.retransOut--
			}
		}
		if f&segFIN != 0 {
			fin = true
		}
		s.segs.popFront()
		acked++
	}
	if first != 0 {
		seqRTT, caRTT = now-first, now-last
	}
	dataAcked := ack.Sub(s.una)
	if s.finSent && !ack.BeforeEq(s.finSeq) {
		dataAcked-- // the FIN's sequence number
	}
	if dataAcked > 0 {
		s.buf.advance(dataAcked)
		s.bufLen -= dataAcked
		if s.bufLen == 0 {
			s.buf.shed()
		}
		s.ep.stats.BytesAcked += uint64(dataAcked)
	}
	s.una = ack
	s.sb.trimBelow(ack)
	s.prios.trim(ack)
	return
}

// onSACK takes the SACK blocks of an ACK into the scoreboard and returns
// the segments newly SACKed and the RTT samples they give.
func (s *sender) onSACK(h *Header, now des.Time) (n int, seqRTT, caRTT des.Time) {
	var first, last des.Time
	for _, b := range h.Blocks() {
		a, e := seqMax(b.Start, s.una), seqMin(b.End, s.nxt)
		if !a.Before(e) {
			continue // stale, or a D-SACK (RFC 2883, not modelled)
		}
		s.fresh = s.fresh[:0]
		m := s.sb.add(a, e, s.freshFn)
		for _, f := range s.fresh {
			for i := s.segs.search(f.start); i < s.segs.n; i++ {
				sg := s.segs.at(i)
				if !sg.seq.Before(f.end) {
					break
				}
				if sg.flags&segSacked != 0 || sg.seq.Before(m.start) || sg.end().After(m.end) {
					continue
				}
				if sg.flags&segEverRetrans == 0 {
					if first == 0 || sg.sent < first {
						first = sg.sent
					}
					last = max(last, sg.sent)
				}
				if sg.flags&segLost != 0 {
					s.lostOut--
				}
				if sg.flags&segRetrans != 0 {
					s.retransOut--
				}
				sg.flags = sg.flags&^(segLost|segRetrans) | segSacked
				s.sackedOut++
				n++
			}
		}
	}
	if first != 0 {
		seqRTT, caRTT = now-first, now-last
	}
	return
}

// onRTO handles the retransmission timer (RFC 6298 §5.4–5.6, RFC 5681
// §3.1): every segment not SACKed is presumed lost, the controller
// shrinks the window, the timer backs off, and retransmission starts from
// the first unacknowledged segment.
func (s *sender) onRTO(now des.Time) {
	ep := s.ep
	if s.segs.n == 0 {
		return
	}
	if s.rtt.backoff >= ep.cfg.Retries {
		ep.finish(ErrTimedOut, now)
		return
	}
	reduce := s.ca == caOpen || !s.una.Before(s.recover)
	ev := &s.ev
	*ev = AckEvent{Now: now, InFlight: s.inFlight(), Pipe: s.inFlight() - s.renoSacked, Outstanding: s.segs.n,
		SRTT: s.rtt.srtt, MinRTT: s.rtt.minRTT, SndUna: s.una, SndNxt: s.nxt, Paced: s.paceTimer != nil}
	for i := 0; i < s.segs.n; i++ {
		sg := s.segs.at(i)
		if sg.flags&segSacked != 0 {
			continue
		}
		if sg.flags&segRetrans != 0 {
			sg.flags &^= segRetrans
			s.retransOut--
		}
		if sg.flags&segLost == 0 {
			sg.flags |= segLost
			s.lostOut++
		}
	}
	s.rtxHint = s.una
	s.ca = caLoss
	s.recover = s.nxt
	s.dupAcks, s.renoSacked = 0, 0
	s.cc.OnRTO(ev, reduce)
	s.rtt.backoff++
	ep.stats.RTOs++
	s.paceNext = now
	ep.arm(tmRTO, now+s.rtt.current())
	s.trySend(now)
}

// probeInterval is the persist timer's interval: the RTO, doubled per
// unanswered probe, at most RTOMax.
func (s *sender) probeInterval() des.Time {
	t := s.rtt.rto
	for i := 0; i < s.probes && t < s.rtt.max; i++ {
		t *= 2
	}
	return min(t, s.rtt.max)
}

// probe sends a zero-window probe: like Linux, a segment with an old
// sequence number (snd_una − 1), which the receiver must answer with an
// ACK carrying its window.
func (s *sender) probe(now des.Time) {
	ep := s.ep
	if s.segs.n > 0 || s.bufLen == 0 {
		return
	}
	s.probes++
	if s.probes > ep.cfg.Retries {
		ep.finish(ErrTimedOut, now)
		return
	}
	ep.output(FlagACK, s.una-1, nil, 0, now)
	ep.arm(tmPersist, now+s.probeInterval())
	s.trySend(now)
}

// spaceFreed grows the send buffer (autotuning) and wakes a blocked writer
// once the free space is at least half the queued data (Linux's
// sk_stream_is_writeable).
func (s *sender) spaceFreed(now des.Time) {
	ep := s.ep
	switch ep.cfg.Autotune {
	case AutotuneLinux:
		if s.inFlight() < s.cc.Cwnd() { // tcp_should_expand_sndbuf
			s.expandLinux()
		}
	case AutotuneShadow:
		s.bufLimit = max(s.bufLimit, min(2*s.cc.Cwnd()*ep.mss, ep.cfg.SendBuffer.Max))
	}
	if s.writerBlocked && s.bufLimit-s.bufLen >= s.bufLen/2 {
		s.writerBlocked = false
		if ep.cb.Writable != nil {
			ep.cb.Writable(now)
		}
	}
}

// expandLinux is tcp_sndbuf_expand: room for 2 × max(cwnd, 10) segments of
// linuxPerMSS bytes for the peer's MSS, at most tcp_wmem[2]. Linux counts
// that memory in skb truesize; the model counts payload bytes, which
// Linux's GSO-sized skbs approach (a 64 KB skb's truesize is its payload
// and about 1 KB), so the buffer holds about as much data as Linux's
// would.
func (s *sender) expandLinux() {
	want := 2 * max(s.cc.Cwnd(), 10) * linuxPerMSS(s.ep.mss)
	s.bufLimit = max(s.bufLimit, min(want, s.ep.cfg.SendBuffer.Max))
}
