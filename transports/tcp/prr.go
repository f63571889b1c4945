package tcp

// prr is Proportional Rate Reduction (RFC 6937), the way Linux brings the
// window down to ssthresh during fast recovery (tcp_cwnd_reduction, with
// tcp_init_cwnd_reduction at the start): on each ACK that delivers data,
//
//   - while the pipe is above ssthresh, the sends since recovery began
//     (prr_out) may reach ceil(ssthresh × prr_delivered / RecoverFS), the
//     data delivered scaled by ssthresh over the window at the start
//     (RFC 6937 §3, the proportional part);
//   - at or below it, the ACK may send up to ssthresh − pipe, at most
//     max(prr_delivered − prr_out, delivered), plus one when the ACK
//     advanced snd_una and marked nothing newly lost (PRR-SSRB, §3, with
//     Linux's condition on the extra segment);
//   - until something was sent in recovery (prr_out = 0), at least one
//     segment: Linux's floor that forces the fast retransmission out even
//     when the pipe is already at ssthresh.
//
// The window is then the sender's flight (AckEvent.InFlight) plus what
// the ACK may send.
type prr struct {
	priorCwnd int
	delivered int
}

func (p *prr) start(cwnd int) { p.priorCwnd, p.delivered = max(cwnd, 1), 0 }

// window returns the window to use after ev, and false when ev delivered
// nothing (the window is then unchanged).
func (p *prr) window(ssthresh int, ev *AckEvent) (int, bool) {
	if ev.Delivered <= 0 {
		return 0, false
	}
	p.delivered += ev.Delivered
	delta := ssthresh - ev.Pipe
	var sndcnt int
	if delta < 0 {
		sndcnt = (ssthresh*p.delivered+p.priorCwnd-1)/p.priorCwnd - ev.PRROut
	} else {
		sndcnt = max(p.delivered-ev.PRROut, ev.Delivered)
		if ev.SndUnaAdvanced && ev.NewlyLost == 0 {
			sndcnt++
		}
		sndcnt = min(delta, sndcnt)
	}
	floor := 0
	if ev.PRROut == 0 {
		floor = 1 // force the fast retransmit
	}
	return ev.InFlight + max(sndcnt, floor), true
}
