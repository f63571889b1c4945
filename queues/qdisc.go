// Package queues holds the queue disciplines of uplink, one per file, behind
// the small Qdisc interface. A discipline only orders, delays and drops
// packets: it never touches time itself; the caller passes the virtual
// instant of every operation. Disciplines are not safe for concurrent use;
// the network model calls them from the event core, one at a time.
package queues

import (
	"fmt"
	"math"

	"github.com/uplinksim/uplink/des"
)

// FlowKey carries what a classifier may look at: the 5-tuple, in the form
// the network model uses (node numbers stand for IPv4 addresses), and the
// sending socket, for disciplines that schedule sockets rather than packets.
type FlowKey struct {
	SrcNode, DstNode uint32
	SrcPort, DstPort uint16
	Proto            uint8
	Sock             uint32 // the sending socket, unique in a network
}

// Packet is the unit every discipline holds. Len is the size on the wire
// (IP header included), which is what limits, quanta and shapers count.
// Payload and Hdr are opaque to the queues.
type Packet struct {
	Len      int
	Flow     FlowKey
	Enqueued des.Time // set by the discipline on enqueue
	ECT      bool     // the sender marked the packet ECN-capable
	CE       bool     // congestion experienced, set by an AQM instead of a drop
	Payload  []byte
	Hdr      any // transport header for transports that need one (TCP)
	Seq      uint64
	// Prio is Shadow's packet priority: the order in which the packet's
	// data became sendable on its node (a per-node counter), 0 for a
	// control packet. Only ShadowFIFO reads it.
	Prio uint64
	// Segs, when not nil, makes the packet a GSO unit: the datagrams it
	// carries, in order, which the network splits apart at delivery; Len
	// is the sum of theirs. A discipline treats the unit as one packet.
	Segs []*Packet
}

// DropReason says why a discipline dropped a packet.
type DropReason uint8

const (
	// DropOverlimit: the packet or byte limit was reached (tail drop).
	DropOverlimit DropReason = iota
	// DropAQM: an active queue management rule (CoDel, PIE) dropped it.
	DropAQM
	// DropBatch: FQ-CoDel's fat-flow batch drop on overflow.
	DropBatch
	// NumDropReasons is the number of reasons; it sizes per-reason arrays.
	NumDropReasons
)

func (r DropReason) String() string {
	switch r {
	case DropOverlimit:
		return "overlimit"
	case DropAQM:
		return "aqm"
	case DropBatch:
		return "batch"
	}
	return fmt.Sprintf("reason(%d)", uint8(r))
}

// DropFunc receives every packet a discipline drops, whether at enqueue or
// at dequeue. The packet is the caller's again once the call returns.
type DropFunc func(p *Packet, reason DropReason, now des.Time)

// Qdisc is a queue discipline.
type Qdisc interface {
	// Enqueue offers p at now. It reports whether p itself was accepted;
	// p and any other packet dropped to make room go to the drop hook.
	Enqueue(p *Packet, now des.Time) bool
	// Dequeue removes and returns the next packet to send at now, or nil
	// when the discipline has nothing to send. Packets dropped on the way
	// (AQM at dequeue) go to the drop hook.
	Dequeue(now des.Time) *Packet
	// Len and Bytes are the backlog in packets and in wire bytes.
	Len() int
	Bytes() int
	// Stats returns the discipline's counters; the pointer stays valid.
	Stats() *Stats
	// SetDropHook installs the drop hook (nil: drops are only counted).
	SetDropHook(DropFunc)
}

// Stats are the counters every discipline keeps.
//
// Enqueued counts packets accepted into the backlog; a packet dropped on
// arrival without ever entering the backlog (tail drop at a limit, PIE's
// early drop) is counted in Drops and in Refused, never in Enqueued. A
// packet that was accepted and later dropped from the backlog (CoDel at
// dequeue, FQ-CoDel's fat-flow batch, which may take the arriving packet
// itself) is counted in Enqueued and in Drops, not in Refused. Hence, at
// every instant between operations,
//
//	Enqueued      == Dequeued      + (Dropped()      - Refused)      + Len()
//	EnqueuedBytes == DequeuedBytes + (DroppedBytes() - RefusedBytes) + Bytes()
//
// and the packets offered are Enqueued + Refused. CheckConservation tests
// both identities. CE-marked packets are delivered, so CEMarks is not a drop.
type Stats struct {
	Enqueued, Dequeued           uint64 // packets
	EnqueuedBytes, DequeuedBytes uint64
	Drops                        [NumDropReasons]uint64
	DropBytes                    [NumDropReasons]uint64
	// Refused and RefusedBytes count the drops (already in Drops) of
	// packets dropped on arrival that never entered the backlog.
	Refused, RefusedBytes uint64
	CEMarks               uint64
	MaxLen, MaxBytes      int // peak backlog
	Sojourn               Histogram
}

// Dropped is the number of packets dropped for any reason.
func (s *Stats) Dropped() uint64 {
	var n uint64
	for _, d := range s.Drops {
		n += d
	}
	return n
}

// DroppedBytes is the number of wire bytes dropped for any reason.
func (s *Stats) DroppedBytes() uint64 {
	var n uint64
	for _, d := range s.DropBytes {
		n += d
	}
	return n
}

// CheckConservation reports an error unless the counters balance against a
// backlog of n packets and b bytes (the identities in the Stats comment).
func (s *Stats) CheckConservation(n, b int) error {
	dropped, droppedBytes := s.Dropped(), s.DroppedBytes()
	if s.Refused > dropped || s.RefusedBytes > droppedBytes {
		return fmt.Errorf("queues: refused %d packets (%d bytes) but dropped only %d (%d bytes)",
			s.Refused, s.RefusedBytes, dropped, droppedBytes)
	}
	if n < 0 || b < 0 {
		return fmt.Errorf("queues: negative backlog (%d packets, %d bytes)", n, b)
	}
	out := s.Dequeued + (dropped - s.Refused) + uint64(n)
	outBytes := s.DequeuedBytes + (droppedBytes - s.RefusedBytes) + uint64(b)
	if s.Enqueued != out || s.EnqueuedBytes != outBytes {
		return fmt.Errorf("queues: not conserved: enqueued %d packets (%d bytes) but dequeued %d + dropped from backlog %d + backlog %d = %d (%d bytes)",
			s.Enqueued, s.EnqueuedBytes, s.Dequeued, dropped-s.Refused, n, out, outBytes)
	}
	return nil
}

// Periodic is implemented by disciplines with a periodic timer (PIE and
// FQ-PIE, whose drop probability Linux updates from a kernel timer every
// tupdate). A discipline cannot schedule events, so it runs every update
// due at or before now lazily, at the start of each Enqueue and Dequeue;
// since nothing it reads changes between operations, the result equals a
// timer firing at each update instant and ordered before operations at the
// same instant. A network model that wants the updates at their exact
// instants (to read the state between operations) calls Advance(NextUpdate())
// from an event at that instant.
type Periodic interface {
	// NextUpdate is the instant of the next pending update.
	NextUpdate() des.Time
	// Advance runs every update due at or before now.
	Advance(now des.Time)
}

// base carries the bookkeeping shared by disciplines: counters, backlog and
// the drop hook. Disciplines embed it and call its helpers.
type base struct {
	stats Stats
	drop  DropFunc
	n     int
	bytes int
}

func (b *base) Len() int               { return b.n }
func (b *base) Bytes() int             { return b.bytes }
func (b *base) Stats() *Stats          { return &b.stats }
func (b *base) SetDropHook(f DropFunc) { b.drop = f }

// accepted records p entering the backlog at now.
func (b *base) accepted(p *Packet, now des.Time) {
	p.Enqueued = now
	b.n++
	b.bytes += p.Len
	b.stats.Enqueued++
	b.stats.EnqueuedBytes += uint64(p.Len)
	if b.n > b.stats.MaxLen {
		b.stats.MaxLen = b.n
	}
	if b.bytes > b.stats.MaxBytes {
		b.stats.MaxBytes = b.bytes
	}
}

// left records p leaving the backlog, either dequeued or dropped from it.
func (b *base) left(p *Packet) {
	b.n--
	b.bytes -= p.Len
}

// sent records p handed out by Dequeue at now.
func (b *base) sent(p *Packet, now des.Time) {
	b.stats.Dequeued++
	b.stats.DequeuedBytes += uint64(p.Len)
	b.stats.Sojourn.Add(now - p.Enqueued)
}

// refused counts the drop of p on arrival: it never entered the backlog.
func (b *base) refused(p *Packet, r DropReason, now des.Time) {
	b.stats.Refused++
	b.stats.RefusedBytes += uint64(p.Len)
	b.dropped(p, r, now)
}

// markCE sets CE on an ECN-capable packet (ECT, or already CE) and counts
// the mark; it reports false, changing nothing, for a not-ECT packet. This
// is INET_ECN_set_ce in Linux (include/net/inet_ecn.h).
func (b *base) markCE(p *Packet) bool {
	if !p.ECT && !p.CE {
		return false
	}
	p.CE = true
	b.stats.CEMarks++
	return true
}

// dropped counts a drop and hands p to the hook. A packet dropped from the
// backlog must have been passed to left first.
func (b *base) dropped(p *Packet, r DropReason, now des.Time) {
	b.stats.Drops[r]++
	b.stats.DropBytes[r] += uint64(p.Len)
	if b.drop != nil {
		b.drop(p, r, now)
	}
}

// Histogram counts durations in logarithmic buckets (four per octave from
// 1 µs, a relative error under 19 %), without allocating. Quantiles are
// read back as bucket upper bounds.
type Histogram struct {
	counts [histBuckets]uint64
	total  uint64
	sum    float64
	// nsum is the durations' sum in ns modulo 2^64, so that the sum over
	// the durations added between two copies is their exact difference
	// (Sampler), however large the sums.
	nsum uint64
	max  des.Time
}

const histBuckets = 4*40 + 1

func histIndex(d des.Time) int {
	if d <= des.Microsecond {
		return 0
	}
	i := int(math.Ceil(4 * math.Log2(float64(d)/float64(des.Microsecond))))
	if i >= histBuckets {
		i = histBuckets - 1
	}
	return i
}

func histUpper(i int) des.Time {
	return des.Time(float64(des.Microsecond) * math.Exp2(float64(i)/4))
}

// Add counts one duration.
func (h *Histogram) Add(d des.Time) {
	if d < 0 {
		d = 0
	}
	h.counts[histIndex(d)]++
	h.total++
	h.sum += float64(d)
	h.nsum += uint64(d)
	if d > h.max {
		h.max = d
	}
}

// Merge adds o's counts to h.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.total += o.total
	h.sum += o.sum
	h.nsum += o.nsum
	h.max = max(h.max, o.max)
}

// Count is the number of durations added.
func (h *Histogram) Count() uint64 { return h.total }

// Mean is the exact mean of the durations added.
func (h *Histogram) Mean() des.Time {
	if h.total == 0 {
		return 0
	}
	return des.Time(h.sum / float64(h.total))
}

// Max is the largest duration added.
func (h *Histogram) Max() des.Time { return h.max }

// HistogramBucket is one bucket of a Histogram: Count durations d with
// Lower < d <= Upper (the first bucket holds 0 <= d <= 1 µs; the last
// holds every longer duration, its Upper raised to the largest seen).
type HistogramBucket struct {
	Lower, Upper des.Time
	Count        uint64
}

// Buckets returns the buckets that hold at least one duration, shortest
// first; their counts add up to Count.
func (h *Histogram) Buckets() []HistogramBucket {
	var bs []HistogramBucket
	for i, n := range h.counts {
		if n == 0 {
			continue
		}
		b := HistogramBucket{Upper: histUpper(i), Count: n}
		if i > 0 {
			b.Lower = histUpper(i - 1)
		}
		if i == histBuckets-1 {
			b.Upper = max(b.Upper, h.max)
		}
		bs = append(bs, b)
	}
	return bs
}

// Quantile returns the upper bound of the bucket holding quantile q in
// [0, 1], capped at the largest duration seen; 0 when empty.
func (h *Histogram) Quantile(q float64) des.Time {
	if h.total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.total)))
	if rank < 1 {
		rank = 1
	}
	var c uint64
	for i, n := range h.counts {
		c += n
		if c >= rank {
			return min(histUpper(i), h.max)
		}
	}
	return h.max
}

// Every discipline satisfies Qdisc; the periodic ones satisfy Periodic.
var (
	_ Qdisc    = (*FIFO)(nil)
	_ Qdisc    = (*CoDel)(nil)
	_ Qdisc    = (*FQCoDel)(nil)
	_ Qdisc    = (*PIE)(nil)
	_ Qdisc    = (*FQPIE)(nil)
	_ Qdisc    = (*DRR)(nil)
	_ Qdisc    = (*ShadowRR)(nil)
	_ Qdisc    = (*ShadowFIFO)(nil)
	_ Periodic = (*PIE)(nil)
	_ Periodic = (*FQPIE)(nil)
)
