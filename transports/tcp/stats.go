package tcp

import "github.com/uplinksim/uplink/des"

// Stats are a connection's counters and current estimates (Linux's
// tcp_info, roughly).
type Stats struct {
	State              State
	Cwnd, Ssthresh     int // segments
	SRTT, RTTVar, RTO  des.Time
	MinRTT             des.Time
	InFlight           int // the flight the window limits
	PacketsOut         int // sent, not cumulatively acknowledged
	SackedOut, LostOut int
	RetransOut         int
	SndWnd             int // the peer's window, bytes
	RcvWnd             int // the window we offer, bytes
	SndBuf, RcvBuf     int // bytes
	PacingRate         float64
	Recovery, Loss     bool // in fast recovery; after a timeout

	SegsOut, SegsIn uint64
	BytesSent       uint64 // new data sent
	BytesRetrans    uint64
	BytesAcked      uint64
	BytesReceived   uint64 // data accepted, in or out of order
	Retransmits     uint64 // segments
	LostRetransmits uint64 // retransmissions detected lost (SACK)
	FastRecoveries  uint64
	RTOs            uint64
	DupAcks         uint64
	DelayedAcks     uint64
}

// Stats returns the connection's counters and state.
func (ep *Endpoint) Stats() Stats {
	st := ep.stats
	s := &ep.snd
	st.State = ep.state
	st.Cwnd, st.Ssthresh = s.cc.Cwnd(), s.cc.Ssthresh()
	st.SRTT, st.RTTVar, st.RTO, st.MinRTT = s.rtt.srtt, s.rtt.rttvar, s.rtt.current(), s.rtt.minRTT
	st.InFlight, st.PacketsOut = s.inFlight(), s.segs.n
	st.SackedOut, st.LostOut, st.RetransOut = s.sackedOut, s.lostOut, s.retransOut
	st.SndWnd, st.RcvWnd = s.wnd, ep.rcv.window()
	st.SndBuf, st.RcvBuf = s.bufLimit, ep.rcv.rcvbuf
	st.PacingRate = s.pacingRate()
	st.Recovery, st.Loss = s.ca == caRecovery, s.ca == caLoss
	return st
}
