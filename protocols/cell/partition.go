package cell

import (
	"errors"
	"fmt"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
	"github.com/uplinksim/uplink/protocols/arms"
	"github.com/uplinksim/uplink/queues"
)

// A cell with Partitions K > 1 splits its nodes over K partitions
// (netmodel.BalancedSplit, seeded by the cell's seed). Each partition has
// its own event core, its part of the network model (its nodes' paths,
// sockets and the pipes that end at them), and its nodes' hosts, routers
// and tracers, in a synctest bubble of its own; the partitions advance in
// lock-step windows 1ns shorter than the smallest one-way latency between
// two nodes of different partitions (netmodel.MinCrossLatency), so no
// packet is delayed or rounded by the split (des, "Partitions").
//
// A window's last instant. The answer to a question (below) wakes the
// drivers at a window's last instant, after the crossings have been
// swapped, and what a driver sends then (the mesh's first messages once
// the dial is over, say) may leave its uplink at that instant: Shadow's
// token bucket lets a packet through at once. It crosses at the next
// window's end; with windows 1ns under the smallest latency it still
// arrives after that end, at its exact instant (TestSplitCellShadow).
//
// Every partition runs the same phases on its own nodes. Where a phase
// reads the whole cell (a poll of the meshes, the view at the publish,
// the counts) or decides from it (the dial is over, the receivers are
// complete), it asks: the question is answered at the first window's end
// at which every partition has asked it, from every partition's reading at
// that instant, so that every partition takes the same decision at the
// same virtual instant. Two readings therefore differ from one bubble's:
// the end of the dial, and the instant of the counts (the last receiver's
// completion, or the window's end), are taken at the first window's end
// after the event, up to one window (about 6.4 ms under the geo latency
// model) late. The completion times themselves are exact.
//
// Not supported with partitions (Config.checkPartitions): the simnet
// backend, warm-ups, background load and variant B (whose node state is
// read on its pubsub event loop, which must not run at a window's end).

// MaxPartitions bounds Config.Partitions.
const MaxPartitions = 256

// partition is one partition's share of a split cell: what every
// partition shares (made outside the bubbles), and the question its
// driver is waiting on.
type partition struct {
	idx    int
	split  netmodel.Split
	draw   *netmodel.Draw
	ids    *netmodel.SocketIDs
	ex     *des.Exchange
	window des.Time
	peers  []peer.ID // every node's peer id

	mu      sync.Mutex
	pending *question // the driver's, answered at a window's end
	done    bool      // the driver is done: its hosts are closed
	err     error     // why the windows ended early
}

// question is what a partition's driver asks at a window's end: read
// reads this partition's nodes (on the core's goroutine, with every other
// goroutine of the bubble blocked); the answer is every partition's
// reading.
type question struct {
	kind   string
	read   func() any
	answer chan answer // buffered; made in the partition's bubble
}

type answer struct {
	vals []any
	err  error
}

// ask waits for the first window's end at which every partition asks
// kind, and returns every partition's reading there (indexed by
// partition). It fails at once when the windows ended early.
func (p *partition) ask(kind string, read func() any) ([]any, error) {
	q := &question{kind: kind, read: read, answer: make(chan answer, 1)}
	p.mu.Lock()
	if p.err != nil {
		p.mu.Unlock()
		return nil, p.err
	}
	p.pending = q
	p.mu.Unlock()
	a := <-q.answer
	return a.vals, a.err
}

// finish tells the other partitions, at the next window's end, that this
// partition's driver is done.
func (p *partition) finish() {
	p.mu.Lock()
	p.done = true
	p.mu.Unlock()
}

// fail ends the windows of every partition with err: the other
// partitions' questions fail with it.
func (p *partition) fail(err error) {
	p.ex.Close(err)
	p.stop(err)
}

// stop ends this partition's windows: its pending question, and every one
// after, fails with err.
func (p *partition) stop(err error) {
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	q := p.pending
	p.pending = nil
	p.mu.Unlock()
	if q != nil {
		q.answer <- answer{err: err}
	}
}

// endWindow is the partition's work at a window's end (des.Live's atEnd),
// on the core's goroutine: once the bubble has settled, it swaps the
// crossings with the other partitions, with whether its driver is done and
// the kind of the question it asks; when every partition asks the same
// question, it reads its answer and swaps the readings. It returns false
// to end the windows: every driver is done, or the cell failed.
func (p *partition) endWindow(d *driver, end des.Time) bool {
	d.cfg.Wait()
	p.mu.Lock()
	q, done := p.pending, p.done
	p.mu.Unlock()
	leave := netmodel.WindowLeave{Done: done}
	if q != nil {
		leave.Extra = q.kind
	}
	round, allDone, err := d.nw.SwapWindow(d.live, p.ex, p.idx, end, leave)
	if err != nil {
		p.stop(err)
		return false
	}
	if allDone {
		return false
	}
	asking := 0
	for from, l := range round {
		kind, _ := l.Extra.(string)
		switch {
		case kind == "":
		case q == nil || kind == q.kind:
			asking++
		default:
			p.fail(fmt.Errorf("cell: partitions: partition %d asks %q while partition %d asks %q at %v", from, kind, p.idx, q.kind, end))
			return false
		}
		if l.Done && q != nil {
			p.fail(fmt.Errorf("cell: partitions: partition %d is done while partition %d asks %q at %v", from, p.idx, q.kind, end))
			return false
		}
	}
	if asking < len(round) || q == nil {
		return true
	}
	vals, err := p.ex.Swap(p.idx, q.read())
	if err != nil {
		p.stop(fmt.Errorf("cell: partition %d at %v: %w", p.idx, end, err))
		return false
	}
	p.mu.Lock()
	p.pending = nil
	p.mu.Unlock()
	q.answer <- answer{vals: vals}
	return true
}

// RunSplit runs a cell with cfg.Partitions partitions. It must run outside
// every bubble; enter runs the partitions' bodies at once, each in a
// synctest bubble of its own whose wait is cfg.Wait, and returns once all
// have returned. A failure in one partition ends the others at their next
// window's end; the error returned is the first partition's that failed.
// With Partitions 1 (or 0) it runs Run in one bubble.
func RunSplit(cfg Config, enter func(k int, body func(part int) error) error) (*Record, error) {
	if cfg.Wait == nil {
		return nil, ErrNoWait
	}
	cfg.Defaults()
	if cfg.Partitions <= 1 {
		var rec *Record
		err := enter(1, func(int) error {
			var err error
			rec, err = Run(cfg)
			return err
		})
		return rec, err
	}
	if err := cfg.Check(); err != nil {
		return nil, fmt.Errorf("cell: %w", err)
	}
	draw := cfg.Topology
	if draw == nil {
		var err error
		if draw, err = netmodel.NewDraw(cfg.N, cfg.Degree, cfg.Seed, cfg.Latency, cfg.Net); err != nil {
			return nil, fmt.Errorf("cell: topology: %w", err)
		}
	}
	split, err := netmodel.BalancedSplit(draw.N, cfg.Partitions, cfg.Seed)
	if err != nil {
		return nil, fmt.Errorf("cell: partitions: %w", err)
	}
	least := netmodel.MinCrossLatency(draw.LatencyModel(), split)
	if least < 3 {
		return nil, fmt.Errorf("cell: partitions: the smallest one-way latency between nodes of different partitions is %v; partitions need at least 3ns", least)
	}
	w := least - 1 // "A window's last instant", above
	cfg.logf("cell seed %d: %d partitions of %d nodes, windows of %v (1ns under the smallest latency between partitions)", cfg.Seed, split.K, draw.N, w.Duration())
	peers := make([]peer.ID, draw.N)
	for i := range peers {
		key, err := hostKey(cfg.Seed, i)
		if err != nil {
			return nil, fmt.Errorf("cell: %w", err)
		}
		if peers[i], err = peer.IDFromPrivateKey(key); err != nil {
			return nil, fmt.Errorf("cell: node %d: %w", i, err)
		}
	}
	ex := des.NewExchange(split.K)
	defer ex.Close(nil)
	ids := &netmodel.SocketIDs{}
	recs := make([]*Record, split.K)
	err = enter(split.K, func(part int) error {
		p := &partition{idx: part, split: split, draw: draw, ids: ids, ex: ex, window: w, peers: peers}
		d := newDriver(cfg)
		d.part = p
		rec, err := d.run()
		recs[part] = rec
		return err
	})
	if first := ex.Err(); first != nil && !errors.Is(first, des.ErrExchangeClosed) {
		return nil, first
	}
	if err != nil {
		return nil, err
	}
	return recs[0], nil
}

// checkPartitions refuses what a split cell cannot run.
func (c Config) checkPartitions(arm arms.Arm) error {
	if c.Partitions <= 1 {
		return nil
	}
	switch {
	case c.Partitions > MaxPartitions:
		return fmt.Errorf("partitions %d: at most %d", c.Partitions, MaxPartitions)
	case c.Backend != "":
		return fmt.Errorf("partitions %d: the %s backend runs in one bubble; use partitions 1", c.Partitions, c.Backend)
	case c.Warmup.Kind != "":
		return fmt.Errorf("partitions %d: a warm-up (%s) is not supported with partitions; use partitions 1", c.Partitions, c.Warmup)
	case c.Background.Size > 0:
		return fmt.Errorf("partitions %d: background load is not supported with partitions; use partitions 1", c.Partitions)
	case arm.Variant == arms.VariantB:
		return fmt.Errorf("partitions %d: arm %s (variant B) is not supported with partitions; use partitions 1", c.Partitions, arm.Name)
	}
	n, _ := c.Size()
	if c.Partitions > n {
		return fmt.Errorf("partitions %d: more partitions than the cell's %d nodes", c.Partitions, n)
	}
	return nil
}

// mergeViews joins the partitions' readings of one instant: node i's
// state comes from its partition's.
func mergeViews(vals []any, split netmodel.Split) (*view, error) {
	parts := make([]*view, len(vals))
	for i, v := range vals {
		pv, ok := v.(*view)
		if !ok {
			return nil, fmt.Errorf("cell: partition %d answered %T, not a reading", i, v)
		}
		parts[i] = pv
	}
	n := len(split.Of)
	out := &view{nodes: make([]nodeView, n)}
	for i, p := range split.Of {
		pv := parts[p]
		out.nodes[i] = pv.nodes[i]
		if pv.net != nil {
			if out.net == nil {
				out.net = make([]netmodel.Counters, n)
			}
			out.net[i] = pv.net[i]
		}
		if pv.up != nil {
			if out.up == nil {
				out.up, out.down = make([]*queues.Stats, n), make([]*queues.Stats, n)
			}
			out.up[i], out.down[i] = pv.up[i], pv.down[i]
		}
		if pv.host != nil {
			if out.host == nil {
				out.host = make([]*queues.Stats, n)
			}
			out.host[i] = pv.host[i]
		}
	}
	for _, pv := range parts {
		out.conn.add(pv.conn)
	}
	return out, nil
}
