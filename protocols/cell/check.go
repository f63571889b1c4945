package cell

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
	"github.com/uplinksim/uplink/protocols/arms"
	"github.com/uplinksim/uplink/queues"
)

// MaxPayload bounds a cell's payload (and a warm-up stream's or a
// background message's size).
const MaxPayload = 1 << 30

// Check makes every check Run makes before it builds a host, so that a
// sweep's parent process can refuse a bad cell before any cell starts:
// the settings and their bounds, the arm's units for the payload, the
// topology draw's parameters (or an imported draw), every node's queue
// disciplines, the TCP model, and the settings that one transport or arm
// cannot use. Run calls it too.
func (c Config) Check() error {
	c.Defaults()
	if err := c.validate(); err != nil {
		return err
	}
	arm, err := arms.LookupArm(c.Arm)
	if err != nil {
		return err
	}
	if err := c.checkArm(arm); err != nil {
		return err
	}
	if err := c.checkPartitions(arm); err != nil {
		return err
	}
	if c.Replicate < 0 {
		return fmt.Errorf("replicate %d: want 0 (the first run) or more", c.Replicate)
	}
	if c.Topology != nil {
		if err := c.Topology.Validate(); err != nil {
			return fmt.Errorf("topology: %w", err)
		}
	} else if err := netmodel.CheckDraw(c.N, c.Degree, c.Latency, c.Net); err != nil {
		return fmt.Errorf("topology: %w", err)
	}
	n, _ := c.Size()
	if err := c.checkQdiscs(n); err != nil {
		return err
	}
	if err := c.checkObserve(n); err != nil {
		return err
	}
	if err := c.checkBackend(); err != nil {
		return err
	}
	return c.checkTransport()
}

// checkArm checks what the arm cannot do: withheld units outside its units
// (or any with variant B), a warm-up payload of variant B (its parts
// travel on the partial-messages extension, not as gossip messages), and
// variant B's ledger rules switched off on another arm.
func (c Config) checkArm(arm arms.Arm) error {
	payload := cellPayload(arm, c.Encoding, c.Seed, c.Payload)
	if off := c.BRulesOff.String(); off != "" && arm.Variant != arms.VariantB {
		return fmt.Errorf("arm %s: variant B's rules switched off (%s) on an arm without its claim ledger", arm.Name, off)
	}
	if (c.BTimeout > 0 || c.BFixed) && arm.Variant != arms.VariantB {
		return fmt.Errorf("arm %s: variant B's request timeout (%v, fixed %t) on an arm without one", arm.Name, c.BTimeout, c.BFixed)
	}
	if arm.Variant == arms.VariantB {
		if _, err := arm.Parts(payload); err != nil {
			return err
		}
		if len(c.Withhold) > 0 {
			return fmt.Errorf("arm %s: withholding parts of variant B is not supported", arm.Name)
		}
		if c.Warmup.Kind == "payload" {
			return fmt.Errorf("arm %s: a payload warm-up needs an arm that publishes gossip messages (variant B sends parts on the partial-messages extension); use --warmup streams:SIZE", arm.Name)
		}
		return nil
	}
	units, err := arm.UnitsEncoded(payload, c.Seed, c.Encoding)
	if err != nil {
		return err
	}
	for _, i := range c.Withhold {
		if i < 0 || i >= len(units.Units) {
			return fmt.Errorf("withheld unit %d: arm %s has units 0 to %d", i, arm.Name, len(units.Units)-1)
		}
	}
	return nil
}

// checkQdiscs resolves every node's uplink and downlink discipline (the
// profile's assignment with the per-node file's over it) and the host
// queue's, and builds each distinct spec once.
func (c Config) checkQdiscs(n int) error {
	var upMap, downMap *QdiscMap
	if c.Qdiscs != nil {
		upMap, downMap = c.Qdiscs.Uplink, c.Qdiscs.Downlink
	}
	p := &c.Profile
	up, err := upMap.resolve(p.UpQdisc, n, c.Seed)
	if err != nil {
		return fmt.Errorf("uplink-qdisc: %w", err)
	}
	down, err := downMap.resolve(p.DownQdisc, n, c.Seed)
	if err != nil {
		return fmt.Errorf("downlink-qdisc: %w", err)
	}
	built := map[string]bool{}
	build := func(knob, spec string) error {
		if built[spec] {
			return nil
		}
		built[spec] = true
		if _, err := queues.New(spec, rand.New(rand.NewPCG(1, 1))); err != nil {
			return fmt.Errorf("%s: %w", knob, err)
		}
		return nil
	}
	for i := range n {
		if err := build("uplink-qdisc", up[i]); err != nil {
			return err
		}
		if err := build("downlink-qdisc", down[i]); err != nil {
			return err
		}
	}
	if p.HostQdisc != "" {
		if err := build("host-qdisc", p.HostQdisc); err != nil {
			return err
		}
		if _, err := des.CheckRate("host-rate", float64(p.HostRate)); err != nil {
			return fmt.Errorf("knob host-rate: %w", err)
		}
	}
	return nil
}

// checkTransport refuses TCP knobs changed on a QUIC cell, where nothing
// reads them, and, on a TCP cell, a TCP model the knobs make invalid (a
// buffer below the MSS, say).
func (c Config) checkTransport() error {
	if c.Transport == "tcp" {
		_, err := c.Profile.tcpConfig(c.Seed)
		return err
	}
	p := c.Profile
	var changed []string
	if p.CC != "" {
		changed = append(changed, "cc="+p.CC)
	}
	if p.Pacing != "" {
		changed = append(changed, "pacing="+p.Pacing)
	}
	if p.IdleRestart != "" {
		changed = append(changed, "idle-restart="+p.IdleRestart)
	}
	if p.TCPRmem != "" {
		changed = append(changed, "tcp-rmem="+p.TCPRmem)
	}
	if p.TCPWmem != "" {
		changed = append(changed, "tcp-wmem="+p.TCPWmem)
	}
	if base, err := LookupProfile(p.Name); err == nil && p.TCP != base.TCP {
		changed = append(changed, "tcp="+p.TCP)
	}
	if len(changed) > 0 {
		slices.Sort(changed)
		return fmt.Errorf("knob %v applies to --transport tcp; with %s nothing reads it: add --transport tcp or drop the knob", changed, c.Transport)
	}
	return nil
}

// checkBounds checks the settings' numbers against des's bounds (a Config
// may come from JSON, not only from flags).
func (c Config) checkBounds() error {
	switch {
	case c.Topology == nil && c.N > des.MaxNodes:
		return fmt.Errorf("%d nodes: at most %d", c.N, des.MaxNodes)
	case c.Payload > MaxPayload:
		return fmt.Errorf("payload %d bytes: at most %s", c.Payload, des.FormatBytes(MaxPayload))
	case c.Window > des.MaxVirtual || c.Deadline > des.MaxVirtual || c.MeshTimeout > des.MaxVirtual:
		return fmt.Errorf("window %v, deadline %v, mesh timeout %v: each at most %v", c.Window, c.Deadline, c.MeshTimeout, des.MaxVirtual)
	case c.Profile.Settle < 0 || c.Profile.Settle > des.MaxVirtual.Seconds() || math.IsNaN(c.Profile.Settle):
		return fmt.Errorf("knob settle=%g: want 0 to %g seconds", c.Profile.Settle, des.MaxVirtual.Seconds())
	case c.Warmup.Gap > des.MaxVirtual || c.Warmup.Stream > MaxPayload:
		return fmt.Errorf("warm-up %s with drain gap %v: at most %s per stream and %v of gap", c.Warmup, c.Warmup.Gap, des.FormatBytes(MaxPayload), des.MaxVirtual)
	case c.Background.Size > MaxPayload || c.Background.Lead > des.MaxVirtual || c.Background.Interval > des.MaxVirtual ||
		(c.Background.Size > 0 && c.Background.Interval < des.Millisecond):
		return fmt.Errorf("background %s with lead %v: at most %s per message, an interval from 1ms to %v, a lead of at most %v",
			c.Background, c.Background.Lead, des.FormatBytes(MaxPayload), des.MaxVirtual, des.MaxVirtual)
	case c.BTimeout < 0 || c.BTimeout > des.MaxVirtual:
		return fmt.Errorf("variant B request timeout %v: want 0 to %v", c.BTimeout, des.MaxVirtual)
	case c.Profile.RecvSlots < 0 || c.Profile.RecvSlots > maxRecvSlots:
		return fmt.Errorf("knob recv-slots=%d: want 0 to %d", c.Profile.RecvSlots, maxRecvSlots)
	case c.Profile.SockBufMax < 0 || c.Profile.SndBufMax < 0:
		return errors.New("knobs sockbuf-max and sndbuf-max must not be negative")
	case c.Profile.checkSockBufs() != nil:
		return c.Profile.checkSockBufs()
	case c.ProgressEvery != 0 && c.ProgressEvery < MinProgressEvery:
		return fmt.Errorf("progress interval %v: want 0 (no progress lines) or at least %v", c.ProgressEvery, MinProgressEvery)
	}
	return nil
}

// EstimateMemory is a cell's expected peak resident memory in bytes, from
// its connections and payload: a fixed 256 MiB for the runtime and the
// libraries, and per dial-graph edge (one connection, two endpoints) 200
// KiB of connection state plus 0.55 times the payload, the libraries'
// buffers of the copies in flight. It is fitted to whole-message cells at
// degree 70 (100, 250 and 500 nodes measured 2.3, 5.7 and 13.1 GiB;
// BENCHMARKS.md), and is meant to refuse a cell that cannot fit, not to
// size a machine to the byte.
func (c Config) EstimateMemory() int64 {
	return int64(256<<20 + c.Edges()*(200<<10+0.55*float64(max(c.Payload, 1))))
}

// Size is the cell's node count and degree: the imported draw's, else
// the configured ones.
func (c Config) Size() (n, degree int) {
	if c.Topology != nil {
		return c.Topology.N, c.Topology.Degree
	}
	return c.N, c.Degree
}

// Edges is the number of edges of the cell's dial graph: its connections.
func (c Config) Edges() float64 {
	n, degree := c.Size()
	return float64(n) * float64(degree) / 2
}
