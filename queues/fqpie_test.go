package queues

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/uplinksim/uplink/des"
)

func newFQPIET(t *testing.T, mod func(*FQPIEConfig), rng *rand.Rand) (*FQPIE, *dropLog) {
	t.Helper()
	return buildT(t, DefaultFQPIEConfig(), mod, func(c FQPIEConfig) (*FQPIE, error) { return NewFQPIE(c, rngOr(rng, 5, 6)) })
}

// The scheduler is FQ-CoDel's: the same DRR++ order.
func TestFQPIEDeficitSequence(t *testing.T) {
	q, _ := newFQPIET(t, nil, nil)
	distinctBuckets(t, &q.s, 0, 1)
	for i := 0; i < 10; i++ {
		q.Enqueue(mkpkt(0, 1500, uint64(i)), 0)
	}
	for i := 0; i < 30; i++ {
		q.Enqueue(mkpkt(1, 500, uint64(i)), 0)
	}
	if got := flowNames(dequeueN(q, 14, 0)); got != "AABBBBABBBABBB" {
		t.Fatalf("order %s", got)
	}
}

// Each bucket has its own probability: a flow with a growing standing
// queue is dropped early, a sparse flow beside it is not; drops happen on
// enqueue only.
func TestFQPIEPerFlowProbability(t *testing.T) {
	q, log := newFQPIET(t, nil, nil)
	distinctBuckets(t, &q.s, 0, 1)
	inDequeue := false
	q.SetDropHook(func(p *Packet, r DropReason, now des.Time) {
		if inDequeue {
			t.Fatal("FQ-PIE dropped at dequeue")
		}
		log.hook(p, r, now)
	})
	seq := uint64(0)
	for now := des.Time(0); now < 3*des.Second; now += ms {
		for i := 0; i < 2; i++ {
			seq++
			q.Enqueue(mkpkt(0, 1500, seq), now)
		}
		if now%(10*ms) == 0 {
			seq++
			q.Enqueue(mkpkt(1, 200, seq), now)
		}
		inDequeue = true
		q.Dequeue(now)
		inDequeue = false
		conserved(t, q)
	}
	pa, pb := q.Prob(flowKey(0)), q.Prob(flowKey(1))
	if pa < 0.01 || pb != 0 {
		t.Fatalf("p(A) = %v, p(B) = %v", pa, pb)
	}
	for i, p := range log.pkts {
		if p.Flow != flowKey(0) || log.reasons[i] != DropAQM {
			t.Fatalf("drop %d: %+v %v", i, p.Flow, log.reasons[i])
		}
	}
	if len(log.pkts) == 0 || q.Stats().Refused != uint64(len(log.pkts)) {
		t.Fatalf("%d drops, refused %d", len(log.pkts), q.Stats().Refused)
	}
}

func TestFQPIELimitAndMemory(t *testing.T) {
	q, log := newFQPIET(t, func(c *FQPIEConfig) { c.Limit = 3; c.MemoryLimit = 2000 }, nil)
	for i := 0; i < 3; i++ {
		q.Enqueue(mkpkt(0, 1000, uint64(i)), 0)
	}
	// Linux only counts an arrival that finds usage > limit + its size.
	if q.OverMemory() != 0 {
		t.Fatalf("over memory %d", q.OverMemory())
	}
	a := q.s.index(&[]FlowKey{flowKey(0)}[0])
	q.state[a].accuProb = 4
	if q.Enqueue(mkpkt(0, 1000, 3), 0) || log.count(DropOverlimit) != 1 || q.state[a].accuProb != 0 {
		t.Fatal("tail drop at the limit")
	}
	q2, _ := newFQPIET(t, func(c *FQPIEConfig) { c.MemoryLimit = 1000 }, nil)
	for i := 0; i < 5; i++ {
		// usage before: 0, 500, 1 000, 1 500 (not > 1 000 + 500), 2 000
		q2.Enqueue(mkpkt(0, 500, uint64(i)), 0)
	}
	if q2.OverMemory() != 1 || q2.Len() != 5 {
		t.Fatalf("over memory %d, len %d (fq_pie counts, never drops)", q2.OverMemory(), q2.Len())
	}
}

// The lazy update of only the touched buckets equals a timer that updates
// every bucket at each tupdate.
func TestFQPIELazyEqualsTimer(t *testing.T) {
	for _, mod := range []func(*FQPIEConfig){
		func(c *FQPIEConfig) {},
		func(c *FQPIEConfig) { c.PIEParams = RFCPIEParams(); c.Classify = ClassifySock },
		func(c *FQPIEConfig) { c.DqRateEstimator = true; c.ECN = true; c.MaxBurst = 20 * ms },
	} {
		mk := func(far bool) *FQPIE {
			q, _ := newFQPIET(t, func(c *FQPIEConfig) {
				c.Flows = 64
				c.Limit = 400
				mod(c)
				if far {
					c.Epoch = des.Never / 2
				}
			}, rand.New(rand.NewPCG(9, 9)))
			return q
		}
		lazy, ref := mk(false), mk(true)
		ops := rand.New(rand.NewPCG(1, 8))
		var now, nextTick des.Time = 0, lazy.cfg.TUpdate
		seq := uint64(0)
		for step := 0; step < 30000; step++ {
			now += des.Time(ops.IntN(300)) * des.Microsecond
			if step%6000 > 5000 {
				now += 40 * ms
			}
			for nextTick <= now {
				for i := range ref.state {
					ref.state[i].update(&ref.cfg.PIEParams, ref.s.flows[i].bytes)
				}
				nextTick += lazy.cfg.TUpdate
			}
			phase := (step / 2000) % 3
			if ops.IntN(3) < 3-phase {
				seq++
				f, size := ops.IntN(12), 64+ops.IntN(1450)
				a, b := mkpkt(f, size, seq), mkpkt(f, size, seq)
				a.ECT, b.ECT = f%2 == 0, f%2 == 0
				if lazy.Enqueue(a, now) != ref.Enqueue(b, now) || a.CE != b.CE {
					t.Fatalf("step %d: enqueue decisions differ", step)
				}
			} else {
				a, b := lazy.Dequeue(now), ref.Dequeue(now)
				if (a == nil) != (b == nil) || (a != nil && a.Seq != b.Seq) {
					t.Fatalf("step %d: dequeues differ", step)
				}
			}
			if step%97 == 0 {
				lazy.Advance(now)
				for i := range lazy.state {
					if lazy.state[i] != ref.state[i] {
						t.Fatalf("step %d at %v, bucket %d:\n%+v\n%+v", step, now, i, lazy.state[i], ref.state[i])
					}
				}
			}
		}
		if lazy.Stats().Drops[DropAQM] == 0 {
			t.Fatal("never exercised an early drop")
		}
		conserved(t, lazy)
		// Once drained and idle, no bucket needs updates any more.
		for lazy.Dequeue(now) != nil {
		}
		lazy.Advance(now + 3600*des.Second)
		if len(lazy.active) != 0 {
			t.Fatalf("%d buckets still updated after an hour idle", len(lazy.active))
		}
	}
}

func TestFQPIEConfigErrors(t *testing.T) {
	for _, c := range []struct {
		mod  func(*FQPIEConfig)
		want string
	}{
		{func(c *FQPIEConfig) { c.Flows = 0 }, "fq_pie: flows 0"},
		{func(c *FQPIEConfig) { c.Quantum = -1 }, "quantum"},
		{func(c *FQPIEConfig) { c.Limit = -1 }, "fq_pie: limit -1"},
		{func(c *FQPIEConfig) { c.MemoryLimit = -1 }, "memory_limit"},
		{func(c *FQPIEConfig) { c.TUpdate = 0 }, "fq_pie: tupdate"},
	} {
		cfg := DefaultFQPIEConfig()
		c.mod(&cfg)
		if _, err := NewFQPIE(cfg, rand.New(rand.NewPCG(1, 1))); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
	if _, err := NewFQPIE(DefaultFQPIEConfig(), nil); err == nil {
		t.Error("nil rng accepted")
	}
	c := DefaultFQPIEConfig()
	if c.Limit != 10240 || c.Flows != 1024 || c.Quantum != 1514 || c.MemoryLimit != 32<<20 || c.ECN || c.ECNProb != 0.1 {
		t.Fatalf("defaults %+v", c)
	}
}
