package queues

import "github.com/uplinksim/uplink/des"

// NewShadowFIFO returns Shadow 3.x's `fifo` interface discipline
// (experimental.interface_qdisc: fifo, the default). Shadow keeps a heap of
// sockets keyed on the order in which each socket's next packet became
// sendable, which sends packets in the global order they became sendable:
// an unlimited FIFO. Shadow has no packet limit and no AQM at the
// interface; its back-pressure lives in the socket buffers, which the
// network model must provide.
func NewShadowFIFO() *FIFO { return NewUnlimitedFIFO() }

// ShadowRR is Shadow 3.x's `round-robin` interface discipline: a FIFO of
// sockets (FlowKey.Sock); each dequeue pops the head socket, sends its
// oldest packet and pushes the socket back to the tail if it has more.
// A socket with nothing queued is not in the FIFO; its next packet puts it
// at the tail. No limit, no AQM. Sockets are matched exactly, not hashed;
// the state of a socket is recycled once it has nothing queued.
type ShadowRR struct {
	base
	slot       map[uint32]int32 // socket -> index in socks, while it has packets
	socks      []rrSock
	free       []int32
	head, tail int32 // the FIFO of sockets, linked through rrSock.next
}

type rrSock struct {
	q    ring
	sock uint32
	next int32
}

// NewShadowRR returns an empty round-robin interface discipline.
func NewShadowRR() *ShadowRR {
	return &ShadowRR{slot: make(map[uint32]int32), head: -1, tail: -1}
}

// Sockets is the number of sockets with packets queued.
func (q *ShadowRR) Sockets() int { return len(q.slot) }

// Enqueue appends p to its socket's queue; a socket that had nothing queued
// joins the tail of the socket FIFO. It never drops.
func (q *ShadowRR) Enqueue(p *Packet, now des.Time) bool {
	i, ok := q.slot[p.Flow.Sock]
	if !ok {
		if n := len(q.free); n > 0 {
			i = q.free[n-1]
			q.free = q.free[:n-1]
		} else {
			i = int32(len(q.socks))
			q.socks = append(q.socks, rrSock{})
		}
		q.slot[p.Flow.Sock] = i
		s := &q.socks[i]
		s.sock, s.next = p.Flow.Sock, -1
		if q.tail < 0 {
			q.head = i
		} else {
			q.socks[q.tail].next = i
		}
		q.tail = i
	}
	q.accepted(p, now)
	q.socks[i].q.push(p)
	return true
}

// Dequeue sends one packet of the head socket and re-queues the socket at
// the tail if it has more.
func (q *ShadowRR) Dequeue(now des.Time) *Packet {
	i := q.head
	if i < 0 {
		return nil
	}
	s := &q.socks[i]
	p := s.q.pop()
	q.head = s.next
	if q.head < 0 {
		q.tail = -1
	}
	s.next = -1
	if s.q.len() > 0 {
		if q.tail < 0 {
			q.head = i
		} else {
			q.socks[q.tail].next = i
		}
		q.tail = i
	} else {
		delete(q.slot, s.sock)
		q.free = append(q.free, i)
	}
	q.left(p)
	q.sent(p, now)
	return p
}
