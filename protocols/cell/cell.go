// Package cell runs the study's cells: N go-libp2p hosts running
// gossipsub over uplink's network, one publish from node 0, and every
// receiver's completion time, under a profile that reproduces one of the
// reference backends.
package cell

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
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
	// ProgressEvery is how often, in wall time, the command that runs the
	// cell prints its progress line (read from Watch); 0: never. The
	// commands default to DefaultProgressEvery.
	ProgressEvery time.Duration `json:",omitempty"`
	// Watch, when set, is updated as the cell runs, for a watcher outside
	// its bubble.
	Watch *Watch `json:"-"`
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
	// arms.EncodingRaw (the zero value, so a record or key without the
	// field is raw; the CLI's default is snappy) or arms.EncodingSnappy
	// (the study's gossip encoder; the whole message then carries the
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
	// BRulesOff switches rules of variant B's claim ledger off
	// (partial.RulesOff; a study knob: what each rule changes).
	BRulesOff partial.RulesOff
	// PhaseHook, when set, is called as each phase starts: hosts, dial,
	// mesh, warmup (when on), delivery, teardown. A profiler can switch
	// files there; it runs on the cell's goroutine inside the bubble and
	// must not start goroutines there.
	PhaseHook func(phase string) `json:"-"`
	// Wait is the wait of the synctest bubble Run runs in (synctest.Wait):
	// it returns once every other goroutine of the bubble is durably
	// blocked. Run refuses to start without it.
	Wait func() `json:"-"`
	// Partitions splits the cell's nodes over this many partitions, each
	// in a bubble of its own, advancing in lock-step windows (RunSplit);
	// 0 or 1: one bubble. Part of the key when above 1.
	Partitions int `json:",omitempty"`
	// Replicate, when positive, makes the cell a repeat of the same cell
	// under another key: it changes nothing that runs (quic-go's keys and
	// connection ids are random, so a repeat measures the run-to-run
	// spread).
	Replicate int `json:",omitempty"`
	// CountsAt is when the counts (duplicates, bytes, drops, queues) are
	// read: "" (CountsLastCompletion) at the last receiver's completion,
	// or CountsWindowEnd at the window's end whatever the completions,
	// the instant a harness that holds every cell for its window reads
	// them. Completion times do not depend on it.
	CountsAt string `json:",omitempty"`
	// Backend is the network the cell runs on: "" for uplink's model (left
	// out of the key), or BackendSimnet for github.com/marcopolo/simnet
	// v0.0.7 (QUIC, the harness profile's network knobs; checkBackend).
	Backend string `json:",omitempty"`
	// Trace and Captures, when set, write a time series of some nodes
	// (Trace) and a pcapng capture of every packet some nodes send and
	// receive (Captures: node indices) to Outputs' writers; on uplink's
	// model only. They read the model and change nothing: left out of the
	// key.
	Trace    *Trace  `json:",omitempty"`
	Captures []int   `json:",omitempty"`
	Outputs  Outputs `json:"-"`
	// routers, for tests of the phase router: routerByArm, routerPhase
	// (every node runs the phase router, with no policy for stock arms), or
	// routerMixed (odd nodes run the stock router, even ones the arm's).
	routers int
	// bMute lists variant B nodes that never answer a claim (tests).
	bMute []int
	// onHosts, when set, is called with the hosts once all are built
	// (tests).
	onHosts func([]host.Host)
	// fault, when set, is called as each phase starts, after PhaseHook;
	// an error from it ends the cell there (tests of the error paths).
	fault func(phase string) error
	// faultPart is the partition of a split cell whose phases call fault.
	faultPart int
}

const (
	routerByArm = iota
	routerPhase
	routerMixed
)

// The values of Config.CountsAt.
const (
	CountsLastCompletion = "last-completion"
	CountsWindowEnd      = "window-end"
)

// defaultMeshTimeout is Config.MeshTimeout's default.
const defaultMeshTimeout = 60 * des.Second

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
		c.MeshTimeout = defaultMeshTimeout
	}
	if c.Gossip.D == 0 {
		c.Gossip = StudyGossip()
	}
}

// qdiscSpecs are the queue specs the cell's queues are drawn from: the
// profile's and any per-node assignment's.
func (c *Config) qdiscSpecs() []string {
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
	return specs
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
	switch c.CountsAt {
	case "", CountsLastCompletion, CountsWindowEnd:
	default:
		return fmt.Errorf("counts at %q: want %s or %s", c.CountsAt, CountsLastCompletion, CountsWindowEnd)
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
		case c.Profile.routerStart() != RouterBeforeDial:
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

// meshSizes is a node's mesh sizes, as its tracer or a snapshot of it
// holds them.
type meshSizes interface {
	meshRange() (lo, hi int) // the smallest and largest mesh over the node's topics
	meshSlots() int          // the mesh memberships summed over the topics
}

// slotsMeshTimeout bounds the harness's variant C wait (twice its mesh
// settle timeout of 3 minutes); the cell then publishes anyway.
const slotsMeshTimeout = 6 * 60 * des.Second

// slotsWithin reports whether all but tol nodes hold between topics × Dlo
// and topics × Dhi mesh slots over their topics (the study's harness's
// variant C test: one topic may be short where another is full).
func slotsWithin[M meshSizes](ms []M, topics int, g Gossip, tol int) bool {
	out := 0
	for _, m := range ms {
		if s := m.meshSlots(); s < topics*g.Dlo || s > topics*g.Dhi {
			out++
		}
	}
	return out <= tol
}

// meshesWithin reports whether every node's mesh on every topic is
// within [Dlo, Dhi].
func meshesWithin[M meshSizes](ms []M, g Gossip) bool {
	for _, m := range ms {
		if lo, hi := m.meshRange(); lo < g.Dlo || hi > g.Dhi {
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

// verifyParts rebuilds the payload from the parts a variant B node held.
func verifyParts(p arms.Parts, payload []byte, nv nodeView) (bool, error) {
	if !nv.delivered {
		return false, nil
	}
	got, err := p.Rebuild(nv.held)
	if err != nil {
		return false, fmt.Errorf("rebuild: %w", err)
	}
	return bytes.Equal(got, payload), nil
}

// verifyNode rebuilds the payload from the units a node was delivered.
func verifyNode(arm arms.Arm, units arms.Units, enc arms.Encoding, payload []byte, nv nodeView) (bool, error) {
	if !nv.delivered {
		return false, nil
	}
	var bad error
	raw := func(i int) []byte {
		d := nv.data[i]
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
		for i := range nv.data {
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

// dialGraph connects every edge, the lower index dialling node j (peer
// ids[j]) at addr(j), with up to eight dials in flight per node. A nil
// host (another partition's node) dials nothing here.
func dialGraph(ctx context.Context, hosts []host.Host, ids []peer.ID, g *netmodel.Graph, addr func(int) ma.Multiaddr) error {
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	for i, h := range hosts {
		if h == nil {
			continue
		}
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
					ai := peer.AddrInfo{ID: ids[j], Addrs: []ma.Multiaddr{addr(j)}}
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
// bytes (the study's whole message goes through its gossip encoder and
// carries the mainnet-like payload).
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
