package tcp

// renoRecovery is classic Reno's fast recovery (RFC 5681 §3.2), the one
// Shadow's legacy TCP runs (tcp_cong_reno.c: three duplicate ACKs enter
// fast recovery; the next new ACK leaves it):
//
//   - it starts on timeToRecover's third duplicate ACK, with the head
//     segment presumed lost (step 2);
//   - the first ACK of new data ends recovery, partial or not (step 6), so
//     a second hole in the same window needs three new duplicates or the
//     retransmission timer;
//   - with SACK on (not Shadow's preset), RFC 6675's IsLost marks losses
//     at the start and on each ACK, as in sackRecovery.
//
// The window is the controller's (ShadowRenoCC: ssthresh = cwnd/2 + 1,
// cwnd = ssthresh + 3, +1 per further duplicate, cwnd = ssthresh at the
// end). Without SACK the sender sends as Shadow's _tcp_flush does
// (shadowFlush): the head, presumed lost on the third duplicate as
// Shadow's retransmit_tally_update marks it, leaves on that ACK, and new
// data waits until the inflated window exceeds the segments outstanding.
type renoRecovery struct{ sack bool }

func (r renoRecovery) enter(s *sender) int {
	if r.sack {
		return s.markLostBySACK()
	}
	return 0
}

func (r renoRecovery) ends(s *sender, a *ackInfo) bool { return s.recovered(a) || a.acked > 0 }

func (r renoRecovery) onAck(s *sender, a *ackInfo) int {
	if r.sack {
		return s.markLostBySACK()
	}
	return 0
}

// shadowFlush reports whether the sender runs Shadow's send rules
// (_tcp_flush and _tcp_retransmitPacket in src/main/host/descriptor/tcp.c:
// fitsInWindow, retransmitPacket): with the classic Reno of a controller
// that asks for it (Shadow's) and without SACK, Shadow's legacy TCP as its
// preset runs it. With SACK the flight excludes what the peer SACKed
// (RFC 6675's pipe), and the sender keeps Linux's test.
func shadowFlush(sack, classic bool) bool { return classic && !sack }
