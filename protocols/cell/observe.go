package cell

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
	"github.com/uplinksim/uplink/netmodel/pcapng"
	"github.com/uplinksim/uplink/queues"
	"github.com/uplinksim/uplink/transports/tcp"
)

// Trace asks for a time series of each of Nodes, sampled every Every of
// virtual time (at its multiples, from the model's start) by a model timer
// of the Hidden class: it reads the model and changes nothing, so the
// cell's record is that of the cell without it. A row is also taken at
// each of the cell's readings of the network counters (the publish, the
// counts, the teardown's start) and at the end, after the teardown. In a
// split cell each partition samples its own nodes of Nodes, at the same
// instants. Each node's series goes to its own writer
// (Outputs.Trace), as CSV with TraceHeader.
type Trace struct {
	Every des.Time
	Nodes []int
}

// TraceHeader is the header line of a node's trace: the instant; the
// uplink and downlink queues' backlog at that instant (bytes, packets);
// what the node's counters (netmodel.Counters) counted since the previous
// row: drops of every reason, packets and bytes sent and received; what
// the uplink, downlink and host queues counted since the previous row
// (queues.Sample: the mean sojourn of the packets dequeued, drops of each
// reason, CE marks), the host queue's backlog first (its columns are
// empty on a profile without one); and the reading that took the row
// (empty for the interval's own row; publish, counts, completion,
// teardown or end).
const TraceHeader = "time_s,up_backlog_bytes,up_backlog_packets,down_backlog_bytes,down_backlog_packets,drops,sent_packets,sent_bytes,recv_packets,recv_bytes," +
	"up_sojourn_mean_ms,up_drops_overlimit,up_drops_aqm,up_drops_batch,up_ce_marks," +
	"down_sojourn_mean_ms,down_drops_overlimit,down_drops_aqm,down_drops_batch,down_ce_marks," +
	"host_backlog_bytes,host_backlog_packets,host_sojourn_mean_ms,host_drops_overlimit,host_drops_aqm,host_drops_batch,host_ce_marks," +
	"reading"

// TraceFlowsHeader is the header line of a node's TCP connections'
// trace (a cell with the tcp transport): a row per connection not yet
// closed at each row of the node's trace: the instant; the connection's
// number (among the node's, in the order they were opened, from 0); the
// peer node; the sender's figures of tcp.TraceColumns, the retransmits
// since the connection's previous row; and the reading, as TraceHeader.
const TraceFlowsHeader = "time_s,flow,peer," + tcp.TraceColumns + ",reading"

// noHost stands for the host queue's columns on a node without one.
const noHost = ",,,,,,,"

// Outputs opens the writers of a cell's trace and captures: Trace gives
// node's trace CSV, Flows its TCP connections' trace CSV (a cell with the
// tcp transport; none when nil), Capture its pcapng capture. They are called in the
// cell's bubble as the network is built; the cell flushes what it wrote
// at its end but closes nothing.
type Outputs struct {
	Trace   func(node int) (io.Writer, error)
	Flows   func(node int) (io.Writer, error)
	Capture func(node int) (io.Writer, error)
}

// checkObserve checks the trace and captures against the cell.
func (c Config) checkObserve(n int) error {
	if c.Trace == nil && len(c.Captures) == 0 {
		return nil
	}
	if c.Backend != "" {
		return fmt.Errorf("the %s backend runs its links outside uplink's model: no trace or capture", c.Backend)
	}
	nodes := func(what string, list []int) error {
		seen := map[int]bool{}
		for _, i := range list {
			if i < 0 || i >= n {
				return fmt.Errorf("%s of node %d: the nodes are 0 to %d", what, i, n-1)
			}
			if seen[i] {
				return fmt.Errorf("%s of node %d: given twice", what, i)
			}
			seen[i] = true
		}
		return nil
	}
	if t := c.Trace; t != nil {
		if t.Every <= 0 {
			return fmt.Errorf("trace interval %v: want a positive interval", t.Every)
		}
		if len(t.Nodes) == 0 {
			return errors.New("trace: no nodes")
		}
		if err := nodes("trace", t.Nodes); err != nil {
			return err
		}
	}
	return nodes("capture", c.Captures)
}

// tracedNode is a traced node and its counters at the previous row.
type tracedNode struct {
	idx            int
	nd             *netmodel.Node
	prev           netmodel.Counters
	up, down, host queues.Sampler // host: Q nil without a host queue
	w              *bufio.Writer
	fw             *bufio.Writer // the TCP connections' trace; nil: none
	flows          []tracedFlow  // the connections of the previous row
	nextFlow       int
}

// tracedFlow is a traced node's TCP connection: its number and its
// retransmits at the previous row.
type tracedFlow struct {
	ep   *tcp.Endpoint
	id   int
	prev uint64
}

// observer runs a partition's share of the trace and the captures (the
// local nodes of each). Its methods run with the model locked (model
// events, under Live.Lock, or at a window's end), or once the model has
// stopped.
type observer struct {
	sim      *des.Sim
	every    des.Time
	timer    *des.Timer
	nodes    []tracedNode
	caps     []*pcapng.Writer
	capNodes []int
	capNds   []*netmodel.Node
	eng      *tcp.Engine // the TCP connections' trace reads it
	conns    []*tcp.Endpoint
	flows    []tracedFlow
	row      []byte
	done     bool
}

// newObserver installs the cell's captures and starts its trace on the
// driver's network, before the model starts; nil when the cell asks for
// neither (or none of its nodes is local).
func (d *driver) newObserver() (*observer, error) {
	cfg := &d.cfg
	if cfg.Trace == nil && len(cfg.Captures) == 0 {
		return nil, nil
	}
	if cfg.Trace != nil && cfg.Outputs.Trace == nil || len(cfg.Captures) > 0 && cfg.Outputs.Capture == nil {
		return nil, errors.New("cell: a trace or capture without Outputs to write it to")
	}
	o := &observer{sim: d.sim}
	for _, i := range cfg.Captures {
		if !d.local(i) {
			continue
		}
		w, err := cfg.Outputs.Capture(i)
		if err != nil {
			return nil, fmt.Errorf("cell: capture of node %d: %w", i, err)
		}
		o.caps = append(o.caps, pcapng.Capture(d.nw.Node(i), w, fmt.Sprintf("node %d", i)))
		o.capNodes = append(o.capNodes, i)
		o.capNds = append(o.capNds, d.nw.Node(i))
	}
	if tr := cfg.Trace; tr != nil {
		for _, i := range tr.Nodes {
			if !d.local(i) {
				continue
			}
			w, err := cfg.Outputs.Trace(i)
			if err != nil {
				return nil, fmt.Errorf("cell: trace of node %d: %w", i, err)
			}
			b := bufio.NewWriterSize(w, 16<<10)
			b.WriteString(TraceHeader + "\n")
			nd := d.nw.Node(i)
			tn := tracedNode{idx: i, nd: nd, w: b,
				up: queues.Sampler{Q: nd.Up().Qdisc()}, down: queues.Sampler{Q: nd.Down().Qdisc()}}
			if h := nd.Host(); h != nil {
				tn.host.Q = h.Qdisc()
			}
			if cfg.Transport == "tcp" && cfg.Outputs.Flows != nil {
				fw, err := cfg.Outputs.Flows(i)
				if err != nil {
					return nil, fmt.Errorf("cell: TCP trace of node %d: %w", i, err)
				}
				tn.fw = bufio.NewWriterSize(fw, 16<<10)
				tn.fw.WriteString(TraceFlowsHeader + "\n")
			}
			o.nodes = append(o.nodes, tn)
		}
		if len(o.nodes) > 0 {
			o.every = tr.Every
			o.timer = d.sim.NewTimer(o.tick)
			o.timer.SetClass(des.Hidden)
			d.sim.Schedule(o.timer, (d.sim.Now()/tr.Every+1)*tr.Every)
		}
	}
	return o, nil
}

// useTCP gives the TCP connections' trace the cell's TCP engine, once
// its stack is built; it locks live's model to do so.
func (o *observer) useTCP(live *des.Live, eng *tcp.Engine) {
	if o == nil {
		return
	}
	live.Lock()
	o.eng = eng
	live.Unlock()
}

func (o *observer) tick(now des.Time) {
	o.sample(now, "")
	o.sim.Schedule(o.timer, now+o.every)
}

// reading takes a row of every traced node at a reading of the counters.
func (o *observer) reading(what string) {
	if o != nil && o.timer != nil && !o.done {
		o.sample(o.sim.Now(), what)
	}
}

// sample writes a row per traced node at now.
func (o *observer) sample(now des.Time, reading string) {
	t := strconv.FormatFloat(now.Seconds(), 'f', 9, 64)
	for i := range o.nodes {
		tn := &o.nodes[i]
		c, p := tn.nd.Counters, &tn.prev
		var drops, pdrops uint64
		for r := range c.Drops {
			drops += c.Drops[r]
			pdrops += p.Drops[r]
		}
		up, down := tn.up.Next(), tn.down.Next()
		b := append(o.row[:0], t...)
		for _, v := range []uint64{uint64(up.Bytes), uint64(up.Len), uint64(down.Bytes), uint64(down.Len), drops - pdrops,
			c.SentPackets - p.SentPackets, c.SentBytes - p.SentBytes, c.RecvPackets - p.RecvPackets, c.RecvBytes - p.RecvBytes} {
			b = append(b, ',')
			b = strconv.AppendUint(b, v, 10)
		}
		b = up.AppendCSV(b)
		b = down.AppendCSV(b)
		if tn.host.Q != nil {
			h := tn.host.Next()
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(h.Bytes), 10)
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(h.Len), 10)
			b = h.AppendCSV(b)
		} else {
			b = append(b, noHost...)
		}
		b = append(b, ',')
		b = append(b, reading...)
		tn.w.Write(append(b, '\n'))
		o.row = b
		*p = c
		if tn.fw != nil && o.eng != nil {
			o.sampleFlows(tn, t, reading)
		}
	}
}

// sampleFlows writes a row per TCP connection of tn not yet closed.
// The engine lists them in the order they were opened, as tn.flows: the
// connections of both lists keep their numbers, in that order, and the
// new ones, after them all, get the next.
func (o *observer) sampleFlows(tn *tracedNode, t, reading string) {
	o.conns = o.eng.AppendConns(o.conns[:0], tn.idx)
	o.flows = o.flows[:0]
	j := 0
	for _, ep := range o.conns {
		for j < len(tn.flows) && tn.flows[j].ep != ep {
			j++
		}
		f := tracedFlow{ep: ep}
		if j < len(tn.flows) {
			f = tn.flows[j]
			j++
		} else {
			f.id = tn.nextFlow
			tn.nextFlow++
		}
		st := ep.Stats()
		b := append(o.row[:0], t...)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(f.id), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(ep.RemoteNode()), 10)
		b = st.AppendCSV(b, f.prev)
		b = append(b, ',')
		b = append(b, reading...)
		tn.fw.Write(append(b, '\n'))
		o.row = b
		f.prev = st.Retransmits
		o.flows = append(o.flows, f)
	}
	tn.flows = append(tn.flows[:0], o.flows...)
}

// finish takes the last row (reading "end") once the model has stopped,
// removes the captures' taps and flushes every writer.
func (o *observer) finish() error {
	if o == nil || o.done {
		return nil
	}
	var err error
	for _, nd := range o.capNds {
		nd.SetTap(nil)
	}
	if o.timer != nil {
		o.sim.Cancel(o.timer)
		o.sample(o.sim.Now(), "end")
	}
	o.done = true
	for _, tn := range o.nodes {
		if e := tn.w.Flush(); e != nil && err == nil {
			err = fmt.Errorf("cell: trace of node %d: %w", tn.idx, e)
		}
		if tn.fw == nil {
			continue
		}
		if e := tn.fw.Flush(); e != nil && err == nil {
			err = fmt.Errorf("cell: TCP trace of node %d: %w", tn.idx, e)
		}
	}
	for i, c := range o.caps {
		if e := c.Flush(); e != nil && err == nil {
			err = fmt.Errorf("cell: capture of node %d: %w", o.capNodes[i], e)
		}
	}
	return err
}
