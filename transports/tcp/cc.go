package tcp

import (
	"math"

	"github.com/uplinksim/uplink/des"
)

// InfiniteSsthresh is the initial slow-start threshold (Linux's
// TCP_INFINITE_SSTHRESH, Shadow's "infinite").
const InfiniteSsthresh = math.MaxInt32

// AckEvent tells a congestion controller about one acknowledgement (or,
// for OnRTO, about the timeout). Windows and counts are in segments: the
// model's controllers, like Linux's and Shadow's, count packets.
type AckEvent struct {
	Now des.Time
	// Acked is the number of segments newly acknowledged cumulatively.
	Acked int
	// Delivered is Linux's newly_acked_sacked: segments newly acknowledged
	// that were not SACKed before, plus segments newly SACKed; without
	// SACK, a duplicate ACK counts one.
	Delivered int
	// Dup marks a duplicate ACK (RFC 5681 §2).
	Dup bool
	// RTT is this ACK's round-trip sample for the controller (Linux's
	// ca_rtt: the most recently sent of the newly delivered segments,
	// never retransmitted); 0 when the ACK gives none. SRTT and MinRTT are
	// the sender's estimates.
	RTT, SRTT, MinRTT des.Time
	// InFlight is the sender's flight measure after this ACK, the number
	// Cwnd is compared with: segments sent and not acknowledged, less
	// those presumed lost and not retransmitted, less SACKed ones.
	InFlight int
	// Pipe is RFC 6675's pipe (Linux's packets_in_flight): InFlight less,
	// without SACK, one segment per duplicate ACK received in recovery.
	Pipe int
	// Outstanding is RFC 5681's FlightSize in segments: sent and not
	// cumulatively acknowledged.
	Outstanding int
	// CwndLimited reports whether the window, not the application or the
	// receiver, limited sending lately (Linux's tcp_is_cwnd_limited).
	CwndLimited bool
	// SndUnaAdvanced: the ACK acknowledged new data; NewlyLost: segments
	// this ACK made the sender presume lost.
	SndUnaAdvanced bool
	NewlyLost      int
	// PRROut is the number of segments sent since fast recovery began.
	PRROut int
	// SndUna and SndNxt bound the data in flight (HyStart's rounds).
	SndUna, SndNxt SeqNum
	// Paced reports whether the sender paces.
	Paced bool
}

// txStarter is a controller that reacts when data leaves with nothing in
// flight (Linux's CA_EVENT_TX_START); CUBIC does.
type txStarter interface {
	TxStart(lastSent, now des.Time)
}

// CongestionControl is a congestion-window policy. The sender calls it
// from model events; it detects losses itself (duplicate ACKs, SACK, the
// retransmission timer) and only asks the controller how the window
// changes.
type CongestionControl interface {
	// Name is the controller's name (Config.CongestionControl).
	Name() string
	// Cwnd is the congestion window: the sender sends while its flight
	// measure (AckEvent.InFlight) is below it.
	Cwnd() int
	// Ssthresh is the slow-start threshold.
	Ssthresh() int
	// OnAck is an ACK that delivered new data outside fast recovery.
	OnAck(ev *AckEvent)
	// EnterRecovery: this ACK starts fast retransmit and fast recovery.
	EnterRecovery(ev *AckEvent)
	// RecoveryAck is an ACK during fast recovery that does not end it: a
	// duplicate, a SACK, or a partial ACK.
	RecoveryAck(ev *AckEvent)
	// ExitRecovery is the ACK that ends fast recovery.
	ExitRecovery(ev *AckEvent)
	// OnRTO: the retransmission timer expired. reduce is false when the
	// timeout belongs to a loss episode the window was already reduced
	// for (a repeated timeout, or one during fast recovery).
	OnRTO(ev *AckEvent, reduce bool)
	// SetWindow sets the window and the slow-start threshold from outside
	// the controller's own rules: the sender's restart after idle (Linux's
	// tcp_cwnd_restart writes snd_cwnd and snd_ssthresh directly; none of
	// the model's controllers reacts to CA_EVENT_CWND_RESTART).
	SetWindow(cwnd, ssthresh int)
	// Classic selects Reno's recovery (RFC 5681 §3.2): fast recovery ends
	// with the first ACK of new data, and any three duplicate ACKs start
	// it again. False selects NewReno's (RFC 6582), as Linux has it:
	// recovery lasts until the data outstanding at its start is
	// acknowledged; partial ACKs retransmit the next hole.
	Classic() bool
}

// newCongestionControl builds the controller cfg names.
func newCongestionControl(cfg *Config, sack bool) CongestionControl {
	if cfg.NewCongestionControl != nil {
		return cfg.NewCongestionControl(cfg.InitialCwnd, sack)
	}
	switch cfg.CongestionControl {
	case ShadowReno:
		return NewShadowReno(cfg.InitialCwnd, sack)
	case NewReno:
		return NewNewReno(cfg.InitialCwnd, sack)
	default:
		return NewCubic(cfg.InitialCwnd, cfg.HyStart)
	}
}
