package tcp

// sackRecovery is SACK-based loss recovery (RFC 6675), as Linux runs it
// with SACK (tcp_fastretrans_alert's TCP_CA_Recovery branch, before RACK):
//
//   - it starts on timeToRecover, with the head segment and every segment
//     RFC 6675's IsLost rule condemns presumed lost (§5 step 4.1 and
//     markLostBySACK);
//   - each ACK during recovery applies IsLost again to what it SACKed
//     (§5 step C), and a retransmission followed by SACKed data sent after
//     it is lost again (markLostRetrans, run on every SACK);
//   - recovery ends when everything outstanding at its start is
//     cumulatively acknowledged (§5, RecoveryPoint; Linux's high_seq).
//
// The window during recovery is the controller's: CUBIC's follows PRR
// (RFC 6937, prr.go), as Linux's tcp_cwnd_reduction does; NewReno's stays
// at ssthresh (RFC 6675 §5 step 4.2, window compared with the pipe).
type sackRecovery struct{}

func (sackRecovery) enter(s *sender) int             { return s.markLostBySACK() }
func (sackRecovery) ends(s *sender, a *ackInfo) bool { return s.recovered(a) }
func (sackRecovery) onAck(s *sender, a *ackInfo) int { return s.markLostBySACK() }

// markLostBySACK applies RFC 6675's IsLost (§4): a segment is presumed
// lost once more than (DupThresh − 1) × SMSS bytes above it are SACKed.
// It returns the segments newly marked.
//
// A retransmission lost in turn is caught by markLostRetrans.
func (s *sender) markLostBySACK() int {
	thresh := (dupThresh - 1) * s.segSize()
	acc := 0
	var boundary SeqNum
	found := false
	for i := len(s.sb.rs) - 1; i >= 0; i-- {
		acc += s.sb.rs[i].len()
		if acc > thresh {
			boundary, found = s.sb.rs[i].start, true
			break
		}
	}
	if !found || !boundary.After(s.lostMarkedTo) {
		return 0
	}
	n := 0
	for i := s.segs.search(seqMax(s.lostMarkedTo, s.una)); i < s.segs.n; i++ {
		sg := s.segs.at(i)
		if !sg.seq.Before(boundary) {
			break
		}
		if s.markLost(sg) {
			n++
		}
	}
	s.lostMarkedTo = boundary
	return n
}

// markLostRetrans detects retransmissions lost in turn, as Linux did
// before RACK (tcp_mark_lost_retrans, to 4.3): a retransmission is lost if
// the peer SACKed data sent after it, and it is presumed lost again, to be
// retransmitted once more. Today's Linux gets the same from RACK's
// time-based rule (RFC 8985). Retransmissions were made in time order,
// with snd_nxt not decreasing, so the ones this rule catches are always a
// prefix of the record.
func (s *sender) markLostRetrans() int {
	if len(s.sb.rs) == 0 {
		return 0
	}
	hi := s.sb.rs[len(s.sb.rs)-1].end
	n := 0
	for s.rtxqHead < len(s.rtxq) && s.rtxq[s.rtxqHead].nxt.Before(hi) {
		r := s.rtxq[s.rtxqHead]
		s.rtxqHead++
		if i := s.segs.search(r.seq); i < s.segs.n {
			sg := s.segs.at(i)
			if sg.seq == r.seq && sg.flags&segRetrans != 0 && sg.sent == r.at {
				sg.flags &^= segRetrans
				s.retransOut--
				if sg.seq.Before(s.rtxHint) {
					s.rtxHint = sg.seq
				}
				s.ep.stats.LostRetransmits++
				n++
			}
		}
	}
	if s.rtxqHead == len(s.rtxq) {
		s.rtxq, s.rtxqHead = s.rtxq[:0], 0
	} else if s.rtxqHead > 1024 && 2*s.rtxqHead > len(s.rtxq) {
		k := copy(s.rtxq, s.rtxq[s.rtxqHead:])
		s.rtxq, s.rtxqHead = s.rtxq[:k], 0
	}
	return n
}
