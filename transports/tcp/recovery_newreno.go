package tcp

// newRenoRecovery is NewReno's fast recovery without SACK (RFC 6582 §3.2),
// as Linux runs it when the peer does not offer SACK
// (tcp_fastretrans_alert with tcp_is_reno):
//
//   - it starts on timeToRecover's third duplicate ACK, with the head
//     segment presumed lost (step 2);
//   - a partial ACK, one that acknowledges new data but not everything
//     outstanding at the start, presumes the new head segment lost, so it
//     is retransmitted at once (step 5; Linux's tcp_try_undo_partial path
//     leaves the head to tcp_update_scoreboard);
//   - recovery ends with the full acknowledgment (step 3).
//
// Duplicate ACKs stand for segments that left the network
// (sender.renoSacked, Linux's tcp_add_reno_sack); the controller's window
// inflation (RFC 5681 §3.2 steps 3 and 4) or PRR on the pipe decides what
// may be sent meanwhile.
type newRenoRecovery struct{}

func (newRenoRecovery) enter(s *sender) int             { return 0 }
func (newRenoRecovery) ends(s *sender, a *ackInfo) bool { return s.recovered(a) }

func (newRenoRecovery) onAck(s *sender, a *ackInfo) int {
	if a.acked > 0 {
		return s.markHeadLost() // a partial ACK
	}
	return 0
}
