package tcp

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
)

// TestLinuxMathis: the kernel TCP model (LinuxConfig: CUBIC, SACK, pacing,
// delayed ACKs, autotuning) under random loss p = 1 % on the data
// direction, 20 ms RTT, no rate limit, at MSS 1 460 and at 64 KB (MTU
// 65 535): the goodput is within 15 % of Mathis et al.'s MSS / RTT × C / √p
// with C = √(3/4) ≈ 0.87 (Mathis, Semke, Mahdavi, Ott, "The macroscopic
// behavior of the TCP congestion avoidance algorithm", 1997: C = √(3/(2b))
// for a receiver acknowledging every b-th segment; b = 2 with delayed
// ACKs). CUBIC keeps Reno's constant here: at this RTT its window after a
// loss is far below Reno's, so its Reno-friendly estimate governs, whose
// increase of 3(1 − β)/(1 + β) per RTT with β = 0.7 (RFC 9438 §4.3,
// tcp_cubic.c's beta_scale) gives Reno's mean window. The model measures
// C ≈ 0.95 at both segment sizes (1.04 without delayed ACKs: it counts
// acknowledged segments, as Linux does, so delayed ACKs cost less than
// b = 2 predicts).
func TestLinuxMathis(t *testing.T) {
	const rtt = 20 * des.Millisecond
	for _, c := range []struct {
		mtu  int
		p    float64
		dur  des.Time
		seed uint64
	}{{1500, 0.01, 120 * des.Second, 11}, {65535, 0.01, 120 * des.Second, 11}} {
		t.Run(fmt.Sprintf("mtu=%d", c.mtu), func(t *testing.T) {
			cfg := LinuxConfig()
			cfg.MSS = c.mtu - 40
			p := c.p
			ncfg := netmodel.Config{
				MTU:     c.mtu,
				Latency: netmodel.FixedLatency(rtt / 2),
				Seed:    c.seed,
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
			const warm = 5 * des.Second
			tn.sim.RunUntil(warm)
			r0 := f.read
			tn.sim.RunUntil(warm + c.dur)
			got := float64(f.read-r0) * 8 / c.dur.Seconds()
			want := float64(cfg.MSS) * 8 / rtt.Seconds() * math.Sqrt(0.75/p)
			st := f.cli.Stats()
			t.Logf("goodput %.2f Mbit/s, Mathis %.2f Mbit/s (%.0f%%); recoveries %d, RTOs %d",
				got/1e6, want/1e6, 100*got/want, st.FastRecoveries, st.RTOs)
			require.InDelta(t, want, got, 0.15*want, "goodput against Mathis")
		})
	}
}

// unpacedLoopbackFlow is a Linux flow at MTU 65 535 (MSS 65 495),
// unpaced, over 5 ms each way and no rate limit, always backlogged.
func unpacedLoopbackFlow(t *testing.T) (Config, *testNet, *flow) {
	t.Helper()
	cfg := LinuxConfig()
	cfg.MSS = 65535 - 40
	cfg.Pacing = false
	tn := newTestNet(t, cfg, netmodel.Config{MTU: 65535, Latency: netmodel.FixedLatency(5 * des.Millisecond)}, link{}, link{})
	f := tn.startFlow(0, 1, 80, 0, 1)
	f.noHash = true
	return cfg, tn, f
}

// TestLinuxLargeSegmentsNoStall: at MTU 65 535 (MSS 65 495), without
// loss, 10 ms RTT and no rate limit, Linux's buffers (tcp_rmem 128 KiB to
// start) grow: the first window carries two half-window segments
// (tcp_bound_to_half_wnd), the receive buffer grows, the segments reach
// the full MSS, and the send buffer (tcp_wmem[2], 4 MiB, sized per segment
// as tcp_sndbuf_expand does) is in flight almost whole. Unpaced, as Linux
// sends CUBIC without the fq qdisc (the Linux setups), a round trip's ACKs
// arrive at one instant and the writer, woken once the free space is half
// the queued data (sk_stream_is_writeable), runs after all of them and
// refills the whole buffer: above 95 % of it is in flight on average
// after the first second. Before, a 128 KiB buffer offered one whole
// segment per round trip, the bytes read per round trip never exceeded
// the first DRS measure, and the buffer never grew.
func TestLinuxLargeSegmentsNoStall(t *testing.T) {
	cfg, tn, f := unpacedLoopbackFlow(t)
	seg, sum, n := 0, 0.0, 0
	tn.sample(0, 3*des.Second, des.Millisecond, func(now des.Time) {
		seg = max(seg, f.cli.snd.segSize())
		if now >= des.Second {
			sum += float64(f.cli.snd.nxt.Sub(f.cli.snd.una))
			n++
		}
	})
	tn.sim.RunUntil(3 * des.Second)
	st := f.cli.Stats()
	mean := sum / float64(n)
	t.Logf("mean in flight %.0f bytes of a %d-byte send buffer (%.1f%%); receive buffer %d; segment %d; goodput %.0f Mbit/s",
		mean, st.SndBuf, 100*mean/float64(st.SndBuf), f.srv.Stats().RcvBuf, seg, float64(f.read)*8/3/1e6)
	require.Equal(t, cfg.SendBuffer.Max, st.SndBuf, "send buffer at tcp_wmem[2]")
	require.Greater(t, mean, 0.95*float64(st.SndBuf), "mean bytes in flight")
	require.Equal(t, cfg.MSS, seg, "segment size")
}

// TestWriterRunsAfterTheInstant: a writer woken by freed space runs after
// every event of its instant (helpers_test's flow, as real code under
// des.Live and a woken process after Linux's softirq), so an instant's
// burst of ACKs is freed whole before it writes, and the buffer is full
// after every instant. A writer run at the first ACK that makes the socket
// writeable leaves unfilled the space the burst's later ACKs free while
// the free space stays below half the queued data: the buffer then holds
// between two thirds and all of its size.
func TestWriterRunsAfterTheInstant(t *testing.T) {
	for _, deferred := range []bool{true, false} {
		t.Run(map[bool]string{true: "after the instant", false: "at the first ACK"}[deferred], func(t *testing.T) {
			_, tn, f := unpacedLoopbackFlow(t)
			if !deferred {
				f.cli.SetCallbacks(Callbacks{Established: f.writable, Writable: f.writable})
			}
			tn.sim.RunUntil(des.Second)
			s := &f.cli.snd
			lo, hi, waves, una := s.bufLimit, 0, 0, s.una
			tn.sample(des.Second, des.Second+100*des.Millisecond, des.Millisecond, func(des.Time) {
				lo, hi = min(lo, s.bufLen), max(hi, s.bufLen)
				if s.una != una {
					waves++
					una = s.una
				}
			})
			tn.sim.RunUntil(des.Second + 100*des.Millisecond)
			t.Logf("buffer held %d to %d of %d bytes over %d ACK bursts", lo, hi, s.bufLimit, waves)
			require.GreaterOrEqual(t, waves, 9, "a burst of ACKs per round trip")
			if deferred {
				require.Equal(t, s.bufLimit, lo, "the buffer full after every instant")
				return
			}
			require.Less(t, hi, s.bufLimit, "refilled before the burst's last ACK")
			require.GreaterOrEqual(t, 3*lo, 2*s.bufLimit, "at least two thirds of the buffer held")
		})
	}
}

// TestLinuxWindowNotRounded: with window scaling (Linux) the offered
// window is the free space aligned up to the scale's unit (128 bytes for
// tcp_rmem[2] 6 MiB: scale 7), not rounded down to whole segments; the
// Shadow model, without scaling, offers whole segments.
func TestLinuxWindowNotRounded(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
		want func(free, mss int) int
	}{
		{"linux", LinuxConfig(), func(free, _ int) int { return (free + 127) / 128 * 128 }},
		{"shadow", ShadowConfig(), func(free, mss int) int { return free - free%mss }},
	} {
		t.Run(c.name, func(t *testing.T) {
			tn := newTestNet(t, c.cfg, netmodel.Config{}, link{up: 10e6}, link{up: 10e6})
			f := tn.startFlow(0, 1, 80, 1<<20, 1)
			f.paused = true
			tn.sim.RunUntil(70 * des.Millisecond) // established, the first segments held unread
			r := &f.srv.rcv
			if c.name == "linux" {
				require.Equal(t, 7, r.wscale, "window scale")
			}
			free := r.readSeq.Add(r.win).Sub(r.nxt)
			require.NotZero(t, free%1460, "free space a whole number of segments: pick another instant")
			require.GreaterOrEqual(t, 2*free, r.win, "over half the buffer free")
			r.advRight = r.nxt // the rounding alone, not the right edge's floor
			require.Equal(t, c.want(free, 1460), r.window())
		})
	}
}
