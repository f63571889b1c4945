// Package partial is variant B of the study: the payload's parts travel on
// go-libp2p-pubsub's partial-messages extension (/meshsub/1.3.0), with
// per-peer bitmaps of held and wanted parts, a push policy and a claim
// ledger (docs/references.md, "Variant B"; the report's Appendix A).
// docs/variant-b.md compares it, rule by rule, with the study's rules and
// the extension's spec.
//
// The study's own implementation is not available; this one is written
// from the description, and where the description is silent it makes a
// choice and says so:
//
//   - Wire form (ours): the parts metadata is the held bitmap followed by
//     the wanted bitmap; a partial message is a run of frames, each a part
//     index and length (uvarints) and the part's bytes.
//   - Phase policy: a node that gets a new part volunteers it to its top
//     max(0, replication − known holders) mesh peers by rendezvous rank of
//     (part, peer), and sends its held bitmap to every mesh peer. Known
//     holders are peers whose bitmap shows the part or who sent it.
//   - Claim ledger: every pass (on news, and every retry interval while
//     incomplete) missing parts without an open claim are claimed, in
//     index order, each from a peer known to hold it, at most
//     ClaimsPerPeer fresh claims per peer per pass, and no more parts than
//     completion still needs (need − held − open claims: every missing
//     part for B tuned, fewer for coded B once parts are on their way).
//     The peer: not struck out first, then the peer asked for that part
//     the fewest times (so retries cycle through the holders), then the
//     one with the fewest open claims, then rendezvous rank. A claim ends
//     when its part arrives, from any peer; only the claimed peer's
//     answer is a response-time sample. A claim whose part is still
//     missing at the request timeout is a strike, and the part is claimed
//     again; at StrikeCap strikes a peer is struck out for StrikeMemory:
//     passed over while another holder is free, claimed from when none is
//     (our reading of "strike cap 1 with a 30 s memory"; excluding struck
//     peers outright left nodes stuck once every holder had timed out
//     once).
//   - The request timeout is per peer: 16 × u, u starting at 25 ms
//     (Timeout0 = 400 ms) for a peer not yet heard from and following that
//     peer's observed claim-to-part times (an exponentially weighted mean,
//     weight 1/8): our reading of "16 × 25 ms and adaptive to observed
//     response times" with the study's report's per-peer timeout.
//   - Push grace (ours): a claim for a part the node pushed to that peer
//     less than PushGrace ago is not answered again; the push is in flight.
//   - A complete node keeps serving and volunteering but claims no more.
//   - Coded B sends one part per frame and, when a pass sends several
//     parts to several peers, takes the peers round robin.
//
// Params.Off switches the claim budget, the per-peer timeout and the
// closing of a claim by any arrival off, each back to the simpler rule it
// replaced, so that a study can measure what each changes.
package partial

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"iter"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p-pubsub/partialmessages"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/peer"
)

// Params are variant B's knobs (Appendix A's bfixed and bcodedfc1).
type Params struct {
	Replication     int           // pushes per new part: 2
	ClaimsPerPeer   int           // fresh claims per peer per pass: 4
	Timeout0        time.Duration // the first request timeout: 16 × 25 ms
	TimeoutMult     int           // the timeout's multiple of the mean response time: 16
	Retry           time.Duration // the pass interval: 100 ms
	PushGrace       time.Duration // 400 ms
	StrikeCap       int           // strikes before a peer is passed over: 1
	StrikeMemory    time.Duration // how long: 30 s
	OnePartPerFrame bool          // coded B
	// Fixed keeps the request timeout at Timeout0 instead of adapting it
	// to the observed responses (a study knob; the arms adapt).
	Fixed bool
	// Mute makes the node ignore every claim: a peer that never answers
	// (tests of the strike rule).
	Mute bool
	// Off switches rules of the ledger off (a study knob: what each
	// changes); the zero value keeps them all, as the report states them.
	Off RulesOff
}

// RulesOff names ledger rules switched off (docs/variant-b.md, rows 16,
// 21 and 22), each back to the simpler rule it replaced.
type RulesOff struct {
	// ClaimBudget off: a pass claims every missing part, not only as many
	// as completion still needs.
	ClaimBudget bool
	// PerPeerTimeout off: one request timeout for the node, following the
	// mean response time over all its peers.
	PerPeerTimeout bool
	// AnyArrival off: a claim ends only when the claimed peer answers (or
	// at its timeout, as a strike), not when its part comes from another.
	AnyArrival bool
}

// Rule names, as ParseRulesOff reads them and RulesOff.String writes them.
const (
	RuleClaimBudget    = "claim-budget"
	RulePerPeerTimeout = "per-peer-timeout"
	RuleAnyArrival     = "any-arrival"
)

// RuleNames lists the ledger rules a study can switch off.
func RuleNames() []string {
	return []string{RuleAnyArrival, RuleClaimBudget, RulePerPeerTimeout}
}

// ParseRulesOff reads a comma-separated list of rule names (RuleNames);
// "" is none.
func ParseRulesOff(s string) (RulesOff, error) {
	var r RulesOff
	if strings.TrimSpace(s) == "" {
		return r, nil
	}
	for _, name := range strings.Split(s, ",") {
		switch strings.TrimSpace(name) {
		case RuleClaimBudget:
			r.ClaimBudget = true
		case RulePerPeerTimeout:
			r.PerPeerTimeout = true
		case RuleAnyArrival:
			r.AnyArrival = true
		default:
			return RulesOff{}, fmt.Errorf("variant B rule %q: want a comma-separated list of %s", strings.TrimSpace(name), strings.Join(RuleNames(), ", "))
		}
	}
	return r, nil
}

// String is the rules switched off, comma-separated in RuleNames' order;
// "" for none.
func (r RulesOff) String() string {
	var out []string
	if r.AnyArrival {
		out = append(out, RuleAnyArrival)
	}
	if r.ClaimBudget {
		out = append(out, RuleClaimBudget)
	}
	if r.PerPeerTimeout {
		out = append(out, RulePerPeerTimeout)
	}
	return strings.Join(out, ",")
}

// Tuned returns B tuned's knobs; coded B sets OnePartPerFrame.
func Tuned() Params {
	return Params{Replication: 2, ClaimsPerPeer: 4, Timeout0: 16 * 25 * time.Millisecond, TimeoutMult: 16, Retry: 100 * time.Millisecond,
		PushGrace: 400 * time.Millisecond, StrikeCap: 1, StrikeMemory: 30 * time.Second}
}

// Validate checks the knobs.
func (p Params) Validate() error {
	if p.Replication < 0 || p.ClaimsPerPeer < 1 || p.Timeout0 <= 0 || p.TimeoutMult < 1 || p.Retry <= 0 || p.PushGrace < 0 || p.StrikeCap < 1 || p.StrikeMemory < 0 {
		return fmt.Errorf("variant B: invalid knobs %+v", p)
	}
	return nil
}

// PeerState is the extension's per-peer state; this package keeps its own.
type PeerState struct{}

// Node is one node's variant B state. All of it lives on pubsub's event
// loop: the extension calls OnIncomingRPC there, and Publish and the pass
// timer get there through pubsub.PublishPartial.
type Node struct {
	p      Params
	topic  string
	group  []byte
	total  int // parts in the group
	need   int // parts that complete it
	ext    *partialmessages.PartialMessagesExtension[PeerState]
	ps     *pubsub.PubSub
	onDone func(time.Time)

	mu     sync.Mutex // guards ps (set after the extension is built)
	parts  [][]byte   // held parts, nil where missing
	held   int
	done   bool
	peers  map[peer.ID]*peerInfo
	claims map[int]claim           // part: the open claim
	tries  map[int]map[peer.ID]int // part: claims sent per peer
	lapsed map[lapse]bool          // claims that lapsed, until the part comes from that peer
	srtt   time.Duration           // the node's mean claim-to-part time, with Off.PerPeerTimeout
	timer  *time.Timer
	Stats  Stats
}

// Stats counts one node's ledger, for records and tests.
type Stats struct {
	Claims, Answered, TimedOut, Strikes int
	Pushed, Served, Duplicates          int
	// TimedOutUnheard counts the lapsed claims whose peer had answered
	// none of the node's claims before (with the per-peer timeout, those
	// waited Timeout0); LateAnswers the parts that came from a peer after
	// its claim for them had lapsed (a slow answer, not a lost one).
	TimedOutUnheard, LateAnswers int
}

type peerInfo struct {
	has        []bool
	pushedAt   map[int]time.Time
	strikes    int
	struckTill time.Time
	open       int           // open claims
	answered   int           // claims it answered
	srtt       time.Duration // mean claim-to-part time, 0 before the first
}

type claim struct {
	peer     peer.ID
	at       time.Time
	deadline time.Time
	unheard  bool // the peer had answered none of the node's claims before
}

// lapse names a claim that lapsed: the part and the peer claimed.
type lapse struct {
	part int
	peer peer.ID
}

// New builds a node for one group of total parts of which need complete
// it, on topic. onDone is called (on the loop) when the node completes.
// Give Extension to pubsub with pubsub.WithPartialMessagesExtension, then
// call Attach with the PubSub.
func New(p Params, topic string, group []byte, total, need int, onDone func(time.Time)) (*Node, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if total < 1 || need < 1 || need > total {
		return nil, fmt.Errorf("variant B: %d of %d parts", need, total)
	}
	n := &Node{p: p, topic: topic, group: slices.Clone(group), total: total, need: need, onDone: onDone,
		parts: make([][]byte, total), peers: map[peer.ID]*peerInfo{}, claims: map[int]claim{}, tries: map[int]map[peer.ID]int{}, lapsed: map[lapse]bool{}}
	n.ext = &partialmessages.PartialMessagesExtension[PeerState]{
		Logger:        slog.New(slog.DiscardHandler),
		OnIncomingRPC: n.onIncoming,
		OnEmitGossip:  n.onGossip,
	}
	return n, nil
}

// Extension is the extension to give pubsub.
func (n *Node) Extension() *partialmessages.PartialMessagesExtension[PeerState] { return n.ext }

// Attach gives the node its PubSub (after pubsub.NewGossipSub).
func (n *Node) Attach(ps *pubsub.PubSub) {
	n.mu.Lock()
	n.ps = ps
	n.mu.Unlock()
}

// Close stops the pass timer.
func (n *Node) Close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ps = nil
	if n.timer != nil {
		n.timer.Stop()
	}
}

// Publish makes this node the publisher of parts (all of the group) and
// starts their diffusion.
func (n *Node) Publish(parts [][]byte) error {
	if len(parts) != n.total {
		return fmt.Errorf("variant B publish: %d parts, the group has %d", len(parts), n.total)
	}
	return n.onLoop(func(mesh map[peer.ID]PeerState, now time.Time) iter.Seq2[peer.ID, partialmessages.PublishAction] {
		var fresh []int
		for i, b := range parts {
			if n.parts[i] == nil {
				n.parts[i] = b
				n.held++
				fresh = append(fresh, i)
			}
		}
		n.complete(now)
		return n.spread(mesh, now, fresh, nil)
	})
}

// Held returns the parts the node holds (nil where missing), read on the
// loop.
func (n *Node) Held() ([][]byte, error) {
	var out [][]byte
	err := n.onLoop(func(map[peer.ID]PeerState, time.Time) iter.Seq2[peer.ID, partialmessages.PublishAction] {
		out = slices.Clone(n.parts)
		return func(func(peer.ID, partialmessages.PublishAction) bool) {}
	})
	return out, err
}

// Counters returns the node's ledger counts, read on the loop.
func (n *Node) Counters() (Stats, error) {
	var st Stats
	err := n.onLoop(func(map[peer.ID]PeerState, time.Time) iter.Seq2[peer.ID, partialmessages.PublishAction] {
		st = n.Stats
		return func(func(peer.ID, partialmessages.PublishAction) bool) {}
	})
	return st, err
}

// onLoop runs f on pubsub's event loop, where it may return what to send.
func (n *Node) onLoop(f func(mesh map[peer.ID]PeerState, now time.Time) iter.Seq2[peer.ID, partialmessages.PublishAction]) error {
	n.mu.Lock()
	ps := n.ps
	n.mu.Unlock()
	if ps == nil {
		return errors.New("variant B: node not attached or closed")
	}
	return pubsub.PublishPartial(ps, n.topic, n.group, func(mesh map[peer.ID]PeerState, _ func(peer.ID) bool) iter.Seq2[peer.ID, partialmessages.PublishAction] {
		return f(mesh, time.Now())
	})
}

// send publishes what f returns, from inside an extension callback (on
// the loop already); the extension hands f the group's peers with the
// mesh filled in.
func (n *Node) send(f func(mesh map[peer.ID]PeerState) iter.Seq2[peer.ID, partialmessages.PublishAction]) {
	_ = n.ext.PublishPartial(n.topic, n.group, func(mesh map[peer.ID]PeerState, _ func(peer.ID) bool) iter.Seq2[peer.ID, partialmessages.PublishAction] {
		return f(mesh)
	})
}

func (n *Node) peer(p peer.ID) *peerInfo {
	pi := n.peers[p]
	if pi == nil {
		pi = &peerInfo{has: make([]bool, n.total), pushedAt: map[int]time.Time{}}
		n.peers[p] = pi
	}
	return pi
}

// complete notes completion once enough parts are held.
func (n *Node) complete(now time.Time) {
	if !n.done && n.held >= n.need {
		n.done = true
		clear(n.claims)
		if n.onDone != nil {
			n.onDone(now)
		}
	}
}

// onIncoming handles a peer's partial message and metadata.
func (n *Node) onIncoming(from peer.ID, _ map[peer.ID]PeerState, rpc *pb.PartialMessagesExtension) error {
	now := time.Now()
	pi := n.peer(from)
	var fresh []int
	if msg := rpc.GetPartialMessage(); len(msg) > 0 {
		frames, err := decodeFrames(msg, n.total)
		if err != nil {
			return fmt.Errorf("variant B: from %s: %w", from, err)
		}
		fresh = n.take(from, frames, now)
	}
	var wants []int
	if md := rpc.GetPartsMetadata(); len(md) > 0 {
		has, want, err := decodeMetadata(md, n.total)
		if err != nil {
			return fmt.Errorf("variant B: from %s: %w", from, err)
		}
		for i := range n.total {
			if has[i] {
				pi.has[i] = true
			}
			if want[i] && n.parts[i] != nil && !n.p.Mute {
				if at, ok := pi.pushedAt[i]; ok && now.Sub(at) < n.p.PushGrace {
					continue // pushed a moment ago: in flight
				}
				wants = append(wants, i)
			}
		}
	}
	n.send(func(mesh map[peer.ID]PeerState) iter.Seq2[peer.ID, partialmessages.PublishAction] {
		return n.spread(mesh, now, fresh, map[peer.ID][]int{from: wants})
	})
	return nil
}

// take stores the parts that came from peer from, closes their claims,
// notes completion, and returns the indices of the parts new to the node.
func (n *Node) take(from peer.ID, frames []frame, now time.Time) []int {
	pi := n.peer(from)
	var fresh []int
	for _, f := range frames {
		pi.has[f.index] = true
		if n.lapsed[lapse{f.index, from}] {
			delete(n.lapsed, lapse{f.index, from})
			n.Stats.LateAnswers++
		}
		n.arrived(f.index, from, now)
		if n.parts[f.index] != nil {
			n.Stats.Duplicates++
			continue
		}
		n.parts[f.index] = f.data
		n.held++
		fresh = append(fresh, f.index)
	}
	n.complete(now)
	return fresh
}

// onGossip sends the held bitmap to the heartbeat's gossip peers.
func (n *Node) onGossip(_ string, _ []byte, peers []peer.ID, _ map[peer.ID]PeerState) {
	if n.held == 0 {
		return
	}
	md := n.metadata(nil)
	n.send(func(map[peer.ID]PeerState) iter.Seq2[peer.ID, partialmessages.PublishAction] {
		return func(yield func(peer.ID, partialmessages.PublishAction) bool) {
			for _, p := range peers {
				if !yield(p, partialmessages.PublishAction{EncodedPartsMetadata: md}) {
					return
				}
			}
		}
	})
}

// spread volunteers fresh parts, answers serve (parts claimed by peers),
// runs a claim pass, and tells every mesh peer the held bitmap when it
// changed; it returns what to send, one action per peer (or one per part
// with OnePartPerFrame, peers taken round robin).
func (n *Node) spread(mesh map[peer.ID]PeerState, now time.Time, fresh []int, serve map[peer.ID][]int) iter.Seq2[peer.ID, partialmessages.PublishAction] {
	out := map[peer.ID][]int{}
	for p, parts := range serve {
		out[p] = append(out[p], parts...)
		n.Stats.Served += len(parts)
	}
	meshPeers := make([]peer.ID, 0, len(mesh))
	for p := range mesh {
		meshPeers = append(meshPeers, p)
	}
	slices.Sort(meshPeers)
	for _, i := range fresh {
		var cands []peer.ID
		known := 0
		for _, p := range meshPeers {
			if n.peer(p).has[i] {
				known++
			} else {
				cands = append(cands, p)
			}
		}
		k := min(max(0, n.p.Replication-known), len(cands))
		rankPeers(i, cands)
		for _, p := range cands[:k] {
			out[p] = append(out[p], i)
			pi := n.peer(p)
			pi.has[i] = true
			pi.pushedAt[i] = now
			n.Stats.Pushed++
		}
	}
	wants := n.pass(now)
	meta := map[peer.ID][]byte{}
	if len(fresh) > 0 {
		for _, p := range meshPeers {
			meta[p] = nil // the held bitmap, below
		}
	}
	for p := range wants {
		meta[p] = nil
	}
	for p := range meta {
		meta[p] = n.metadata(wants[p])
	}
	n.arm()
	return n.actions(out, meta)
}

// pass is one claim pass: it expires late claims and opens new ones. It
// returns the parts to want from each peer.
func (n *Node) pass(now time.Time) map[peer.ID][]int {
	for i, c := range n.claims {
		if now.Before(c.deadline) {
			continue
		}
		delete(n.claims, i)
		n.Stats.TimedOut++
		if c.unheard {
			n.Stats.TimedOutUnheard++
		}
		n.lapsed[lapse{i, c.peer}] = true
		pi := n.peer(c.peer)
		pi.open--
		pi.strikes++
		n.Stats.Strikes++
		if pi.strikes >= n.p.StrikeCap {
			pi.struckTill = now.Add(n.p.StrikeMemory)
			pi.strikes = 0
		}
	}
	if n.done {
		return nil
	}
	budget := n.need - n.held - len(n.claims) // parts completion still needs
	fresh := map[peer.ID]int{}
	wants := map[peer.ID][]int{}
	for i := range n.total {
		if budget <= 0 && !n.p.Off.ClaimBudget {
			break
		}
		if n.parts[i] != nil {
			continue
		}
		if _, open := n.claims[i]; open {
			continue
		}
		var best peer.ID
		var bestInfo *peerInfo
		var bestRank uint64
		bestStruck, bestTries := false, 0
		tries := n.tries[i]
		for p, pi := range n.peers {
			if !pi.has[i] || fresh[p] >= n.p.ClaimsPerPeer {
				continue
			}
			struck := now.Before(pi.struckTill)
			r := rank(i, p)
			t := tries[p]
			better := bestInfo == nil || (bestStruck && !struck) ||
				(struck == bestStruck && (t < bestTries || (t == bestTries &&
					(pi.open < bestInfo.open || (pi.open == bestInfo.open && r > bestRank)))))
			if better {
				best, bestInfo, bestRank, bestStruck, bestTries = p, pi, r, struck, t
			}
		}
		if bestInfo == nil {
			continue
		}
		budget--
		fresh[best]++
		bestInfo.open++
		if tries == nil {
			tries = map[peer.ID]int{}
			n.tries[i] = tries
		}
		tries[best]++
		n.claims[i] = claim{peer: best, at: now, deadline: now.Add(n.timeoutFor(bestInfo)), unheard: bestInfo.answered == 0}
		n.Stats.Claims++
		wants[best] = append(wants[best], i)
	}
	return wants
}

// arrived closes the open claim for part i, which has come from peer
// from: the claimed peer's answer is a sample of its response time; a
// part from another peer (a push, or a claim that timed out before)
// closes the claim without a sample and without a strike.
func (n *Node) arrived(i int, from peer.ID, now time.Time) {
	c, ok := n.claims[i]
	if !ok || (c.peer != from && n.p.Off.AnyArrival) {
		return
	}
	delete(n.claims, i)
	pi := n.peer(c.peer)
	pi.open--
	if c.peer != from {
		return
	}
	n.Stats.Answered++
	pi.answered++
	sample := max(now.Sub(c.at), time.Nanosecond) // 0 is "no sample"
	mean := &pi.srtt
	if n.p.Off.PerPeerTimeout {
		mean = &n.srtt
	}
	if *mean == 0 {
		*mean = sample
	} else {
		*mean += (sample - *mean) / 8
	}
}

// timeoutFor is the request timeout of a claim to the peer: TimeoutMult ×
// its mean response time (the node's, with Off.PerPeerTimeout), Timeout0
// before the first answer (or always, with Fixed).
func (n *Node) timeoutFor(pi *peerInfo) time.Duration {
	mean := pi.srtt
	if n.p.Off.PerPeerTimeout {
		mean = n.srtt
	}
	if n.p.Fixed || mean == 0 {
		return n.p.Timeout0
	}
	return time.Duration(n.p.TimeoutMult) * mean
}

// arm keeps the pass timer running while the node is incomplete.
func (n *Node) arm() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.done || n.ps == nil {
		if n.timer != nil {
			n.timer.Stop()
		}
		return
	}
	if n.timer == nil {
		n.timer = time.AfterFunc(n.p.Retry, n.tick)
		return
	}
	n.timer.Reset(n.p.Retry)
}

// tick runs a pass on the loop.
func (n *Node) tick() {
	_ = n.onLoop(func(mesh map[peer.ID]PeerState, now time.Time) iter.Seq2[peer.ID, partialmessages.PublishAction] {
		return n.spread(mesh, now, nil, nil)
	})
}

// actions turns the parts and metadata per peer into the extension's
// publish actions.
func (n *Node) actions(parts map[peer.ID][]int, meta map[peer.ID][]byte) iter.Seq2[peer.ID, partialmessages.PublishAction] {
	peers := make([]peer.ID, 0, len(parts)+len(meta))
	for p := range parts {
		peers = append(peers, p)
	}
	for p := range meta {
		if _, ok := parts[p]; !ok {
			peers = append(peers, p)
		}
	}
	slices.Sort(peers)
	return func(yield func(peer.ID, partialmessages.PublishAction) bool) {
		if !n.p.OnePartPerFrame {
			for _, p := range peers {
				a := partialmessages.PublishAction{EncodedPartsMetadata: meta[p]}
				if len(parts[p]) > 0 {
					a.EncodedPartialMessage = n.encodeFrames(parts[p])
				}
				if !yield(p, a) {
					return
				}
			}
			return
		}
		// One part per frame, the peers round robin; the metadata rides
		// with each peer's first frame.
		for round := 0; ; round++ {
			sent := false
			for _, p := range peers {
				a := partialmessages.PublishAction{}
				if round == 0 {
					a.EncodedPartsMetadata = meta[p]
				}
				if round < len(parts[p]) {
					a.EncodedPartialMessage = n.encodeFrames(parts[p][round : round+1])
				}
				if a.EncodedPartsMetadata == nil && a.EncodedPartialMessage == nil {
					continue
				}
				sent = true
				if !yield(p, a) {
					return
				}
			}
			if !sent {
				return
			}
		}
	}
}

// metadata encodes the held bitmap and the wanted parts.
func (n *Node) metadata(want []int) []byte {
	w := (n.total + 7) / 8
	b := make([]byte, 2*w)
	for i, x := range n.parts {
		if x != nil {
			b[i/8] |= 1 << (i % 8)
		}
	}
	for _, i := range want {
		b[w+i/8] |= 1 << (i % 8)
	}
	return b
}

func decodeMetadata(b []byte, total int) (has, want []bool, err error) {
	w := (total + 7) / 8
	if len(b) != 2*w {
		return nil, nil, fmt.Errorf("parts metadata of %d bytes, want %d", len(b), 2*w)
	}
	has, want = make([]bool, total), make([]bool, total)
	for i := range total {
		has[i] = b[i/8]&(1<<(i%8)) != 0
		want[i] = b[w+i/8]&(1<<(i%8)) != 0
	}
	return has, want, nil
}

type frame struct {
	index int
	data  []byte
}

func (n *Node) encodeFrames(idx []int) []byte {
	var b []byte
	for _, i := range idx {
		b = binary.AppendUvarint(b, uint64(i))
		b = binary.AppendUvarint(b, uint64(len(n.parts[i])))
		b = append(b, n.parts[i]...)
	}
	return b
}

func decodeFrames(b []byte, total int) ([]frame, error) {
	var out []frame
	for len(b) > 0 {
		i, k := binary.Uvarint(b)
		if k <= 0 || i >= uint64(total) {
			return nil, errors.New("bad frame index")
		}
		b = b[k:]
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			return nil, errors.New("bad frame length")
		}
		b = b[k:]
		out = append(out, frame{index: int(i), data: slices.Clone(b[:l])})
		b = b[l:]
	}
	return out, nil
}

// rank is the rendezvous score of (part, peer): higher ranks first.
func rank(part int, p peer.ID) uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(part))
	h.Write(b[:])
	h.Write([]byte(p))
	return h.Sum64()
}

// rankPeers orders peers by rendezvous score for part, highest first.
func rankPeers(part int, peers []peer.ID) {
	slices.SortFunc(peers, func(a, b peer.ID) int {
		ra, rb := rank(part, a), rank(part, b)
		switch {
		case ra > rb:
			return -1
		case ra < rb:
			return 1
		}
		return 0
	})
}
