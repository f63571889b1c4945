package tcp

import (
	"math"

	"github.com/uplinksim/uplink/des"
)

// Constants of Linux's net/ipv4/tcp_cubic.c (module defaults).
const (
	cubicBetaScale      = 1024 // BICTCP_BETA_SCALE
	cubicBeta           = 717  // beta = 717/1024 ≈ 0.7
	cubicHZShift        = 10   // BICTCP_HZ: time in 2^-10 s units
	cubicBicScale       = 41   // C = 41 × 10 / 1024 ≈ 0.4
	cubicCubeRTTScale   = cubicBicScale * 10
	cubicTCPBetaScale   = 8 * (cubicBetaScale + cubicBeta) / 3 / (cubicBetaScale - cubicBeta)
	cubicCubeFactor     = (1 << (10 + 3*cubicHZShift)) / (cubicBicScale * 10)
	cubicHZ             = 1000 // jiffies per second (CONFIG_HZ=1000)
	hystartLowWindow    = 16
	hystartAckDeltaUS   = 2000
	hystartMinSamples   = 8
	hystartDelayMinUS   = 4000
	hystartDelayMaxUS   = 16000
	cubicFastConvergent = true
	cubicTCPFriendly    = true
)

// CubicCC is CUBIC as Linux implements it (net/ipv4/tcp_cubic.c, with the
// window arithmetic of tcp_cong.c and PRR from tcp_input.c), in the
// kernel's fixed-point units: time in jiffies (HZ = 1000) and 2^-10 s,
// delays in µs.
//
//   - Window growth follows W(t) = C (t − K)^3 + W_max with C = 0.4
//     (bic_scale 41) and K = cbrt(W_max (1 − β) / C), β = 717/1024,
//     evaluated at t + min delay; cwnd moves towards the target by
//     1/cnt per ACKed segment, cnt >= 2; the first epoch with no W_max
//     grows at least 5 % per RTT.
//   - Fast convergence: a loss below the previous W_max sets
//     W_max = cwnd (1 + β) / 2.
//   - TCP-friendly region: an estimate of Reno's window (one segment per
//     cwnd × 1.875 ACKed segments, tcp_friendliness) caps cnt so that
//     CUBIC never grows slower than Reno.
//   - Loss: ssthresh = max(cwnd β, 2); fast recovery reduces the window
//     with PRR (RFC 6937) and ends at cwnd = ssthresh. Timeout: cwnd = 1,
//     and CUBIC's state (W_max, min delay) is reset, as Linux does on
//     entering TCP_CA_Loss.
//   - HyStart is Linux's: the ack-train detector (ACKs no more than 2 ms
//     apart spanning more than min delay / 2 since the round began, or the
//     whole min delay when paced) and the delay-increase detector (the
//     minimum of the round's first 8 RTT samples exceeds the min delay by
//     clamp(min delay / 8, 4 ms, 16 ms)), from cwnd 16 on; either sets
//     ssthresh = cwnd. HyStart++ (RFC 9406) is not modelled.
//
// Without SACK the sender's flight counts the segments duplicate ACKs
// stand for (they are RFC 5681's inflation), so during recovery Cwnd reads
// higher than Linux's snd_cwnd by that count; PRR's decisions, made on the
// pipe (AckEvent.Pipe), are Linux's.
//
// Approximations: the cube root is computed in floating point rather than
// by Linux's table and Newton step (a relative difference below 0.1 %);
// hystart_ack_delay, the cushion for TSO/GRO aggregation, is 0 because the
// model has no segmentation offload; the "undo" of spurious reductions
// (tcp_try_undo_*) is not modelled.
type CubicCC struct {
	cwnd, ssthresh int
	cwndCnt        int // snd_cwnd_cnt
	hystart        bool
	prr            prr

	// struct bictcp
	cnt         uint32
	lastMaxCwnd uint32
	lastCwnd    uint32
	lastTime    int64 // jiffies
	origin      uint32
	k           uint32 // 2^-10 s
	delayMin    uint32 // µs; 0: none yet
	epochStart  int64  // jiffies
	epochValid  bool
	ackCnt      uint32
	tcpCwnd     uint32

	found      bool
	roundValid bool
	roundStart int64 // µs
	lastAck    int64 // µs
	endSeq     SeqNum
	currRTT    uint32
	sampleCnt  uint8
}

// NewCubic returns CUBIC with initial window iw; hystart enables HyStart.
func NewCubic(iw int, hystart bool) *CubicCC {
	return &CubicCC{cwnd: iw, ssthresh: InfiniteSsthresh, hystart: hystart}
}

func (c *CubicCC) Name() string                 { return CUBIC }
func (c *CubicCC) Cwnd() int                    { return c.cwnd }
func (c *CubicCC) Ssthresh() int                { return c.ssthresh }
func (c *CubicCC) SetWindow(cwnd, ssthresh int) { c.cwnd, c.ssthresh = cwnd, ssthresh }
func (c *CubicCC) Classic() bool                { return false }

// WMax is CUBIC's last maximum window (last_max_cwnd), in segments.
func (c *CubicCC) WMax() int { return int(c.lastMaxCwnd) }

// K is the time from the start of the current epoch to the plateau.
func (c *CubicCC) K() des.Time {
	return des.Time(uint64(c.k) * uint64(des.Second) >> cubicHZShift)
}

func jiffies(t des.Time) int64 { return int64(t / des.Millisecond) }
func micros(t des.Time) int64  { return int64(t / des.Microsecond) }

func (c *CubicCC) reset() {
	c.cnt, c.lastMaxCwnd, c.lastCwnd, c.lastTime = 0, 0, 0, 0
	c.origin, c.k, c.delayMin = 0, 0, 0
	c.epochValid, c.epochStart, c.ackCnt, c.tcpCwnd = false, 0, 0, 0
	c.found = false
	c.roundValid = false
}

func (c *CubicCC) hystartReset(ev *AckEvent) {
	now := micros(ev.Now)
	c.roundStart, c.lastAck = now, now
	c.endSeq = ev.SndNxt
	c.currRTT = math.MaxUint32
	c.sampleCnt = 0
	c.roundValid = true
}

// acked is cubictcp_acked: the min delay and HyStart, for every ACK with
// an RTT sample.
func (c *CubicCC) acked(ev *AckEvent) {
	if ev.RTT <= 0 {
		return
	}
	// Discard delay samples right after a reduction.
	if c.epochValid && jiffies(ev.Now)-c.epochStart < cubicHZ {
		return
	}
	delay := uint32(max(micros(ev.RTT), 1))
	if c.delayMin == 0 || c.delayMin > delay {
		c.delayMin = delay
	}
	if c.hystart && !c.found && c.cwnd < c.ssthresh && c.cwnd >= hystartLowWindow {
		c.hystartUpdate(delay, ev)
	}
}

func (c *CubicCC) hystartUpdate(delay uint32, ev *AckEvent) {
	if !c.roundValid || ev.SndUna.After(c.endSeq) {
		c.hystartReset(ev)
	}
	now := micros(ev.Now)
	// Ack train: ACKs closely spaced for longer than half the min delay
	// (the whole min delay when paced, since pacing spreads the round).
	if now-c.lastAck <= hystartAckDeltaUS {
		c.lastAck = now
		threshold := int64(c.delayMin)
		if !ev.Paced {
			threshold >>= 1
		}
		if now-c.roundStart > threshold {
			c.found = true
			c.ssthresh = c.cwnd
		}
	}
	// Delay increase.
	if c.currRTT > delay {
		c.currRTT = delay
	}
	if c.sampleCnt < hystartMinSamples {
		c.sampleCnt++
	} else {
		thresh := min(max(c.delayMin>>3, hystartDelayMinUS), hystartDelayMaxUS)
		if c.currRTT > c.delayMin+thresh {
			c.found = true
			c.ssthresh = c.cwnd
		}
	}
}

// slowStart is tcp_slow_start: it returns the ACKed segments left over
// once cwnd reaches ssthresh.
func (c *CubicCC) slowStart(acked int) int {
	cw := min(c.cwnd+acked, c.ssthresh)
	acked -= cw - c.cwnd
	c.cwnd = cw
	return acked
}

// congAvoidAI is tcp_cong_avoid_ai: +1 per w segments ACKed.
func (c *CubicCC) congAvoidAI(w, acked int) {
	if c.cwndCnt >= w {
		c.cwndCnt = 0
		c.cwnd++
	}
	c.cwndCnt += acked
	if c.cwndCnt >= w {
		d := c.cwndCnt / w
		c.cwndCnt -= d * w
		c.cwnd += d
	}
}

// TxStart is cubictcp_cwnd_event(CA_EVENT_TX_START): data leaves with
// nothing in flight, the last data segment having left at lastSent. The
// epoch moves forward by the idle time, so the window goes on along the
// cubic curve from where it stopped instead of jumping to where the curve
// got to meanwhile (Linux since 4.3, "better follow cubic curve after
// idle period"), never past now.
func (c *CubicCC) TxStart(lastSent, now des.Time) {
	j := jiffies(now)
	if delta := j - jiffies(lastSent); c.epochValid && delta > 0 {
		c.epochStart = min(c.epochStart+delta, j)
	}
}

// update is bictcp_update: it sets cnt, the ACKed segments per +1.
func (c *CubicCC) update(cwnd, acked uint32, now des.Time) {
	j := jiffies(now)
	c.ackCnt += acked
	if c.lastCwnd == cwnd && j-c.lastTime <= cubicHZ/32 {
		return
	}
	if !(c.epochValid && j == c.lastTime) {
		c.lastCwnd = cwnd
		c.lastTime = j
		if !c.epochValid {
			c.epochValid = true
			c.epochStart = j
			c.ackCnt = acked
			c.tcpCwnd = cwnd
			if c.lastMaxCwnd <= cwnd {
				c.k = 0
				c.origin = cwnd
			} else {
				c.k = uint32(math.Cbrt(float64(uint64(cubicCubeFactor) * uint64(c.lastMaxCwnd-cwnd))))
				c.origin = c.lastMaxCwnd
			}
		}
		// t = time since the epoch plus the min delay, in 2^-10 s.
		delayJ := (int64(c.delayMin) + 999) / 1000
		t := uint64(j-c.epochStart+delayJ) << cubicHZShift / cubicHZ
		var offs uint64
		if t < uint64(c.k) {
			offs = uint64(c.k) - t
		} else {
			offs = t - uint64(c.k)
		}
		delta := uint32((cubicCubeRTTScale * offs * offs * offs) >> (10 + 3*cubicHZShift))
		var target uint32
		if t < uint64(c.k) {
			target = c.origin - delta
		} else {
			target = c.origin + delta
		}
		if target > cwnd {
			c.cnt = cwnd / (target - cwnd)
		} else {
			c.cnt = 100 * cwnd
		}
		if c.lastMaxCwnd == 0 && c.cnt > 20 {
			c.cnt = 20
		}
	}
	if cubicTCPFriendly {
		delta := (cwnd * cubicTCPBetaScale) >> 3
		for delta > 0 && c.ackCnt > delta {
			c.ackCnt -= delta
			c.tcpCwnd++
		}
		if c.tcpCwnd > cwnd {
			maxCnt := cwnd / (c.tcpCwnd - cwnd)
			if c.cnt > maxCnt {
				c.cnt = maxCnt
			}
		}
	}
	c.cnt = max(c.cnt, 2)
}

func (c *CubicCC) OnAck(ev *AckEvent) {
	c.acked(ev)
	if !ev.CwndLimited || ev.Delivered <= 0 {
		return
	}
	acked := ev.Delivered
	if c.cwnd < c.ssthresh {
		if acked = c.slowStart(acked); acked == 0 {
			return
		}
	}
	c.update(uint32(c.cwnd), uint32(acked), ev.Now)
	c.congAvoidAI(int(c.cnt), acked)
}

// recalcSsthresh is cubictcp_recalc_ssthresh.
func (c *CubicCC) recalcSsthresh() int {
	c.epochValid = false
	cw := uint32(c.cwnd)
	if cw < c.lastMaxCwnd && cubicFastConvergent {
		c.lastMaxCwnd = cw * (cubicBetaScale + cubicBeta) / (2 * cubicBetaScale)
	} else {
		c.lastMaxCwnd = cw
	}
	return max(int(cw*cubicBeta/cubicBetaScale), 2)
}

func (c *CubicCC) EnterRecovery(ev *AckEvent) {
	c.acked(ev)
	c.prr.start(c.cwnd)
	c.ssthresh = c.recalcSsthresh()
	c.cwndCnt = 0
	if w, ok := c.prr.window(c.ssthresh, ev); ok {
		c.cwnd = w
	}
}

func (c *CubicCC) RecoveryAck(ev *AckEvent) {
	c.acked(ev)
	if w, ok := c.prr.window(c.ssthresh, ev); ok {
		c.cwnd = w
	}
}

func (c *CubicCC) ExitRecovery(ev *AckEvent) {
	c.acked(ev)
	c.cwnd = c.ssthresh
}

func (c *CubicCC) OnRTO(ev *AckEvent, reduce bool) {
	if reduce {
		c.ssthresh = c.recalcSsthresh()
	}
	c.cwnd = 1
	c.cwndCnt = 0
	c.reset()
}
