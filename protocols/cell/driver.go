package cell

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
	"github.com/uplinksim/uplink/protocols/arms"
	"github.com/uplinksim/uplink/protocols/partial"
	"github.com/uplinksim/uplink/protocols/phase"
	"github.com/uplinksim/uplink/queues"
	"github.com/uplinksim/uplink/transports/simnet"
	"github.com/uplinksim/uplink/transports/tcp"
	"github.com/uplinksim/uplink/transports/udp"
)

// ErrNoWait is Run's error for a Config without Wait.
var ErrNoWait = errors.New("cell: Config.Wait is nil: Run needs the wait of the synctest bubble it runs in (synctest.Wait)")

// Run runs the cell. It must run inside a synctest bubble (entered by the
// command from a binary, synctest.Test in a test) whose wait is cfg.Wait. Every
// goroutine it starts has ended when it returns (but with
// ErrTeardownStuck), on every path: an error or a panic in a phase, which
// Run returns as an error, still tears the cell down.
func Run(cfg Config) (*Record, error) {
	if cfg.Wait == nil {
		return nil, ErrNoWait
	}
	cfg.Defaults()
	if err := cfg.Check(); err != nil {
		return nil, fmt.Errorf("cell: %w", err)
	}
	if cfg.Partitions > 1 {
		return nil, fmt.Errorf("cell: partitions %d: a split cell runs with RunSplit", cfg.Partitions)
	}
	return newDriver(cfg).run()
}

// run runs the phases, then teardown and record; on every way out of it
// the cell is torn down. A partition that fails ends the other
// partitions' windows first.
func (d *driver) run() (rec *Record, err error) {
	defer func() {
		if p := recover(); p != nil {
			rec, err = nil, fmt.Errorf("cell: panic: %v\n%s", p, debug.Stack())
		}
		if err != nil && d.part != nil {
			d.part.fail(fmt.Errorf("partition %d: %w", d.part.idx, err))
		}
		if terr := d.teardown(); terr != nil {
			err = errors.Join(err, terr)
		}
	}()
	for _, step := range []func() error{d.content, d.network, d.hosts, d.dial, d.mesh, d.warmup, d.deliver, d.verify} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	terr := d.teardown()
	if terr != nil && !errors.Is(terr, ErrTeardownStuck) {
		return nil, terr
	}
	return d.record(), terr
}

// driver runs one cell, phase by phase. Run calls content (what the arm
// publishes), network (the topology, the network model, the transport),
// hosts, dial, mesh, warmup, deliver and verify, in this order, then
// teardown and record. The phases keep what they measure in m, and record
// alone turns it into the Record; they read the nodes' state only through
// snapshot. teardown runs on every way out of Run and does its work once,
// however often it is called.
type driver struct {
	cfg Config
	key string // cfg.Key(), taken before content adapts cfg to the arm

	// What the arm publishes.
	arm        arms.Arm
	payload    []byte
	units      arms.Units // the units of the arms that publish gossip messages
	bparts     arms.Parts // variant B's parts
	isB        bool       // variant B: parts on the partial-messages extension
	form       arms.WireForm
	policies   map[string]phase.Policy // the phase router's policy per topic; nil: the stock router
	policyName string
	batch      bool // the publisher's units go out as one library batch
	topicNames []string
	unitTopic  func(int) int // a unit's topic (index in topicNames)
	withheld   map[int]bool  // units the publisher does not publish

	// The model.
	draw               *netmodel.Draw
	graph              *netmodel.Graph
	upSpecs, downSpecs []string // each node's queue disciplines
	upBy, downBy       string   // what chose the publisher's (QdiscMap.resolveBy)
	sim                *des.Sim
	live               *des.Live
	nw                 *netmodel.Network // nil on simnet
	sn                 *simnet.Network   // the simnet backend's network; nil on uplink's model
	newHost            func(i int) (host.Host, error)
	ctx                context.Context
	cancel             context.CancelFunc

	nodes []*node // in index order; node 0 publishes
	peers []peer.ID

	// part is this driver's partition of a split cell; nil in one bubble.
	part *partition
	// obs is this partition's share of the trace and captures; nil
	// without.
	obs *observer

	restoreProcs   func() // ends SetupProcs; idempotent
	endSetup       func() // ends the setup phases' settings; idempotent
	stopBackground func() // stops the background load; idempotent
	liveStarted    bool
	routersAt      des.Time // when the routers started
	down           bool     // teardown has run

	m measured
}

// node is one node of the cell (with partitions, a node of another
// partition has no host: all its fields are nil): its host, its gossipsub with its router
// and the tracer the cell reads, variant B's node, and the topics it
// joined.
type node struct {
	host   host.Host
	ps     *pubsub.PubSub
	router *phase.Router // the phase router; nil with the stock router
	tracer *tracer
	part   *partial.Node // variant B's node; nil for the other arms
	topics []*pubsub.Topic
	subs   []*pubsub.Subscription
}

// measured is what the phases measured, for record.
type measured struct {
	// Wall-clock instants (des.WallNow): the hosts phase's start, the
	// dial's, the mesh phase's start and end, the delivery's start, the
	// teardown's, the hosts closed (0 when they did not close) and the
	// teardown's end.
	w0, wDial, wMesh, wMeshEnd, wDelivery, wTeardown, wClosed, wEnd time.Duration
	// The same instants' busy CPU time (des.BusyCPU).
	c0, cDial, cMesh, cMeshEnd, cDelivery, cTeardown, cClosed time.Duration

	firstHeartbeat time.Duration // from the subscriptions to the routers' next heartbeat
	meshStable     bool
	warmupS        des.Time // virtual time the warm-up took
	warmupMissing  int

	atPublish     *view // the nodes' meshes and network counters at the publish
	conn          *ConnState
	meshLatencyMS float64
	graphLatency  float64 // ms
	publishAt     time.Time
	publishAtS    des.Time
	countsAt      string
	countsAfter   time.Duration // from the publish to the counts
	counts        *view         // what the record counts
	cost          *view         // the network's counters when the measurement ended
	verified      int
}

func newDriver(cfg Config) *driver {
	return &driver{
		cfg:            cfg,
		key:            cfg.Key(),
		restoreProcs:   func() {},
		endSetup:       func() {},
		stopBackground: func() {},
	}
}

// phaseStart tells Watch, PhaseHook (and the test hook fault) that a
// phase starts.
func (d *driver) phaseStart(name string) error {
	if d.first() {
		d.cfg.Watch.enter(name)
		if d.cfg.PhaseHook != nil {
			d.cfg.PhaseHook(name)
		}
	}
	if d.cfg.fault != nil && (d.part == nil || d.part.idx == d.cfg.faultPart) {
		return d.cfg.fault(name)
	}
	return nil
}

// first reports whether this driver speaks for the cell: the progress
// lines, the phase hook, the watch and the record are the first
// partition's (or the one bubble's).
func (d *driver) first() bool { return d.part == nil || d.part.idx == 0 }

// logf prints a phase line, once per cell.
func (d *driver) logf(format string, a ...any) {
	if d.first() {
		d.cfg.logf(format, a...)
	}
}

// local reports whether node i lives in this driver's partition.
func (d *driver) local(i int) bool { return d.part == nil || d.part.split.Of[i] == d.part.idx }

// socketIDs are the socket ids the partitions share (nil in one bubble).
func (d *driver) socketIDs() *netmodel.SocketIDs {
	if d.part == nil {
		return nil
	}
	return d.part.ids
}

// hostList is the nodes' hosts in index order (nil for another
// partition's).
func (d *driver) hostList() []host.Host {
	hs := make([]host.Host, 0, len(d.nodes))
	for _, nd := range d.nodes {
		hs = append(hs, nd.host)
	}
	return hs
}

// content starts the hosts phase (and SetupProcs) and builds what the
// cell publishes: the arm's units or parts, its forwarding policy, its
// topics.
func (d *driver) content() error {
	if err := d.phaseStart("hosts"); err != nil {
		return err
	}
	d.m.w0, d.m.c0 = des.WallNow(), des.BusyCPU()
	cfg := &d.cfg
	if cfg.SetupProcs > 0 && d.part == nil {
		prev := runtime.GOMAXPROCS(cfg.SetupProcs)
		d.restoreProcs = sync.OnceFunc(func() { runtime.GOMAXPROCS(prev) })
	}
	arm, err := arms.LookupArm(cfg.Arm)
	if err != nil {
		return fmt.Errorf("cell: %w", err)
	}
	d.arm = arm
	d.payload = cellPayload(arm, cfg.Encoding, cfg.Seed, cfg.Payload)
	// Variant B sends parts on the partial-messages extension; the other
	// arms publish units as gossip messages.
	d.isB = arm.Variant == arms.VariantB
	if d.isB {
		d.bparts, err = arm.Parts(d.payload)
		d.form = d.bparts.Form
		if err == nil && len(cfg.Withhold) > 0 {
			err = fmt.Errorf("arm %s: withholding parts of variant B is not supported", arm.Name)
		}
	} else {
		d.units, err = arm.UnitsEncoded(d.payload, cfg.Seed, cfg.Encoding)
		d.form = d.units.Form
	}
	if err != nil {
		return fmt.Errorf("cell: %w", err)
	}
	policy, phased := arm.Policy(len(d.payload))
	// The publisher's units go out as one library batch for the stock
	// batch arm and, under the fork's rules, for every phase arm (the
	// study's harness publishes variants A and C with PublishBatch; the
	// phase router then sends every unit's pushes before any announcement).
	d.batch = arm.Forward.Batch
	if phased && cfg.Profile.phaseRules() == PhaseRulesFork {
		policy = forkPolicy(policy)
		d.batch = true
	}
	if phased {
		cfg.Gossip.MaxIHaveMessages = phaseMaxIHave
	}
	d.topicNames = []string{Topic}
	d.unitTopic = func(int) int { return 0 }
	if arm.Variant == arms.VariantC {
		d.topicNames = make([]string, len(d.units.Units))
		for i := range d.topicNames {
			d.topicNames[i] = fmt.Sprintf("%s/%d", Topic, i)
		}
		d.unitTopic = func(i int) int { return i }
	}
	d.policyName = "stock"
	switch {
	case arm.Forward.Batch:
		d.policyName = "stock batch"
	case d.isB:
		d.policyName = "partial messages"
		if arm.Coded {
			d.policyName += ", one part per frame"
		}
	}
	if phased {
		d.policies = map[string]phase.Policy{}
		for _, t := range d.topicNames {
			d.policies[t] = policy
		}
		d.policyName = policy.String()
	}
	d.withheld = map[int]bool{}
	for _, i := range cfg.Withhold {
		if i < 0 || i >= len(d.units.Units) {
			return fmt.Errorf("cell: withheld unit %d: arm %s has units 0 to %d", i, arm.Name, len(d.units.Units)-1)
		}
		d.withheld[i] = true
	}
	return nil
}

// network builds the topology, the network model with every node's links
// and queues, and the transport, and starts the model's clock.
func (d *driver) network() error {
	cfg := &d.cfg
	var err error
	d.draw = cfg.Topology
	if d.part != nil {
		d.draw = d.part.draw
	} else if d.draw == nil {
		if d.draw, err = netmodel.NewDraw(cfg.N, cfg.Degree, cfg.Seed, cfg.Latency, cfg.Net); err != nil {
			return fmt.Errorf("cell: topology: %w", err)
		}
	}
	if d.graph, err = d.draw.Graph(); err != nil {
		return fmt.Errorf("cell: graph: %w", err)
	}
	if cfg.Backend == BackendSimnet {
		return d.networkSimnet()
	}
	n := d.draw.N
	p := &cfg.Profile
	d.sim = des.NewSim()
	d.live = des.NewLive(d.sim)
	d.nw, err = netmodel.New(d.sim, netmodel.Config{
		Latency:    d.draw.LatencyModel(),
		Seed:       cfg.Seed,
		SockBufMax: p.SockBufMax,
		SndBufMax:  p.SndBufMax,
		RecvSlots:  p.RecvSlots,
		RecvBlock:  p.RecvBlock,
		SocketIDs:  d.socketIDs(),
		GSO:        p.GSO,
		NetemLimit: p.NetemLimit,
		MTU:        p.MTU,
	})
	if err != nil {
		return fmt.Errorf("cell: network: %w", err)
	}
	var upMap, downMap *QdiscMap
	if cfg.Qdiscs != nil {
		upMap, downMap = cfg.Qdiscs.Uplink, cfg.Qdiscs.Downlink
	}
	if d.upSpecs, d.upBy, err = upMap.resolveBy(p.UpQdisc, n, cfg.Seed); err != nil {
		return fmt.Errorf("cell: uplink-qdisc: %w", err)
	}
	if d.downSpecs, d.downBy, err = downMap.resolveBy(p.DownQdisc, n, cfg.Seed); err != nil {
		return fmt.Errorf("cell: downlink-qdisc: %w", err)
	}
	cpu, err := des.ParseCPU(p.CPU)
	if err != nil {
		return fmt.Errorf("cell: knob %w", err)
	}
	streams := des.NewStreams(cfg.Seed)
	for i := range n {
		if !d.local(i) {
			d.nw.AddRemoteNode(p.shaper(d.draw.Up[i]).Rate, p.shaper(d.draw.Down[i]).Rate)
			continue
		}
		up, err := queues.New(d.upSpecs[i], streams.Stream(fmt.Sprintf("qdisc/up/%d", i)))
		if err != nil {
			return fmt.Errorf("cell: node %d uplink-qdisc: %w", i, err)
		}
		down, err := queues.New(d.downSpecs[i], streams.Stream(fmt.Sprintf("qdisc/down/%d", i)))
		if err != nil {
			return fmt.Errorf("cell: node %d downlink-qdisc: %w", i, err)
		}
		nc := netmodel.NodeConfig{
			Up:   netmodel.LinkConfig{Qdisc: up, Shaper: p.shaper(d.draw.Up[i])},
			Down: netmodel.LinkConfig{Qdisc: down, Shaper: p.shaper(d.draw.Down[i])},
			CPU:  cpu,
		}
		if p.HostQdisc != "" {
			hq, err := queues.New(p.HostQdisc, streams.Stream(fmt.Sprintf("qdisc/host/%d", i)))
			if err != nil {
				return fmt.Errorf("cell: host-qdisc: %w", err)
			}
			nc.UpHost = &netmodel.LinkConfig{Qdisc: hq, Shaper: netmodel.OneMTUBurst(p.HostRate)}
		}
		if _, err := d.nw.AddNode(nc); err != nil {
			return fmt.Errorf("cell: %w", err)
		}
	}
	if d.obs, err = d.newObserver(); err != nil {
		return err
	}
	d.live.SetQuantum(cfg.SetupQuantum) // before Start: no lock needed yet
	if pt := d.part; pt != nil {
		d.live.SetWindows(pt.window, func(end des.Time) bool { return pt.endWindow(d, end) })
	}
	d.live.Start()
	d.liveStarted = true
	if d.first() {
		d.cfg.Watch.setModel(d.live, d.nw)
	}
	// Setup ends after the dial, or with a setup quantum after the mesh
	// wait: then the mesh forms on SetupProcs cores too.
	d.endSetup = sync.OnceFunc(func() {
		d.restoreProcs()
		d.live.Lock()
		d.live.SetQuantum(0)
		d.live.Unlock()
	})
	switch cfg.Transport {
	case "tcp":
		tc, err := p.tcpConfig(cfg.Seed)
		if err != nil {
			return fmt.Errorf("cell: transport tcp: %w", err)
		}
		st, err := tcp.NewStack(d.live, d.nw, tc)
		if err != nil {
			return fmt.Errorf("cell: transport tcp: %w", err)
		}
		d.obs.useTCP(d.live, st.Engine())
		d.newHost = func(i int) (host.Host, error) { return newTCPHost(st, i, cfg.Seed) }
	default:
		st := udp.NewStack(d.live, d.nw)
		d.newHost = func(i int) (host.Host, error) { return newQUICHost(udpListener(st, i, p.sendMode()), i, cfg.Seed) }
	}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	return nil
}

// hosts builds every node's host and, with router-start=before-dial, starts
// gossipsub on each (as a node program that starts its router and then
// connects; identify then announces the gossipsub protocols in its
// handshake).
func (d *driver) hosts() error {
	for i := range d.draw.N {
		nd := &node{}
		d.nodes = append(d.nodes, nd)
		if !d.local(i) {
			continue
		}
		h, err := d.newHost(i)
		if err != nil {
			return fmt.Errorf("cell: %w", err)
		}
		nd.host = h
	}
	if d.part != nil {
		d.peers = d.part.peers
	} else {
		for _, nd := range d.nodes {
			d.peers = append(d.peers, nd.host.ID())
		}
	}
	if d.cfg.onHosts != nil {
		d.cfg.onHosts(d.hostList())
	}
	if d.cfg.Profile.routerStart() == RouterBeforeDial {
		return d.startRouters()
	}
	return nil
}

// startRouters starts gossipsub on every host, with its tracer, and
// variant B's node.
func (d *driver) startRouters() error {
	cfg := &d.cfg
	d.routersAt = d.live.Now()
	bparams := partial.Tuned()
	bparams.OnePartPerFrame = d.arm.Coded
	if cfg.BTimeout > 0 {
		bparams.Timeout0 = cfg.BTimeout.Duration()
	}
	bparams.Fixed = cfg.BFixed
	bparams.Off = cfg.BRulesOff
	group := sha256.Sum256(d.payload)
	maxMsg := cfg.Payload + 64<<10
	for i, nd := range d.nodes {
		if nd.host == nil {
			continue // another partition's
		}
		nd.tracer = newTracer(d.topicNames)
		pol := d.policies
		if cfg.routers == routerMixed && i%2 == 1 {
			pol = nil
		} else if cfg.routers != routerByArm && pol == nil {
			pol = map[string]phase.Policy{}
		}
		var extra []pubsub.Option
		if d.isB {
			bp := bparams
			bp.Mute = slices.Contains(cfg.bMute, i)
			bn, err := partial.New(bp, Topic, group[:], len(d.bparts.Parts), d.bparts.Need, nd.tracer.completeAt)
			if err != nil {
				return fmt.Errorf("cell: node %d: %w", i, err)
			}
			nd.part = bn
			extra = append(extra, pubsub.WithPartialMessagesExtension(bn.Extension()))
		}
		ps, rt, err := newGossipSub(d.ctx, nd.host, cfg.Gossip, maxMsg, nd.tracer, pol, extra...)
		if err != nil {
			return fmt.Errorf("cell: node %d: %w", i, err)
		}
		nd.ps, nd.router = ps, rt
		if nd.part != nil {
			nd.part.Attach(ps)
		}
	}
	return nil
}

// dial connects the graph's edges: the lower index dials, a few dials in
// flight per node. Without a setup quantum, setup ends here.
func (d *driver) dial() error {
	if err := d.phaseStart("dial"); err != nil {
		return err
	}
	d.m.wDial, d.m.cDial = des.WallNow(), des.BusyCPU()
	d.logf("cell seed %d: %d hosts in %.1f s", d.cfg.Seed, len(d.nodes), (d.m.wDial - d.m.w0).Seconds())
	addr := func(i int) ma.Multiaddr { return hostAddr(d.cfg.Transport, i) }
	if err := dialGraph(d.ctx, d.hostList(), d.peers, d.graph, addr); err != nil {
		return fmt.Errorf("cell: dial: %w", err)
	}
	if d.part != nil {
		// The dial is over once every partition's is.
		if _, err := d.part.ask("dial", func() any { return nil }); err != nil {
			return err
		}
	}
	if d.cfg.SetupQuantum == 0 {
		d.endSetup()
	}
	return nil
}

// mesh starts gossipsub on every host with router-start=after-dial (every
// host's new protocols are then pushed to its peers), has every node join
// and subscribe to every topic, and waits for the meshes as the profile
// says.
func (d *driver) mesh() error {
	if err := d.phaseStart("mesh"); err != nil {
		return err
	}
	cfg, live := &d.cfg, d.live
	p := &cfg.Profile
	d.m.wMesh, d.m.cMesh = des.WallNow(), des.BusyCPU()
	d.logf("cell seed %d: %d connections dialled in %.1f s (virtual %.2f s)", cfg.Seed, len(d.graph.Edges), (d.m.wMesh - d.m.wDial).Seconds(), live.Now().Seconds())
	if p.routerStart() != RouterBeforeDial {
		if err := d.startRouters(); err != nil {
			return err
		}
	}
	// With first-heartbeat, wait for the instant that puts the routers'
	// next heartbeat that far after the subscriptions.
	if fh := p.FirstHeartbeat; fh != "" {
		want, _ := time.ParseDuration(fh) // checked by validate
		wait := firstHeartbeat(d.routersAt.Duration(), live.Now().Duration(), cfg.Gossip.Heartbeat) - want
		if wait < 0 {
			wait += cfg.Gossip.Heartbeat
		}
		time.Sleep(wait)
	}
	// Every node joins and subscribes to every topic.
	for i, nd := range d.nodes {
		if nd.ps == nil {
			continue // another partition's
		}
		var joinOpts []pubsub.TopicOpt
		if d.isB {
			joinOpts = append(joinOpts, pubsub.RequestPartialMessages())
		}
		for _, name := range d.topicNames {
			t, err := nd.ps.Join(name, joinOpts...)
			if err != nil {
				return fmt.Errorf("cell: node %d: join %s: %w", i, name, err)
			}
			nd.topics = append(nd.topics, t)
			sub, err := t.Subscribe()
			if err != nil {
				return fmt.Errorf("cell: node %d: subscribe %s: %w", i, name, err)
			}
			nd.subs = append(nd.subs, sub)
		}
		if nd.router != nil {
			nd.router.Bind(nd.topics[0])
		}
	}
	subscribed := live.Now()
	d.m.firstHeartbeat = firstHeartbeat(d.routersAt.Duration(), subscribed.Duration(), cfg.Gossip.Heartbeat)
	n, topics := len(d.nodes), len(d.topicNames)
	settle := des.Time(p.Settle * float64(time.Second))
	if p.MeshWait == "stable" && topics > 1 && p.TopicMeshWait == TopicMeshSlots {
		// The study's harness's variant C wait (awaitMeshMany).
		cfg.Watch.bound(subscribed, slotsMeshTimeout, "subscribing", "mesh timeout")
		tol := max(1, min(topics*n/100, n/10))
		for {
			v, err := d.snapshot(readMeshes)
			if err != nil {
				return err
			}
			if d.m.meshStable = slotsWithin(v.nodes, topics, cfg.Gossip, tol); d.m.meshStable || live.Now()-subscribed >= slotsMeshTimeout {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	} else {
		if p.MeshWait == "stable" {
			cfg.Watch.bound(subscribed, max(settle, cfg.MeshTimeout), "subscribing", "mesh timeout")
		} else {
			cfg.Watch.bound(subscribed, settle, "subscribing", "settle")
		}
		time.Sleep(settle.Duration())
		for {
			v, err := d.snapshot(readMeshes)
			if err != nil {
				return err
			}
			d.m.meshStable = meshesWithin(v.nodes, cfg.Gossip)
			if d.m.meshStable || p.MeshWait != "stable" || live.Now()-subscribed >= cfg.MeshTimeout {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	d.endSetup()
	d.m.wMeshEnd, d.m.cMeshEnd = des.WallNow(), des.BusyCPU()
	d.logf("cell seed %d: meshes %s after %.2f s virtual (%.1f s wall)", cfg.Seed, stableWord(d.m.meshStable), (live.Now() - subscribed).Seconds(), (d.m.wMeshEnd - d.m.wMesh).Seconds())
	return nil
}

// warmup runs the warm-up, when on, and its gap, then starts the
// background load, when on, and waits for its lead-in.
func (d *driver) warmup() error {
	cfg, live := &d.cfg, d.live
	if cfg.Warmup.Kind != "" {
		if err := d.phaseStart("warmup"); err != nil {
			return err
		}
		ws := live.Now()
		switch cfg.Warmup.Kind {
		case "streams", "streams-seq":
			if err := warmStreams(d.ctx, d.hostList(), cfg.Warmup.Stream, cfg.Warmup.Kind == "streams-seq"); err != nil {
				return fmt.Errorf("cell: %w", err)
			}
		case "payload":
			// The warm-up payload's wait is bounded by the window.
			cfg.Watch.bound(ws, cfg.Window, "the warm-up's start", "window")
			warm := cellPayload(d.arm, cfg.Encoding, cfg.Seed^0x7761726d, cfg.Payload)
			missing, err := d.warmPayload(warm, cfg.Seed+1, cfg.Window.Duration())
			if err != nil {
				return fmt.Errorf("cell: %w", err)
			}
			d.m.warmupMissing = missing
			for _, nd := range d.nodes {
				nd.tracer.resetCounts()
			}
		}
		d.m.warmupS = live.Now() - ws
		time.Sleep(cfg.Warmup.Gap.Duration())
		d.logf("cell seed %d: warm-up %s took %.2f s virtual; publishing after a %v gap", cfg.Seed, cfg.Warmup, d.m.warmupS.Seconds(), cfg.Warmup.Gap.Duration())
	}
	if cfg.Background.Size > 0 {
		topics := make([][]*pubsub.Topic, len(d.nodes))
		for i, nd := range d.nodes {
			topics[i] = nd.topics
		}
		d.stopBackground = startBackground(d.ctx, cfg.Background, cfg.Seed, topics)
		time.Sleep(cfg.Background.Lead.Duration())
	}
	return nil
}

// warmPayload publishes payload in the cell's shape (its units drawn
// with slot) from node 0 and waits until every receiver holds it, or until
// limit has passed. It returns the number of receivers that did not
// complete.
func (d *driver) warmPayload(payload []byte, slot uint64, limit time.Duration) (int, error) {
	u, err := d.arm.UnitsEncoded(payload, slot, d.cfg.Encoding)
	if err != nil {
		return 0, fmt.Errorf("warm-up payload: %w", err)
	}
	ids := u.IDs()
	for i, nd := range d.nodes {
		nd.tracer.setTargets(ids, u.Need, false, nil)
		if rt := nd.router; rt != nil {
			if err := rt.Expect(ids, u.Need); err != nil {
				return 0, fmt.Errorf("warm-up payload: node %d: %w", i, err)
			}
		}
	}
	if err := publish(d.ctx, d.nodes[0].ps, d.nodes[0].topics, u, d.unitTopic, nil, d.batch); err != nil {
		return 0, fmt.Errorf("warm-up payload: %w", err)
	}
	deadline := time.Now().Add(limit)
	for {
		v, err := d.snapshot(readMeshes)
		if err != nil {
			return 0, err
		}
		missing := 0
		for _, nv := range v.nodes[1:] {
			if !nv.delivered {
				missing++
			}
		}
		if missing == 0 || !time.Now().Before(deadline) {
			return missing, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// deliver publishes from node 0 and observes until the last receiver
// completes, as the study's harness ends the measurement (runDiffusion in
// its driver), or until the window ends: the counts (duplicates, bytes,
// drops) are those at that instant, and the window only bounds the wait
// for receivers that never complete. It ends the background load and
// starts the teardown phase.
func (d *driver) deliver() error {
	if err := d.phaseStart("delivery"); err != nil {
		return err
	}
	d.m.wDelivery, d.m.cDelivery = des.WallNow(), des.BusyCPU()
	cfg := &d.cfg
	ids := d.units.IDs()
	need := d.units.Need
	if d.isB {
		need = d.bparts.Need
	}
	// The watch for the last receiver: each receiver's tracer tells it
	// once, as the receiver completes.
	allDone := make(chan struct{})
	remaining := len(d.nodes) - 1
	var remainingMu sync.Mutex
	completed := func() {
		remainingMu.Lock()
		defer remainingMu.Unlock()
		cfg.Watch.completed()
		if remaining--; remaining == 0 {
			close(allDone)
		}
	}
	if d.part != nil {
		// A split cell reads the completions at window ends; the
		// tracers only tell the watch.
		completed = cfg.Watch.completed
	}
	for i, nd := range d.nodes {
		if nd.tracer == nil {
			continue // another partition's
		}
		done := completed
		if i == 0 {
			done = nil // the publisher is not a receiver
		}
		nd.tracer.setTargets(ids, need, cfg.Verify, done)
		if rt := nd.router; rt != nil {
			if err := rt.Expect(ids, d.units.Need); err != nil {
				return fmt.Errorf("cell: node %d: %w", i, err)
			}
		}
	}
	at, err := d.snapshot(readPublish)
	if err != nil {
		return err
	}
	d.m.atPublish = at
	d.m.conn = at.conn.state()
	d.m.meshLatencyMS, d.m.graphLatency = meshLatency(at.nodes, d.peers, d.draw, d.graph)
	d.m.publishAt = time.Now()
	d.m.publishAtS = d.live.Now()
	cfg.Watch.setReceivers(len(d.nodes) - 1)
	cfg.Watch.bound(d.m.publishAtS, cfg.Window, "the publish", "window")
	switch {
	case !d.local(0): // another partition publishes
	case d.isB:
		err = d.nodes[0].part.Publish(d.bparts.Parts)
	default:
		err = publish(d.ctx, d.nodes[0].ps, d.nodes[0].topics, d.units, d.unitTopic, d.withheld, d.batch)
	}
	if err != nil {
		return fmt.Errorf("cell: publish: %w", err)
	}
	if d.part != nil {
		if err := d.awaitSplit(); err != nil {
			return err
		}
	} else if err := d.await(allDone); err != nil {
		return err
	}
	// The measurement is over. Tearing hosts down while writers wait on
	// full socket buffers (the kernel profile) would leave quic-go's close
	// waiting on a write that only virtual time drains, while go-libp2p's
	// close waits on a mutex, which stops the bubble's clock: from here on
	// no send blocks.
	d.unblock()
	d.stopBackground()
	if err := d.phaseStart("teardown"); err != nil {
		return err
	}
	d.m.wTeardown, d.m.cTeardown = des.WallNow(), des.BusyCPU()
	cfg.Watch.bound(d.live.Now(), des.Time(TeardownLimit), "the teardown's start", "teardown limit")
	// The simulation's cost: every packet so far.
	d.m.cost, err = d.snapshot(readNetwork)
	return err
}

// await waits, in one bubble, for the last receiver's completion
// (allDone) or the window's end, and reads the counts there; with
// CountsWindowEnd it waits for the window's end.
func (d *driver) await(allDone <-chan struct{}) error {
	cfg := &d.cfg
	window := time.NewTimer(cfg.Window.Duration())
	select {
	case <-allDone:
		if cfg.CountsAt == CountsWindowEnd {
			<-window.C
			d.m.countsAt = CountsAtWindowEnd
			break
		}
		window.Stop()
		// Let every goroutine run its part of this instant (as the
		// harness's synctest.Wait does) before reading the counts.
		cfg.Wait()
		d.m.countsAt = CountsAtLastCompletion
	case <-window.C:
		d.m.countsAt = CountsAtWindowEnd
	}
	d.m.countsAfter = time.Since(d.m.publishAt)
	var err error
	d.m.counts, err = d.snapshot(readAll)
	return err
}

// awaitSplit is await for a split cell: at each window's end it reads
// whether every receiver is complete (and, in a partition whose receivers
// all are, everything the counts read), until all are or the window has
// passed. The counts are those at the first window's end after the last
// completion (or after the window's end).
func (d *driver) awaitSplit() error {
	for {
		v, err := d.snapshot(readCompletion)
		if err != nil {
			return err
		}
		complete := true
		for _, nv := range v.nodes[1:] {
			complete = complete && nv.delivered
		}
		if complete && d.cfg.CountsAt != CountsWindowEnd {
			d.m.countsAt, d.m.counts = CountsAtLastCompletion, v
			break
		}
		if d.live.Now()-d.m.publishAtS >= d.cfg.Window {
			d.m.countsAt = CountsAtWindowEnd
			if d.m.counts, err = d.snapshot(readAll); err != nil {
				return err
			}
			break
		}
	}
	d.m.countsAfter = time.Since(d.m.publishAt)
	return nil
}

// verify rebuilds the payload at every complete receiver from the units
// (or parts) it held at the counts, with Verify.
func (d *driver) verify() error {
	if !d.cfg.Verify || !d.first() {
		return nil
	}
	for i, nv := range d.m.counts.nodes {
		if i == 0 {
			continue // the publisher
		}
		var ok bool
		var err error
		if d.isB {
			ok, err = verifyParts(d.bparts, d.payload, nv)
		} else {
			ok, err = verifyNode(d.arm, d.units, d.cfg.Encoding, d.payload, nv)
		}
		if err != nil {
			return fmt.Errorf("cell: node %d: %w", i, err)
		} else if ok {
			d.m.verified++
		}
	}
	return nil
}

// unblock makes every socket of the network stop blocking its writers
// (simnet's never block).
func (d *driver) unblock() {
	if d.nw == nil {
		return
	}
	d.live.Lock()
	d.nw.Unblock()
	d.live.Unlock()
}

// teardown ends the cell: no send blocks any more, the background load
// stops, gossipsub stops (its context, then the routers' timers, variant
// B's nodes, the subscriptions and topics), the hosts close within
// TeardownLimit of virtual time (ErrTeardownStuck otherwise: their
// goroutines still run), the model's clock stops and SetupProcs ends. It
// undoes what the phases did so far, whichever phase failed, and runs
// once: later calls return nil.
func (d *driver) teardown() (err error) {
	if d.down {
		return nil
	}
	d.down = true
	defer func() {
		if p := recover(); p != nil {
			err = errors.Join(err, fmt.Errorf("cell: teardown: panic: %v\n%s", p, debug.Stack()))
		}
	}()
	if d.liveStarted {
		d.unblock()
	}
	d.stopBackground()
	if d.cancel != nil {
		d.cancel()
	}
	for _, nd := range d.nodes {
		if nd.router != nil {
			nd.router.Close()
		}
		if nd.part != nil {
			nd.part.Close()
		}
		for _, s := range nd.subs {
			s.Cancel()
		}
		for _, t := range nd.topics {
			t.Close()
		}
	}
	err = d.closeHosts()
	if d.sn != nil {
		d.sn.Close()
	}
	d.m.wEnd = des.WallNow()
	if d.liveStarted {
		if d.part != nil {
			// The other partitions meet this one at every window's end
			// until all are done.
			d.part.finish()
			<-d.live.WindowsEnded()
		}
		d.live.Stop()
		if oerr := d.obs.finish(); oerr != nil {
			err = errors.Join(err, oerr)
		}
	}
	d.restoreProcs()
	return err
}

// closeHosts closes every host, within a bound on virtual time: a close
// that never finishes (a writer that misses its wake-up, a connection that
// never drains) would otherwise run the clock on for ever.
func (d *driver) closeHosts() error {
	var hs []host.Host
	for _, h := range d.hostList() {
		if h != nil {
			hs = append(hs, h)
		}
	}
	if len(hs) == 0 {
		return nil
	}
	closed := make(chan error, 1)
	go func() {
		var first error
		for _, h := range hs {
			if err := h.Close(); err != nil && first == nil {
				first = fmt.Errorf("cell: closing hosts: %w", err)
			}
		}
		closed <- first
	}()
	select {
	case err := <-closed:
		if err == nil {
			d.m.wClosed, d.m.cClosed = des.WallNow(), des.BusyCPU()
		}
		return err
	case <-time.After(TeardownLimit):
		return ErrTeardownStuck
	}
}

// reading is how much of the cell's state snapshot reads.
type reading int

const (
	// readMeshes reads every node's tracer: its meshes, completion and
	// tallies.
	readMeshes reading = iota
	// readNetwork adds every node's network counters.
	readNetwork
	// readAll adds the queue statistics, variant B's node statistics and,
	// with Verify, what each complete node holds (the units' data, or
	// variant B's parts).
	readAll
	// readPublish is readNetwork and quic-go's connection state.
	readPublish
	// readCompletion is readMeshes, or readAll where every receiver is
	// complete (a split cell's wait for the last completion).
	readCompletion
)

// String names the reading (a split cell's question).
func (r reading) String() string {
	return [...]string{"meshes", "network", "all", "publish", "completion"}[r]
}

// view is the cell's state at one instant, as snapshot read it.
type view struct {
	nodes          []nodeView
	net            []netmodel.Counters // readNetwork and readAll
	up, down, host []*queues.Stats     // readAll; copies
	conn           connSamples         // readPublish
}

// nodeView is one node's state, as snapshot read it.
type nodeView struct {
	meshes      []int     // mesh size per topic
	firstMesh   []peer.ID // the mesh on the first topic
	delivered   bool
	deliveredAt time.Time
	dups        int
	tx, rx      rpcCounts
	data        map[int][]byte // readAll with Verify: unit index: data as delivered
	unitAt      []time.Time    // unit index: when it was delivered (zero: not yet)
	lastUnit    int            // the unit that completed the node; -1: none
	b           *partial.Stats // readAll, variant B
	held        [][]byte       // readAll, variant B with Verify, complete nodes: the parts held
}

// meshRange is the smallest and largest mesh over the node's topics.
func (v nodeView) meshRange() (lo, hi int) {
	lo = v.meshes[0]
	for _, m := range v.meshes {
		lo, hi = min(lo, m), max(hi, m)
	}
	return lo, hi
}

// meshSlots is the node's mesh memberships summed over its topics.
func (v nodeView) meshSlots() int {
	n := 0
	for _, m := range v.meshes {
		n += m
	}
	return n
}

// meshPeers lists the mesh on the first topic.
func (v nodeView) meshPeers() []peer.ID { return v.firstMesh }

// snapshot reads the nodes' state now, as much as what asks. It is the
// driver's only reader of the nodes' state (their tracers, variant B's
// nodes, the network's counters and queues): the phases call it where they
// look (each poll of the mesh and warm-up waits, the publish, the end of
// the delivery, the start of the teardown). In a split cell it asks every
// partition, which read their nodes at the next window's end. Variant B's
// nodes are read on their pubsub event loops. In one bubble, what tells
// the driver that the last receiver completed is not a read: the tracers
// signal it as it happens.
func (d *driver) snapshot(what reading) (*view, error) {
	if d.part == nil {
		return d.read(what)
	}
	vals, err := d.part.ask(what.String(), func() any {
		v, err := d.read(what)
		if err != nil {
			return err
		}
		return v
	})
	if err != nil {
		return nil, err
	}
	return mergeViews(vals, d.part.split)
}

// read reads this partition's nodes (every node in one bubble); the
// slices are indexed by node, another partition's left zero.
func (d *driver) read(what reading) (*view, error) {
	n := len(d.nodes)
	v := &view{nodes: make([]nodeView, n)}
	asked := what
	if what == readCompletion {
		what = readAll
		for i, nd := range d.nodes {
			if i > 0 && nd.tracer != nil && !nd.tracer.isDelivered() {
				what = readMeshes
				break
			}
		}
	}
	keep := what == readAll && d.cfg.Verify
	for i, nd := range d.nodes {
		if nd.tracer != nil {
			v.nodes[i] = nd.tracer.view(what == readAll, keep)
		}
	}
	if what == readAll {
		for i, nd := range d.nodes {
			if nd.part == nil {
				continue
			}
			st, err := nd.part.Counters()
			if err != nil {
				return nil, fmt.Errorf("cell: node %d: %w", i, err)
			}
			v.nodes[i].b = &st
			if keep && v.nodes[i].delivered {
				if v.nodes[i].held, err = nd.part.Held(); err != nil {
					return nil, fmt.Errorf("cell: node %d: %w", i, err)
				}
			}
		}
	}
	if what == readMeshes {
		return v, nil
	}
	if what == readPublish {
		v.conn = readConns(d.hostList())
	}
	if d.sn != nil {
		d.readSimnet(v, what)
		return v, nil
	}
	copyStats := func(s *queues.Stats) *queues.Stats { c := *s; return &c }
	d.live.Lock()
	defer d.live.Unlock()
	v.net = make([]netmodel.Counters, n)
	if what == readAll {
		v.up, v.down = make([]*queues.Stats, n), make([]*queues.Stats, n)
		if d.cfg.Profile.HostQdisc != "" {
			v.host = make([]*queues.Stats, n)
		}
	}
	for i, nd := range d.nw.Nodes() {
		if nd.Remote() {
			continue
		}
		v.net[i] = nd.Counters
		if what == readAll {
			v.up[i] = copyStats(nd.Up().Qdisc().Stats())
			v.down[i] = copyStats(nd.Down().Qdisc().Stats())
			if h := nd.Host(); h != nil && v.host != nil {
				v.host[i] = copyStats(h.Qdisc().Stats())
			}
		}
	}
	d.obs.reading(asked.traceName())
	return v, nil
}

// traceName names a reading of the network counters in a trace's reading
// column.
func (r reading) traceName() string {
	switch r {
	case readPublish:
		return "publish"
	case readAll:
		return "counts"
	case readCompletion:
		return "completion"
	}
	return "teardown"
}

// phaseMaxIHave is the phase arms' max-ihave-messages (study-model.md),
// whatever the cell's gossip settings say.
const phaseMaxIHave = 4096

// record is the cell's record: the settings, and what the phases
// measured, counted as the study counts it. It is the one place that fills
// a Record.
func (d *driver) record() *Record {
	cfg, m := &d.cfg, &d.m
	form := d.form
	rec := &Record{
		Schema: RecordSchema, Key: d.key,
		Arm: d.arm.Published, ArmName: d.arm.Name, Policy: d.policyName, Topics: len(d.topicNames),
		Wire: WireRecord{Messages: form.MessageCount, Unit: form.Unit, IDWidth: form.IDWidth, Encoding: string(cfg.Encoding)},
		Seed: cfg.Seed, Net: cfg.Net, NSize: cfg.N, N: cfg.N, Degree: cfg.Degree,
		PayloadBytes: cfg.Payload, Pay: sizeName(cfg.Payload),
		Profile: cfg.Profile.Name, Knobs: cfg.Profile.Knobs(), Gossip: cfg.Gossip.Knobs(),
		Warmup: cfg.Warmup.String(), WarmupGapS: cfg.Warmup.Gap.Seconds(),
		Background: cfg.Background.String(), BackgroundLeadS: cfg.Background.Lead.Seconds(),
		BTimeoutS: cfg.BTimeout.Seconds(), BFixed: cfg.BFixed, BRulesOff: cfg.BRulesOff.String(),
		Transport: cfg.Transport, Backend: cfg.Backend, Latency: cfg.Latency, WindowS: cfg.Window.Seconds(), Version: cfg.Version,
		SetupQuantumS: cfg.SetupQuantum.Seconds(), Partitions: 1,
	}
	if d.part != nil {
		rec.Partitions, rec.PartitionWindowMS = d.part.split.K, d.part.window.Seconds()*1000
	}
	rec.Replicate = cfg.Replicate
	if cfg.Topology != nil {
		draw := d.draw
		rec.N, rec.NSize, rec.Degree, rec.Net, rec.Latency = draw.N, draw.N, draw.Degree, draw.Scenario, draw.Model
	}
	rec.UpQdiscs, rec.DownQdiscs = countSpecs(d.upSpecs), countSpecs(d.downSpecs)
	if cfg.Backend == BackendSimnet {
		rec.NotModelled = SimnetNotModelled
	}
	rec.Phases = Phases{
		Hosts:    (m.wDial - m.w0).Seconds(),
		Dial:     (m.wMesh - m.wDial).Seconds(),
		Mesh:     (m.wMeshEnd - m.wMesh).Seconds(),
		Warmup:   (m.wDelivery - m.wMeshEnd).Seconds(),
		Delivery: (m.wTeardown - m.wDelivery).Seconds(),
	}
	rec.PhaseCPU = Phases{
		Hosts:    (m.cDial - m.c0).Seconds(),
		Dial:     (m.cMesh - m.cDial).Seconds(),
		Mesh:     (m.cMeshEnd - m.cMesh).Seconds(),
		Warmup:   (m.cDelivery - m.cMeshEnd).Seconds(),
		Delivery: (m.cTeardown - m.cDelivery).Seconds(),
	}
	if m.wClosed != 0 {
		rec.Phases.Teardown = (m.wClosed - m.wTeardown).Seconds()
		rec.PhaseCPU.Teardown = (m.cClosed - m.cTeardown).Seconds()
	}
	rec.WallS = (m.wEnd - m.w0).Seconds()
	rec.FirstHeartbeatMS = m.firstHeartbeat.Seconds() * 1000
	rec.MeshStable = m.meshStable
	rec.WarmupMissing = m.warmupMissing
	rec.WarmupS = m.warmupS.Seconds()
	rec.ConnAtPublish = m.conn
	rec.MeshLatencyMS, rec.GraphLatencyMS = m.meshLatencyMS, m.graphLatency
	rec.PublishAtS = m.publishAtS.Seconds()
	nh := firstHeartbeat(d.routersAt.Duration(), m.publishAtS.Duration(), d.cfg.Gossip.Heartbeat).Seconds() * 1000
	rec.NextHeartbeatMS = &nh
	if at := m.atPublish.nodes; len(at[0].meshes) > 1 {
		rec.PublisherMeshes = slices.Clone(at[0].meshes)
		empty := 0
		for _, nv := range at {
			if lo, _ := nv.meshRange(); lo == 0 {
				empty++
			}
		}
		rec.EmptyMeshNodes = &empty
	}
	rec.CountsAt = m.countsAt
	rec.CountsAtS = m.countsAfter.Seconds()
	rec.Verified = m.verified

	// The counts as of the last completion (or the window's end), from
	// the publish.
	n := len(d.nodes)
	cs, base := m.counts, m.atPublish.net
	dups := make([]int, n)
	var unheard, late *int
	for i, nv := range cs.nodes {
		dups[i] = nv.dups
		if st := nv.b; st != nil {
			if unheard == nil {
				unheard, late = new(int), new(int)
			}
			dups[i] = st.Duplicates
			rec.BClaims += st.Claims
			rec.BTimeouts += st.TimedOut
			rec.BStrikes += st.Strikes
			*unheard += st.TimedOutUnheard
			*late += st.LateAnswers
		}
	}
	rec.BTimeoutsUnheard, rec.BLateAnswers = unheard, late
	rec.Queues = map[string]QueueSummary{"uplink": summarize(cs.up), "downlink": summarize(cs.down)}
	rec.setAssignments(d.upSpecs, d.downSpecs, d.upBy, d.downBy, cs.up, cs.down)
	if cs.host != nil {
		rec.Queues["host"] = summarize(cs.host)
	}
	rec.Drops = map[string]uint64{}
	for i := range n {
		for r := netmodel.DropReason(0); r < netmodel.NumDropReasons; r++ {
			rec.Drops[r.String()] += cs.net[i].Drops[r] - base[i].Drops[r]
		}
	}
	// The simulation's cost.
	var delivPackets uint64
	for i, c := range m.cost.net {
		rec.SimPackets += c.SentPackets
		rec.SimBytes += c.SentBytes
		rec.CrossPackets += c.CrossedPackets
		delivPackets += c.SentPackets - base[i].SentPackets
	}
	if delivPackets > 0 {
		rec.UsPerPkt = rec.Phases.Delivery * 1e6 / float64(delivPackets)
	}
	counters := cs.net
	rec.PubWireBytes = counters[0].SentBytes - base[0].SentBytes
	times := make([]float64, 0, n-1)
	var rxData, rxCtrl float64
	for i, nv := range cs.nodes {
		row := NodeRow{
			Index: i, Completed: nv.delivered, Dups: dups[i],
			MeshPublish: m.atPublish.nodes[i].meshes[0], MeshEnd: nv.meshes[0],
			DataRx: nv.rx.data, DataTx: nv.tx.data, CtrlRx: nv.rx.ctrl, CtrlTx: nv.tx.ctrl,
			PktRx: counters[i].RecvPackets - base[i].RecvPackets, PktTx: counters[i].SentPackets - base[i].SentPackets,
			WireRx: counters[i].RecvBytes - base[i].RecvBytes, WireTx: counters[i].SentBytes - base[i].SentBytes,
			IHaveTx: nv.tx.ihave, IHaveRx: nv.rx.ihave, IWantTx: nv.tx.iwant, IWantRx: nv.rx.iwant,
			IDontWantTx: nv.tx.idontwant, IDontWantRx: nv.rx.idontwant,
		}
		if nv.delivered {
			v := nv.deliveredAt.Sub(m.publishAt).Seconds()
			row.TimeS = &v
		}
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
	rec.RxNodeBytes = rxData / float64(n-1)
	rec.CtrlRxNode = rxCtrl / float64(n-1)
	if !d.isB && len(cs.nodes[0].unitAt) > 1 {
		rec.UnitFirstMS, rec.CompletingUnits = unitSpread(cs.nodes[1:], m.publishAt)
	}
	rec.fill(times, cfg.Deadline.Seconds())
	return rec
}

// unitSpread reads how the units spread over the receivers: each unit's
// first delivery at any of them, in ms after the publish (nil where none
// had it), and how many receivers each unit completed (their last needed
// unit).
func unitSpread(rx []nodeView, publishAt time.Time) (first []*float64, completing []int) {
	units := len(rx[0].unitAt)
	first, completing = make([]*float64, units), make([]int, units)
	for _, nv := range rx {
		for u, at := range nv.unitAt {
			if at.IsZero() {
				continue
			}
			ms := float64(at.Sub(publishAt)) / float64(time.Millisecond)
			if first[u] == nil || ms < *first[u] {
				first[u] = &ms
			}
		}
		if nv.lastUnit >= 0 {
			completing[nv.lastUnit]++
		}
	}
	return first, completing
}
