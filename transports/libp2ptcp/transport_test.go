package libp2ptcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/connmgr"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/transport"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
	"github.com/uplinksim/uplink/transports/tcp"
)

// testStack builds n nodes at rate bit/s each way with a fixed one-way
// latency inside the current bubble, starts the event core (stopped when
// the test ends) and returns a TCP stack on them.
func testStack(t *testing.T, n int, rate int64, oneWay des.Time, cfg tcp.Config) *tcp.Stack {
	t.Helper()
	sim := des.NewSim()
	nw, err := netmodel.New(sim, netmodel.Config{Latency: netmodel.FixedLatency(oneWay)})
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		if _, err := nw.AddNode(netmodel.NodeConfig{
			Up:   netmodel.LinkConfig{Shaper: netmodel.OneMTUBurst(rate)},
			Down: netmodel.LinkConfig{Shaper: netmodel.OneMTUBurst(rate)},
		}); err != nil {
			t.Fatal(err)
		}
	}
	live := des.NewLive(sim)
	live.Start()
	t.Cleanup(live.Stop)
	st, err := tcp.NewStack(live, nw, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// newHost builds a go-libp2p host for node i on st listening on listen,
// with the default security transports and muxer.
func newHost(st *tcp.Stack, i int, listen ma.Multiaddr) (host.Host, error) {
	return libp2p.New(
		libp2p.ListenAddrs(listen),
		libp2p.NoTransports,
		libp2p.Transport(Constructor(st, i)),
		libp2p.DisableIdentifyAddressDiscovery(),
		libp2p.ResourceManager(&network.NullResourceManager{}),
		libp2p.ConnectionManager(connmgr.NullConnMgr{}),
		libp2p.DisableRelay(),
		libp2p.DisableMetrics(),
		libp2p.Ping(false),
		libp2p.UDPBlackHoleSuccessCounter(nil),
		libp2p.IPv6BlackHoleSuccessCounter(nil),
	)
}

func nodeAddr(i int, port uint16) ma.Multiaddr { return Multiaddr(netmodel.NodeAddr(i), port) }

const hashProto = "/uplink/test/sha256/1.0.0"

// TestStream16MiB: two go-libp2p hosts connect over the TCP model; one
// opens a stream with a custom protocol and writes 16 MiB of seeded data;
// the other hashes what it reads up to EOF and answers with the SHA-256,
// which must match the sender's. The connection is TLS 1.3 (go-libp2p's
// first default) with yamux, on the expected multiaddrs; every goroutine
// ends once the hosts close (synctest.Test fails otherwise).
func TestStream16MiB(t *testing.T) {
	const size = 16 << 20
	synctest.Test(t, func(t *testing.T) {
		st := testStack(t, 2, 100e6, 10*des.Millisecond, tcp.LinuxConfig())
		a, err := newHost(st, 0, nodeAddr(0, 9000))
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		b, err := newHost(st, 1, nodeAddr(1, 9000))
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if got := b.Addrs(); len(got) != 1 || !got[0].Equal(nodeAddr(1, 9000)) {
			t.Fatalf("host addresses %v; want [%v]", got, nodeAddr(1, 9000))
		}

		b.SetStreamHandler(hashProto, func(s network.Stream) {
			defer s.Close()
			h := sha256.New()
			if _, err := io.Copy(h, s); err != nil {
				s.Reset()
				return
			}
			s.Write(h.Sum(nil))
		})

		ctx := context.Background()
		if err := a.Connect(ctx, peer.AddrInfo{ID: b.ID(), Addrs: []ma.Multiaddr{nodeAddr(1, 9000)}}); err != nil {
			t.Fatal(err)
		}
		conns := a.Network().ConnsToPeer(b.ID())
		if len(conns) != 1 {
			t.Fatalf("%d connections to b; want 1", len(conns))
		}
		c := conns[0]
		cs := c.ConnState()
		if cs.Security != "/tls/1.0.0" || cs.StreamMultiplexer != "/yamux/1.0.0" {
			t.Fatalf("connection state %+v; want TLS and yamux", cs)
		}
		if !c.RemoteMultiaddr().Equal(nodeAddr(1, 9000)) {
			t.Fatalf("remote multiaddr %v", c.RemoteMultiaddr())
		}
		if ap, err := ParseMultiaddr(c.LocalMultiaddr()); err != nil || ap.Addr() != netmodel.NodeAddr(0) || ap.Port() < 49152 {
			t.Fatalf("local multiaddr %v (%v): want node 0's address and an ephemeral port", c.LocalMultiaddr(), err)
		}

		s, err := a.NewStream(ctx, b.ID(), hashProto)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		want := sha256.New()
		chunk := make([]byte, 64<<10)
		for sent := 0; sent < size; sent += len(chunk) {
			for i := range chunk {
				chunk[i] = byte(rng.Uint32())
			}
			want.Write(chunk)
			if _, err := s.Write(chunk); err != nil {
				t.Fatalf("write after %d bytes: %v", sent, err)
			}
		}
		if err := s.CloseWrite(); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(s)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		if !bytes.Equal(got, want.Sum(nil)) {
			t.Fatalf("receiver's SHA-256 %x; sender's %x", got, want.Sum(nil))
		}
		// 16 MiB at 100 Mbit/s takes at least 1.34 s of virtual time.
		t.Logf("16 MiB over TLS + yamux + uplink TCP in %v virtual", st.Live().Now())
		if st.Live().Now() < des.Time(size*8/100e6*1e9) {
			t.Fatalf("transfer finished at %v, faster than the line rate", st.Live().Now())
		}
	})
}

// TestDialAndListenErrors: a dial to a port without a listener fails with
// connection refused; a transport listens only on its node's address and
// a non-zero port; Close closes its listeners and refuses new ones;
// CanDial takes only /ip4/<address>/tcp/<port>.
func TestDialAndListenErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := testStack(t, 2, 0, 5*des.Millisecond, tcp.ShadowConfig())
		var up transport.Upgrader
		a, err := libp2p.New(
			libp2p.ListenAddrs(nodeAddr(0, 9000)),
			libp2p.NoTransports,
			libp2p.Transport(func(u transport.Upgrader, rm network.ResourceManager) (*Transport, error) {
				up = u
				return New(st, 0, u, rm)
			}),
			libp2p.DisableRelay(),
			libp2p.DisableMetrics(),
		)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		b, err := newHost(st, 1, nodeAddr(1, 9000))
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		err = a.Connect(context.Background(), peer.AddrInfo{ID: b.ID(), Addrs: []ma.Multiaddr{nodeAddr(1, 9001)}})
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("dial to a closed port: %v; want connection refused", err)
		}

		if _, err := New(st, 0, nil, nil); err == nil {
			t.Fatal("a transport without an upgrader must be refused")
		}
		if _, err := New(st, 2, up, nil); err == nil {
			t.Fatal("a transport for a node the network lacks must be refused")
		}
		tr, err := New(st, 0, up, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tr.Listen(nodeAddr(1, 9100)); err == nil || !strings.Contains(err.Error(), "not the node's address") {
			t.Fatalf("listen on another node's address: %v; want a refusal", err)
		}
		if _, err := tr.Listen(nodeAddr(0, 0)); err == nil {
			t.Fatal("listen on port 0 must be refused")
		}
		if _, err := tr.Listen(nodeAddr(0, 9000)); err == nil {
			t.Fatal("listen on the host's port must fail: already bound")
		}
		l, err := tr.Listen(ma.StringCast("/ip4/0.0.0.0/tcp/9100"))
		if err != nil {
			t.Fatal(err)
		}
		if !l.Multiaddr().Equal(nodeAddr(0, 9100)) {
			t.Fatalf("listener multiaddr %v; want the node's address", l.Multiaddr())
		}
		accepted := make(chan error, 1)
		go func() {
			_, err := l.Accept()
			accepted <- err
		}()
		if err := tr.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-accepted; err == nil {
			t.Fatal("Accept on a listener of a closed transport returned a connection")
		}
		if _, err := tr.Listen(nodeAddr(0, 9101)); !errors.Is(err, ErrClosed) {
			t.Fatalf("listen after Close: %v; want ErrClosed", err)
		}
		if _, err := tr.Dial(context.Background(), nodeAddr(1, 9000), b.ID()); !errors.Is(err, ErrClosed) {
			t.Fatalf("dial after Close: %v; want ErrClosed", err)
		}

		for s, want := range map[string]bool{
			"/ip4/10.0.0.2/tcp/9000":                        true,
			"/ip4/10.0.0.2/tcp/9000/p2p/" + b.ID().String(): true,
			"/ip4/10.0.0.2/tcp/0":                           false,
			"/ip4/0.0.0.0/tcp/9000":                         false,
			"/ip4/10.0.0.2/udp/9000/quic-v1":                false,
			"/ip6/::1/tcp/9000":                             false,
			"/ip4/10.0.0.2/tcp/9000/ws":                     false,
		} {
			if got := tr.CanDial(ma.StringCast(s)); got != want {
				t.Errorf("CanDial(%s) = %v; want %v", s, got, want)
			}
		}
	})
}
