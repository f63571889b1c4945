// Package cell runs the study's cells: N go-libp2p hosts running
// gossipsub over uplink's network, one publish from node 0, and every
// receiver's completion time, under a profile that reproduces one of the
// reference backends.
package cell

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/klauspost/compress/snappy"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
	"github.com/uplinksim/uplink/protocols/arms"
	"github.com/uplinksim/uplink/protocols/partial"
	"github.com/uplinksim/uplink/protocols/phase"
	"github.com/uplinksim/uplink/queues"
	"github.com/uplinksim/uplink/transports/tcp"
	"github.com/uplinksim/uplink/transports/udp"
)

// MaxSetupQuantum bounds Config.SetupQuantum: a coarser quantum would
// rival the study's shortest one-way latencies (a few ms within a region).
const MaxSetupQuantum = 10 * des.Millisecond

// Topic is the gossipsub topic of a cell.
const Topic = "uplink/cell"

// Config is one cell.
type Config struct {
	Arm       string // an arm of the catalogue (arms.LookupArm), "whole" by default
	Seed      uint64
	N, Degree int
	Payload   int    // bytes
	Net       string // scenario: home, dc20, dcb20, upN
	Latency   string // latency model: geo, fixed:50ms, uniform:20ms,100ms
	Transport string // quic, or tcp (the profile's TCP model, see Profile.TCP)
	Profile   Profile
	Gossip    Gossip
	Window    des.Time // observation window after the publish
	Deadline  des.Time // the budget for rate@deadline
	PerNode   bool
	Version   string
	// MeshTimeout bounds the "stable" mesh wait; the cell publishes anyway
	// when it passes and records mesh_stable false.
	MeshTimeout des.Time
	Progress    io.Writer // phase lines; nil: none
	// SetupProcs, when positive, is GOMAXPROCS while hosts are built and
	// the graph is dialled (TLS handshakes parallelise); the previous value
	// is restored for mesh formation (or after it, with a SetupQuantum) and
	// delivery, which run fastest on one core. Virtual-time results do not
	// depend on it.
	SetupProcs int
	// SetupQuantum, when positive, is a fidelity setting for the setup
	// phases (hosts, dial and mesh formation): real code sees the model's
	// events only at multiples of it (des.Live.SetQuantum), so the
	// goroutines of many nodes run in one virtual instant and the setup
	// uses SetupProcs cores. Every latency real code observes during setup
	// is rounded up to the quantum; the warm-up, background load and
	// delivery run exact. Zero (the default) keeps setup exact too.
	SetupQuantum des.Time `json:",omitempty"`
	// Qdiscs, when set, assigns queue disciplines per node (a file's
	// content), over the profile's assignment.
	Qdiscs *NodeQdiscs
	// Topology, when set, replaces the drawn graph, rates and latencies (a
	// replay of an exported draw).
	Topology *netmodel.Draw
	// Withhold lists unit indices the publisher does not publish (tests of
	// the coded arms' any-K rule).
	Withhold []int
	// Verify rebuilds the payload at every complete receiver from the
	// units it was delivered (decoding coded arms) and records how many
	// matched. It keeps every delivered unit until the end of the window.
	Verify bool
	// Encoding is how each gossip message's bytes go on the wire:
	// arms.EncodingRaw (the zero value, which keeps old records' keys; the
	// CLI's default is snappy) or arms.EncodingSnappy (the study's gossip
	// encoder; the whole message then carries the
	// mainnet-like payload, as the study's does, instead of random bytes).
	Encoding arms.Encoding `json:",omitempty"`
	// Warmup and Background are the warm-up and background-load modes
	// (zero: off).
	Warmup     Warmup
	Background Background
	// BTimeout and BFixed change variant B's request timeout: its first
	// value (0: 400 ms) and whether it stays fixed (study knobs).
	BTimeout des.Time
	BFixed   bool
	// PhaseHook, when set, is called as each phase starts: hosts, dial,
	// mesh, warmup (when on), delivery, teardown. A profiler can switch
	// files there; it runs on the cell's goroutine inside the bubble and
	// must not start goroutines there.
	PhaseHook func(phase string) `json:"-"`
	// Wait is the wait of the synctest bubble Run runs in (synctest.Wait):
	// it returns once every other goroutine of the bubble is durably
	// blocked. Run refuses to start without it.
	Wait func() `json:"-"`
	// routers, for tests of the phase router: routerByArm, routerPhase
	// (every node runs the phase router, with no policy for stock arms), or
	// routerMixed (odd nodes run the stock router, even ones the arm's).
	routers int
	// bMute lists variant B nodes that never answer a claim (tests).
	bMute []int
	// onHosts, when set, is called with the hosts once all are built
	// (tests).
	onHosts func([]host.Host)
}

const (
	routerByArm = iota
	routerPhase
	routerMixed
)

// Defaults fills the zero fields with the study's values.
func (c *Config) Defaults() {
	if c.Arm == "" {
		c.Arm = "whole"
	}
	if c.Net == "" {
		c.Net = "home"
	}
	if c.Latency == "" {
		c.Latency = "geo"
	}
	if c.Transport == "" {
		c.Transport = "quic"
	}
	if c.Window == 0 {
		c.Window = 8 * des.Second
	}
	if c.Deadline == 0 {
		c.Deadline = 3 * des.Second
	}
	if c.MeshTimeout == 0 {
		c.MeshTimeout = 60 * des.Second
	}
	if c.Gossip.D == 0 {
		c.Gossip = StudyGossip()
	}
}

// shadowFIFOOrder is the revision of how Shadow's fifo orders TCP
// segments, part of the key of the cells it affects (see Key): 0, a plain
// FIFO in the order windows released segments; 1, Shadow's write-time
// packet priorities (queues.ShadowFIFO, transports/tcp/prio.go).
const shadowFIFOOrder = 1

// simnetIdleReset is hashed into the key of every cell with simnet's
// fq_codel (the harness profile's) since that queue discards a flow's
// CoDel state when the flow runs empty (queues.FQCoDelConfig.ResetIdle).
const simnetIdleReset = 1

// Key identifies the cell run: a hash of every setting that can change its
// result (arm, seed, size, topology, profile and knobs, gossip, window,
// modes), not of how it is run (progress, cores, verification, version).
// Records carry it, so a rerun can skip cells it already has. A TCP cell
// with a Shadow fifo anywhere also hashes shadowFIFOOrder, so that records
// made before that model changed are not reused as current ones (QUIC
// cells are unaffected: their one UDP socket sends in order either way).
// A cell with simnet's fq_codel anywhere hashes simnetIdleReset the same
// way. The phase-rules knob is left out of the key of arms that do not
// use the phase router, and topic-mesh-wait out of that of arms with one
// topic: neither can change their cells.
func (c Config) Key() string {
	c.Defaults()
	c.Progress, c.SetupProcs, c.Version, c.PerNode, c.Verify, c.PhaseHook, c.Wait = nil, 0, "", false, false, nil, nil
	if arm, err := arms.LookupArm(c.Arm); err == nil {
		if _, phased := arm.Policy(c.Payload); !phased {
			c.Profile.PhaseRules = "" // no phase router: the rules change nothing
		}
		if arm.Variant != arms.VariantC {
			c.Profile.TopicMeshWait = "" // one topic: the wait is the same
		}
	}
	var v struct {
		Config
		ShadowFIFOOrder int `json:",omitempty"`
		SimnetIdleReset int `json:",omitempty"`
	}
	v.Config = c
	if c.Transport == "tcp" && c.usesQdisc("shadow-fifo") {
		v.ShadowFIFOOrder = shadowFIFOOrder
	}
	if c.usesQdisc("profile=simnet") {
		v.SimnetIdleReset = simnetIdleReset
	}
	b, err := json.Marshal(v)
	if err != nil {
		// Config holds only plain data; this cannot fail.
		panic(fmt.Sprintf("cell: config key: %v", err))
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:12])
}

// usesQdisc reports whether any queue spec of the cell contains sub.
func (c *Config) usesQdisc(sub string) bool {
	specs := []string{c.Profile.UpQdisc, c.Profile.DownQdisc, c.Profile.HostQdisc}
	if q := c.Qdiscs; q != nil {
		for _, m := range []*QdiscMap{q.Uplink, q.Downlink} {
			if m != nil {
				specs = append(specs, m.Default)
				for _, v := range m.Nodes {
					specs = append(specs, v)
				}
			}
		}
	}
	for _, s := range specs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func (c *Config) validate() error {
	if err := c.checkBounds(); err != nil {
		return err
	}
	arm, err := arms.LookupArm(c.Arm)
	if err != nil {
		return err
	}
	_, phased := arm.Policy(c.Payload)
	switch {
	case phased && c.Gossip.FloodPublish:
		return fmt.Errorf("arm %s uses uplink's phase router, which has no flood publish; drop --gossip flood-publish=true", arm.Name)
	case c.Transport != "quic" && c.Transport != "tcp":
		return fmt.Errorf("transport %q: valid transports are: quic, tcp", c.Transport)
	case c.Payload < 1:
		return fmt.Errorf("payload %d bytes: must be at least 1", c.Payload)
	case c.Topology == nil && (c.N < 2 || c.Degree < 1):
		return fmt.Errorf("%d nodes of degree %d: need at least 2 nodes and degree 1", c.N, c.Degree)
	case c.Window <= 0 || c.Deadline <= 0:
		return errors.New("the observation window and the deadline must be positive")
	case c.SetupQuantum < 0 || c.SetupQuantum > MaxSetupQuantum:
		return fmt.Errorf("setup quantum %v: want 0 (exact) up to %v", time.Duration(c.SetupQuantum), time.Duration(MaxSetupQuantum))
	}
	if _, err := arms.ParseEncoding(string(c.Encoding)); err != nil {
		return err
	}
	if err := c.Warmup.validate(); err != nil {
		return err
	}
	if err := c.Background.validate(); err != nil {
		return err
	}
	if fh := c.Profile.FirstHeartbeat; fh != "" {
		d, err := time.ParseDuration(fh)
		switch {
		case err != nil:
			return fmt.Errorf("knob first-heartbeat=%q: %w", fh, err)
		case c.Profile.RouterStart != RouterBeforeDial:
			return fmt.Errorf("knob first-heartbeat=%s needs router-start=before-dial: after the dial the routers start as the nodes subscribe, so their first heartbeat always comes %v later", fh, pubsub.GossipSubHeartbeatInitialDelay)
		case d >= c.Gossip.Heartbeat:
			return fmt.Errorf("knob first-heartbeat=%s: want less than the heartbeat interval, %v", fh, c.Gossip.Heartbeat)
		}
	}
	if c.Transport == "tcp" {
		if _, err := c.Profile.tcpConfig(c.Seed); err != nil {
			return fmt.Errorf("transport tcp: %w", err)
		}
	}
	return c.Gossip.validate()
}

func (c *Config) logf(format string, a ...any) {
	if c.Progress != nil {
		fmt.Fprintf(c.Progress, format+"\n", a...)
	}
}

// ErrNoWait is Run's error for a Config without Wait.
var ErrNoWait = errors.New("cell: Config.Wait is nil: Run needs the wait of the synctest bubble it runs in (synctest.Wait)")

// Run runs the cell. It must run inside a synctest bubble (des.RunInBubble
// from a binary, synctest.Test in a test) whose wait is cfg.Wait; every
// goroutine it starts has ended when it returns.
func Run(cfg Config) (*Record, error) {
	if cfg.Wait == nil {
		return nil, ErrNoWait
	}
	cfg.Defaults()
	if err := cfg.Check(); err != nil {
		return nil, fmt.Errorf("cell: %w", err)
	}
	key := cfg.Key() // before Run adapts anything for the arm
	phaseStart := func(name string) {
		if cfg.PhaseHook != nil {
			cfg.PhaseHook(name)
		}
	}
	phaseStart("hosts")
	w0 := des.WallNow()
	restoreProcs := func() {}
	if cfg.SetupProcs > 0 {
		prev := runtime.GOMAXPROCS(cfg.SetupProcs)
		restoreProcs = func() { runtime.GOMAXPROCS(prev) }
		defer restoreProcs()
	}
	arm, err := arms.LookupArm(cfg.Arm)
	if err != nil {
		return nil, fmt.Errorf("cell: %w", err)
	}
	payload := cellPayload(arm, cfg.Encoding, cfg.Seed, cfg.Payload)
	// Variant B sends parts on the partial-messages extension; the other
	// arms publish units as gossip messages.
	var units arms.Units
	var bparts arms.Parts
	isB := arm.Variant == arms.VariantB
	form := &units.Form
	if isB {
		bparts, err = arm.Parts(payload)
		form = &bparts.Form
		if err == nil && len(cfg.Withhold) > 0 {
			err = fmt.Errorf("arm %s: withholding parts of variant B is not supported", arm.Name)
		}
	} else {
		units, err = arm.UnitsEncoded(payload, cfg.Seed, cfg.Encoding)
	}
	if err != nil {
		return nil, fmt.Errorf("cell: %w", err)
	}
	policy, phased := arm.Policy(len(payload))
	// The publisher's units go out as one library batch for the stock
	// batch arm and, under the fork's rules, for every phase arm (the
	// study's harness publishes variants A and C with PublishBatch; the
	// phase router then sends every unit's pushes before any announcement).
	batch := arm.Forward.Batch
	if phased && cfg.Profile.PhaseRules == PhaseRulesFork {
		policy = forkPolicy(policy)
		batch = true
	}
	if phased {
		cfg.Gossip.MaxIHaveMessages = 4096 // the phase arms' setting (study-model.md)
	}
	topicNames := []string{Topic}
	unitTopic := func(int) int { return 0 }
	if arm.Variant == arms.VariantC {
		topicNames = make([]string, len(units.Units))
		for i := range topicNames {
			topicNames[i] = fmt.Sprintf("%s/%d", Topic, i)
		}
		unitTopic = func(i int) int { return i }
	}
	var policies map[string]phase.Policy
	policyName := "stock"
	switch {
	case arm.Forward.Batch:
		policyName = "stock batch"
	case isB:
		policyName = "partial messages"
		if arm.Coded {
			policyName += ", one part per frame"
		}
	}
	if phased {
		policies = map[string]phase.Policy{}
		for _, t := range topicNames {
			policies[t] = policy
		}
		policyName = policy.String()
	}
	withheld := map[int]bool{}
	for _, i := range cfg.Withhold {
		if i < 0 || i >= len(units.Units) {
			return nil, fmt.Errorf("cell: withheld unit %d: arm %s has units 0 to %d", i, arm.Name, len(units.Units)-1)
		}
		withheld[i] = true
	}
	rec := &Record{
		Key: key,
		Arm: arm.Published, ArmName: arm.Name, Policy: policyName, Topics: len(topicNames),
		Wire: WireRecord{Messages: form.MessageCount, Unit: form.Unit, IDWidth: form.IDWidth, Encoding: string(cfg.Encoding)},
		Seed: cfg.Seed, Net: cfg.Net, NSize: cfg.N, N: cfg.N, Degree: cfg.Degree,
		PayloadBytes: cfg.Payload, Pay: sizeName(cfg.Payload),
		Profile: cfg.Profile.Name, Knobs: cfg.Profile.Knobs(), Gossip: cfg.Gossip.Knobs(),
		Warmup: cfg.Warmup.String(), WarmupGapS: cfg.Warmup.Gap.Seconds(),
		Background: cfg.Background.String(), BackgroundLeadS: cfg.Background.Lead.Seconds(),
		BTimeoutS: cfg.BTimeout.Seconds(), BFixed: cfg.BFixed,
		Transport: cfg.Transport, Latency: cfg.Latency, WindowS: cfg.Window.Seconds(), Version: cfg.Version,
		SetupQuantumS: cfg.SetupQuantum.Seconds(),
	}
	draw := cfg.Topology
	if draw == nil {
		var err error
		if draw, err = netmodel.NewDraw(cfg.N, cfg.Degree, cfg.Seed, cfg.Latency, cfg.Net); err != nil {
			return nil, fmt.Errorf("cell: topology: %w", err)
		}
	} else {
		rec.N, rec.NSize, rec.Degree, rec.Net, rec.Latency = draw.N, draw.N, draw.Degree, draw.Scenario, draw.Model
	}
	graph, err := draw.Graph()
	if err != nil {
		return nil, fmt.Errorf("cell: graph: %w", err)
	}
	n := draw.N
	p := &cfg.Profile

	sim := des.NewSim()
	live := des.NewLive(sim)
	nw, err := netmodel.New(sim, netmodel.Config{
		Latency:    draw.LatencyModel(),
		Seed:       cfg.Seed,
		SockBufMax: p.SockBufMax,
		SndBufMax:  p.SndBufMax,
		RecvSlots:  p.RecvSlots,
		RecvBlock:  p.RecvBlock,
	})
	if err != nil {
		return nil, fmt.Errorf("cell: network: %w", err)
	}
	var upMap, downMap *QdiscMap
	if cfg.Qdiscs != nil {
		upMap, downMap = cfg.Qdiscs.Uplink, cfg.Qdiscs.Downlink
	}
	upSpecs, err := upMap.resolve(p.UpQdisc, n, cfg.Seed)
	if err != nil {
		return nil, fmt.Errorf("cell: uplink-qdisc: %w", err)
	}
	downSpecs, err := downMap.resolve(p.DownQdisc, n, cfg.Seed)
	if err != nil {
		return nil, fmt.Errorf("cell: downlink-qdisc: %w", err)
	}
	rec.UpQdiscs, rec.DownQdiscs = countSpecs(upSpecs), countSpecs(downSpecs)
	streams := des.NewStreams(cfg.Seed)
	for i := range n {
		up, err := queues.New(upSpecs[i], streams.Stream(fmt.Sprintf("qdisc/up/%d", i)))
		if err != nil {
			return nil, fmt.Errorf("cell: node %d uplink-qdisc: %w", i, err)
		}
		down, err := queues.New(downSpecs[i], streams.Stream(fmt.Sprintf("qdisc/down/%d", i)))
		if err != nil {
			return nil, fmt.Errorf("cell: node %d downlink-qdisc: %w", i, err)
		}
		nc := netmodel.NodeConfig{
			Up:   netmodel.LinkConfig{Qdisc: up, Shaper: p.shaper(draw.Up[i])},
			Down: netmodel.LinkConfig{Qdisc: down, Shaper: p.shaper(draw.Down[i])},
		}
		if p.HostQdisc != "" {
			hq, err := queues.New(p.HostQdisc, streams.Stream(fmt.Sprintf("qdisc/host/%d", i)))
			if err != nil {
				return nil, fmt.Errorf("cell: host-qdisc: %w", err)
			}
			nc.UpHost = &netmodel.LinkConfig{Qdisc: hq, Shaper: netmodel.OneMTUBurst(p.HostRate)}
		}
		if _, err := nw.AddNode(nc); err != nil {
			return nil, fmt.Errorf("cell: %w", err)
		}
	}
	live.SetQuantum(cfg.SetupQuantum) // before Start: no lock needed yet
	live.Start()
	defer live.Stop()
	var newHost func(i int) (host.Host, error)
	switch cfg.Transport {
	case "tcp":
		tc, err := p.tcpConfig(cfg.Seed)
		if err != nil {
			return nil, fmt.Errorf("cell: transport tcp: %w", err)
		}
		st, err := tcp.NewStack(live, nw, tc)
		if err != nil {
			return nil, fmt.Errorf("cell: transport tcp: %w", err)
		}
		newHost = func(i int) (host.Host, error) { return newTCPHost(st, i, cfg.Seed) }
	default:
		st := udp.NewStack(live, nw)
		newHost = func(i int) (host.Host, error) { return newQUICHost(st, i, cfg.Seed, p.sendMode()) }
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// Hosts.
	hosts := make([]host.Host, 0, n)
	defer func() {
		for _, h := range hosts {
			h.Close()
		}
	}()
	for i := range n {
		h, err := newHost(i)
		if err != nil {
			return nil, fmt.Errorf("cell: %w", err)
		}
		hosts = append(hosts, h)
	}
	if cfg.onHosts != nil {
		cfg.onHosts(hosts)
	}
	// Gossipsub on every host: before the dial (router-start=before-dial,
	// as a node program that starts its router and then connects; identify
	// then announces the gossipsub protocols in its handshake) or after it
	// (after-dial: every host's new protocols are pushed to its peers).
	tracers := make([]*tracer, n)
	subs := make([][]*pubsub.Subscription, n)
	topics := make([][]*pubsub.Topic, n)
	routers := make([]*phase.Router, n)
	bnodes := make([]*partial.Node, n)
	bparams := partial.Tuned()
	bparams.OnePartPerFrame = arm.Coded
	if cfg.BTimeout > 0 {
		bparams.Timeout0 = cfg.BTimeout.Duration()
	}
	bparams.Fixed = cfg.BFixed
	group := sha256.Sum256(payload)
	var publisher *pubsub.PubSub
	pss := make([]*pubsub.PubSub, n)
	closeGossip := func() {
		for _, rt := range routers {
			if rt != nil {
				rt.Close()
			}
		}
		for _, bn := range bnodes {
			if bn != nil {
				bn.Close()
			}
		}
		for i := range subs {
			for _, s := range subs[i] {
				s.Cancel()
			}
			subs[i] = nil
		}
		for i := range topics {
			for _, t := range topics[i] {
				t.Close()
			}
			topics[i] = nil
		}
	}
	defer closeGossip()
	maxMsg := cfg.Payload + 64<<10
	var routersAt des.Time // virtual instant the routers started
	startRouters := func() error {
		routersAt = live.Now()
		for i, h := range hosts {
			tracers[i] = newTracer(topicNames)
			pol := policies
			if cfg.routers == routerMixed && i%2 == 1 {
				pol = nil
			} else if cfg.routers != routerByArm && pol == nil {
				pol = map[string]phase.Policy{}
			}
			var extra []pubsub.Option
			if isB {
				t := tracers[i]
				bp := bparams
				bp.Mute = slices.Contains(cfg.bMute, i)
				bn, err := partial.New(bp, Topic, group[:], len(bparts.Parts), bparts.Need, t.completeAt)
				if err != nil {
					return fmt.Errorf("cell: node %d: %w", i, err)
				}
				bnodes[i] = bn
				extra = append(extra, pubsub.WithPartialMessagesExtension(bn.Extension()))
			}
			ps, rt, err := newGossipSub(ctx, h, cfg.Gossip, maxMsg, tracers[i], pol, extra...)
			if err != nil {
				return fmt.Errorf("cell: node %d: %w", i, err)
			}
			routers[i], pss[i] = rt, ps
			if bn := bnodes[i]; bn != nil {
				bn.Attach(ps)
			}
			if i == 0 {
				publisher = ps
			}
		}
		return nil
	}
	if p.RouterStart == RouterBeforeDial {
		if err := startRouters(); err != nil {
			return nil, err
		}
	}
	phaseStart("dial")
	w1 := des.WallNow()
	rec.Phases.Hosts = (w1 - w0).Seconds()
	cfg.logf("cell seed %d: %d hosts in %.1f s", cfg.Seed, n, rec.Phases.Hosts)

	// Dial the graph: the lower index dials, a few dials in flight per node.
	addr := func(i int) ma.Multiaddr { return hostAddr(cfg.Transport, i) }
	if err := dialGraph(ctx, hosts, graph, addr); err != nil {
		return nil, fmt.Errorf("cell: dial: %w", err)
	}
	// Setup ends after the dial, or with a setup quantum after the mesh
	// wait: then the mesh forms on SetupProcs cores too.
	endSetup := sync.OnceFunc(func() {
		restoreProcs()
		live.Lock()
		live.SetQuantum(0)
		live.Unlock()
	})
	if cfg.SetupQuantum == 0 {
		endSetup()
	}
	phaseStart("mesh")
	w2 := des.WallNow()
	rec.Phases.Dial = (w2 - w1).Seconds()
	cfg.logf("cell seed %d: %d connections dialled in %.1f s (virtual %.2f s)", cfg.Seed, len(graph.Edges), rec.Phases.Dial, live.Now().Seconds())

	if p.RouterStart != RouterBeforeDial {
		if err := startRouters(); err != nil {
			return nil, err
		}
	}
	// With first-heartbeat, wait for the instant that puts the routers'
	// next heartbeat that far after the subscriptions.
	if fh := p.FirstHeartbeat; fh != "" {
		want, _ := time.ParseDuration(fh) // checked by validate
		wait := firstHeartbeat(routersAt.Duration(), live.Now().Duration(), cfg.Gossip.Heartbeat) - want
		if wait < 0 {
			wait += cfg.Gossip.Heartbeat
		}
		time.Sleep(wait)
	}
	// Every node joins and subscribes to every topic.
	for i, ps := range pss {
		rt := routers[i]
		var joinOpts []pubsub.TopicOpt
		if isB {
			joinOpts = append(joinOpts, pubsub.RequestPartialMessages())
		}
		for _, name := range topicNames {
			t, err := ps.Join(name, joinOpts...)
			if err != nil {
				return nil, fmt.Errorf("cell: node %d: join %s: %w", i, name, err)
			}
			topics[i] = append(topics[i], t)
			sub, err := t.Subscribe()
			if err != nil {
				return nil, fmt.Errorf("cell: node %d: subscribe %s: %w", i, name, err)
			}
			subs[i] = append(subs[i], sub)
		}
		if rt != nil {
			rt.Bind(topics[i][0])
		}
	}
	subscribed := live.Now()
	rec.FirstHeartbeatMS = firstHeartbeat(routersAt.Duration(), subscribed.Duration(), cfg.Gossip.Heartbeat).Seconds() * 1000
	if p.MeshWait == "stable" && len(topicNames) > 1 && p.TopicMeshWait == TopicMeshSlots {
		// The study's harness's variant C wait (awaitMeshMany).
		tol := max(1, min(len(topicNames)*n/100, n/10))
		for {
			if rec.MeshStable = slotsWithin(tracers, len(topicNames), cfg.Gossip, tol); rec.MeshStable || live.Now()-subscribed >= slotsMeshTimeout {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	} else {
		time.Sleep(time.Duration(p.Settle * float64(time.Second)))
		rec.MeshStable = meshesWithin(tracers, cfg.Gossip)
		if p.MeshWait == "stable" {
			for !rec.MeshStable && live.Now()-subscribed < cfg.MeshTimeout {
				time.Sleep(100 * time.Millisecond)
				rec.MeshStable = meshesWithin(tracers, cfg.Gossip)
			}
		}
	}
	endSetup()
	w3 := des.WallNow()
	rec.Phases.Mesh = (w3 - w2).Seconds()
	cfg.logf("cell seed %d: meshes %s after %.2f s virtual (%.1f s wall)", cfg.Seed, stableWord(rec.MeshStable), (live.Now() - subscribed).Seconds(), rec.Phases.Mesh)

	// Warm-up, then the background's lead-in.
	if cfg.Warmup.Kind != "" {
		phaseStart("warmup")
		ws := live.Now()
		switch cfg.Warmup.Kind {
		case "streams", "streams-seq":
			if err := warmStreams(ctx, hosts, cfg.Warmup.Stream, cfg.Warmup.Kind == "streams-seq"); err != nil {
				return nil, fmt.Errorf("cell: %w", err)
			}
		case "payload":
			warm := cellPayload(arm, cfg.Encoding, cfg.Seed^0x7761726d, cfg.Payload)
			missing, err := warmPayload(ctx, warmCell{arm: arm, payload: warm, slot: cfg.Seed + 1, tracers: tracers, routers: routers,
				publisher: publisher, topics: topics[0], unitTopic: unitTopic, enc: cfg.Encoding, batch: batch}, cfg.Window.Duration())
			if err != nil {
				return nil, fmt.Errorf("cell: %w", err)
			}
			rec.WarmupMissing = missing
			for _, t := range tracers {
				t.resetCounts()
			}
		}
		rec.WarmupS = (live.Now() - ws).Seconds()
		time.Sleep(cfg.Warmup.Gap.Duration())
		cfg.logf("cell seed %d: warm-up %s took %.2f s virtual; publishing after a %v gap", cfg.Seed, cfg.Warmup, rec.WarmupS, cfg.Warmup.Gap.Duration())
	}
	stopBackground := func() {}
	if cfg.Background.Size > 0 {
		stopBackground = startBackground(ctx, cfg.Background, cfg.Seed, topics)
		defer stopBackground()
		time.Sleep(cfg.Background.Lead.Duration())
	}

	// Publish from node 0 and observe.
	phaseStart("delivery")
	wPub := des.WallNow()
	rec.Phases.Warmup = (wPub - w3).Seconds()
	ids := units.IDs()
	need := units.Need
	if isB {
		need = bparts.Need
	}
	meshAtPublish := make([]int, n)
	// The measurement ends when the last receiver completes, as the
	// study's harness ends it (runDiffusion in its driver): the counts
	// (duplicates, bytes, drops) are those at that instant, and the
	// window only bounds the wait for receivers that never complete.
	allDone := make(chan struct{})
	remaining := n - 1
	var remainingMu sync.Mutex
	completed := func() {
		remainingMu.Lock()
		defer remainingMu.Unlock()
		if remaining--; remaining == 0 {
			close(allDone)
		}
	}
	for i, t := range tracers {
		done := completed
		if i == 0 {
			done = nil // the publisher is not a receiver
		}
		t.setTargets(ids, need, cfg.Verify, done)
		meshAtPublish[i] = t.meshSize()
		if rt := routers[i]; rt != nil {
			if err := rt.Expect(ids, units.Need); err != nil {
				return nil, fmt.Errorf("cell: node %d: %w", i, err)
			}
		}
	}
	live.Lock()
	base := make([]netmodel.Counters, n)
	for i, nd := range nw.Nodes() {
		base[i] = nd.Counters
	}
	live.Unlock()
	rec.ConnAtPublish = connState(hosts)
	peerIDs := make([]peer.ID, n)
	for i, h := range hosts {
		peerIDs[i] = h.ID()
	}
	rec.MeshLatencyMS, rec.GraphLatencyMS = meshLatency(tracers, peerIDs, draw, graph)
	publishAt := time.Now()
	rec.PublishAtS = live.Now().Seconds()
	if isB {
		err = bnodes[0].Publish(bparts.Parts)
	} else {
		err = publish(ctx, publisher, topics[0], units, unitTopic, withheld, batch)
	}
	if err != nil {
		return nil, fmt.Errorf("cell: publish: %w", err)
	}
	window := time.NewTimer(cfg.Window.Duration())
	select {
	case <-allDone:
		window.Stop()
		// Let every goroutine run its part of this instant (as the
		// harness's synctest.Wait does) before reading the counts.
		cfg.Wait()
		rec.CountsAt = CountsAtLastCompletion
	case <-window.C:
		rec.CountsAt = CountsAtWindowEnd
	}
	rec.CountsAtS = time.Since(publishAt).Seconds()
	cs, err := readCounts(live, nw, tracers, bnodes)
	if err != nil {
		return nil, err
	}
	// The measurement is over. Tearing hosts down while writers wait on
	// full socket buffers (the kernel profile) would leave quic-go's close
	// waiting on a write that only virtual time drains, while go-libp2p's
	// close waits on a mutex, which stops the bubble's clock: from here on
	// no send blocks.
	live.Lock()
	nw.Unblock()
	live.Unlock()
	stopBackground()
	phaseStart("teardown")
	w4 := des.WallNow()
	rec.Phases.Delivery = (w4 - wPub).Seconds()

	// Collect: the counts as of the last completion (or the window's
	// end), then the simulation's cost.
	for i, st := range cs.b {
		if st == nil {
			continue
		}
		cs.nodes[i].dups = st.Duplicates
		rec.BClaims += st.Claims
		rec.BTimeouts += st.TimedOut
		rec.BStrikes += st.Strikes
	}
	rec.Queues = map[string]QueueSummary{"uplink": summarize(cs.up), "downlink": summarize(cs.down)}
	if cs.host != nil {
		rec.Queues["host"] = summarize(cs.host)
	}
	rec.Drops = map[string]uint64{}
	for i := range n {
		for r := netmodel.DropReason(0); r < netmodel.NumDropReasons; r++ {
			rec.Drops[r.String()] += cs.net[i].Drops[r] - base[i].Drops[r]
		}
	}
	live.Lock()
	var delivPackets uint64
	for i, nd := range nw.Nodes() {
		c := nd.Counters
		rec.SimPackets += c.SentPackets
		rec.SimBytes += c.SentBytes
		delivPackets += c.SentPackets - base[i].SentPackets
	}
	live.Unlock()
	if delivPackets > 0 {
		rec.UsPerPkt = rec.Phases.Delivery * 1e6 / float64(delivPackets)
	}
	counters := cs.net
	rec.PubWireBytes = counters[0].SentBytes - base[0].SentBytes
	times := make([]float64, 0, n-1)
	var rxData, rxCtrl float64
	for i, t := range tracers {
		tc := cs.nodes[i]
		t.mu.Lock()
		row := NodeRow{
			Index: i, Completed: t.delivered, Dups: tc.dups,
			MeshPublish: meshAtPublish[i], MeshEnd: len(t.mesh[0]),
			DataRx: tc.rx.data, DataTx: tc.tx.data, CtrlRx: tc.rx.ctrl, CtrlTx: tc.tx.ctrl,
			PktRx: counters[i].RecvPackets - base[i].RecvPackets, PktTx: counters[i].SentPackets - base[i].SentPackets,
			WireRx: counters[i].RecvBytes - base[i].RecvBytes, WireTx: counters[i].SentBytes - base[i].SentBytes,
			IHaveTx: tc.tx.ihave, IHaveRx: tc.rx.ihave, IWantTx: tc.tx.iwant, IWantRx: tc.rx.iwant,
			IDontWantTx: tc.tx.idontwant, IDontWantRx: tc.rx.idontwant,
		}
		if t.delivered {
			v := t.deliveredAt.Sub(publishAt).Seconds()
			row.TimeS = &v
		}
		t.mu.Unlock()
		rec.Dups += row.Dups
		rec.IdwTx += row.IDontWantTx
		if i == 0 {
			rec.PubBytes = uint64(row.DataTx)
			if cfg.PerNode {
				rec.Nodes = append(rec.Nodes, row)
			}
			continue
		}
		rxData += float64(row.DataRx)
		rxCtrl += float64(row.CtrlRx)
		if row.TimeS != nil {
			times = append(times, *row.TimeS)
		} else {
			times = append(times, math.Inf(1))
		}
		if cfg.PerNode {
			rec.Nodes = append(rec.Nodes, row)
		}
	}
	if cfg.Verify {
		for i := 1; i < n; i++ {
			var ok bool
			var err error
			if isB {
				ok, err = verifyParts(bparts, payload, bnodes[i], tracers[i])
			} else {
				ok, err = verifyNode(arm, units, cfg.Encoding, payload, tracers[i])
			}
			if err != nil {
				return nil, fmt.Errorf("cell: node %d: %w", i, err)
			} else if ok {
				rec.Verified++
			}
		}
	}
	rec.RxNodeBytes = rxData / float64(n-1)
	rec.CtrlRxNode = rxCtrl / float64(n-1)
	rec.fill(times, cfg.Deadline.Seconds())

	// Tear down: gossipsub first (its context), then the hosts, within a
	// bound on virtual time: a close that never finishes (a writer that
	// misses its wake-up, a connection that never drains) would otherwise
	// run the clock on for ever after the measurement is complete.
	cancel()
	closeGossip()
	closed := make(chan error, 1)
	hs := hosts
	hosts = nil // the deferred clean-up must not close them again
	go func() {
		for _, h := range hs {
			if err := h.Close(); err != nil {
				closed <- fmt.Errorf("cell: closing hosts: %w", err)
				return
			}
		}
		closed <- nil
	}()
	select {
	case err := <-closed:
		if err != nil {
			return nil, err
		}
	case <-time.After(TeardownLimit):
		rec.WallS = (des.WallNow() - w0).Seconds()
		return rec, ErrTeardownStuck
	}
	rec.Phases.Teardown = (des.WallNow() - w4).Seconds()
	rec.WallS = (des.WallNow() - w0).Seconds()
	return rec, nil
}

// TeardownLimit bounds the teardown in virtual time. Closing every host
// takes well under a second of virtual time in a healthy cell.
const TeardownLimit = 120 * time.Second

// ErrTeardownStuck is returned with a complete record when the hosts did
// not close within TeardownLimit. The measurement is valid; the
// simulation is not, and cannot be ended cleanly: goroutines of the real
// code are still running. A process in this state should write the record
// and exit.
var ErrTeardownStuck = errors.New("cell: the hosts did not close within " + TeardownLimit.String() + " of virtual time after the measurement (a simulation bug: please report it with the cell's command)")

// countSpecs counts nodes per queue spec, for records.
func countSpecs(specs []string) map[string]int {
	m := map[string]int{}
	for _, s := range specs {
		m[s]++
	}
	return m
}

func stableWord(ok bool) string {
	if ok {
		return "within [Dlo, Dhi]"
	}
	return "NOT all within [Dlo, Dhi]"
}

// meshesWithin reports whether every node's mesh on every topic is
// within [Dlo, Dhi].
// slotsMeshTimeout bounds the harness's variant C wait (twice its mesh
// settle timeout of 3 minutes); the cell then publishes anyway.
const slotsMeshTimeout = 6 * 60 * des.Second

// slotsWithin reports whether all but tol nodes hold between topics × Dlo
// and topics × Dhi mesh slots over their topics (the study's harness's
// variant C test: one topic may be short where another is full).
func slotsWithin(ts []*tracer, topics int, g Gossip, tol int) bool {
	out := 0
	for _, t := range ts {
		if s := t.meshSlots(); s < topics*g.Dlo || s > topics*g.Dhi {
			out++
		}
	}
	return out <= tol
}

func meshesWithin(ts []*tracer, g Gossip) bool {
	for _, t := range ts {
		if lo, hi := t.meshRange(); lo < g.Dlo || hi > g.Dhi {
			return false
		}
	}
	return true
}

// publish publishes the units from node 0 at the current instant, in
// index order, on their topics, except the withheld ones; with batch, as
// one library batch (the stock router interleaves its peers' copies).
func publish(ctx context.Context, ps *pubsub.PubSub, topics []*pubsub.Topic, units arms.Units, unitTopic func(int) int, withheld map[int]bool, batch bool) error {
	if batch {
		var b pubsub.MessageBatch
		for _, u := range units.Units {
			if withheld[u.Index] {
				continue
			}
			if err := topics[unitTopic(u.Index)].AddToBatch(ctx, &b, u.Data); err != nil {
				return fmt.Errorf("unit %d: %w", u.Index, err)
			}
		}
		return ps.PublishBatch(&b)
	}
	for _, u := range units.Units {
		if withheld[u.Index] {
			continue
		}
		if err := topics[unitTopic(u.Index)].Publish(ctx, u.Data); err != nil {
			return fmt.Errorf("unit %d: %w", u.Index, err)
		}
	}
	return nil
}

// verifyParts rebuilds the payload from the parts a variant B node holds.
func verifyParts(p arms.Parts, payload []byte, bn *partial.Node, t *tracer) (bool, error) {
	t.mu.Lock()
	done := t.delivered
	t.mu.Unlock()
	if !done {
		return false, nil
	}
	held, err := bn.Held()
	if err != nil {
		return false, err
	}
	got, err := p.Rebuild(held)
	if err != nil {
		return false, fmt.Errorf("rebuild: %w", err)
	}
	return bytes.Equal(got, payload), nil
}

// verifyNode rebuilds the payload from the units t was delivered.
func verifyNode(arm arms.Arm, units arms.Units, enc arms.Encoding, payload []byte, t *tracer) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.delivered {
		return false, nil
	}
	var bad error
	raw := func(i int) []byte {
		d := t.data[i]
		if arm.StructuredIDs {
			d = d[arms.StructuredPrefixLen:]
		}
		if enc == arms.EncodingSnappy {
			var err error
			if d, err = snappy.Decode(nil, d); err != nil && bad == nil {
				bad = fmt.Errorf("unit %d: snappy: %w", i, err)
			}
		}
		return d
	}
	var got []byte
	switch {
	case arm.Variant == arms.VariantWhole:
		got = raw(0)
	case units.Desc != nil:
		var shards []arms.Shard
		for i := range t.data {
			shards = append(shards, arms.Shard{Index: i, Data: raw(i)})
		}
		var err error
		if got, err = arms.Decode(*units.Desc, shards); err != nil {
			return false, fmt.Errorf("decode: %w", err)
		}
	default:
		for i := range units.Units {
			got = append(got, raw(i)...)
		}
	}
	if bad != nil {
		return false, bad
	}
	return bytes.Equal(got, payload), nil
}

// dialGraph connects every edge, the lower index dialling node j at
// addr(j), with up to eight dials in flight per node.
func dialGraph(ctx context.Context, hosts []host.Host, g *netmodel.Graph, addr func(int) ma.Multiaddr) error {
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	for i, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem := make(chan struct{}, 8)
			var inner sync.WaitGroup
			for _, j := range g.Dials(i) {
				sem <- struct{}{}
				inner.Add(1)
				go func() {
					defer inner.Done()
					defer func() { <-sem }()
					ai := peer.AddrInfo{ID: hosts[j].ID(), Addrs: []ma.Multiaddr{addr(j)}}
					if err := h.Connect(ctx, ai); err != nil {
						select {
						case errs <- fmt.Errorf("node %d to node %d: %w", i, j, err):
						default:
						}
					}
				}()
			}
			inner.Wait()
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// counts is what a record counts, read at one instant: each node's gossip
// tallies, its network counters and queue statistics, and variant B's
// node statistics (nil for other arms).
type counts struct {
	nodes          []nodeCounts
	net            []netmodel.Counters
	up, down, host []*queues.Stats // copies
	b              []*partial.Stats
}

// nodeCounts is one node's gossip tallies.
type nodeCounts struct {
	dups   int
	tx, rx rpcCounts
}

// readCounts reads the counts now.
func readCounts(live *des.Live, nw *netmodel.Network, tracers []*tracer, bnodes []*partial.Node) (*counts, error) {
	c := &counts{nodes: make([]nodeCounts, len(tracers))}
	for i, t := range tracers {
		t.mu.Lock()
		c.nodes[i] = nodeCounts{dups: t.dups, tx: t.tx, rx: t.rx}
		t.mu.Unlock()
	}
	for i, bn := range bnodes {
		if bn == nil {
			continue
		}
		st, err := bn.Counters()
		if err != nil {
			return nil, fmt.Errorf("cell: node %d: %w", i, err)
		}
		if c.b == nil {
			c.b = make([]*partial.Stats, len(bnodes))
		}
		c.b[i] = &st
	}
	copyStats := func(s *queues.Stats) *queues.Stats { v := *s; return &v }
	live.Lock()
	defer live.Unlock()
	for _, nd := range nw.Nodes() {
		c.net = append(c.net, nd.Counters)
		c.up = append(c.up, copyStats(nd.Up().Qdisc().Stats()))
		c.down = append(c.down, copyStats(nd.Down().Qdisc().Stats()))
		if h := nd.Host(); h != nil {
			c.host = append(c.host, copyStats(h.Qdisc().Stats()))
		}
	}
	return c, nil
}

// forkPolicy is an arm's phase policy under the study's fork
// (phaseForwarding in its gossipsub): the source counted against r, the
// heartbeat gossip, and no push budget from the whole mesh. The fork has
// no such budget: the phase shift (lad_phase) runs A-tuned's forwarding,
// r - IDONTWANT holders, without FINAL (arms.sh, phasePubsubOpts in the
// study's tree); the budget was uplink's reading of the prose.
func forkPolicy(p phase.Policy) phase.Policy {
	p.CountSource, p.Gossip, p.Budget = true, true, false
	return p
}

// cellPayload is the payload an arm publishes: the mainnet-like payload,
// except the whole message's under the raw encoding, which is random
// bytes (uplink's whole message before the study's encoding).
func cellPayload(arm arms.Arm, enc arms.Encoding, seed uint64, size int) []byte {
	if arm.Variant == arms.VariantWhole && enc == arms.EncodingRaw {
		return makePayload(seed, size)
	}
	return arms.MainnetLikePayload(seed, size)
}

// makePayload returns size pseudo-random bytes for seed.
func makePayload(seed uint64, size int) []byte {
	rng := rand.New(rand.NewPCG(seed, 0x7061796c6f6164))
	b := make([]byte, size)
	for i := 0; i < size; i += 8 {
		v := rng.Uint64()
		for j := 0; j < 8 && i+j < size; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

func sizeName(b int) string {
	switch {
	case b >= 1<<20 && b%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", b>>20)
	case b >= 1<<10 && b%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", b>>10)
	}
	return fmt.Sprintf("%dB", b)
}

// firstHeartbeat is the time from subscribed to the first heartbeat after
// it (at subscribed itself counts) of routers started at routersAt:
// gossipsub's heartbeats come at the library's initial delay after the
// start, then every interval.
func firstHeartbeat(routersAt, subscribed, interval time.Duration) time.Duration {
	first := routersAt + pubsub.GossipSubHeartbeatInitialDelay
	if first >= subscribed {
		return first - subscribed
	}
	k := (subscribed - first + interval - 1) / interval
	return first + k*interval - subscribed
}
