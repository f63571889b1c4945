package tcp

import (
	"crypto/sha256"
	"hash"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
	"github.com/uplinksim/uplink/queues"
)

// testNet is a model-level testbed: a network on a plain des.Sim and a TCP
// engine, driven by hand (no bubble, no goroutines).
type testNet struct {
	t   testing.TB
	sim *des.Sim
	net *netmodel.Network
	eng *Engine
}

// link describes one node: uplink and downlink rates (0: unlimited) and
// queues (nil: unlimited FIFO).
type link struct {
	up, down   int64
	upQ, downQ queues.Qdisc
}

// buildNet makes a network of the given nodes (10 ms one way unless ncfg
// says otherwise).
func buildNet(t testing.TB, ncfg netmodel.Config, nodes ...link) (*des.Sim, *netmodel.Network) {
	t.Helper()
	sim := des.NewSim()
	if ncfg.Latency == nil {
		ncfg.Latency = netmodel.FixedLatency(10 * des.Millisecond)
	}
	n, err := netmodel.New(sim, ncfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range nodes {
		if _, err := n.AddNode(netmodel.NodeConfig{
			Up:   netmodel.LinkConfig{Qdisc: l.upQ, Shaper: netmodel.OneMTUBurst(l.up)},
			Down: netmodel.LinkConfig{Qdisc: l.downQ, Shaper: netmodel.OneMTUBurst(l.down)},
		}); err != nil {
			t.Fatal(err)
		}
	}
	return sim, n
}

func newTestNet(t testing.TB, cfg Config, ncfg netmodel.Config, nodes ...link) *testNet {
	t.Helper()
	sim, n := buildNet(t, ncfg, nodes...)
	eng, err := NewEngine(n, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &testNet{t: t, sim: sim, net: n, eng: eng}
}

// flow is a bulk transfer at model level: an always-backlogged writer on
// the connecting side (up to total bytes, then CloseWrite; 0: forever) and
// a reader on the accepting side that reads everything at once.
type flow struct {
	tn       *testNet
	cli, srv *Endpoint
	total    int64
	written  int64
	read     int64
	rng      *rand.Rand
	chunk    []byte
	off      int
	wh, rh   hash.Hash
	rbuf     []byte
	eof      bool
	eofAt    des.Time
	startAt  des.Time
	cliErr   error
	srvErr   error
	noHash   bool
	onRead   func(n int, now des.Time)
	lp       *ListenPort
	accepted bool
	noClose  bool // do not CloseWrite after total bytes
	paused   bool // the reader does not read
}

// startFlow connects node from to node to (port) and starts the transfer.
func (tn *testNet) startFlow(from, to int, port uint16, total int64, seed uint64) *flow {
	tn.t.Helper()
	f := &flow{tn: tn, total: total, rng: rand.New(rand.NewPCG(seed, 77)), chunk: make([]byte, 64<<10),
		wh: sha256.New(), rh: sha256.New(), rbuf: make([]byte, 64<<10), off: -1}
	now := tn.sim.Now()
	f.startAt = now
	lp, err := tn.eng.Listen(to, port, func(ep *Endpoint, now des.Time) bool {
		f.srv = ep
		f.accepted = true
		ep.SetCallbacks(Callbacks{
			Readable: f.readable,
			Closed:   func(err error, _ des.Time) { f.srvErr = err },
		})
		return true
	})
	if err != nil {
		tn.t.Fatal(err)
	}
	f.lp = lp
	cli, err := tn.eng.Connect(from, to, port, now)
	if err != nil {
		tn.t.Fatal(err)
	}
	f.cli = cli
	// The writer runs after every other event of the instant that woke
	// it, as a woken process runs after the softirq's burst of ACKs on
	// Linux, and as real code runs under des.Live: it sees the space that
	// all of the instant's ACKs freed, not the first ACK's.
	wake := tn.sim.NewTimer(f.writable)
	wake.SetOrder(des.MaxOrder)
	cli.SetCallbacks(Callbacks{
		Established: f.writable,
		Writable:    func(now des.Time) { tn.sim.Schedule(wake, now) },
		Closed:      func(err error, _ des.Time) { f.cliErr = err },
	})
	return f
}

func (f *flow) fill() {
	for i := 0; i < len(f.chunk); i += 8 {
		v := f.rng.Uint64()
		for j := 0; j < 8; j++ {
			f.chunk[i+j] = byte(v >> (8 * j))
		}
	}
	f.off = 0
}

func (f *flow) writable(now des.Time) {
	ep := f.cli
	if ep.State() != StateEstablished {
		return
	}
	for f.total == 0 || f.written < f.total {
		if f.off < 0 || f.off == len(f.chunk) {
			if f.noHash && f.off == len(f.chunk) {
				f.off = 0
			} else {
				f.fill()
			}
		}
		b := f.chunk[f.off:]
		if f.total > 0 {
			b = b[:min(int64(len(b)), f.total-f.written)]
		}
		n, err := ep.Write(b, now)
		if !f.noHash {
			f.wh.Write(b[:n])
		}
		f.off += n
		f.written += int64(n)
		if err != nil || n < len(b) {
			return
		}
	}
	if f.total > 0 && f.written == f.total && !f.noClose {
		ep.CloseWrite(now)
	}
}

func (f *flow) readable(now des.Time) {
	ep := f.srv
	for !f.paused {
		n, err := ep.Read(f.rbuf, now)
		if n > 0 {
			if !f.noHash {
				f.rh.Write(f.rbuf[:n])
			}
			f.read += int64(n)
			if f.onRead != nil {
				f.onRead(n, now)
			}
		}
		if err == io.EOF {
			if !f.eof {
				f.eof, f.eofAt = true, now
				ep.Close(now)
			}
			return
		}
		if n == 0 || err != nil {
			return
		}
	}
}

// intact reports whether everything written arrived, in order.
func (f *flow) intact() bool {
	return f.eof && f.read == f.written && string(f.wh.Sum(nil)) == string(f.rh.Sum(nil))
}
