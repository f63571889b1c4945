package tcp

import (
	"math/bits"

	"github.com/uplinksim/uplink/des"
)

// receiver is the receiving half of a connection: reassembly, the
// advertised window, SACK blocks, delayed ACKs and receive-buffer
// autotuning.
//
// The receive buffer is one ring holding [first unread byte, right edge of
// the window): in-order data waiting for the application and out-of-order
// data at its offset, whose extents the ooo set records. The window offered
// is the buffer's share for data (Config.ScalingRatio or AdvWinScale) less
// what it holds, aligned to the window scale's unit (Config.WindowScale)
// or rounded down to whole segments, and never moves its right edge back
// (RFC 9293 §3.8.6.2.2).
type receiver struct {
	ep *Endpoint

	irs, nxt    SeqNum // rcv_nxt
	readSeq     SeqNum // copied_seq: the first byte the application has not read
	buf         byteRing
	ooo         rangeSet
	finRcvd     bool
	finSeq      SeqNum
	finDone     bool // rcv_nxt is past the FIN
	shut        bool // the application closed its reading side
	rcvbuf, win int  // buffer size and its share for the window
	advRight    SeqNum
	wup         SeqNum // rcv_nxt at the last ACK sent (rcv_wup)

	ackNow     bool // acknowledge at once
	ackPending bool // data received, not acknowledged
	delack     *des.Timer
	quick      int
	shadowAcks int
	recent     [MaxSACKBlocks]SeqNum // starts of the most recently reported SACK blocks, newest first
	nrecent    int

	// Linux's window share and scale: scaling_ratio (of 256), the
	// receiver's estimate of the peer's segment size (icsk_ack.rcv_mss)
	// and rcv_wscale (Config.ScalingRatio, Config.WindowScale).
	ratio  int
	rcvMSS int
	wscale int

	// Linux DRS (tcp_rcv_space_adjust, tcp_rcv_rtt_measure).
	spaceBytes  int
	spaceSeq    SeqNum
	spaceTime   des.Time
	rttEst      des.Time
	rttSeq      SeqNum
	rttTime     des.Time
	rttMeasured bool
	// Shadow's autotuning.
	copied     int
	lastAdjust des.Time
	adjStarted bool
}

// Linux's constants of the window share (include/net/tcp.h): the ratio's
// unit (TCP_RMEM_TO_WIN_SCALE) and its value before a full-sized segment
// is measured (TCP_DEFAULT_SCALING_RATIO, 50 % since Linux 6.11), the
// first estimate of the peer's segment size (TCP_MIN_RCVMSS) and its
// floor (TCP_MIN_MSS).
const (
	rmemToWinScale      = 8
	defaultScalingRatio = 1 << (rmemToWinScale - 1)
	minRcvMSS           = 536
	minMSS              = 88
)

// linuxSkbOverhead is the truesize of a received segment beyond its
// payload: an skb whose head holds the headers and whose payload lies in
// page fragments, SKB_TRUESIZE(MAX_TCP_HEADER) = 320 + 256 (struct
// sk_buff) + 320 (struct skb_shared_info) on x86-64. Real truesize
// depends on the driver; this gives 1 460-byte segments a ratio of 62 %
// and 64 KB segments one of 98 %.
const linuxSkbOverhead = 896

func (r *receiver) init(ep *Endpoint) {
	r.ep = ep
	r.ratio = defaultScalingRatio
	if ep.cfg.WindowScale {
		// tcp_select_initial_window: the scale that lets the largest
		// buffer's window be offered.
		space := max(ep.cfg.RecvBuffer.Max, ep.cfg.RmemMax, 1)
		r.wscale = min(max(bits.Len(uint(space))-1-15, 0), 14)
	}
	r.setBuffer(ep.cfg.RecvBuffer.Default)
	if ep.cfg.DelayedAck != DelAckOff {
		r.delack = ep.eng.sim.NewTimer(r.delackFired)
	}
	r.quick = ep.cfg.QuickAcks
}

// start takes the peer's initial sequence number.
func (r *receiver) start(irs SeqNum) {
	r.irs = irs
	r.nxt, r.readSeq, r.wup, r.advRight = irs+1, irs+1, irs+1, irs+1
}

// setBuffer sizes the receive buffer (it only grows). The ring holding
// its bytes grows only as data arrives (segment): autotuning offers
// windows of megabytes that most connections never fill, and a ring sized
// to the window would count as live heap and push the collector's target
// far above what the cell really holds.
func (r *receiver) setBuffer(b int) {
	r.rcvbuf = b
	r.win = r.winFromSpace(b)
}

// winFromSpace is tcp_win_from_space: the window share of a buffer of b
// bytes.
func (r *receiver) winFromSpace(b int) int {
	if r.ep.cfg.ScalingRatio {
		return int(int64(b) * int64(r.ratio) >> rmemToWinScale)
	}
	if sc := r.ep.cfg.AdvWinScale; sc > 0 {
		return b - b>>sc
	}
	return b
}

// measureRcvMSS is tcp_measure_rcv_mss for an in-order segment of n
// payload bytes: a segment at least as large as the estimate of the peer's
// segment size raises the estimate to it (at most our MSS), and one of a
// new size sets the window share's ratio to its payload over its
// truesize, the window following (the window clamp, and the DRS measure
// when above it).
func (r *receiver) measureRcvMSS(n int) {
	if n < r.rcvMSS {
		return
	}
	if n != r.rcvMSS && r.ep.cfg.ScalingRatio {
		ratio := max(n<<rmemToWinScale/(n+linuxSkbOverhead), 1)
		if ratio != r.ratio {
			r.ratio = ratio
			r.win = r.winFromSpace(r.rcvbuf)
			r.spaceBytes = min(r.spaceBytes, r.win)
		}
	}
	r.rcvMSS = min(n, r.ep.cfg.MSS)
}

// stored is the bytes the ring holds from readSeq on: in-order unread
// data and the out-of-order ranges beyond it.
func (r *receiver) stored() int {
	n := r.nxt.Sub(r.readSeq)
	if !r.ooo.empty() {
		n = max(n, r.ooo.rs[len(r.ooo.rs)-1].end.Sub(r.readSeq))
	}
	return n
}

func (r *receiver) established(now des.Time) {
	ep := r.ep
	switch ep.cfg.Autotune {
	case AutotuneShadow:
		// The offered right edge stays where the SYN put it if the buffer
		// shrinks (window() never moves it back).
		r.setBuffer(ep.shadowInitialBuffer(ep.cfg.RecvBuffer, false))
	}
	// tcp_init_buffer_space: the first DRS measure expects the first
	// window, at most 10 segments.
	r.spaceBytes = min(r.win, 10*ep.mss)
	if ep.cfg.WindowScale {
		r.spaceBytes = min(r.initialWindow(), 10*ep.cfg.MSS)
	}
	// tcp_initialize_rcv_mss: a guess below the peer's segments.
	r.rcvMSS = max(min(ep.cfg.MSS, ep.mss, r.initialWindow()/2, minRcvMSS), minMSS)
	r.spaceSeq, r.spaceTime = r.readSeq, now
}

// initialWindow is tcp_select_initial_window's first window: the buffer's
// share, rounded down to whole segments when above one, at most 65 535
// (a SYN's window is never scaled).
func (r *receiver) initialWindow() int {
	w, mss := r.win, r.ep.cfg.MSS
	if w > mss {
		w -= w % mss
	}
	return min(w, 65535)
}

// unread is the in-order data waiting for the application.
func (r *receiver) unread() int {
	end := r.nxt
	if r.finDone {
		end--
	}
	return end.Sub(r.readSeq)
}

// eof reports whether the application has read up to the peer's FIN.
func (r *receiver) eof() bool { return r.finDone && r.unread() == 0 }

// window is the window to offer now, in bytes: with window scaling,
// __tcp_select_window's free space (rounded down to the scale's unit and
// offered as zero under a segment or a sixteenth of the buffer when less
// than half the buffer is free) aligned up to the unit; without, the free
// space in whole segments.
func (r *receiver) window() int {
	free := r.readSeq.Add(r.win).Sub(r.nxt)
	var w int
	if r.ep.cfg.WindowScale {
		unit := 1 << r.wscale
		mss := min(r.rcvMSS, r.win)
		if free < r.win/2 {
			free -= free % unit
			if free < r.win>>4 || free < mss {
				free = 0
			}
		}
		w = max((free+unit-1)/unit*unit, 0)
	} else {
		mss := r.ep.mss
		w = max(free-free%mss, 0)
	}
	if cur := r.advRight.Sub(r.nxt); cur > w {
		w = cur
	}
	return w
}

// synWindow is the window a SYN offers: with window scaling,
// tcp_select_initial_window's (initialWindow); else window's.
func (r *receiver) synWindow() int {
	if !r.ep.cfg.WindowScale {
		return r.advertise()
	}
	w := r.initialWindow()
	if e := r.nxt.Add(w); e.After(r.advRight) {
		r.advRight = e
	}
	return w
}

// advertise returns the window for an outgoing segment and records its
// right edge.
func (r *receiver) advertise() int {
	w := r.window()
	if e := r.nxt.Add(w); e.After(r.advRight) {
		r.advRight = e
	}
	return w
}

// segment takes an acceptable segment's data (seq, data, fin) into the
// buffer (RFC 9293 §3.10.7.4, seventh step). A segment without data or
// FIN only checks the sequence number: an unacceptable one (a window
// probe) is answered with an ACK.
func (r *receiver) segment(seq SeqNum, data []byte, fin bool, now des.Time) {
	if len(data) == 0 && !fin {
		if seq != r.nxt && !seq.InRange(r.nxt, r.advRight) {
			r.ackNow = true
		}
		return
	}
	end := seq.Add(len(data))
	segEnd := end
	if fin {
		segEnd++
	}
	if segEnd.BeforeEq(r.nxt) || r.finDone {
		r.ackNow = true // a duplicate: acknowledge it (a duplicate ACK)
		return
	}
	right := seqMax(r.advRight, r.nxt)
	if !seq.Before(right) && !(len(data) == 0 && seq == r.nxt) {
		r.ackNow = true // beyond the window
		return
	}
	if seq.Before(r.nxt) {
		k := r.nxt.Sub(seq)
		data = data[min(k, len(data)):]
		seq = r.nxt
	}
	if end.After(right) {
		data = data[:right.Sub(seq)]
		end = right
		fin = false
	}
	if len(data) > 0 {
		off := seq.Sub(r.readSeq)
		if need := off + len(data); need > r.buf.cap() {
			r.buf.grow(need, r.stored())
		}
		r.buf.copyIn(off, data)
	}
	if fin {
		r.finRcvd, r.finSeq = true, end
	}
	ep := r.ep
	ep.stats.BytesReceived += uint64(len(data))
	if seq != r.nxt {
		if len(data) > 0 {
			m := r.ooo.add(seq, end, nil)
			r.noteRecent(m.start)
		}
		r.ackNow = true // out of order: a duplicate ACK at once
		return
	}
	hadOOO := !r.ooo.empty()
	r.measureRcvMSS(len(data))
	r.nxt = end
	for !r.ooo.empty() && r.ooo.rs[0].start.BeforeEq(r.nxt) {
		r.nxt = seqMax(r.nxt, r.ooo.rs[0].end)
		r.ooo.trimBelow(r.nxt)
	}
	if hadOOO {
		r.ackNow = true // a hole filled, or still holes: Linux ACKs at once
	}
	r.ackPending = true
	if ep.cfg.Autotune == AutotuneLinux {
		r.rttMeasure(now)
	}
	if r.finRcvd && r.nxt == r.finSeq {
		r.nxt++
		r.finDone = true
		r.ackNow = true
		ep.finReceived(now)
		return
	}
	if len(data) > 0 && ep.cb.Readable != nil {
		ep.cb.Readable(now)
	}
}

// noteRecent records that the SACK block starting at start holds the
// newest data (RFC 2018 §4: the first block reports the most recent
// segment, the others the most recently reported blocks).
func (r *receiver) noteRecent(start SeqNum) {
	k := 0
	for k < r.nrecent && r.recent[k] != start {
		k++
	}
	if k == r.nrecent && r.nrecent < MaxSACKBlocks {
		r.nrecent++
	}
	if k == MaxSACKBlocks {
		k--
	}
	copy(r.recent[1:k+1], r.recent[:k])
	r.recent[0] = start
}

// fillSACK writes up to n SACK blocks into h, most recent first.
func (r *receiver) fillSACK(h *Header, n int) {
	if r.ooo.empty() || n <= 0 {
		r.nrecent = min(r.nrecent, len(r.ooo.rs))
		return
	}
	k := 0
	for i := 0; i < r.nrecent; i++ {
		rg, ok := r.ooo.containing(r.recent[i])
		if !ok {
			continue
		}
		dup := false
		for j := 0; j < k; j++ {
			if h.SACK[j].Start == rg.start {
				dup = true
				break
			}
		}
		if dup {
			continue
		}
		r.recent[k] = rg.start // keep the list canonical: block starts
		if k < n {
			h.SACK[k] = SACKBlock{rg.start, rg.end}
		}
		k++
	}
	r.nrecent = k
	h.NumSACK = uint8(min(k, n))
}

// ackSent notes that an ACK went out.
func (r *receiver) ackSent() {
	if r.ackPending && r.quick > 0 {
		r.quick--
	}
	r.ackNow, r.ackPending = false, false
	r.wup = r.nxt
	if r.delack != nil && r.delack.Pending() {
		r.ep.eng.sim.Cancel(r.delack)
	}
}

func (r *receiver) stopDelack() {
	if r.delack != nil {
		r.ep.eng.sim.Cancel(r.delack)
	}
}

// ackPolicy sends or schedules the ACK the last segment calls for.
func (r *receiver) ackPolicy(now des.Time) {
	ep := r.ep
	if !r.ackNow && !r.ackPending {
		return
	}
	switch ep.cfg.DelayedAck {
	case DelAckLinux:
		// __tcp_ack_snd_check: more than one full segment (the estimate
		// of the peer's, icsk_ack.rcv_mss) unacknowledged, quick-ACK
		// mode, or out-of-order data: now; else the timer.
		if r.ackNow || r.quick > 0 || r.nxt.Sub(r.wup) > r.rcvMSS {
			ep.sendAck(now)
		} else if !r.delack.Pending() {
			ep.eng.sim.Schedule(r.delack, now+ep.cfg.DelAckTimeout)
		}
	case DelAckShadow:
		// Every pure ACK waits; what arrives meanwhile rides on it.
		if !r.delack.Pending() {
			d := ep.cfg.ShadowAckDelay
			if r.shadowAcks >= ep.cfg.ShadowAckSwitch {
				d = ep.cfg.ShadowAckDelayLater
			}
			ep.eng.sim.Schedule(r.delack, now+d)
		}
	default:
		ep.sendAck(now)
	}
}

func (r *receiver) delackFired(now des.Time) {
	ep := r.ep
	if !ep.state.synchronized() || (!r.ackNow && !r.ackPending) {
		return
	}
	r.shadowAcks++
	ep.stats.DelayedAcks++
	ep.sendAck(now)
}

// read copies in-order data to b, then autotunes the buffer and sends a
// window update when the window opened much (Linux's tcp_cleanup_rbuf:
// the new window at least twice the one offered).
func (r *receiver) read(b []byte, now des.Time) int {
	n := min(len(b), r.unread())
	if n <= 0 {
		return 0
	}
	r.buf.copyOut(0, b[:n])
	r.buf.advance(n)
	r.readSeq = r.readSeq.Add(n)
	if r.stored() == 0 {
		r.buf.shed()
	}
	ep := r.ep
	switch ep.cfg.Autotune {
	case AutotuneLinux:
		r.spaceAdjust(now)
	case AutotuneShadow:
		r.shadowAdjust(n, now)
	}
	if ep.state.synchronized() && !r.finDone {
		cur := r.advRight.Sub(r.nxt)
		if 2*cur <= r.win && r.window() >= 2*cur && r.window() > cur {
			ep.sendAck(now)
		}
	}
	return n
}

// rttMeasure is tcp_rcv_rtt_measure: the receiver's RTT is the time it
// takes to receive one window of data, the minimum kept.
func (r *receiver) rttMeasure(now des.Time) {
	if r.rttMeasured {
		if r.nxt.Before(r.rttSeq) {
			return
		}
		d := max(now-r.rttTime, 1)
		if r.rttEst == 0 || d < r.rttEst {
			r.rttEst = d
		}
	}
	r.rttMeasured = true
	r.rttSeq = r.nxt.Add(max(r.advRight.Sub(r.nxt), 1))
	r.rttTime = now
}

// spaceAdjust is Linux's dynamic right-sizing (tcp_rcv_space_adjust): once
// per receiver RTT, if the application read more than in the previous
// one, the buffer grows to hold twice that plus 16 segments, plus the
// growth itself twice over (for a sender in slow start), at most
// tcp_rmem[2].
func (r *receiver) spaceAdjust(now des.Time) {
	if r.rttEst == 0 || now-r.spaceTime < r.rttEst {
		return
	}
	copied := r.readSeq.Sub(r.spaceSeq)
	if copied > r.spaceBytes {
		mss := r.ep.mss
		rcvwin := 2*copied + 16*mss
		grow := rcvwin * (copied - r.spaceBytes) / max(r.spaceBytes, 1)
		rcvwin += 2 * grow
		if b := min(r.spaceFromWin(rcvwin), r.ep.cfg.RecvBuffer.Max); b > r.rcvbuf {
			r.setBuffer(b)
		}
		r.spaceBytes = copied
	}
	r.spaceSeq, r.spaceTime = r.readSeq, now
}

// spaceFromWin is tcp_space_from_win: the buffer whose window share is w.
func (r *receiver) spaceFromWin(w int) int {
	if r.ep.cfg.ScalingRatio {
		return int(int64(w) << rmemToWinScale / int64(r.ratio))
	}
	s := r.ep.cfg.AdvWinScale
	if s == 0 {
		return w
	}
	return w << s / (1<<s - 1)
}

// shadowAdjust is Shadow's receive autotuning: once per smoothed RTT, the
// buffer grows to twice the bytes the application read in it, at most
// RecvBuffer.Max.
func (r *receiver) shadowAdjust(n int, now des.Time) {
	r.copied += n
	if !r.adjStarted {
		r.adjStarted, r.lastAdjust = true, now
		return
	}
	srtt := r.ep.snd.rtt.srtt
	if srtt <= 0 || now-r.lastAdjust <= srtt {
		return
	}
	if space := min(2*r.copied, r.ep.cfg.RecvBuffer.Max); space > r.rcvbuf {
		r.setBuffer(space)
	}
	r.copied, r.lastAdjust = 0, now
}

// shadowInitialBuffer is Shadow's initial buffer size: RTT × the smaller
// of the two rates on the way × 1.25, clamped to [Min, Max] (send: our
// uplink and the peer's downlink; receive: the reverse). The RTT is the
// handshake's sample; Shadow reads the configured path latency, which is
// the same on an idle path. Unlimited rates count as the other; both
// unlimited give Max.
func (ep *Endpoint) shadowInitialBuffer(b BufferSizes, send bool) int {
	n := ep.eng.net
	myUp, myDown := n.Node(ep.node).LinkRates()
	peerUp, peerDown := n.Node(ep.rnode).LinkRates() // the peer may live in another partition
	r1, r2 := myUp, peerDown
	if !send {
		r1, r2 = myDown, peerUp
	}
	rate := min(r1, r2)
	if r1 == 0 || r2 == 0 {
		rate = max(r1, r2)
	}
	rtt := ep.snd.rtt.srtt
	if rate == 0 || rtt <= 0 {
		return b.Max
	}
	v := int(float64(rate) / 8 * rtt.Seconds() * 1.25)
	return min(max(v, b.Min), b.Max)
}
