package queues

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestSpecExamples(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	check := func(spec string, f func(q Qdisc) bool) {
		t.Helper()
		q, err := New(spec, rng)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		if !f(q) {
			t.Fatalf("%s: wrong discipline %T %+v", spec, q, q)
		}
	}
	check("fifo", func(q Qdisc) bool {
		f, ok := q.(*FIFO)
		p, b := f.Limits()
		return ok && p == 0 && b == 0
	})
	check("fifo:packets=5,bytes=1k", func(q Qdisc) bool {
		p, b := q.(*FIFO).Limits()
		return p == 5 && b == 1024
	})
	check("pfifo", func(q Qdisc) bool { p, b := q.(*FIFO).Limits(); return p == 1000 && b == 0 })
	check("pfifo:limit=1000", func(q Qdisc) bool { p, _ := q.(*FIFO).Limits(); return p == 1000 })
	check("bfifo:limit=1514000", func(q Qdisc) bool { p, b := q.(*FIFO).Limits(); return p == 0 && b == 1514000 })
	check("bfifo", func(q Qdisc) bool { _, b := q.(*FIFO).Limits(); return b == DefaultBfifoLimit })
	check("codel:target=10ms", func(q Qdisc) bool {
		c := q.(*CoDel).Config()
		return c.Target == 10*ms && c.Interval == 100*ms && c.Limit == 1000 && !c.ECN && !c.FloatSqrt
	})
	check("codel:profile=shadow", func(q Qdisc) bool { return q.(*CoDel).Config() == ShadowCoDelConfig() })
	check("codel:limit=none,sqrt=float,ecn=on,ce_threshold=2ms,mtu=1500,interval=50ms", func(q Qdisc) bool {
		c := q.(*CoDel).Config()
		return c.Limit == 0 && c.FloatSqrt && c.ECN && c.CEThreshold == 2*ms && c.MTU == 1500 && c.Interval == 50*ms
	})
	check("fq_codel", func(q Qdisc) bool { return q.(*FQCoDel).Config() == DefaultFQCoDelConfig() })
	check("fq_codel:flows=128,classify=pair,limit=0", func(q Qdisc) bool {
		c := q.(*FQCoDel).Config()
		return c.Flows == 128 && c.Classify == ClassifyPair && c.Limit == 0 && c.Target == 5*ms && c.ECN
	})
	// The profile applies first, wherever it is written.
	check("fq_codel:target=7ms,profile=simnet", func(q Qdisc) bool {
		want := SimnetFQCoDelConfig()
		want.Target = 7 * ms
		return q.(*FQCoDel).Config() == want
	})
	check("fq_codel:memory_limit=32MiB,drop_batch=8,quantum=300,classify=sock,ce_threshold=off", func(q Qdisc) bool {
		c := q.(*FQCoDel).Config()
		return c.MemoryLimit == 32<<20 && c.DropBatch == 8 && c.Quantum == 300 && c.Classify == ClassifySock && c.CEThreshold == 0
	})
	check("pie", func(q Qdisc) bool { return q.(*PIE).Config() == DefaultPIEConfig() })
	check("pie:target=20ms,tupdate=30ms,ecn=on", func(q Qdisc) bool {
		c := q.(*PIE).Config()
		return c.Target == 20*ms && c.TUpdate == 30*ms && c.ECN && c.Limit == 1000
	})
	check("pie:profile=rfc", func(q Qdisc) bool {
		c := q.(*PIE).Config()
		return c.BurstPerUpdate && !c.HighDelayBoost && c.Target == 15*ms
	})
	check("pie:profile=legacy,alpha=0.25,beta=2,max_burst=0s,ecn_prob=5%,bytemode=yes,dq_rate_estimator=on,burst=update,boost=off,limit=none", func(q Qdisc) bool {
		c := q.(*PIE).Config()
		return c.Target == 20*ms && c.TUpdate == 30*ms && c.Alpha == 0.25 && c.Beta == 2 && c.MaxBurst == 0 &&
			c.ECNProb == 0.05 && c.Bytemode && c.DqRateEstimator && c.BurstPerUpdate && !c.HighDelayBoost && c.Limit == 0
	})
	check("fq_pie", func(q Qdisc) bool { return q.(*FQPIE).Config() == DefaultFQPIEConfig() })
	check("fq_pie:flows=64,classify=pair,ecn_prob=0.2", func(q Qdisc) bool {
		c := q.(*FQPIE).Config()
		return c.Flows == 64 && c.Classify == ClassifyPair && c.ECNProb == 0.2
	})
	check("drr", func(q Qdisc) bool { return q.(*DRR).Config() == DefaultDRRConfig() })
	check("drr:sched=fq,classify=sock,limit=100,quantum=1500,flows=16", func(q Qdisc) bool {
		c := q.(*DRR).Config()
		return c.Sched == DRRFQ && c.Classify == ClassifySock && c.Limit == 100 && c.Quantum == 1500 && c.Flows == 16
	})
	check("shadow-fifo", func(q Qdisc) bool { _, ok := q.(*ShadowFIFO); return ok })
	check("shadow-rr", func(q Qdisc) bool { _, ok := q.(*ShadowRR); return ok })
	check("  fq_codel : flows = 16 ", func(q Qdisc) bool { return q.(*FQCoDel).Config().Flows == 16 })
}

func TestSpecErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, c := range []struct{ spec, want string }{
		{"", "empty discipline name"},
		{"red", `unknown discipline "red"; valid: fifo, pfifo, bfifo, codel, fq_codel, pie, fq_pie, drr, shadow-fifo, shadow-rr`},
		{"fq_codel:flow=1", `fq_codel has no key "flow"; valid keys: profile, limit, flows, quantum, memory_limit, drop_batch, classify, target`},
		{"fq_codel:flows=0", "fq_codel: flows 0; the number of flow buckets must be in [1, 65536]"},
		{"fq_codel:flows=x", "fq_codel: flows=x: want a decimal integer"},
		{"fq_codel:limit=-1", "want a packet count >= 1, or none (0) for no limit"},
		{"fq_codel:classify=ip", "classify=ip: valid: 5tuple, pair, sock"},
		{"fq_codel:profile=bsd", "profile=bsd: valid: linux, simnet"},
		{"fq_codel:target=5", "want a duration such as 10ms"},
		{"fq_codel:target=0s", "fq_codel: target 0s; the target must be positive"},
		{"fq_codel:flows=8,flows=9", `key "flows" given twice`},
		{"fq_codel:flows", `option "flows" is not key=value`},
		{"fq_codel:", `option "" is not key=value`},
		{"pfifo:limit=0", "pfifo: limit 0; the limit must be at least 1 packet"},
		{"pfifo:limit=none", "want a decimal integer"},
		{"bfifo:limit=0", "bfifo: limit 0; the limit must be at least 1 byte"},
		{"bfifo:limit=12q", "want a byte count"},
		{"codel:ecn=maybe", "ecn=maybe: want on or off"},
		{"codel:sqrt=exact", "valid: newton, float"},
		{"pie:ecn_prob=10", "want a fraction in [0, 1]"},
		{"pie:alpha=x", "want a decimal number"},
		{"pie:tupdate=0s", "pie: tupdate 0s; the update period must be positive"},
		{"pie:burst=never", "valid: dequeue, update"},
		{"fq_pie:profile=rfc", `fq_pie has no key "profile"`},
		{"drr:sched=wfq", "valid: classic, fq"},
		{"shadow-rr:limit=5", `shadow-rr takes no options (got "limit")`},
	} {
		q, err := New(c.spec, rng)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%q) = %v, %v; want error containing %q", c.spec, q, err, c.want)
		}
		if err != nil && q != nil {
			t.Errorf("New(%q): non-nil Qdisc with an error", c.spec)
		}
	}
	for _, spec := range []string{"pie", "fq_pie:flows=4"} {
		if _, err := New(spec, nil); err == nil || !strings.Contains(err.Error(), "nil *rand.Rand") {
			t.Errorf("New(%q, nil): %v", spec, err)
		}
	}
	if _, err := New("fq_codel", nil); err != nil {
		t.Errorf("fq_codel needs no rng: %v", err)
	}
}

// Every name in SpecNames builds with its defaults and carries traffic.
func TestSpecNamesBuild(t *testing.T) {
	for _, name := range SpecNames() {
		q, err := New(name, rand.New(rand.NewPCG(1, 1)))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i := 0; i < 100; i++ {
			q.Enqueue(mkpkt(i%4, 1000, uint64(i)), 0)
		}
		if q.Len() != 100 || dequeueN(q, 200, ms) == nil || q.Len() != 0 {
			t.Fatalf("%s: len %d", name, q.Len())
		}
		conserved(t, q)
	}
}
