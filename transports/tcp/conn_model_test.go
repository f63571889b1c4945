package tcp

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
)

// TestTransferLossless: 4 MiB over 20 Mbit/s and 20 ms of RTT, for each
// profile and controller, arrive intact, no faster than the line allows and
// without a retransmission.
func TestTransferLossless(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func() Config
	}{
		{"linux-cubic", LinuxConfig},
		{"shadow-reno", ShadowConfig},
		{"newreno-sack", func() Config { c := LinuxConfig(); c.CongestionControl = NewReno; c.Pacing = false; return c }},
		{"newreno-nosack", func() Config { c := LinuxConfig(); c.CongestionControl = NewReno; c.SACK = false; return c }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const size = 4 << 20
			tn := newTestNet(t, tc.cfg(), netmodel.Config{}, link{up: 20e6, down: 20e6}, link{up: 20e6, down: 20e6})
			f := tn.startFlow(0, 1, 80, size, 1)
			tn.sim.RunUntil(60 * des.Second)
			st := f.cli.Stats()
			if !f.intact() {
				t.Fatalf("not intact: wrote %d read %d eof %v; client %v err %v", f.written, f.read, f.eof, st.State, f.cliErr)
			}
			floor := des.Time(float64(size) * 8 / 20e6 * 1e9)
			if f.eofAt < floor || f.eofAt > 3*floor {
				t.Fatalf("took %v; the line needs %v", f.eofAt, floor)
			}
			if st.Retransmits != 0 {
				t.Fatalf("%d retransmissions on a lossless path", st.Retransmits)
			}
			t.Logf("%v, cwnd %d, srtt %v, segs out %d in %d", f.eofAt, st.Cwnd, st.SRTT, st.SegsOut, st.SegsIn)
		})
	}
}

// jitterLatency varies the one-way latency per packet, uniformly in
// [base, base+spread): packets overtake each other, which the network's
// pipe models by inserting later-sent, earlier-arriving packets in order.
type jitterLatency struct {
	base, spread des.Time
	rng          *rand.Rand
}

func (j *jitterLatency) Latency(from, to int) des.Time {
	return j.base + des.Time(j.rng.Int64N(int64(j.spread)))
}

// TestIntactUnderLossAndReordering: for every profile and controller, with
// and without SACK, 2 MiB cross a path that loses 3 % of packets each way
// and reorders them (latency 10 to 14 ms per packet); the bytes read
// hash to the bytes written, and the sender did retransmit.
func TestIntactUnderLossAndReordering(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func() Config
	}{
		{"linux-cubic", LinuxConfig},
		{"shadow-reno", ShadowConfig},
		{"cubic-nosack", func() Config { c := LinuxConfig(); c.SACK = false; return c }},
		{"newreno-sack", func() Config { c := LinuxConfig(); c.CongestionControl = NewReno; return c }},
		{"newreno-nosack", func() Config { c := LinuxConfig(); c.CongestionControl = NewReno; c.SACK = false; return c }},
		{"shadow-reno-sack", func() Config { c := ShadowConfig(); c.SACK = true; return c }},
	} {
		for _, loss := range []float64{0.01, 0.03} {
			t.Run(fmt.Sprintf("%s/loss%.0f%%", tc.name, loss*100), func(t *testing.T) {
				const size = 2 << 20
				lat := &jitterLatency{base: 10 * des.Millisecond, spread: 4 * des.Millisecond, rng: rand.New(rand.NewPCG(5, 6))}
				tn := newTestNet(t, tc.cfg(), netmodel.Config{Latency: lat, Loss: loss, Seed: 9},
					link{up: 20e6, down: 20e6}, link{up: 20e6, down: 20e6})
				f := tn.startFlow(0, 1, 80, size, 2)
				tn.sim.RunUntil(600 * des.Second)
				st := f.cli.Stats()
				if !f.intact() {
					t.Fatalf("not intact: wrote %d read %d eof %v; client %v err %v, stats %+v", f.written, f.read, f.eof, st.State, f.cliErr, st)
				}
				if st.Retransmits == 0 {
					t.Fatal("no retransmissions despite loss")
				}
				t.Logf("%v: retrans %d, fast recoveries %d, RTOs %d, dupacks %d", f.eofAt, st.Retransmits, st.FastRecoveries, st.RTOs, st.DupAcks)
			})
		}
	}
}
