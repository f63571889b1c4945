package queues

import (
	"fmt"
	"math/rand/v2"

	"github.com/uplinksim/uplink/des"
)

// PIE defaults (Linux include/net/pie.h pie_params_init and pie_vars_init,
// RFC 8033 section 4): target and tupdate 15 ms, limit 1 000 packets, alpha
// 0.125, beta 1.25, burst allowance 150 ms, ECN marking up to p = 0.1.
const (
	DefaultPIETarget   = 15 * des.Millisecond
	DefaultPIETUpdate  = 15 * des.Millisecond
	DefaultPIELimit    = 1000
	DefaultPIEAlpha    = 0.125
	DefaultPIEBeta     = 1.25
	DefaultPIEMaxBurst = 150 * des.Millisecond
	DefaultPIEECNProb  = 0.1
	// pieQueueThreshold is the byte backlog (and the dequeued byte count)
	// of the departure-rate estimator (Linux QUEUE_THRESHOLD).
	pieQueueThreshold = 16384
	// pieHighDelay is where Linux adds 2 % per update (sch_pie.c).
	pieHighDelay = 250 * des.Millisecond
)

// PIEParams are the parameters of the PIE law, shared by PIE and by every
// flow of FQ-PIE (Linux struct pie_params, plus the knobs that select the
// RFC behaviour where Linux differs).
type PIEParams struct {
	// Target is the reference queue delay (QDELAY_REF).
	Target des.Time
	// TUpdate is the period of the probability update.
	TUpdate des.Time
	// Alpha and Beta weigh the delay error and the delay trend, per second
	// (RFC 8033 4.2). Linux takes them as integers in 1/16 (2 and 20).
	Alpha, Beta float64
	// MaxBurst is the burst allowance granted when the queue is idle (Linux
	// fixes it at 150 ms in pie_vars_init). 0 disables it.
	MaxBurst des.Time
	// ECN marks an ECN-capable packet CE instead of an early drop while the
	// probability is at most ECNProb.
	ECN bool
	// ECNProb is the marking threshold: fixed at 10 % in sch_pie, the
	// ecn_prob parameter (default 10 %) in sch_fq_pie.
	ECNProb float64
	// Bytemode scales the probability by packet size / MTU.
	Bytemode bool
	// DqRateEstimator estimates the queue delay by Little's law from a
	// measured departure rate (Linux dq_rate_estimator, RFC 8033 5.2)
	// instead of from the timestamp of the last packet dequeued.
	DqRateEstimator bool
	// BurstPerUpdate shrinks the burst allowance by TUpdate at each update
	// (RFC 8033 and ns-3) instead of by the time between dequeues (Linux).
	BurstPerUpdate bool
	// HighDelayBoost adds 2 % to every update while the queue delay exceeds
	// 250 ms (Linux sch_pie.c; not in RFC 8033).
	HighDelayBoost bool
	// MTU is the packet size of the 2-MTU no-drop guard and of byte mode
	// (Linux psched_mtu, DefaultMTU on Ethernet).
	MTU int
	// Epoch is the time origin of the update timer: updates run at
	// Epoch + k*TUpdate, k >= 1. (Linux arms its first update 500 ms after
	// the qdisc is created, then every tupdate.)
	Epoch des.Time
}

// DefaultPIEParams returns Linux's PIE parameters: target 15 ms, tupdate
// 15 ms, alpha 0.125, beta 1.25, burst 150 ms, ECN off (threshold 10 %),
// byte mode off, timestamps, burst shrinking between dequeues, the 250 ms
// boost on, MTU 1 514.
func DefaultPIEParams() PIEParams {
	return PIEParams{
		Target:         DefaultPIETarget,
		TUpdate:        DefaultPIETUpdate,
		Alpha:          DefaultPIEAlpha,
		Beta:           DefaultPIEBeta,
		MaxBurst:       DefaultPIEMaxBurst,
		ECNProb:        DefaultPIEECNProb,
		HighDelayBoost: true,
		MTU:            DefaultMTU,
	}
}

// RFCPIEParams returns the parameters and behaviour of RFC 8033 (and
// ns-3): QDELAY_REF 15 ms, T_UPDATE 15 ms, alpha 0.125, beta 1.25,
// MAX_BURST 150 ms, the burst allowance shrinking by T_UPDATE per update,
// and no 250 ms boost.
func RFCPIEParams() PIEParams {
	p := DefaultPIEParams()
	p.BurstPerUpdate = true
	p.HighDelayBoost = false
	return p
}

// LegacyPIEParams returns Linux's parameters before 5.x and the PIE drafts:
// target 20 ms, tupdate 30 ms, otherwise as DefaultPIEParams.
func LegacyPIEParams() PIEParams {
	p := DefaultPIEParams()
	p.Target = 20 * des.Millisecond
	p.TUpdate = 30 * des.Millisecond
	return p
}

func (p *PIEParams) validate(name string) error {
	switch {
	case p.Target <= 0:
		return fmt.Errorf("%s: target %v; the target delay must be positive (default %v)", name, p.Target, DefaultPIETarget)
	case p.TUpdate <= 0:
		return fmt.Errorf("%s: tupdate %v; the update period must be positive (default %v)", name, p.TUpdate, DefaultPIETUpdate)
	case !(p.Alpha >= 0 && p.Alpha <= 32):
		return fmt.Errorf("%s: alpha %v; alpha must be in [0, 32] (default %v)", name, p.Alpha, DefaultPIEAlpha)
	case !(p.Beta >= 0 && p.Beta <= 32):
		return fmt.Errorf("%s: beta %v; beta must be in [0, 32] (default %v)", name, p.Beta, DefaultPIEBeta)
	case p.MaxBurst < 0:
		return fmt.Errorf("%s: max_burst %v is negative; use 0 for no burst allowance (default %v)", name, p.MaxBurst, DefaultPIEMaxBurst)
	case !(p.ECNProb >= 0 && p.ECNProb <= 1):
		return fmt.Errorf("%s: ecn_prob %v; the marking threshold must be in [0, 1] (default %v)", name, p.ECNProb, DefaultPIEECNProb)
	case p.MTU < 1:
		return fmt.Errorf("%s: mtu %d; the MTU must be at least 1 byte (default %d)", name, p.MTU, DefaultMTU)
	case p.Epoch < 0 || p.Epoch > des.Never-p.TUpdate:
		return fmt.Errorf("%s: epoch %v out of range; use 0 (updates at multiples of tupdate)", name, p.Epoch)
	}
	return nil
}

// pieVars is the state of one PIE instance (Linux struct pie_vars). The
// probability is a float64 where Linux uses a fixed-point fraction of 2^56
// and 64 ns psched ticks; the arithmetic is the same otherwise.
type pieVars struct {
	prob, accuProb    float64
	qdelay, qdelayOld des.Time
	burst             des.Time
	dqTstamp          des.Time
	dqTstampValid     bool
	dqCount           int
	dqCountValid      bool
	avgDqRate         float64 // bytes per ns; 0: no estimate
}

// reset is pie_vars_init: a fresh burst allowance and measurement cycle;
// the probability and delays are kept.
func (v *pieVars) reset(prm *PIEParams) {
	v.burst = prm.MaxBurst
	v.dqTstampValid = false
	v.accuProb = 0
	v.dqCountValid = false
	v.dqCount = 0
	v.avgDqRate = 0
}

// dropEarly is the enqueue test of RFC 8033 4.1 and 5.4 / Linux pie_drop_early,
// given the byte backlog and the packet size: no drop while burst allowance
// is left, nor while the delay is under half the target with p < 0.2, nor
// with less than two MTUs queued; then de-randomised: accu_prob
// accumulates p (reset to 0 when p is 0), no drop under 0.85, a certain
// drop at 8.5 and above, otherwise a drop with probability p (a drop by
// the draw resets accu_prob; the caller resets it on every drop).
func (v *pieVars) dropEarly(prm *PIEParams, backlog, size int, rng *rand.Rand) bool {
	if v.burst > 0 {
		return false
	}
	if v.qdelay < prm.Target/2 && v.prob < 0.2 {
		return false
	}
	if backlog < 2*prm.MTU {
		return false
	}
	p := v.prob
	if prm.Bytemode && size <= prm.MTU {
		p = float64(size) * v.prob / float64(prm.MTU)
	}
	if p == 0 {
		v.accuProb = 0
	}
	v.accuProb += p
	if v.accuProb < 0.85 {
		return false
	}
	if v.accuProb >= 8.5 {
		return true
	}
	if rng.Float64() < p {
		v.accuProb = 0
		return true
	}
	return false
}

// processDequeue is Linux pie_process_dequeue, after p left a queue that
// now holds backlog bytes: the timestamp estimator records p's sojourn (0
// once the queue is empty); the rate estimator measures the departure rate
// over each 16 KiB dequeued while the backlog is at least 16 KiB and
// averages it with weight 1/8. With BurstPerUpdate off, the burst
// allowance shrinks by the time since the last dequeue (timestamps) or by
// the length of each measurement cycle (rate).
func (v *pieVars) processDequeue(prm *PIEParams, p *Packet, backlog int, now des.Time) {
	var dtime des.Time
	if !prm.DqRateEstimator {
		v.qdelay = now - p.Enqueued
		if v.dqTstampValid {
			dtime = now - v.dqTstamp
		}
		v.dqTstamp, v.dqTstampValid = now, true
		if backlog == 0 {
			v.qdelay = 0
		}
		if dtime == 0 {
			return
		}
	} else {
		if backlog >= pieQueueThreshold && !v.dqCountValid {
			v.dqTstamp, v.dqTstampValid = now, true
			v.dqCount, v.dqCountValid = 0, true
		}
		if !v.dqCountValid {
			return
		}
		v.dqCount += p.Len
		if v.dqCount < pieQueueThreshold {
			return
		}
		dtime = now - v.dqTstamp
		if dtime == 0 {
			return
		}
		rate := float64(v.dqCount) / float64(dtime)
		if v.avgDqRate == 0 {
			v.avgDqRate = rate
		} else {
			v.avgDqRate = v.avgDqRate - v.avgDqRate/8 + rate/8
		}
		if backlog < pieQueueThreshold {
			v.dqCountValid = false
		} else {
			v.dqCount = 0
			v.dqTstamp = now
		}
	}
	if !prm.BurstPerUpdate && v.burst > 0 {
		v.burst = max(v.burst-dtime, 0)
	}
}

// update is one periodic probability update (RFC 8033 4.2 and 5.5, Linux
// pie_calculate_probability) for a queue of backlog bytes:
//
//	delta = alpha (qdelay - target) + beta (qdelay - qdelay_old), in seconds,
//
// scaled down while p is small (p < 0.1: /2, then /4 per decade below
// 0.01 down to /2048 under 0.000001), capped at 0.02 when p >= 0.1, plus
// 0.02 above 250 ms (HighDelayBoost); p += delta, clamped to [0, 1]; p
// decays by p/64 when both delays are 0; with both delays under target/2
// and p == 0 the state is reset (a new burst allowance).
func (v *pieVars) update(prm *PIEParams, backlog int) {
	var qdelay, qdelayOld des.Time
	if prm.DqRateEstimator {
		qdelayOld = v.qdelay
		v.qdelayOld = v.qdelay
		if v.avgDqRate > 0 {
			qdelay = des.Time(float64(backlog) / v.avgDqRate)
		}
	} else {
		qdelay, qdelayOld = v.qdelay, v.qdelayOld
	}
	if prm.BurstPerUpdate && v.burst > 0 {
		v.burst = max(v.burst-prm.TUpdate, 0)
	}
	// A zero delay over a non-empty queue means a very short queue: no
	// decay this round (Linux update_prob).
	decay := !(qdelay == 0 && backlog != 0)

	alpha, beta := prm.Alpha, prm.Beta
	if v.prob < 0.1 {
		alpha, beta = alpha/2, beta/2
		for power := 100.0; v.prob < 1/power && power <= 1e6; power *= 10 {
			alpha, beta = alpha/4, beta/4
		}
	}
	delta := alpha*(qdelay-prm.Target).Seconds() + beta*(qdelay-qdelayOld).Seconds()
	if delta > 0.02 && v.prob >= 0.1 {
		delta = 0.02
	}
	if prm.HighDelayBoost && qdelay > pieHighDelay {
		delta += 0.02
	}
	v.prob += delta
	if v.prob >= 1 {
		v.prob = 1
		decay = false
	} else if v.prob < 0 {
		v.prob = 0
	}
	if qdelay == 0 && qdelayOld == 0 && decay {
		v.prob -= v.prob / 64
	}
	v.qdelay = qdelay
	if v.qdelay < prm.Target/2 && v.qdelayOld < prm.Target/2 && v.prob == 0 &&
		(!prm.DqRateEstimator || v.avgDqRate > 0) {
		v.reset(prm)
	}
	if !prm.DqRateEstimator {
		v.qdelayOld = qdelay
	}
}

// pieClock schedules the updates at Epoch + k*TUpdate.
type pieClock struct {
	next, period des.Time
}

func (c *pieClock) init(prm *PIEParams) { c.next, c.period = prm.Epoch+prm.TUpdate, prm.TUpdate }

// skipPast moves next past now without running the updates in between.
func (c *pieClock) skipPast(now des.Time) {
	if c.next <= now {
		c.next += ((now-c.next)/c.period + 1) * c.period
	}
}

// PIEConfig configures PIE.
type PIEConfig struct {
	PIEParams
	// Limit is the packet limit (tail drop); 0 means none.
	Limit int
}

// DefaultPIEConfig returns Linux's sch_pie defaults: DefaultPIEParams and
// a limit of 1 000 packets.
func DefaultPIEConfig() PIEConfig {
	return PIEConfig{PIEParams: DefaultPIEParams(), Limit: DefaultPIELimit}
}

// PIE is Linux's pie (net/sched/sch_pie.c, RFC 8033): a FIFO whose arriving
// packets are dropped (or CE-marked) early with a probability that a
// periodic controller adjusts toward the target delay. All drops happen at
// enqueue, so a dropped packet is refused, never counted as Enqueued.
//
// The periodic update runs lazily (see Periodic): every Enqueue and
// Dequeue first runs the updates due at or before its instant, each exactly
// as the timer would have; once an update leaves the state unchanged (an
// idle queue), the remaining due ones are skipped, since they would be
// identical. Random draws come from the *rand.Rand given to NewPIE, and only
// when the de-randomised accumulator lies in [0.85, 8.5).
type PIE struct {
	base
	cfg   PIEConfig
	q     ring
	state pieVars
	clock pieClock
	rng   *rand.Rand
}

// NewPIE returns a PIE discipline drawing from rng (the simulator's seeded
// stream), or an error naming the bad field.
func NewPIE(cfg PIEConfig, rng *rand.Rand) (*PIE, error) {
	if err := cfg.validate("pie"); err != nil {
		return nil, err
	}
	if cfg.Limit < 0 {
		return nil, fmt.Errorf("pie: limit %d; use a positive packet limit (default %d), or 0 for no limit", cfg.Limit, DefaultPIELimit)
	}
	if rng == nil {
		return nil, fmt.Errorf("pie: nil *rand.Rand; pass the simulator's seeded stream")
	}
	q := &PIE{cfg: cfg, rng: rng}
	q.state.reset(&q.cfg.PIEParams)
	q.clock.init(&q.cfg.PIEParams)
	return q, nil
}

// Config returns the configuration.
func (q *PIE) Config() PIEConfig { return q.cfg }

// Prob is the current drop probability.
func (q *PIE) Prob() float64 { return q.state.prob }

// QDelay is the current queue-delay estimate.
func (q *PIE) QDelay() des.Time { return q.state.qdelay }

// NextUpdate is the instant of the next probability update.
func (q *PIE) NextUpdate() des.Time { return q.clock.next }

// Advance runs every probability update due at or before now.
func (q *PIE) Advance(now des.Time) {
	for q.clock.next <= now {
		before := q.state
		q.state.update(&q.cfg.PIEParams, q.bytes)
		q.clock.next += q.clock.period
		if q.state == before {
			q.clock.skipPast(now)
		}
	}
}

// Enqueue tail-drops p at the limit, otherwise runs the early-drop test; an
// early drop of an ECN-capable packet with ECN on and p <= ECNProb is a CE
// mark instead (pie_qdisc_enqueue). Every drop resets accu_prob.
func (q *PIE) Enqueue(p *Packet, now des.Time) bool {
	q.Advance(now)
	if q.cfg.Limit > 0 && q.n >= q.cfg.Limit {
		q.state.accuProb = 0
		q.refused(p, DropOverlimit, now)
		return false
	}
	if q.state.dropEarly(&q.cfg.PIEParams, q.bytes, p.Len, q.rng) &&
		!(q.cfg.ECN && q.state.prob <= q.cfg.ECNProb && q.markCE(p)) {
		q.state.accuProb = 0
		q.refused(p, DropAQM, now)
		return false
	}
	q.accepted(p, now)
	q.q.push(p)
	return true
}

// Dequeue returns the oldest packet and feeds the delay estimator.
func (q *PIE) Dequeue(now des.Time) *Packet {
	q.Advance(now)
	p := q.q.pop()
	if p == nil {
		return nil
	}
	q.left(p)
	q.state.processDequeue(&q.cfg.PIEParams, p, q.bytes, now)
	q.sent(p, now)
	return p
}
