package netmodel

import (
	"errors"
	"fmt"
	"slices"

	"github.com/uplinksim/uplink/des"
)

// Socket buffer limits, as Linux and Shadow apply them (docs/references.md,
// "Shadow" and "Linux namespaces"): a requested size is stored doubled,
// with a floor and a ceiling.
const (
	DefaultSendBuffer = 131072
	DefaultRecvBuffer = 174760
	minSendBuffer     = 4096
	minRecvBuffer     = 2048
	maxSocketBuffer   = 256 << 20
)

// SendMode says what a send does when the socket's send buffer is full.
type SendMode uint8

const (
	// NeverBlock: sends are never held back (simnet); no send-buffer
	// accounting, the queue discipline takes everything.
	NeverBlock SendMode = iota
	// BlockWhenFull: a send waits while the bytes the socket has queued but
	// not yet transmitted reach the send buffer (Shadow, Linux). The space
	// comes back as the uplink's shaper takes the packets.
	BlockWhenFull
)

// ErrWouldBlock is returned by Send when the send buffer is full in
// BlockWhenFull mode; the caller waits for OnWritable and retries.
var ErrWouldBlock = errors.New("netmodel: send buffer full")

// ErrClosed is returned by operations on a closed socket.
var ErrClosed = errors.New("netmodel: socket closed")

// Socket is a bound endpoint on a node: its send-buffer accounting and its
// receive buffer. Transports wrap it; they install OnReadable and
// OnWritable, which the network calls (from model events, with the model
// locked) when a packet arrives and when send-buffer space comes back.
type Socket struct {
	net    *Network
	node   *Node
	id     uint32
	port   uint16
	proto  uint8
	mode   SendMode
	closed bool

	sndbuf, rcvbuf int // bytes, as stored (doubled)
	sndQueued      int // bytes handed to the uplink, not yet transmitted
	sendSeq        uint64
	blocked        bool

	// The GSO unit being filled (Config.GSO): its datagrams were sent at
	// unitAt, their payloads all of the first's size but a shorter last,
	// which closes it; flush sends it on at the next nanosecond.
	unit    *Packet
	unitAt  des.Time
	unitPay int
	flush   *des.Timer

	rq      []*Packet // receive buffer, oldest first
	rqHead  int
	rqBytes int
	// rqReady is the datagrams at the head of rq that the reader may take:
	// all of them, but with a node cpu those it has processed.
	rqReady int
	holding bool // the downlink is held back by this socket's full buffer

	OnReadable func()
	OnWritable func()
	// OnPacket, when set, takes every arriving packet directly instead of
	// the receive buffer (an event-driven transport such as TCP, which
	// keeps its own buffers). The callee owns the packet and must hand it
	// back with Release.
	OnPacket func(p *Packet, now des.Time)
}

// Bind opens a socket of protocol proto (ProtoUDP, ProtoTCP) on port
// (0: the next free ephemeral port).
func (nd *Node) Bind(proto uint8, port uint16, mode SendMode) (*Socket, error) {
	if nd.remote {
		return nil, fmt.Errorf("node %d lives in another partition", nd.id)
	}
	if port == 0 {
		for i := 0; i < 16384; i++ {
			p := nd.nextPort
			nd.nextPort++
			if nd.nextPort == 0 {
				nd.nextPort = 49152
			}
			if nd.socks[p] == nil {
				port = p
				break
			}
		}
		if port == 0 {
			return nil, fmt.Errorf("node %d: no free ephemeral port", nd.id)
		}
	} else if s := nd.socks[port]; s != nil {
		return nil, fmt.Errorf("node %d: port %d already bound", nd.id, port)
	}
	n := nd.net
	s := &Socket{
		net: n, node: nd, id: n.nextSocketID(), port: port, proto: proto, mode: mode,
		sndbuf: DefaultSendBuffer, rcvbuf: DefaultRecvBuffer,
	}
	if int(s.id) >= len(n.socks) {
		n.socks = slices.Grow(n.socks, int(s.id)+1-len(n.socks))[:s.id+1]
	}
	n.socks[s.id] = s
	nd.socks[port] = s
	return s, nil
}

// HandleUnbound makes fn see every packet of protocol proto that arrives
// at a port of nd with no socket of that protocol bound, just before the
// network drops it (still counted as DropNoPort). A TCP stack answers such
// a segment with a reset (RFC 9293 §3.10.7.1), which is how a connection
// attempt to a closed port is refused. fn runs inside the delivering model
// event and must not keep p; nil removes the handler.
func (nd *Node) HandleUnbound(proto uint8, fn func(p *Packet, now des.Time)) {
	if fn == nil {
		delete(nd.unbound, proto)
		return
	}
	if nd.unbound == nil {
		nd.unbound = make(map[uint8]func(*Packet, des.Time))
	}
	nd.unbound[proto] = fn
}

// Node is the socket's node.
func (s *Socket) Node() *Node { return s.node }

// Port is the bound port.
func (s *Socket) Port() uint16 { return s.port }

// SetSendBuffer stores twice the requested size, after capping the request
// at Config.SockBufMax and Config.SndBufMax, with Linux's and Shadow's
// floor and ceiling ([4 096, 256 MiB]).
func (s *Socket) SetSendBuffer(n int) {
	if c := s.net.cfg.SndBufMax; c > 0 {
		n = min(n, c)
	}
	s.sndbuf = min(max(2*s.net.capBuf(n), minSendBuffer), maxSocketBuffer)
}

// SetRecvBuffer stores twice the (capped) requested size, clamped to
// [2 048, 256 MiB].
func (s *Socket) SetRecvBuffer(n int) {
	s.rcvbuf = min(max(2*s.net.capBuf(n), minRecvBuffer), maxSocketBuffer)
}

func (n *Network) capBuf(v int) int {
	if n.cfg.SockBufMax > 0 {
		return min(v, n.cfg.SockBufMax)
	}
	return v
}

// SendBuffer and RecvBuffer are the stored sizes.
func (s *Socket) SendBuffer() int { return s.sndbuf }
func (s *Socket) RecvBuffer() int { return s.rcvbuf }

// SendQueued is the bytes sent but not yet transmitted by the uplink.
func (s *Socket) SendQueued() int { return s.sndQueued }

// Send hands a datagram to the node's uplink at now. Wire size is the
// payload plus IPv4 and UDP headers; a datagram over the MTU is dropped and
// counted (DropMTU), as a router would, and Send returns nil. In
// BlockWhenFull mode Send returns ErrWouldBlock while the bytes already
// queued reach the send buffer (Linux's rule: a send proceeds while the
// queued bytes are below the buffer, so one packet may overshoot).
//
// A datagram with a payload takes the node's next packet priority as it is
// sent (Shadow's rule for UDP; see Priorities). With Config.GSO the
// datagram joins the socket's GSO unit (see batch).
func (s *Socket) Send(dst int, dstPort uint16, payload []byte, now des.Time) error {
	var prio uint64
	if len(payload) > 0 {
		prio = s.Priorities(1)
	}
	p, err := s.packet(dst, dstPort, payload, nil, UDPHeader, false, prio)
	if p == nil {
		return err
	}
	if s.net.cfg.GSO {
		s.batch(p, now)
		return nil
	}
	s.node.send(p, now)
	return nil
}

// The limits of a GSO unit. quic-go on Linux fills one buffer of
// protocol.MaxLargePacketBufferSize (20 KiB) with packets of its current
// size, a shorter one ending the batch, and hands it to one sendmsg with
// UDP_SEGMENT (sendPacketsWithGSO in its connection.go); Linux takes at
// most UDP_MAX_SEGMENTS (64) segments and one IP packet's 65 535 bytes.
const (
	GSOMaxPayload  = 20 << 10
	GSOMaxSegments = 64
	GSOMaxWire     = 65535
)

// batch adds datagram p, sent at now, to the socket's GSO unit. It joins
// the open unit if that was sent in the same instant to the same
// destination, its payload is no larger than the unit's first, no shorter
// datagram has closed the unit, and the limits above hold; otherwise the
// open unit goes on and p opens a new one. A unit that can take no more
// (closed by a shorter datagram, or a full-size one would break a limit)
// is enqueued at once; one that could still grow waits for the end of the
// instant, which on the virtual clock is the next nanosecond: real code's
// writes of an instant all come before any model event of a later one.
// A unit of one datagram travels as that datagram.
func (s *Socket) batch(p *Packet, now des.Time) {
	size := len(p.Payload)
	if u := s.unit; u != nil {
		first := u.Segs[0]
		if s.unitAt == now && p.Flow.DstNode == first.Flow.DstNode && p.Flow.DstPort == first.Flow.DstPort &&
			size <= len(first.Payload) && len(u.Segs) < GSOMaxSegments &&
			s.unitPay+size <= GSOMaxPayload && u.Len+p.Len <= GSOMaxWire {
			u.Segs = append(u.Segs, p)
			u.Len += p.Len
			s.unitPay += size
			if size < len(first.Payload) || len(u.Segs) == GSOMaxSegments ||
				s.unitPay+size > GSOMaxPayload || u.Len+p.Len > GSOMaxWire {
				s.flushUnit(now)
			}
			return
		}
		s.flushUnit(now)
	}
	u := s.net.getUnit()
	u.Segs = append(u.Segs, p)
	u.Len, u.Flow, u.Seq, u.Prio = p.Len, p.Flow, p.Seq, p.Prio
	s.unit, s.unitAt, s.unitPay = u, now, size
	if s.flush == nil {
		s.flush = s.net.sim.NewTimer(s.flushUnit)
	}
	s.net.sim.Schedule(s.flush, now+1)
}

// flushUnit hands the open GSO unit to the uplink.
func (s *Socket) flushUnit(now des.Time) {
	u := s.unit
	if u == nil {
		return
	}
	s.unit = nil
	if s.flush.Pending() {
		s.net.sim.Cancel(s.flush)
	}
	if len(u.Segs) == 1 {
		p := u.Segs[0]
		u.Segs = u.Segs[:0]
		s.net.putUnit(u)
		s.node.send(p, now)
		return
	}
	s.node.send(u, now)
}

// Priorities reserves n consecutive packet priorities of the socket's node
// and returns the first. A priority is the order in which a packet's data
// became sendable on the node (Shadow's per-host packet counter, which
// Shadow's fifo interface discipline sends by: queues.ShadowFIFO). UDP
// takes one per datagram as it is sent; a TCP that models Shadow's takes
// them when the application writes, one per segment the write will make.
func (s *Socket) Priorities(n int) uint64 {
	first := s.node.prio + 1
	s.node.prio += uint64(n)
	return first
}

// SendSegment is Send for any transport: hdr travels with the packet
// (Packet.Hdr, opaque to the network), overhead is the transport header's
// size on the wire (the IPv4 header is added), ect marks the packet
// ECN-capable, prio is its priority (0 for a control packet, which
// Shadow's fifo sends first; see Priorities).
func (s *Socket) SendSegment(dst int, dstPort uint16, payload []byte, hdr any, overhead int, ect bool, prio uint64, now des.Time) error {
	p, err := s.packet(dst, dstPort, payload, hdr, overhead, ect, prio)
	if p != nil {
		s.node.send(p, now)
	}
	return err
}

// packet makes the packet SendSegment sends and charges the send buffer;
// it returns nil with a nil error for a datagram over the MTU (dropped and
// counted).
func (s *Socket) packet(dst int, dstPort uint16, payload []byte, hdr any, overhead int, ect bool, prio uint64) (*Packet, error) {
	if s.closed {
		return nil, ErrClosed
	}
	n := s.net
	if dst < 0 || dst >= len(n.nodes) {
		return nil, fmt.Errorf("netmodel: send to node %d: no such node", dst)
	}
	wire := len(payload) + IPv4Header + overhead
	if wire > n.mtu {
		s.node.Counters.Drops[DropMTU]++
		return nil, nil
	}
	if s.mode == BlockWhenFull {
		if s.sndQueued >= s.sndbuf {
			s.setBlocked(true)
			return nil, ErrWouldBlock
		}
		s.sndQueued += wire
	}
	p := n.getPacket(len(payload))
	copy(p.Payload, payload)
	p.Len = wire
	p.Flow.SrcNode, p.Flow.DstNode = uint32(s.node.id), uint32(dst)
	p.Flow.SrcPort, p.Flow.DstPort = s.port, dstPort
	p.Flow.Proto = s.proto
	p.Flow.Sock = s.id
	p.Hdr, p.ECT, p.Prio = hdr, ect, prio
	s.sendSeq++
	p.Seq = s.sendSeq
	return p, nil
}

// sent returns send-buffer space for a packet the uplink has transmitted
// or dropped.
func (s *Socket) sent(wire int) {
	if s.mode != BlockWhenFull {
		return
	}
	s.sndQueued -= wire
	if s.blocked && s.sndQueued < s.sndbuf {
		s.setBlocked(false)
		if s.OnWritable != nil {
			s.OnWritable()
		}
	}
}

// AwaitSpace is for a transport whose socket has several writers: one has
// just taken the space that came back and others still wait. It reports
// whether a send would proceed now; if not, the socket counts as blocked
// again, so the next departure that frees space calls OnWritable. Without
// it the waiting writers would miss that wake-up: OnWritable fires once
// per blocking, and the writer that took it did not block again.
func (s *Socket) AwaitSpace() bool {
	if s.Writable() || s.closed {
		return true
	}
	s.setBlocked(true)
	return false
}

// setBlocked records whether a writer waits for send-buffer space. While
// one does, the node's departures that free space are visible events, so
// the writer wakes at the right instant; otherwise they run in batches.
func (s *Socket) setBlocked(b bool) {
	if s.blocked == b {
		return
	}
	s.blocked = b
	if b {
		s.node.blocked++
		s.node.first.promote()
	} else {
		s.node.blocked--
	}
}

// deliver puts p in the receive buffer, or drops it if the buffer is full.
// The buffer counts payload bytes. On a node with a cpu the datagram (or
// the packet for OnPacket) is handed on when the cpu has processed it.
func (s *Socket) deliver(p *Packet, now des.Time) bool {
	if s.OnPacket != nil {
		nd := s.node
		nd.Counters.RecvPackets++
		nd.Counters.RecvBytes += uint64(p.Len)
		if nd.tap != nil {
			nd.tap(p, now, false)
		}
		if nd.cpu != nil {
			nd.cpu.received(s, p, false, now)
			return true
		}
		s.OnPacket(p, now)
		return true
	}
	cfg := &s.net.cfg
	if cfg.RecvSlots > 0 && len(s.rq)-s.rqHead >= cfg.RecvSlots {
		if cfg.RecvBlock {
			s.holding = true
			return false
		}
		s.node.drop(p, DropSockBuf)
		return true
	}
	if s.rqBytes+len(p.Payload) > s.rcvbuf {
		s.node.drop(p, DropSockBuf)
		return true
	}
	nd := s.node
	nd.Counters.RecvPackets++
	nd.Counters.RecvBytes += uint64(p.Len)
	if nd.tap != nil {
		nd.tap(p, now, false)
	}
	s.rq = append(s.rq, p)
	s.rqBytes += len(p.Payload)
	if nd.cpu != nil {
		nd.cpu.received(s, p, true, now)
		return true
	}
	s.rqReady++
	if s.rqReady == 1 && s.OnReadable != nil {
		s.OnReadable()
	}
	return true
}

// release lets a downlink this socket held back go on.
func (s *Socket) release() {
	if s.holding {
		s.holding = false
		s.node.down.resume(s.net.sim.Now())
	}
}

// Recv copies the oldest datagram into buf and reports its length and
// source; ok is false when the receive buffer is empty, or, on a node
// with a cpu (NodeConfig.CPU), when the cpu has not yet processed its
// oldest datagram. A datagram longer than buf is truncated, as with a
// real UDP socket.
func (s *Socket) Recv(buf []byte) (n int, src int, srcPort uint16, ok bool) {
	if s.rqReady == 0 {
		return 0, 0, 0, false
	}
	s.rqReady--
	p := s.rq[s.rqHead]
	s.rq[s.rqHead] = nil
	s.rqHead++
	if s.rqHead == len(s.rq) {
		s.rq, s.rqHead = s.rq[:0], 0
	} else if s.rqHead >= 256 && 2*s.rqHead >= len(s.rq) {
		k := copy(s.rq, s.rq[s.rqHead:])
		clear(s.rq[k:])
		s.rq, s.rqHead = s.rq[:k], 0
	}
	s.rqBytes -= len(p.Payload)
	n = copy(buf, p.Payload)
	src, srcPort = int(p.Flow.SrcNode), p.Flow.SrcPort
	s.net.putPacket(p)
	s.release()
	return n, src, srcPort, true
}

// Release returns a packet taken through OnPacket to the network's pool.
func (s *Socket) Release(p *Packet) { s.net.putPacket(p) }

// Unblock makes every socket's sends proceed from now on, whatever its send
// buffer holds, and wakes the writers that wait for space. A teardown calls
// it: closing a connection whose writer waits for its uplink to drain
// would wait on virtual time, and real code that meanwhile waits on a
// mutex (go-libp2p's connection close) keeps a synctest bubble's clock
// from advancing, so the close would never finish.
func (n *Network) Unblock() {
	for _, s := range n.socks {
		if s == nil || s.mode != BlockWhenFull {
			continue
		}
		s.mode = NeverBlock
		if s.blocked {
			s.setBlocked(false)
			if s.OnWritable != nil {
				s.OnWritable()
			}
		}
	}
}

// Readable reports whether Recv would return a datagram.
func (s *Socket) Readable() bool { return s.rqReady > 0 }

// Writable reports whether a send would proceed now.
func (s *Socket) Writable() bool {
	return s.mode != BlockWhenFull || s.sndQueued < s.sndbuf
}

// Closed reports whether Close was called.
func (s *Socket) Closed() bool { return s.closed }

// Close unbinds the socket and drops its receive buffer. Packets it already
// handed to the uplink still go out.
func (s *Socket) Close() {
	if s.closed {
		return
	}
	if s.unit != nil {
		s.flushUnit(max(s.unitAt, s.net.sim.Now()))
	}
	s.closed = true
	s.setBlocked(false)
	delete(s.node.socks, s.port)
	for s.rqHead < len(s.rq) {
		s.net.putPacket(s.rq[s.rqHead])
		s.rq[s.rqHead] = nil
		s.rqHead++
	}
	s.rq, s.rqHead, s.rqBytes, s.rqReady = nil, 0, 0, 0
	s.release()
}
