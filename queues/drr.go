package queues

import (
	"fmt"
	"strings"

	"github.com/uplinksim/uplink/des"
)

// DRRSched selects DRR's round-robin variant.
type DRRSched uint8

const (
	// DRRClassic is deficit round robin as in Shreedhar and Varghese and
	// Linux net/sched/sch_drr.c: one list of active flows; a flow joins its
	// tail with a deficit of one quantum; the head flow sends its head
	// packet if the packet fits its deficit, otherwise it gets one quantum
	// more and goes to the tail; a flow that empties leaves the list.
	DRRClassic DRRSched = iota
	// DRRFQ is the DRR++ scheduler of FQ-CoDel (fq.go) without CoDel: new
	// flows first, deficits that may go negative, the anti-starvation move.
	// Compared with fq_codel under the same classifier and quantum, it
	// isolates the effect of the order from that of CoDel's drops.
	DRRFQ
)

var drrSchedNames = [...]string{"classic", "fq"}

// String returns the scheduler name, as the spec key sched reads it.
func (s DRRSched) String() string {
	if int(s) < len(drrSchedNames) {
		return drrSchedNames[s]
	}
	return fmt.Sprintf("drrsched(%d)", uint8(s))
}

// DRRConfig configures DRR.
type DRRConfig struct {
	// Limit is the packet limit over all flows (tail drop of the arriving
	// packet); 0 means none.
	Limit int
	// Flows is the number of flow buckets, in [1, MaxFlows].
	Flows int
	// Quantum is the bytes a flow may send per round.
	Quantum int
	// Classify selects the flow classifier.
	Classify Classify
	// Sched selects classic DRR or FQ-CoDel's DRR++.
	Sched DRRSched
}

// DefaultDRRConfig returns a DRR with fq_codel's flow table: limit 10 240
// packets, 1 024 buckets on the 5-tuple, quantum 1 514, classic DRR.
func DefaultDRRConfig() DRRConfig {
	return DRRConfig{Limit: DefaultFQLimit, Flows: DefaultFQFlows, Quantum: DefaultMTU, Classify: ClassifyFiveTuple}
}

func (c *DRRConfig) validate() error {
	const name = "drr"
	if err := validateFQ(name, c.Flows, c.Quantum, c.Classify); err != nil {
		return err
	}
	if c.Limit < 0 {
		return fmt.Errorf("%s: limit %d; use a positive packet limit (default %d), or 0 for no limit", name, c.Limit, DefaultFQLimit)
	}
	if int(c.Sched) >= len(drrSchedNames) {
		return fmt.Errorf("%s: sched %v; valid: %s", name, c.Sched, strings.Join(drrSchedNames[:], ", "))
	}
	return nil
}

// DRR is a fair share without AQM: flows hashed into buckets, each a FIFO,
// served by deficit round robin, and no drop but the tail drop of an
// arrival once the discipline holds Limit packets.
type DRR struct {
	base
	cfg DRRConfig
	s   fqSched // in classic mode, s.newFlows is the one active list
}

// NewDRR returns a DRR discipline, or an error naming the bad field.
func NewDRR(cfg DRRConfig) (*DRR, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	q := &DRR{cfg: cfg}
	q.s.init(cfg.Flows, cfg.Quantum, cfg.Classify)
	return q, nil
}

// Config returns the configuration.
func (q *DRR) Config() DRRConfig { return q.cfg }

// Enqueue appends p to its bucket, or tail-drops it at the limit.
func (q *DRR) Enqueue(p *Packet, now des.Time) bool {
	if q.cfg.Limit > 0 && q.n >= q.cfg.Limit {
		q.refused(p, DropOverlimit, now)
		return false
	}
	q.accepted(p, now)
	q.s.add(q.s.index(&p.Flow), p)
	return true
}

func (q *DRR) dequeueFlow(i int, _ des.Time) *Packet {
	f := &q.s.flows[i]
	p := f.q.pop()
	if p != nil {
		f.bytes -= p.Len
		q.left(p)
	}
	return p
}

// Dequeue returns the next packet in DRR order, or nil when empty.
func (q *DRR) Dequeue(now des.Time) *Packet {
	var p *Packet
	if q.cfg.Sched == DRRFQ {
		p = q.s.dequeue(q, now)
	} else {
		p = q.classic()
	}
	if p != nil {
		q.sent(p, now)
	}
	return p
}

// classic is drr_dequeue of sch_drr.c over the flow buckets.
func (q *DRR) classic() *Packet {
	s := &q.s
	for !s.newFlows.empty() {
		i := s.newFlows.head
		f := &s.flows[i]
		head := f.q.peek()
		if head.Len <= f.deficit {
			f.deficit -= head.Len
			p := q.dequeueFlow(int(i), 0)
			if f.q.len() == 0 {
				s.popHead(&s.newFlows)
				f.listed = false
			}
			return p
		}
		f.deficit += s.quantum
		s.pushTail(&s.newFlows, s.popHead(&s.newFlows))
	}
	return nil
}
