package simnet

import (
	"container/heap"
	"errors"
	"hash/maphash"
	"net"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	sn "github.com/marcopolo/simnet"
)

// Drop counting. simnet v0.0.7 counts nothing of its queues: CoDel's drop
// (codel.go, coDelQueue.drop) is an empty function, and a caller cannot
// put a link of its own in an endpoint's path (Simnet.NewEndpoint wires
// the SimConn to its Simlink, whose drivers are unexported). The tracker
// counts drops from the three points of the path a caller sees:
//
//   - a node's writes, in its Conn's WriteTo (into its uplink);
//   - the router's LatencyFunc, called for each packet as it leaves an
//     uplink, in the order the packets left it;
//   - a node's reads, in its Conn's ReadFrom (out of its downlink and the
//     32-slot receive channel behind it).
//
// Every packet of one flow (one sender to one receiver: one address pair)
// keeps its order through both links: fq_codel hashes the (to, from) pair,
// so a flow stays in one CoDel FIFO, and the router delivers a pair's
// packets, which share one latency, in the order they left the uplink. The
// tracker identifies a packet by a hash of its bytes (quic-go's packets are
// encrypted under distinct packet numbers: no two are equal), at the router
// from the packet's payload read by reflection (Packet.buf, unexported), and
// keeps each flow's packets in write order. A packet is counted as dropped
// when a later packet of its flow passes the point it never reached: by the
// uplink (it left no uplink) or by the reader (it left the uplink and was
// never read). That is when the evidence of the drop arrives, at or after
// the drop itself; a packet dropped after its flow's last packet to pass is
// not counted until another one passes, and is indistinguishable until then
// from one still in the link. The links' enqueued, dequeued and dropped
// counts leave that remainder (a backlog and any such drops) apart.

// flowState is a packet's progress along its flow.
type flowState uint8

const (
	written  flowState = iota // into the sender's uplink
	routed                    // out of the uplink, to the router
	read                      // read by the receiver
	upDrop                    // dropped by the uplink
	downDrop                  // dropped by the downlink
	void                      // not tracked (a failed write, an equal packet)
)

type flowEntry struct {
	h  uint64
	st flowState
}

// flow is one sender-receiver pair's packets in write order, from the
// first not yet resolved (read or dropped with a read packet behind it).
type flow struct {
	ents   []flowEntry
	base   int            // index of ents[0] among the flow's packets
	idx    map[uint64]int // hash: index
	routed int            // the index after the last packet seen leaving the uplink
	read   int            // the index after the last packet read
}

func (f *flow) at(k int) *flowEntry { return &f.ents[k-f.base] }

// trim forgets the packets before the last one read: each is read or
// dropped.
func (f *flow) trim() {
	k := f.read - f.base
	for _, e := range f.ents[:k] {
		if i, ok := f.idx[e.h]; ok && i < f.read {
			delete(f.idx, e.h)
		}
	}
	f.ents = append(f.ents[:0], f.ents[k:]...)
	f.base = f.read
}

// source is one sending node's flows; its mutex guards them.
type source struct {
	mu    sync.Mutex
	flows map[int]*flow // receiver: flow
}

// linkCount is one link direction's counts.
type linkCount struct {
	in, out, dropped atomic.Uint64
}

// handoff is a packet the router hands to a downlink at an instant.
type handoff struct {
	at time.Time
	to int
}

type handoffs []handoff

func (a handoffs) Len() int           { return len(a) }
func (a handoffs) Less(i, j int) bool { return a[i].at.Before(a[j].at) }
func (a handoffs) Swap(i, j int)      { a[i], a[j] = a[j], a[i] }
func (a *handoffs) Push(x any)        { *a = append(*a, x.(handoff)) }
func (a *handoffs) Pop() any {
	old := *a
	x := old[len(old)-1]
	*a = old[:len(old)-1]
	return x
}

// tracker counts the packets in, out of and dropped by every link.
type tracker struct {
	port      int
	seed      maphash.Seed
	srcs      []source
	up, down  []linkCount
	noport    []atomic.Uint64 // per sender: packets to an address with no endpoint
	unmatched atomic.Uint64   // packets seen at the router or a reader that matched no write

	amu     sync.Mutex
	pending handoffs // packets on their way to a downlink, by instant
}

// bufField is the index of simnet's Packet.buf, the datagram's bytes.
var bufField = func() int {
	f, ok := reflect.TypeFor[sn.Packet]().FieldByName("buf")
	if !ok || f.Type != reflect.TypeFor[[]byte]() {
		return -1
	}
	return f.Index[0]
}()

// errLayout: simnet's Packet is not v0.0.7's.
var errLayout = errors.New("simnet: Packet has no buf []byte field (simnet v0.0.7's): drops cannot be counted")

func newTracker(n int, port uint16) (*tracker, error) {
	if bufField < 0 {
		return nil, errLayout
	}
	t := &tracker{
		port: int(port), seed: maphash.MakeSeed(),
		srcs: make([]source, n), up: make([]linkCount, n), down: make([]linkCount, n),
		noport: make([]atomic.Uint64, n),
	}
	for i := range t.srcs {
		t.srcs[i].flows = map[int]*flow{}
	}
	return t, nil
}

// endpoint is the node whose endpoint simnet's router finds at a, or -1:
// the router keys on the address bytes as given (16-byte form) and the
// port.
func (t *tracker) endpoint(a net.Addr) int {
	u, ok := a.(*net.UDPAddr)
	if !ok || len(u.IP) != net.IPv6len || u.Port != t.port {
		return -1
	}
	j := NodeOf(u)
	if j >= len(t.srcs) {
		return -1
	}
	return j
}

// token is a write's place in its flow.
type token struct{ from, to, k int }

// write records node i's write of b to a, before it enters the uplink.
func (t *tracker) write(i int, b []byte, a net.Addr) token {
	j := t.endpoint(a)
	if j < 0 {
		return token{i, -1, 0}
	}
	h := maphash.Bytes(t.seed, b)
	s := &t.srcs[i]
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.flows[j]
	if f == nil {
		f = &flow{idx: map[uint64]int{}}
		s.flows[j] = f
	}
	k := f.base + len(f.ents)
	e := flowEntry{h: h, st: written}
	if _, dup := f.idx[h]; dup {
		e.st = void // two equal packets in flight: neither is told apart
	} else {
		f.idx[h] = k
	}
	f.ents = append(f.ents, e)
	return token{i, j, k}
}

// wrote ends a write: err is the uplink's answer.
func (t *tracker) wrote(tk token, err error) {
	if err == nil {
		t.up[tk.from].in.Add(1)
		return
	}
	if tk.to < 0 {
		return
	}
	s := &t.srcs[tk.from]
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.flows[tk.to]
	if tk.k < f.base {
		return
	}
	e := f.at(tk.k)
	if i, ok := f.idx[e.h]; ok && i == tk.k {
		delete(f.idx, e.h)
	}
	e.st = void
}

// left records a packet leaving node i's uplink for the router, which hands
// it to its receiver's downlink after lat.
func (t *tracker) left(p *sn.Packet, i int, lat time.Duration) {
	t.up[i].out.Add(1)
	j := t.endpoint(p.To)
	if j < 0 {
		t.noport[i].Add(1)
		return
	}
	b := reflect.ValueOf(p).Elem().Field(bufField).Bytes()
	h := maphash.Bytes(t.seed, b)
	s := &t.srcs[i]
	s.mu.Lock()
	f := s.flows[j]
	k, ok := -1, false
	if f != nil {
		k, ok = f.idx[h]
	}
	switch {
	case !ok:
		t.unmatched.Add(1)
	case k < f.routed:
		if e := f.at(k); e.st == upDrop {
			// Counted as dropped when a later packet passed; it was
			// only late.
			e.st = routed
			t.up[i].dropped.Add(^uint64(0))
		} else {
			t.unmatched.Add(1)
		}
	default:
		for m := f.routed; m < k; m++ {
			if e := f.at(m); e.st == written {
				e.st = upDrop
				t.up[i].dropped.Add(1)
			}
		}
		f.at(k).st = routed
		f.routed = k + 1
	}
	s.mu.Unlock()
	t.amu.Lock()
	heap.Push(&t.pending, handoff{time.Now().Add(lat), j})
	t.amu.Unlock()
}

// readBy records node j's read of b from a.
func (t *tracker) readBy(j int, b []byte, a net.Addr) {
	i := NodeOf(a)
	if i < 0 || i >= len(t.srcs) {
		t.unmatched.Add(1)
		return
	}
	h := maphash.Bytes(t.seed, b)
	s := &t.srcs[i]
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.flows[j]
	k, ok := -1, false
	if f != nil {
		k, ok = f.idx[h]
	}
	switch {
	case !ok:
		t.unmatched.Add(1)
	case k < f.read:
		if e := f.at(k); e.st == downDrop {
			e.st = read
			t.down[j].dropped.Add(^uint64(0))
		} else {
			t.unmatched.Add(1)
		}
	default:
		for m := f.read; m < k; m++ {
			switch e := f.at(m); e.st {
			case routed:
				e.st = downDrop
				t.down[j].dropped.Add(1)
			case written:
				e.st = upDrop
				t.up[i].dropped.Add(1)
			}
		}
		f.at(k).st = read
		f.read = k + 1
		f.trim()
	}
}

// arrived counts the packets the router has handed to their downlinks by
// now.
func (t *tracker) arrived() {
	now := time.Now()
	t.amu.Lock()
	defer t.amu.Unlock()
	for len(t.pending) > 0 && !t.pending[0].at.After(now) {
		a := heap.Pop(&t.pending).(handoff)
		t.down[a.to].in.Add(1)
	}
}
