// Package bulk runs bulk transfers between two nodes: the simplest job that
// exercises the whole path from a real transport's socket write to its
// socket read, and the place to watch a queue discipline work.
package bulk

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	quicgo "github.com/quic-go/quic-go"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
	"github.com/uplinksim/uplink/queues"
	"github.com/uplinksim/uplink/transports/quic"
	"github.com/uplinksim/uplink/transports/simnet"
	"github.com/uplinksim/uplink/transports/tcp"
	"github.com/uplinksim/uplink/transports/udp"
)

// Config describes transfers from node 0 to node 1, one connection per
// flow: QUIC (quic-go on virtual UDP) or TCP (uplink's TCP model). Rate,
// latency and loss apply in both directions, like netem on loopback.
type Config struct {
	Transport string // "quic" or "tcp"
	// Backend is the network the transfer runs on: "" for uplink's model,
	// or BackendSimnet for github.com/marcopolo/simnet v0.0.7 (the study's
	// harness network; transports/simnet): QUIC only, every link an
	// FQ-CoDel and a one-MTU token bucket at Rate, RTT split evenly, no
	// loss, no queue, host stage or send-mode choice. Its nodes have one
	// socket each, so every flow's connection shares node 0's one quic-go
	// transport (and one simnet FQ-CoDel bucket: the flows have the same
	// address pair).
	Backend  string
	Rate     int64    // bit/s on every uplink and downlink; 0: unlimited
	RTT      des.Time // round-trip propagation delay, split evenly
	Loss     float64  // per packet, per direction
	Duration des.Time // send for this long (when Bytes is 0)
	Bytes    int64    // each flow sends exactly this many bytes, then closes
	Flows    int      // parallel connections; 0: 1
	Seed     uint64
	// Queue discipline specs (queues.New) of every uplink, every downlink,
	// and of a host stage in front of every uplink ("" for none) drained at
	// HostRate.
	UpQdisc, DownQdisc, HostQdisc string
	HostRate                      int64
	// SendMode is the UDP sockets' (QUIC only; TCP keeps its own send
	// buffer).
	SendMode netmodel.SendMode
	// GSO sends the UDP sockets' datagrams of one instant and destination
	// as GSO units (netmodel.Config.GSO; QUIC only).
	GSO bool
	// NetemLimit is the packets each direction's latency pipe holds, as
	// netem's limit (netmodel.Config.NetemLimit); 0: unlimited.
	NetemLimit int
	// NetemShared makes the two directions share one netem queue of
	// NetemLimit packets, as netem on lo carries both
	// (netmodel.Config.NetemShared).
	NetemShared bool
	// CPU is both hosts' cost per packet received and sent
	// (netmodel.NodeConfig.CPU); the zero value is off.
	CPU des.CPUSpec
	// MTU is every link's MTU in bytes (netmodel.Config.MTU; 0: 1 500).
	// With a nil TCP the TCP model's MSS is MTU − 40; a given TCP keeps
	// its MSS, which must fit. QUIC's packets keep quic-go's sizes.
	MTU int
	// SockBufMax and SndBufMax cap the UDP sockets' buffer requests
	// before doubling (netmodel.Config: Linux's rmem_max, and wmem_max
	// below it); 0: no cap but the 256 MiB ceiling.
	SockBufMax, SndBufMax int
	// TCP is the TCP model of Transport "tcp"; nil: tcp.LinuxConfig().
	// Its Seed is replaced by Seed.
	TCP *tcp.Config
	// Trace and Captures (uplink's model only) write time series of the
	// queues, nodes and TCP flows, and pcapng captures of chosen nodes;
	// neither changes the run's results (trace.go).
	Trace    *Trace
	Captures []Capture
}

// QueueReport is one queue's counters over the run.
type QueueReport struct {
	Name  string
	Spec  string
	Stats queues.Stats
}

// FlowReport is what one flow measured.
type FlowReport struct {
	Bytes int64 // application bytes received
	// Elapsed is the virtual time from the first byte written to the
	// flow's last read (fixed-size transfers), or Duration.
	Elapsed    des.Time
	GoodputBps float64 // Bytes ×8 / the run's Elapsed (Result.FlowGoodput)
	// The sender's counters: QUIC packets sent and declared lost, or TCP
	// segments sent and retransmitted, fast recoveries and retransmission
	// timeouts.
	PacketsSent, PacketsLost      uint64
	SegmentsSent, SegmentsRetrans uint64
	FastRecoveries, RTOs          uint64
}

// Result is what a transfer measured.
type Result struct {
	// Config is the configuration the transfer ran with, defaults filled
	// in.
	Config        Config
	Elapsed       des.Time // virtual time from the first byte written to the last read (or Duration)
	BytesReceived int64
	GoodputBps    float64 // application bytes received ×8 / Elapsed, all flows
	FlowGoodput   []float64
	SHA256        [32]byte // of flow 0's bytes (fixed-size transfers)
	PacketsSent   uint64   // senders' QUIC packets (quic-go's count)
	PacketsLost   uint64   // declared lost by the senders, hence retransmitted
	NetPackets    uint64   // packets that left any uplink: the simulated packets
	NetBytes      uint64
	LossDrops     uint64
	QueueDrops    uint64
	SockDrops     uint64
	NetemDrops    uint64 // the latency pipes' tail drops (NetemLimit)
	Events        uint64
	CoreWakes     uint64
	Queues        []QueueReport // the data direction: host stage, uplink, downlink

	// TCP: the senders' segments (data, retransmissions and the few
	// control segments), retransmitted segments, fast recoveries and
	// retransmission timeouts, over all flows.
	SegmentsSent, SegmentsRetrans uint64
	FastRecoveries, RTOs          uint64

	Flows []FlowReport // in flow order; their counters add up to the totals

	// Nodes are the nodes' counters, by node (uplink's model only).
	Nodes []netmodel.Counters
}

// BackendSimnet is Config.Backend for simnet.
const BackendSimnet = "simnet"

func (c *Config) defaults() error {
	switch c.Backend {
	case "":
	case BackendSimnet:
		if err := c.checkSimnet(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("bulk: backend %q not supported (valid: \"\" for uplink's model, %s)", c.Backend, BackendSimnet)
	}
	switch c.Transport {
	case "quic":
		if c.TCP != nil {
			return errors.New("bulk: a TCP configuration with transport quic; use transport tcp")
		}
	case "tcp":
		if c.SendMode != netmodel.NeverBlock {
			return errors.New("bulk: SendMode applies to QUIC's UDP sockets; TCP keeps its own send buffer")
		}
		if c.GSO {
			return errors.New("bulk: GSO applies to QUIC's UDP sockets; TCP sends segment by segment")
		}
		t := tcp.LinuxConfig()
		if c.MTU > 0 {
			t.MSS = c.MTU - 40
		}
		if c.TCP != nil {
			t = *c.TCP
		}
		t.Seed = c.Seed
		c.TCP = &t
	default:
		return fmt.Errorf("bulk: transport %q not supported (valid: quic, tcp)", c.Transport)
	}
	if c.Bytes <= 0 && c.Duration <= 0 {
		return errors.New("bulk: give a duration or a byte count")
	}
	if c.Flows == 0 {
		c.Flows = 1
	}
	if c.Flows < 0 || c.Flows > 1000 {
		return fmt.Errorf("bulk: %d flows: want 1 to 1000", c.Flows)
	}
	if c.NetemLimit < 0 {
		return fmt.Errorf("bulk: netem limit %d: want 0 (unlimited) or more packets", c.NetemLimit)
	}
	if c.NetemShared && c.NetemLimit == 0 {
		return errors.New("bulk: a shared netem queue needs a netem limit")
	}
	if c.Backend == BackendSimnet {
		return nil
	}
	if c.UpQdisc == "" {
		c.UpQdisc = "pfifo:limit=1000"
	}
	if c.DownQdisc == "" {
		c.DownQdisc = "fifo"
	}
	if c.HostQdisc != "" && c.HostRate <= 0 {
		c.HostRate = 10e9
	}
	return nil
}

// checkSimnet refuses what simnet cannot model: any transport but QUIC,
// loss, an unlimited rate, queue disciplines, a host stage and blocking
// sends.
func (c *Config) checkSimnet() error {
	switch {
	case c.Transport != "quic":
		return fmt.Errorf("bulk: backend simnet carries datagrams only: transport %q, want quic", c.Transport)
	case c.Loss != 0:
		return errors.New("bulk: backend simnet has no random loss")
	case c.GSO || c.NetemLimit != 0:
		return errors.New("bulk: backend simnet sends datagram by datagram and has no netem queue: no GSO or netem limit")
	case !c.CPU.Off():
		return errors.New("bulk: backend simnet has no host CPU model")
	case c.Rate == 0:
		return errors.New("bulk: backend simnet has no unlimited link: give a rate")
	case c.UpQdisc != "" || c.DownQdisc != "" || c.HostQdisc != "":
		return errors.New("bulk: backend simnet has its own FQ-CoDel on every link: no queue disciplines or host stage")
	case c.SendMode != netmodel.NeverBlock:
		return errors.New("bulk: backend simnet's sockets never block a write")
	case c.Trace != nil || len(c.Captures) > 0:
		return errors.New("bulk: backend simnet has no trace or capture")
	case c.MTU != 0 || c.SockBufMax != 0 || c.SndBufMax != 0:
		return errors.New("bulk: backend simnet has its own MTU and socket buffers")
	}
	return nil
}

// Run performs the transfer. It must run inside a synctest bubble (entered
// by the command, or synctest.Test in a test); every goroutine it starts
// has ended when it returns.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.defaults(); err != nil {
		return Result{}, err
	}
	var res Result
	var err error
	switch {
	case cfg.Backend == BackendSimnet:
		res, err = runSimnet(ctx, cfg)
	default:
		var live *des.Live
		var n *netmodel.Network
		live, n, err = newNetwork(cfg)
		if err != nil {
			return Result{}, err
		}
		var obs *observer
		if obs, err = newObserver(cfg, n); err != nil {
			return Result{}, err
		}
		live.Start()
		defer live.Stop()
		if cfg.Transport == "tcp" {
			res, err = runTCP(ctx, cfg, live, n, obs)
		} else {
			res, err = runUplinkQUIC(ctx, cfg, live, n, obs)
		}
	}
	if err != nil {
		return Result{}, err
	}
	res.Config = cfg
	return res, nil
}

// newNetwork builds the two nodes and their queues.
func newNetwork(cfg Config) (*des.Live, *netmodel.Network, error) {
	sim := des.NewSim()
	live := des.NewLive(sim)
	n, err := netmodel.New(sim, netmodel.Config{
		Latency:     netmodel.FixedLatency(cfg.RTT / 2),
		Loss:        cfg.Loss,
		Seed:        cfg.Seed,
		GSO:         cfg.GSO,
		NetemLimit:  cfg.NetemLimit,
		NetemShared: cfg.NetemShared,
		MTU:         cfg.MTU,
		SockBufMax:  cfg.SockBufMax,
		SndBufMax:   cfg.SndBufMax,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("bulk: %w", err)
	}
	streams := des.NewStreams(cfg.Seed)
	for i := range 2 {
		q := func(kind, spec string) (queues.Qdisc, error) {
			d, err := queues.New(spec, streams.Stream(fmt.Sprintf("qdisc/%s/%d", kind, i)))
			if err != nil {
				return nil, fmt.Errorf("bulk: %s queue: %w", kind, err)
			}
			return d, nil
		}
		up, err := q("uplink", cfg.UpQdisc)
		if err != nil {
			return nil, nil, err
		}
		down, err := q("downlink", cfg.DownQdisc)
		if err != nil {
			return nil, nil, err
		}
		nc := netmodel.NodeConfig{
			Up:   netmodel.LinkConfig{Qdisc: up, Shaper: netmodel.OneMTUBurst(cfg.Rate)},
			Down: netmodel.LinkConfig{Qdisc: down, Shaper: netmodel.OneMTUBurst(cfg.Rate)},
			CPU:  cfg.CPU,
		}
		if cfg.HostQdisc != "" {
			h, err := q("host", cfg.HostQdisc)
			if err != nil {
				return nil, nil, err
			}
			nc.UpHost = &netmodel.LinkConfig{Qdisc: h, Shaper: netmodel.OneMTUBurst(cfg.HostRate)}
		}
		if _, err := n.AddNode(nc); err != nil {
			return nil, nil, fmt.Errorf("bulk: node %d: %w", i, err)
		}
	}
	return live, n, nil
}

// flowResult is what the receiver saw of one flow.
type flowResult struct {
	received int64
	sum      [32]byte
	at       des.Time
	err      error
}

// flowTable is the receivers' results, shared with the receiving
// goroutines.
type flowTable struct {
	mu    sync.Mutex
	flows []flowResult
}

// receive reads flow f from r to EOF, counting bytes as they arrive and
// hashing them (fixed-size transfers); at EOF it records the virtual time
// and the hash. A read error is recorded for fixed-size transfers only
// (timed transfers end by closing the connections).
func (ft *flowTable) receive(now func() des.Time, r io.Reader, f int, cfg Config) {
	h := sha256.New()
	buf := make([]byte, 64<<10)
	for {
		k, err := r.Read(buf)
		if cfg.Bytes > 0 {
			h.Write(buf[:k])
		}
		ft.mu.Lock()
		ft.flows[f].received += int64(k)
		ft.mu.Unlock()
		if err == io.EOF {
			ft.mu.Lock()
			ft.flows[f].at = now()
			copy(ft.flows[f].sum[:], h.Sum(nil))
			ft.mu.Unlock()
			return
		}
		if err != nil {
			if cfg.Bytes > 0 {
				ft.mu.Lock()
				ft.flows[f].err = fmt.Errorf("flow %d read: %w", f, err)
				ft.mu.Unlock()
			}
			return
		}
	}
}

// finish fills res with the elapsed time, the bytes received, the goodput
// per flow and flow 0's hash, once every flow ended (fixed-size transfers)
// or at the deadline.
// awaitFlows waits for the senders, then for the receivers to see every
// byte (a fixed-size transfer) or for the deadline (a timed one), and fills
// in what the flows measured.
func awaitFlows(now func() des.Time, cliWG *sync.WaitGroup, cliErrs []error, srvWG *sync.WaitGroup, ft *flowTable, cfg Config, start, deadline des.Time) (Result, error) {
	cliWG.Wait()
	for _, err := range cliErrs {
		if err != nil {
			return Result{}, err
		}
	}
	var res Result
	if cfg.Bytes > 0 {
		srvWG.Wait()
	} else if d := deadline - now(); d > 0 {
		time.Sleep(d.Duration())
	}
	if err := ft.finish(&res, cfg, start); err != nil {
		return Result{}, err
	}
	return res, nil
}

func (ft *flowTable) finish(res *Result, cfg Config, start des.Time) error {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	if cfg.Bytes > 0 {
		var last des.Time
		for f := range ft.flows {
			if ft.flows[f].err != nil {
				return fmt.Errorf("bulk: server: %w", ft.flows[f].err)
			}
			last = max(last, ft.flows[f].at)
		}
		res.Elapsed = last - start
		res.SHA256 = ft.flows[0].sum
	} else {
		res.Elapsed = cfg.Duration
	}
	for f := range ft.flows {
		g := float64(ft.flows[f].received) * 8 / res.Elapsed.Seconds()
		fr := FlowReport{Bytes: ft.flows[f].received, Elapsed: cfg.Duration, GoodputBps: g}
		if cfg.Bytes > 0 {
			fr.Elapsed = ft.flows[f].at - start
		}
		res.BytesReceived += ft.flows[f].received
		res.FlowGoodput = append(res.FlowGoodput, g)
		res.Flows = append(res.Flows, fr)
	}
	return nil
}

// collect adds the network's counters, the data direction's queues and
// the model's event counts to res, and ends the trace and captures at the
// instant it reads them.
func collect(res *Result, cfg Config, live *des.Live, n *netmodel.Network, obs *observer) error {
	if res.Elapsed > 0 {
		res.GoodputBps = float64(res.BytesReceived) * 8 / res.Elapsed.Seconds()
	}
	live.Lock()
	obsErr := obs.finish(n.Sim().Now())
	for _, nd := range n.Nodes() {
		c := nd.Counters
		res.Nodes = append(res.Nodes, c)
		res.NetPackets += c.SentPackets
		res.NetBytes += c.SentBytes
		res.LossDrops += c.Drops[netmodel.DropLoss]
		res.QueueDrops += c.Drops[netmodel.DropQueue]
		res.SockDrops += c.Drops[netmodel.DropSockBuf]
		res.NetemDrops += c.Drops[netmodel.DropNetem]
	}
	if h := n.Node(0).Host(); h != nil {
		res.Queues = append(res.Queues, QueueReport{"sender host", cfg.HostQdisc, *h.Qdisc().Stats()})
	}
	res.Queues = append(res.Queues,
		QueueReport{"sender uplink", cfg.UpQdisc, *n.Node(0).Up().Qdisc().Stats()},
		QueueReport{"receiver downlink", cfg.DownQdisc, *n.Node(1).Down().Qdisc().Stats()})
	res.Events = n.Sim().Fired()
	if obs != nil {
		res.Events -= obs.fired
	}
	live.Unlock()
	res.CoreWakes = live.Wakes()
	return obsErr
}

// quicEnds are a QUIC transfer's two ends on some network: the server's
// socket, a dialer that opens flow f's connection to it, and the clock.
type quicEnds struct {
	srv  net.PacketConn
	dial func(ctx context.Context, f int, conf *quicgo.Config) (*quicgo.Conn, error)
	now  func() des.Time
}

// runUplinkQUIC runs the flows over quic-go on uplink's model, each flow on
// a socket of its own on node 0, and adds the model's counters.
func runUplinkQUIC(ctx context.Context, cfg Config, live *des.Live, n *netmodel.Network, obs *observer) (Result, error) {
	st := udp.NewStack(live, n)
	srvConn, err := st.Listen(1, 4433, cfg.SendMode)
	if err != nil {
		return Result{}, err
	}
	defer srvConn.Close()
	var cleanup []func() error
	defer func() {
		for _, c := range slices.Backward(cleanup) {
			c()
		}
	}()
	ends := quicEnds{
		srv: srvConn,
		now: live.Now,
		dial: func(ctx context.Context, _ int, conf *quicgo.Config) (*quicgo.Conn, error) {
			pc, err := st.Listen(0, 0, cfg.SendMode)
			if err != nil {
				return nil, err
			}
			cleanup = append(cleanup, pc.Close)
			tr, conn, err := quic.Dial(ctx, pc, srvConn.LocalAddr(), quic.ClientTLS(), conf)
			if err != nil {
				return nil, err
			}
			cleanup = append(cleanup, tr.Close)
			return conn, nil
		},
	}
	res, err := runQUIC(ctx, cfg, ends)
	if err != nil {
		return Result{}, err
	}
	if err := collect(&res, cfg, live, n, obs); err != nil {
		return Result{}, err
	}
	return res, nil
}

// simnetPort is both nodes' UDP port on simnet.
const simnetPort = 4433

// runSimnet runs the flows over quic-go on simnet: node 0's one socket
// carries every flow through one quic-go transport. The counters are
// simnet's: the datagrams and UDP payload bytes the endpoints wrote.
func runSimnet(ctx context.Context, cfg Config) (Result, error) {
	nw, err := simnet.New(simnet.Config{
		Up:     []int64{cfg.Rate, cfg.Rate},
		Down:   []int64{cfg.Rate, cfg.Rate},
		OneWay: func(int, int) des.Time { return cfg.RTT / 2 },
		Port:   simnetPort,
	})
	if err != nil {
		return Result{}, fmt.Errorf("bulk: %w", err)
	}
	cli := &quicgo.Transport{Conn: nw.Conn(0)}
	// The endpoints close first: their reads end, so the transports'
	// closes find their read loops ended.
	defer cli.Close()
	defer nw.Close()
	epoch := time.Now()
	ends := quicEnds{
		srv: nw.Conn(1),
		now: func() des.Time { return des.Time(time.Since(epoch)) },
		dial: func(ctx context.Context, _ int, conf *quicgo.Config) (*quicgo.Conn, error) {
			c, err := cli.Dial(ctx, nw.Addr(1), quic.ClientTLS(), conf)
			if err != nil {
				return nil, fmt.Errorf("quic: dial %v: %w", nw.Addr(1), err)
			}
			return c, nil
		},
	}
	res, err := runQUIC(ctx, cfg, ends)
	if err != nil {
		return Result{}, err
	}
	if d := nw.Dropped(); d > 0 {
		return Result{}, fmt.Errorf("bulk: simnet dropped %d packets for an unknown destination", d)
	}
	if res.Elapsed > 0 {
		res.GoodputBps = float64(res.BytesReceived) * 8 / res.Elapsed.Seconds()
	}
	for i := range nw.Len() {
		s := nw.Stats(i)
		res.NetPackets += uint64(s.PacketsSent)
		res.NetBytes += uint64(s.BytesSent)
	}
	return res, nil
}

// runQUIC runs the flows over quic-go between ends, one connection and one
// stream each; the connections are closed when it returns.
func runQUIC(ctx context.Context, cfg Config, ends quicEnds) (Result, error) {
	tlsConf, err := quic.ServerTLS()
	if err != nil {
		return Result{}, err
	}
	qconf := &quicgo.Config{MaxIdleTimeout: 30 * time.Second}
	srvTr, ln, err := quic.Listen(ends.srv, tlsConf, qconf)
	if err != nil {
		return Result{}, err
	}
	defer srvTr.Close()
	defer ln.Close()

	// The server: one reader per accepted connection. The first stream
	// byte names the flow.
	ft := &flowTable{flows: make([]flowResult, cfg.Flows)}
	var srvWG sync.WaitGroup
	srvWG.Add(1)
	go func() {
		defer srvWG.Done()
		for range cfg.Flows {
			conn, err := ln.Accept(ctx)
			if err != nil {
				return
			}
			srvWG.Add(1)
			go func() {
				defer srvWG.Done()
				defer conn.CloseWithError(0, "")
				str, err := conn.AcceptStream(ctx)
				if err != nil {
					return
				}
				var id [1]byte
				if _, err := io.ReadFull(str, id[:]); err != nil || int(id[0]) >= cfg.Flows {
					return
				}
				ft.receive(ends.now, str, int(id[0]), cfg)
			}()
		}
	}()

	// The clients.
	start := ends.now()
	deadline := start + cfg.Duration
	conns := make([]*quicgo.Conn, 0, cfg.Flows)
	defer func() {
		for _, c := range conns {
			c.CloseWithError(0, "done")
		}
	}()
	var cliWG sync.WaitGroup
	cliErrs := make([]error, cfg.Flows)
	for f := range cfg.Flows {
		conn, err := ends.dial(ctx, f, qconf)
		if err != nil {
			return Result{}, err
		}
		conns = append(conns, conn)
		cliWG.Add(1)
		go func() {
			defer cliWG.Done()
			cliErrs[f] = sendFlow(ends.now, conn, f, cfg, deadline)
		}()
	}
	res, err := awaitFlows(ends.now, &cliWG, cliErrs, &srvWG, ft, cfg, start, deadline)
	if err != nil {
		return Result{}, err
	}
	for f, c := range conns {
		s := c.ConnectionStats()
		res.PacketsSent += s.PacketsSent
		res.PacketsLost += s.PacketsLost
		res.Flows[f].PacketsSent, res.Flows[f].PacketsLost = s.PacketsSent, s.PacketsLost
		c.CloseWithError(0, "done")
	}
	ln.Close()
	srvWG.Wait()
	return res, nil
}

// tcpPort is the receiver's listening port with Transport "tcp".
const tcpPort = 5201

// runTCP runs the flows over the TCP model, one connection each.
func runTCP(ctx context.Context, cfg Config, live *des.Live, n *netmodel.Network, obs *observer) (Result, error) {
	st, err := tcp.NewStack(live, n, *cfg.TCP)
	if err != nil {
		return Result{}, fmt.Errorf("bulk: %w", err)
	}
	ln, err := st.Listen(1, tcpPort)
	if err != nil {
		return Result{}, fmt.Errorf("bulk: %w", err)
	}

	// Teardown, on every return: the clients' connections close (a FIN
	// after the data written), then the listener and the receivers'
	// connections (a reset where data is left unread, as at the end of a
	// timed transfer); every goroutine has ended when it returns.
	var (
		srvMu    sync.Mutex
		srvConns []net.Conn
		stopping bool
		conns    []*tcp.Conn
		srvWG    sync.WaitGroup
		cliWG    sync.WaitGroup
		stopOnce sync.Once
	)
	stop := func() {
		stopOnce.Do(func() {
			for _, c := range conns {
				c.Close()
			}
			cliWG.Wait()
			ln.Close()
			srvMu.Lock()
			stopping = true
			for _, c := range srvConns {
				c.Close()
			}
			srvMu.Unlock()
			srvWG.Wait()
		})
	}
	defer stop()

	// The server: one reader per accepted connection. The first byte names
	// the flow.
	ft := &flowTable{flows: make([]flowResult, cfg.Flows)}
	srvWG.Add(1)
	go func() {
		defer srvWG.Done()
		for range cfg.Flows {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			srvMu.Lock()
			if stopping {
				srvMu.Unlock()
				conn.Close()
				return
			}
			srvConns = append(srvConns, conn)
			srvMu.Unlock()
			srvWG.Add(1)
			go func() {
				defer srvWG.Done()
				defer conn.Close()
				var id [1]byte
				if _, err := io.ReadFull(conn, id[:]); err != nil || int(id[0]) >= cfg.Flows {
					return
				}
				ft.receive(live.Now, conn, int(id[0]), cfg)
			}()
		}
	}()

	// The clients.
	start := live.Now()
	deadline := start + cfg.Duration
	cliErrs := make([]error, cfg.Flows)
	for f := range cfg.Flows {
		conn, err := st.Dial(ctx, 0, ln.Addr())
		if err != nil {
			return Result{}, fmt.Errorf("bulk: flow %d: %w", f, err)
		}
		conns = append(conns, conn)
		if obs.tracing() {
			live.Lock()
			obs.addFlow(conn.Endpoint())
			live.Unlock()
		}
		cliWG.Add(1)
		go func() {
			defer cliWG.Done()
			if err := writeFlow(live.Now, conn, f, cfg, deadline); err != nil {
				cliErrs[f] = err
				return
			}
			if cfg.Bytes > 0 {
				if err := conn.CloseWrite(); err != nil {
					cliErrs[f] = fmt.Errorf("bulk: flow %d: close: %w", f, err)
				}
			}
		}()
	}
	res, err := awaitFlows(live.Now, &cliWG, cliErrs, &srvWG, ft, cfg, start, deadline)
	if err != nil {
		return Result{}, err
	}
	for f, c := range conns {
		s := c.Stats()
		res.SegmentsSent += s.SegsOut
		res.SegmentsRetrans += s.Retransmits
		res.FastRecoveries += s.FastRecoveries
		res.RTOs += s.RTOs
		fl := &res.Flows[f]
		fl.SegmentsSent, fl.SegmentsRetrans = s.SegsOut, s.Retransmits
		fl.FastRecoveries, fl.RTOs = s.FastRecoveries, s.RTOs
	}
	stop()
	if err := collect(&res, cfg, live, n, obs); err != nil {
		return Result{}, err
	}
	return res, nil
}

// sendFlow writes flow f's data on a new stream of conn, which it closes
// after a fixed-size transfer.
func sendFlow(now func() des.Time, conn *quicgo.Conn, f int, cfg Config, deadline des.Time) error {
	str, err := conn.OpenStreamSync(context.Background())
	if err != nil {
		return fmt.Errorf("bulk: flow %d: open stream: %w", f, err)
	}
	if err := writeFlow(now, str, f, cfg, deadline); err != nil {
		return err
	}
	if cfg.Bytes > 0 {
		return str.Close()
	}
	return nil
}

// flowWriter is a QUIC stream or a TCP connection.
type flowWriter interface {
	io.Writer
	SetWriteDeadline(time.Time) error
}

// writeFlow writes the flow's id byte, then exactly cfg.Bytes of seeded
// pseudo-random data (checked by hash), or one random chunk over and over
// until the deadline.
func writeFlow(now func() des.Time, w flowWriter, f int, cfg Config, deadline des.Time) error {
	if _, err := w.Write([]byte{byte(f)}); err != nil {
		return fmt.Errorf("bulk: flow %d: write: %w", f, err)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed+uint64(f), 0x6b756c62))
	chunk := make([]byte, 64<<10)
	var sent int64
	for cfg.Bytes <= 0 || sent < cfg.Bytes {
		if cfg.Bytes <= 0 && now() >= deadline {
			break
		}
		k := int64(len(chunk))
		if cfg.Bytes > 0 {
			k = min(k, cfg.Bytes-sent)
		}
		if cfg.Bytes > 0 || sent == 0 {
			fillRandom(rng, chunk[:k])
		}
		if cfg.Bytes <= 0 {
			w.SetWriteDeadline(time.Now().Add((deadline - now()).Duration()))
		}
		n, err := w.Write(chunk[:k])
		sent += int64(n)
		if err != nil {
			if cfg.Bytes <= 0 && errors.Is(err, os.ErrDeadlineExceeded) {
				break
			}
			return fmt.Errorf("bulk: flow %d: write: %w", f, err)
		}
	}
	return nil
}

// fillRandom fills b from rng, eight bytes per draw.
func fillRandom(rng *rand.Rand, b []byte) {
	for i := 0; i < len(b); i += 8 {
		v := rng.Uint64()
		for j := 0; j < 8 && i+j < len(b); j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
}
