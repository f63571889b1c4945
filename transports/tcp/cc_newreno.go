package tcp

// NewRenoCC is NewReno: RFC 5681's congestion control with RFC 6582's
// fast recovery.
//
//   - Slow start (cwnd < ssthresh): cwnd grows by the segments each ACK
//     delivers, at most 2 per ACK (RFC 3465 appropriate byte counting with
//     L = 2·SMSS, which RFC 5681 §3.1 allows).
//   - Congestion avoidance: +1 segment per cwnd segments delivered (RFC
//     5681 §3.1 with byte counting).
//   - The window grows only while it limits sending (RFC 7661's concern;
//     Linux's tcp_is_cwnd_limited).
//   - Fast retransmit: ssthresh = max(FlightSize/2, 2) (RFC 5681 eq. 4),
//     cwnd = ssthresh + 3, +1 per further duplicate ACK; a partial ACK
//     deflates cwnd by the segments it acknowledges and adds one back
//     (RFC 6582 §3.2 step 5); the full ACK sets cwnd =
//     min(ssthresh, max(FlightSize, 1) + 1) (step 3, option 1).
//   - With SACK the sender follows RFC 6675 instead: cwnd = ssthresh for
//     the whole recovery, and the pipe, which excludes SACKed segments,
//     does what inflation does without SACK.
//   - Retransmission timeout: ssthresh = max(FlightSize/2, 2) unless the
//     timeout repeats one already reacted to, cwnd = 1 (RFC 5681 §3.1,
//     loss window).
type NewRenoCC struct {
	cwnd, ssthresh int
	caCount        int
	inflate        bool
}

// NewNewReno returns NewReno with initial window iw.
func NewNewReno(iw int, sack bool) *NewRenoCC {
	return &NewRenoCC{cwnd: iw, ssthresh: InfiniteSsthresh, inflate: !sack}
}

func (c *NewRenoCC) Name() string                 { return NewReno }
func (c *NewRenoCC) Cwnd() int                    { return c.cwnd }
func (c *NewRenoCC) Ssthresh() int                { return c.ssthresh }
func (c *NewRenoCC) SetWindow(cwnd, ssthresh int) { c.cwnd, c.ssthresh = cwnd, ssthresh }
func (c *NewRenoCC) Classic() bool                { return false }

func (c *NewRenoCC) OnAck(ev *AckEvent) {
	if !ev.CwndLimited || ev.Delivered <= 0 {
		return
	}
	if c.cwnd < c.ssthresh {
		c.cwnd += min(ev.Delivered, 2)
		return
	}
	c.caCount += ev.Delivered
	if c.caCount >= c.cwnd {
		c.caCount -= c.cwnd
		c.cwnd++
	}
}

func (c *NewRenoCC) EnterRecovery(ev *AckEvent) {
	c.ssthresh = max(ev.Outstanding/2, 2)
	c.cwnd = c.ssthresh
	if c.inflate {
		c.cwnd += 3
	}
	c.caCount = 0
}

func (c *NewRenoCC) RecoveryAck(ev *AckEvent) {
	if !c.inflate {
		return
	}
	switch {
	case ev.Dup:
		c.cwnd++
	case ev.Acked > 0:
		c.cwnd = max(c.cwnd-ev.Acked+1, 1)
	}
}

func (c *NewRenoCC) ExitRecovery(ev *AckEvent) {
	c.cwnd = min(c.ssthresh, max(ev.InFlight, 1)+1)
	c.caCount = 0
}

func (c *NewRenoCC) OnRTO(ev *AckEvent, reduce bool) {
	if reduce {
		c.ssthresh = max(ev.Outstanding/2, 2)
	}
	c.cwnd = 1
	c.caCount = 0
}
