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

	ihaveTx, ihaveRx         int // message ids announced
	iwantTx, iwantRx         int // message ids requested
	idontwantTx, idontwantRx int // message ids declined
	dataTx, dataRx           int64
	ctrlTx, ctrlRx           int64
	msgTx, msgRx             int // whole messages carried in RPCs
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

// rpcSizes splits an RPC's encoded size into published data and the rest
// (control, subscriptions, framing).
func rpcSizes(rpc *pubsub.RPC) (data, ctrl int64, msgs int) {
	for _, m := range rpc.GetPublish() {
		data += int64(proto.Size(m))
		msgs++
	}
	return data, int64(proto.Size(&rpc.RPC)) - data, msgs
}

func controlCounts(rpc *pubsub.RPC) (ihave, iwant, idontwant int) {
	c := rpc.GetControl()
	if c == nil {
		return
	}
	for _, ih := range c.GetIhave() {
		ihave += len(ih.GetMessageIDs())
	}
	for _, iw := range c.GetIwant() {
		iwant += len(iw.GetMessageIDs())
	}
	for _, idw := range c.GetIdontwant() {
		idontwant += len(idw.GetMessageIDs())
	}
	return
}

func (t *tracer) RecvRPC(rpc *pubsub.RPC) {
	d, c, m := rpcSizes(rpc)
	ih, iw, idw := controlCounts(rpc)
	t.mu.Lock()
	t.dataRx += d
	t.ctrlRx += c
	t.msgRx += m
	t.ihaveRx += ih
	t.iwantRx += iw
	t.idontwantRx += idw
	t.mu.Unlock()
}

func (t *tracer) SendRPC(rpc *pubsub.RPC, p peer.ID) {
	d, c, m := rpcSizes(rpc)
	ih, iw, idw := controlCounts(rpc)
	t.mu.Lock()
	t.dataTx += d
	t.ctrlTx += c
	t.msgTx += m
	t.ihaveTx += ih
	t.iwantTx += iw
	t.idontwantTx += idw
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
