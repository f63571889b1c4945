package tcp

// ShadowRenoCC is the Reno of Shadow 3.x's legacy TCP stack, with the
// constants and state machine of Shadow's tcp_cong_reno.c
// (docs/references.md, "Shadow"): three states, slow start, congestion
// avoidance and fast recovery, each with its own handlers:
//
//   - initial window: the preset's InitialCwnd, 1 segment as Shadow's
//     tcp_cong_reno_init sets it (after ca_reno_init_ set 10; nothing in
//     tcp.c sets cwnd but these hooks), ssthresh infinite, slow start;
//     Shadow's stack counts the ACK of the SYN in it (countHandshake:
//     2 segments once the connection is established);
//   - slow start (ca_reno_slow_start_new_ack_ev_): cwnd grows by the
//     segments each ACK acknowledges, capped at ssthresh; the ACK that
//     reaches it moves to congestion avoidance, which counts the rest;
//   - congestion avoidance (ca_reno_cong_avoid_new_ack_ev_): +1 per
//     window acknowledged;
//   - three duplicate ACKs in slow start or congestion avoidance
//     (ca_reno_slow_start_duplicate_ack_ev_): ssthresh = cwnd/2 + 1,
//     cwnd = ssthresh + 3, fast recovery, +1 per further duplicate
//     (ca_reno_fast_recovery_duplicate_ack_ev_); the next ACK of new data
//     (ca_reno_fast_recovery_new_ack_ev_) sets cwnd = ssthresh and hands
//     its segments to congestion avoidance (classic Reno: partial ACKs are
//     not recognised, a later hole needs three new duplicates);
//   - retransmission timeout (tcp_cong_reno_timeout_ev_): ssthresh =
//     cwnd/2 + 1, cwnd = 10 (shadowRTOWindow, whatever the initial
//     window), slow start, on every expiry; so when ssthresh is below 10
//     the next ACK lowers cwnd to ssthresh.
//
// Shadow does not check that the window was in use before growing it, nor
// does this. With SACK on (not Shadow's preset), the duplicate-ACK
// inflation is left out (cwnd = ssthresh during recovery), because the
// sender's flight then already excludes the SACKed segments (RFC 6675).
type ShadowRenoCC struct {
	cwnd, ssthresh int
	caCount        int
	slowStart      bool
	inflate        bool
}

// shadowRTOWindow is the window tcp_cong_reno_timeout_ev_ sets on every
// retransmission timeout.
const shadowRTOWindow = 10

// NewShadowReno returns Shadow's Reno with initial window iw.
func NewShadowReno(iw int, sack bool) *ShadowRenoCC {
	return &ShadowRenoCC{cwnd: iw, ssthresh: InfiniteSsthresh, slowStart: true, inflate: !sack}
}

func (c *ShadowRenoCC) Name() string  { return ShadowReno }
func (c *ShadowRenoCC) Cwnd() int     { return c.cwnd }
func (c *ShadowRenoCC) Ssthresh() int { return c.ssthresh }
func (c *ShadowRenoCC) Classic() bool { return true }

func (c *ShadowRenoCC) SetWindow(cwnd, ssthresh int) {
	c.cwnd, c.ssthresh = cwnd, ssthresh
	c.slowStart = cwnd < ssthresh
}

// OnAck is ca_reno_slow_start_new_ack_ev_ in slow start: the segments
// acknowledged beyond ssthresh go to congestion avoidance.
func (c *ShadowRenoCC) OnAck(ev *AckEvent) {
	n := ev.Acked
	if n <= 0 {
		return
	}
	if c.slowStart {
		if c.cwnd+n < c.ssthresh {
			c.cwnd += n
			return
		}
		n = c.cwnd + n - c.ssthresh
		c.cwnd = c.ssthresh
		c.toCongAvoid()
	}
	c.congAvoid(n)
}

// toCongAvoid is Shadow's transition_to_cong_avoid, less the segments it
// hands on (the caller's congAvoid).
func (c *ShadowRenoCC) toCongAvoid() {
	c.slowStart = false
	c.caCount = 0
}

// congAvoid is ca_reno_cong_avoid_new_ack_ev_: one segment per window of
// segments acknowledged.
func (c *ShadowRenoCC) congAvoid(n int) {
	c.caCount += n
	for c.caCount >= c.cwnd {
		c.caCount -= c.cwnd
		c.cwnd++
	}
}

func (c *ShadowRenoCC) EnterRecovery(ev *AckEvent) {
	c.ssthresh = c.cwnd/2 + 1
	c.cwnd = c.ssthresh
	if c.inflate {
		c.cwnd += 3
	}
	c.slowStart = false
	c.caCount = 0
}

func (c *ShadowRenoCC) RecoveryAck(ev *AckEvent) {
	if ev.Dup && c.inflate {
		c.cwnd++
	}
}

// ExitRecovery is ca_reno_fast_recovery_new_ack_ev_: cwnd = ssthresh,
// then congestion avoidance counts the segments the ACK acknowledged.
func (c *ShadowRenoCC) ExitRecovery(ev *AckEvent) {
	c.cwnd = c.ssthresh
	c.toCongAvoid()
	c.congAvoid(max(ev.Acked, 0))
}

func (c *ShadowRenoCC) OnRTO(ev *AckEvent, reduce bool) {
	c.ssthresh = c.cwnd/2 + 1
	c.cwnd = shadowRTOWindow
	c.slowStart = true
	c.caCount = 0
}
