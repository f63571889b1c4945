package tcp

import (
	"fmt"
	"math"
	"testing"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
	"github.com/uplinksim/uplink/queues"
)

// sampler calls fn every period from start to end of the simulation.
func (tn *testNet) sample(start, end, period des.Time, fn func(now des.Time)) {
	var tm *des.Timer
	tm = tn.sim.NewTimer(func(now des.Time) {
		fn(now)
		if now+period <= end {
			tn.sim.Schedule(tm, now+period)
		}
	})
	tn.sim.Schedule(tm, start)
}

// bigBuffers keeps socket buffers out of the way of a window experiment.
func bigBuffers(c Config) Config {
	c.Autotune = AutotuneOff
	c.SendBuffer = BufferSizes{c.MSS, 64 << 20, 64 << 20}
	c.RecvBuffer = BufferSizes{c.MSS, 64 << 20, 64 << 20}
	return c
}

// TestSlowStartDoubling: with unlimited bandwidth and a fixed 100 ms RTT,
// slow start doubles the window every round trip from the first one:
// exactly w0·2^k after k rounds, for each controller and delayed-ACK
// policy (Linux ACKs every second segment, Shadow one ACK per 1 ms for all
// the data of a round: counting segments, not ACKs, keeps the doubling).
// w0 is the initial window, 10 under Linux; Shadow's is 1, and its stack
// counts the ACK of the SYN as one segment acknowledged, so 2.
func TestSlowStartDoubling(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		w0   int
	}{
		{"shadow-reno/shadow-delack", ShadowConfig(), 2},
		{"cubic/linux-delack", func() Config { c := LinuxConfig(); c.HyStart, c.Pacing = false, false; return c }(), 10},
		{"newreno/linux-delack", func() Config { c := LinuxConfig(); c.CongestionControl, c.Pacing = NewReno, false; return c }(), 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const rtt = 100 * des.Millisecond
			tn := newTestNet(t, bigBuffers(tc.cfg), netmodel.Config{Latency: netmodel.FixedLatency(rtt / 2)}, link{}, link{})
			f := tn.startFlow(0, 1, 80, 0, 1)
			// The handshake takes one RTT; data rounds start at 1 RTT and
			// their ACKs arrive one RTT later. Sample mid-round.
			var got []int
			tn.sample(rtt+rtt/2, 9*rtt, rtt, func(des.Time) { got = append(got, f.cli.Stats().Cwnd) })
			tn.sim.RunUntil(9 * rtt)
			for k, w := range got {
				if want := tc.w0 << k; w != want {
					t.Fatalf("round %d: cwnd %d; want %d (windows per round %v)", k, w, want, got)
				}
			}
			if len(got) < 7 {
				t.Fatalf("only %d rounds sampled", len(got))
			}
		})
	}
}

// TestRenoSawtooth: one NewReno flow (SACK, unpaced) through a 10 Mbit/s
// bottleneck with a 67-packet drop-tail FIFO and 40 ms base RTT. The pipe
// holds BDP = 33.3 packets, so the window climbs by one per RTT to
// B + BDP ≈ 100, loses a packet, halves to ≈ 50 and climbs again: the
// sawtooth of period Σ_{W=50}^{100} W·1.2 ms ≈ 4.6 s (W/2 RTTs, each RTT
// W packet times since the queue never empties) and mean window
// (50 + 100)/2 = 75. Each is checked within 20 % over 120 s of steady
// state.
func TestRenoSawtooth(t *testing.T) {
	if testing.Short() {
		t.Skip("140 s of simulated time")
	}
	rec := &ccRecorder{}
	cfg := LinuxConfig()
	cfg.CongestionControl, cfg.Pacing = NewReno, false
	cfg = bigBuffers(cfg)
	cfg.NewCongestionControl = func(iw int, sack bool) CongestionControl {
		rec.CongestionControl = NewNewReno(iw, sack)
		return rec
	}
	q, err := queues.NewPfifo(67)
	if err != nil {
		t.Fatal(err)
	}
	const rate, rtt = 10e6, 40 * des.Millisecond
	tn := newTestNet(t, cfg, netmodel.Config{Latency: netmodel.FixedLatency(rtt / 2)}, link{up: rate, upQ: q}, link{})
	f := tn.startFlow(0, 1, 80, 0, 1)
	const warm, end = 20 * des.Second, 140 * des.Second
	var sum float64
	var n int
	tn.sample(warm, end, 10*des.Millisecond, func(des.Time) {
		sum += float64(f.cli.Stats().Cwnd)
		n++
	})
	tn.sim.RunUntil(end)
	var peaks, troughs []float64
	for _, e := range rec.enter {
		if e.at >= warm {
			peaks = append(peaks, float64(e.cwndBefore))
			troughs = append(troughs, float64(e.ssthresh))
		}
	}
	for _, e := range rec.rto {
		if e.at >= warm {
			t.Fatalf("a timeout at %v in the steady sawtooth", e.at)
		}
	}
	pkt := 1500 * 8 / rate
	bdp := rtt.Seconds() / pkt
	top := 67 + bdp
	period := 0.0
	for w := math.Round(top / 2); w <= math.Round(top); w++ {
		period += w * pkt
	}
	got := struct{ peak, trough, mean, period float64 }{mean(peaks), mean(troughs), sum / float64(n), (end - warm).Seconds() / float64(len(peaks))}
	t.Logf("losses %d: peak %.1f (want %.1f), trough %.1f (%.1f), mean %.1f (%.1f), period %.2f s (%.2f s)",
		len(peaks), got.peak, top, got.trough, top/2, got.mean, 0.75*top, got.period, period)
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"peak", got.peak, top}, {"trough", got.trough, top / 2}, {"mean", got.mean, 0.75 * top}, {"period", got.period, period}} {
		if math.Abs(c.got-c.want) > 0.2*c.want {
			t.Errorf("%s %.2f; analytic %.2f", c.name, c.got, c.want)
		}
	}
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// TestMathis: NewReno with SACK, every segment acknowledged (b = 1),
// random loss p on the data direction only, a 100 ms RTT and no
// bandwidth limit: the goodput is within 25 % of Mathis et al.'s
// MSS / RTT × sqrt(3 / (2p)).
func TestMathis(t *testing.T) {
	if testing.Short() {
		t.Skip("long loss-limited transfers")
	}
	for _, p := range []float64{0.001, 0.005, 0.02} {
		t.Run(fmt.Sprintf("p=%.1f%%", p*100), func(t *testing.T) {
			cfg := LinuxConfig()
			cfg.CongestionControl, cfg.Pacing, cfg.DelayedAck = NewReno, false, DelAckOff
			cfg = bigBuffers(cfg)
			const rtt = 100 * des.Millisecond
			ncfg := netmodel.Config{
				Latency: netmodel.FixedLatency(rtt / 2),
				Seed:    11,
				LossFunc: func(from, to int) float64 {
					if from == 0 {
						return p
					}
					return 0
				},
			}
			tn := newTestNet(t, cfg, ncfg, link{}, link{})
			f := tn.startFlow(0, 1, 80, 0, 1)
			f.noHash = true
			const warm, end = 10 * des.Second, 310 * des.Second
			var r0 int64
			tn.sim.RunUntil(warm)
			r0 = f.read
			tn.sim.RunUntil(end)
			got := float64(f.read-r0) * 8 / (end - warm).Seconds()
			want := 1460 * 8 / rtt.Seconds() * math.Sqrt(3/(2*p))
			st := f.cli.Stats()
			t.Logf("goodput %.3f Mbit/s, Mathis %.3f Mbit/s (%.0f%%); recoveries %d, RTOs %d",
				got/1e6, want/1e6, 100*got/want, st.FastRecoveries, st.RTOs)
			if math.Abs(got-want) > 0.25*want {
				t.Fatalf("goodput %.3f Mbit/s is not within 25%% of Mathis's %.3f Mbit/s", got/1e6, want/1e6)
			}
		})
	}
}

// TestCubicFairness: two CUBIC flows (Linux profile) from two nodes to a
// third share its 20 Mbit/s downlink, a 100-packet drop-tail FIFO, with
// equal 40 ms RTTs; the second starts 1 s later. Over the 60 s after both
// run, each gets within 10 % of a fair share.
func TestCubicFairness(t *testing.T) {
	if testing.Short() {
		t.Skip("60 s of two flows")
	}
	q, err := queues.NewPfifo(100)
	if err != nil {
		t.Fatal(err)
	}
	tn := newTestNet(t, LinuxConfig(), netmodel.Config{Latency: netmodel.FixedLatency(20 * des.Millisecond)},
		link{}, link{}, link{down: 20e6, downQ: q})
	a := tn.startFlow(0, 2, 80, 0, 1)
	a.noHash = true
	tn.sim.RunUntil(des.Second)
	b := tn.startFlow(1, 2, 81, 0, 2)
	b.noHash = true
	const start, end = 5 * des.Second, 65 * des.Second
	tn.sim.RunUntil(start)
	a0, b0 := a.read, b.read
	tn.sim.RunUntil(end)
	ra, rb := float64(a.read-a0), float64(b.read-b0)
	share := ra / (ra + rb)
	util := (ra + rb) * 8 / (end - start).Seconds() / 20e6
	t.Logf("flow A %.1f%%, flow B %.1f%% of %.1f%% utilisation", 100*share, 100*(1-share), 100*util)
	if math.Abs(share-0.5) > 0.05 {
		t.Fatalf("shares %.3f / %.3f; want each within 10%% of 0.5", share, 1-share)
	}
	if util < 0.9 {
		t.Fatalf("link utilisation %.2f; two CUBIC flows should fill it", util)
	}
}

// TestPacingQueue: slow start through a 100 Mbit/s uplink with an
// unlimited FIFO, 100 ms RTT (BDP 833 packets), CUBIC without HyStart,
// 1 270 segments (rounds of 10, 20, …, 640, all below the BDP). Unpaced,
// each ACK releases twice what it acknowledges while ACKs arrive at the
// bottleneck's pace, so the queue grows by one packet per packet time
// through a round and peaks at the previous round's whole window, 320
// packets (±20 %). Paced at 200 % of cwnd/SRTT, the sender stays below
// the bottleneck rate until cwnd passes BDP/2 (416): the queue only builds
// late in the last round, by the excess of the paced rate over the line
// (at most 2 × 640 / 0.1 s − 8 333 = 4 467 packets/s) for the few tens of
// milliseconds its ACKs take, so it peaks several times lower: under a
// third of the unpaced peak.
func TestPacingQueue(t *testing.T) {
	peak := func(paced bool) int {
		cfg := LinuxConfig()
		cfg.HyStart, cfg.Pacing = false, paced
		cfg = bigBuffers(cfg)
		q := queues.NewUnlimitedFIFO()
		tn := newTestNet(t, cfg, netmodel.Config{Latency: netmodel.FixedLatency(50 * des.Millisecond)}, link{up: 100e6, upQ: q}, link{})
		f := tn.startFlow(0, 1, 80, 1270*1460, 1)
		tn.sim.RunUntil(10 * des.Second)
		if !f.intact() {
			t.Fatalf("paced %v: transfer incomplete", paced)
		}
		return q.Stats().MaxLen
	}
	unpaced, paced := peak(false), peak(true)
	t.Logf("peak queue: unpaced %d packets, paced %d", unpaced, paced)
	if math.Abs(float64(unpaced)-320) > 0.2*320 {
		t.Fatalf("unpaced peak %d packets; analytic 320 (the previous round's window)", unpaced)
	}
	if paced > unpaced/3 {
		t.Fatalf("paced peak %d packets, not much below the unpaced %d", paced, unpaced)
	}
}

// TestRTOBlackout: a 2 s blackout (every packet lost both ways) in the
// middle of a transfer. The retransmission timer fires, backs off by
// doubling (Karn: no RTT sample in between), and the connection recovers
// when the path returns: the data arrive intact, and the next expiry
// after the blackout ends is the one that gets through.
func TestRTOBlackout(t *testing.T) {
	rec := &ccRecorder{}
	cfg := LinuxConfig()
	cfg.NewCongestionControl = func(iw int, sack bool) CongestionControl {
		rec.CongestionControl = NewCubic(iw, true)
		return rec
	}
	const from, to = 2 * des.Second, 4 * des.Second
	var sim *des.Sim
	ncfg := netmodel.Config{
		Latency: netmodel.FixedLatency(20 * des.Millisecond),
		LossFunc: func(int, int) float64 {
			if now := sim.Now(); now >= from && now < to {
				return 1
			}
			return 0
		},
	}
	tn := newTestNet(t, cfg, ncfg, link{up: 10e6, down: 10e6}, link{up: 10e6, down: 10e6})
	sim = tn.sim
	f := tn.startFlow(0, 1, 80, 8<<20, 3)
	tn.sim.RunUntil(60 * des.Second)
	if !f.intact() {
		t.Fatalf("transfer did not complete: read %d of %d, client %v", f.read, f.written, f.cli.State())
	}
	var times []des.Time
	for _, e := range rec.rto {
		if e.at >= from {
			times = append(times, e.at)
		}
	}
	if len(times) < 3 {
		t.Fatalf("%d timeouts during a 2 s blackout; want several", len(times))
	}
	for i := 2; i < len(times); i++ {
		a, b := times[i-1]-times[i-2], times[i]-times[i-1]
		if b != 2*a && b != min(2*a, cfg.RTOMax) {
			t.Fatalf("timeouts at %v: interval %v after %v, not doubled", times, b, a)
		}
	}
	last := times[len(times)-1]
	if last < to || times[len(times)-2] >= to {
		t.Fatalf("timeouts at %v: the last should be the first after the blackout (%v)", times, to)
	}
	t.Logf("timeouts at %v; done at %v", times, f.eofAt)
}
