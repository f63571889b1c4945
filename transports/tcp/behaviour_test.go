package tcp

import (
	"math/rand/v2"
	"testing"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
)

// ackDelay writes n bytes on a fresh connection (20 ms RTT, no rate limit,
// fixed buffers) and returns how long after one RTT the data was
// acknowledged.
func ackDelay(t *testing.T, cfg Config, n int) des.Time {
	t.Helper()
	cfg.Autotune = AutotuneOff // no window update from a buffer growing
	tn := newTestNet(t, cfg, netmodel.Config{}, link{}, link{})
	f := tn.startFlow(0, 1, 80, int64(n), 1)
	f.noClose = true // a FIN would be acknowledged at once
	var wrote, acked des.Time = -1, -1
	tn.sample(0, des.Second, 100*des.Microsecond, func(now des.Time) {
		if wrote < 0 && f.written > 0 {
			wrote = now - 100*des.Microsecond
		}
		if wrote >= 0 && acked < 0 && f.cli.snd.una.After(f.cli.iss+1) && f.cli.Buffered() == 0 {
			acked = now
		}
	})
	tn.sim.RunUntil(des.Second)
	if wrote < 0 || acked < 0 {
		t.Fatalf("write at %v, acknowledged at %v", wrote, acked)
	}
	return acked - wrote - 20*des.Millisecond
}

// TestDelayedAcks: Linux acknowledges the first segments at once (quick
// ACK mode), later a lone segment after the 40 ms delayed-ACK timer, and
// every second full segment at once; Shadow delays every pure ACK by 1 ms,
// then by 5 ms after the first ShadowAckSwitch.
func TestDelayedAcks(t *testing.T) {
	near := func(got, want des.Time) bool { return got >= want && got <= want+200*des.Microsecond }
	lin := LinuxConfig()
	if d := ackDelay(t, lin, 100); !near(d, 0) {
		t.Fatalf("Linux, quick ACK mode: delay %v; want 0", d)
	}
	lin.QuickAcks = 0
	if d := ackDelay(t, lin, 100); !near(d, 40*des.Millisecond) {
		t.Fatalf("Linux, one segment: delay %v; want 40ms", d)
	}
	if d := ackDelay(t, lin, 2*1460); !near(d, 0) {
		t.Fatalf("Linux, two full segments: delay %v; want 0", d)
	}
	sh := ShadowConfig()
	if d := ackDelay(t, sh, 100); !near(d, des.Millisecond) {
		t.Fatalf("Shadow: delay %v; want 1ms", d)
	}
	sh10 := sh
	sh10.InitialCwnd = 10 // the 10 segments leave together
	if d := ackDelay(t, sh10, 10*1460); !near(d, des.Millisecond) {
		t.Fatalf("Shadow, 10 segments: delay %v; want 1ms (one ACK for the lot)", d)
	}
	sh.ShadowAckSwitch = 0
	if d := ackDelay(t, sh, 100); !near(d, 5*des.Millisecond) {
		t.Fatalf("Shadow after the switch: delay %v; want 5ms", d)
	}
}

// TestBufferAutotuning: Shadow's initial buffers are RTT × min(rate) ×
// 1.25 clamped to [16 KiB, 4 MiB] (send) and [87 380, 6 MiB] (receive);
// Linux starts the send buffer at 2 × 10 × 4 352 bytes and the receive
// buffer at tcp_rmem[1], and a bulk transfer grows both (DRS and
// tcp_sndbuf_expand) within tcp_rmem[2] / tcp_wmem[2]; Shadow's receive
// buffer grows to twice what is read per RTT.
func TestBufferAutotuning(t *testing.T) {
	type bufs struct{ snd, rcv int }
	run := func(cfg Config, rate int64, d des.Time) (bufs, bufs) {
		tn := newTestNet(t, cfg, netmodel.Config{Latency: netmodel.FixedLatency(25 * des.Millisecond)},
			link{up: rate, down: rate}, link{up: rate, down: rate})
		f := tn.startFlow(0, 1, 80, 0, 1)
		f.noHash = true
		var early bufs
		tn.sample(90*des.Millisecond, 90*des.Millisecond, des.Millisecond, func(des.Time) {
			s := f.cli.Stats()
			early = bufs{s.SndBuf, f.srv.Stats().RcvBuf}
		})
		tn.sim.RunUntil(d)
		return early, bufs{f.cli.Stats().SndBuf, f.srv.Stats().RcvBuf}
	}
	within := func(got, want int) bool { return got >= want && float64(got) <= float64(want)*1.01 }
	e, _ := run(ShadowConfig(), 10e6, 200*des.Millisecond)
	if !within(e.snd, 78125) || e.rcv != 87380 {
		t.Fatalf("Shadow at 10 Mbit/s, 50 ms: send %d, receive %d; want 78 125 (RTT × rate × 1.25) and 87 380 (the floor)", e.snd, e.rcv)
	}
	e, l := run(ShadowConfig(), 1e9, 3*des.Second)
	if e.snd != 4<<20 || e.rcv != 6<<20 || l.rcv != 6<<20 {
		t.Fatalf("Shadow at 1 Gbit/s: send %d, receive %d; want the ceilings 4 MiB and 6 MiB", e.snd, e.rcv)
	}
	e, l = run(ShadowConfig(), 50e6, 3*des.Second)
	if !within(e.rcv, 390625) || l.rcv <= e.rcv {
		t.Fatalf("Shadow at 50 Mbit/s: receive buffer %d then %d; want 390 625, then growth", e.rcv, l.rcv)
	}
	e, l = run(LinuxConfig(), 100e6, 5*des.Second)
	if e.snd != 87040 || e.rcv != 131072 {
		t.Fatalf("Linux at establishment: send %d, receive %d; want 87 040 and 131 072", e.snd, e.rcv)
	}
	if l.snd <= e.snd || l.snd > 4194304 || l.rcv <= e.rcv || l.rcv > 6291456 {
		t.Fatalf("Linux after 5 s at 100 Mbit/s: send %d, receive %d; want growth within 4 MiB / 6 MiB", l.snd, l.rcv)
	}
	t.Logf("Linux after 5 s at 100 Mbit/s, 50 ms: send buffer %d, receive buffer %d", l.snd, l.rcv)
}

// constSource is a rand source returning one value: a chosen ISS.
type constSource uint64

func (c constSource) Uint64() uint64 { return uint64(c) }

// TestSequenceWraparound: both initial sequence numbers sit 3 000 bytes
// below 2^32, so both directions' numbers wrap early in the transfer;
// with 2 % loss (SACK, retransmissions, recovery points across the wrap)
// the data arrive intact, and the FIN handshake completes.
func TestSequenceWraparound(t *testing.T) {
	for _, sack := range []bool{true, false} {
		cfg := LinuxConfig()
		cfg.SACK = sack
		tn := newTestNet(t, cfg, netmodel.Config{Loss: 0.02, Seed: 3}, link{up: 10e6}, link{up: 10e6})
		tn.eng.iss = rand.New(constSource(uint64(0xFFFFFFFF-3000) << 32))
		f := tn.startFlow(0, 1, 80, 1<<20, 4)
		tn.sim.RunUntil(120 * des.Second)
		if f.cli.iss != 0xFFFFFFFF-3000 {
			t.Fatalf("ISS %#x", uint32(f.cli.iss))
		}
		if !f.intact() || f.cli.Stats().Retransmits == 0 {
			t.Fatalf("SACK %v: intact %v, retransmits %d", sack, f.intact(), f.cli.Stats().Retransmits)
		}
		if f.cli.State() != StateClosed && f.cli.State() != StateTimeWait {
			t.Fatalf("SACK %v: client in %v after the exchange of FINs", sack, f.cli.State())
		}
	}
}

// TestZeroWindow: the reader stops for 5 s. The sender fills the offered
// window and waits at a window below one segment with data buffered,
// probing it (with window scaling the window is aligned to the scale's
// unit, not to segments, so a remainder of under a segment may stay
// offered); the read reopens the window with an update and the transfer
// completes intact.
func TestZeroWindow(t *testing.T) {
	tn := newTestNet(t, LinuxConfig(), netmodel.Config{}, link{up: 10e6}, link{up: 10e6})
	f := tn.startFlow(0, 1, 80, 2<<20, 5)
	f.paused = true
	tn.sim.RunUntil(3 * des.Second)
	st := f.cli.Stats()
	if st.SndWnd >= 1460 || st.PacketsOut != 0 || f.cli.Buffered() == 0 || f.read > 0 || f.srv.Readable() == 0 {
		t.Fatalf("paused reader: peer window %d, in flight %d, buffered %d, read %d, readable %d; want a window below one segment, data waiting on both sides",
			st.SndWnd, st.PacketsOut, f.cli.Buffered(), f.read, f.srv.Readable())
	}
	tn.sample(5*des.Second, 5*des.Second, 1, func(now des.Time) {
		f.paused = false
		f.readable(now)
	})
	tn.sim.RunUntil(60 * des.Second)
	if !f.intact() {
		t.Fatalf("after the pause: read %d of %d", f.read, f.written)
	}
}

// TestSynTimeout: SYNs into a black hole are retransmitted after 1, 2,
// 4, …, 64 s (six retries, Linux's tcp_syn_retries), and the connection
// fails with ETIMEDOUT 127 s after the first.
func TestSynTimeout(t *testing.T) {
	tn := newTestNet(t, LinuxConfig(), netmodel.Config{Loss: 0.999999}, link{}, link{})
	ep, err := tn.eng.Connect(0, 1, 80, 0)
	if err != nil {
		t.Fatal(err)
	}
	var failed des.Time = -1
	var ferr error
	ep.SetCallbacks(Callbacks{Closed: func(err error, now des.Time) { failed, ferr = now, err }})
	tn.sim.Run()
	if failed != 127*des.Second || ferr != ErrTimedOut || ep.stats.SegsOut != 7 {
		t.Fatalf("failed at %v with %v after %d SYNs; want 127s, ETIMEDOUT, 7", failed, ferr, ep.stats.SegsOut)
	}
}

// TestPacingRate: the pacing rate is 200 % of cwnd × MSS / SRTT while
// cwnd < ssthresh/2, 120 % after (Linux's tcp_update_pacing_rate).
func TestPacingRate(t *testing.T) {
	cfg := LinuxConfig()
	cfg.HyStart = false
	tn := newTestNet(t, cfg, netmodel.Config{}, link{up: 10e6}, link{})
	f := tn.startFlow(0, 1, 80, 0, 1)
	tn.sim.RunUntil(100 * des.Millisecond)
	check := func(ratio float64) {
		t.Helper()
		s := f.cli.Stats()
		w := max(s.Cwnd, s.PacketsOut)
		want := ratio * float64(w) * 1460 / s.SRTT.Seconds()
		if d := s.PacingRate/want - 1; d > 0.001 || d < -0.001 {
			t.Fatalf("pacing rate %.0f B/s at cwnd %d, ssthresh %d, srtt %v; want %.0f", s.PacingRate, s.Cwnd, s.Ssthresh, s.SRTT, want)
		}
	}
	check(2)
	cc := f.cli.snd.cc.(*CubicCC)
	cc.ssthresh = cc.cwnd // as after HyStart
	check(1.2)
}

// TestSlowStartAfterIdle follows Linux's selftest
// tcp_slow_start_slow-start-after-idle.pkt: a connection whose window grew
// in slow start, written to again after an idle period, restarts from
// min(cwnd, IW) with the window halved once per RTO of idle beyond the
// first (tcp_cwnd_restart); an idle period shorter than the RTO changes
// nothing, and neither does Shadow's TCP, which has no restart.
func TestSlowStartAfterIdle(t *testing.T) {
	cases := []struct {
		name  string
		idle  func(rto des.Time) des.Time // after the last data segment left
		want  func(cwnd int) int
		linux bool
	}{
		{"shorter than the RTO", func(rto des.Time) des.Time { return rto - des.Millisecond }, func(c int) int { return c }, true},
		{"between one and two RTOs", func(rto des.Time) des.Time { return rto * 3 / 2 }, func(c int) int { return c / 2 }, true},
		{"two seconds", func(des.Time) des.Time { return 2 * des.Second }, func(int) int { return 10 }, true},
		{"two seconds, Shadow's TCP", func(des.Time) des.Time { return 2 * des.Second }, func(c int) int { return c }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := LinuxConfig()
			if !tc.linux {
				cfg = ShadowConfig()
			}
			cfg = bigBuffers(cfg)
			tn := newTestNet(t, cfg, netmodel.Config{Latency: netmodel.FixedLatency(50 * des.Millisecond)}, link{}, link{})
			f := tn.startFlow(0, 1, 80, 60000, 3)
			f.noClose = true
			s := &f.cli.snd
			for step := des.Millisecond; (f.read < 60000 || s.segs.n > 0) && tn.sim.Now() < 5*des.Second; {
				tn.sim.RunUntil(tn.sim.Now() + step) // until the last ACK: the idle time starts before it
			}
			if f.read != 60000 || s.segs.n != 0 {
				t.Fatalf("first transfer: read %d of 60000, %d segments in flight", f.read, s.segs.n)
			}
			cwnd, ssthresh, rto := s.cc.Cwnd(), s.cc.Ssthresh(), s.rtt.current()
			if cwnd < 22 || ssthresh != InfiniteSsthresh {
				t.Fatalf("after the first transfer cwnd %d ssthresh %d; the test needs slow start past 2 × IW", cwnd, ssthresh)
			}
			at := s.lastDataSent + tc.idle(rto)
			if at <= tn.sim.Now() {
				t.Fatalf("write at %v is before now %v", at, tn.sim.Now())
			}
			var got, gotSsthresh int
			tn.sample(at, at, 1, func(now des.Time) {
				if _, err := f.cli.Write(make([]byte, 1000), now); err != nil {
					t.Fatal(err)
				}
				got, gotSsthresh = s.cc.Cwnd(), s.cc.Ssthresh()
			})
			tn.sim.RunUntil(at + des.Second)
			if want := tc.want(cwnd); got != want || gotSsthresh != InfiniteSsthresh {
				t.Fatalf("cwnd %d (ssthresh %d) before, %d (ssthresh %d) after %v idle with RTO %v; want %d, ssthresh unchanged",
					cwnd, ssthresh, got, gotSsthresh, tc.idle(rto), rto, want)
			}
		})
	}
}

// txRecorder is CUBIC that records its CA_EVENT_TX_START calls.
type txRecorder struct {
	*CubicCC
	calls [][2]des.Time
}

func (r *txRecorder) TxStart(lastSent, now des.Time) {
	r.calls = append(r.calls, [2]des.Time{lastSent, now})
	r.CubicCC.TxStart(lastSent, now)
}

// TestTxStartAfterIdle: the sender tells the controller when data leaves
// with nothing in flight (tcp_event_data_sent's CA_EVENT_TX_START): at the
// first segment, and after an idle period, with the time the last data
// segment left; never while segments are in flight.
func TestTxStartAfterIdle(t *testing.T) {
	rec := &txRecorder{}
	cfg := bigBuffers(LinuxConfig())
	cfg.NewCongestionControl = func(iw int, sack bool) CongestionControl {
		rec.CubicCC = NewCubic(iw, true)
		return rec
	}
	tn := newTestNet(t, cfg, netmodel.Config{Latency: netmodel.FixedLatency(50 * des.Millisecond)}, link{}, link{})
	f := tn.startFlow(0, 1, 80, 60000, 3)
	f.noClose = true
	tn.sim.RunUntil(2 * des.Second)
	last := f.cli.snd.lastDataSent
	if f.read != 60000 || len(rec.calls) != 1 {
		t.Fatalf("first transfer: read %d of 60000, %d TX_START events %v; want one, at the first segment", f.read, len(rec.calls), rec.calls)
	}
	tn.sample(3*des.Second, 3*des.Second, 1, func(now des.Time) {
		if _, err := f.cli.Write(make([]byte, 1000), now); err != nil {
			t.Fatal(err)
		}
	})
	tn.sim.RunUntil(4 * des.Second)
	if len(rec.calls) != 2 || rec.calls[1] != [2]des.Time{last, 3 * des.Second} {
		t.Fatalf("TX_START events %v; want a second one with the last segment's time %v and now 3s", rec.calls, last)
	}
}
