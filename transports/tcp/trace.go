package tcp

import "strconv"

// TraceColumns name the figures Stats.AppendCSV appends, in order: the
// state, cwnd and ssthresh (segments), the smoothed RTT (ms), the pacing
// rate (bit/s), the flight the window limits (segments), the data sent
// and not yet acknowledged (bytes), and the segments retransmitted since
// an earlier reading.
const TraceColumns = "state,cwnd_segments,ssthresh_segments,srtt_ms,pacing_rate_bps,in_flight_segments,unacked_bytes,retransmits"

// AppendCSV appends the figures of TraceColumns to b, each after a comma;
// prevRetransmits is Retransmits at the earlier reading.
func (st *Stats) AppendCSV(b []byte, prevRetransmits uint64) []byte {
	b = append(b, ',')
	b = append(b, st.State.String()...)
	b = append(b, ',')
	b = strconv.AppendUint(b, uint64(st.Cwnd), 10)
	b = append(b, ',')
	b = strconv.AppendUint(b, uint64(st.Ssthresh), 10)
	b = append(b, ',')
	b = strconv.AppendFloat(b, float64(st.SRTT)/1e6, 'f', 6, 64)
	b = append(b, ',')
	b = strconv.AppendFloat(b, st.PacingRate*8, 'f', 0, 64)
	b = append(b, ',')
	b = strconv.AppendUint(b, uint64(st.InFlight), 10)
	b = append(b, ',')
	b = strconv.AppendUint(b, st.BytesSent-min(st.BytesAcked, st.BytesSent), 10)
	b = append(b, ',')
	return strconv.AppendUint(b, st.Retransmits-prevRetransmits, 10)
}
