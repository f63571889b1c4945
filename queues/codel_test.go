package queues

import (
	"math"
	"strings"
	"testing"

	"github.com/uplinksim/uplink/des"
)

func newCoDelT(t *testing.T, mod func(*CoDelConfig)) (*CoDel, *dropLog) {
	t.Helper()
	cfg := DefaultCoDelConfig()
	cfg.Limit = 0
	return buildT(t, cfg, mod, NewCoDel)
}

// batch enqueues n packets of 1 500 bytes at `at`, then dequeues one every
// millisecond from at+1 ms until the queue is empty or `until`.
func batch(t *testing.T, q Qdisc, at des.Time, n int, until des.Time, ect bool) (delivered []*Packet) {
	t.Helper()
	for i := 0; i < n; i++ {
		p := mkpkt(0, 1500, uint64(i))
		p.ECT = ect
		q.Enqueue(p, at)
	}
	for now := at + ms; now <= until; now += ms {
		p := q.Dequeue(now)
		if p == nil {
			break
		}
		delivered = append(delivered, p)
		conserved(t, q)
	}
	return delivered
}

// floatSchedule is the drop schedule of RFC 8289 under a constant overload
// that began at t0 with a packet dequeued every millisecond: the sojourn
// reaches target at t0+target, the first drop comes one interval later,
// then drop n+1 comes interval/sqrt(n) after the instant drop n was due,
// at the first dequeue (whole millisecond) at or after it.
func floatSchedule(t *testing.T, firstDrop des.Time, firstCount int, end des.Time) []des.Time {
	t.Helper()
	want := []des.Time{firstDrop}
	due := float64(firstDrop) + 1e8/math.Sqrt(float64(firstCount))
	for n := firstCount + 1; ; n++ {
		at := des.Time(math.Ceil(due/1e6)) * ms
		if at > end {
			return want
		}
		if frac := due/1e6 - math.Floor(due/1e6); frac != 0 && (frac < 1e-3 || frac > 1-1e-3) {
			t.Fatalf("drop %d due at %.0f ns, too close to a dequeue instant for this test", n, due)
		}
		want = append(want, at)
		due += 1e8 / math.Sqrt(float64(n))
	}
}

func equalTimes(a, b []des.Time) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestCoDelDropScheduleFloat(t *testing.T) {
	q, log := newCoDelT(t, func(c *CoDelConfig) { c.FloatSqrt = true })
	batch(t, q, 0, 10000, 3*des.Second, false)
	want := floatSchedule(t, 105*ms, 1, 3*des.Second)
	if !equalTimes(log.times, want) {
		t.Fatalf("drops at %v\nwant %v", log.times, want)
	}
	if log.count(DropAQM) != len(want) || q.Stats().Drops[DropAQM] != uint64(len(want)) {
		t.Fatalf("reasons %v", log.reasons)
	}
	if len(want) < 100 {
		t.Fatalf("only %d drops in 3 s", len(want))
	}
}

// Linux's fixed-point 1/sqrt(count): one Newton step per increment from
// 0xffff. Known answers computed separately from the formula in
// include/net/codel.h (Q0.16 result, Q0.32 intermediates).
func TestCoDelNewtonStep(t *testing.T) {
	want := []uint16{32769, 36864, 31968, 28935, 26481, 24588, 23037, 21746, 20647, 19699}
	v := codelVars{count: 1, recInvSqrt: recInvSqrtOne}
	for i, w := range want {
		v.count++
		v.newtonStep()
		if v.recInvSqrt != w {
			t.Fatalf("count %d: rec_inv_sqrt %d, want %d", v.count, v.recInvSqrt, w)
		}
		_ = i
	}
	// It converges: within 1 % of 1/sqrt(count) from count 20 to 10 000.
	for v.count < 10000 {
		v.count++
		v.newtonStep()
		if exact := 1 / math.Sqrt(float64(v.count)); v.count >= 20 && !near(float64(v.recInvSqrt)/65536, exact, 0.01) {
			t.Fatalf("count %d: %v vs %v", v.count, float64(v.recInvSqrt)/65536, exact)
		}
	}
}

func TestCoDelDropScheduleLinux(t *testing.T) {
	q, log := newCoDelT(t, nil)
	batch(t, q, 0, 10000, 500*ms, false)
	// drop_next gaps in ns for count 1..7 with the Newton step:
	// 1e8 * rec_inv_sqrt / 2^16 for rec = 0xffff, 32769, 36864, ...
	gaps := []des.Time{99998474, 50001525, 56250000, 48779296, 44151306, 40406799, 37518310}
	want := []des.Time{105 * ms}
	due := 105 * ms
	for _, g := range gaps {
		due += g
		want = append(want, (due+ms-1)/ms*ms)
	}
	for len(want) > 0 && want[len(want)-1] > 500*ms {
		want = want[:len(want)-1]
	}
	// 105, 205, 255, 312, 361, 405, 445, 483 ms
	if !equalTimes(log.times, want) {
		t.Fatalf("drops at %v\nwant %v", log.times, want)
	}
}

func TestCoDelReentry(t *testing.T) {
	q, log := newCoDelT(t, func(c *CoDelConfig) { c.FloatSqrt = true })
	// Episode 1: drops at 105, 205, 276, 334 ms (count 4, lastcount 1); the
	// batch of 344 runs out at 340 ms and the one-MTU guard ends the
	// dropping state; drop_next stays at 383.4 ms.
	batch(t, q, 0, 344, des.Second, false)
	if want := []des.Time{105 * ms, 205 * ms, 276 * ms, 334 * ms}; !equalTimes(log.times, want) {
		t.Fatalf("episode 1 drops %v, want %v", log.times, want)
	}
	if q.state.count != 4 || q.state.lastcount != 1 || q.state.dropping {
		t.Fatalf("after episode 1: %+v", q.state)
	}
	// Episode 2 starts 121.6 ms after drop_next (< 16 intervals): count
	// restarts at count - lastcount = 3, so the next gap is
	// interval/sqrt(3), then /sqrt(4), /sqrt(5).
	log.times = nil
	batch(t, q, 400*ms, 400, 700*ms, false)
	want := floatSchedule(t, 505*ms, 3, 700*ms)
	if want[1] != 563*ms || !equalTimes(log.times, want) {
		t.Fatalf("episode 2 drops %v, want %v", log.times, want)
	}
	// Drain, then episode 3 long after (> 16 intervals): count restarts
	// at 1, so the next drop is a whole interval later.
	for q.Dequeue(800*ms) != nil {
	}
	log.times = nil
	batch(t, q, 4*des.Second, 300, 4*des.Second+300*ms, false)
	want = floatSchedule(t, 4*des.Second+105*ms, 1, 4*des.Second+300*ms)
	if want[1] != 4*des.Second+205*ms || !equalTimes(log.times, want) {
		t.Fatalf("episode 3 drops %v, want %v", log.times, want)
	}
	conserved(t, q)
}

// The one-MTU guard: with at most MTU bytes left behind the packet, CoDel
// never drops, however long the sojourn.
func TestCoDelMTUGuard(t *testing.T) {
	run := func(prefill, size int) (drops uint64, firstAbove des.Time) {
		q, _ := newCoDelT(t, nil) // MTU 1 514
		for i := 0; i < prefill; i++ {
			q.Enqueue(mkpkt(0, size, 0), 0)
		}
		for k := 1; k <= 50; k++ {
			now := des.Time(k) * 200 * ms
			q.Enqueue(mkpkt(0, size, uint64(k)), now)
			if q.Dequeue(now) == nil {
				t.Fatal("empty")
			}
		}
		conserved(t, q)
		return q.Stats().Drops[DropAQM], q.state.firstAbove
	}
	if d, fa := run(1, 1000); d != 0 || fa != 0 { // 1 000 bytes left behind
		t.Fatalf("1 000 bytes behind: %d drops, first_above %v", d, fa)
	}
	if d, _ := run(2, 757); d != 0 { // exactly 1 514 left: still guarded
		t.Fatalf("1 514 bytes behind: %d drops", d)
	}
	if d, _ := run(2, 758); d == 0 { // 1 516 left: CoDel acts
		t.Fatal("1 516 bytes behind: no drops")
	}
}

func TestCoDelECN(t *testing.T) {
	q, log := newCoDelT(t, func(c *CoDelConfig) { c.FloatSqrt = true; c.ECN = true })
	got := batch(t, q, 0, 2000, des.Second, true)
	var marked []des.Time
	for i, p := range got {
		if p.CE {
			marked = append(marked, des.Time(i+1)*ms)
		}
	}
	want := floatSchedule(t, 105*ms, 1, des.Second)
	if len(log.pkts) != 0 || !equalTimes(marked, want) || q.Stats().CEMarks != uint64(len(want)) {
		t.Fatalf("drops %d, marks at %v, want %v", len(log.pkts), marked, want)
	}
	// A packet that is not ECN-capable is still dropped.
	q2, log2 := newCoDelT(t, func(c *CoDelConfig) { c.FloatSqrt = true; c.ECN = true })
	batch(t, q2, 0, 2000, des.Second, false)
	if !equalTimes(log2.times, want) || q2.Stats().CEMarks != 0 {
		t.Fatalf("not-ECT: drops at %v", log2.times)
	}
}

func TestCoDelCEThreshold(t *testing.T) {
	q, log := newCoDelT(t, func(c *CoDelConfig) { c.CEThreshold = ms })
	for i := 0; i < 4; i++ {
		p := mkpkt(0, 1500, uint64(i))
		p.ECT = i != 3
		q.Enqueue(p, 0)
	}
	// Sojourns 0.5 ms, 1 ms, 2 ms (ECT) and 3 ms (not ECT).
	for i, at := range []des.Time{ms / 2, ms, 2 * ms, 3 * ms} {
		p := q.Dequeue(at)
		if want := i == 2; p.CE != want {
			t.Fatalf("packet %d at %v: CE %v, want %v", i, at, p.CE, want)
		}
	}
	if q.Stats().CEMarks != 1 || len(log.pkts) != 0 {
		t.Fatalf("marks %d drops %d", q.Stats().CEMarks, len(log.pkts))
	}
}

func TestCoDelLimit(t *testing.T) {
	q, log := newCoDelT(t, func(c *CoDelConfig) { c.Limit = 2 })
	for i := 0; i < 3; i++ {
		q.Enqueue(mkpkt(0, 100, uint64(i)), 0)
	}
	if q.Len() != 2 || log.count(DropOverlimit) != 1 || q.Stats().Enqueued != 2 || q.Stats().Refused != 1 {
		t.Fatalf("len %d drops %v", q.Len(), log.reasons)
	}
	conserved(t, q)
}

func TestCoDelConfigErrors(t *testing.T) {
	for _, c := range []struct {
		mod  func(*CoDelConfig)
		want string
	}{
		{func(c *CoDelConfig) { c.Target = 0 }, "codel: target 0s; the target must be positive"},
		{func(c *CoDelConfig) { c.Interval = -1 }, "interval must be positive"},
		{func(c *CoDelConfig) { c.MTU = 0 }, "MTU must be at least 1 byte"},
		{func(c *CoDelConfig) { c.Limit = -1 }, "or 0 for no limit"},
		{func(c *CoDelConfig) { c.CEThreshold = -1 }, "ce_threshold"},
	} {
		cfg := DefaultCoDelConfig()
		c.mod(&cfg)
		if _, err := NewCoDel(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
	if c := ShadowCoDelConfig(); c.Target != 10*ms || c.Limit != 0 || !c.FloatSqrt {
		t.Fatalf("shadow profile %+v", c)
	}
}
