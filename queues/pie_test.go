package queues

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/uplinksim/uplink/des"
)

func newPIET(t *testing.T, mod func(*PIEConfig), rng *rand.Rand) (*PIE, *dropLog) {
	t.Helper()
	return buildT(t, DefaultPIEConfig(), mod, func(c PIEConfig) (*PIE, error) { return NewPIE(c, rngOr(rng, 1, 2)) })
}

// pieSteps30ms are p after k = 1..8 updates with a constant queue delay of
// 30 ms from p = 0 and qdelay_old = 0 (target 15 ms, alpha 0.125, beta
// 1.25), iterated by hand: step 1 scales by 1/2048 (p < 1e-6):
// (0.125*0.015 + 1.25*0.030)/2048 = 1.922607421875e-05; steps 2-7 add
// 0.125*0.015/128 = 1.46484375e-05 (1e-5 <= p < 1e-4); step 8 adds
// 0.125*0.015/32 = 5.859375e-05 (1e-4 <= p < 1e-3).
var pieSteps30ms = []float64{
	1.922607421875e-05, 3.387451171875e-05, 4.852294921875e-05, 6.317138671875e-05,
	7.781982421875e-05, 9.246826171875e-05, 1.0711669921875e-04, 1.6571044921875e-04,
}

func TestPIEProbabilityUpdate(t *testing.T) {
	prm := DefaultPIEParams()
	var v pieVars
	v.reset(&prm)
	v.qdelay = 30 * ms
	for k, want := range pieSteps30ms {
		v.update(&prm, 45000)
		if !near(v.prob, want, 1e-12) {
			t.Fatalf("update %d: p = %v, want %v", k+1, v.prob, want)
		}
	}
}

// The same values from the discipline: a packet every millisecond, each
// dequeued 30 ms after it arrived, with the timer running lazily.
func TestPIEProbabilityFromSojourn(t *testing.T) {
	q, log := newPIET(t, nil, nil)
	for k := 0; k <= 150; k++ {
		now := des.Time(k) * ms
		q.Enqueue(mkpkt(0, 1500, uint64(k)), now)
		if k >= 30 {
			if p := q.Dequeue(now); p == nil || now-p.Enqueued != 30*ms {
				t.Fatalf("sojourn at %v", now)
			}
		}
		// Updates at 15 and 30 ms saw no dequeue yet (qdelay 0); the first
		// 30 ms sample is used at 45 ms.
		if k >= 45 && k%15 == 0 {
			if want := pieSteps30ms[k/15-3]; !near(q.Prob(), want, 1e-12) {
				t.Fatalf("at %v: p = %v, want %v", now, q.Prob(), want)
			}
		}
	}
	if len(log.pkts) != 0 {
		t.Fatal("dropped")
	}
	conserved(t, q)
}

func TestPIEScalingCapBoostDecay(t *testing.T) {
	lin, rfc := DefaultPIEParams(), RFCPIEParams()
	cases := []struct {
		name              string
		prm               *PIEParams
		p                 float64
		qdelay, qdelayOld des.Time
		backlog           int
		want              float64
	}{
		// 0.125*(0.030-0.015) = 0.001875, scaled by 1/2 (0.01 <= p < 0.1).
		{"scale/2", &lin, 0.05, 30 * ms, 30 * ms, 1e5, 0.05 + 0.0009375},
		// by 1/8 (0.001 <= p < 0.01).
		{"scale/8", &lin, 0.005, 30 * ms, 30 * ms, 1e5, 0.005 + 0.000234375},
		// by 1/2048 (p < 0.000001).
		{"scale/2048", &lin, 1e-7, 30 * ms, 30 * ms, 1e5, 1e-7 + 0.001875/2048},
		// p >= 0.1: 0.125*0.185 = 0.023125 is capped at 0.02.
		{"cap", &lin, 0.5, 200 * ms, 200 * ms, 1e5, 0.52},
		// above 250 ms Linux adds 0.02 after the cap; RFC does not.
		{"boost", &lin, 0.5, 300 * ms, 300 * ms, 1e5, 0.54},
		{"rfc no boost", &rfc, 0.5, 300 * ms, 300 * ms, 1e5, 0.52},
		{"clamp 1", &lin, 0.99, 300 * ms, 300 * ms, 1e5, 1},
		// both delays 0, empty queue: -0.001875, then p -= p/64.
		{"decay", &lin, 0.5, 0, 0, 0, 0.498125 * 63 / 64},
		// zero delay over a non-empty queue: no decay.
		{"no decay", &lin, 0.5, 0, 0, 100, 0.498125},
		// beta: a rising delay adds 1.25*(0.020-0.010) = 0.0125, plus
		// alpha 0.125*0.005 = 0.000625, all /2 at p = 0.05.
		{"beta", &lin, 0.05, 20 * ms, 10 * ms, 1e5, 0.05 + 0.0065625},
	}
	for _, c := range cases {
		v := pieVars{prob: c.p, qdelay: c.qdelay, qdelayOld: c.qdelayOld}
		v.update(c.prm, c.backlog)
		if !near(v.prob, c.want, 1e-12) {
			t.Errorf("%s: p = %v, want %v", c.name, v.prob, c.want)
		}
	}
	// Both delays under target/2 with p reaching 0: the state is reset,
	// with a fresh burst allowance.
	v := pieVars{prob: 1e-9, qdelay: 5 * ms, qdelayOld: 5 * ms, accuProb: 3}
	v.update(&lin, 1e5)
	if v.prob != 0 || v.burst != lin.MaxBurst || v.accuProb != 0 {
		t.Fatalf("no reset: %+v", v)
	}
}

func TestPIEDerandomisation(t *testing.T) {
	prm := DefaultPIEParams()
	backlog := 10 * prm.MTU
	fresh := func(p float64) pieVars { return pieVars{prob: p, qdelay: 100 * ms} }

	// A draw that never drops: no drop and no draw while accu_prob < 0.85,
	// draws in [0.85, 8.5), a certain drop at 8.5 (p = 0.5: the 17th).
	src := &seqSource{v: ^uint64(0)}
	rng := rand.New(src)
	v := fresh(0.5)
	for k := 1; k <= 17; k++ {
		if got := v.dropEarly(&prm, backlog, 1500, rng); got != (k == 17) {
			t.Fatalf("call %d (accu %v): drop %v", k, v.accuProb, got)
		}
	}
	if src.draws != 15 {
		t.Fatalf("%d draws, want 15 (calls 2 to 16)", src.draws)
	}

	// A draw that always drops: p = 1/16 reaches 0.8125 at the 13th
	// arrival (still no draw) and 0.875 at the 14th.
	src = &seqSource{v: 0}
	rng = rand.New(src)
	v = fresh(1.0 / 16)
	for k := 1; k <= 14; k++ {
		if got := v.dropEarly(&prm, backlog, 1500, rng); got != (k == 14) {
			t.Fatalf("p 1/16, call %d: drop %v", k, got)
		}
	}
	if src.draws != 1 || v.accuProb != 0 {
		t.Fatalf("draws %d accu %v", src.draws, v.accuProb)
	}

	// p == 0 resets the accumulator.
	v = fresh(0)
	v.accuProb = 3
	v.dropEarly(&prm, backlog, 1500, rng)
	if v.accuProb != 0 {
		t.Fatal("accu_prob kept with p = 0")
	}

	// The early exits: burst allowance, low delay with p < 0.2, < 2 MTU.
	for name, v := range map[string]pieVars{
		"burst": {prob: 1, qdelay: 100 * ms, burst: 1},
		"delay": {prob: 0.19, qdelay: 7 * ms, accuProb: 8.5},
	} {
		if v.dropEarly(&prm, backlog, 1500, rng) {
			t.Errorf("%s: dropped", name)
		}
	}
	v = fresh(1)
	v.accuProb = 100
	if v.dropEarly(&prm, 2*prm.MTU-1, 1500, rng) {
		t.Error("dropped under 2 MTU")
	}
	v = pieVars{prob: 0.2, qdelay: 7 * ms, accuProb: 8.5}
	if !v.dropEarly(&prm, backlog, 1500, rng) {
		t.Error("p >= 0.2 must bypass the low-delay exit")
	}
}

func TestPIEBytemode(t *testing.T) {
	prm := DefaultPIEParams()
	prm.Bytemode = true
	rng := rand.New(&seqSource{v: ^uint64(0)})
	// Half an MTU: p counts half, so the certain drop comes at the 34th.
	v := pieVars{prob: 0.5, qdelay: 100 * ms}
	for k := 1; k <= 34; k++ {
		if got := v.dropEarly(&prm, 10*prm.MTU, prm.MTU/2, rng); got != (k == 34) {
			t.Fatalf("call %d: drop %v (accu %v)", k, got, v.accuProb)
		}
	}
	// Larger than the MTU: the full p.
	v = pieVars{prob: 0.5, qdelay: 100 * ms}
	for k := 1; k <= 17; k++ {
		if got := v.dropEarly(&prm, 10*prm.MTU, prm.MTU+1, rng); got != (k == 17) {
			t.Fatalf("oversize call %d: drop %v", k, got)
		}
	}
}

// Every drop resets accu_prob, tail drops included.
func TestPIEDropResetsAccu(t *testing.T) {
	q, log := newPIET(t, func(c *PIEConfig) { c.Limit = 1 }, nil)
	q.Enqueue(mkpkt(0, 1500, 0), 0)
	q.state.accuProb = 5
	if q.Enqueue(mkpkt(0, 1500, 1), 0) || log.count(DropOverlimit) != 1 || q.state.accuProb != 0 {
		t.Fatalf("tail drop: accu %v, drops %v", q.state.accuProb, log.reasons)
	}
	if s := q.Stats(); s.Refused != 1 || s.Enqueued != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// burstRun prefills 20 packets, then every 10 ms dequeues one and offers
// one, with p held at 1 (the controller can only keep it there), and
// returns the instant of the first early drop.
func burstRun(t *testing.T, mod func(*PIEConfig)) (des.Time, *PIE) {
	q, log := newPIET(t, mod, nil)
	for i := 0; i < 20; i++ {
		q.Enqueue(mkpkt(0, 1500, uint64(i)), 0)
	}
	q.state.prob = 1
	for k := 1; k <= 40; k++ {
		now := des.Time(k) * 10 * ms
		q.Dequeue(now)
		q.Enqueue(mkpkt(0, 1500, uint64(20+k)), now)
		if len(log.pkts) > 0 {
			if log.reasons[0] != DropAQM {
				t.Fatalf("reason %v", log.reasons[0])
			}
			return log.times[0], q
		}
	}
	t.Fatal("no early drop")
	return 0, nil
}

func TestPIEBurstAllowance(t *testing.T) {
	// Linux: the allowance shrinks by the time between dequeues: 10 ms per
	// dequeue from the second one (20 ms) on, so it is spent at 160 ms.
	at, q := burstRun(t, func(c *PIEConfig) { c.TUpdate = des.Second * 3600 })
	if at != 160*ms {
		t.Fatalf("Linux: first early drop at %v, want 160ms", at)
	}
	// RFC: it shrinks by tupdate (15 ms) per update: spent at the update
	// at 150 ms, which runs before the operations at 150 ms.
	at, q = burstRun(t, func(c *PIEConfig) { c.PIEParams = RFCPIEParams() })
	if at != 150*ms {
		t.Fatalf("RFC: first early drop at %v, want 150ms", at)
	}
	// Idle: the delay falls to 0, p decays to 0 and the allowance returns.
	now := 400 * ms
	for q.Dequeue(now) != nil {
	}
	q.Advance(now + 60*des.Second)
	if q.state.prob != 0 || q.state.burst != q.cfg.MaxBurst {
		t.Fatalf("after idle: %+v", q.state)
	}
	// A long idle period costs nothing and leaves the clock in the future.
	far := now + 3600*des.Second
	q.Advance(far)
	if q.NextUpdate() <= far || q.NextUpdate() > far+q.cfg.TUpdate || (q.NextUpdate()-q.cfg.Epoch)%q.cfg.TUpdate != 0 {
		t.Fatalf("next update %v after %v", q.NextUpdate(), far)
	}
}

func TestPIEECN(t *testing.T) {
	q, log := newPIET(t, func(c *PIEConfig) { c.ECN = true; c.TUpdate = 3600 * des.Second }, nil)
	for i := 0; i < 3; i++ {
		q.Enqueue(mkpkt(0, 1500, uint64(i)), 0) // burst allowance: accepted
	}
	set := func(p float64) { q.state.burst, q.state.qdelay, q.state.prob, q.state.accuProb = 0, 100*ms, p, 8.5 }
	ect := func(seq uint64) *Packet { p := mkpkt(0, 1500, seq); p.ECT = true; return p }

	set(0.1) // p <= 0.1: an ECN-capable packet is marked and queued
	p := ect(10)
	if !q.Enqueue(p, ms) || !p.CE || q.Stats().CEMarks != 1 || len(log.pkts) != 0 {
		t.Fatalf("p 0.1: accepted %v CE %v drops %d", q.Len(), p.CE, len(log.pkts))
	}
	set(0.1) // not ECN-capable: dropped
	if q.Enqueue(mkpkt(0, 1500, 11), ms) || log.count(DropAQM) != 1 || q.state.accuProb != 0 {
		t.Fatal("p 0.1, not ECT: not dropped")
	}
	set(0.11) // p > 0.1: dropped even if ECN-capable
	if p := ect(12); q.Enqueue(p, ms) || p.CE {
		t.Fatal("p 0.11: ECT packet not dropped")
	}
	conserved(t, q)
}

func TestPIELittlesLaw(t *testing.T) {
	q, _ := newPIET(t, func(c *PIEConfig) { c.DqRateEstimator = true }, nil)
	for i := 0; i < 40; i++ {
		q.Enqueue(mkpkt(0, 1500, uint64(i)), 0)
	}
	// The measurement starts at the first dequeue (1 ms, 58 500 bytes
	// left, >= 16 KiB) and counts that packet: at 11 ms 11 x 1 500 =
	// 16 500 bytes in 10 ms, 1.65 bytes/us.
	for k := 1; k <= 14; k++ {
		q.Dequeue(des.Time(k) * ms)
	}
	if !near(q.state.avgDqRate, 16500.0/(10*float64(ms)), 1e-12) {
		t.Fatalf("rate %v B/ns", q.state.avgDqRate)
	}
	// The update at 15 ms: 60 000 - 14 x 1 500 = 39 000 bytes at
	// 1.65 bytes/us is 23.636 ms.
	q.Advance(15 * ms)
	if d := q.QDelay() - 23636363; d < -2 || d > 2 {
		t.Fatalf("qdelay %v, want 23.636ms", q.QDelay())
	}
}

// pieOps drives two PIEs through the same random operations: `lazy` runs
// its own updates, `ref` never does (its epoch is far away) and gets every
// update from the test, at each multiple of tupdate, before the operations
// at that instant, as a kernel timer would. They must agree exactly.
func TestPIELazyEqualsTimer(t *testing.T) {
	for _, mod := range []func(*PIEConfig){
		func(c *PIEConfig) {},
		func(c *PIEConfig) { c.PIEParams = RFCPIEParams() },
		func(c *PIEConfig) { c.DqRateEstimator = true },
		func(c *PIEConfig) { c.ECN = true; c.Bytemode = true; c.MaxBurst = 0 },
	} {
		mk := func(far bool) *PIE {
			q, _ := newPIET(t, func(c *PIEConfig) {
				c.Limit = 300
				mod(c)
				if far {
					c.Epoch = des.Never / 2
				}
			}, rand.New(rand.NewPCG(7, 7)))
			return q
		}
		lazy, ref := mk(false), mk(true)
		ops := rand.New(rand.NewPCG(3, 4))
		var now, nextTick des.Time = 0, lazy.cfg.TUpdate
		seq := uint64(0)
		for step := 0; step < 40000; step++ {
			now += des.Time(ops.IntN(400)) * des.Microsecond
			if step%10000 > 8000 { // idle spells
				now += 50 * ms
			}
			for nextTick <= now {
				ref.state.update(&ref.cfg.PIEParams, ref.bytes)
				nextTick += lazy.cfg.TUpdate
			}
			phase := (step / 2500) % 3 // overload, balance, drain
			if ops.IntN(3) < 2-phase+1 {
				seq++
				size := 64 + ops.IntN(1450)
				ect := ops.IntN(2) == 0
				a, b := mkpkt(0, size, seq), mkpkt(0, size, seq)
				a.ECT, b.ECT = ect, ect
				if lazy.Enqueue(a, now) != ref.Enqueue(b, now) || a.CE != b.CE {
					t.Fatalf("step %d: enqueue decisions differ", step)
				}
			} else {
				a, b := lazy.Dequeue(now), ref.Dequeue(now)
				if (a == nil) != (b == nil) || (a != nil && a.Seq != b.Seq) {
					t.Fatalf("step %d: dequeues differ", step)
				}
			}
			if lazy.state != ref.state {
				t.Fatalf("step %d at %v: state\n%+v\n%+v", step, now, lazy.state, ref.state)
			}
		}
		if lazy.Stats().Drops[DropAQM] == 0 {
			t.Fatal("the comparison never exercised an early drop")
		}
		conserved(t, lazy)
	}
}

func TestPIEConfigErrors(t *testing.T) {
	for _, c := range []struct {
		mod  func(*PIEConfig)
		want string
	}{
		{func(c *PIEConfig) { c.Target = 0 }, "pie: target 0s; the target delay must be positive"},
		{func(c *PIEConfig) { c.TUpdate = 0 }, "tupdate"},
		{func(c *PIEConfig) { c.Alpha = -1 }, "alpha"},
		{func(c *PIEConfig) { c.Beta = 33 }, "beta"},
		{func(c *PIEConfig) { c.ECNProb = 2 }, "ecn_prob"},
		{func(c *PIEConfig) { c.MTU = 0 }, "mtu 0"},
		{func(c *PIEConfig) { c.MaxBurst = -1 }, "max_burst"},
		{func(c *PIEConfig) { c.Limit = -3 }, "or 0 for no limit"},
	} {
		cfg := DefaultPIEConfig()
		c.mod(&cfg)
		if _, err := NewPIE(cfg, rand.New(rand.NewPCG(1, 1))); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
	if _, err := NewPIE(DefaultPIEConfig(), nil); err == nil || !strings.Contains(err.Error(), "rand.Rand") {
		t.Errorf("nil rng: %v", err)
	}
	if p := LegacyPIEParams(); p.Target != 20*ms || p.TUpdate != 30*ms {
		t.Fatalf("legacy %+v", p)
	}
}
