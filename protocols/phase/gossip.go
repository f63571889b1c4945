package phase

import (
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"time"

	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/peer"
)

// gossiper is the heartbeat gossip of the policy topics (Policy.Gossip):
// the study's fork puts every message it forwards into gossipsub's message
// cache (its rpcs calls mcache.Put for every topic), so the stock
// heartbeat's emitGossip announces held segments to non-mesh peers and
// answers their IWANTs from the cache. Router never reaches that path for
// a policy topic (go-libp2p-pubsub exports no way to fill the cache
// without forwarding), so gossiper keeps a cache of the same shape and
// runs the same emission at the stock heartbeat's instants:
//
//   - the cache is HistoryLength windows of ids; every heartbeat shifts a
//     fresh window in and drops the oldest, whose ids stop being served;
//   - a heartbeat announces, per topic, the ids of the newest HistoryGossip
//     windows in one IHAVE to max(Dlazy, GossipFactor × candidates) of the
//     topic's subscribed peers outside its mesh, chosen at random, the ids
//     shuffled and cut at MaxIHaveLength; a peer's IHAVEs of all topics go
//     in one RPC, as the stock heartbeat flushes them.
//
// Ties with the stock heartbeat at the same instant are in no set order.
// The fork's cache also serves IWANTs for the policy topics; Router does,
// while the id is in this cache. All of it runs on pubsub's event loop.
type gossiper struct {
	dlazy      int
	factor     float64
	history    int // windows served (HistoryLength)
	announce   int // windows announced (HistoryGossip)
	maxIHave   int // MaxIHaveLength
	interval   time.Duration
	firstDelay time.Duration

	windows [][]cached      // newest first
	held    map[string]bool // ids in the cache
	rng     *rand.Rand
}

// cached is one id in a cache window.
type cached struct {
	id, topic string
}

func newGossiper(self peer.ID, dlazy int, factor float64, history, announce, maxIHave int, interval, firstDelay time.Duration) *gossiper {
	seed := peerSeed(self)
	return &gossiper{
		dlazy: dlazy, factor: factor, history: max(history, 1), announce: announce, maxIHave: maxIHave,
		interval: interval, firstDelay: firstDelay,
		windows: make([][]cached, 1),
		held:    map[string]bool{},
		rng:     rand.New(rand.NewPCG(seed, 0x676f73736970)),
	}
}

// peerSeed is a random stream's seed for the node with id self, so that
// its draws are the same on every run of a cell.
func peerSeed(self peer.ID) uint64 {
	h := fnv.New64a()
	h.Write([]byte(self))
	return h.Sum64()
}

// put adds id of topic to the newest window.
func (g *gossiper) put(id, topic string) {
	if g.held[id] {
		return
	}
	g.held[id] = true
	g.windows[0] = append(g.windows[0], cached{id, topic})
}

// nextBeat is the first heartbeat instant at or after now of a router
// attached at attachAt (the stock heartbeat: after its initial delay, then
// every interval).
func (g *gossiper) nextBeat(attachAt, now time.Time) time.Time {
	first := attachAt.Add(g.firstDelay)
	if !now.After(first) {
		return first
	}
	k := (now.Sub(first) + g.interval - 1) / g.interval
	return first.Add(k * g.interval)
}

// beat builds one heartbeat's IHAVEs: for each topic in topics (the
// policy topics with gossip, in a fixed order), the announced ids to
// random candidates (cands gives a topic's subscribed non-mesh peers).
// It then shifts the cache.
func (g *gossiper) beat(topics []string, cands func(topic string) []peer.ID) map[peer.ID][]*pb.ControlIHave {
	out := map[peer.ID][]*pb.ControlIHave{}
	for _, topic := range topics {
		var ids []string
		for _, w := range g.windows[:min(g.announce, len(g.windows))] {
			for _, c := range w {
				if c.topic == topic {
					ids = append(ids, c.id)
				}
			}
		}
		if len(ids) == 0 {
			continue
		}
		peers := cands(topic)
		slices.Sort(peers) // a fixed order before the seeded shuffle
		target := max(g.dlazy, int(g.factor*float64(len(peers))))
		if target < len(peers) {
			g.rng.Shuffle(len(peers), func(i, j int) { peers[i], peers[j] = peers[j], peers[i] })
			peers = peers[:target]
		}
		g.rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		for _, p := range peers {
			pids := ids
			if len(ids) > g.maxIHave {
				pids = slices.Clone(ids)
				g.rng.Shuffle(len(pids), func(i, j int) { pids[i], pids[j] = pids[j], pids[i] })
				pids = pids[:g.maxIHave]
			}
			t := topic
			out[p] = append(out[p], &pb.ControlIHave{TopicID: &t, MessageIDs: pids})
		}
	}
	g.shift()
	return out
}

// shift starts a new window and drops the oldest beyond the history.
func (g *gossiper) shift() {
	g.windows = append([][]cached{nil}, g.windows...)
	if len(g.windows) > g.history {
		for _, c := range g.windows[g.history] {
			delete(g.held, c.id)
		}
		g.windows = g.windows[:g.history]
	}
}
