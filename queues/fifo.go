package queues

import (
	"fmt"

	"github.com/uplinksim/uplink/des"
)

// Linux defaults for the FIFO leaves.
const (
	// DefaultPfifoLimit is txqueuelen, the default pfifo packet limit.
	DefaultPfifoLimit = 1000
	// DefaultBfifoLimit is bfifo's default byte limit (txqueuelen × 1 514).
	DefaultBfifoLimit = 1000 * 1514
)

// FIFO is a first-in first-out queue with tail drop. A limit of 0 means
// none: PacketLimit bounds packets (pfifo), ByteLimit bounds wire bytes
// (bfifo, a packet is dropped if backlog + its length exceeds the limit);
// with both zero it is unlimited (Shadow's interface order, where the
// back-pressure lives in socket buffers).
type FIFO struct {
	base
	packetLimit, byteLimit int
	ring                   ring
}

// NewFIFO returns a FIFO with the given limits (0: no limit of that kind).
// Negative limits are an error.
func NewFIFO(packetLimit, byteLimit int) (*FIFO, error) {
	if packetLimit < 0 || byteLimit < 0 {
		return nil, fmt.Errorf("fifo: negative limit (packets %d, bytes %d); use 0 for no limit", packetLimit, byteLimit)
	}
	return &FIFO{packetLimit: packetLimit, byteLimit: byteLimit}, nil
}

// NewPfifo returns Linux's pfifo (net/sched/sch_fifo.c): tail drop once the
// queue holds limit packets. The limit must be at least 1; Linux's default
// is DefaultPfifoLimit (txqueuelen).
func NewPfifo(limit int) (*FIFO, error) {
	if limit < 1 {
		return nil, fmt.Errorf("pfifo: limit %d; the limit must be at least 1 packet (default %d; use an unlimited fifo for no limit)", limit, DefaultPfifoLimit)
	}
	return &FIFO{packetLimit: limit}, nil
}

// NewBfifo returns Linux's bfifo (net/sched/sch_fifo.c): a packet is
// dropped if the byte backlog plus its length would exceed limit. The limit
// must be at least 1 byte; Linux's default is DefaultBfifoLimit.
func NewBfifo(limit int) (*FIFO, error) {
	if limit < 1 {
		return nil, fmt.Errorf("bfifo: limit %d; the limit must be at least 1 byte (default %d; use an unlimited fifo for no limit)", limit, DefaultBfifoLimit)
	}
	return &FIFO{byteLimit: limit}, nil
}

// NewUnlimitedFIFO returns a FIFO without limits: packets leave in the
// order they were queued. Shadow's `fifo` (NewShadowFIFO) orders by when
// their data became sendable instead, which differs for TCP.
func NewUnlimitedFIFO() *FIFO { return &FIFO{} }

// Limits returns the packet and byte limits (0: none).
func (q *FIFO) Limits() (packets, bytes int) { return q.packetLimit, q.byteLimit }

// Enqueue appends p unless a limit would be exceeded (tail drop). A refused
// packet is counted in Drops[DropOverlimit] and Refused, not in Enqueued.
func (q *FIFO) Enqueue(p *Packet, now des.Time) bool {
	if (q.packetLimit > 0 && q.n >= q.packetLimit) ||
		(q.byteLimit > 0 && q.bytes+p.Len > q.byteLimit) {
		q.refused(p, DropOverlimit, now)
		return false
	}
	q.accepted(p, now)
	q.ring.push(p)
	return true
}

// Dequeue removes the oldest packet.
func (q *FIFO) Dequeue(now des.Time) *Packet {
	p := q.ring.pop()
	if p == nil {
		return nil
	}
	q.left(p)
	q.sent(p, now)
	return p
}

// ring is a growable circular buffer of packets, the FIFO building block of
// every discipline. It reuses its storage, so steady state allocates nothing.
type ring struct {
	buf        []*Packet
	head, size int
}

func (r *ring) len() int { return r.size }

func (r *ring) push(p *Packet) {
	if r.size == len(r.buf) {
		n := 2 * len(r.buf)
		if n == 0 {
			n = 16
		}
		nb := make([]*Packet, n)
		for i := 0; i < r.size; i++ {
			nb[i] = r.buf[(r.head+i)%len(r.buf)]
		}
		r.buf, r.head = nb, 0
	}
	r.buf[(r.head+r.size)%len(r.buf)] = p
	r.size++
}

func (r *ring) peek() *Packet {
	if r.size == 0 {
		return nil
	}
	return r.buf[r.head]
}

func (r *ring) pop() *Packet {
	if r.size == 0 {
		return nil
	}
	p := r.buf[r.head]
	r.buf[r.head] = nil
	r.head++
	if r.head == len(r.buf) {
		r.head = 0
	}
	r.size--
	return p
}
