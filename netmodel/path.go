package netmodel

import (
	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/queues"
)

// Path is one direction of a node's access link: a queue discipline whose
// head is handed to a shaper, one packet at a time. The packet in the
// shaper has been dequeued; it leaves at the instant the shaper computes,
// and then the next one is dequeued. Dequeuing when the line becomes free
// is how a NIC pulls from a Linux qdisc, so sojourn times and dequeue-time
// AQM decisions happen at the right instants.
type Path struct {
	net    *Network
	node   *Node
	q      queues.Qdisc
	shaper *Shaper
	inTx   *Packet
	// egress: an uplink stage, whose departures reach real code no sooner
	// than the minimum latency; freesSndbuf: the first egress stage, whose
	// departures (and drops) return send-buffer space.
	egress, freesSndbuf bool
	stalled             bool // inTx could not be delivered: a full socket blocks the link
	timer               *des.Timer
	out                 func(p *Packet, now des.Time) bool
}

func (n *Network) newPath(nd *Node, c LinkConfig, out func(*Packet, des.Time) bool) (*Path, error) {
	q := c.Qdisc
	if q == nil {
		var err error
		if q, err = queues.NewFIFO(0, 0); err != nil {
			return nil, err
		}
	}
	sh, err := newShaper(c.Shaper, n.mtu)
	if err != nil {
		return nil, err
	}
	p := &Path{net: n, node: nd, q: q, shaper: sh, out: out}
	p.timer = n.sim.NewTimer(p.depart)
	q.SetDropHook(func(pk *Packet, _ queues.DropReason, _ des.Time) {
		p.dropped(pk)
	})
	return p, nil
}

// Qdisc is the path's queue discipline.
func (p *Path) Qdisc() queues.Qdisc { return p.q }

// Shaper is the path's shaper.
func (p *Path) Shaper() *Shaper { return p.shaper }

// Busy reports whether a packet is in the shaper.
func (p *Path) Busy() bool { return p.inTx != nil }

// enqueue offers pk to the queue discipline and starts the line if idle.
func (p *Path) enqueue(pk *Packet, now des.Time) {
	if !p.q.Enqueue(pk, now) {
		return // the drop hook has counted it
	}
	if p.inTx == nil {
		p.next(now)
	}
}

// next dequeues the head packet and schedules its departure.
func (p *Path) next(now des.Time) {
	pk := p.q.Dequeue(now)
	if pk == nil {
		return
	}
	p.inTx = pk
	p.timer.SetClass(p.class())
	p.net.sim.Schedule(p.timer, p.shaper.Departure(pk.Len, now, p.net.mtu))
}

// class is the lookahead class of the path's next departure. A departure
// from an uplink reaches real code no sooner than the minimum latency
// later, unless it returns send-buffer space a blocked writer waits for.
func (p *Path) class() uint8 {
	if p.egress && !(p.freesSndbuf && p.node.blocked > 0) {
		return des.Hidden
	}
	return des.Visible
}

// promote makes a pending hidden departure visible, at the same instant,
// when a writer on the node has just blocked and the departure may free its
// space.
func (p *Path) promote() {
	if p.timer.Pending() && p.class() == des.Visible {
		at := p.timer.At()
		p.net.sim.Cancel(p.timer)
		p.timer.SetClass(des.Visible)
		p.net.sim.Schedule(p.timer, at)
	}
}

func (p *Path) depart(now des.Time) {
	if !p.out(p.inTx, now) {
		p.stalled = true
		return
	}
	p.inTx = nil
	p.next(now)
}

// resume retries a stalled delivery once the socket has room.
func (p *Path) resume(now des.Time) {
	if p.stalled {
		p.stalled = false
		p.depart(now)
	}
}

// dropped handles a packet the queue discipline dropped: an egress drop
// returns the socket's send-buffer space.
func (p *Path) dropped(pk *Packet) {
	if p.freesSndbuf {
		p.net.sndbufFreed(pk)
	}
	p.node.drop(pk, DropQueue)
}

// pipe carries packets from one node to another across the one-way
// latency, in arrival order, with one pending event for its head. With a
// fixed latency per pair, arrivals come in departure order and the pipe is
// a FIFO; a later packet that would arrive earlier (a latency model that
// varies per packet) is inserted in order.
//
// With Config.NetemLimit the pipe also passes netem's queue (q), its own
// or, with Config.NetemShared, the one its reverse pipe passes too.
type pipe struct {
	net   *Network
	to    *Node
	buf   []pipeSlot
	head  int
	timer *des.Timer
	q     *netemQueue
}

// netemQueue is netem's queue in front of one pipe, or of both pipes of a
// pair (Config.NetemShared): held lists the arrival instants of the
// packets admitted and not yet due, soonest first, as of the last
// departure. A packet that leaves the sender's uplink at sent finds those
// due by then gone and the rest held; when as many as the limit remain it
// is dropped at the tail. held is kept apart from the pipe's buf because a
// crossing from another partition is pushed at the end of the window,
// after some of what held at its departure has already arrived: counting
// by instants gives the same decision however the nodes are split.
type netemQueue struct {
	held     []des.Time
	heldHead int
}

type pipeSlot struct {
	at des.Time
	p  *Packet
}

func (n *Network) pipe(from, to int) *pipe {
	k := uint64(from)<<32 | uint64(to)
	pp := n.pipes[k]
	if pp == nil {
		pp = &pipe{net: n, to: n.nodes[to]}
		pp.timer = n.sim.NewTimer(pp.arrive)
		// Simultaneous arrivals go by sending node, whenever (and in
		// whichever partition) they were scheduled.
		pp.timer.SetOrder(from + 1)
		if n.cfg.NetemLimit > 0 {
			qk := k
			if n.cfg.NetemShared {
				qk = uint64(min(from, to))<<32 | uint64(max(from, to))
			}
			if pp.q = n.netems[qk]; pp.q == nil {
				pp.q = &netemQueue{}
				n.netems[qk] = pp.q
			}
		}
		n.pipes[k] = pp
	}
	return pp
}

// push puts p, which left the sender's uplink at sent, in the pipe to
// arrive at at.
func (pp *pipe) push(p *Packet, at, sent des.Time) {
	if pp.q != nil && !pp.q.admit(at, sent, pp.net.cfg.NetemLimit) {
		pp.to.drop(p, DropNetem)
		return
	}
	if pp.head > 0 && pp.head == len(pp.buf) {
		pp.buf, pp.head = pp.buf[:0], 0
	}
	i := len(pp.buf)
	pp.buf = append(pp.buf, pipeSlot{at, p})
	for i > pp.head && pp.buf[i-1].at > at { // out of order: insert
		pp.buf[i], pp.buf[i-1] = pp.buf[i-1], pp.buf[i]
		i--
	}
	if i == pp.head {
		pp.net.sim.Schedule(pp.timer, at)
	}
}

func (pp *pipe) arrive(now des.Time) {
	s := pp.buf[pp.head]
	pp.buf[pp.head] = pipeSlot{}
	pp.head++
	switch {
	case pp.head == len(pp.buf):
		pp.buf, pp.head = pp.buf[:0], 0
	case pp.head >= 1024 && 2*pp.head >= len(pp.buf):
		n := copy(pp.buf, pp.buf[pp.head:])
		clear(pp.buf[n:])
		pp.buf, pp.head = pp.buf[:n], 0
	}
	if pp.head < len(pp.buf) {
		pp.net.sim.Schedule(pp.timer, pp.buf[pp.head].at)
	}
	pp.to.down.enqueue(s.p, now)
}

// admit applies netem's limit to a packet that left the sender at sent and
// arrives at at: the packets admitted earlier whose arrival is still after
// sent are in netem's queue; if they reach limit, the packet is refused
// (netem_enqueue's tail drop). Departures through one queue come in order
// of sent (one pipe's, or a shared queue's two pipes' in one partition),
// so those due by sent leave for good.
func (q *netemQueue) admit(at, sent des.Time, limit int) bool {
	for q.heldHead < len(q.held) && q.held[q.heldHead] <= sent {
		q.heldHead++
	}
	if q.heldHead == len(q.held) {
		q.held, q.heldHead = q.held[:0], 0
	} else if q.heldHead >= 1024 && 2*q.heldHead >= len(q.held) {
		n := copy(q.held, q.held[q.heldHead:])
		q.held, q.heldHead = q.held[:n], 0
	}
	if len(q.held)-q.heldHead >= limit {
		return false
	}
	i := len(q.held)
	q.held = append(q.held, at)
	for i > q.heldHead && q.held[i-1] > at { // a latency that varies per packet
		q.held[i], q.held[i-1] = q.held[i-1], q.held[i]
		i--
	}
	return true
}
