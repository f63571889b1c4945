package queues

import "github.com/uplinksim/uplink/des"

// ShadowFIFO is Shadow 3.x's `fifo` interface discipline
// (experimental.interface_qdisc: fifo, the default). Shadow's interface
// keeps no packets of its own: it keeps a priority queue of the sockets
// that have packets to send, keyed on the priority of each socket's next
// packet, and sends one packet of the first socket each time. A packet's
// priority is a per-host counter taken when the packet is made: for UDP
// when the application sends the datagram, so that the order is the order
// of sends; for Shadow's TCP when the application writes the data (each
// write is cut into segments at once and held until the congestion window
// lets them go), so that a connection written to first keeps the
// interface ahead of connections written to later whenever its window
// allows. Control segments (pure ACKs) have priority 0 and go first.
//
// Here the transports stamp Packet.Prio (netmodel's sockets for UDP, our
// TCP at write time); within a socket packets leave in the order queued,
// and among sockets whose next packets tie (control packets) the lower
// socket id goes first, a deterministic choice where Shadow's heap is
// arbitrary. No limit, no AQM: Shadow's back-pressure lives in the socket
// buffers, which the network model provides.
type ShadowFIFO struct {
	base
	t    sockTable
	heap []int32 // slots of the sockets with packets, a min-heap on their next packet
}

// NewShadowFIFO returns an empty Shadow fifo interface discipline.
func NewShadowFIFO() *ShadowFIFO { return &ShadowFIFO{t: newSockTable()} }

// Sockets is the number of sockets with packets queued.
func (q *ShadowFIFO) Sockets() int { return len(q.heap) }

// Enqueue appends p to its socket's queue; a socket that had nothing
// queued joins the heap. It never drops.
func (q *ShadowFIFO) Enqueue(p *Packet, now des.Time) bool {
	i, fresh := q.t.slotOf(p.Flow.Sock)
	q.accepted(p, now)
	q.t.socks[i].q.push(p)
	if fresh {
		q.heap = append(q.heap, i)
		q.up(len(q.heap) - 1)
	}
	return true
}

// Dequeue sends the next packet of the socket whose next packet has the
// lowest priority.
func (q *ShadowFIFO) Dequeue(now des.Time) *Packet {
	if len(q.heap) == 0 {
		return nil
	}
	i := q.heap[0]
	s := &q.t.socks[i]
	p := s.q.pop()
	if s.q.len() > 0 {
		q.down(0) // its next packet is later than the one just sent
	} else {
		last := len(q.heap) - 1
		q.heap[0] = q.heap[last]
		q.heap = q.heap[:last]
		if last > 0 {
			q.down(0)
		}
		q.t.release(i)
	}
	q.left(p)
	q.sent(p, now)
	return p
}

// less orders two socket slots by their next packets' priorities, then by
// socket id.
func (q *ShadowFIFO) less(a, b int32) bool {
	sa, sb := &q.t.socks[a], &q.t.socks[b]
	pa, pb := sa.q.peek().Prio, sb.q.peek().Prio
	if pa != pb {
		return pa < pb
	}
	return sa.sock < sb.sock
}

func (q *ShadowFIFO) up(j int) {
	for j > 0 {
		parent := (j - 1) / 2
		if !q.less(q.heap[j], q.heap[parent]) {
			return
		}
		q.heap[j], q.heap[parent] = q.heap[parent], q.heap[j]
		j = parent
	}
}

func (q *ShadowFIFO) down(j int) {
	n := len(q.heap)
	for {
		l := 2*j + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && q.less(q.heap[r], q.heap[l]) {
			m = r
		}
		if !q.less(q.heap[m], q.heap[j]) {
			return
		}
		q.heap[j], q.heap[m] = q.heap[m], q.heap[j]
		j = m
	}
}

// sockTable holds a per-socket packet queue for each socket with packets
// queued, in slots that are recycled once a socket has nothing queued.
// Sockets are matched exactly, not hashed.
type sockTable struct {
	slot  map[uint32]int32 // socket -> slot, while it has packets
	socks []rrSock
	free  []int32
}

func newSockTable() sockTable { return sockTable{slot: make(map[uint32]int32)} }

// slotOf returns sock's slot, taking a free one (fresh) if sock has none.
func (t *sockTable) slotOf(sock uint32) (i int32, fresh bool) {
	if i, ok := t.slot[sock]; ok {
		return i, false
	}
	if n := len(t.free); n > 0 {
		i = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		i = int32(len(t.socks))
		t.socks = append(t.socks, rrSock{})
	}
	t.slot[sock] = i
	t.socks[i].sock, t.socks[i].next = sock, -1
	return i, true
}

// release frees an emptied socket's slot.
func (t *sockTable) release(i int32) {
	delete(t.slot, t.socks[i].sock)
	t.free = append(t.free, i)
}

// ShadowRR is Shadow 3.x's `round-robin` interface discipline: a FIFO of
// sockets (FlowKey.Sock); each dequeue pops the head socket, sends its
// oldest packet and pushes the socket back to the tail if it has more.
// A socket with nothing queued is not in the FIFO; its next packet puts it
// at the tail. No limit, no AQM. Sockets are matched exactly, not hashed;
// the state of a socket is recycled once it has nothing queued.
type ShadowRR struct {
	base
	t          sockTable
	head, tail int32 // the FIFO of sockets, linked through rrSock.next
}

type rrSock struct {
	q    ring
	sock uint32
	next int32
}

// NewShadowRR returns an empty round-robin interface discipline.
func NewShadowRR() *ShadowRR {
	return &ShadowRR{t: newSockTable(), head: -1, tail: -1}
}

// Sockets is the number of sockets with packets queued.
func (q *ShadowRR) Sockets() int { return len(q.t.slot) }

// Enqueue appends p to its socket's queue; a socket that had nothing queued
// joins the tail of the socket FIFO. It never drops.
func (q *ShadowRR) Enqueue(p *Packet, now des.Time) bool {
	i, fresh := q.t.slotOf(p.Flow.Sock)
	if fresh {
		q.pushSock(i)
	}
	q.accepted(p, now)
	q.t.socks[i].q.push(p)
	return true
}

// pushSock appends slot i to the socket FIFO.
func (q *ShadowRR) pushSock(i int32) {
	if q.tail < 0 {
		q.head = i
	} else {
		q.t.socks[q.tail].next = i
	}
	q.tail = i
}

// Dequeue sends one packet of the head socket and re-queues the socket at
// the tail if it has more.
func (q *ShadowRR) Dequeue(now des.Time) *Packet {
	i := q.head
	if i < 0 {
		return nil
	}
	s := &q.t.socks[i]
	p := s.q.pop()
	q.head = s.next
	if q.head < 0 {
		q.tail = -1
	}
	s.next = -1
	if s.q.len() > 0 {
		q.pushSock(i)
	} else {
		q.t.release(i)
	}
	q.left(p)
	q.sent(p, now)
	return p
}
