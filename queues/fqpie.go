package queues

import (
	"fmt"
	"math/rand/v2"

	"github.com/uplinksim/uplink/des"
)

// FQPIEConfig configures FQ-PIE.
type FQPIEConfig struct {
	// PIEParams apply to every flow (one PIE state per bucket).
	PIEParams
	// Limit is the packet limit over all flows (tail drop); 0 means none.
	Limit int
	// Flows is the number of flow buckets, in [1, MaxFlows].
	Flows int
	// Quantum is the DRR quantum in bytes (Linux: psched_mtu).
	Quantum int
	// MemoryLimit is the byte level above which an arrival is counted in
	// OverMemory. Linux's fq_pie only counts it and still enqueues; so does
	// this model. 0 disables the count. Linux compares skb->truesize sums,
	// this model wire bytes.
	MemoryLimit int
	// Classify selects the flow classifier.
	Classify Classify
}

// DefaultFQPIEConfig returns Linux's fq_pie defaults (fq_pie_init): limit
// 10 240 packets, 1 024 flows on the 5-tuple, quantum 1 514, memory limit
// 32 MiB, ECN off with a 10 % marking threshold, and the PIE defaults.
func DefaultFQPIEConfig() FQPIEConfig {
	return FQPIEConfig{
		PIEParams:   DefaultPIEParams(),
		Limit:       DefaultFQLimit,
		Flows:       DefaultFQFlows,
		Quantum:     DefaultMTU,
		MemoryLimit: DefaultFQMemoryLimit,
		Classify:    ClassifyFiveTuple,
	}
}

func (c *FQPIEConfig) validate() error {
	const name = "fq_pie"
	if err := c.PIEParams.validate(name); err != nil {
		return err
	}
	if err := validateFQ(name, c.Flows, c.Quantum, c.Classify); err != nil {
		return err
	}
	if err := validateFQLimits(name, c.Limit, c.MemoryLimit); err != nil {
		return err
	}
	return nil
}

// FQPIE is Linux's fq_pie (net/sched/sch_fq_pie.c): the FQ-CoDel flow
// scheduler (fq.go) with a PIE state per bucket instead of CoDel. Drops
// happen at enqueue only, of the arriving packet: tail drop at the limit,
// or PIE's early drop with the probability of the packet's bucket; there
// is no fat-flow drop.
//
// Linux's timer updates every bucket's probability each tupdate. Here the
// updates run lazily like PIE's, and only over the buckets whose state an
// operation touched since their last update changed it: a bucket whose
// update leaves it unchanged would stay unchanged until an operation
// touches it again, so skipping it gives the timer's result.
type FQPIE struct {
	base
	cfg        FQPIEConfig
	s          fqSched
	state      []pieVars
	clock      pieClock
	rng        *rand.Rand
	active     []int32 // buckets that need their periodic update
	isActive   []bool
	overMemory uint64
}

// NewFQPIE returns an FQ-PIE discipline drawing from rng (the simulator's
// seeded stream), or an error naming the bad field.
func NewFQPIE(cfg FQPIEConfig, rng *rand.Rand) (*FQPIE, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if rng == nil {
		return nil, fmt.Errorf("fq_pie: nil *rand.Rand; pass the simulator's seeded stream")
	}
	q := &FQPIE{
		cfg:      cfg,
		state:    make([]pieVars, cfg.Flows),
		rng:      rng,
		active:   make([]int32, 0, cfg.Flows),
		isActive: make([]bool, cfg.Flows),
	}
	q.s.init(cfg.Flows, cfg.Quantum, cfg.Classify)
	for i := range q.state {
		q.state[i].reset(&q.cfg.PIEParams)
	}
	q.clock.init(&q.cfg.PIEParams)
	return q, nil
}

// Config returns the configuration.
func (q *FQPIE) Config() FQPIEConfig { return q.cfg }

// OverMemory is the number of arrivals that found the byte backlog above
// MemoryLimit plus their own length (Linux's overmemory statistic).
func (q *FQPIE) OverMemory() uint64 { return q.overMemory }

// NewFlowCount is the number of times a bucket joined new_flows.
func (q *FQPIE) NewFlowCount() uint64 { return q.s.newFlowCount }

// Prob returns the drop probability of the bucket of k.
func (q *FQPIE) Prob(k FlowKey) float64 { return q.state[q.s.index(&k)].prob }

func (q *FQPIE) touch(i int) {
	if !q.isActive[i] {
		q.isActive[i] = true
		q.active = append(q.active, int32(i))
	}
}

// NextUpdate is the instant of the next probability update.
func (q *FQPIE) NextUpdate() des.Time { return q.clock.next }

// Advance runs every probability update due at or before now.
func (q *FQPIE) Advance(now des.Time) {
	for q.clock.next <= now {
		if len(q.active) == 0 {
			q.clock.skipPast(now)
			return
		}
		keep := q.active[:0]
		for _, i := range q.active {
			v := &q.state[i]
			before := *v
			v.update(&q.cfg.PIEParams, q.s.flows[i].bytes)
			if *v != before {
				keep = append(keep, i)
			} else {
				q.isActive[i] = false
			}
		}
		q.active = keep
		q.clock.next += q.clock.period
	}
}

// Enqueue tail-drops p at the limit, otherwise runs its bucket's PIE
// early-drop test (with the bucket's byte backlog), CE-marking instead of
// dropping when ECN is on, p is ECN-capable and the bucket's probability is
// at most ECNProb (fq_pie_qdisc_enqueue). Every drop resets the bucket's
// accu_prob.
func (q *FQPIE) Enqueue(p *Packet, now des.Time) bool {
	q.Advance(now)
	i := q.s.index(&p.Flow)
	v := &q.state[i]
	q.touch(i)
	if q.cfg.Limit > 0 && q.n >= q.cfg.Limit {
		v.accuProb = 0
		q.refused(p, DropOverlimit, now)
		return false
	}
	if q.cfg.MemoryLimit > 0 && q.bytes > q.cfg.MemoryLimit+p.Len {
		q.overMemory++
	}
	if v.dropEarly(&q.cfg.PIEParams, q.s.flows[i].bytes, p.Len, q.rng) &&
		!(q.cfg.ECN && v.prob <= q.cfg.ECNProb && q.markCE(p)) {
		v.accuProb = 0
		q.refused(p, DropAQM, now)
		return false
	}
	q.accepted(p, now)
	q.s.add(i, p)
	return true
}

func (q *FQPIE) dequeueFlow(i int, now des.Time) *Packet {
	f := &q.s.flows[i]
	p := f.q.pop()
	if p == nil {
		return nil
	}
	f.bytes -= p.Len
	q.left(p)
	q.touch(i)
	q.state[i].processDequeue(&q.cfg.PIEParams, p, f.bytes, now)
	return p
}

// Dequeue returns the next packet by DRR++ over the flows
// (fq_pie_qdisc_dequeue) and feeds its bucket's delay estimator.
func (q *FQPIE) Dequeue(now des.Time) *Packet {
	q.Advance(now)
	p := q.s.dequeue(q, now)
	if p != nil {
		q.sent(p, now)
	}
	return p
}
