package tcp

import (
	"fmt"
	"io"
	"syscall"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
)

// State is a connection state (RFC 9293 §3.3.2). LISTEN is a ListenPort.
type State uint8

const (
	StateClosed State = iota
	StateSynSent
	StateSynRcvd
	StateEstablished
	StateFinWait1
	StateFinWait2
	StateCloseWait
	StateClosing
	StateLastAck
	StateTimeWait
)

var stateNames = [...]string{"CLOSED", "SYN-SENT", "SYN-RECEIVED", "ESTABLISHED", "FIN-WAIT-1", "FIN-WAIT-2", "CLOSE-WAIT", "CLOSING", "LAST-ACK", "TIME-WAIT"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// synchronized reports whether the handshake is done and the connection
// not yet closed.
func (s State) synchronized() bool { return s >= StateEstablished && s <= StateTimeWait }

// sendsData reports whether the sender may (re)transmit in s.
func (s State) sendsData() bool {
	switch s {
	case StateEstablished, StateCloseWait, StateFinWait1, StateClosing, StateLastAck:
		return true
	}
	return false
}

// Errors a connection ends with. They wrap the matching errno, so
// errors.Is(err, syscall.ECONNREFUSED) and the like work.
var (
	ErrRefused  = fmt.Errorf("tcp: connection refused: %w", syscall.ECONNREFUSED)
	ErrReset    = fmt.Errorf("tcp: connection reset by peer: %w", syscall.ECONNRESET)
	ErrTimedOut = fmt.Errorf("tcp: connection timed out: %w", syscall.ETIMEDOUT)
	ErrAborted  = fmt.Errorf("tcp: connection aborted: %w", syscall.ECONNABORTED)
	ErrShutdown = fmt.Errorf("tcp: write after CloseWrite: %w", syscall.EPIPE)
	ErrNotConn  = fmt.Errorf("tcp: not connected: %w", syscall.ENOTCONN)
)

// Callbacks are an endpoint's notifications to its owner. They run inside
// model events (or the owner's own calls), with the model locked, and must
// not call back into the model beyond the endpoint's own methods.
type Callbacks struct {
	// Established: the handshake completed (the connecting side).
	Established func(now des.Time)
	// Readable: data or the end of the stream arrived, or the connection
	// failed.
	Readable func(now des.Time)
	// Writable: send-buffer space came back, or the connection failed.
	Writable func(now des.Time)
	// Closed: the connection reached CLOSED; err is nil for an orderly
	// close.
	Closed func(err error, now des.Time)
}

// timer modes of an endpoint's one protocol timer (Linux shares its
// retransmission timer the same way).
const (
	tmNone uint8 = iota
	tmRTO
	tmPersist
	tmTimeWait
	tmFinWait2
)

// Endpoint is one TCP connection. Its methods must be called with the
// model locked (from model events, or under des.Live's lock).
type Endpoint struct {
	eng          *Engine
	cfg          *Config
	sock         *netmodel.Socket
	lp           *ListenPort
	node, rnode  int
	lport, rport uint16
	state        State
	iss          SeqNum
	mss          int // the peer's MSS: our segment size
	sackOK       bool
	err          error
	appClosed    bool // Close was called: the connection is orphaned
	halfOpen     bool // counted in the listener's backlog
	cb           Callbacks

	snd sender
	rcv receiver

	timer     *des.Timer
	timerMode uint8
	timerAt   des.Time // tmRTO: the deadline (the event may fire earlier and re-arm)

	synAt      des.Time // when the SYN (or SYN-ACK) was first sent
	synRetrans bool
	synTries   int

	stats Stats
}

func (e *Engine) newEndpoint(s *netmodel.Socket, lp *ListenPort, node, rnode int, rport uint16) *Endpoint {
	ep := &Endpoint{
		eng: e, cfg: &e.cfg, sock: s, lp: lp,
		node: node, rnode: rnode, lport: s.Port(), rport: rport,
		iss: SeqNum(e.iss.Uint32()),
		mss: e.cfg.MSS,
	}
	ep.timer = e.sim.NewTimer(ep.timerFired)
	ep.snd.init(ep)
	ep.rcv.init(ep)
	e.opened(ep)
	return ep
}

// SetCallbacks installs the owner's notifications.
func (ep *Endpoint) SetCallbacks(cb Callbacks) { ep.cb = cb }

// State is the connection state.
func (ep *Endpoint) State() State { return ep.state }

// Err is the error the connection failed with, or nil.
func (ep *Endpoint) Err() error { return ep.err }

// LocalNode, LocalPort, RemoteNode and RemotePort are the connection's
// addresses.
func (ep *Endpoint) LocalNode() int     { return ep.node }
func (ep *Endpoint) LocalPort() uint16  { return ep.lport }
func (ep *Endpoint) RemoteNode() int    { return ep.rnode }
func (ep *Endpoint) RemotePort() uint16 { return ep.rport }

// CongestionControl is the sender's controller.
func (ep *Endpoint) CongestionControl() CongestionControl { return ep.snd.cc }

// ---------------------------------------------------------------------
// Application side.

// Write copies as much of b as the send buffer has room for, sends what
// the windows allow, and reports how much it took. A short count means
// the buffer is full: wait for the Writable callback.
func (ep *Endpoint) Write(b []byte, now des.Time) (int, error) {
	switch {
	case ep.err != nil:
		return 0, ep.err
	case ep.snd.finQueued:
		return 0, ErrShutdown
	case ep.state != StateEstablished && ep.state != StateCloseWait:
		return 0, ErrNotConn
	}
	n := ep.snd.write(b)
	if n > 0 {
		ep.snd.restartAfterIdle(now)
		ep.snd.trySend(now)
	}
	if n < len(b) {
		ep.snd.writerBlocked = true
	}
	return n, nil
}

// Writable reports how many bytes Write would take now.
func (ep *Endpoint) Writable() int {
	if ep.err != nil || ep.snd.finQueued {
		return 0
	}
	return max(ep.snd.bufLimit-ep.snd.bufLen, 0)
}

// AwaitWritable is for a connection with several writers: one has just
// finished and others still wait. It reports whether Write would take
// bytes now; if not, the endpoint counts its writer as blocked again, so
// the next freeing of space calls Writable (which fires once per
// blocking).
func (ep *Endpoint) AwaitWritable() bool {
	if ep.Writable() > 0 || ep.err != nil {
		return true
	}
	ep.snd.writerBlocked = true
	return false
}

// Buffered is the number of bytes written and not yet acknowledged.
func (ep *Endpoint) Buffered() int { return ep.snd.bufLen }

// Read copies received in-order data into b. At the end of the stream it
// returns io.EOF; after a failure, the error. With nothing to read it
// returns 0, nil: wait for the Readable callback.
func (ep *Endpoint) Read(b []byte, now des.Time) (int, error) {
	n := ep.rcv.read(b, now)
	if n > 0 {
		return n, nil
	}
	if ep.rcv.eof() {
		return 0, io.EOF
	}
	if ep.err != nil {
		return 0, ep.err
	}
	if ep.rcv.shut {
		return 0, io.EOF
	}
	return 0, nil
}

// Readable is the number of bytes Read would return now.
func (ep *Endpoint) Readable() int { return ep.rcv.unread() }

// EOF reports whether the peer's FIN has been read up to.
func (ep *Endpoint) EOF() bool { return ep.rcv.eof() }

// CloseWrite sends a FIN after the data already written (shutdown(SHUT_WR)).
func (ep *Endpoint) CloseWrite(now des.Time) error {
	if ep.err != nil {
		return ep.err
	}
	switch ep.state {
	case StateEstablished:
		ep.state = StateFinWait1
	case StateCloseWait:
		ep.state = StateLastAck
	case StateSynSent, StateSynRcvd:
		ep.Abort(now)
		return nil
	default:
		return nil // already shut
	}
	ep.snd.finQueued = true
	ep.snd.trySend(now)
	return nil
}

// Close closes both directions (close(2)). Like Linux, it resets the
// connection instead if received data is left unread; otherwise it sends
// a FIN after the data written, and data arriving later resets it. The
// connection then finishes in the model: FIN retransmissions, FIN-WAIT-2,
// TIME-WAIT.
func (ep *Endpoint) Close(now des.Time) {
	if ep.appClosed || ep.state == StateClosed {
		ep.appClosed = true
		return
	}
	ep.appClosed = true
	ep.rcv.shut = true
	if ep.rcv.unread() > 0 || !ep.rcv.ooo.empty() {
		ep.Abort(now)
		return
	}
	ep.CloseWrite(now)
	if ep.state == StateFinWait2 {
		ep.arm(tmFinWait2, now+ep.cfg.FinTimeout)
	}
}

// Abort resets the connection: it sends a RST (once synchronized) and
// closes at once (SO_LINGER 0).
func (ep *Endpoint) Abort(now des.Time) {
	if ep.state == StateClosed {
		return
	}
	if ep.state != StateSynSent && ep.state != StateTimeWait {
		h := ep.eng.newHeader()
		h.Seq, h.Flags = ep.snd.nxt, FlagRST
		if err := ep.sock.SendSegment(ep.rnode, ep.rport, nil, h, h.Len(), false, 0, now); err != nil {
			ep.eng.freeHeader(h)
		}
	}
	ep.finish(ErrAborted, now)
}

// ---------------------------------------------------------------------
// Output.

// output sends one segment: the ACK field, the window and SACK blocks are
// the receiver's current ones; prio is its packet priority (0 for a
// segment without data; see prio.go).
func (ep *Endpoint) output(flags Flags, seq SeqNum, payload []byte, prio uint64, now des.Time) {
	h := ep.eng.newHeader()
	h.Seq, h.Flags = seq, flags
	if flags&FlagSYN != 0 {
		h.MSS = uint16(ep.cfg.MSS)
		h.SACKPermitted = ep.cfg.SACK
	}
	if flags&FlagSYN != 0 {
		h.Window = uint32(ep.rcv.synWindow())
	} else {
		h.Window = uint32(ep.rcv.advertise())
	}
	if flags&FlagACK != 0 {
		h.Ack = ep.rcv.nxt
		if ep.sackOK {
			room := (ep.eng.net.MTU() - 20 - HeaderLen - len(payload) - sackBaseLen) / sackBlockLen
			ep.rcv.fillSACK(h, min(room, MaxSACKBlocks))
		}
	}
	if err := ep.sock.SendSegment(ep.rnode, ep.rport, payload, h, h.Len(), false, prio, now); err != nil {
		ep.eng.freeHeader(h)
		return
	}
	ep.stats.SegsOut++
	if flags&FlagACK != 0 {
		ep.rcv.ackSent()
	}
}

// sendAck sends a pure ACK.
func (ep *Endpoint) sendAck(now des.Time) {
	ep.output(FlagACK, ep.snd.nxt, nil, 0, now)
}

func (ep *Endpoint) sendSyn(now des.Time) {
	if ep.synTries == 0 {
		ep.synAt = now
	} else {
		ep.synRetrans = true
	}
	ep.synTries++
	flags := FlagSYN
	if ep.state == StateSynRcvd {
		flags |= FlagACK
	}
	ep.snd.una, ep.snd.nxt = ep.iss, ep.iss+1
	ep.output(flags, ep.iss, nil, 0, now)
	ep.arm(tmRTO, now+ep.snd.rtt.current())
}

// peerSyn takes the options of the peer's SYN.
func (ep *Endpoint) peerSyn(h *Header) {
	ep.rcv.start(h.Seq)
	if h.MSS > 0 {
		ep.mss = min(ep.cfg.MSS, int(h.MSS))
	}
	ep.sackOK = ep.cfg.SACK && h.SACKPermitted
	ep.snd.wnd = int(h.Window)
	ep.snd.maxWnd = ep.snd.wnd
	ep.snd.wl1 = h.Seq
}

// ---------------------------------------------------------------------
// Input.

func (ep *Endpoint) clientPacket(p *netmodel.Packet, now des.Time) {
	h, ok := p.Hdr.(*Header)
	if !ok {
		ep.sock.Release(p)
		return
	}
	if int(p.Flow.SrcNode) == ep.rnode && p.Flow.SrcPort == ep.rport {
		ep.input(h, p.Payload, now)
	} else if h.Flags&FlagRST == 0 {
		ep.eng.sendReset(ep.sock, int(p.Flow.SrcNode), p.Flow.SrcPort, h, len(p.Payload), now)
	}
	ep.eng.freeHeader(h)
	ep.sock.Release(p)
}

// input processes one arriving segment (RFC 9293 §3.10.7).
func (ep *Endpoint) input(h *Header, data []byte, now des.Time) {
	ep.stats.SegsIn++
	switch ep.state {
	case StateClosed:
		return
	case StateSynSent:
		ep.inputSynSent(h, now)
		return
	case StateSynRcvd:
		if !ep.inputSynRcvd(h, now) {
			return
		}
	}
	r := &ep.rcv
	if h.Flags&FlagRST != 0 {
		// Accept a reset whose sequence number is in the window (RFC 9293
		// §3.10.7.4; RFC 5961's exact-match refinement is not modelled).
		if h.Seq == r.nxt || h.Seq.InRange(r.nxt, r.nxt.Add(max(r.advRight.Sub(r.nxt), 1))) {
			if ep.state == StateTimeWait {
				ep.finish(nil, now)
			} else {
				ep.finish(ErrReset, now)
			}
		}
		return
	}
	if h.Flags&FlagSYN != 0 {
		// A retransmitted SYN-ACK (our ACK was lost) or a stray SYN: answer
		// with an ACK (RFC 5961 §4's challenge ACK).
		ep.sendAck(now)
		return
	}
	if h.Flags&FlagACK == 0 {
		return
	}
	fin := h.Flags&FlagFIN != 0
	if ep.state == StateTimeWait {
		if fin {
			ep.sendAck(now) // the peer retransmitted its FIN
			ep.arm(tmTimeWait, now+ep.cfg.TimeWait)
		}
		return
	}
	if !ep.snd.onAck(h, len(data), now) || ep.state == StateClosed {
		return
	}
	if len(data) > 0 || fin {
		switch ep.state {
		case StateEstablished, StateFinWait1, StateFinWait2:
			if r.shut && len(data) > 0 && h.Seq.Add(len(data)).After(r.nxt) {
				// New data for a closed socket: Linux resets the connection.
				ep.Abort(now)
				return
			}
			r.segment(h.Seq, data, fin, now)
		default:
			r.ackNow = true // the peer's FIN is in: a retransmission
		}
	} else {
		r.segment(h.Seq, nil, false, now)
	}
	if ep.state == StateClosed {
		return
	}
	ep.snd.trySend(now)
	r.ackPolicy(now)
}

func (ep *Endpoint) inputSynSent(h *Header, now des.Time) {
	if h.Flags&FlagACK != 0 && h.Ack != ep.iss+1 {
		if h.Flags&FlagRST == 0 {
			ep.eng.sendReset(ep.sock, ep.rnode, ep.rport, h, 0, now)
		}
		return
	}
	if h.Flags&FlagRST != 0 {
		if h.Flags&FlagACK != 0 {
			ep.finish(ErrRefused, now)
		}
		return
	}
	if h.Flags&(FlagSYN|FlagACK) != FlagSYN|FlagACK {
		return // simultaneous open is not modelled
	}
	ep.peerSyn(h)
	ep.snd.una = ep.iss + 1
	ep.snd.wl2 = h.Ack
	ep.handshakeRTT(now)
	ep.established(now)
	ep.sendAck(now)
	if ep.cb.Established != nil {
		ep.cb.Established(now)
	}
}

// inputSynRcvd handles a segment in SYN-RECEIVED and reports whether it
// completed the handshake (and should be processed further).
func (ep *Endpoint) inputSynRcvd(h *Header, now des.Time) bool {
	if h.Flags&FlagRST != 0 {
		if h.Seq.InRange(ep.rcv.nxt, ep.rcv.nxt.Add(max(ep.rcv.advRight.Sub(ep.rcv.nxt), 1))) {
			ep.finish(ErrReset, now)
		}
		return false
	}
	if h.Flags&FlagSYN != 0 {
		if h.Flags&FlagACK == 0 && h.Seq+1 == ep.rcv.nxt {
			ep.output(FlagSYN|FlagACK, ep.iss, nil, 0, now) // our SYN-ACK was lost
		}
		return false
	}
	if h.Flags&FlagACK == 0 {
		return false
	}
	if h.Ack != ep.iss+1 {
		ep.eng.sendReset(ep.sock, ep.rnode, ep.rport, h, 0, now)
		return false
	}
	if !ep.lp.accept(ep, now) {
		return false // accept queue full: drop the ACK, the client retries
	}
	ep.snd.una = ep.iss + 1
	ep.snd.wnd, ep.snd.wl1, ep.snd.wl2 = int(h.Window), h.Seq, h.Ack
	ep.snd.maxWnd = max(ep.snd.maxWnd, ep.snd.wnd)
	ep.handshakeRTT(now)
	if ep.halfOpen {
		ep.halfOpen = false
		ep.lp.halfOpen--
	}
	ep.established(now)
	return true
}

// handshakeRTT takes the SYN's RTT sample unless it was retransmitted;
// then RFC 6298 §5.7 asks for an RTO of 3 s once data flows.
func (ep *Endpoint) handshakeRTT(now des.Time) {
	if !ep.synRetrans {
		ep.snd.rtt.sample(now - ep.synAt)
	} else {
		ep.snd.rtt.rto = min(max(3*des.Second, ep.snd.rtt.min), ep.snd.rtt.max)
		ep.snd.rtt.backoff = 0
	}
}

func (ep *Endpoint) established(now des.Time) {
	ep.state = StateEstablished
	ep.disarm()
	ep.snd.established(now)
	ep.rcv.established(now)
}

// finAcked runs when the peer acknowledged our FIN.
func (ep *Endpoint) finAcked(now des.Time) {
	switch ep.state {
	case StateFinWait1:
		ep.state = StateFinWait2
		ep.disarm()
		if ep.appClosed {
			ep.arm(tmFinWait2, now+ep.cfg.FinTimeout)
		}
	case StateClosing:
		ep.enterTimeWait(now)
	case StateLastAck:
		ep.finish(nil, now)
	}
}

// finReceived runs when the peer's FIN is reached in sequence.
func (ep *Endpoint) finReceived(now des.Time) {
	switch ep.state {
	case StateEstablished:
		ep.state = StateCloseWait
	case StateFinWait1:
		ep.state = StateClosing
	case StateFinWait2:
		ep.enterTimeWait(now)
	}
	if ep.cb.Readable != nil {
		ep.cb.Readable(now)
	}
}

func (ep *Endpoint) enterTimeWait(now des.Time) {
	ep.state = StateTimeWait
	ep.snd.stopPacing()
	ep.sendAck(now)
	if ep.cfg.TimeWait == 0 {
		ep.finish(nil, now)
		return
	}
	ep.arm(tmTimeWait, now+ep.cfg.TimeWait)
}

// finish moves the connection to CLOSED, releases its port and tells the
// owner.
func (ep *Endpoint) finish(err error, now des.Time) {
	if ep.state == StateClosed {
		return
	}
	ep.state = StateClosed
	if err != nil && ep.err == nil {
		ep.err = err
	}
	ep.eng.closed(ep)
	ep.disarm()
	ep.snd.stopPacing()
	ep.rcv.stopDelack()
	if ep.lp != nil {
		ep.lp.remove(ep)
	} else {
		ep.sock.Close()
	}
	if ep.cb.Closed != nil {
		ep.cb.Closed(err, now)
	}
	if ep.cb.Readable != nil {
		ep.cb.Readable(now)
	}
	if ep.cb.Writable != nil {
		ep.cb.Writable(now)
	}
}

// ---------------------------------------------------------------------
// The protocol timer.

// arm sets the timer to mode at instant at.
func (ep *Endpoint) arm(mode uint8, at des.Time) {
	ep.timerMode = mode
	ep.timerAt = at
	if !ep.timer.Pending() || ep.timer.At() > at || mode != tmRTO {
		ep.eng.sim.Schedule(ep.timer, at)
	}
}

func (ep *Endpoint) disarm() {
	ep.timerMode = tmNone
	ep.eng.sim.Cancel(ep.timer)
}

func (ep *Endpoint) timerFired(now des.Time) {
	if ep.timerMode == tmRTO && now < ep.timerAt {
		ep.eng.sim.Schedule(ep.timer, ep.timerAt) // restarted meanwhile
		return
	}
	mode := ep.timerMode
	ep.timerMode = tmNone
	switch mode {
	case tmRTO:
		switch ep.state {
		case StateSynSent, StateSynRcvd:
			if ep.synTries > ep.cfg.SynRetries {
				ep.finish(ErrTimedOut, now)
				return
			}
			ep.snd.rtt.backoff++
			ep.stats.RTOs++
			ep.sendSyn(now)
		default:
			ep.snd.onRTO(now)
		}
	case tmPersist:
		ep.snd.probe(now)
	case tmTimeWait, tmFinWait2:
		ep.finish(nil, now)
	}
}
