package netmodel

import (
	"fmt"

	"github.com/uplinksim/uplink/des"
)

// Shaper limits a path to a rate. Two models, chosen by Refill:
//
//   - Continuous (Refill 0), the harness model: the line is a serialiser. A
//     packet of s bytes occupies it for s×8/Rate and leaves (its last bit
//     out) when that time has passed after the line became free. A Burst
//     above one MTU lets up to Burst−MTU bytes of credit build up while the
//     line is idle, which later packets spend to leave early. With a burst
//     of one MTU (simnet's) there is no credit, so 1 MiB handed over at once
//     at 50 Mbit/s finishes leaving at exactly 1 MiB×8/50 Mbit/s.
//   - Discrete (Refill > 0), Shadow's model: a token bucket refilled at each
//     multiple of Refill by Rate×Refill bytes, holding at most Burst bytes
//     (Shadow: Rate/1000 per 1 ms plus 1 500). A packet leaves at the first
//     refill instant at which the bucket holds its size, with no
//     serialisation time of its own.
//
// Rate 0 means unlimited: packets leave as soon as they are dequeued.
// Serialisation times are rounded up to whole nanoseconds per packet.
type Shaper struct {
	Rate   int64    // bit/s; 0: unlimited
	Burst  int      // bytes
	Refill des.Time // 0: continuous

	free   des.Time // continuous: the instant the line is free
	credit des.Time // continuous: idle credit, in line time
	tokens int64    // discrete: bytes in the bucket at instant last
	last   des.Time // discrete: refill period index of tokens
	inited bool
}

// ShaperConfig describes a shaper; see Shaper.
type ShaperConfig struct {
	Rate   int64    // bit/s; 0: unlimited
	Burst  int      // bytes; 0: one MTU
	Refill des.Time // 0: continuous
}

// OneMTUBurst is the harness's shaper: continuous, a one-MTU burst.
func OneMTUBurst(rate int64) ShaperConfig { return ShaperConfig{Rate: rate} }

// ShadowBucket is Shadow's shaper: refilled every millisecond with
// rate/1000 bytes, holding at most that plus 1 500 bytes.
func ShadowBucket(rate int64) ShaperConfig {
	return ShaperConfig{Rate: rate, Burst: int(rate/8/1000) + 1500, Refill: des.Millisecond}
}

func newShaper(c ShaperConfig, mtu int) (*Shaper, error) {
	if c.Rate < 0 {
		return nil, fmt.Errorf("shaper: negative rate %d bit/s; use 0 for unlimited", c.Rate)
	}
	if c.Refill < 0 {
		return nil, fmt.Errorf("shaper: negative refill interval %v", c.Refill)
	}
	b := c.Burst
	if b == 0 {
		b = mtu
	}
	if b < mtu {
		return nil, fmt.Errorf("shaper: burst %d bytes is below the MTU (%d); a full-size packet could never leave: use a burst of at least one MTU", b, mtu)
	}
	if c.Refill > 0 && c.Rate > 0 && c.Rate*int64(c.Refill)/8/int64(des.Second) < 1 {
		return nil, fmt.Errorf("shaper: rate %d bit/s refills less than one byte per %v", c.Rate, c.Refill)
	}
	s := &Shaper{Rate: c.Rate, Burst: b, Refill: c.Refill}
	if c.Refill == 0 && c.Rate > 0 {
		s.credit = s.creditCap(mtu)
	}
	return s, nil
}

func (s *Shaper) creditCap(mtu int) des.Time { return s.txTime(s.Burst - mtu) }

// txTime is the line time of n bytes, rounded up to a nanosecond.
func (s *Shaper) txTime(n int) des.Time {
	bits := int64(n) * 8 * int64(des.Second)
	return des.Time((bits + s.Rate - 1) / s.Rate)
}

// Departure returns the instant a packet of n bytes handed to the shaper at
// now leaves it, and commits the packet. Calls must come in order of now.
func (s *Shaper) Departure(n int, now des.Time, mtu int) des.Time {
	if s.Rate == 0 {
		return now
	}
	if s.Refill == 0 {
		start := now
		if s.free > now {
			start = s.free
		} else if capT := s.creditCap(mtu); capT > 0 {
			s.credit = min(capT, s.credit+now-s.free)
		}
		tx := s.txTime(n)
		use := min(s.credit, tx)
		s.credit -= use
		s.free = start + tx - use
		return s.free
	}
	inc := s.Rate * int64(s.Refill) / 8 / int64(des.Second)
	period := now / s.Refill
	if !s.inited {
		s.tokens, s.last, s.inited = int64(s.Burst), period, true
	}
	if period > s.last {
		s.tokens = min(int64(s.Burst), s.tokens+int64(period-s.last)*inc)
		s.last = period
	}
	if s.tokens >= int64(n) {
		s.tokens -= int64(n)
		return now
	}
	k := (int64(n) - s.tokens + inc - 1) / inc
	s.last += des.Time(k)
	s.tokens = min(int64(s.Burst), s.tokens+k*inc) - int64(n)
	return s.last * s.Refill
}
