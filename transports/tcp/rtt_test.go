package tcp

import (
	"testing"

	"github.com/uplinksim/uplink/des"
)

// TestRTOEstimator checks RFC 6298: 1 s before a sample; SRTT = R,
// RTTVAR = R/2 on the first; gains 1/8 and 1/4 after; RTO = SRTT +
// 4 RTTVAR clamped to [200 ms, 120 s]; doubling per backoff up to the
// maximum; a sample resets the backoff. With Linux's variance floor the
// RTO is SRTT + max(4 RTTVAR, 200 ms).
func TestRTOEstimator(t *testing.T) {
	cfg := LinuxConfig()
	cfg.RTOVarFloor = false
	var r rttEstimator
	r.init(&cfg)
	ms := des.Millisecond
	if r.current() != des.Second {
		t.Fatalf("initial RTO %v; want 1s", r.current())
	}
	r.sample(100 * ms)
	if r.srtt != 100*ms || r.rttvar != 50*ms || r.current() != 300*ms {
		t.Fatalf("first sample: srtt %v rttvar %v rto %v; want 100ms, 50ms, 300ms", r.srtt, r.rttvar, r.current())
	}
	r.sample(200 * ms)
	// rttvar = 3/4·50 + 1/4·100 = 62.5; srtt = 7/8·100 + 1/8·200 = 112.5
	if r.srtt != 112500*des.Microsecond || r.rttvar != 62500*des.Microsecond || r.current() != 362500*des.Microsecond {
		t.Fatalf("second sample: srtt %v rttvar %v rto %v", r.srtt, r.rttvar, r.current())
	}
	r.backoff = 3
	if r.current() != 8*362500*des.Microsecond {
		t.Fatalf("backoff 3: %v; want 8 × 362.5ms", r.current())
	}
	r.backoff = 20
	if r.current() != 120*des.Second {
		t.Fatalf("backoff 20: %v; want the 120 s ceiling", r.current())
	}
	for range 50 {
		r.sample(10 * ms)
	}
	if r.backoff != 0 || r.current() != 200*ms {
		t.Fatalf("10 ms samples: rto %v backoff %d; want the 200 ms floor, no backoff", r.current(), r.backoff)
	}
	cfg.RTOVarFloor = true
	var l rttEstimator
	l.init(&cfg)
	l.sample(100 * ms)
	if l.current() != 300*ms {
		t.Fatalf("Linux, first sample: %v; want 100 + max(200, 200) ms", l.current())
	}
	for range 50 {
		l.sample(100 * ms)
	}
	if got := l.current(); got < 300*ms || got > 301*ms {
		t.Fatalf("Linux, steady 100 ms: %v; want SRTT + 200 ms", got)
	}
}
