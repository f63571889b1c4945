package libp2ptcp

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"strconv"

	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"

	"github.com/uplinksim/uplink/transports/tcp"
)

// Multiaddr is the multiaddr /ip4/<addr>/tcp/<port>. addr must be an
// IPv4 address (or an IPv4-mapped IPv6 one); any other panics, as
// ma.StringCast does on a malformed address.
func Multiaddr(addr netip.Addr, port uint16) ma.Multiaddr {
	ip, err := ma.NewComponent("ip4", addr.Unmap().String())
	if err != nil {
		// Only a non-IPv4 address gets here: a caller's bug.
		panic(fmt.Sprintf("libp2ptcp: %v is not an IPv4 address: %v", addr, err))
	}
	p, err := ma.NewComponent("tcp", strconv.Itoa(int(port)))
	if err != nil {
		panic(fmt.Sprintf("libp2ptcp: port %d: %v", port, err))
	}
	return ma.Multiaddr{*ip, *p}
}

// ParseMultiaddr reads /ip4/<addr>/tcp/<port>; any other form is an
// error.
func ParseMultiaddr(m ma.Multiaddr) (netip.AddrPort, error) {
	if len(m) != 2 || m[0].Code() != ma.P_IP4 || m[1].Code() != ma.P_TCP {
		return netip.AddrPort{}, fmt.Errorf("multiaddr %s: want /ip4/<address>/tcp/<port>", m)
	}
	ip, ok := netip.AddrFromSlice(m[0].RawValue())
	port := m[1].RawValue()
	if !ok || len(port) != 2 {
		return netip.AddrPort{}, fmt.Errorf("multiaddr %s: malformed address or port", m)
	}
	return netip.AddrPortFrom(ip.Unmap(), binary.BigEndian.Uint16(port)), nil
}

// fromNetAddr converts a connection's *net.TCPAddr.
func fromNetAddr(a net.Addr) (ma.Multiaddr, error) {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return nil, fmt.Errorf("address %v (%T) is not a *net.TCPAddr", a, a)
	}
	ap := ta.AddrPort()
	if !ap.Addr().Unmap().Is4() {
		return nil, fmt.Errorf("address %v is not IPv4", a)
	}
	return Multiaddr(ap.Addr(), ap.Port()), nil
}

// Conn is a raw (not yet upgraded) connection of the model with its
// multiaddrs: a manet.Conn. The embedded *tcp.Conn keeps CloseWrite and
// Stats reachable.
type Conn struct {
	*tcp.Conn
	laddr, raddr ma.Multiaddr
}

var _ manet.Conn = (*Conn)(nil)

func wrapConn(c *tcp.Conn) (*Conn, error) {
	la, err := fromNetAddr(c.LocalAddr())
	if err != nil {
		return nil, fmt.Errorf("local address: %w", err)
	}
	ra, err := fromNetAddr(c.RemoteAddr())
	if err != nil {
		return nil, fmt.Errorf("remote address: %w", err)
	}
	return &Conn{Conn: c, laddr: la, raddr: ra}, nil
}

// LocalMultiaddr is /ip4/<local node>/tcp/<local port>.
func (c *Conn) LocalMultiaddr() ma.Multiaddr { return c.laddr }

// RemoteMultiaddr is /ip4/<remote node>/tcp/<remote port>.
func (c *Conn) RemoteMultiaddr() ma.Multiaddr { return c.raddr }

// maListener is a tcp.Listener as a manet.Listener, for the upgrader.
type maListener struct {
	l     *tcp.Listener
	maddr ma.Multiaddr
	t     *Transport
}

var _ manet.Listener = (*maListener)(nil)

// Accept waits for the next raw connection. After Close it fails with an
// error wrapping net.ErrClosed, which the upgrader reports as a closed
// listener.
func (l *maListener) Accept() (manet.Conn, error) {
	for {
		nc, err := l.l.Accept()
		if err != nil {
			return nil, err
		}
		c, err := wrapConn(nc.(*tcp.Conn))
		if err != nil {
			// Cannot happen for the model's own addresses; drop the
			// connection rather than stop listening.
			nc.Close()
			continue
		}
		return c, nil
	}
}

// Close stops listening; connections already accepted carry on.
func (l *maListener) Close() error {
	l.t.forget(l)
	return l.l.Close()
}

// Multiaddr is the listening multiaddr.
func (l *maListener) Multiaddr() ma.Multiaddr { return l.maddr }

// Addr is the listening *net.TCPAddr.
func (l *maListener) Addr() net.Addr { return l.l.Addr() }
