package tcp

import (
	"testing"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
)

// TestNewRenoRules checks RFC 5681 / RFC 6582 arithmetic step by step.
func TestNewRenoRules(t *testing.T) {
	c := NewNewReno(10, false)
	check := func(step string, cwnd, ssthresh int) {
		t.Helper()
		if c.Cwnd() != cwnd || c.Ssthresh() != ssthresh {
			t.Fatalf("%s: cwnd %d ssthresh %d; want %d, %d", step, c.Cwnd(), c.Ssthresh(), cwnd, ssthresh)
		}
	}
	c.OnAck(&AckEvent{Acked: 5, Delivered: 5, CwndLimited: true})
	check("slow start: at most 2 per ACK (RFC 3465, L = 2)", 12, InfiniteSsthresh)
	c.OnAck(&AckEvent{Acked: 2, Delivered: 2, CwndLimited: false})
	check("no growth while the window is not used", 12, InfiniteSsthresh)
	c.EnterRecovery(&AckEvent{Outstanding: 30})
	check("fast retransmit: ssthresh = FlightSize/2, cwnd = ssthresh+3", 18, 15)
	c.RecoveryAck(&AckEvent{Dup: true, Delivered: 1})
	check("duplicate: +1", 19, 15)
	c.RecoveryAck(&AckEvent{Acked: 4, Delivered: 4})
	check("partial ACK of 4: deflate by 4, add 1", 16, 15)
	c.ExitRecovery(&AckEvent{Acked: 10, InFlight: 10})
	check("full ACK: min(ssthresh, FlightSize+1)", 11, 15)
	c.OnAck(&AckEvent{Acked: 2, Delivered: 2, CwndLimited: true})
	check("slow start below ssthresh", 13, 15)
	c.OnAck(&AckEvent{Acked: 2, Delivered: 2, CwndLimited: true})
	check("slow start up to ssthresh", 15, 15)
	c.OnAck(&AckEvent{Acked: 2, Delivered: 2, CwndLimited: true})
	check("at ssthresh: avoidance", 15, 15)
	for range 12 {
		c.OnAck(&AckEvent{Acked: 1, Delivered: 1, CwndLimited: true})
	}
	check("avoidance: 14 of 15", 15, 15)
	c.OnAck(&AckEvent{Acked: 1, Delivered: 1, CwndLimited: true})
	check("avoidance: +1 per window", 16, 15)
	c.OnRTO(&AckEvent{Outstanding: 20}, true)
	check("timeout: ssthresh = FlightSize/2, cwnd = 1", 1, 10)
	c.OnRTO(&AckEvent{Outstanding: 20}, false)
	check("repeated timeout keeps ssthresh", 1, 10)
	c.OnRTO(&AckEvent{Outstanding: 3}, true)
	check("ssthresh at least 2", 1, 2)

	s := NewNewReno(10, true)
	s.EnterRecovery(&AckEvent{Outstanding: 40})
	s.RecoveryAck(&AckEvent{Dup: true, Delivered: 1})
	s.RecoveryAck(&AckEvent{Acked: 3, Delivered: 3})
	if s.Cwnd() != 20 || s.Ssthresh() != 20 || s.Classic() {
		t.Fatalf("with SACK (RFC 6675): cwnd %d ssthresh %d; want 20, 20 through recovery", s.Cwnd(), s.Ssthresh())
	}
}

// TestNewRenoPartialAcks: two segments of one window are lost. Without
// SACK, NewReno repairs both in one fast recovery (the partial ACK
// retransmits the second hole), with no timeout; classic Reno (Shadow's)
// needs a second episode or a timeout for the second hole, and halves its
// window twice or more.
func TestNewRenoPartialAcks(t *testing.T) {
	run := func(cc string) (Stats, *ccRecorder, bool) {
		rec := &ccRecorder{}
		cfg := LinuxConfig()
		cfg.CongestionControl = cc
		cfg.SACK, cfg.Pacing, cfg.DelayedAck = false, false, DelAckOff
		cfg.NewCongestionControl = func(iw int, sack bool) CongestionControl {
			if cc == ShadowReno {
				rec.CongestionControl = NewShadowReno(iw, sack)
			} else {
				rec.CongestionControl = NewNewReno(iw, sack)
			}
			return rec
		}
		tn := newTestNet(t, cfg, netmodel.Config{}, link{up: 10e6, upQ: newDropQueue(100, 104)}, link{})
		f := tn.startFlow(0, 1, 80, 400<<10, 1)
		tn.sim.RunUntil(30 * des.Second)
		return f.cli.Stats(), rec, f.intact()
	}
	st, rec, ok := run(NewReno)
	if !ok || st.Retransmits != 2 || st.FastRecoveries != 1 || st.RTOs != 0 || len(rec.exit) != 1 {
		t.Fatalf("newreno: intact %v, retransmits %d, recoveries %d (left %d), RTOs %d; want 2, 1, 1, 0",
			ok, st.Retransmits, st.FastRecoveries, len(rec.exit), st.RTOs)
	}
	st, rec, ok = run(ShadowReno)
	if !ok || st.FastRecoveries+st.RTOs < 2 || len(rec.enter)+len(rec.rto) < 2 {
		t.Fatalf("classic reno: intact %v, recoveries %d, RTOs %d; want two reductions", ok, st.FastRecoveries, st.RTOs)
	}
}

// TestLostRetransmission: a segment and its fast retransmission are both
// lost. With SACK, the sender sees data sent after the retransmission
// SACKed, presumes the retransmission lost and sends it a third time,
// within the same recovery: no timeout.
func TestLostRetransmission(t *testing.T) {
	cfg := LinuxConfig()
	cfg.CongestionControl, cfg.Pacing = NewReno, false
	dq := newDropQueue(100)
	dq.again = true
	tn := newTestNet(t, cfg, netmodel.Config{}, link{up: 10e6, upQ: dq}, link{})
	f := tn.startFlow(0, 1, 80, 600<<10, 1)
	tn.sim.RunUntil(30 * des.Second)
	st := f.cli.Stats()
	if !f.intact() || st.Retransmits != 2 || st.LostRetransmits != 1 || st.RTOs != 0 || st.FastRecoveries != 1 {
		t.Fatalf("intact %v, retransmits %d, lost retransmissions %d, RTOs %d, recoveries %d; want 2, 1, 0, 1",
			f.intact(), st.Retransmits, st.LostRetransmits, st.RTOs, st.FastRecoveries)
	}
}
