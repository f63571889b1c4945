package queues

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uplinksim/uplink/des"
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
	check("fifo:packets=5,bytes=1KiB", func(q Qdisc) bool {
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

// A spec of MaxSpecLen bytes is read; one byte more is refused with an
// error that, like every other, starts by naming the spec (its first 40
// characters), then gives its length and the bound.
func TestSpecLength(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	q, err := New("fifo"+strings.Repeat(" ", MaxSpecLen-4), rng)
	require.NoError(t, err)
	require.IsType(t, &FIFO{}, q)
	q, err = New("fifo"+strings.Repeat(" ", MaxSpecLen-3), rng)
	require.Nil(t, q)
	require.EqualError(t, err, `queues: spec "fifo                                    "...: 1025 bytes, at most 1024`)
	_, err = New("pie:"+strings.Repeat("\xd0", 2000), rng)
	require.EqualError(t, err, `queues: spec "pie:\xd0\xd0\xd0\xd0\xd0\xd0\xd0\xd0\xd0\xd0\xd0\xd0\xd0\xd0\xd0\xd0\xd0\xd0\xd0\xd0\xd0\xd0\xd0\xd0\xd0\xd0\xd0\xd0\xd0\xd0\xd0\xd0\xd0\xd0\xd0\xd0"...: 2004 bytes, at most 1024`)
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

// Every number of a spec goes through the des bounds: NaN, infinity,
// overflow and values above the documented bounds are refused, naming the
// discipline, the key and the bound.
func TestSpecBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, c := range []struct{ spec, want string }{
		{"pie:alpha=NaN", "pie: alpha=NaN: want a decimal number from 0 to 32"},
		{"pie:beta=Inf", "pie: beta=Inf: want a decimal number from 0 to 32"},
		{"pie:alpha=33", "pie: alpha=33: want a decimal number from 0 to 32"},
		{"pie:alpha=0x1p-3", "pie: alpha=0x1p-3: want a decimal number"},
		{"pie:ecn_prob=NaN", "pie: ecn_prob=NaN: want a fraction in [0, 1]"},
		{"pie:ecn_prob=NaN%", "pie: ecn_prob=NaN%: want a fraction in [0, 1]"},
		{"fq_pie:ecn_prob=150%", "fq_pie: ecn_prob=150%: want a fraction in [0, 1]"},
		{"pie:ecn_prob=-0.1", "pie: ecn_prob=-0.1: want a fraction in [0, 1]"},
		{"codel:target=2h", "codel: target=2h: want a duration such as 10ms or 500us, from 0s to " + des.MaxVirtual.String()},
		{"codel:interval=2562048h", "codel: interval=2562048h: want a duration"},
		{"codel:ce_threshold=-1ms", "codel: ce_threshold=-1ms: want a duration"},
		{"pie:max_burst=99999999999999999999h", "pie: max_burst=99999999999999999999h: want a duration"},
		{"fq_codel:limit=4294967296", "fq_codel: limit=4294967296: want a packet count >= 1, or none (0) for no limit; at most 4294967295"},
		{"fq_codel:limit=99999999999999999999", "fq_codel: limit=99999999999999999999: want a packet count"},
		{"pfifo:limit=4294967296", "pfifo: limit=4294967296: want a decimal integer, at most 4294967295"},
		{"pfifo:limit=1e3", "pfifo: limit=1e3: want a decimal integer"},
		{"fq_codel:flows=65537", "fq_codel: flows=65537: want a decimal integer, at most 65536"},
		{"drr:flows=99999999999999999999", "drr: flows=99999999999999999999: want a decimal integer, at most 65536"},
		{"fq_codel:drop_batch=4294967296", "fq_codel: drop_batch=4294967296: want a decimal integer, at most 4294967295"},
		{"fq_codel:quantum=1048577", "fq_codel: quantum=1048577: want a byte count such as 1514000 or 32MiB, a whole number from 0 to 1 MiB"},
		{"drr:quantum=2MiB", "drr: quantum=2MiB: want a byte count"},
		{"fq_pie:quantum=0", "fq_pie: quantum 0; the quantum must be at least 1 byte"},
		{"codel:mtu=65536", "codel: mtu=65536: want a byte count such as 1514000 or 32MiB, a whole number from 0 to 65535 bytes"},
		{"fq_codel:memory_limit=2TiB", "fq_codel: memory_limit=2TiB: want a byte count such as 1514000 or 32MiB, a whole number from 0 to 1 TiB"},
		{"bfifo:limit=1e300", "bfifo: limit=1e300: want a byte count"},
		{"bfifo:limit=1.5", "bfifo: limit=1.5: want a byte count"},
		{"fifo:bytes=NaN", "fifo: bytes=NaN: want a byte count"},
		{"fifo:bytes=-1", "fifo: bytes=-1: want a byte count"},
		{"fifo:packets=-1", "fifo: packets=-1: want a packet count"},
	} {
		q, err := New(c.spec, rng)
		require.ErrorContains(t, err, c.want, c.spec)
		require.Nil(t, q, c.spec)
	}

	// The bounds themselves are accepted, and the units are powers of
	// 1 024.
	check := func(spec string, f func(q Qdisc) bool) {
		t.Helper()
		q, err := New(spec, rng)
		require.NoError(t, err, spec)
		require.True(t, f(q), "%s: %+v", spec, q)
	}
	check("fq_codel:flows=65536,quantum=1MiB,limit=4294967295,drop_batch=4294967295,memory_limit=1TiB,target=1h,interval=1h,mtu=65535", func(q Qdisc) bool {
		c := q.(*FQCoDel).Config()
		return c.Flows == MaxFlows && c.Quantum == 1<<20 && c.Limit == MaxSpecPackets && c.DropBatch == MaxSpecPackets &&
			c.MemoryLimit == 1<<40 && c.Target == des.Hour && c.Interval == des.Hour && c.MTU == 65535
	})
	check("pie:alpha=32,beta=0,ecn_prob=100%,max_burst=0s,tupdate=1h", func(q Qdisc) bool {
		c := q.(*PIE).Config()
		return c.Alpha == 32 && c.Beta == 0 && c.ECNProb == 1 && c.MaxBurst == 0 && c.TUpdate == des.Hour
	})
	check("fifo:bytes=64KiB,packets=unlimited", func(q Qdisc) bool { p, b := q.(*FIFO).Limits(); return p == 0 && b == 64<<10 })
	check("bfifo:limit=2MiB", func(q Qdisc) bool { _, b := q.(*FIFO).Limits(); return b == 2<<20 })
	check("bfifo:limit=1.5KiB", func(q Qdisc) bool { _, b := q.(*FIFO).Limits(); return b == 1536 })
	check("drr:quantum=1KiB", func(q Qdisc) bool { return q.(*DRR).Config().Quantum == 1024 })
}

// specCheckBounds checks that the numbers of an accepted discipline lie
// within the bounds of New's doc comment and the discipline's own.
func specCheckBounds(t *testing.T, spec string, q Qdisc) {
	t.Helper()
	dur := func(name string, d des.Time, positive bool) {
		t.Helper()
		lo := des.Time(0)
		if positive {
			lo = 1
		}
		if d < lo || d > des.MaxVirtual {
			t.Fatalf("%s: %s %v outside [%v, %v]", spec, name, d, lo, des.MaxVirtual)
		}
	}
	count := func(name string, v, lo, hi int) {
		t.Helper()
		if v < lo || v > hi {
			t.Fatalf("%s: %s %d outside [%d, %d]", spec, name, v, lo, hi)
		}
	}
	frac := func(name string, v, hi float64) {
		t.Helper()
		if math.IsNaN(v) || v < 0 || v > hi {
			t.Fatalf("%s: %s %v outside [0, %v]", spec, name, v, hi)
		}
	}
	codel := func(p CoDelParams) {
		dur("target", p.Target, true)
		dur("interval", p.Interval, true)
		dur("ce_threshold", p.CEThreshold, false)
		count("mtu", p.MTU, 1, MaxSpecMTU)
	}
	pie := func(p PIEParams) {
		dur("target", p.Target, true)
		dur("tupdate", p.TUpdate, true)
		dur("max_burst", p.MaxBurst, false)
		frac("alpha", p.Alpha, MaxSpecPIEGain)
		frac("beta", p.Beta, MaxSpecPIEGain)
		frac("ecn_prob", p.ECNProb, 1)
		count("mtu", p.MTU, 1, MaxSpecMTU)
	}
	fq := func(limit, flows, quantum int) {
		count("limit", limit, 0, MaxSpecPackets)
		count("flows", flows, 1, MaxFlows)
		count("quantum", quantum, 1, MaxSpecQuantum)
	}
	switch q := q.(type) {
	case *FIFO:
		p, b := q.Limits()
		count("packets", p, 0, MaxSpecPackets)
		count("bytes", b, 0, int(des.MaxBytes))
	case *CoDel:
		c := q.Config()
		codel(c.CoDelParams)
		count("limit", c.Limit, 0, MaxSpecPackets)
	case *FQCoDel:
		c := q.Config()
		codel(c.CoDelParams)
		fq(c.Limit, c.Flows, c.Quantum)
		count("memory_limit", c.MemoryLimit, 0, int(des.MaxBytes))
		count("drop_batch", c.DropBatch, 1, MaxSpecPackets)
	case *PIE:
		c := q.Config()
		pie(c.PIEParams)
		count("limit", c.Limit, 0, MaxSpecPackets)
	case *FQPIE:
		c := q.Config()
		pie(c.PIEParams)
		fq(c.Limit, c.Flows, c.Quantum)
		count("memory_limit", c.MemoryLimit, 0, int(des.MaxBytes))
	case *DRR:
		c := q.Config()
		fq(c.Limit, c.Flows, c.Quantum)
	case *ShadowFIFO, *ShadowRR:
	default:
		t.Fatalf("%s: unexpected discipline %T", spec, q)
	}
}

// FuzzSpec: New never panics; it returns a discipline or an error, never
// both; an accepted discipline's numbers lie within the bounds, and it
// carries a few packets.
func FuzzSpec(f *testing.F) {
	for _, s := range []string{
		"fifo", "fifo:packets=5,bytes=1k", "pfifo:limit=1000", "bfifo:limit=1514000",
		"codel:limit=none,sqrt=float,ecn=on,ce_threshold=2ms,mtu=1500,interval=50ms",
		"fq_codel:memory_limit=32MiB,drop_batch=8,quantum=300,classify=sock,ce_threshold=off",
		"fq_codel:target=7ms,profile=simnet", "fq_codel:flows=65536,quantum=1m,limit=4294967295",
		"pie:profile=legacy,alpha=0.25,beta=2,max_burst=0s,ecn_prob=5%,bytemode=yes,dq_rate_estimator=on,burst=update,boost=off,limit=none",
		"fq_pie:flows=64,classify=pair,ecn_prob=0.2", "drr:sched=fq,classify=sock,limit=100,quantum=1500,flows=16",
		"shadow-fifo", "shadow-rr",
		"pie:alpha=NaN", "pie:ecn_prob=NaN%", "codel:target=2562048h", "bfifo:limit=99999999999g",
		"fq_codel:flows=-1", "pie:alpha=1e400", "fifo:bytes=1.5", "pfifo:limit=+5", "codel:mtu= 1500",
		"fifo" + strings.Repeat(" ", MaxSpecLen-4), "fifo" + strings.Repeat(" ", MaxSpecLen-3),
		"shadow-fifo" + strings.Repeat("\xd0", MaxSpecLen),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		q, err := New(spec, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			if q != nil {
				t.Fatalf("%q: a discipline with the error %v", spec, err)
			}
			if !strings.HasPrefix(err.Error(), "queues: spec ") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("%q: error %q is not one line naming the spec", spec, err)
			}
			return
		}
		specCheckBounds(t, spec, q)
		for i := range 8 {
			q.Enqueue(mkpkt(i%3, 100+i, uint64(i)), des.Time(i)*ms)
		}
		for i := 0; i < 8 && q.Dequeue(des.Time(8+i)*ms) != nil; i++ {
		}
		conserved(t, q)
	})
}
