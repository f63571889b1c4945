package tcp

import (
	"testing"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
	"github.com/uplinksim/uplink/queues"
)

// The runs number a write per MSS from its first byte; a segment takes the
// number of its first byte's write-time segment; acknowledged runs go.
func TestPrioRuns(t *testing.T) {
	var r prioRuns
	next := uint64(0)
	take := func(n int) uint64 { f := next + 1; next += uint64(n); return f }
	r.add(1000, 3000, 1000, take) // 1, 2, 3
	r.add(4000, 1500, 1000, take) // 4, 5
	cases := []struct {
		seq  SeqNum
		want uint64
	}{{1000, 1}, {1999, 1}, {2000, 2}, {3500, 3}, {4000, 4}, {5000, 5}, {5499, 5}, {5500, 0}, {999, 0}}
	for _, c := range cases {
		if got := r.of(c.seq); got != c.want {
			t.Errorf("priority at %d: %d, want %d", c.seq, got, c.want)
		}
	}
	r.trim(4000)
	if r.of(3500) != 0 || r.of(4500) != 4 {
		t.Fatalf("after trim to 4000: %d, %d; want 0 and 4", r.of(3500), r.of(4500))
	}
	r.trim(5500)
	if len(r.runs) != 0 {
		t.Fatalf("%d runs left after everything was acknowledged", len(r.runs))
	}
}

// Two connections from one node through a 10 Mbit/s uplink, each given
// 512 KiB in the same instant, connection A's write first (Shadow's TCP,
// a send buffer that takes the whole write). Under Shadow's fifo, which
// sends by write order, A keeps the uplink whenever its window allows and
// finishes in about half the time of B, as Shadow's whole-message
// mechanism (report section 4) needs; under a plain FIFO, which sends in
// the order the windows release segments, the two finish together.
func TestShadowFIFOSendsInWriteOrder(t *testing.T) {
	run := func(q queues.Qdisc) (a, b des.Time) {
		cfg := ShadowConfig()
		cfg.Autotune = AutotuneOff
		cfg.SendBuffer.Default = 1 << 20
		tn := newTestNet(t, cfg, netmodel.Config{}, link{up: 10e6, upQ: q}, link{}, link{})
		fa := tn.startFlow(0, 1, 80, 512<<10, 1)
		fb := tn.startFlow(0, 2, 80, 512<<10, 2)
		tn.sim.RunUntil(5 * des.Second)
		if !fa.intact() || !fb.intact() {
			t.Fatal("a transfer did not complete intact")
		}
		return fa.eofAt, fb.eofAt
	}
	a, b := run(queues.NewShadowFIFO())
	if float64(a) > 0.65*float64(b) {
		t.Errorf("shadow fifo: A done at %v, B at %v; want A well ahead (< 65 %% of B)", a, b)
	}
	pa, pb := run(queues.NewUnlimitedFIFO())
	if float64(pa) < 0.8*float64(pb) {
		t.Errorf("plain fifo: A done at %v, B at %v; want them close (A > 80 %% of B)", pa, pb)
	}
	t.Logf("shadow fifo: A %v, B %v; plain fifo: A %v, B %v", a, b, pa, pb)
}
