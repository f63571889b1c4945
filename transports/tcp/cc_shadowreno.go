package tcp

// ShadowRenoCC is the Reno of Shadow 3.x's legacy TCP stack, with the
// constants of Shadow's tcp_cong_reno.c (docs/references.md, "Shadow"):
//
//   - initial window 10 segments, ssthresh infinite;
//   - slow start: cwnd grows by the number of segments each ACK
//     acknowledges; congestion avoidance: +1 per window acknowledged;
//   - three duplicate ACKs: ssthresh = cwnd/2 + 1, cwnd = ssthresh + 3,
//     +1 per further duplicate; the next ACK of new data sets
//     cwnd = ssthresh and ends recovery (classic Reno: partial ACKs are
//     not recognised, a later hole needs three new duplicates);
//   - retransmission timeout: ssthresh = cwnd/2 + 1, cwnd = 10 (not 1),
//     on every expiry.
//
// Not modelled because the facts are not recorded: whether Shadow caps
// slow start at ssthresh (here it does not: a stretch ACK may overshoot it
// once, then congestion avoidance runs) and whether it checks that the
// window was in use before growing it (here it does not, as classic Reno).
// With SACK on, the duplicate-ACK inflation is left out (cwnd = ssthresh
// during recovery), because the sender's flight then already excludes the
// SACKed segments (RFC 6675).
type ShadowRenoCC struct {
	iw, cwnd, ssthresh int
	caCount            int
	inflate            bool
}

// NewShadowReno returns Shadow's Reno with initial window iw.
func NewShadowReno(iw int, sack bool) *ShadowRenoCC {
	return &ShadowRenoCC{iw: iw, cwnd: iw, ssthresh: InfiniteSsthresh, inflate: !sack}
}

func (c *ShadowRenoCC) Name() string                 { return ShadowReno }
func (c *ShadowRenoCC) Cwnd() int                    { return c.cwnd }
func (c *ShadowRenoCC) Ssthresh() int                { return c.ssthresh }
func (c *ShadowRenoCC) SetWindow(cwnd, ssthresh int) { c.cwnd, c.ssthresh = cwnd, ssthresh }
func (c *ShadowRenoCC) Classic() bool                { return true }

func (c *ShadowRenoCC) OnAck(ev *AckEvent) {
	n := ev.Acked
	if n <= 0 {
		return
	}
	if c.cwnd < c.ssthresh {
		c.cwnd += n
		return
	}
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
	c.caCount = 0
}

func (c *ShadowRenoCC) RecoveryAck(ev *AckEvent) {
	if ev.Dup && c.inflate {
		c.cwnd++
	}
}

func (c *ShadowRenoCC) ExitRecovery(ev *AckEvent) {
	c.cwnd = c.ssthresh
	c.caCount = 0
}

func (c *ShadowRenoCC) OnRTO(ev *AckEvent, reduce bool) {
	c.ssthresh = c.cwnd/2 + 1
	c.cwnd = c.iw
	c.caCount = 0
}
