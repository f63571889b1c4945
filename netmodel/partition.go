package netmodel

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/uplinksim/uplink/des"
)

// A network can be split into partitions, each a Network on a Sim of its
// own that holds some of the nodes (their paths, sockets and the pipes that
// end at them) and advances independently within a window. A packet whose
// receiver lives in another partition leaves its sender's uplink in the
// sender's partition as usual (loss drawn, latency added), then waits in
// that partition's outbox as a Crossing; at the window's end the crossings
// are handed over and enter the receiver's pipe at their exact arrival
// instants. Because every arrival is at least the smallest one-way latency
// between partitions after its departure, a window no longer than that
// latency never receives a packet due inside it: the split changes no
// instant. The pipes' events carry their sending node as order key
// (des.Timer.SetOrder), so simultaneous arrivals keep one order however
// the nodes are split, and a model-only run gives the same per-node event
// trace for every split (TestPartitionsSameTrace).

// Split is a partition of the nodes: Of[i] is node i's partition, in
// [0, K).
type Split struct {
	K  int
	Of []int
}

// BalancedSplit spreads n nodes over k partitions: a seeded shuffle of the
// nodes dealt out in turn, so the partitions differ in size by at most one
// node and a seed gives the same split in every run.
func BalancedSplit(n, k int, seed uint64) (Split, error) {
	if k < 1 || k > n {
		return Split{}, fmt.Errorf("netmodel: %d partitions of %d nodes: want 1 to %d", k, n, n)
	}
	perm := rand.New(rand.NewPCG(des.Mix64(seed^0x7061727473), 0x73706c6974)).Perm(n) // "parts", "split"
	of := make([]int, n)
	for i, node := range perm {
		of[node] = i % k
	}
	return Split{K: k, Of: of}, nil
}

// MinCrossLatency is the smallest one-way latency between two nodes in
// different partitions of s under m: the longest window the partitions may
// advance in independently. It asks m for every ordered pair that crosses,
// O(n²); with one partition it is des.Never.
func MinCrossLatency(m LatencyModel, s Split) des.Time {
	least := des.Never
	for i, pi := range s.Of {
		for j, pj := range s.Of {
			if pi != pj {
				least = min(least, m.Latency(i, j))
			}
		}
	}
	return least
}

// Crossing is a packet on its way to a node of another partition: it left
// its sender's uplink at Sent and arrives there At.
type Crossing struct {
	At, Sent des.Time
	From, To int
	P        *Packet
}

// SocketIDs hands out socket ids shared by the partitions of one network,
// so a socket has the id it would have had without the split (ids key the
// loss draws and Shadow's queues) when the sockets are bound in the same
// order.
type SocketIDs struct{ next atomic.Uint32 }

// next is the next socket id: from ids when set, else n's own count.
func (n *Network) nextSocketID() uint32 {
	if n.cfg.SocketIDs != nil {
		return n.cfg.SocketIDs.next.Add(1) - 1
	}
	return uint32(len(n.socks))
}

// AddRemoteNode adds the next node index as a node of another partition,
// whose uplink and downlink shape at upRate and downRate (bit/s; 0:
// unlimited): packets to it become crossings; it has no paths or sockets
// here, only its rates, which a transport may read (LinkRates).
func (n *Network) AddRemoteNode(upRate, downRate int64) *Node {
	nd := &Node{net: n, id: len(n.nodes), remote: true, rates: [2]int64{upRate, downRate}}
	n.nodes = append(n.nodes, nd)
	return nd
}

// Remote reports whether the node lives in another partition.
func (nd *Node) Remote() bool { return nd.remote }

// LinkRates are the node's uplink and downlink shaping rates (bit/s; 0:
// unlimited), for a node of this partition or another.
func (nd *Node) LinkRates() (up, down int64) {
	if nd.remote {
		return nd.rates[0], nd.rates[1]
	}
	return nd.up.Shaper().Rate, nd.down.Shaper().Rate
}

// TakeCrossings returns the packets bound for other partitions since the
// last call, in the order they left their uplinks, and empties the outbox.
func (n *Network) TakeCrossings() []Crossing {
	out := n.outbox
	n.outbox = nil
	return out
}

// Inject puts a crossing from another partition into its receiver's pipe
// at the end of a window. Its arrival must not precede end: the window
// would then have been longer than the latency that carried it.
func (n *Network) Inject(c Crossing, end des.Time) error {
	if !n.holds(c.To) {
		return fmt.Errorf("netmodel: crossing from node %d to node %d, which is not in this partition", c.From, c.To)
	}
	if n.cfg.NetemShared {
		return errors.New("netmodel: partitions: a shared netem queue (NetemShared) would hold packets of two partitions; use one partition")
	}
	if c.At < end {
		return fmt.Errorf("netmodel: partitions: a packet from node %d to node %d arrives at %v (sent %v), inside the window that ended at %v: the window is longer than their latency", c.From, c.To, c.At, c.Sent, end)
	}
	n.pipe(c.From, c.To).push(c.P, c.At, c.Sent)
	return nil
}

// RunPartitions runs the partitions of one network, model-only, from their
// clocks to end: in windows of length window, each partition runs its
// events before the window's end on a goroutine of its own, then the
// crossings of every partition, in partition order and each partition's
// departure order, enter their receivers' partitions. window must not
// exceed the smallest latency between partitions (MinCrossLatency); a
// crossing due inside a window that has run is an error.
func RunPartitions(parts []*Network, window, end des.Time) error {
	if window <= 0 {
		return errors.New("netmodel: partitions: the window must be positive (is the smallest latency between partitions zero?)")
	}
	if len(parts) == 0 {
		return nil
	}
	owner := make([]int, len(parts[0].nodes))
	for i := range owner {
		owner[i] = -1
	}
	for k, p := range parts {
		if len(p.nodes) != len(owner) {
			return fmt.Errorf("netmodel: partition %d has %d node slots, partition 0 has %d", k, len(p.nodes), len(owner))
		}
		for i, nd := range p.nodes {
			if !nd.remote {
				if owner[i] >= 0 {
					return fmt.Errorf("netmodel: node %d lives in partitions %d and %d", i, owner[i], k)
				}
				owner[i] = k
			}
		}
	}
	if i := slices.Index(owner, -1); i >= 0 {
		return fmt.Errorf("netmodel: node %d lives in no partition", i)
	}
	var wg sync.WaitGroup
	for start := parts[0].sim.Now(); start < end; start += window {
		stop := min(start+window, end)
		for _, p := range parts {
			wg.Go(func() { p.sim.RunBefore(stop) })
		}
		wg.Wait()
		for _, p := range parts {
			for _, c := range p.TakeCrossings() {
				if err := parts[owner[c.To]].Inject(c, stop); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// WindowLeave is what a partition leaves at a window's end: the packets
// bound for other partitions, whether its driver is done (the windows end
// once every partition's is), and what else its driver hands the others.
type WindowLeave struct {
	Crossings []Crossing
	Done      bool
	Extra     any
}

// SwapWindow is a partition's work at the end of a window under des.Live
// (the atEnd of des.Live.SetWindows), once its bubble has settled: it
// hands this partition's crossings, with leave's Done and Extra, to the
// others through ex, and puts the crossings bound for its nodes into their
// pipes, in partition order and each partition's departure order, as
// RunPartitions does. It returns what every partition left (indexed by
// partition) and whether every partition's driver is done. A crossing due
// before end means the window was longer than the latency that carried
// it: an error.
func (n *Network) SwapWindow(live *des.Live, ex *des.Exchange, part int, end des.Time, leave WindowLeave) (round []WindowLeave, allDone bool, err error) {
	live.Lock()
	leave.Crossings = n.TakeCrossings()
	live.Unlock()
	got, err := ex.Swap(part, leave)
	if err != nil {
		return nil, false, fmt.Errorf("netmodel: partition %d at %v: %w", part, end, err)
	}
	live.Lock()
	defer live.Unlock()
	allDone = true
	round = make([]WindowLeave, len(got))
	for from, v := range got {
		w, ok := v.(WindowLeave)
		if !ok {
			return nil, false, fmt.Errorf("netmodel: partition %d left %T at a window's end, not a WindowLeave", from, v)
		}
		round[from] = w
		allDone = allDone && w.Done
		if from == part {
			continue
		}
		for _, c := range w.Crossings {
			if !n.holds(c.To) {
				continue // another partition's
			}
			if err := n.Inject(c, end); err != nil {
				return nil, false, err
			}
		}
	}
	return round, allDone, nil
}

// holds reports whether node i lives in this partition.
func (n *Network) holds(i int) bool {
	return i >= 0 && i < len(n.nodes) && !n.nodes[i].remote
}
