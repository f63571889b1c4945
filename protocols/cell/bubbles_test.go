package cell

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
)

// TestCellsInConcurrentBubbles runs three small cells at once, each in a
// bubble of its own, in one process: go-libp2p, quic-go, yamux and
// go-libp2p-pubsub must keep no process-global state that the first bubble
// to touch it binds (a channel, a timer or a goroutine started once), or a
// second bubble touching it kills the process ("receive on synctest
// channel from outside bubble" and the like are fatal errors, not panics).
//
// Each cell also runs a probe, as a window driver would: every 10 ms of
// virtual time until the delivery starts (host building, dialling, mesh
// formation), it calls synctest.Wait, which returns only once every
// goroutine of the bubble (quic-go's, yamux's, go-libp2p's, gossipsub's,
// the event core's) is durably blocked. The probe stops before the
// publish: Run calls synctest.Wait itself once every receiver completed,
// and a bubble allows one caller at a time ("wait already in progress").
//
// The bubbles run from plain goroutines, each calling t.Run, rather than
// from parallel subtests: the testing package runs at most -test.parallel
// (GOMAXPROCS by default) parallel subtests at once, which would run the
// cells two at a time on a two-core machine.
func TestCellsInConcurrentBubbles(t *testing.T) {
	cases := []struct {
		transport, profile string
		seed               uint64
	}{
		{"quic", "harness", 11},
		{"tcp", "shadow", 12},
		{"quic", "kernel", 13},
	}
	var wg sync.WaitGroup
	for _, c := range cases {
		wg.Go(func() {
			t.Run(fmt.Sprintf("%s-%d", c.transport, c.seed), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					p, err := LookupProfile(c.profile)
					require.NoError(t, err)
					g := StudyGossip()
					g.D, g.Dlo, g.Dhi = 4, 3, 6
					stop, stopped := make(chan struct{}), make(chan struct{})
					var waits int
					var longest time.Duration
					go func() {
						defer close(stopped)
						for {
							select {
							case <-stop:
								return
							case <-time.After(10 * time.Millisecond):
							}
							w0 := des.WallNow()
							synctest.Wait()
							waits++
							longest = max(longest, des.WallNow()-w0)
						}
					}()
					rec, err := Run(Config{
						Seed: c.seed, N: 16, Degree: 8, Payload: 128 << 10,
						Transport: c.transport, Profile: p, Gossip: g, Wait: synctest.Wait,
						PhaseHook: func(phase string) {
							if phase == "delivery" {
								close(stop)
								<-stopped
							}
						},
					})
					require.NoError(t, err)
					require.Equal(t, 15, rec.Completed, "receivers completed")
					require.NotNil(t, rec.LastS)
					require.Positive(t, waits)
					t.Logf("p50 %.3f s, last %.3f s; %d probes until the publish at %.2f s, the longest synctest.Wait %v",
						*rec.P50S, *rec.LastS, waits, rec.PublishAtS, longest)
				})
			})
		})
	}
	wg.Wait()
}

// A split network: hosts of one network in several bubbles, each bubble a
// partition with its own virtual clock, advancing in lock-step windows.
// Datagrams that cross partitions go through a hand-off made outside every
// bubble (splitCoordinator), exchanged at the end of each window. A window
// equals the one-way latency, so a datagram sent in one window arrives in
// a later one: the exchange is never late, and each partition delivers it
// at its exact arrival instant.

// splitEpoch is every bubble's start: midnight UTC, 2000-01-01.
var splitEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// splitDatagram is a datagram on the split network; arrive is its arrival
// instant since splitEpoch.
type splitDatagram struct {
	from, to netip.AddrPort
	arrive   time.Duration
	data     []byte
}

// splitReport is what a partition hands the coordinator at a window end:
// the datagrams for other partitions sent in the window, and whether its
// work is done.
type splitReport struct {
	sent []splitDatagram
	done bool
}

// splitReply is the coordinator's answer: the datagrams for the partition,
// and whether every partition is done.
type splitReply struct {
	deliver []splitDatagram
	stop    bool
}

// splitCoordinator lives outside every bubble: its channels belong to no
// bubble, so a partition blocked on them is not durably blocked and its
// clock stands still until every partition has reached the window end.
type splitCoordinator struct {
	owner   map[netip.Addr]int // node address -> partition
	reports []chan splitReport
	replies []chan splitReply
	windows int
}

func newSplitCoordinator(parts int, owner map[netip.Addr]int) *splitCoordinator {
	c := &splitCoordinator{owner: owner}
	for range parts {
		c.reports = append(c.reports, make(chan splitReport))
		c.replies = append(c.replies, make(chan splitReply))
	}
	return c
}

// run exchanges datagrams at every window end until all partitions are
// done.
func (c *splitCoordinator) run() {
	for {
		deliver := make([][]splitDatagram, len(c.reports))
		stop := true
		for _, ch := range c.reports {
			r := <-ch
			stop = stop && r.done
			for _, d := range r.sent {
				p := c.owner[d.to.Addr()]
				deliver[p] = append(deliver[p], d)
			}
		}
		c.windows++
		for i, ch := range c.replies {
			ch <- splitReply{deliver: deliver[i], stop: stop}
		}
		if stop {
			return
		}
	}
}

// splitPartition is one bubble's part of the network. Each node's uplink
// is a FIFO of rate bits/s (unbounded); the one-way latency is the same
// between every pair of nodes.
type splitPartition struct {
	idx     int
	coord   *splitCoordinator // nil: a network in one bubble, no windows
	latency time.Duration
	rate    float64

	mu     sync.Mutex
	conns  map[netip.AddrPort]*splitConn
	busy   map[netip.Addr]time.Duration // when each uplink is next free
	outbox []splitDatagram
	late   int // datagrams handed over after their arrival instant
	// pending counts the partition's nodes that have not finished their
	// work; the partition is done at zero.
	pending int

	windows  int
	maxWait  time.Duration // longest wall time of one synctest.Wait
	waitWall time.Duration
	// stopped is closed when the partition has stopped. It is made in the
	// bubble (start): a goroutine of the bubble blocked on a channel made
	// outside it is not durably blocked, and the bubble's clock would
	// stand still.
	stopped chan struct{}
}

func newSplitPartition(idx int, coord *splitCoordinator, latency time.Duration, rate float64, nodes int) *splitPartition {
	return &splitPartition{
		idx: idx, coord: coord, latency: latency, rate: rate, pending: nodes,
		conns: map[netip.AddrPort]*splitConn{},
		busy:  map[netip.Addr]time.Duration{},
	}
}

// start readies p in the bubble it runs in and starts its driver when it
// has a coordinator.
func (p *splitPartition) start() {
	p.stopped = make(chan struct{})
	if p.coord != nil {
		go p.drive()
	}
}

// nodeDone marks one of the partition's nodes finished. Without a
// coordinator, the last one stops the partition.
func (p *splitPartition) nodeDone() {
	p.mu.Lock()
	p.pending--
	last := p.pending == 0
	p.mu.Unlock()
	if last && p.coord == nil {
		close(p.stopped)
	}
}

// drive runs in the bubble: at every window end it lets the bubble settle
// (synctest.Wait), hands the window's outgoing datagrams to the
// coordinator, blocks (clock frozen) until every partition has done the
// same, and schedules the datagrams it gets at their arrival instants.
func (p *splitPartition) drive() {
	defer close(p.stopped)
	for {
		time.Sleep(p.latency)
		w0 := des.WallNow()
		synctest.Wait()
		dw := des.WallNow() - w0
		p.waitWall += dw
		p.maxWait = max(p.maxWait, dw)
		p.mu.Lock()
		r := splitReport{sent: p.outbox, done: p.pending == 0}
		p.outbox = nil
		p.mu.Unlock()
		p.coord.reports[p.idx] <- r
		rep := <-p.coord.replies[p.idx]
		p.windows++
		for _, d := range rep.deliver {
			p.schedule(d)
		}
		if rep.stop {
			return
		}
	}
}

// schedule delivers d at its arrival instant.
func (p *splitPartition) schedule(d splitDatagram) {
	delay := d.arrive - time.Since(splitEpoch)
	if delay < 0 {
		p.mu.Lock()
		p.late++
		p.mu.Unlock()
	}
	if delay <= 0 {
		p.deliver(d)
		return
	}
	time.AfterFunc(delay, func() { p.deliver(d) })
}

func (p *splitPartition) deliver(d splitDatagram) {
	p.mu.Lock()
	c := p.conns[d.to]
	p.mu.Unlock()
	if c != nil {
		c.push(d)
	}
}

// send queues b on from's uplink and routes it: to a socket of this
// partition directly, to the outbox otherwise.
func (p *splitPartition) send(from, to netip.AddrPort, b []byte) {
	now := time.Since(splitEpoch)
	p.mu.Lock()
	tx := max(now, p.busy[from.Addr()]) + time.Duration(float64(len(b)+28)*8/p.rate*float64(time.Second))
	p.busy[from.Addr()] = tx
	d := splitDatagram{from: from, to: to, arrive: tx + p.latency, data: bytes.Clone(b)}
	local := p.coord == nil || p.coord.owner[to.Addr()] == p.idx
	if !local {
		p.outbox = append(p.outbox, d)
	}
	p.mu.Unlock()
	if local {
		time.AfterFunc(d.arrive-now, func() { p.deliver(d) })
	}
}

// listen binds a socket of this partition at addr.
func (p *splitPartition) listen(addr netip.AddrPort) *splitConn {
	c := &splitConn{p: p, laddr: net.UDPAddrFromAddrPort(addr), wake: make(chan struct{}, 1)}
	p.mu.Lock()
	p.conns[addr] = c
	p.mu.Unlock()
	return c
}

// splitConn is a socket of a partition: a net.PacketConn for quic-go.
type splitConn struct {
	p     *splitPartition
	laddr *net.UDPAddr

	mu       sync.Mutex
	queue    []splitDatagram
	deadline time.Time
	timer    *time.Timer
	closed   bool
	wake     chan struct{}
}

func (c *splitConn) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *splitConn) push(d splitDatagram) {
	c.mu.Lock()
	c.queue = append(c.queue, d)
	c.mu.Unlock()
	c.signal()
}

func (c *splitConn) ReadFrom(b []byte) (int, net.Addr, error) {
	for {
		c.mu.Lock()
		switch {
		case c.closed:
			c.mu.Unlock()
			return 0, nil, net.ErrClosed
		case len(c.queue) > 0:
			d := c.queue[0]
			c.queue = c.queue[1:]
			c.mu.Unlock()
			return copy(b, d.data), net.UDPAddrFromAddrPort(d.from), nil
		case !c.deadline.IsZero() && !time.Now().Before(c.deadline):
			c.mu.Unlock()
			return 0, nil, &net.OpError{Op: "read", Net: "udp", Addr: c.laddr, Err: os.ErrDeadlineExceeded}
		}
		c.mu.Unlock()
		<-c.wake
	}
}

func (c *splitConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	ua, ok := addr.(*net.UDPAddr)
	if !ok {
		return 0, fmt.Errorf("split: write to %v: not a UDP address", addr)
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return 0, net.ErrClosed
	}
	to := ua.AddrPort()
	c.p.send(c.laddr.AddrPort(), netip.AddrPortFrom(to.Addr().Unmap(), to.Port()), b)
	return len(b), nil
}

func (c *splitConn) Close() error {
	c.mu.Lock()
	c.closed = true
	if c.timer != nil {
		c.timer.Stop()
	}
	c.mu.Unlock()
	c.p.mu.Lock()
	delete(c.p.conns, c.laddr.AddrPort())
	c.p.mu.Unlock()
	c.signal()
	return nil
}

func (c *splitConn) LocalAddr() net.Addr { return c.laddr }

func (c *splitConn) SetDeadline(t time.Time) error { return c.SetReadDeadline(t) }

func (c *splitConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	if !t.IsZero() {
		if d := time.Until(t); d > 0 {
			c.timer = time.AfterFunc(d, c.signal)
		}
	}
	c.mu.Unlock()
	c.signal()
	return nil
}

func (c *splitConn) SetWriteDeadline(time.Time) error { return nil }

// SetReadBuffer and SetWriteBuffer keep quic-go from warning that it
// cannot size the socket's buffers; a splitConn's are unbounded.
func (c *splitConn) SetReadBuffer(int) error  { return nil }
func (c *splitConn) SetWriteBuffer(int) error { return nil }

// newSplitHost builds node i's go-libp2p QUIC host on partition p:
// newQUICHost over the partition's connections.
func newSplitHost(p *splitPartition, i int, seed uint64) (host.Host, error) {
	return newQUICHost(func(addr *net.UDPAddr) (net.PacketConn, error) {
		return p.listen(netip.AddrPortFrom(netmodel.NodeAddr(i), uint16(addr.Port))), nil
	}, i, seed)
}

// splitNode is node i's work on the split network, on its host h. It
// returns when the node needs nothing more; the host keeps serving, and
// ctx stays live, until every node of every partition is done.
type splitNode func(ctx context.Context, h host.Host, i int) error

// runSplit runs nodes 0 to len(owner)-1, node i in partition owner[i],
// each partition in a bubble of its own, in lock-step windows of latency
// (with one partition: in one bubble, without windows). It returns the
// partitions, for their counters, and the coordinator (nil with one
// partition).
func runSplit(t *testing.T, owner []int, latency time.Duration, rate float64, seed uint64, work splitNode) ([]*splitPartition, *splitCoordinator) {
	t.Helper()
	members := make([][]int, slices.Max(owner)+1)
	for i, k := range owner {
		members[k] = append(members[k], i)
	}
	var coord *splitCoordinator
	if len(members) > 1 {
		byAddr := map[netip.Addr]int{}
		for i, k := range owner {
			byAddr[netmodel.NodeAddr(i)] = k
		}
		coord = newSplitCoordinator(len(members), byAddr)
		go coord.run()
	}
	parts := make([]*splitPartition, len(members))
	for k, m := range members {
		parts[k] = newSplitPartition(k, coord, latency, rate, len(m))
	}
	// Plain goroutines calling t.Run, not parallel subtests: the testing
	// package runs at most -test.parallel of those at once, and a partition
	// left waiting would stop the others at their first window end.
	var wg sync.WaitGroup
	for _, p := range parts {
		wg.Go(func() {
			t.Run(fmt.Sprintf("partition-%d-of-%d", p.idx, len(parts)), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					require.True(t, splitEpoch.Equal(time.Now()), "bubble start %v", time.Now())
					p.start()
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					hosts := make([]host.Host, len(members[p.idx]))
					for j, i := range members[p.idx] {
						h, err := newSplitHost(p, i, seed)
						require.NoError(t, err)
						hosts[j] = h
					}
					errs := make([]error, len(hosts))
					var nodes sync.WaitGroup
					for j, i := range members[p.idx] {
						nodes.Go(func() {
							defer p.nodeDone()
							if err := work(ctx, hosts[j], i); err != nil {
								errs[j] = fmt.Errorf("node %d: %w", i, err)
							}
						})
					}
					nodes.Wait()
					<-p.stopped
					cancel()
					for _, h := range hosts {
						require.NoError(t, h.Close())
					}
					require.NoError(t, errors.Join(errs...))
				})
			})
		})
	}
	wg.Wait()
	return parts, coord
}

// splitPeer is node i's peer id.
func splitPeer(seed uint64, i int) (peer.ID, error) {
	priv, err := hostKey(seed, i)
	if err != nil {
		return "", err
	}
	return peer.IDFromPrivateKey(priv)
}

const splitEcho = "/uplink/split-echo/1.0.0"

// echoWork has node 0 dial node 1, send size bytes on a stream and read
// them back through node 1's echo; it records the virtual instants the
// connection and the echo were done.
func echoWork(seed uint64, size int, connected, finished *time.Duration) splitNode {
	return func(ctx context.Context, h host.Host, i int) error {
		if i != 0 {
			h.SetStreamHandler(splitEcho, func(s network.Stream) {
				defer s.Close()
				_, _ = io.Copy(s, s)
			})
			return nil
		}
		server, err := splitPeer(seed, 1)
		if err != nil {
			return err
		}
		if err := h.Connect(ctx, peer.AddrInfo{ID: server, Addrs: []ma.Multiaddr{QUICAddr(1)}}); err != nil {
			return err
		}
		*connected = time.Since(splitEpoch)
		s, err := h.NewStream(ctx, server, splitEcho)
		if err != nil {
			return err
		}
		defer s.Close()
		payload := makePayload(seed, size)
		go func() {
			_, _ = s.Write(payload)
			_ = s.CloseWrite()
		}()
		got, err := io.ReadAll(s)
		if err != nil {
			return err
		}
		*finished = time.Since(splitEpoch)
		if !bytes.Equal(got, payload) {
			return fmt.Errorf("echo: %d bytes back, want the %d sent", len(got), len(payload))
		}
		return nil
	}
}

// splitCheck checks what every partition saw: no datagram handed over
// after its arrival instant, every window exchanged, and logs how long
// synctest.Wait took.
func splitCheck(t *testing.T, parts []*splitPartition, coord *splitCoordinator) {
	t.Helper()
	for _, p := range parts {
		require.Zero(t, p.late, "partition %d: datagrams handed over after their arrival", p.idx)
		require.Equal(t, coord.windows, p.windows, "partition %d: windows", p.idx)
		t.Logf("partition %d: %d windows, synctest.Wait %v in all, %v at most", p.idx, p.windows, p.waitWall, p.maxWait)
	}
}

// TestSplitNetworkAcrossBubbles: node 0 in one bubble dials node 1 in
// another over go-libp2p's QUIC transport and echoes 1 MiB through it. The
// two bubbles share nothing but the coordinator's channels; neither
// panics, both settle at every window end (synctest.Wait returns: every
// goroutine of quic-go and go-libp2p there is durably blocked between
// datagrams), no datagram is handed over after its arrival instant, and the
// transfer takes the virtual time it takes with both nodes in one bubble
// (up to what quic-go's randomness changes: connection ids, packet number
// skips, handshake sizes).
func TestSplitNetworkAcrossBubbles(t *testing.T) {
	const (
		latency = 10 * time.Millisecond
		rate    = 100e6
		size    = 1 << 20
		seed    = 5
	)
	done := make(chan struct{})
	defer close(done)
	watchdog(60*time.Second, done)

	var refConn, refDone, conn, fin time.Duration
	runSplit(t, []int{0, 0}, latency, rate, seed, echoWork(seed, size, &refConn, &refDone))
	parts, coord := runSplit(t, []int{0, 1}, latency, rate, seed, echoWork(seed, size, &conn, &fin))
	splitCheck(t, parts, coord)
	t.Logf("one bubble: connected after %v, echo done after %v", refConn, refDone)
	t.Logf("two bubbles: connected after %v, echo done after %v", conn, fin)
	// The handshake takes at least two one-way trips (the client's first
	// flight, the server's answer); the echo moves 1 MiB each way through
	// 100 Mbit/s uplinks, at least 84 ms.
	require.GreaterOrEqual(t, conn, 2*latency)
	require.Greater(t, fin, conn+84*time.Millisecond)
	require.InEpsilon(t, refDone.Seconds(), fin.Seconds(), 0.05)
}

// gossipWork has every node join a gossipsub topic, dial the nodes below
// it, and node 0 publish size bytes at 3 s; it records when each node
// received them.
func gossipWork(seed uint64, size int, got []time.Duration) splitNode {
	return func(ctx context.Context, h host.Host, i int) error {
		ps, err := pubsub.NewGossipSub(ctx, h)
		if err != nil {
			return err
		}
		topic, err := ps.Join(Topic)
		if err != nil {
			return err
		}
		sub, err := topic.Subscribe()
		if err != nil {
			return err
		}
		for j := range i {
			id, err := splitPeer(seed, j)
			if err != nil {
				return err
			}
			if err := h.Connect(ctx, peer.AddrInfo{ID: id, Addrs: []ma.Multiaddr{QUICAddr(j)}}); err != nil {
				return err
			}
		}
		payload := makePayload(seed, size)
		if i == 0 {
			time.Sleep(3*time.Second - time.Since(splitEpoch))
			return topic.Publish(ctx, payload)
		}
		m, err := sub.Next(ctx)
		if err != nil {
			return err
		}
		got[i] = time.Since(splitEpoch)
		if !bytes.Equal(m.Data, payload) {
			return fmt.Errorf("node %d: the message is not the payload", i)
		}
		return nil
	}
}

// TestSplitGossipAcrossBubbles: go-libp2p-pubsub's gossipsub on six nodes
// split over three bubbles (two nodes each, so links both within and
// across partitions), through several hundred windows: node 0's message
// reaches every other node, the first of them when it does in one bubble
// (up to quic-go's randomness).
func TestSplitGossipAcrossBubbles(t *testing.T) {
	const (
		latency = 10 * time.Millisecond
		rate    = 100e6
		size    = 256 << 10
		seed    = 6
	)
	done := make(chan struct{})
	defer close(done)
	watchdog(60*time.Second, done)

	ref := make([]time.Duration, 6)
	runSplit(t, []int{0, 0, 0, 0, 0, 0}, latency, rate, seed, gossipWork(seed, size, ref))
	got := make([]time.Duration, 6)
	parts, coord := runSplit(t, []int{0, 1, 2, 0, 1, 2}, latency, rate, seed, gossipWork(seed, size, got))
	splitCheck(t, parts, coord)
	t.Logf("received, one bubble: %v", ref[1:])
	t.Logf("received, three bubbles: %v", got[1:])
	publish := 3 * time.Second
	for i := 1; i < 6; i++ {
		// One hop at least: 256 KiB through a 100 Mbit/s uplink and the
		// one-way latency.
		require.Greater(t, got[i], publish+latency+20*time.Millisecond, "node %d", i)
		require.Less(t, got[i], publish+time.Second, "node %d", i)
	}
	// The first delivery, one hop from the publisher, takes the time it
	// takes in one bubble. Later ones depend on which peers each mesh
	// drew, which varies from run to run in one bubble too.
	require.InEpsilon(t, (slices.Min(ref[1:]) - publish).Seconds(), (slices.Min(got[1:]) - publish).Seconds(), 0.1)
}

// watchdog dumps every goroutine and fails the process when done is not
// closed within limit of wall time: a partition blocked for ever on the
// hand-off, or a synctest.Wait that never returns, would otherwise hang
// the test binary.
func watchdog(limit time.Duration, done <-chan struct{}) {
	go func() {
		select {
		case <-done:
		case <-time.After(limit):
			buf := make([]byte, 8<<20)
			n := runtime.Stack(buf, true)
			fmt.Fprintf(os.Stderr, "split network stuck after %v; goroutines:\n%s\n", limit, buf[:n])
			panic("split network stuck")
		}
	}()
}
