package cell

import (
	"sync"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"google.golang.org/protobuf/proto"
)

// tracer records one node's view of a cell: its mesh on the cell's topic,
// when the measured message was delivered, duplicates, and gossip control
// traffic. pubsub calls it from its own goroutines, hence the mutex.
type tracer struct {
	mu     sync.Mutex
	topic  string
	target string // message id of the measured publish; "" before it
	mesh   map[peer.ID]struct{}

	delivered   bool
	deliveredAt time.Time
	dups        int

	tx, rx rpcCounts // RPCs sent (queued for a peer) and received
}

// rpcCounts totals the RPCs of one direction.
type rpcCounts struct {
	data, ctrl              int64 // encoded bytes: published messages, the rest
	msgs                    int   // whole messages carried
	ihave, iwant, idontwant int   // message ids announced, requested, declined
}

// add counts one RPC.
func (c *rpcCounts) add(rpc *pubsub.RPC) {
	var data int64
	for _, m := range rpc.GetPublish() {
		data += int64(proto.Size(m))
		c.msgs++
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

func newTracer(topic string) *tracer {
	return &tracer{topic: topic, mesh: make(map[peer.ID]struct{})}
}

func (t *tracer) meshSize() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.mesh)
}

func (t *tracer) setTarget(id string) {
	t.mu.Lock()
	t.target = id
	t.mu.Unlock()
}

func (t *tracer) Graft(p peer.ID, topic string) {
	if topic != t.topic {
		return
	}
	t.mu.Lock()
	t.mesh[p] = struct{}{}
	t.mu.Unlock()
}

func (t *tracer) Prune(p peer.ID, topic string) {
	if topic != t.topic {
		return
	}
	t.mu.Lock()
	delete(t.mesh, p)
	t.mu.Unlock()
}

func (t *tracer) DeliverMessage(msg *pubsub.Message) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.delivered && t.target != "" && msg.ID == t.target {
		t.delivered = true
		t.deliveredAt = time.Now()
	}
}

func (t *tracer) DuplicateMessage(msg *pubsub.Message) {
	t.mu.Lock()
	if t.target != "" && msg.ID == t.target {
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
