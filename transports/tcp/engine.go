package tcp

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
)

// Engine is the event-driven TCP layer on a netmodel.Network. Every
// connection's protocol runs in model events (packet arrivals, timers) or
// in calls made with the model locked; the engine starts no goroutines and
// takes no locks. Use it directly from model-level code (a des.Sim driven
// by hand), or through Stack, which gives real goroutine code net.Conns.
type Engine struct {
	net     *netmodel.Network
	sim     *des.Sim
	cfg     Config
	iss     *rand.Rand
	hdrs    []*Header
	scratch []byte
	hooked  []bool
	open    [][]*Endpoint // each node's connections not yet closed, oldest first
}

// NewEngine returns an engine on n with profile cfg.
func NewEngine(n *netmodel.Network, cfg Config) (*Engine, error) {
	if err := cfg.validate(n.MTU()); err != nil {
		return nil, err
	}
	return &Engine{
		net:     n,
		sim:     n.Sim(),
		cfg:     cfg,
		iss:     des.NewStreams(cfg.Seed).Stream("tcp/iss"),
		scratch: make([]byte, n.MTU()),
	}, nil
}

// Config is the engine's profile.
func (e *Engine) Config() Config { return e.cfg }

// Network is the engine's network.
func (e *Engine) Network() *netmodel.Network { return e.net }

// AppendConns appends node's connections not yet closed (those in
// their handshake and in TIME-WAIT included), in the order they were
// opened, to dst. It reads the model: call it with the model locked.
func (e *Engine) AppendConns(dst []*Endpoint, node int) []*Endpoint {
	if node < 0 || node >= len(e.open) {
		return dst
	}
	return append(dst, e.open[node]...)
}

// opened and closed keep the lists of AppendConns.
func (e *Engine) opened(ep *Endpoint) {
	for len(e.open) <= ep.node {
		e.open = append(e.open, nil)
	}
	e.open[ep.node] = append(e.open[ep.node], ep)
}

func (e *Engine) closed(ep *Endpoint) {
	if i := slices.Index(e.open[ep.node], ep); i >= 0 {
		e.open[ep.node] = slices.Delete(e.open[ep.node], i, i+1)
	}
}

func (e *Engine) newHeader() *Header {
	if k := len(e.hdrs); k > 0 {
		h := e.hdrs[k-1]
		e.hdrs = e.hdrs[:k-1]
		*h = Header{}
		return h
	}
	return &Header{}
}

func (e *Engine) freeHeader(h *Header) { e.hdrs = append(e.hdrs, h) }

func (e *Engine) checkNode(i int) error {
	if i < 0 || i >= len(e.net.Nodes()) {
		return fmt.Errorf("tcp: node %d: no such node (the network has %d)", i, len(e.net.Nodes()))
	}
	return nil
}

// hook makes node i answer segments to ports without a socket with a
// reset (RFC 9293 §3.10.7.1), which is how a refused connection shows.
func (e *Engine) hook(i int) {
	for len(e.hooked) <= i {
		e.hooked = append(e.hooked, false)
	}
	if e.hooked[i] {
		return
	}
	e.hooked[i] = true
	nd := e.net.Node(i)
	nd.HandleUnbound(netmodel.ProtoTCP, func(p *netmodel.Packet, now des.Time) {
		h, ok := p.Hdr.(*Header)
		if !ok {
			return
		}
		defer e.freeHeader(h)
		if h.Flags&FlagRST != 0 {
			return // never answer a reset
		}
		// Answer from the refused port itself, through a socket bound for
		// the one segment.
		s, err := nd.Bind(netmodel.ProtoTCP, p.Flow.DstPort, netmodel.NeverBlock)
		if err != nil {
			return // the port is taken by another protocol
		}
		e.sendReset(s, int(p.Flow.SrcNode), p.Flow.SrcPort, h, len(p.Payload), now)
		s.Close()
	})
}

// sendReset answers segment in (of payload length n) with a reset from
// socket s (RFC 9293 §3.10.7.1).
func (e *Engine) sendReset(s *netmodel.Socket, dst int, dstPort uint16, in *Header, n int, now des.Time) {
	h := e.newHeader()
	if in.Flags&FlagACK != 0 {
		h.Seq, h.Flags = in.Ack, FlagRST
	} else {
		l := n
		if in.Flags&FlagSYN != 0 {
			l++
		}
		if in.Flags&FlagFIN != 0 {
			l++
		}
		h.Ack, h.Flags = in.Seq.Add(l), FlagRST|FlagACK
	}
	if err := s.SendSegment(dst, dstPort, nil, h, h.Len(), false, 0, now); err != nil {
		e.freeHeader(h)
	}
}

// Connect opens a connection from node to (dst, port) at now: it binds an
// ephemeral port on node and sends the SYN. The endpoint reports the
// outcome through its Established or Closed callback; set them before the
// model runs on.
func (e *Engine) Connect(node, dst int, port uint16, now des.Time) (*Endpoint, error) {
	if err := e.checkNode(node); err != nil {
		return nil, err
	}
	if err := e.checkNode(dst); err != nil {
		return nil, err
	}
	e.hook(node)
	e.hook(dst)
	s, err := e.net.Node(node).Bind(netmodel.ProtoTCP, 0, netmodel.NeverBlock)
	if err != nil {
		return nil, fmt.Errorf("tcp: connect from node %d: %w", node, err)
	}
	ep := e.newEndpoint(s, nil, node, dst, port)
	s.OnPacket = ep.clientPacket
	ep.state = StateSynSent
	ep.sendSyn(now)
	return ep, nil
}

// Listen binds port on node and accepts connections. accept is called for
// each connection completing its handshake; it returns false to refuse it
// for now (a full accept queue: the handshake's last ACK is dropped and the
// client retries, as Linux does).
func (e *Engine) Listen(node int, port uint16, accept func(ep *Endpoint, now des.Time) bool) (*ListenPort, error) {
	if err := e.checkNode(node); err != nil {
		return nil, err
	}
	if accept == nil {
		return nil, fmt.Errorf("tcp: listen on node %d port %d: no accept function", node, port)
	}
	e.hook(node)
	s, err := e.net.Node(node).Bind(netmodel.ProtoTCP, port, netmodel.NeverBlock)
	if err != nil {
		return nil, fmt.Errorf("tcp: listen: %w", err)
	}
	lp := &ListenPort{eng: e, sock: s, node: node, port: s.Port(), conns: make(map[uint64]*Endpoint), accept: accept, open: true}
	s.OnPacket = lp.packet
	return lp, nil
}

// ListenPort is a listening port: one netmodel socket shared by the
// listener and every connection it accepted, which it tells apart by the
// remote (node, port).
type ListenPort struct {
	eng      *Engine
	sock     *netmodel.Socket
	node     int
	port     uint16
	conns    map[uint64]*Endpoint
	accept   func(*Endpoint, des.Time) bool
	open     bool
	halfOpen int
}

// Port is the listening port.
func (lp *ListenPort) Port() uint16 { return lp.port }

// Node is the listening node.
func (lp *ListenPort) Node() int { return lp.node }

func connKey(node uint32, port uint16) uint64 { return uint64(node)<<16 | uint64(port) }

func (lp *ListenPort) packet(p *netmodel.Packet, now des.Time) {
	h, ok := p.Hdr.(*Header)
	if !ok {
		lp.sock.Release(p)
		return
	}
	key := connKey(p.Flow.SrcNode, p.Flow.SrcPort)
	if ep := lp.conns[key]; ep != nil {
		ep.input(h, p.Payload, now)
	} else if h.Flags&(FlagSYN|FlagACK|FlagRST) == FlagSYN && lp.open && lp.halfOpen < lp.eng.cfg.Backlog {
		lp.synReceived(h, int(p.Flow.SrcNode), p.Flow.SrcPort, key, now)
	} else if h.Flags&FlagRST == 0 && !(h.Flags&FlagSYN != 0 && lp.open) {
		// A segment for no connection: reset it. A SYN over the backlog
		// is dropped silently instead (Linux), so the client retries.
		lp.eng.sendReset(lp.sock, int(p.Flow.SrcNode), p.Flow.SrcPort, h, len(p.Payload), now)
	}
	lp.eng.freeHeader(h)
	lp.sock.Release(p)
}

func (lp *ListenPort) synReceived(h *Header, src int, srcPort uint16, key uint64, now des.Time) {
	e := lp.eng
	ep := e.newEndpoint(lp.sock, lp, lp.node, src, srcPort)
	lp.conns[key] = ep
	lp.halfOpen++
	ep.halfOpen = true
	ep.state = StateSynRcvd
	ep.peerSyn(h)
	ep.sendSyn(now)
}

// remove forgets a closed connection.
func (lp *ListenPort) remove(ep *Endpoint) {
	delete(lp.conns, connKey(uint32(ep.rnode), ep.rport))
	if ep.halfOpen {
		ep.halfOpen = false
		lp.halfOpen--
	}
	if !lp.open && len(lp.conns) == 0 {
		lp.sock.Close()
	}
}

// Close stops listening at now. Connections still in their handshake are
// reset; those already accepted carry on on the shared port, which is
// unbound when the last of them closes.
func (lp *ListenPort) Close(now des.Time) {
	if !lp.open {
		return
	}
	lp.open = false
	var half []uint64
	for k, ep := range lp.conns {
		if ep.state == StateSynRcvd {
			half = append(half, k)
		}
	}
	slices.Sort(half) // a deterministic order of the resets
	for _, k := range half {
		lp.conns[k].Abort(now)
	}
	if len(lp.conns) == 0 {
		lp.sock.Close()
	}
}
