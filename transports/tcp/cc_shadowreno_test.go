package tcp

import (
	"testing"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
)

// TestShadowRenoRules steps Shadow's Reno through every rule
// docs/references.md, "Shadow", records and checks the exact windows.
func TestShadowRenoRules(t *testing.T) {
	c := NewShadowReno(10, false)
	check := func(step string, cwnd, ssthresh int) {
		t.Helper()
		if c.Cwnd() != cwnd || c.Ssthresh() != ssthresh {
			t.Fatalf("%s: cwnd %d ssthresh %d; want %d, %d", step, c.Cwnd(), c.Ssthresh(), cwnd, ssthresh)
		}
	}
	check("initial", 10, InfiniteSsthresh)
	if !c.Classic() || c.Name() != ShadowReno {
		t.Fatal("shadow-reno must be classic Reno named shadow-reno")
	}
	c.OnAck(&AckEvent{Acked: 7})
	check("slow start: + segments acked", 17, InfiniteSsthresh)
	c.OnAck(&AckEvent{Acked: 23})
	check("slow start", 40, InfiniteSsthresh)
	c.EnterRecovery(&AckEvent{Dup: true})
	check("three duplicates: ssthresh = cwnd/2+1, cwnd = ssthresh+3", 24, 21)
	c.RecoveryAck(&AckEvent{Dup: true})
	c.RecoveryAck(&AckEvent{Dup: true})
	check("+1 per further duplicate", 26, 21)
	c.ExitRecovery(&AckEvent{Acked: 1})
	check("new ACK: cwnd = ssthresh", 21, 21)
	for range 19 {
		c.OnAck(&AckEvent{Acked: 1})
	}
	check("avoidance: 20 of 21 acked, one by the ACK that ended recovery", 21, 21)
	c.OnAck(&AckEvent{Acked: 1})
	check("avoidance: +1 per window", 22, 21)
	c.OnAck(&AckEvent{Acked: 44})
	check("avoidance: two windows at once", 23, 21)
	c.OnRTO(&AckEvent{}, true)
	check("timeout: ssthresh = cwnd/2+1, cwnd = 10", 10, 12)
	c.OnRTO(&AckEvent{}, false)
	check("every timeout halves again", 10, 6)
	c.OnAck(&AckEvent{Acked: 1})
	check("slow start after a timeout: cwnd capped at ssthresh, even below 10", 6, 6)
	c.OnAck(&AckEvent{Acked: 1})
	check("avoidance: the 5 segments over ssthresh and this one make a window", 7, 6)

	// The preset's initial window is 1 (tcp_cong_reno_init); a timeout
	// still sets 10 (tcp_cong_reno_timeout_ev_).
	c = NewShadowReno(1, false)
	check("initial window 1", 1, InfiniteSsthresh)
	c.OnAck(&AckEvent{Acked: 1})
	check("the SYN's ACK in slow start", 2, InfiniteSsthresh)
	c.OnRTO(&AckEvent{}, true)
	check("timeout: cwnd = 10 whatever the initial window", 10, 2)

	// Slow start stops at ssthresh; a stretch ACK's excess goes to
	// congestion avoidance (ca_reno_slow_start_new_ack_ev_).
	c = NewShadowReno(10, false)
	c.OnAck(&AckEvent{Acked: 30})
	c.EnterRecovery(&AckEvent{Dup: true})
	c.OnRTO(&AckEvent{}, true)
	check("timeout in recovery: ssthresh = 24/2+1", 10, 13)
	c.OnAck(&AckEvent{Acked: 2})
	check("slow start", 12, 13)
	c.OnAck(&AckEvent{Acked: 5})
	check("stretch ACK: capped at ssthresh", 13, 13)
	c.OnAck(&AckEvent{Acked: 9})
	check("avoidance: 4 over ssthresh and 9 make a window of 13", 14, 13)
	c.EnterRecovery(&AckEvent{Dup: true})
	check("three duplicates", 11, 8)
	c.ExitRecovery(&AckEvent{Acked: 40})
	check("leaving recovery: cwnd = ssthresh, then 40 acked in avoidance (8+9+10+11)", 12, 8)

	s := NewShadowReno(10, true)
	s.OnAck(&AckEvent{Acked: 30})
	s.EnterRecovery(&AckEvent{})
	s.RecoveryAck(&AckEvent{Dup: true})
	if s.Cwnd() != 21 || s.Ssthresh() != 21 {
		t.Fatalf("with SACK: cwnd %d ssthresh %d; want 21, 21 (no inflation: the pipe excludes SACKed segments)", s.Cwnd(), s.Ssthresh())
	}
}

// TestShadowRenoFastRetransmit drops one segment of a bulk transfer under
// the Shadow profile: three duplicate ACKs retransmit it (no timeout), and
// the window after recovery is ssthresh = W/2+1 of the window W at the
// loss, plus one: the ACK that ends recovery acknowledges the W segments,
// which congestion avoidance counts (ca_reno_fast_recovery_new_ack_ev_),
// and W/2+1 <= W < 2(W/2+1).
func TestShadowRenoFastRetransmit(t *testing.T) {
	rec := &ccRecorder{}
	cfg := ShadowConfig()
	cfg.DelayedAck = DelAckOff // one duplicate ACK per segment
	cfg.NewCongestionControl = func(iw int, sack bool) CongestionControl {
		rec.CongestionControl = NewShadowReno(iw, sack)
		return rec
	}
	dq := newDropQueue(60) // the 60th data packet through the sender's uplink
	tn := newTestNet(t, cfg, netmodel.Config{}, link{up: 10e6, upQ: dq}, link{})
	f := tn.startFlow(0, 1, 80, 300<<10, 1)
	tn.sim.RunUntil(30 * des.Second)
	st := f.cli.Stats()
	if !f.intact() || st.Retransmits != 1 || st.FastRecoveries != 1 || st.RTOs != 0 {
		t.Fatalf("intact %v, retransmits %d, fast recoveries %d, RTOs %d; want one fast retransmit", f.intact(), st.Retransmits, st.FastRecoveries, st.RTOs)
	}
	if len(rec.enter) != 1 || len(rec.exit) != 1 {
		t.Fatalf("recoveries entered %d, left %d", len(rec.enter), len(rec.exit))
	}
	w := rec.enter[0].cwndBefore
	if rec.enter[0].cwndAfter != w/2+1+3 || rec.exit[0].cwndAfter != w/2+2 {
		t.Fatalf("loss at cwnd %d: recovery window %d, after %d; want %d and %d", w, rec.enter[0].cwndAfter, rec.exit[0].cwndAfter, w/2+4, w/2+2)
	}
}
