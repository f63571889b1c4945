package phase

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// Router is a gossipsub router that applies a Policy to some topics and
// the stock router's behaviour to all others. Build it with New, give it
// to pubsub.NewGossipSubWithRouter together with Options, then Bind it to
// a joined topic before the first publish.
//
// All of its state is touched on pubsub's event loop only: pubsub calls
// Publish, HandleRPC and the tracer there, and the router's own timers and
// the cell's calls (Expect, Held) reach the loop through sched.
type Router struct {
	*pubsub.GossipSubRouter

	self       peer.ID
	idFn       func(*pb.Message) string
	policies   map[string]Policy
	retransmit int // answers per (id, peer), as the stock router's GossipRetransmission

	mesh    map[string]map[peer.ID]struct{} // topic's mesh, from Graft and Prune
	store   map[string]*pb.Message          // held messages of policy topics
	holders map[string]map[peer.ID]struct{} // id: peers known to hold it
	idw     map[string]int                  // id: IDONTWANTs heard (the budget's decay)
	served  map[string]map[peer.ID]int      // id: IWANT answers per peer
	groups  map[string]*group               // id: its completion group
	pull    *puller
	sched   sched
	boundMu sync.Mutex
	bound   *pubsub.Topic

	// Heartbeat gossip of the topics whose policy has Gossip (nil without).
	gossip       *gossiper
	gossipTopics []string                        // sorted
	topicPeers   map[string]map[peer.ID]struct{} // policy topic: subscribed peers
	attachAt     time.Time                       // when pubsub attached the router

	rng *rand.Rand // a batch's order among its messages
}

// group is a set of units of which any Need complete the node (all K
// segments, or any K of the K + K shards).
type group struct {
	ids  []string
	need int
	have int
	done bool
}

// New builds a Router for h with gossipsub parameters params, the message
// id function idFn (the same one given to pubsub with WithMessageIdFn) and
// a policy per topic. Topics without a policy get the stock router's
// behaviour. FINAL's knobs come from each policy.
func New(h host.Host, params pubsub.GossipSubParams, idFn func(*pb.Message) string, policies map[string]Policy) (*Router, error) {
	var final FinalParams
	for t, p := range policies {
		if err := p.Validate(); err != nil {
			return nil, fmt.Errorf("topic %q: %w", t, err)
		}
		if p.Pull == PullFinal {
			final = p.Final
		}
	}
	for t, p := range policies {
		if p.Pull == PullFinal && p.Final != final {
			return nil, fmt.Errorf("topic %q: every FINAL topic of a node must share FINAL's knobs", t)
		}
	}
	if idFn == nil {
		return nil, fmt.Errorf("phase router: a message id function is required")
	}
	r := &Router{
		GossipSubRouter: stockRouter(h, params),
		self:            h.ID(),
		idFn:            idFn,
		policies:        policies,
		retransmit:      params.GossipRetransmission,
		mesh:            map[string]map[peer.ID]struct{}{},
		store:           map[string]*pb.Message{},
		holders:         map[string]map[peer.ID]struct{}{},
		idw:             map[string]int{},
		served:          map[string]map[peer.ID]int{},
		groups:          map[string]*group{},
		pull:            newPuller(final),
		topicPeers:      map[string]map[peer.ID]struct{}{},
		rng:             rand.New(rand.NewPCG(peerSeed(h.ID()), 0x6261746368)),
	}
	for t, p := range policies {
		if p.Gossip {
			r.gossipTopics = append(r.gossipTopics, t)
		}
	}
	if len(r.gossipTopics) > 0 {
		slices.Sort(r.gossipTopics)
		r.gossip = newGossiper(r.self, params.Dlazy, params.GossipFactor, params.HistoryLength, params.HistoryGossip,
			params.MaxIHaveLength, params.HeartbeatInterval, params.HeartbeatInitialDelay)
	}
	return r, nil
}

// Attach notes when pubsub attached the router (its heartbeat's phase)
// and attaches the stock router.
func (r *Router) Attach(p *pubsub.PubSub) {
	r.attachAt = time.Now()
	r.GossipSubRouter.Attach(p)
}

// heartbeat runs the policy topics' gossip at a stock heartbeat instant
// and schedules the next.
func (r *Router) heartbeat(now time.Time) {
	ihaves := r.gossip.beat(r.gossipTopics, func(topic string) []peer.ID {
		var out []peer.ID
		for p := range r.topicPeers[topic] {
			if _, in := r.mesh[topic][p]; !in {
				out = append(out, p)
			}
		}
		return out
	})
	for p, ih := range ihaves {
		r.SendControl(p, &pb.ControlMessage{Ihave: ih})
	}
	r.sched.at(r.gossip.nextBeat(r.attachAt, now.Add(time.Nanosecond)), r.heartbeat)
}

// Options are the pubsub options the router needs besides the caller's:
// its mesh tracer and the stock router's connection-manager tag tracer
// (what pubsub.NewGossipSub adds for the stock router).
func (r *Router) Options() []pubsub.Option {
	return []pubsub.Option{pubsub.WithRawTracer(meshTracer{r}), r.WithDefaultTagTracer()}
}

// Bind gives the router a joined topic handle, through which its timers
// and the cell's calls reach pubsub's event loop.
func (r *Router) Bind(t *pubsub.Topic) {
	r.boundMu.Lock()
	r.bound = t
	r.boundMu.Unlock()
	r.sched.bind(t)
	if r.gossip != nil {
		// If pubsub has already stopped, there is nothing to gossip.
		_ = r.Do(func() { r.sched.at(r.gossip.nextBeat(r.attachAt, time.Now()), r.heartbeat) })
	}
}

// Close stops the router's timers.
func (r *Router) Close() { r.sched.stop() }

// Do runs f on pubsub's event loop (after Bind).
func (r *Router) Do(f func()) error {
	r.boundMu.Lock()
	t := r.bound
	r.boundMu.Unlock()
	if t == nil {
		return fmt.Errorf("phase router: not bound to a topic")
	}
	done := false
	inLoop(t, func() { f(); done = true })
	if !done {
		return fmt.Errorf("phase router: pubsub has stopped")
	}
	return nil
}

// Expect declares a completion group: the node is complete for it once it
// holds need of ids. The simulated node learns the group from the ids'
// structure or the code's descriptor; this does not change what it sends,
// only when it stops pulling (StopPull).
func (r *Router) Expect(ids []string, need int) error {
	return r.Do(func() {
		g := &group{ids: slices.Clone(ids), need: need}
		for _, id := range ids {
			r.groups[id] = g
			if _, ok := r.store[id]; ok {
				g.have++
			}
		}
		g.done = g.have >= g.need
	})
}

// Held returns the messages of the given ids the node holds (nil for the
// missing ones).
func (r *Router) Held(ids []string) ([]*pb.Message, error) {
	out := make([]*pb.Message, len(ids))
	err := r.Do(func() {
		for i, id := range ids {
			out[i] = r.store[id]
		}
	})
	return out, err
}

// id returns msg's message id.
func (r *Router) id(msg *pubsub.Message) string {
	if msg.ID != "" {
		return msg.ID
	}
	return r.idFn(msg.Message)
}

// holder records that p holds id.
func (r *Router) holder(id string, p peer.ID) {
	h := r.holders[id]
	if h == nil {
		h = map[peer.ID]struct{}{}
		r.holders[id] = h
	}
	h[p] = struct{}{}
}

// done reports whether id's group is complete at this node.
func (r *Router) done(id string) bool {
	g := r.groups[id]
	return g != nil && g.done
}

// Publish forwards a new message: the stock way on topics without a
// policy, by phase forwarding on the others. The publisher forwards its
// own messages like any relay.
//
// The r pushes go to mesh peers other than the sender, less the known
// holders as docs/references.md, "Phase forwarding", defines them
// (IDONTWANT or an announcement).
// The sender is never pushed to; with Policy.CountSource it also counts
// against r once it is a known holder, as in the study's fork, so a relay
// pushes r - 1 copies (its source's IDONTWANT arrives ahead of the
// message). Without it every relay makes about r pushes (the study's
// description read alone; in cells without the fork's heartbeat gossip
// it fits A-tuned better).
func (r *Router) Publish(msg *pubsub.Message) {
	if _, ok := r.policies[msg.GetTopic()]; !ok {
		r.GossipSubRouter.Publish(msg)
		return
	}
	if f, ok := r.forward(msg); ok {
		r.send([]forwarding{f})
	}
}

// PublishBatch publishes a batch (pubsub.PublishBatch): the stock way for
// messages on topics without a policy; on the others, as the study's fork
// does under the library's round-robin scheduler, every message's first
// push goes out, then every second push and so on, and the announcements
// after all the pushes (the order among the messages of one round is
// random, as the library's map of message ids makes it).
func (r *Router) PublishBatch(msgs []*pubsub.Message, opts *pubsub.BatchPublishOptions) {
	var stock []*pubsub.Message
	var fs []forwarding
	for _, m := range msgs {
		if _, ok := r.policies[m.GetTopic()]; !ok {
			stock = append(stock, m)
			continue
		}
		if f, ok := r.forward(m); ok {
			fs = append(fs, f)
		}
	}
	if len(stock) > 0 {
		r.GossipSubRouter.PublishBatch(stock, opts)
	}
	r.send(fs)
}

// send makes the pushes and announcements of fs in batchOrder (for one
// message: its pushes, then its announcements).
func (r *Router) send(fs []forwarding) {
	for _, st := range batchOrder(fs, r.rng.Perm) {
		f := fs[st.f]
		if st.push {
			r.SendControl(st.to, &pb.ControlMessage{}, f.msg.Message)
		} else {
			r.SendControl(st.to, f.ihave)
		}
	}
}

// batchStep is one send of a batch: forwarding f's push or announcement
// to a peer.
type batchStep struct {
	f    int
	push bool
	to   peer.ID
}

// batchOrder is the library's round-robin over message ids applied to
// the phase router's sends: round k takes the k-th send of every message
// (its pushes first, then its announcements), the messages of a round in
// the order perm draws.
func batchOrder(fs []forwarding, perm func(n int) []int) []batchStep {
	var out []batchStep
	for round := 0; ; round++ {
		sent := false
		for _, i := range perm(len(fs)) {
			f := fs[i]
			switch {
			case round < len(f.push):
				out = append(out, batchStep{i, true, f.push[round]})
			case round < len(f.push)+len(f.announce):
				out = append(out, batchStep{i, false, f.announce[round-len(f.push)]})
			default:
				continue
			}
			sent = true
		}
		if !sent {
			return out
		}
	}
}

// forwarding is what a node does with one new message of a policy topic.
type forwarding struct {
	msg            *pubsub.Message
	push, announce []peer.ID
	ihave          *pb.ControlMessage // the announcement, shared by its peers
}

// forward takes a new message of a policy topic into the node's state
// (store, pull, group, cache) and decides its pushes and announcements;
// ok is false for a message already held.
func (r *Router) forward(msg *pubsub.Message) (f forwarding, ok bool) {
	topic := msg.GetTopic()
	pol := r.policies[topic]
	id := r.id(msg)
	if _, held := r.store[id]; held {
		return f, false
	}
	r.store[id] = msg.Message
	r.pull.deliver(id)
	if g := r.groups[id]; g != nil && !g.done {
		g.have++
		if g.have >= g.need {
			g.done = true
			if pol.StopPull {
				for _, gid := range g.ids {
					r.pull.deliver(gid)
				}
			}
		}
	}
	width := pol.PushWidth
	if pol.Budget {
		width = max(width, len(r.mesh[topic])>>min(r.idw[id], 62))
	}
	if pol.Gossip {
		r.gossip.put(id, topic)
	}
	src := msg.ReceivedFrom
	push, announce := targets(id, r.mesh[topic], r.holders[id], src, width, pol.CountSource)
	for _, p := range push {
		r.holder(id, p)
	}
	if src != r.self {
		r.holder(id, src) // for IWANT answers and IHAVE, after the count
	}
	f = forwarding{msg: msg, push: push, announce: announce}
	if len(announce) > 0 {
		f.ihave = &pb.ControlMessage{Ihave: []*pb.ControlIHave{{TopicID: &topic, MessageIDs: []string{id}}}}
	}
	return f, true
}

// HandleRPC takes the control messages that concern policy topics (IHAVE
// by topic, IWANT for ids the router holds) and passes the rest, with
// GRAFT, PRUNE and IDONTWANT, to the stock router.
func (r *Router) HandleRPC(rpc *pubsub.RPC) {
	for _, sub := range rpc.GetSubscriptions() {
		t := sub.GetTopicid()
		if _, ok := r.policies[t]; !ok {
			continue
		}
		m := r.topicPeers[t]
		if m == nil {
			m = map[peer.ID]struct{}{}
			r.topicPeers[t] = m
		}
		if sub.GetSubscribe() {
			m[rpc.From()] = struct{}{}
		} else {
			delete(m, rpc.From())
		}
	}
	ctl := rpc.GetControl()
	if ctl == nil || len(r.policies) == 0 {
		r.GossipSubRouter.HandleRPC(rpc)
		return
	}
	from := rpc.From()
	now := time.Now()
	for _, d := range ctl.GetIdontwant() {
		for _, id := range d.GetMessageIDs() {
			r.holder(id, from)
			r.idw[id]++
		}
	}

	var eager []string
	keep := ctl.Ihave[:0]
	for _, ih := range ctl.GetIhave() {
		pol, ok := r.policies[ih.GetTopicID()]
		if !ok {
			keep = append(keep, ih)
			continue
		}
		for _, id := range ih.GetMessageIDs() {
			r.holder(id, from)
			if _, held := r.store[id]; held || (pol.StopPull && r.done(id)) {
				continue
			}
			switch pol.Pull {
			case PullEager:
				eager = append(eager, id)
			case PullFinal:
				if p, ok := r.pull.announce(now, id, from); ok {
					r.ask(now, id, p)
				}
			}
		}
	}
	ctl.Ihave = keep

	var answer []*pb.Message
	keepW := ctl.Iwant[:0]
	for _, iw := range ctl.GetIwant() {
		var rest []string
		for _, id := range iw.GetMessageIDs() {
			m, ok := r.store[id]
			if !ok {
				rest = append(rest, id)
				continue
			}
			if r.policies[m.GetTopic()].Gossip && !r.gossip.held[id] {
				continue // out of the message cache, as the fork's mcache
			}
			if _, has := r.holders[id][from]; has {
				continue
			}
			s := r.served[id]
			if s == nil {
				s = map[peer.ID]int{}
				r.served[id] = s
			}
			if s[from] >= r.retransmit {
				continue
			}
			s[from]++
			answer = append(answer, m)
		}
		if len(rest) > 0 {
			iw.MessageIDs = rest
			keepW = append(keepW, iw)
		}
	}
	ctl.Iwant = keepW

	if len(answer) > 0 {
		r.SendControl(from, &pb.ControlMessage{}, answer...)
	}
	if len(eager) > 0 {
		r.SendControl(from, &pb.ControlMessage{Iwant: []*pb.ControlIWant{{MessageIDs: eager}}})
	}
	r.GossipSubRouter.HandleRPC(rpc)
}

// ask sends FINAL's IWANT for id to p and arms the retry and the promise.
func (r *Router) ask(now time.Time, id string, p peer.ID) {
	r.SendControl(p, &pb.ControlMessage{Iwant: []*pb.ControlIWant{{MessageIDs: []string{id}}}})
	r.sched.at(now.Add(r.pull.p.Window), func(now time.Time) {
		if q, ok := r.pull.retry(now, id); ok {
			r.ask(now, id, q)
		}
	})
	r.sched.at(now.Add(r.pull.p.Promise), func(now time.Time) { r.pull.expire(now, id, p) })
}

// OnClosedOutboundStream forgets p's place in the meshes and its
// subscriptions, then lets the stock router remove the peer.
func (r *Router) OnClosedOutboundStream(p peer.ID) {
	for _, m := range r.mesh {
		delete(m, p)
	}
	for _, m := range r.topicPeers {
		delete(m, p)
	}
	r.GossipSubRouter.OnClosedOutboundStream(p)
}

// targets splits id's mesh for phase forwarding: push gets
// max(0, width - known holders) peers by hash rank, announce (an IHAVE)
// the rest; known holders get neither, and src (the peer the message came
// from) gets neither: with countSource it counts against width when it is
// a known holder (the fork's rule), without it never does.
func targets(id string, mesh, holders map[peer.ID]struct{}, src peer.ID, width int, countSource bool) (push, announce []peer.ID) {
	known := 0
	cands := make([]peer.ID, 0, len(mesh))
	for p := range mesh {
		if p == src {
			if _, ok := holders[p]; ok && countSource {
				known++
			}
			continue
		}
		if _, ok := holders[p]; ok {
			known++
			continue
		}
		cands = append(cands, p)
	}
	n := min(max(0, width-known), len(cands))
	sortByRank(id, cands)
	return cands[:n], cands[n:]
}

// sortByRank orders peers by a hash of (id, peer): deterministic, and
// different for every message, so pushes spread over the mesh.
func sortByRank(id string, peers []peer.ID) {
	rank := func(p peer.ID) uint64 {
		h := fnv.New64a()
		h.Write([]byte(id))
		h.Write([]byte(p))
		return h.Sum64()
	}
	slices.SortFunc(peers, func(a, b peer.ID) int {
		ra, rb := rank(a), rank(b)
		switch {
		case ra < rb:
			return -1
		case ra > rb:
			return 1
		}
		return 0
	})
}

// meshTracer keeps the router's view of its meshes. pubsub calls it on
// the event loop.
type meshTracer struct{ r *Router }

var _ pubsub.RawTracer = meshTracer{}

func (t meshTracer) Graft(p peer.ID, topic string) {
	m := t.r.mesh[topic]
	if m == nil {
		m = map[peer.ID]struct{}{}
		t.r.mesh[topic] = m
	}
	m[p] = struct{}{}
}

func (t meshTracer) Prune(p peer.ID, topic string) { delete(t.r.mesh[topic], p) }

func (meshTracer) AddPeer(peer.ID, protocol.ID)                         {}
func (meshTracer) RemovePeer(peer.ID)                                   {}
func (meshTracer) Join(string)                                          {}
func (meshTracer) Leave(string)                                         {}
func (meshTracer) ValidateMessage(*pubsub.Message)                      {}
func (meshTracer) DeliverMessage(*pubsub.Message)                       {}
func (meshTracer) RejectMessage(*pubsub.Message, string)                {}
func (meshTracer) DuplicateMessage(*pubsub.Message)                     {}
func (meshTracer) ThrottlePeer(peer.ID)                                 {}
func (meshTracer) RecvRPC(*pubsub.RPC)                                  {}
func (meshTracer) SendRPC(*pubsub.RPC, peer.ID)                         {}
func (meshTracer) DropRPC(*pubsub.RPC, peer.ID)                         {}
func (meshTracer) UndeliverableMessage(*pubsub.Message)                 {}
func (meshTracer) OnNewOutboundStream(peer.ID, protocol.ID)             {}
func (meshTracer) OnClosedOutboundStream(peer.ID)                       {}
func (meshTracer) SendRPCCompleted(*pubsub.RPC, peer.ID, time.Duration) {}
