package queues

import (
	"fmt"

	"github.com/uplinksim/uplink/des"
)

// FQ-CoDel defaults (Linux net/sched/sch_fq_codel.c, fq_codel_init).
const (
	DefaultFQLimit       = 10240
	DefaultFQFlows       = 1024
	DefaultFQMemoryLimit = 32 << 20
	DefaultFQDropBatch   = 64
)

// FQCoDelConfig configures FQ-CoDel.
type FQCoDelConfig struct {
	// CoDelParams apply to every flow (one CoDel state per bucket).
	CoDelParams
	// Limit is the packet limit over all flows; 0 means none (simnet).
	Limit int
	// Flows is the number of flow buckets, in [1, MaxFlows].
	Flows int
	// Quantum is the DRR quantum in bytes (Linux: the device's psched_mtu).
	Quantum int
	// MemoryLimit bounds the bytes held; 0 means none. Linux counts each
	// packet's skb->truesize, larger than its wire length; this model
	// counts wire bytes (Packet.Len), so it reaches the limit later.
	MemoryLimit int
	// DropBatch is the most packets one overflow drops from the fat flow.
	DropBatch int
	// Classify selects the flow classifier.
	Classify Classify
	// ResetIdle discards a bucket's CoDel state when its flow runs empty
	// and leaves the lists, so it starts afresh with its next packet:
	// simnet's fq_codel frees an emptied old flow's queue, CoDel state and
	// all (fq_codel.go, Dequeue). Linux keeps the state with the bucket.
	ResetIdle bool
}

// DefaultFQCoDelConfig returns Linux's fq_codel defaults: limit 10 240
// packets, 1 024 flows on the 5-tuple, quantum 1 514, target 5 ms, interval
// 100 ms, memory limit 32 MiB, ECN on, drop batch 64, MTU guard 1 514.
func DefaultFQCoDelConfig() FQCoDelConfig {
	prm := DefaultCoDelParams()
	prm.ECN = true
	return FQCoDelConfig{
		CoDelParams: prm,
		Limit:       DefaultFQLimit,
		Flows:       DefaultFQFlows,
		Quantum:     DefaultMTU,
		MemoryLimit: DefaultFQMemoryLimit,
		DropBatch:   DefaultFQDropBatch,
		Classify:    ClassifyFiveTuple,
	}
}

// SimnetFQCoDelConfig returns the fq_codel of simnet's links: 128 buckets
// on the (to, from) address pair, quantum = MTU = 1 500, target 5 ms,
// interval 100 ms, no packet or memory limit (CoDel at dequeue is the only
// drop), no ECN, and a flow's CoDel state discarded when the flow runs
// empty (ResetIdle), as simnet frees it. simnet never sets its MTU field,
// which disables CoDel's one-MTU backlog guard; this profile keeps the
// guard at 1 500 bytes instead of copying that defect.
func SimnetFQCoDelConfig() FQCoDelConfig {
	return FQCoDelConfig{
		CoDelParams: CoDelParams{Target: 5 * des.Millisecond, Interval: 100 * des.Millisecond, MTU: 1500},
		Flows:       128,
		Quantum:     1500,
		DropBatch:   DefaultFQDropBatch,
		Classify:    ClassifyPair,
		ResetIdle:   true,
	}
}

func (c *FQCoDelConfig) validate() error {
	const name = "fq_codel"
	if err := c.CoDelParams.validate(name); err != nil {
		return err
	}
	if err := validateFQ(name, c.Flows, c.Quantum, c.Classify); err != nil {
		return err
	}
	if err := validateFQLimits(name, c.Limit, c.MemoryLimit); err != nil {
		return err
	}
	if c.DropBatch < 1 {
		return fmt.Errorf("%s: drop_batch %d; the drop batch must be at least 1 packet (default %d)", name, c.DropBatch, DefaultFQDropBatch)
	}
	return nil
}

// FQCoDel is Linux's fq_codel (net/sched/sch_fq_codel.c, RFC 8290): flows
// hashed into buckets, each a CoDel-managed FIFO, served by the DRR++
// scheduler of fq.go. On overflow of the packet or memory limit it drops a
// batch from the head of the fat flow (the bucket with the largest byte
// backlog): packets until DropBatch are gone or at least half of that
// bucket's bytes, at least one, and adds their number to the bucket's CoDel
// count. The arriving packet is accepted first, so it is counted in
// Enqueued, and is only lost if the batch reaches it.
type FQCoDel struct {
	base
	cfg   FQCoDelConfig
	s     fqSched
	state []codelVars
}

// NewFQCoDel returns an FQ-CoDel discipline, or an error naming the bad
// field.
func NewFQCoDel(cfg FQCoDelConfig) (*FQCoDel, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	q := &FQCoDel{cfg: cfg, state: make([]codelVars, cfg.Flows)}
	q.s.init(cfg.Flows, cfg.Quantum, cfg.Classify)
	return q, nil
}

// Config returns the configuration.
func (q *FQCoDel) Config() FQCoDelConfig { return q.cfg }

// NewFlowCount is the number of times a bucket joined new_flows.
func (q *FQCoDel) NewFlowCount() uint64 { return q.s.newFlowCount }

// Enqueue timestamps p and appends it to its bucket; on overflow it runs
// the fat-flow batch drop (fq_codel_enqueue and fq_codel_drop). It reports
// whether p is still queued.
func (q *FQCoDel) Enqueue(p *Packet, now des.Time) bool {
	i := q.s.index(&p.Flow)
	q.accepted(p, now)
	q.s.add(i, p)
	if (q.cfg.Limit == 0 || q.n <= q.cfg.Limit) &&
		(q.cfg.MemoryLimit == 0 || q.bytes <= q.cfg.MemoryLimit) {
		return true
	}
	return !q.dropBatch(p, now)
}

// dropBatch drops from the head of the fat flow and reports whether p was
// among the packets dropped.
func (q *FQCoDel) dropBatch(p *Packet, now des.Time) (droppedP bool) {
	fat := q.s.fattest()
	f := &q.s.flows[fat]
	threshold := f.bytes >> 1
	n, length := 0, 0
	for {
		x := f.q.pop()
		f.bytes -= x.Len
		q.left(x)
		q.dropped(x, DropBatch, now)
		droppedP = droppedP || x == p
		length += x.Len
		n++
		if n >= q.cfg.DropBatch || length >= threshold || f.q.len() == 0 {
			break
		}
	}
	q.state[fat].count += uint32(n)
	return droppedP
}

// flowIdle runs when flow i has left the lists.
func (q *FQCoDel) flowIdle(i int) {
	if q.cfg.ResetIdle {
		q.state[i] = codelVars{}
	}
}

func (q *FQCoDel) dequeueFlow(i int, now des.Time) *Packet {
	f := &q.s.flows[i]
	return q.state[i].dequeue(&q.cfg.CoDelParams, &f.q, &f.bytes, &q.base, now)
}

// Dequeue returns the next packet by DRR++ over the flows, each through its
// CoDel law (fq_codel_dequeue), or nil when every flow is empty.
func (q *FQCoDel) Dequeue(now des.Time) *Packet {
	p := q.s.dequeue(q, now)
	if p != nil {
		q.sent(p, now)
	}
	return p
}
