package cell

import (
	"maps"
	"slices"
	"sync"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"google.golang.org/protobuf/proto"
)

// tracer records one node's view of a cell: its meshes on the cell's
// topics, when it completed the measured publish (held Need of its units),
// duplicates, and gossip control traffic. pubsub calls it from its own
// goroutines, hence the mutex.
type tracer struct {
	mu      sync.Mutex
	topics  map[string]int // topic: index in mesh
	mesh    []map[peer.ID]struct{}
	targets map[string]int // unit message id: unit index; nil before the publish
	need    int
	got     int
	keep    bool           // keep the data of delivered units (verification)
	data    map[int][]byte // unit index: data as delivered, when keep
	unitAt  []time.Time    // unit index: when it was delivered (zero: not yet)
	last    int            // the unit whose delivery completed the node

	delivered   bool
	deliveredAt time.Time
	dups        int
	// done, when set, is told once when the node completes the
	// measurement (the cell's watch for the last receiver).
	done func()

	tx, rx rpcCounts // RPCs sent (queued for a peer) and received
}

// rpcCounts totals the RPCs of one direction.
type rpcCounts struct {
	data, ctrl              int64 // encoded bytes: published messages, the rest
	msgs                    int   // messages carried
	ihave, iwant, idontwant int   // message ids announced, requested, declined
}

// add counts one RPC.
func (c *rpcCounts) add(rpc *pubsub.RPC) {
	var data int64
	for _, m := range rpc.GetPublish() {
		data += int64(proto.Size(m))
		c.msgs++
	}
	if p := rpc.GetPartial(); p != nil {
		data += int64(len(p.GetPartialMessage())) // variant B's parts
	}
	c.data += data
	c.ctrl += int64(proto.Size(&rpc.RPC)) - data
	ctl := rpc.GetControl()
	if ctl == nil {
		return
	}
	for _, ih := range ctl.GetIhave() {
		c.ihave += len(ih.GetMessageIDs())
	}
	for _, iw := range ctl.GetIwant() {
		c.iwant += len(iw.GetMessageIDs())
	}
	for _, idw := range ctl.GetIdontwant() {
		c.idontwant += len(idw.GetMessageIDs())
	}
}

var _ pubsub.RawTracer = (*tracer)(nil)

func newTracer(topics []string) *tracer {
	t := &tracer{topics: map[string]int{}}
	for i, name := range topics {
		t.topics[name] = i
		t.mesh = append(t.mesh, map[peer.ID]struct{}{})
	}
	return t
}

// meshPeers lists the mesh on the first topic.
func (t *tracer) meshPeers() []peer.ID {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]peer.ID, 0, len(t.mesh[0]))
	for p := range t.mesh[0] {
		out = append(out, p)
	}
	return out
}

// meshSlots is the node's mesh memberships summed over its topics.
func (t *tracer) meshSlots() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, m := range t.mesh {
		n += len(m)
	}
	return n
}

// meshRange is the smallest and largest mesh over the node's topics.
func (t *tracer) meshRange() (lo, hi int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	lo = len(t.mesh[0])
	for _, m := range t.mesh {
		lo, hi = min(lo, len(m)), max(hi, len(m))
	}
	return lo, hi
}

// isDelivered reports whether the node is complete, without the copies
// view makes (a split cell asks at every window's end).
func (t *tracer) isDelivered() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.delivered
}

// view copies the node's state for snapshot: its meshes, completion and
// tallies, with units when each unit was delivered, and with data the
// units' data it was delivered.
func (t *tracer) view(units, data bool) nodeView {
	t.mu.Lock()
	defer t.mu.Unlock()
	v := nodeView{
		meshes:    make([]int, len(t.mesh)),
		firstMesh: make([]peer.ID, 0, len(t.mesh[0])),
		delivered: t.delivered, deliveredAt: t.deliveredAt,
		dups: t.dups, tx: t.tx, rx: t.rx,
		lastUnit: t.last,
	}
	if units {
		v.unitAt = slices.Clone(t.unitAt)
	}
	for i, m := range t.mesh {
		v.meshes[i] = len(m)
	}
	for p := range t.mesh[0] {
		v.firstMesh = append(v.firstMesh, p)
	}
	if data && t.data != nil {
		v.data = maps.Clone(t.data)
	}
	return v
}

// setTargets starts a measurement, ending any earlier one (a warm-up): the
// node is complete once it holds need of ids (indexed by unit). With keep
// it keeps the units' data. done, if not nil, is called once, under the
// tracer's lock, when the node completes: it must not call back into the
// tracer.
func (t *tracer) setTargets(ids []string, need int, keep bool, done func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.done = done
	t.targets = make(map[string]int, len(ids))
	for i, id := range ids {
		t.targets[id] = i
	}
	t.need, t.keep = need, keep
	t.unitAt, t.last = make([]time.Time, len(ids)), -1
	t.data = nil
	if keep {
		t.data = map[int][]byte{}
	}
	t.got, t.dups, t.delivered, t.deliveredAt = 0, 0, false, time.Time{}
}

// resetCounts zeroes the RPC tallies: a payload warm-up's traffic is not
// the measured payload's cost (the study's harness resets its tracers
// after its warm-up the same way).
func (t *tracer) resetCounts() {
	t.mu.Lock()
	t.tx, t.rx = rpcCounts{}, rpcCounts{}
	t.mu.Unlock()
}

func (t *tracer) Graft(p peer.ID, topic string) {
	t.mu.Lock()
	if i, ok := t.topics[topic]; ok {
		t.mesh[i][p] = struct{}{}
	}
	t.mu.Unlock()
}

func (t *tracer) Prune(p peer.ID, topic string) {
	t.mu.Lock()
	if i, ok := t.topics[topic]; ok {
		delete(t.mesh[i], p)
	}
	t.mu.Unlock()
}

func (t *tracer) DeliverMessage(msg *pubsub.Message) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i, ok := t.targets[msg.ID]
	if !ok {
		return
	}
	t.got++
	now := time.Now()
	t.unitAt[i] = now
	if t.keep {
		t.data[i] = msg.GetData()
	}
	if !t.delivered && t.got >= t.need {
		t.last = i
		t.complete(now)
	}
}

// complete marks the node complete at now and tells the cell's watch; the
// caller holds the lock.
func (t *tracer) complete(now time.Time) {
	t.delivered, t.deliveredAt = true, now
	if t.done != nil {
		t.done()
	}
}

// completeAt records completion at now when a protocol other than message
// delivery decides it (variant B's parts).
func (t *tracer) completeAt(now time.Time) {
	t.mu.Lock()
	if !t.delivered && t.need > 0 {
		t.complete(now)
	}
	t.mu.Unlock()
}

func (t *tracer) DuplicateMessage(msg *pubsub.Message) {
	t.mu.Lock()
	if _, ok := t.targets[msg.ID]; ok {
		t.dups++
	}
	t.mu.Unlock()
}

// RecvRPC counts an incoming RPC.
func (t *tracer) RecvRPC(rpc *pubsub.RPC) {
	t.mu.Lock()
	t.rx.add(rpc)
	t.mu.Unlock()
}

// SendRPC counts an RPC queued for a peer.
func (t *tracer) SendRPC(rpc *pubsub.RPC, p peer.ID) {
	t.mu.Lock()
	t.tx.add(rpc)
	t.mu.Unlock()
}

func (t *tracer) OnNewOutboundStream(peer.ID, protocol.ID)             {}
func (t *tracer) OnClosedOutboundStream(peer.ID)                       {}
func (t *tracer) Join(string)                                          {}
func (t *tracer) Leave(string)                                         {}
func (t *tracer) ValidateMessage(*pubsub.Message)                      {}
func (t *tracer) RejectMessage(*pubsub.Message, string)                {}
func (t *tracer) ThrottlePeer(peer.ID)                                 {}
func (t *tracer) SendRPCCompleted(*pubsub.RPC, peer.ID, time.Duration) {}
func (t *tracer) DropRPC(*pubsub.RPC, peer.ID)                         {}
func (t *tracer) UndeliverableMessage(*pubsub.Message)                 {}
