package queues

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/uplinksim/uplink/des"
)

// CoDel defaults (RFC 8289 section 4.3 and Linux include/net/codel.h).
const (
	DefaultCoDelTarget   = 5 * des.Millisecond
	DefaultCoDelInterval = 100 * des.Millisecond
	// DefaultCoDelLimit is sch_codel's packet limit.
	DefaultCoDelLimit = 1000
	// DefaultMTU is Linux's psched_mtu for an Ethernet device: the device
	// MTU (1 500) plus the link-layer header (14). Linux uses it as CoDel's
	// backlog guard, as the FQ quantum and as PIE's MTU.
	DefaultMTU = 1514
)

// CoDelParams are the parameters of the CoDel law, shared by the CoDel
// discipline and by every flow of FQ-CoDel (Linux struct codel_params).
type CoDelParams struct {
	// Target is the acceptable standing sojourn time (RFC 8289 4.3).
	Target des.Time
	// Interval is the window a sojourn must stay above Target before the
	// first drop, and the base of the control law (RFC 8289 4.2).
	Interval des.Time
	// MTU is the backlog guard: no drop while the discipline's byte backlog
	// (after the packet under test left it) is at most MTU. Linux uses the
	// device's psched_mtu (DefaultMTU for Ethernet); RFC 8289 calls it
	// MAXPACKET.
	MTU int
	// ECN marks an ECN-capable packet CE instead of dropping it (Linux
	// codel_impl.h). A packet that is not ECN-capable is still dropped.
	ECN bool
	// CEThreshold, when positive, CE-marks every ECN-capable packet whose
	// sojourn exceeds it, independently of the control law (Linux
	// ce_threshold). 0 disables it.
	CEThreshold des.Time
	// FloatSqrt computes the control law interval/sqrt(count) exactly in
	// floating point, as RFC 8289's pseudo-code (and Shadow) do. The default
	// false reproduces Linux: 1/sqrt(count) kept as a 16-bit fixed-point
	// number refined by one Newton step per change of count
	// (codel_Newton_step), which is up to 29 % off for small counts and
	// after count jumps.
	FloatSqrt bool
}

// DefaultCoDelParams returns Linux's sch_codel parameters: target 5 ms,
// interval 100 ms, MTU 1 514, ECN off, no ce_threshold, Newton step.
func DefaultCoDelParams() CoDelParams {
	return CoDelParams{Target: DefaultCoDelTarget, Interval: DefaultCoDelInterval, MTU: DefaultMTU}
}

func (p *CoDelParams) validate(name string) error {
	if p.Target <= 0 {
		return fmt.Errorf("%s: target %v; the target must be positive (default %v)", name, p.Target, DefaultCoDelTarget)
	}
	if p.Interval <= 0 {
		return fmt.Errorf("%s: interval %v; the interval must be positive (default %v)", name, p.Interval, DefaultCoDelInterval)
	}
	if p.MTU < 1 {
		return fmt.Errorf("%s: mtu %d; the MTU must be at least 1 byte (default %d)", name, p.MTU, DefaultMTU)
	}
	if p.CEThreshold < 0 {
		return fmt.Errorf("%s: ce_threshold %v is negative; use 0 to disable it", name, p.CEThreshold)
	}
	return nil
}

// recInvSqrtOne is 1/sqrt(1) in the 16-bit fixed point of Linux's
// rec_inv_sqrt (Q0.16, all ones).
const recInvSqrtOne = 0xffff

// codelVars is the state of one CoDel instance (Linux struct codel_vars),
// one per CoDel discipline and one per FQ-CoDel flow.
type codelVars struct {
	count, lastcount uint32
	dropping         bool
	recInvSqrt       uint16   // 1/sqrt(count) in Q0.16 (Linux mode)
	firstAbove       des.Time // 0: the sojourn is not above target
	dropNext         des.Time
	// dropNextSet is false until the first drop. Linux starts drop_next
	// at 0 in a clock that counts from boot, so the re-entry test
	// now - drop_next < 16 intervals is practically never true for a fresh
	// instance; in a simulation that starts at 0 it would be, so the test
	// also requires a previous drop.
	dropNextSet bool
	ldelay      des.Time // sojourn of the last packet tested
}

// newtonStep refines recInvSqrt toward 1/sqrt(count) with one Newton
// iteration x' = x/2 (3 - count x^2), in the fixed-point arithmetic of
// Linux's codel_Newton_step (Q0.32 intermediate values, unsigned 64-bit
// wrap-around included), written from the formula.
func (v *codelVars) newtonStep() {
	x := uint64(v.recInvSqrt) << 16               // Q0.32
	x2 := (x * x) >> 32                           // Q0.32
	val := (uint64(3) << 32) - uint64(v.count)*x2 // Q2.32, wraps like Linux
	val >>= 2                                     // keep the product below 2^64
	val = (val * x) >> (32 - 2 + 1)               // Q0.32, halved
	v.recInvSqrt = uint16(val >> 16)
}

// controlLaw returns t + interval/sqrt(count): exact in float (RFC 8289
// section 5) or with Linux's fixed-point reciprocal (codel_control_law, which
// multiplies interval by rec_inv_sqrt as a Q0.32 fraction).
func (v *codelVars) controlLaw(t des.Time, prm *CoDelParams) des.Time {
	if prm.FloatSqrt {
		return t + des.Time(float64(prm.Interval)/math.Sqrt(float64(v.count)))
	}
	hi, lo := bits.Mul64(uint64(prm.Interval), uint64(v.recInvSqrt)<<16)
	return t + des.Time(hi<<32|lo>>32)
}

// codelPop removes the head of q, with the queue's and the discipline's byte
// accounting (Linux dequeue_func in sch_codel.c and sch_fq_codel.c).
func codelPop(q *ring, qBytes *int, b *base) *Packet {
	p := q.pop()
	if p != nil {
		*qBytes -= p.Len
		b.left(p)
	}
	return p
}

// shouldDrop is RFC 8289's dodequeue test (Linux codel_should_drop): the
// sojourn must be at least target and the discipline's backlog, after p
// left it, more than one MTU; the first time both hold starts an interval;
// the drop is allowed once now reaches its end. The test here, like
// RFC 8289's, allows it at now >= first_above; Linux tests now >
// first_above in 1 024 ns ticks, a difference below the tick.
func (v *codelVars) shouldDrop(p *Packet, prm *CoDelParams, backlog int, now des.Time) bool {
	if p == nil {
		v.firstAbove = 0
		return false
	}
	v.ldelay = now - p.Enqueued
	if v.ldelay < prm.Target || backlog <= prm.MTU {
		v.firstAbove = 0
		return false
	}
	if v.firstAbove == 0 {
		v.firstAbove = now + prm.Interval
		return false
	}
	return now >= v.firstAbove
}

// dequeue runs CoDel on the queue q (with its byte count qBytes) of the
// discipline b at now, and returns the packet to send or nil when q ran
// empty. Dropped packets are counted as DropAQM and handed to the hook;
// CE marks are counted. It follows RFC 8289 section 5 and Linux
// codel_dequeue (include/net/codel_impl.h):
//
//   - in the dropping state, a packet that should not be dropped ends it;
//     otherwise, while now >= drop_next: count++, drop (or CE-mark and
//     deliver) the packet, take the next, and either leave the dropping
//     state or set drop_next = control_law(drop_next);
//   - outside it, a packet that should be dropped is dropped (or marked),
//     the dropping state begins, count = count - lastcount if that is more
//     than 1 and now - drop_next < 16 intervals, else 1; lastcount = count;
//     drop_next = control_law(now);
//   - finally ce_threshold marks the packet returned.
func (v *codelVars) dequeue(prm *CoDelParams, q *ring, qBytes *int, b *base, now des.Time) *Packet {
	p := codelPop(q, qBytes, b)
	if p == nil {
		v.dropping = false
		return nil
	}
	drop := v.shouldDrop(p, prm, b.bytes, now)
	if v.dropping {
		if !drop {
			v.dropping = false
		} else {
			for v.dropping && now >= v.dropNext {
				v.count++
				if !prm.FloatSqrt {
					v.newtonStep()
				}
				if prm.ECN && b.markCE(p) {
					v.dropNext = v.controlLaw(v.dropNext, prm)
					break
				}
				b.dropped(p, DropAQM, now)
				p = codelPop(q, qBytes, b)
				if !v.shouldDrop(p, prm, b.bytes, now) {
					v.dropping = false
				} else {
					v.dropNext = v.controlLaw(v.dropNext, prm)
				}
			}
		}
	} else if drop {
		if !(prm.ECN && b.markCE(p)) {
			b.dropped(p, DropAQM, now)
			p = codelPop(q, qBytes, b)
			v.shouldDrop(p, prm, b.bytes, now)
		}
		v.dropping = true
		delta := v.count - v.lastcount
		if delta > 1 && v.dropNextSet && now-v.dropNext < 16*prm.Interval {
			v.count = delta
			if !prm.FloatSqrt {
				v.newtonStep()
			}
		} else {
			v.count = 1
			v.recInvSqrt = recInvSqrtOne
		}
		v.lastcount = v.count
		v.dropNext = v.controlLaw(now, prm)
		v.dropNextSet = true
	}
	if p != nil && prm.CEThreshold > 0 && v.ldelay > prm.CEThreshold {
		b.markCE(p)
	}
	return p
}

// CoDelConfig configures the CoDel discipline.
type CoDelConfig struct {
	CoDelParams
	// Limit is the packet limit (tail drop); 0 means none, as in Shadow's
	// router queue. Linux's default is DefaultCoDelLimit.
	Limit int
}

// DefaultCoDelConfig returns Linux sch_codel's defaults: DefaultCoDelParams
// and a limit of 1 000 packets.
func DefaultCoDelConfig() CoDelConfig {
	return CoDelConfig{CoDelParams: DefaultCoDelParams(), Limit: DefaultCoDelLimit}
}

// ShadowCoDelConfig returns the CoDel of Shadow 3.x's inbound router queue:
// target 10 ms, interval 100 ms, no limit, the control law
// interval/sqrt(count) in floating point, a one-packet (1 500 byte) guard
// and no ECN.
func ShadowCoDelConfig() CoDelConfig {
	return CoDelConfig{CoDelParams: CoDelParams{
		Target:    10 * des.Millisecond,
		Interval:  100 * des.Millisecond,
		MTU:       1500,
		FloatSqrt: true,
	}}
}

// CoDel is a single CoDel-managed FIFO: Linux net/sched/sch_codel.c over
// the law of include/net/codel_impl.h (RFC 8289). Packets are timestamped
// at enqueue; all AQM drops happen at dequeue.
type CoDel struct {
	base
	cfg   CoDelConfig
	q     ring
	qb    int // bytes in q (equal to base.bytes; kept for the shared code)
	state codelVars
}

// NewCoDel returns a CoDel discipline, or an error naming the bad field.
func NewCoDel(cfg CoDelConfig) (*CoDel, error) {
	if err := cfg.validate("codel"); err != nil {
		return nil, err
	}
	if cfg.Limit < 0 {
		return nil, fmt.Errorf("codel: limit %d; use a positive packet limit (default %d), or 0 for no limit", cfg.Limit, DefaultCoDelLimit)
	}
	return &CoDel{cfg: cfg}, nil
}

// Config returns the configuration.
func (q *CoDel) Config() CoDelConfig { return q.cfg }

// Enqueue timestamps and appends p, or tail-drops it when the queue
// already holds Limit packets (sch_codel's codel_qdisc_enqueue).
func (q *CoDel) Enqueue(p *Packet, now des.Time) bool {
	if q.cfg.Limit > 0 && q.n >= q.cfg.Limit {
		q.refused(p, DropOverlimit, now)
		return false
	}
	q.accepted(p, now)
	q.q.push(p)
	q.qb += p.Len
	return true
}

// Dequeue runs the CoDel law and returns the packet to send, or nil.
func (q *CoDel) Dequeue(now des.Time) *Packet {
	p := q.state.dequeue(&q.cfg.CoDelParams, &q.q, &q.qb, &q.base, now)
	if p != nil {
		q.sent(p, now)
	}
	return p
}
