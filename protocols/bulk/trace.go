package bulk

import (
	"bufio"
	"fmt"
	"io"
	"strconv"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
	"github.com/uplinksim/uplink/netmodel/pcapng"
	"github.com/uplinksim/uplink/queues"
	"github.com/uplinksim/uplink/transports/tcp"
)

// Trace asks for time series of a run on uplink's model, sampled every
// Every of virtual time by a model timer (of the Hidden class: it reads
// the model and changes nothing, so the run's results are those of a run
// without it), and once more when the run's counters are read. Each
// writer gets CSV with a header line, one row per sample and queue, node
// or flow; a nil writer is not written. Every figure but the backlog and
// the TCP state is the interval's since the previous row.
type Trace struct {
	Every des.Time
	// Queues: time_s, queue, backlog_bytes, backlog_packets, enqueued,
	// dequeued, sojourn_mean_ms (of the packets dequeued in the interval;
	// empty when none), drops_overlimit, drops_aqm, drops_batch, ce_marks;
	// the queues of Result.Queues.
	Queues io.Writer
	// Nodes: time_s, node, sent_packets, sent_bytes, recv_packets,
	// recv_bytes, drops (netmodel.Counters; every reason).
	Nodes io.Writer
	// Flows (TCP only): time_s, flow, state, cwnd_segments,
	// ssthresh_segments, srtt_ms, pacing_rate_bps, in_flight_segments,
	// unacked_bytes, retransmits: each flow's sender.
	Flows io.Writer
}

// Capture asks for a pcapng capture (netmodel/pcapng) of every packet node
// Node sends and receives, on a run on uplink's model.
type Capture struct {
	Node int
	W    io.Writer
}

// Trace CSV headers.
const (
	TraceQueuesHeader = "time_s,queue,backlog_bytes,backlog_packets,enqueued,dequeued," + queues.SampleColumns
	TraceNodesHeader  = "time_s,node,sent_packets,sent_bytes,recv_packets,recv_bytes,drops"
	TraceFlowsHeader  = "time_s,flow," + tcp.TraceColumns
)

// tracedQueue is a queue and its counters at the previous sample.
type tracedQueue struct {
	name string
	queues.Sampler
}

// tracedFlow is a TCP sender and its retransmissions at the previous
// sample.
type tracedFlow struct {
	ep   *tcp.Endpoint
	prev uint64
}

// observer runs a run's trace and captures. All of its methods run with
// the model locked (model events, or under Live.Lock).
type observer struct {
	trace    *Trace
	n        *netmodel.Network
	timer    *des.Timer
	limit    des.Time
	last     des.Time // the previous sample's instant
	fired    uint64   // the timer's events, left out of Result.Events
	queues   []tracedQueue
	nodes    []netmodel.Counters
	flows    []tracedFlow
	qw, nw   *bufio.Writer
	fw       *bufio.Writer
	caps     []*pcapng.Writer
	capNodes []int
	row      []byte
	done     bool
}

// newObserver installs cfg's captures and starts its trace on n, before
// any traffic; it returns nil when the run asks for neither.
func newObserver(cfg Config, n *netmodel.Network) (*observer, error) {
	if cfg.Trace == nil && len(cfg.Captures) == 0 {
		return nil, nil
	}
	o := &observer{n: n, trace: cfg.Trace}
	for _, c := range cfg.Captures {
		if c.Node < 0 || c.Node >= len(n.Nodes()) || c.W == nil {
			return nil, fmt.Errorf("bulk: capture of node %d: want node 0 or 1 and a writer", c.Node)
		}
		o.caps = append(o.caps, pcapng.Capture(n.Node(c.Node), c.W, fmt.Sprintf("node %d", c.Node)))
		o.capNodes = append(o.capNodes, c.Node)
	}
	tr := cfg.Trace
	if tr == nil {
		return o, nil
	}
	if tr.Every <= 0 {
		return nil, fmt.Errorf("bulk: trace interval %v: want a positive interval", tr.Every)
	}
	o.limit = des.MaxVirtual
	if cfg.Bytes <= 0 {
		o.limit = cfg.Duration
	}
	if h := n.Node(0).Host(); h != nil {
		o.queues = append(o.queues, tracedQueue{name: "sender host", Sampler: queues.Sampler{Q: h.Qdisc()}})
	}
	o.queues = append(o.queues,
		tracedQueue{name: "sender uplink", Sampler: queues.Sampler{Q: n.Node(0).Up().Qdisc()}},
		tracedQueue{name: "receiver downlink", Sampler: queues.Sampler{Q: n.Node(1).Down().Qdisc()}})
	o.nodes = make([]netmodel.Counters, len(n.Nodes()))
	open := func(w io.Writer, header string) *bufio.Writer {
		if w == nil {
			return nil
		}
		b := bufio.NewWriterSize(w, 64<<10)
		b.WriteString(header + "\n")
		return b
	}
	o.qw = open(tr.Queues, TraceQueuesHeader)
	o.nw = open(tr.Nodes, TraceNodesHeader)
	o.fw = open(tr.Flows, TraceFlowsHeader)
	o.timer = n.Sim().NewTimer(o.tick)
	o.timer.SetClass(des.Hidden)
	n.Sim().Schedule(o.timer, n.Sim().Now()+tr.Every)
	return o, nil
}

// tracing reports whether the run writes a trace.
func (o *observer) tracing() bool { return o != nil && o.trace != nil }

// addFlow traces a TCP flow's sender from now on.
func (o *observer) addFlow(ep *tcp.Endpoint) {
	if o.tracing() {
		o.flows = append(o.flows, tracedFlow{ep: ep})
	}
}

func (o *observer) tick(now des.Time) {
	o.fired++
	o.sample(now)
	if next := now + o.trace.Every; next <= o.limit {
		o.n.Sim().Schedule(o.timer, next)
	}
}

// sample writes one row per queue, node and flow at now.
func (o *observer) sample(now des.Time) {
	o.last = now
	t := strconv.FormatFloat(now.Seconds(), 'f', 9, 64)
	if o.qw != nil {
		for i := range o.queues {
			tq := &o.queues[i]
			x := tq.Next()
			b := append(o.row[:0], t...)
			b = append(b, ',')
			b = append(b, tq.name...)
			b = appendUints(b, uint64(x.Bytes), uint64(x.Len), x.Enqueued, x.Dequeued)
			b = x.AppendCSV(b)
			o.qw.Write(append(b, '\n'))
			o.row = b
		}
	}
	if o.nw != nil {
		for i, nd := range o.n.Nodes() {
			c, p := nd.Counters, &o.nodes[i]
			var drops, pdrops uint64
			for r := range c.Drops {
				drops += c.Drops[r]
				pdrops += p.Drops[r]
			}
			b := append(o.row[:0], t...)
			b = appendUints(b, uint64(i), c.SentPackets-p.SentPackets, c.SentBytes-p.SentBytes,
				c.RecvPackets-p.RecvPackets, c.RecvBytes-p.RecvBytes, drops-pdrops)
			o.nw.Write(append(b, '\n'))
			o.row = b
			*p = c
		}
	}
	if o.fw != nil {
		for i := range o.flows {
			f := &o.flows[i]
			st := f.ep.Stats()
			b := append(o.row[:0], t...)
			b = appendUints(b, uint64(i))
			b = st.AppendCSV(b, f.prev)
			o.fw.Write(append(b, '\n'))
			o.row = b
			f.prev = st.Retransmits
		}
	}
}

func appendUints(b []byte, vs ...uint64) []byte {
	for _, v := range vs {
		b = append(b, ',')
		b = strconv.AppendUint(b, v, 10)
	}
	return b
}

// finish takes the last sample at now, where the run's counters are read
// (unless a sample was just taken there), stops the trace and the
// captures, and flushes every writer.
func (o *observer) finish(now des.Time) error {
	if o == nil || o.done {
		return nil
	}
	o.done = true
	for _, nd := range o.n.Nodes() {
		nd.SetTap(nil)
	}
	var err error
	for i, c := range o.caps {
		if e := c.Flush(); e != nil && err == nil {
			err = fmt.Errorf("bulk: capture of node %d: %w", o.capNodes[i], e)
		}
	}
	if o.trace != nil {
		o.n.Sim().Cancel(o.timer)
		if now > o.last || o.last == 0 {
			o.sample(now)
		}
		for _, w := range []*bufio.Writer{o.qw, o.nw, o.fw} {
			if w != nil {
				if e := w.Flush(); e != nil && err == nil {
					err = fmt.Errorf("bulk: trace: %w", e)
				}
			}
		}
	}
	return err
}
