package tcp

import "github.com/uplinksim/uplink/des"

// dupThresh is the duplicate threshold: fast retransmit starts on the
// third duplicate ACK (RFC 5681 §3.2), or once three segments above the
// cumulative ACK are SACKed (RFC 6675's DupThresh; Linux's
// tcp_time_to_recover with tp->reordering at its default, 3).
const dupThresh = 3

// lossRecovery is a fast-recovery strategy: which segments are presumed
// lost when recovery starts and on each ACK during it, and which ACK ends
// it. The sender's recoveryStep detects the loss (one rule for every
// strategy) and runs the state machine; the congestion controller sets the
// window (EnterRecovery, RecoveryAck, ExitRecovery). As in gVisor's
// sack_recovery.go and reno_recovery.go, and in Linux's
// tcp_fastretrans_alert, whose SACK and Reno branches the strategies
// follow.
type lossRecovery interface {
	// enter marks the losses recovery starts from, beyond the head
	// segment, and returns how many segments it newly presumed lost.
	enter(s *sender) int
	// ends reports whether the ACK a ends recovery.
	ends(s *sender, a *ackInfo) bool
	// onAck runs on an ACK during recovery that does not end it and
	// returns the segments it newly presumed lost.
	onAck(s *sender, a *ackInfo) int
}

// newLossRecovery picks the strategy: classic Reno for a controller that
// asks for it (Shadow's), RFC 6675 with SACK, RFC 6582 without.
func newLossRecovery(sack, classic bool) lossRecovery {
	switch {
	case classic:
		return renoRecovery{sack: sack}
	case sack:
		return sackRecovery{}
	default:
		return newRenoRecovery{}
	}
}

// ackInfo is what the sender's ACK processing hands loss recovery.
type ackInfo struct {
	now       des.Time
	ack       SeqNum   // the cumulative ACK
	prevUna   SeqNum   // snd_una before it
	acked     int      // segments newly acknowledged cumulatively
	delivered int      // AckEvent.Delivered
	dup       bool     // a duplicate ACK (RFC 5681 §2; with SACK, RFC 6675 §2)
	rtt       des.Time // AckEvent.RTT
	newlyLost int      // segments presumed lost so far on this ACK
}

// fill sets the sender's AckEvent for the controller from a.
func (s *sender) fill(a *ackInfo) *AckEvent {
	ev := &s.ev
	*ev = AckEvent{
		Now: a.now, Acked: a.acked, Delivered: a.delivered, Dup: a.dup,
		RTT: a.rtt, SRTT: s.rtt.srtt, MinRTT: s.rtt.minRTT,
		InFlight: s.inFlight(), Pipe: s.inFlight() - s.renoSacked, Outstanding: s.segs.n,
		CwndLimited: s.cwndLimited(), SndUnaAdvanced: a.acked > 0 || s.una != a.prevUna, NewlyLost: a.newlyLost,
		PRROut: s.prrOut, SndUna: s.una, SndNxt: s.nxt, Paced: s.paceTimer != nil,
	}
	return ev
}

// timeToRecover is the loss detection that starts fast recovery, for every
// strategy (Linux's tcp_time_to_recover without RACK): dupThresh duplicate
// ACKs, or, with SACK, dupThresh segments SACKed.
func (s *sender) timeToRecover() bool {
	return s.segs.n > 0 && (s.dupAcks >= dupThresh || (s.ep.sackOK && s.sackedOut >= dupThresh))
}

// recoveryStep runs the loss-recovery state machine on an ACK (Linux's
// tcp_fastretrans_alert): in Open it counts duplicates and starts fast
// recovery when timeToRecover says so; in Recovery the strategy marks
// losses and decides when recovery ends; in Loss (after a timeout) the
// state returns to Open once everything outstanding at the timeout is
// acknowledged. The controller hears of each step.
func (s *sender) recoveryStep(a *ackInfo) {
	switch s.ca {
	case caOpen:
		if a.dup {
			s.dupAcks++
		} else if a.acked > 0 {
			s.dupAcks = 0
		}
		if s.timeToRecover() {
			a.newlyLost = s.enterRecovery()
			s.cc.EnterRecovery(s.fill(a))
		} else if a.delivered > 0 && !a.dup {
			s.cc.OnAck(s.fill(a))
		}
	case caRecovery:
		if s.lr.ends(s, a) {
			s.ca = caOpen
			s.dupAcks, s.renoSacked = 0, 0
			s.cc.ExitRecovery(s.fill(a))
			return
		}
		a.newlyLost += s.lr.onAck(s, a)
		s.cc.RecoveryAck(s.fill(a))
	case caLoss:
		if !a.ack.Before(s.recover) {
			s.ca = caOpen
			s.dupAcks = 0
		}
		if a.delivered > 0 && !a.dup {
			s.cc.OnAck(s.fill(a))
		}
	}
}

// enterRecovery starts fast recovery: the head segment is presumed lost
// (RFC 5681 §3.2 step 2, RFC 6675 §5 step 4.1), and the strategy marks
// what else it knows to be lost.
func (s *sender) enterRecovery() int {
	s.ca = caRecovery
	s.recover = s.nxt
	s.prrOut = 0
	s.ep.stats.FastRecoveries++
	return s.markHeadLost() + s.lr.enter(s)
}

// recovered reports whether a acknowledges everything outstanding when
// recovery began (RFC 6582's "full acknowledgment"; Linux's high_seq).
func (s *sender) recovered(a *ackInfo) bool { return !a.ack.Before(s.recover) }

func (s *sender) markLost(sg *segment) bool {
	if sg.flags&(segSacked|segLost) != 0 {
		return false
	}
	sg.flags |= segLost
	s.lostOut++
	if sg.seq.Before(s.rtxHint) {
		s.rtxHint = sg.seq
	}
	return true
}

func (s *sender) markHeadLost() int {
	if s.segs.n > 0 && s.markLost(s.segs.at(0)) {
		return 1
	}
	return 0
}
