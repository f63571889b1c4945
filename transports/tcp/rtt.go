package tcp

import "github.com/uplinksim/uplink/des"

// rttEstimator is RFC 6298's retransmission-timer computation: SRTT and
// RTTVAR with gains 1/8 and 1/4, RTO = SRTT + 4 RTTVAR clamped to
// [min, max], 1 s before the first sample (3 s if the SYN had to be
// retransmitted, §5.7), doubled on each expiry (§5.5) and the doubling
// kept until a new valid sample (Karn's rule, §5 note 2: retransmitted
// segments give no sample).
//
// With varFloor (Linux, tcp_set_rto / tcp_rtt_estimator), the variance
// term is floored at the minimum RTO instead: RTO = SRTT + max(4 RTTVAR,
// min). Linux tracks the variance as the largest mean deviation seen in
// the last RTT (mdev_max); the model uses RFC 6298's RTTVAR for it.
type rttEstimator struct {
	srtt, rttvar des.Time
	minRTT       des.Time // lowest sample of the connection
	rto          des.Time // before backoff
	backoff      int
	min, max     des.Time
	varFloor     bool
}

func (r *rttEstimator) init(cfg *Config) {
	r.min, r.max, r.varFloor = cfg.RTOMin, cfg.RTOMax, cfg.RTOVarFloor
	r.rto = cfg.RTOInitial
}

// sample folds in a measurement and resets the backoff.
func (r *rttEstimator) sample(m des.Time) {
	if m <= 0 {
		m = 1
	}
	if r.minRTT == 0 || m < r.minRTT {
		r.minRTT = m
	}
	if r.srtt == 0 {
		r.srtt = m
		r.rttvar = m / 2
	} else {
		d := r.srtt - m
		if d < 0 {
			d = -d
		}
		r.rttvar = (3*r.rttvar + d) / 4
		r.srtt = (7*r.srtt + m) / 8
	}
	v := 4 * r.rttvar
	if r.varFloor {
		v = max(v, r.min)
	}
	r.rto = min(max(r.srtt+v, r.min), r.max)
	r.backoff = 0
}

// current is the RTO with the backoff applied.
func (r *rttEstimator) current() des.Time {
	t := r.rto
	for i := 0; i < r.backoff && t < r.max; i++ {
		t *= 2
	}
	return min(t, r.max)
}
