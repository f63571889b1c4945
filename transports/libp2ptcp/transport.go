// Package libp2ptcp is a go-libp2p transport over uplink's TCP model: it
// dials and listens on /ip4/<node address>/tcp/<port> multiaddrs with the
// connections of a transports/tcp Stack, and hands each raw connection to
// the go-libp2p upgrader, which negotiates a security protocol and then a
// stream multiplexer on it, as go-libp2p's own TCP transport does over
// kernel sockets.
//
// Build a host with it through libp2p.Transport:
//
//	h, err := libp2p.New(
//		libp2p.NoTransports,
//		libp2p.Transport(libp2ptcp.Constructor(stack, node)),
//		libp2p.ListenAddrs(libp2ptcp.Multiaddr(netmodel.NodeAddr(node), 9000)),
//		...
//	)
//
// go-libp2p passes the constructor its upgrader (with the host's security
// transports and muxers: by default TLS 1.3 then Noise, and yamux) and its
// resource manager. Everything runs inside the testing/synctest bubble of
// the stack's des.Live: the transport starts no goroutine of its own, and
// those of the upgrader, the security layer and the muxer end when the host
// closes its connections and listeners.
package libp2ptcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/transport"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/uplinksim/uplink/netmodel"
	"github.com/uplinksim/uplink/transports/tcp"
)

// ErrClosed is returned by Dial and Listen after the transport was closed.
var ErrClosed = errors.New("libp2ptcp: transport closed")

// Transport is a go-libp2p transport.Transport for one node of a
// simulated network, over a tcp.Stack. It dials from the node and listens
// on the node's address only.
type Transport struct {
	st       *tcp.Stack
	node     int
	addr     netip.Addr
	upgrader transport.Upgrader
	rcmgr    network.ResourceManager

	mu        sync.Mutex
	listeners map[*maListener]struct{}
	closed    bool
}

var (
	_ transport.Transport = (*Transport)(nil)
	_ fmt.Stringer        = (*Transport)(nil)
)

// New returns node's transport over st, upgrading connections with
// upgrader and opening their resource scopes with rcmgr (nil: the null
// resource manager).
func New(st *tcp.Stack, node int, upgrader transport.Upgrader, rcmgr network.ResourceManager) (*Transport, error) {
	if st == nil {
		return nil, errors.New("libp2ptcp: no TCP stack")
	}
	if upgrader == nil {
		return nil, fmt.Errorf("libp2ptcp: node %d: no upgrader", node)
	}
	if n := len(st.Engine().Network().Nodes()); node < 0 || node >= n {
		return nil, fmt.Errorf("libp2ptcp: node %d: no such node (the network has %d)", node, n)
	}
	if rcmgr == nil {
		rcmgr = &network.NullResourceManager{}
	}
	return &Transport{
		st:        st,
		node:      node,
		addr:      netmodel.NodeAddr(node),
		upgrader:  upgrader,
		rcmgr:     rcmgr,
		listeners: make(map[*maListener]struct{}),
	}, nil
}

// Constructor returns a transport constructor for libp2p.Transport that
// builds node's transport over st with the upgrader and resource manager
// go-libp2p provides. go-libp2p may call it more than once per host (an
// AutoNAT dialer host gets transports of its own); each call returns a new
// Transport, which costs nothing until it dials or listens.
func Constructor(st *tcp.Stack, node int) func(transport.Upgrader, network.ResourceManager) (*Transport, error) {
	return func(u transport.Upgrader, rcmgr network.ResourceManager) (*Transport, error) {
		return New(st, node, u, rcmgr)
	}
}

// Node is the index of the transport's node.
func (t *Transport) Node() int { return t.node }

// String names the transport in go-libp2p's connection descriptions.
func (t *Transport) String() string { return "uplink-tcp" }

// CanDial reports whether addr is /ip4/<address>/tcp/<port>, optionally
// followed by /p2p/<peer id>, with a specified address and a non-zero
// port: the only form this transport dials. Whether a node has that
// address is checked by Dial.
func (t *Transport) CanDial(addr ma.Multiaddr) bool {
	ap, err := ParseMultiaddr(withoutPeer(addr))
	return err == nil && !ap.Addr().IsUnspecified() && ap.Port() != 0
}

// Protocols is the protocol this transport handles: TCP.
func (t *Transport) Protocols() []int { return []int{ma.P_TCP} }

// Proxy is false: the transport connects directly.
func (t *Transport) Proxy() bool { return false }

// Dial connects to raddr, which must be a node of the network, and
// upgrades the connection: a security handshake authenticating p, then a
// stream multiplexer. The connection's resource scope is opened here and
// released when the upgraded connection closes (or the dial fails).
func (t *Transport) Dial(ctx context.Context, raddr ma.Multiaddr, p peer.ID) (transport.CapableConn, error) {
	raddr = withoutPeer(raddr)
	ap, err := ParseMultiaddr(raddr)
	if err != nil {
		return nil, fmt.Errorf("libp2ptcp: node %d: dial: %w", t.node, err)
	}
	t.mu.Lock()
	closed := t.closed
	t.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	scope, err := t.rcmgr.OpenConnection(network.DirOutbound, true, raddr)
	if err != nil {
		return nil, fmt.Errorf("libp2ptcp: node %d: dial %s: resource manager: %w", t.node, raddr, err)
	}
	if err := scope.SetPeer(p); err != nil {
		scope.Done()
		return nil, fmt.Errorf("libp2ptcp: node %d: dial %s: resource manager refused peer %s: %w", t.node, raddr, p, err)
	}
	c, err := t.st.Dial(ctx, t.node, net.TCPAddrFromAddrPort(ap))
	if err != nil {
		scope.Done()
		return nil, fmt.Errorf("libp2ptcp: node %d: dial %s: %w", t.node, raddr, err)
	}
	mc, err := wrapConn(c)
	if err != nil {
		c.Close()
		scope.Done()
		return nil, fmt.Errorf("libp2ptcp: node %d: dial %s: %w", t.node, raddr, err)
	}
	// In a simultaneous open (hole punching) one side takes the inbound
	// role in the security handshake.
	dir := network.DirOutbound
	if ok, isClient, _ := network.GetSimultaneousConnect(ctx); ok && !isClient {
		dir = network.DirInbound
	}
	// Upgrade releases the scope itself when it fails.
	cc, err := t.upgrader.Upgrade(ctx, t, mc, dir, p, scope)
	if err != nil {
		return nil, fmt.Errorf("libp2ptcp: node %d: upgrade connection to %s (%s): %w", t.node, raddr, p, err)
	}
	return cc, nil
}

// Listen listens on laddr, /ip4/<the node's address>/tcp/<port> (an
// unspecified address 0.0.0.0 means the node's), and returns a listener
// whose Accept yields upgraded connections. Port 0 is refused: the model
// does not pick listening ports.
func (t *Transport) Listen(laddr ma.Multiaddr) (transport.Listener, error) {
	ap, err := ParseMultiaddr(laddr)
	if err != nil {
		return nil, fmt.Errorf("libp2ptcp: node %d: listen: %w", t.node, err)
	}
	if ap.Addr().IsUnspecified() {
		ap = netip.AddrPortFrom(t.addr, ap.Port())
	}
	if ap.Addr() != t.addr {
		return nil, fmt.Errorf("libp2ptcp: node %d: listen on %s: not the node's address %s", t.node, laddr, t.addr)
	}
	if ap.Port() == 0 {
		return nil, fmt.Errorf("libp2ptcp: node %d: listen on %s: port 0; give a port", t.node, laddr)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, ErrClosed
	}
	l, err := t.st.Listen(t.node, ap.Port())
	if err != nil {
		return nil, fmt.Errorf("libp2ptcp: node %d: listen on %s: %w", t.node, laddr, err)
	}
	ml := &maListener{l: l, maddr: Multiaddr(ap.Addr(), ap.Port()), t: t}
	t.listeners[ml] = struct{}{}
	return t.upgrader.UpgradeGatedMaListener(t, t.upgrader.GateMaListener(ml)), nil
}

// Close closes the transport's listeners still open; later Dial and
// Listen calls fail with ErrClosed. Connections are the host's to close.
func (t *Transport) Close() error {
	t.mu.Lock()
	t.closed = true
	ls := make([]*maListener, 0, len(t.listeners))
	for l := range t.listeners {
		ls = append(ls, l)
	}
	t.mu.Unlock()
	var errs []error
	for _, l := range ls {
		if err := l.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// withoutPeer drops a trailing /p2p/<peer id> component.
func withoutPeer(m ma.Multiaddr) ma.Multiaddr {
	if k := len(m); k > 0 && m[k-1].Code() == ma.P_P2P {
		return m[:k-1]
	}
	return m
}

// forget drops a closed listener.
func (t *Transport) forget(l *maListener) {
	t.mu.Lock()
	delete(t.listeners, l)
	t.mu.Unlock()
}
