package queues

import (
	"strings"
	"testing"
)

func newDRRT(t *testing.T, mod func(*DRRConfig)) (*DRR, *dropLog) {
	t.Helper()
	return buildT(t, DefaultDRRConfig(), mod, NewDRR)
}

// Classic DRR with quantum 600 over A (5 x 1 000 bytes, active first) and
// B (10 x 300), worked by hand as (flow: deficit before -> after):
//
//	A 600 < 1000: +600 = 1200, to tail; B 600 -> B1 300 -> B2 0;
//	B 0 < 300: 600, tail; A 1200 -> A1 200; A 200 < 1000: 800, tail;
//	B3 300, B4 0; B: 600, tail; A 800 < 1000: 1400, tail; B5 300, B6 0;
//	B: 600, tail; A 1400 -> A2 400; A: 1000, tail; B7, B8; B: 600, tail;
//	A 1000 -> A3 0; A: 600, tail; B9 300, B10 0 (B empties and leaves);
//	A 600 < 1000: 1200 -> A4 200; A: 800, 1400 -> A5.
func TestDRRClassicDeficitSequence(t *testing.T) {
	q, _ := newDRRT(t, func(c *DRRConfig) { c.Quantum = 600; c.Classify = ClassifySock })
	distinctBuckets(t, &q.s, 0, 1)
	for i := 0; i < 5; i++ {
		q.Enqueue(mkpkt(0, 1000, uint64(i)), 0)
	}
	for i := 0; i < 10; i++ {
		q.Enqueue(mkpkt(1, 300, uint64(i)), 0)
	}
	got := dequeueN(q, 20, 0)
	if s := flowNames(got); s != "BBABBBBABBABBAA" {
		t.Fatalf("order %s", s)
	}
	// Per-flow FIFO order.
	last := map[FlowKey]int64{}
	for _, p := range got {
		if l, ok := last[p.Flow]; ok && int64(p.Seq) <= l {
			t.Fatal("reordered within a flow")
		}
		last[p.Flow] = int64(p.Seq)
	}
	if !q.s.newFlows.empty() || q.Len() != 0 {
		t.Fatal("not empty")
	}
	conserved(t, q)
}

// A flow that empties leaves the round; when it returns its deficit starts
// again at one quantum (no credit saved while idle).
func TestDRRClassicIdleLosesCredit(t *testing.T) {
	q, _ := newDRRT(t, func(c *DRRConfig) { c.Quantum = 600; c.Classify = ClassifySock })
	q.Enqueue(mkpkt(0, 1000, 0), 0)
	dequeueN(q, 1, 0) // A: 600 -> 1200 -> 200, empties
	q.Enqueue(mkpkt(0, 100, 1), 0)
	i := q.s.index(&[]FlowKey{flowKey(0)}[0])
	if q.s.flows[i].deficit != 600 {
		t.Fatalf("deficit %d on return, want 600", q.s.flows[i].deficit)
	}
}

// The fq variant is FQ-CoDel's DRR++ order without CoDel.
func TestDRRFQSequence(t *testing.T) {
	q, log := newDRRT(t, func(c *DRRConfig) { c.Sched = DRRFQ })
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
	// No AQM: a standing queue of a second is delivered whole.
	for q.Dequeue(3600e9) != nil {
	}
	if len(log.pkts) != 0 || q.Stats().Dequeued != 40 {
		t.Fatal("dropped")
	}
}

func TestDRRLimit(t *testing.T) {
	for _, sched := range []DRRSched{DRRClassic, DRRFQ} {
		q, log := newDRRT(t, func(c *DRRConfig) { c.Limit = 4; c.Sched = sched })
		for i := 0; i < 10; i++ {
			q.Enqueue(mkpkt(i%3, 1000, uint64(i)), 0)
		}
		if q.Len() != 4 || log.count(DropOverlimit) != 6 || len(log.pkts) != 6 || q.Stats().Refused != 6 {
			t.Fatalf("%v: len %d drops %v", sched, q.Len(), log.reasons)
		}
		for i, p := range log.pkts {
			if p.Seq != uint64(4+i) {
				t.Fatalf("%v: dropped %d, want the arrivals", sched, p.Seq)
			}
		}
		conserved(t, q)
	}
	q, log := newDRRT(t, func(c *DRRConfig) { c.Limit = 0 })
	for i := 0; i < 20000; i++ {
		q.Enqueue(mkpkt(i%5, 100, uint64(i)), 0)
	}
	if len(log.pkts) != 0 {
		t.Fatal("limit 0 dropped")
	}
}

func TestDRRConfigErrors(t *testing.T) {
	for _, c := range []struct {
		mod  func(*DRRConfig)
		want string
	}{
		{func(c *DRRConfig) { c.Flows = 0 }, "drr: flows 0"},
		{func(c *DRRConfig) { c.Quantum = 0 }, "drr: quantum 0"},
		{func(c *DRRConfig) { c.Limit = -2 }, "drr: limit -2; use a positive packet limit"},
		{func(c *DRRConfig) { c.Sched = 7 }, "classic, fq"},
	} {
		cfg := DefaultDRRConfig()
		c.mod(&cfg)
		if _, err := NewDRR(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
}
