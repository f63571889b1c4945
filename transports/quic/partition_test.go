package quic

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
	"github.com/uplinksim/uplink/transports/udp"
)

// echoTimes is what one run of the split echo measured: the handshake
// and the 1 MiB echo, on the client's clock.
type echoTimes struct {
	handshake, echo time.Duration
}

const (
	splitLatency = 20 * des.Millisecond
	splitRate    = 50e6
	echoBytes    = 1 << 20
)

// splitNet builds node 0 and node 1 (50 Mbit/s each way, 20 ms one way)
// on sim, each here when self is -1 or its partition, else remote.
func splitNet(t *testing.T, sim *des.Sim, ids *netmodel.SocketIDs, self int) *netmodel.Network {
	n, err := netmodel.New(sim, netmodel.Config{Latency: netmodel.FixedLatency(splitLatency), SocketIDs: ids})
	require.NoError(t, err)
	for i := range 2 {
		if self >= 0 && i != self {
			n.AddRemoteNode(splitRate, splitRate)
			continue
		}
		_, err := n.AddNode(netmodel.NodeConfig{
			Up:   netmodel.LinkConfig{Shaper: netmodel.OneMTUBurst(splitRate)},
			Down: netmodel.LinkConfig{Shaper: netmodel.OneMTUBurst(splitRate)},
		})
		require.NoError(t, err)
	}
	return n
}

// echoServer accepts one connection on node 1 and echoes one stream.
func echoServer(t *testing.T, st *udp.Stack) (stop func(), finished <-chan struct{}) {
	sc, err := st.Listen(1, 443, netmodel.NeverBlock)
	require.NoError(t, err)
	tlsConf, err := ServerTLS()
	require.NoError(t, err)
	tr, ln, err := Listen(sc, tlsConf, nil)
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept(context.Background())
		if err != nil {
			t.Error(err)
			return
		}
		s, err := c.AcceptStream(context.Background())
		if err != nil {
			t.Error(err)
			return
		}
		io.Copy(s, s)
		s.Close()
	}()
	return func() { ln.Close(); tr.Close(); sc.Close() }, done
}

// echoClient dials node 1 from node 0 and echoes payload through it.
func echoClient(t *testing.T, st *udp.Stack, payload []byte) echoTimes {
	cc, err := st.Listen(0, 0, netmodel.NeverBlock)
	require.NoError(t, err)
	defer cc.Close()
	start := time.Now()
	ctr, conn, err := Dial(context.Background(), cc, net.UDPAddrFromAddrPort(netip.AddrPortFrom(netmodel.NodeAddr(1), 443)), ClientTLS(), nil)
	require.NoError(t, err)
	defer ctr.Close()
	var got echoTimes
	got.handshake = time.Since(start)
	s, err := conn.OpenStreamSync(context.Background())
	require.NoError(t, err)
	t0 := time.Now()
	go func() {
		s.Write(payload)
		s.Close()
	}()
	back, err := io.ReadAll(s)
	require.NoError(t, err)
	require.True(t, bytes.Equal(payload, back), "the echo differs")
	got.echo = time.Since(t0)
	conn.CloseWithError(0, "")
	return got
}

// echoOneBubble runs the echo with both nodes in one bubble.
func echoOneBubble(t *testing.T, payload []byte) (got echoTimes) {
	synctest.Test(t, func(t *testing.T) {
		sim := des.NewSim()
		live := des.NewLive(sim)
		n := splitNet(t, sim, nil, -1)
		live.Start()
		defer live.Stop()
		st := udp.NewStack(live, n)
		stop, finished := echoServer(t, st)
		got = echoClient(t, st, payload)
		<-finished
		stop()
	})
	return got
}

// echoTwoPartitions runs the echo with node 0 and node 1 in partitions of
// their own, each in its own bubble, in windows of the latency between
// them.
func echoTwoPartitions(t *testing.T, payload []byte) (got echoTimes, windows int) {
	ex := des.NewExchange(2)
	ids := &netmodel.SocketIDs{}
	var wg sync.WaitGroup
	var nwin atomic.Int64
	for part := range 2 {
		wg.Go(func() {
			t.Run(fmt.Sprintf("partition-%d", part), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					sim := des.NewSim()
					live := des.NewLive(sim)
					n := splitNet(t, sim, ids, part)
					var done atomic.Bool
					live.SetWindows(splitLatency, func(end des.Time) bool {
						synctest.Wait()
						nwin.Add(1)
						_, all, err := n.SwapWindow(live, ex, part, end, netmodel.WindowLeave{Done: done.Load()})
						if err != nil {
							t.Errorf("partition %d: %v", part, err)
							ex.Close(err)
							return false
						}
						return !all
					})
					live.Start()
					defer live.Stop()
					st := udp.NewStack(live, n)
					// Each partition keeps its core until every partition is
					// done: the others meet it at every window's end.
					if part == 1 {
						stop, finished := echoServer(t, st)
						<-finished
						done.Store(true)
						<-live.WindowsEnded()
						stop()
						return
					}
					got = echoClient(t, st, payload)
					done.Store(true)
					<-live.WindowsEnded()
				})
			})
		})
	}
	wg.Wait()
	return got, int(nwin.Load()) / 2
}

// TestQUICAcrossPartitions: real quic-go between two nodes in two
// partitions, each in a synctest bubble of its own, advancing in 20 ms
// windows: the handshake takes one round trip, as in one bubble, and a
// 1 MiB echo takes as long as in one bubble within quic-go's own
// run-to-run spread (its keys, certificate and connection ids are random).
func TestQUICAcrossPartitions(t *testing.T) {
	payload := make([]byte, echoBytes)
	rand.Read(payload)
	one := echoOneBubble(t, payload)
	two, windows := echoTwoPartitions(t, payload)
	t.Logf("one bubble: handshake %v, echo %v; two partitions: handshake %v, echo %v, %d windows", one.handshake, one.echo, two.handshake, two.echo, windows)
	// One round trip plus the handshake packets' serialisation, whose
	// sizes vary by a few bytes with the random keys and certificate.
	require.InDelta(t, float64(2*time.Duration(splitLatency)), float64(one.handshake), float64(2*time.Millisecond))
	require.InEpsilon(t, float64(one.handshake), float64(two.handshake), 0.01)
	require.InEpsilon(t, float64(one.echo), float64(two.echo), 0.03)
	require.Greater(t, windows, int(two.echo/time.Duration(splitLatency)))
}
