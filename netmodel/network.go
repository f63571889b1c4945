// Package netmodel is uplink's network: nodes, their egress and ingress
// paths, per-pair latency and loss, and counters.
//
// A packet's way, each step one function in this package:
//
//	Socket.Send             socket send buffer (blocking mode: accounted)
//	  -> Path.enqueue       the node's uplink queue discipline
//	  -> Path.depart        the uplink shaper (rate, burst) lets it go
//	  -> pipe.push          loss draw, one-way latency to the receiver
//	  -> Path.enqueue       the receiver's downlink queue discipline
//	  -> Path.depart        the downlink shaper
//	  -> Socket.deliver     socket receive buffer, then the reader is woken
//
// With Config.GSO a UDP socket's datagrams of one instant and destination
// travel as one GSO unit (Socket.Send) from the uplink queue to the
// delivery, where they are split apart. With Config.NetemLimit the pipe
// drops at the tail when it holds that many packets (pipe.admit).
// With NodeConfig.CPU a node's processor (cpu.go) holds each packet sent
// for its send cost before Path.enqueue, and each datagram delivered for
// its receive cost before the reader may take it.
//
// Everything runs on a des.Sim: the network never starts goroutines. Real
// code reaches it through transports, which hold the des.Live lock.
package netmodel

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/queues"
)

// Packet is the unit the network moves; see queues.Packet.
type Packet = queues.Packet

// Header sizes added to a UDP payload on the wire.
const (
	IPv4Header = 20
	UDPHeader  = 8
	ProtoUDP   = 17
	ProtoTCP   = 6
)

// DefaultMTU is the Ethernet MTU every backend of the study uses.
const DefaultMTU = 1500

// DropReason says why the network dropped a packet.
type DropReason uint8

const (
	DropQueue   DropReason = iota // a queue discipline dropped it
	DropLoss                      // random loss on the way
	DropSockBuf                   // the receiving socket's buffer was full
	DropMTU                       // larger than the MTU
	DropNoPort                    // no socket bound at the destination
	DropNetem                     // the pipe held Config.NetemLimit packets (netem's tail drop)
	NumDropReasons
)

var dropNames = [NumDropReasons]string{"queue", "loss", "sockbuf", "mtu", "noport", "netem"}

func (r DropReason) String() string {
	if r < NumDropReasons {
		return dropNames[r]
	}
	return fmt.Sprintf("drop(%d)", uint8(r))
}

// Counters are a node's traffic counters. Sent counts packets that left the
// node's uplink shaper; Recv counts packets put in a socket's receive
// buffer. Loss is counted at the sender, every other drop where it happens
// (a netem drop at the receiver, whose pipe it is). A GSO unit counts as
// its datagrams, and its bytes as the sum of theirs. CrossedPackets counts
// the sent packets bound for a node of another partition (a Crossing).
type Counters struct {
	SentPackets, SentBytes uint64
	RecvPackets, RecvBytes uint64
	CrossedPackets         uint64
	Drops                  [NumDropReasons]uint64
}

// Config is the network-wide configuration.
type Config struct {
	MTU     int          // bytes; 0: DefaultMTU
	Latency LatencyModel // one-way latency per ordered pair; required
	// Loss is the probability that a packet is lost on its way, drawn
	// independently per packet and per direction; LossFunc, when set,
	// overrides it per ordered pair.
	Loss     float64
	LossFunc func(from, to int) float64
	Seed     uint64 // derives the loss stream

	// SockBufMax caps a requested socket buffer size before it is doubled
	// (Linux's rmem_max / wmem_max, 212 992 on stock kernels); 0: no cap
	// below the 256 MiB ceiling (Shadow).
	SockBufMax int
	// SndBufMax, when positive, caps send buffer requests alone, below
	// SockBufMax (Linux's wmem_max set apart from rmem_max): section 5's
	// intervention caps quic-go's UDP send buffer and leaves the receive
	// buffer as it was.
	SndBufMax int
	// RecvSlots, when positive, also limits every receive buffer to that
	// many datagrams. With RecvBlock a full receive buffer holds the
	// downlink back instead of dropping (simnet's 32-slot channel).
	RecvSlots int
	RecvBlock bool
	// SocketIDs, when set, hands out the socket ids of this network and of
	// the other partitions it shares them with (see Split).
	SocketIDs *SocketIDs
	// GSO makes the datagrams a UDP socket sends to one destination in one
	// instant travel as GSO units (Socket.Send): one packet for the queue
	// disciplines, the shapers, loss and NetemLimit, split back into its
	// datagrams at delivery.
	GSO bool
	// NetemLimit, when positive, is the packets each latency pipe (one per
	// ordered pair of nodes, as netem per source address on the receiver's
	// port) holds: a packet that leaves an uplink while that many earlier
	// ones of the pair are still on their way is dropped (DropNetem,
	// counted at the receiver). 0: unlimited.
	NetemLimit int
	// NetemShared makes the two directions of a pair share one netem
	// queue of NetemLimit packets, as on loopback, where both directions
	// pass lo's one root qdisc (dev_queue_xmit on the same device). It
	// needs NetemLimit, and one partition: a pair's two directions enter
	// their pipes in different partitions.
	NetemShared bool
}

// LinkConfig is one direction of a node's access link: a queue discipline
// and a shaper.
type LinkConfig struct {
	Qdisc  queues.Qdisc // nil: an unlimited FIFO
	Shaper ShaperConfig
}

// NodeConfig configures a node's uplink (egress) and downlink (ingress).
// UpHost, when set, puts a host queue in front of the uplink: packets go
// through the host's qdisc and its line-rate shaper, then through the
// access device's queue (Up) at the access rate, a chain neither Shadow
// nor the harness can model. Socket send-buffer space comes back when a
// packet leaves the host stage.
//
// CPU, when not off, gives the node a processor that spends that time on
// every packet it receives and sends (see cpu): a datagram becomes
// readable, and a sent packet reaches the uplink, when its processing
// ends, one packet at a time.
type NodeConfig struct {
	Up, Down LinkConfig
	UpHost   *LinkConfig
	CPU      des.CPUSpec
}

// Network is a set of nodes on one simulation.
type Network struct {
	sim     *des.Sim
	cfg     Config
	mtu     int
	nodes   []*Node
	socks   []*Socket
	pipes   map[uint64]*pipe
	netems  map[uint64]*netemQueue
	lossKey uint64
	free    []*Packet
	// freeUnits are empty GSO units (Packet.Segs not nil), kept apart
	// from free, whose packets have no Segs.
	freeUnits []*Packet
	outbox    []Crossing // packets bound for other partitions (TakeCrossings)
}

// New returns an empty network on sim.
func New(sim *des.Sim, cfg Config) (*Network, error) {
	if cfg.Latency == nil {
		return nil, errors.New("netmodel: no latency model; set Config.Latency (e.g. a fixed latency)")
	}
	if cfg.MTU == 0 {
		cfg.MTU = DefaultMTU
	}
	if cfg.MTU < 576 || cfg.MTU > 65535 {
		return nil, fmt.Errorf("netmodel: MTU %d out of range [576, 65535]", cfg.MTU)
	}
	if cfg.SockBufMax < 0 || cfg.SndBufMax < 0 || cfg.RecvSlots < 0 {
		return nil, fmt.Errorf("netmodel: negative socket buffer cap (%d, send %d) or receive slots %d", cfg.SockBufMax, cfg.SndBufMax, cfg.RecvSlots)
	}
	if cfg.NetemLimit < 0 {
		return nil, fmt.Errorf("netmodel: negative netem limit %d; use 0 for unlimited", cfg.NetemLimit)
	}
	if cfg.NetemShared && cfg.NetemLimit == 0 {
		return nil, errors.New("netmodel: NetemShared without NetemLimit: a shared netem queue needs a limit")
	}
	if cfg.RecvBlock && cfg.RecvSlots == 0 {
		return nil, errors.New("netmodel: RecvBlock needs RecvSlots (the number of datagrams a socket holds before it blocks the link)")
	}
	if cfg.Loss < 0 || cfg.Loss >= 1 {
		return nil, fmt.Errorf("netmodel: loss %g out of range [0, 1)", cfg.Loss)
	}
	if err := checkLatencyModel(cfg.Latency); err != nil {
		return nil, fmt.Errorf("netmodel: Config.Latency: %w", err)
	}
	if m, ok := cfg.Latency.(MinLatencyModel); ok {
		sim.SetLookahead(m.MinLatency())
	}
	return &Network{
		sim:     sim,
		cfg:     cfg,
		mtu:     cfg.MTU,
		pipes:   make(map[uint64]*pipe),
		netems:  make(map[uint64]*netemQueue),
		lossKey: des.NewStreams(cfg.Seed).Stream("netmodel/loss").Uint64(),
	}, nil
}

// checkLatencyModel checks the parameters of the latency models of this
// package against [0, des.MaxLatency]: a FixedLatency or UniformLatency
// built without LatencyModelByName, or a LatencyMatrix filled in code.
func checkLatencyModel(m LatencyModel) error {
	switch m := m.(type) {
	case FixedLatency:
		if m < 0 || des.Time(m) > des.MaxLatency {
			return fmt.Errorf("fixed latency %v: want 0 to %v (des.MaxLatency)", des.Time(m), des.MaxLatency)
		}
	case UniformLatency:
		if _, err := newUniformLatency(m.Lo, m.Hi, m.Seed); err != nil {
			return err
		}
	case *LatencyMatrix:
		return m.check(m.N)
	}
	return nil
}

// Sim is the simulation the network runs on.
func (n *Network) Sim() *des.Sim { return n.sim }

// MTU is the network's MTU in bytes.
func (n *Network) MTU() int { return n.mtu }

// Nodes are the network's nodes, by index.
func (n *Network) Nodes() []*Node { return n.nodes }

// Node returns node i.
func (n *Network) Node(i int) *Node { return n.nodes[i] }

// AddNode adds a node with the next index and returns it.
func (n *Network) AddNode(c NodeConfig) (*Node, error) {
	nd := &Node{net: n, id: len(n.nodes), socks: make(map[uint16]*Socket), nextPort: 49152}
	var err error
	if nd.up, err = n.newPath(nd, c.Up, nd.departUp); err != nil {
		return nil, fmt.Errorf("node %d uplink: %w", nd.id, err)
	}
	nd.up.egress = true
	nd.first = nd.up
	if c.UpHost != nil {
		if nd.host, err = n.newPath(nd, *c.UpHost, nd.departHost); err != nil {
			return nil, fmt.Errorf("node %d host queue: %w", nd.id, err)
		}
		nd.host.egress = true
		nd.first = nd.host
	}
	nd.first.freesSndbuf = true
	if !c.CPU.Off() {
		if err := checkCPU(c.CPU); err != nil {
			return nil, fmt.Errorf("node %d cpu: %w", nd.id, err)
		}
		nd.cpu = newCPU(nd, c.CPU)
	}
	if nd.down, err = n.newPath(nd, c.Down, nd.deliver); err != nil {
		return nil, fmt.Errorf("node %d downlink: %w", nd.id, err)
	}
	n.nodes = append(n.nodes, nd)
	return nd, nil
}

// NodeAddr is node i's IPv4 address: 10.0.0.0 plus i+1.
func NodeAddr(i int) netip.Addr {
	v := uint32(10<<24) + uint32(i) + 1
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// NodeOf is the index of the node with address a, or -1.
func (n *Network) NodeOf(a netip.Addr) int {
	a = a.Unmap()
	if !a.Is4() {
		return -1
	}
	b := a.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	i := int(v) - (10 << 24) - 1
	if i < 0 || i >= len(n.nodes) {
		return -1
	}
	return i
}

// getPacket takes a packet from the pool with a payload of size bytes.
func (n *Network) getPacket(size int) *Packet {
	var p *Packet
	if k := len(n.free); k > 0 {
		p = n.free[k-1]
		n.free = n.free[:k-1]
	} else {
		p = &Packet{}
	}
	if cap(p.Payload) < size {
		p.Payload = make([]byte, size, max(size, n.mtu))
	}
	p.Payload = p.Payload[:size]
	return p
}

// putPacket returns p to the pool.
func (n *Network) putPacket(p *Packet) {
	payload := p.Payload[:0]
	*p = Packet{Payload: payload}
	n.free = append(n.free, p)
}

// getUnit takes an empty GSO unit from the pool.
func (n *Network) getUnit() *Packet {
	if k := len(n.freeUnits); k > 0 {
		u := n.freeUnits[k-1]
		n.freeUnits = n.freeUnits[:k-1]
		return u
	}
	return &Packet{Segs: make([]*Packet, 0, 16)}
}

// putUnit returns a GSO unit and the datagrams it still holds to the pools.
func (n *Network) putUnit(u *Packet) {
	for _, d := range u.Segs {
		n.putPacket(d)
	}
	clear(u.Segs)
	*u = Packet{Segs: u.Segs[:0]}
	n.freeUnits = append(n.freeUnits, u)
}

// Node is a host with an uplink, a downlink and sockets.
type Node struct {
	net      *Network
	id       int
	up, down *Path
	host     *Path // the host stage in front of up, or nil
	first    *Path // where sockets enqueue: host if set, else up
	cpu      *cpu  // NodeConfig.CPU; nil: off
	blocked  int   // sockets whose writers wait for send-buffer space
	socks    map[uint16]*Socket
	nextPort uint16
	prio     uint64                                  // the last packet priority taken (Socket.Priorities)
	unbound  map[uint8]func(p *Packet, now des.Time) // see HandleUnbound
	remote   bool                                    // lives in another partition (AddRemoteNode)
	rates    [2]int64                                // a remote node's uplink and downlink rates (LinkRates)
	tap      Tap                                     // SetTap; nil: none
	Counters Counters
}

// ID is the node's index.
func (nd *Node) ID() int { return nd.id }

// Addr is the node's IPv4 address.
func (nd *Node) Addr() netip.Addr { return NodeAddr(nd.id) }

// Up and Down are the node's access uplink and downlink.
func (nd *Node) Up() *Path   { return nd.up }
func (nd *Node) Down() *Path { return nd.down }

// Host is the host queue stage in front of the uplink, or nil.
func (nd *Node) Host() *Path { return nd.host }

// departHost runs when a packet has left the host stage: the socket gets
// its send-buffer space back and the packet joins the access queue.
func (nd *Node) departHost(p *Packet, now des.Time) bool {
	nd.net.sndbufFreed(p)
	nd.up.enqueue(p, now)
	return true
}

// sndbufFreed returns p's send-buffer space to its socket.
func (n *Network) sndbufFreed(p *Packet) {
	if int(p.Flow.Sock) < len(n.socks) && n.socks[p.Flow.Sock] != nil {
		n.socks[p.Flow.Sock].sent(p.Len)
	}
}

func (nd *Node) drop(p *Packet, r DropReason) {
	if p.Segs != nil {
		nd.Counters.Drops[r] += uint64(len(p.Segs))
		nd.net.putUnit(p)
		return
	}
	nd.Counters.Drops[r]++
	nd.net.putPacket(p)
}

// departUp runs when a packet has left the node's uplink shaper: the socket
// gets its send-buffer space back, loss is drawn, and the packet starts its
// one-way trip.
func (nd *Node) departUp(p *Packet, now des.Time) bool {
	n := nd.net
	if nd.host == nil {
		n.sndbufFreed(p)
	}
	nd.Counters.SentBytes += uint64(p.Len)
	if p.Segs == nil {
		nd.Counters.SentPackets++
		if nd.tap != nil {
			nd.tap(p, now, true)
		}
	} else {
		nd.Counters.SentPackets += uint64(len(p.Segs))
		if nd.tap != nil {
			for _, d := range p.Segs {
				nd.tap(d, now, true)
			}
		}
	}
	from, to := nd.id, int(p.Flow.DstNode)
	loss := n.cfg.Loss
	if n.cfg.LossFunc != nil {
		loss = n.cfg.LossFunc(from, to)
	}
	if loss > 0 && n.lost(p) < loss {
		nd.drop(p, DropLoss)
		return true
	}
	lat := n.cfg.Latency.Latency(from, to)
	if lat < 0 || lat > des.Never-now {
		// The models of this package and the draws ReadDraw accepts keep
		// every latency within [0, des.MaxLatency], and New checks the
		// parameters of the ones it knows; a model written elsewhere that
		// does not would make the arrival instant precede now or wrap past
		// des.Never. Stop here, naming the pair, before the event queue
		// sees the instant.
		panic(fmt.Sprintf("netmodel: latency model %T gives %v from node %d to node %d at %v: want 0 to %v", n.cfg.Latency, lat, from, to, now, des.MaxLatency))
	}
	if n.nodes[to].remote {
		nd.Counters.CrossedPackets += uint64(max(1, len(p.Segs)))
		n.outbox = append(n.outbox, Crossing{At: now + lat, Sent: now, From: from, To: to, P: p})
		return true
	}
	n.pipe(from, to).push(p, now+lat, now)
	return true
}

// lost draws the loss variate of p: a hash of the seed, the sending socket
// and p's sequence number on it, uniform in [0, 1). Tying the draw to the
// packet's identity rather than to the order of all departures keeps two
// runs of one seed losing the same packets even when real code interleaves
// its sockets' sends differently. A GSO unit carries its first datagram's
// sequence number and is lost or not as a whole.
func (n *Network) lost(p *Packet) float64 {
	h := des.Mix64(n.lossKey ^ des.Mix64(uint64(p.Flow.Sock)<<40^p.Seq))
	return float64(h>>11) * 0x1p-53
}

// deliver runs when a packet has left the node's downlink shaper. It
// reports false when the socket's receive buffer is full and blocks the
// link (Config.RecvBlock): the path then holds the packet. A GSO unit is
// split here: its datagrams are delivered in order at this instant; one
// that a full socket holds back stays in the unit with those after it.
func (nd *Node) deliver(p *Packet, now des.Time) bool {
	if p.Segs != nil {
		return nd.deliverUnit(p, now)
	}
	s := nd.socks[p.Flow.DstPort]
	if s == nil || s.closed || s.proto != p.Flow.Proto {
		if fn := nd.unbound[p.Flow.Proto]; fn != nil {
			fn(p, now)
		}
		nd.drop(p, DropNoPort)
		return true
	}
	return s.deliver(p, now)
}

// deliverUnit delivers a GSO unit's datagrams, in order.
func (nd *Node) deliverUnit(u *Packet, now des.Time) bool {
	for i, d := range u.Segs {
		if !nd.deliver(d, now) {
			k := copy(u.Segs, u.Segs[i:])
			clear(u.Segs[k:])
			u.Segs = u.Segs[:k]
			return false
		}
	}
	u.Segs = u.Segs[:0]
	nd.net.putUnit(u)
	return true
}
