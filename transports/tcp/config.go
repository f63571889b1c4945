package tcp

import (
	"errors"
	"fmt"

	"github.com/uplinksim/uplink/des"
)

// Congestion control names accepted by Config.CongestionControl.
const (
	CUBIC      = "cubic"       // Linux's tcp_cubic.c (cc_cubic.go)
	NewReno    = "newreno"     // RFC 5681 with RFC 6582 recovery (cc_newreno.go)
	ShadowReno = "shadow-reno" // Shadow's legacy TCP stack (cc_shadowreno.go)
)

// DelayedAck selects the receiver's acknowledgement policy.
type DelayedAck uint8

const (
	// DelAckOff acknowledges every segment at once.
	DelAckOff DelayedAck = iota
	// DelAckLinux is Linux's policy (net/ipv4/tcp_input.c,
	// __tcp_ack_snd_check): quick ACKs for the first QuickAcks segments,
	// then an ACK once more than one full segment is unacknowledged (every
	// second segment), else the delayed-ACK timer (DelAckTimeout); an
	// out-of-order segment, or one that fills a hole, is acknowledged at
	// once.
	DelAckLinux
	// DelAckShadow is Shadow's: every pure ACK waits ShadowAckDelay (1 ms)
	// for the first ShadowAckSwitch (1 000) ACKs and ShadowAckDelayLater
	// (5 ms) after; data arriving while one is pending is covered by it.
	// The model applies the delay to every pure ACK, duplicates and the
	// ACK of a FIN included (docs/references.md, "Shadow", records no
	// exceptions), so duplicate ACKs arrive at most one per delay.
	DelAckShadow
)

// Autotune selects how socket buffers are sized and grown.
type Autotune uint8

const (
	// AutotuneOff keeps the Default buffer sizes.
	AutotuneOff Autotune = iota
	// AutotuneLinux: the send buffer follows tcp_sndbuf_expand (room for
	// 2 × max(cwnd, 10) segments of Linux's per-segment memory, 4 352
	// bytes for MSS 1 460) and the receive buffer follows dynamic
	// right-sizing (tcp_rcv_space_adjust), both capped at Max.
	AutotuneLinux
	// AutotuneShadow: both buffers start at RTT × min(bandwidth) × 1.25,
	// clamped to [Min, Max]; the receive buffer grows to twice the bytes
	// the application read in one RTT, the send buffer to 2 × cwnd × MSS.
	AutotuneShadow
)

// BufferSizes are Linux's tcp_rmem / tcp_wmem triple, in payload bytes.
type BufferSizes struct{ Min, Default, Max int }

// Config is a TCP profile: every knob of the model. Start from
// LinuxConfig or ShadowConfig and override fields.
type Config struct {
	// CongestionControl names the controller (CUBIC, NewReno, ShadowReno);
	// NewCongestionControl, when set, builds a custom one instead.
	CongestionControl    string
	NewCongestionControl func(initialCwnd int, sack bool) CongestionControl
	// InitialCwnd is the initial window in segments (RFC 6928: 10).
	InitialCwnd int
	// HyStart enables CUBIC's hybrid slow start (Linux's ack-train and
	// delay-increase detectors).
	HyStart bool
	// SlowStartAfterIdle is Linux's tcp_slow_start_after_idle (on by
	// default), RFC 2861's restart: data written when nothing is in flight
	// and no data segment has left for longer than the RTO restarts from
	// at most InitialCwnd segments, the window halved once per RTO of
	// idle time beyond the first (tcp_cwnd_restart), and ssthresh raised
	// to at least 3/4 of the old window. Shadow's TCP has no such rule
	// (its Reno reacts to new ACKs, duplicate ACKs and timeouts only).
	SlowStartAfterIdle bool
	// SACK offers and uses selective acknowledgements (RFC 2018) and
	// SACK-based loss recovery (RFC 6675); both ends must enable it.
	SACK bool
	// MSS is the largest payload per segment; with the 40 bytes of IPv4
	// and TCP headers it must fit the network's MTU.
	MSS int

	// Pacing spaces segments at PacingSSRatio % (cwnd < ssthresh/2) or
	// PacingCARatio % of max(cwnd, packets out) × MSS / SRTT (Linux's
	// tcp_update_pacing_rate, enforced as internal pacing or fq would);
	// the first PacingUnpaced segments go unpaced, as sch_fq does.
	Pacing                       bool
	PacingSSRatio, PacingCARatio int
	PacingUnpaced                int

	DelayedAck    DelayedAck
	DelAckTimeout des.Time // DelAckLinux: the delayed-ACK timer
	QuickAcks     int      // DelAckLinux: ACKs sent at once at the start
	// DelAckShadow: the delay of the first ShadowAckSwitch pure ACKs, and
	// of the later ones.
	ShadowAckDelay, ShadowAckDelayLater des.Time
	ShadowAckSwitch                     int

	Autotune   Autotune
	SendBuffer BufferSizes
	RecvBuffer BufferSizes
	// AdvWinScale is Linux's tcp_adv_win_scale before 6.x: of a receive
	// buffer of b bytes, b − b>>AdvWinScale is offered as window (1: half;
	// 0: all of it, Shadow). ScalingRatio replaces it.
	AdvWinScale int
	// ScalingRatio is Linux 6.x's share of the receive buffer offered as
	// window (tcp_win_from_space): b × scaling_ratio / 256, where
	// scaling_ratio is 50 % until the first full-sized segment arrives
	// (TCP_DEFAULT_SCALING_RATIO, Linux 6.11 on) and then that segment's
	// payload over its truesize (tcp_measure_rcv_mss), the model's
	// truesize being the payload plus linuxSkbOverhead. Autotuning's
	// inverse (tcp_space_from_win) divides by the same ratio.
	ScalingRatio bool
	// WindowScale is window scaling (RFC 7323) as Linux offers windows
	// with it (__tcp_select_window): the free space to the byte, aligned
	// up to the scale's unit, rather than rounded down to whole segments;
	// below half the buffer it is rounded down to the unit and offered as
	// zero under one segment or a sixteenth of the buffer. The scale is
	// tcp_select_initial_window's: ilog2(max(RecvBuffer.Max, RmemMax)) −
	// 15, in [0, 14]. SYNs offer tcp_select_initial_window's first
	// window: the buffer's share rounded down to whole segments, at most
	// 65 535. Without it the window is offered in whole segments.
	WindowScale bool
	// RmemMax is net.core.rmem_max (Linux's default 212 992, SK_RMEM_MAX,
	// net/core/sock.c): it caps SO_RCVBUF requests, which the model's TCP
	// never makes, so it enters only the window scale above.
	RmemMax int
	// HalfWindowMSS bounds the segment size to half the largest window
	// the peer has offered (Linux's tcp_bound_to_half_wnd, rerun by
	// tcp_sync_mss whenever that window grows), so that a window of
	// under two segments still carries two.
	HalfWindowMSS bool

	// RTO per RFC 6298: RTOInitial before the first sample, clamped to
	// [RTOMin, RTOMax], doubled on each expiry. RTOVarFloor applies Linux's
	// floor on the variance term instead (RTO = SRTT + max(4 RTTVAR,
	// RTOMin)).
	RTOInitial, RTOMin, RTOMax des.Time
	RTOVarFloor                bool
	// SynRetries and Retries are how often a SYN and a data segment are
	// retransmitted by the timer before the connection fails
	// (tcp_syn_retries 6, tcp_retries2 15).
	SynRetries, Retries int
	// TimeWait is how long a connection stays in TIME-WAIT (2 MSL, Linux
	// 60 s); FinTimeout how long an orphaned connection waits in
	// FIN-WAIT-2 (tcp_fin_timeout 60 s).
	TimeWait, FinTimeout des.Time
	// Backlog bounds a listener's connections not yet accepted.
	Backlog int
	// Seed derives the initial sequence numbers.
	Seed uint64
}

// Linux's default sysctls of the socket buffers: net.ipv4.tcp_rmem and
// tcp_wmem (net/ipv4/tcp.c, tcp_init: 4 KiB / 128 KiB / 6 MiB and
// 4 KiB / 16 KiB / 4 MiB on a machine with enough memory) and
// net.core.rmem_max and wmem_max (net/core/sock.c: SK_RMEM_MAX and
// SK_WMEM_MAX, 256 skbs of 832 bytes on x86-64).
var (
	LinuxRmem = BufferSizes{4096, 131072, 6291456}
	LinuxWmem = BufferSizes{4096, 16384, 4194304}
)

// LinuxRmemMax and LinuxWmemMax are net.core.rmem_max and wmem_max.
const (
	LinuxRmemMax = 212992
	LinuxWmemMax = 212992
)

// LinuxConfig is Linux 6.x's default TCP: CUBIC with HyStart, SACK,
// internal pacing, Linux's delayed ACKs, window scaling and buffer
// autotuning with the stock tcp_rmem (4 096 / 131 072 / 6 291 456) and
// tcp_wmem (4 096 / 16 384 / 4 194 304), min RTO 200 ms.
func LinuxConfig() Config {
	return Config{
		CongestionControl:  CUBIC,
		InitialCwnd:        10,
		HyStart:            true,
		SlowStartAfterIdle: true,
		SACK:               true,
		MSS:                1460,
		Pacing:             true,
		PacingSSRatio:      200,
		PacingCARatio:      120,
		PacingUnpaced:      10,
		DelayedAck:         DelAckLinux,
		DelAckTimeout:      40 * des.Millisecond,
		QuickAcks:          16,
		Autotune:           AutotuneLinux,
		SendBuffer:         LinuxWmem,
		RecvBuffer:         LinuxRmem,
		ScalingRatio:       true,
		WindowScale:        true,
		RmemMax:            LinuxRmemMax,
		HalfWindowMSS:      true,
		RTOInitial:         des.Second,
		RTOMin:             200 * des.Millisecond,
		RTOMax:             120 * des.Second,
		RTOVarFloor:        true,
		SynRetries:         6,
		Retries:            15,
		TimeWait:           60 * des.Second,
		FinTimeout:         60 * des.Second,
		Backlog:            4096,
	}
}

// ShadowConfig is Shadow 3.x's legacy TCP stack (docs/references.md,
// "Shadow"): Reno with Shadow's constants and its initial window of 1
// segment (tcp_cong_reno_init), which the ACK of the SYN raises to 2
// (sender.countHandshake); no SACK-based recovery, no pacing, Shadow's
// delayed pure ACKs and buffer autotuning (send [16 KiB, 4 MiB], receive
// [87 380, 6 MiB]; the defaults 131 072 and 174 760 apply until the
// handshake gives an RTT), RTO = SRTT + 4 RTTVAR in [200 ms, 120 s].
func ShadowConfig() Config {
	c := LinuxConfig()
	c.CongestionControl = ShadowReno
	c.InitialCwnd = 1
	c.HyStart = false
	c.SlowStartAfterIdle = false
	c.SACK = false
	c.Pacing = false
	c.DelayedAck = DelAckShadow
	c.ShadowAckDelay = des.Millisecond
	c.ShadowAckDelayLater = 5 * des.Millisecond
	c.ShadowAckSwitch = 1000
	c.Autotune = AutotuneShadow
	c.SendBuffer = BufferSizes{16384, 131072, 4 << 20}
	c.RecvBuffer = BufferSizes{87380, 174760, 6 << 20}
	c.AdvWinScale = 0
	c.ScalingRatio, c.WindowScale, c.HalfWindowMSS = false, false, false
	c.RTOVarFloor = false
	return c
}

// Validate checks c against a link MTU, as NewStack does.
func (c Config) Validate(mtu int) error { return c.validate(mtu) }

// validate checks c against an MTU.
func (c *Config) validate(mtu int) error {
	if c.NewCongestionControl == nil {
		switch c.CongestionControl {
		case CUBIC, NewReno, ShadowReno:
		default:
			return fmt.Errorf("tcp: unknown congestion control %q (valid: %s, %s, %s)", c.CongestionControl, CUBIC, NewReno, ShadowReno)
		}
	}
	switch {
	case c.MSS < 64:
		return fmt.Errorf("tcp: MSS %d too small (at least 64)", c.MSS)
	case c.MSS+20+HeaderLen > mtu:
		return fmt.Errorf("tcp: MSS %d plus 40 bytes of headers exceeds the MTU %d", c.MSS, mtu)
	case c.InitialCwnd < 1:
		return fmt.Errorf("tcp: initial window %d segments; at least 1", c.InitialCwnd)
	case c.Pacing && (c.PacingSSRatio <= 0 || c.PacingCARatio <= 0):
		return fmt.Errorf("tcp: pacing ratios %d%% / %d%% must be positive", c.PacingSSRatio, c.PacingCARatio)
	case c.DelayedAck == DelAckLinux && c.DelAckTimeout <= 0:
		return errors.New("tcp: Linux delayed ACKs need a positive DelAckTimeout")
	case c.DelayedAck == DelAckShadow && (c.ShadowAckDelay <= 0 || c.ShadowAckDelayLater <= 0):
		return errors.New("tcp: Shadow delayed ACKs need positive ShadowAckDelay and ShadowAckDelayLater")
	case c.DelayedAck > DelAckShadow:
		return fmt.Errorf("tcp: unknown delayed-ACK mode %d", c.DelayedAck)
	case c.Autotune > AutotuneShadow:
		return fmt.Errorf("tcp: unknown autotuning mode %d", c.Autotune)
	case c.AdvWinScale < 0 || c.AdvWinScale > 4:
		return fmt.Errorf("tcp: AdvWinScale %d out of range [0, 4]", c.AdvWinScale)
	case c.RTOMin <= 0 || c.RTOMax < c.RTOMin || c.RTOInitial < c.RTOMin || c.RTOInitial > c.RTOMax:
		return fmt.Errorf("tcp: RTO bounds initial %v, min %v, max %v inconsistent", c.RTOInitial, c.RTOMin, c.RTOMax)
	case c.SynRetries < 0 || c.Retries < 1:
		return fmt.Errorf("tcp: retries %d (SYN) / %d (data) out of range", c.SynRetries, c.Retries)
	case c.TimeWait < 0 || c.FinTimeout < 0:
		return errors.New("tcp: negative TIME-WAIT or FIN timeout")
	case c.Backlog < 1:
		return fmt.Errorf("tcp: backlog %d; at least 1", c.Backlog)
	}
	for _, b := range []struct {
		name string
		s    BufferSizes
	}{{"send", c.SendBuffer}, {"receive", c.RecvBuffer}} {
		if b.s.Min < 1 || b.s.Default < b.s.Min || b.s.Max < b.s.Default || b.s.Max < c.MSS || b.s.Max > 1<<30 {
			return fmt.Errorf("tcp: %s buffer sizes %+v: need 1 <= Min <= Default <= Max <= 1 GiB and Max >= MSS %d", b.name, b.s, c.MSS)
		}
	}
	if c.RmemMax < 0 || c.RmemMax > 1<<30 {
		return fmt.Errorf("tcp: RmemMax %d out of range [0, 1 GiB]", c.RmemMax)
	}
	return nil
}
