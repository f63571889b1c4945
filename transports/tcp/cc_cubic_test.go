package tcp

import (
	"math"
	"testing"

	"github.com/uplinksim/uplink/des"
)

// cubicAfterLoss returns CUBIC after a loss at window wmax, out of
// recovery at cwnd = wmax·β, with a 100 ms min delay, and the instant.
func cubicAfterLoss(t *testing.T, wmax int, rtt des.Time) (*CubicCC, des.Time) {
	t.Helper()
	c := NewCubic(10, false)
	now := des.Second
	c.OnAck(&AckEvent{Now: now, Acked: wmax - 10, Delivered: wmax - 10, RTT: rtt, CwndLimited: true})
	if c.Cwnd() != wmax {
		t.Fatalf("slow start to %d: cwnd %d", wmax, c.Cwnd())
	}
	c.EnterRecovery(&AckEvent{Now: now, Delivered: 1, InFlight: wmax - 1, Pipe: wmax - 1})
	c.ExitRecovery(&AckEvent{Now: now + rtt})
	if want := wmax * cubicBeta / cubicBetaScale; c.Cwnd() != want || c.Ssthresh() != want || c.WMax() != wmax {
		t.Fatalf("after loss at %d: cwnd %d ssthresh %d W_max %d; want %d, %d, %d", wmax, c.Cwnd(), c.Ssthresh(), c.WMax(), want, want, wmax)
	}
	return c, now + rtt
}

// driveAcks feeds one ACK per segment, a window's worth per RTT evenly
// spread, from now until end; it returns the instant reached.
func driveAcks(c CongestionControl, now, end, rtt des.Time) des.Time {
	for now < end {
		w := c.Cwnd()
		gap := rtt / des.Time(w)
		for range w {
			now += gap
			c.OnAck(&AckEvent{Now: now, Acked: 1, Delivered: 1, RTT: rtt, CwndLimited: true})
		}
	}
	return now
}

// TestCubicCurve: after a loss at W_max = 100 with a 100 ms RTT, CUBIC's
// K is cbrt(W_max (1 − β) / C) = 4.215 s; the window follows
// W(t) = C (t + RTT − K)^3 + W_max, about one RTT behind its target:
// concave below W_max, at W_max around K, convex beyond.
func TestCubicCurve(t *testing.T) {
	const rtt = 100 * des.Millisecond
	c, now := cubicAfterLoss(t, 100, rtt)
	c0 := 410.0 / 1024
	beta := 717.0 / 1024
	k := math.Cbrt(100 * (1 - beta) / c0)
	w := func(el float64) float64 { return c0*math.Pow(el+rtt.Seconds()-k, 3) + 100 }
	start := now
	now = driveAcks(c, now, now+rtt, rtt)
	if got := c.K().Seconds(); math.Abs(got-k)/k > 0.01 {
		t.Fatalf("K = %.3f s; want %.3f s", got, k)
	}
	for _, el := range []float64{k / 2, k, 1.6 * k} {
		now = driveAcks(c, now, start+des.Time(el*1e9), rtt)
		want := w(el)
		if got := float64(c.Cwnd()); math.Abs(got-want) > 0.05*want+2 {
			t.Fatalf("at %.2f s after the loss: cwnd %.0f; the cubic curve gives %.1f", el, got, want)
		}
	}
}

// TestCubicTCPFriendly: with a small W_max (20) CUBIC's curve is slower
// than Reno's additive increase with β = 0.7 (3(1−β)/(1+β) ≈ 0.53 segments
// per RTT); the TCP-friendly estimate then sets the pace, so at t = K the
// window is about 14 + 0.53 K/RTT ≈ 27, not W_max.
func TestCubicTCPFriendly(t *testing.T) {
	const rtt = 100 * des.Millisecond
	c, now := cubicAfterLoss(t, 20, rtt)
	k := math.Cbrt(20 * (1 - 717.0/1024) / (410.0 / 1024))
	driveAcks(c, now, now+des.Time(k*1e9), rtt)
	want := 14 + 8.0/15*k/rtt.Seconds()
	if got := float64(c.Cwnd()); math.Abs(got-want) > 0.15*want {
		t.Fatalf("cwnd %.0f at K = %.2f s; the Reno-friendly window is %.1f", got, k, want)
	}
}

// TestCubicFastConvergence: a loss below the previous W_max lowers W_max to
// cwnd (1 + β) / 2; ssthresh is cwnd·β, at least 2.
func TestCubicFastConvergence(t *testing.T) {
	c, now := cubicAfterLoss(t, 100, 100*des.Millisecond)
	c.cwnd = 80
	c.EnterRecovery(&AckEvent{Now: now, Delivered: 1, InFlight: 79, Pipe: 79})
	if c.WMax() != 80*1741/2048 || c.Ssthresh() != 80*717/1024 {
		t.Fatalf("W_max %d ssthresh %d; want %d, %d", c.WMax(), c.Ssthresh(), 80*1741/2048, 80*717/1024)
	}
	c.cwnd = 2
	c.EnterRecovery(&AckEvent{Now: now, Delivered: 1, InFlight: 1, Pipe: 1})
	if c.Ssthresh() != 2 {
		t.Fatalf("ssthresh %d at cwnd 2; want 2", c.Ssthresh())
	}
	c.OnRTO(&AckEvent{Now: now}, true)
	if c.Cwnd() != 1 || c.WMax() != 0 {
		t.Fatalf("after a timeout: cwnd %d, W_max %d; want 1 and a reset state", c.Cwnd(), c.WMax())
	}
}

// TestCubicPRR: RFC 6937 on a loss at cwnd 20 (ssthresh 14, one segment
// lost): over the 19 deliveries of the rest of the flight (the first on the
// ACK that starts recovery), PRR sends ceil(14 × 19 / 20) = 14 segments,
// the first at once (the fast retransmit), and the pipe ends at ssthresh.
func TestCubicPRR(t *testing.T) {
	c := NewCubic(10, false)
	c.OnAck(&AckEvent{Acked: 10, Delivered: 10, CwndLimited: true})
	pipe, out := 18, 0
	step := func(enter bool) {
		ev := &AckEvent{Delivered: 1, InFlight: pipe, Pipe: pipe, PRROut: out}
		if enter {
			c.EnterRecovery(ev)
		} else {
			c.RecoveryAck(ev)
		}
		send := max(c.Cwnd()-pipe, 0)
		out += send
		pipe += send
	}
	step(true)
	if out != 1 {
		t.Fatalf("entering recovery sent %d; the fast retransmit is 1", out)
	}
	for range 18 {
		pipe--
		step(false)
	}
	if c.Ssthresh() != 14 || out != 14 || pipe != 14 {
		t.Fatalf("ssthresh %d, sent %d, pipe %d; want 14, 14, 14", c.Ssthresh(), out, pipe)
	}
}

// TestHyStart: the delay detector fires when the minimum of a round's
// first 8 RTT samples exceeds the min delay by more than
// clamp(min/8, 4 ms, 16 ms) (5 ms for 40 ms), not below; the ack-train
// detector fires once closely spaced ACKs span more than half the min
// delay (unpaced) or the whole min delay (paced).
func TestHyStart(t *testing.T) {
	const base = 40 * des.Millisecond
	setup := func() (*CubicCC, des.Time) {
		c := NewCubic(10, true)
		c.OnAck(&AckEvent{Acked: 10, Delivered: 10, CwndLimited: true})
		now := des.Second
		c.OnAck(&AckEvent{Now: now, RTT: base, SndUna: 1000, SndNxt: 2000})
		return c, now
	}
	delay := func(extra des.Time) bool {
		c, now := setup()
		for i := range 9 { // a new round: una past the previous end
			now += 3 * des.Millisecond // too far apart for an ack train
			c.OnAck(&AckEvent{Now: now, RTT: base + extra, SndUna: SeqNum(2001 + i), SndNxt: 3000})
		}
		return c.Ssthresh() == c.Cwnd()
	}
	if !delay(6 * des.Millisecond) {
		t.Fatal("delay increase of 6 ms (> 5 ms) did not end slow start")
	}
	if delay(4 * des.Millisecond) {
		t.Fatal("delay increase of 4 ms (< 5 ms) ended slow start")
	}
	train := func(span des.Time, paced bool) bool {
		c, now := setup()
		c.OnAck(&AckEvent{Now: now, RTT: base, SndUna: 2001, SndNxt: 3000, Paced: paced}) // round start
		for end := now + span; now < end; {
			now += des.Millisecond
			c.OnAck(&AckEvent{Now: now, RTT: base, SndUna: 2002, SndNxt: 3000, Paced: paced})
		}
		return c.Ssthresh() == c.Cwnd()
	}
	if !train(21*des.Millisecond, false) || train(19*des.Millisecond, false) {
		t.Fatal("unpaced ack train must fire past 20 ms (min delay / 2) and not before")
	}
	if !train(41*des.Millisecond, true) || train(39*des.Millisecond, true) {
		t.Fatal("paced ack train must fire past 40 ms (min delay) and not before")
	}
}

// TestCubicTxStart: data leaving with nothing in flight moves CUBIC's
// epoch forward by the idle time since the last data segment, never past
// now, and only once an epoch has started (cubictcp_cwnd_event).
func TestCubicTxStart(t *testing.T) {
	ms := func(n int64) des.Time { return des.Time(n) * des.Millisecond }
	c := NewCubic(10, false)
	c.TxStart(ms(1000), ms(1500))
	if c.epochValid || c.epochStart != 0 {
		t.Fatalf("no epoch yet: epoch %v start %d; want none", c.epochValid, c.epochStart)
	}
	c.epochValid, c.epochStart = true, 1000
	c.TxStart(ms(1500), ms(2000)) // 500 ms idle
	if c.epochStart != 1500 {
		t.Fatalf("epoch start %d ms after 500 ms idle from 1000; want 1500", c.epochStart)
	}
	c.epochStart = 1900
	c.TxStart(ms(1000), ms(2000)) // 1 s idle would move it past now
	if c.epochStart != 2000 {
		t.Fatalf("epoch start %d ms; want now, 2000", c.epochStart)
	}
	c.TxStart(ms(2000), ms(2000)) // no idle time
	if c.epochStart != 2000 {
		t.Fatalf("epoch start %d ms after no idle time; want 2000", c.epochStart)
	}
}
