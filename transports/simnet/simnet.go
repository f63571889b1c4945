// Package simnet runs a node set on github.com/marcopolo/simnet v0.0.7, the
// network of the study's in-process harness (go-libp2p's x/simlibp2p builds
// its hosts the same way), as a live reference backend beside uplink's own
// model: the same nodes, rates and per-pair latencies, with simnet's own
// links, queues and router doing the delivery.
//
// New builds one simnet endpoint (a *simnet.SimConn, a net.PacketConn) per
// node at the node's virtual address, netmodel.NodeAddr(i), on one UDP port
// for every node, with the node's uplink and downlink rates. The port and
// the address are the node's only socket: simnet gives every endpoint a link
// of its own (Simnet.NewEndpoint), so a second socket on a node would get a
// second pair of access links rather than share the node's.
//
// What simnet v0.0.7 does with a datagram (file and function in simnet's
// source):
//
//   - SimConn.WriteTo (simconn.go) hands a copy to the endpoint's uplink
//     driver over a 32-slot channel that the driver's goroutine drains at
//     once: a write never waits on virtual time.
//   - The uplink (simlink.go, linkDriver) is an FQ-CoDel (fq_codel.go,
//     fqCoDel: 128 buckets hashed with a per-link random maphash seed on
//     the (to, from) address pair, quantum one MTU of 1 500 bytes, no packet
//     limit, a bucket freed with its CoDel state when it runs empty on the
//     old list; codel.go, coDelQueue: target 5 ms, interval 100 ms, drops
//     at dequeue only) in front of a token bucket (ratelink.go, RateLink:
//     golang.org/x/time/rate at BitsPerSecond/8 bytes per second, burst one
//     MTU). The driver dequeues a packet, then waits for its tokens, so the
//     first packet after an idle spell leaves at once and the next ones
//     one packet's line time apart; sizes are the UDP payload alone.
//   - The router (router.go, VariableLatencyRouter) holds every packet for
//     Simnet.LatencyFunc of the packet, in one heap for the whole network,
//     equal delivery instants in arrival order, then hands it to the
//     receiver's downlink driver: the same FQ-CoDel and token bucket.
//   - The downlink hands the packet to SimConn.RecvPacket, a 32-slot
//     channel that blocks the downlink driver (and behind it the router's
//     one goroutine) while it is full.
//
// Per-pair latency maps exactly: Simnet.LatencyFunc sees each packet's From
// and To addresses, so the adapter returns Config.OneWay of the two nodes,
// applied once, between the sender's uplink and the receiver's downlink,
// where uplink's model applies it too. Nothing is approximated there.
//
// What simnet does not model that uplink's profiles do, and so what a run on
// this backend cannot vary:
//
//   - Queue disciplines: simnet's FQ-CoDel is the only one, on every link
//     (no pfifo or bfifo, PIE, FQ-PIE, plain CoDel, DRR, Shadow's socket
//     fifo or round-robin, no mixes or per-node assignments, no host queue
//     stage in front of the uplink), with no packet limit, no ECN, no
//     tunable target, interval or bucket count per knob, and two defects
//     uplink's fq_codel:profile=simnet does not copy: CoDel's "backlog
//     below one MTU: do not drop" guard never fires (coDelQueue.MTU is
//     never set), and a datagram larger than the link MTU is not dropped
//     but wedges its link (rate.Limiter.ReserveN refuses it, so the driver
//     waits for ever with the packet pending). quic-go sends at most
//     1 452-byte datagrams, below the 1 500-byte MTU.
//   - Shapers: one token bucket with a one-MTU burst; no serialiser that
//     releases a packet when its last bit is out, no Shadow 1 ms refill, no
//     larger burst; rates are whole bit/s and must be positive (a zero rate
//     never refills). IPv4 and UDP headers are not counted, so a link
//     carries 28 bytes a datagram more than uplink's at the same rate.
//   - Socket buffers: no send buffer (a write never blocks, so no
//     block-when-full mode and no sndbuf-max), no receive buffer in bytes
//     (32 datagrams, blocking the link; no sockbuf-max, no recv-slots or
//     recv-block choice).
//   - Loss: none; no random loss, no per-pair loss.
//   - Counters: simnet counts, per endpoint, the bytes and datagrams
//     written and delivered (SimConn.Stats), and nothing of its queues: its
//     CoDel's drop (codel.go, coDelQueue.drop) is an empty function. Drops
//     are counted here from outside (tracker.go): per link, the packets in,
//     out and dropped, and no sojourn times or backlogs.
//   - TCP: simnet carries datagrams only; uplink's TCP model and the
//     libp2p TCP transport have no simnet counterpart here.
//   - Reproducibility: simnet runs a goroutine per link direction and one
//     for the router, and hashes flows with a random seed, so even
//     model-level events are not reproducible from a seed; there is no
//     setup quantum and no partitioning.
//
// Addresses are 16-byte (IPv4-mapped) net.UDPAddrs, the form Go's resolver
// and go-libp2p's multiaddr conversion give: simnet keys its router on the
// address bytes as given, so a destination written in the 4-byte form
// would not match its endpoint and would be dropped (and counted by
// Dropped).
//
// Everything here must run inside a testing/synctest bubble (or on the real
// clock, which is not what it is for): New starts simnet's goroutines, and
// Close ends them.
package simnet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	sn "github.com/marcopolo/simnet"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
)

// Config describes the node set: node i has uplink rate Up[i] and
// downlink rate Down[i] (bit/s, positive), and a packet from node i to
// node j is delayed OneWay(i, j).
type Config struct {
	Up, Down []int64
	// OneWay is called from simnet's router goroutine, one packet at a
	// time, for the whole run.
	OneWay func(from, to int) des.Time
	// Port is every node's UDP port.
	Port uint16
}

// Network is a started simnet network with one endpoint per node.
type Network struct {
	sim   *sn.Simnet
	conns []*Conn
	addrs []*net.UDPAddr
	drops *dropCounter
	t     *tracker
}

// New builds and starts the network. It checks that the rates are within
// des's bounds (simnet has no unlimited link) and that there are two nodes
// or more.
func New(cfg Config) (*Network, error) {
	n := len(cfg.Up)
	if n < 2 || len(cfg.Down) != n {
		return nil, fmt.Errorf("simnet: %d uplink and %d downlink rates: want one of each per node, two nodes or more", len(cfg.Up), len(cfg.Down))
	}
	if cfg.OneWay == nil {
		return nil, errors.New("simnet: no latency function")
	}
	for i := range n {
		for _, r := range []int64{cfg.Up[i], cfg.Down[i]} {
			if r < des.MinRate || r > des.MaxRate {
				return nil, fmt.Errorf("simnet: node %d: rate %d bit/s: want %s to %s (simnet has no unlimited link)", i, r, des.FormatRate(des.MinRate), des.FormatRate(des.MaxRate))
			}
		}
	}
	t, err := newTracker(n, cfg.Port)
	if err != nil {
		return nil, err
	}
	drops := &dropCounter{}
	nw := &Network{drops: drops, t: t}
	nw.sim = &sn.Simnet{
		LatencyFunc: func(p *sn.Packet) time.Duration {
			from, to := NodeOf(p.From), NodeOf(p.To)
			var lat time.Duration
			if from >= 0 && from < n && to >= 0 && to < n {
				lat = cfg.OneWay(from, to).Duration()
			} // else the router drops it: no endpoint has the address
			if from >= 0 && from < n {
				t.left(p, from, lat)
			}
			return lat
		},
		Logger: slog.New(drops),
	}
	for i := range n {
		a := Addr(i, cfg.Port)
		c := nw.sim.NewEndpoint(a, sn.NodeBiDiLinkSettings{
			Uplink:   sn.LinkSettings{BitsPerSecond: int(cfg.Up[i])},
			Downlink: sn.LinkSettings{BitsPerSecond: int(cfg.Down[i])},
		})
		nw.conns = append(nw.conns, &Conn{SimConn: c, node: i, t: t})
		nw.addrs = append(nw.addrs, a)
	}
	nw.sim.Start()
	return nw, nil
}

// Addr is node i's address on port: netmodel.NodeAddr(i) as a 16-byte
// IPv4-mapped IP.
func Addr(i int, port uint16) *net.UDPAddr {
	ip := netmodel.NodeAddr(i).As16()
	return &net.UDPAddr{IP: net.IP(ip[:]), Port: int(port)}
}

// NodeOf is the node whose address a is (either IP form, any port), or -1.
func NodeOf(a net.Addr) int {
	u, ok := a.(*net.UDPAddr)
	if !ok {
		return -1
	}
	ip4 := u.IP.To4()
	if ip4 == nil {
		return -1
	}
	v := uint32(ip4[0])<<24 | uint32(ip4[1])<<16 | uint32(ip4[2])<<8 | uint32(ip4[3])
	i := int64(v) - (10 << 24) - 1
	if i < 0 || i > int64(des.MaxNodes) {
		return -1
	}
	return int(i)
}

// Len is the number of nodes.
func (nw *Network) Len() int { return len(nw.conns) }

// Conn is node i's endpoint. Closing it closes the node's socket, not its
// links.
func (nw *Network) Conn(i int) *Conn { return nw.conns[i] }

// Addr is node i's address, the one its endpoint is registered under.
func (nw *Network) Addr(i int) *net.UDPAddr { return nw.addrs[i] }

// Stats are node i's endpoint counters: the bytes and datagrams it wrote
// and those its downlink delivered to it (UDP payload bytes).
func (nw *Network) Stats(i int) sn.ConnStats { return nw.conns[i].Stats() }

// LinkCounts are one link direction's packet counts since New: in (for an
// uplink, written by the node; for a downlink, handed to it by the router,
// whose hand-off instant is the packet's exit from the uplink plus the
// pair's latency), out (left the uplink for the router; delivered to the
// node's receive channel) and dropped by its fq_codel (CoDel, the only drop
// simnet's links make). In − Out − Dropped is the packets still in the link
// plus those it dropped that no later packet of their flow has yet passed
// (tracker.go).
type LinkCounts struct {
	In, Out, Dropped uint64
}

// Counts are node i's uplink and downlink counts, and the packets it sent
// to an address with no endpoint (NoPort: simnet's router drops them),
// counted when they left its uplink. They are exact when read at an
// instant every goroutine of the network has run (synctest.Wait): the
// router has then handed every packet due to its downlink, and each
// receive channel has been read.
func (nw *Network) Counts(i int) (up, down LinkCounts, noport uint64) {
	t := nw.t
	t.arrived()
	up = LinkCounts{In: t.up[i].in.Load(), Out: t.up[i].out.Load(), Dropped: t.up[i].dropped.Load()}
	down = LinkCounts{In: t.down[i].in.Load(), Out: uint64(nw.conns[i].Stats().PacketsRcvd), Dropped: t.down[i].dropped.Load()}
	return up, down, t.noport[i].Load()
}

// Unmatched is the number of packets seen leaving an uplink or read that
// matched no packet written in their flow (0 but for a datagram equal to
// another in flight, or read truncated): their flows' drops may be
// miscounted.
func (nw *Network) Unmatched() uint64 { return nw.t.unmatched.Load() }

// Dropped is the number of packets simnet's router dropped because no
// endpoint had the destination address.
func (nw *Network) Dropped() uint64 { return nw.drops.n.Load() }

// Close closes every endpoint and stops simnet's goroutines, returning when
// they have ended. Packets still in flight are lost. It may be called more
// than once.
func (nw *Network) Close() {
	for _, c := range nw.conns {
		c.Close()
	}
	nw.sim.Close()
}

// Conn is a node's endpoint, a simnet SimConn whose writes and reads the
// network's drop counting sees.
type Conn struct {
	*sn.SimConn
	node int
	t    *tracker
	wmu  sync.Mutex // keeps the node's writes in the order the counting records them
}

// WriteTo writes p to addr through the node's uplink.
func (c *Conn) WriteTo(p []byte, addr net.Addr) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	tk := c.t.write(c.node, p, addr)
	n, err := c.SimConn.WriteTo(p, addr)
	c.t.wrote(tk, err)
	return n, err
}

// ReadFrom reads the next datagram the node's downlink delivered.
func (c *Conn) ReadFrom(p []byte) (int, net.Addr, error) {
	n, addr, err := c.SimConn.ReadFrom(p)
	if err == nil {
		c.t.readBy(c.node, p[:n], addr)
	}
	return n, addr, err
}

// dropCounter is the slog handler of simnet's logger: the only records
// simnet v0.0.7 logs are its router's drops (LogOnDrop), which it counts.
type dropCounter struct{ n atomic.Uint64 }

func (d *dropCounter) Enabled(context.Context, slog.Level) bool { return true }

func (d *dropCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "Dropping packet" {
		d.n.Add(1)
	}
	return nil
}

func (d *dropCounter) WithAttrs([]slog.Attr) slog.Handler { return d }
func (d *dropCounter) WithGroup(string) slog.Handler      { return d }
