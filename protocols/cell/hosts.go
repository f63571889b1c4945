package cell

import (
	"fmt"
	"math/rand/v2"
	"net"
	"slices"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/connmgr"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	libp2pquic "github.com/libp2p/go-libp2p/p2p/transport/quic"
	"github.com/libp2p/go-libp2p/p2p/transport/quicreuse"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
	"github.com/quic-go/quic-go"
	"go.uber.org/fx"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
	"github.com/uplinksim/uplink/transports/libp2ptcp"
	"github.com/uplinksim/uplink/transports/tcp"
	"github.com/uplinksim/uplink/transports/udp"
)

// QUICPort is the UDP port every host listens on with Transport "quic";
// TCPPort the TCP port with Transport "tcp".
const (
	QUICPort = 8000
	TCPPort  = 9000
)

// hostKey derives node i's Ed25519 identity from the cell seed, so peer ids
// (and with them gossipsub's peer order) are the same in every run of a
// seed.
func hostKey(seed uint64, i int) (crypto.PrivKey, error) {
	var s [32]byte
	x := des.Mix64(seed ^ 0x686f73746b6579) // "hostkey"
	y := des.Mix64(x ^ uint64(i))
	for k := range 4 {
		v := des.Mix64(y + uint64(k))
		for j := range 8 {
			s[8*k+j] = byte(v >> (8 * j))
		}
	}
	priv, _, err := crypto.GenerateEd25519Key(rand.NewChaCha8(s))
	if err != nil {
		return nil, fmt.Errorf("node %d identity: %w", i, err)
	}
	return priv, nil
}

// QUICAddr is node i's listen multiaddr.
func QUICAddr(i int) ma.Multiaddr {
	return ma.StringCast(fmt.Sprintf("/ip4/%s/udp/%d/quic-v1", netmodel.NodeAddr(i), QUICPort))
}

// TCPAddr is node i's listen multiaddr with Transport "tcp".
func TCPAddr(i int) ma.Multiaddr {
	return libp2ptcp.Multiaddr(netmodel.NodeAddr(i), TCPPort)
}

// hostAddr is node i's listen multiaddr on transport ("quic" or "tcp").
func hostAddr(transport string, i int) ma.Multiaddr {
	if transport == "tcp" {
		return TCPAddr(i)
	}
	return QUICAddr(i)
}

// cheapOptions keep a host cheap: the null resource manager and connection
// manager, no identify address discovery, no relay, no metrics, no ping,
// no NAT port mapping, no UDP or IPv6 black-hole detection.
func cheapOptions() []libp2p.Option {
	return []libp2p.Option{
		libp2p.DisableIdentifyAddressDiscovery(),
		libp2p.ResourceManager(&network.NullResourceManager{}),
		libp2p.ConnectionManager(connmgr.NullConnMgr{}),
		libp2p.DisableRelay(),
		libp2p.DisableMetrics(),
		libp2p.Ping(false),
		libp2p.UDPBlackHoleSuccessCounter(nil),
		libp2p.IPv6BlackHoleSuccessCounter(nil),
	}
}

// virtualOnly are the options that keep node i's host on the virtual
// network: it advertises no address but the node's, netmodel.NodeAddr(i).
//
//   - The AddrsFactory keeps only addresses on the node's IP. It filters
//     what identify sends, what the signed peer record holds and what the
//     host stores as its own addresses in its peerstore.
//
// What keeps a host from binding or opening a real socket is in how the
// hosts are built rather than in this list:
//
//   - libp2p.NoTransports with only the virtual transport: go-libp2p's
//     default TCP, QUIC, WebTransport and WebRTC transports bind kernel
//     sockets.
//   - Each host listens on its node's address, never an unspecified one,
//     so the listen addresses need no interface to resolve them.
//   - With QUIC, quicreuse's ListenUDP and source-IP selector are replaced
//     (newQUICHost): its defaults are net.ListenUDP and go-netroute, which
//     reads the routing table over netlink.
//   - libp2p.DisableIdentifyAddressDiscovery (cheapOptions) leaves out the
//     observed-address manager, which lists the interfaces to resolve
//     listen addresses and would advertise addresses that peers observe.
//   - Left at go-libp2p's defaults, which are off: the NAT manager
//     (libp2p.NATPortMap: UPnP and NAT-PMP discovery through go-netroute,
//     net.Interfaces and UDP multicast), AutoNAT v2 and the AutoNAT
//     service (a second host dialling back), hole punching and the
//     shared TCP listener. Relay and metrics are off in cheapOptions.
//
// Two interface listings remain, and no go-libp2p option (v0.52) turns
// them off: manet.InterfaceMultiaddrs, that is net.InterfaceAddrs, which
// on Linux opens a NETLINK_ROUTE socket and closes it before it returns.
// The basic host's address manager lists the interfaces whenever it
// recomputes the host's addresses and its one-minute cache (of virtual
// time) has lapsed (addrsManager.getLocalAddrs, interfaceAddrsCache), and
// the swarm lists them before a dial to leave out its own addresses
// (Swarm.filterKnownUndialables, InterfaceListenAddresses, also cached a
// minute). Both use the listing only to expand unspecified listen
// addresses (manet.ResolveUnspecifiedAddresses), and a host here has none,
// so nothing of it reaches an address; the AddrsFactory would drop it if
// it did. uplink run and validate start every cell process in a network
// namespace of its own where Linux allows it (cmd/uplink, setChildProcess),
// so there the listing finds no interface at all.
func virtualOnly(i int) []libp2p.Option {
	ip := net.IP(netmodel.NodeAddr(i).AsSlice())
	return []libp2p.Option{
		libp2p.AddrsFactory(func(addrs []ma.Multiaddr) []ma.Multiaddr {
			return slices.DeleteFunc(slices.Clone(addrs), func(a ma.Multiaddr) bool {
				got, err := manet.ToIP(a)
				return err != nil || !got.Equal(ip)
			})
		}),
	}
}

// sourceIP answers quicreuse's question "which local address reaches
// this destination" with the node's one address.
type sourceIP net.IP

func (s sourceIP) PreferredSourceIPForDestination(*net.UDPAddr) (net.IP, error) {
	return net.IP(s), nil
}

// udpListener is how node i's QUIC transport opens its UDP socket at
// addr on uplink's virtual UDP (st), in mode.
func udpListener(st *udp.Stack, i int, mode netmodel.SendMode) func(addr *net.UDPAddr) (net.PacketConn, error) {
	ip := net.IP(netmodel.NodeAddr(i).AsSlice())
	return func(addr *net.UDPAddr) (net.PacketConn, error) {
		if !addr.IP.Equal(ip) {
			return nil, fmt.Errorf("node %d: listen on %v, not the node's address %v", i, addr, ip)
		}
		return st.Listen(i, uint16(addr.Port), mode)
	}
}

// newQUICHost builds a go-libp2p host for node i whose QUIC transport
// opens its UDP socket with listen (quicreuse's ListenUDP override), with
// cheapOptions and virtualOnly.
func newQUICHost(listen func(addr *net.UDPAddr) (net.PacketConn, error), i int, seed uint64) (host.Host, error) {
	priv, err := hostKey(seed, i)
	if err != nil {
		return nil, err
	}
	ip := net.IP(netmodel.NodeAddr(i).AsSlice())
	reuse := libp2p.QUICReuse(
		func(l fx.Lifecycle, srk quic.StatelessResetKey, tgk quic.TokenGeneratorKey, opts ...quicreuse.Option) (*quicreuse.ConnManager, error) {
			cm, err := quicreuse.NewConnManager(srk, tgk, opts...)
			if err != nil {
				return nil, err
			}
			// A conn manager passed in this way is not closed by the host.
			l.Append(fx.StopHook(cm.Close))
			return cm, nil
		},
		quicreuse.OverrideSourceIPSelector(func() (quicreuse.SourceIPSelector, error) {
			return sourceIP(ip), nil
		}),
		quicreuse.OverrideListenUDP(func(_ string, addr *net.UDPAddr) (net.PacketConn, error) {
			return listen(addr)
		}),
	)
	h, err := libp2p.New(append([]libp2p.Option{
		libp2p.Identity(priv),
		libp2p.ListenAddrs(QUICAddr(i)),
		libp2p.NoTransports,
		libp2p.Transport(libp2pquic.NewTransport),
		reuse,
	}, append(cheapOptions(), virtualOnly(i)...)...)...)
	if err != nil {
		return nil, fmt.Errorf("node %d host: %w", i, err)
	}
	return h, nil
}

// newTCPHost builds a go-libp2p host for node i whose TCP transport runs
// on uplink's TCP model (st), listening on TCPAddr(i), with go-libp2p's
// default security transports (TLS 1.3 preferred, then Noise; TLS also
// selects yamux in its handshake) and muxer (yamux), cheapOptions and
// virtualOnly.
func newTCPHost(st *tcp.Stack, i int, seed uint64) (host.Host, error) {
	priv, err := hostKey(seed, i)
	if err != nil {
		return nil, err
	}
	h, err := libp2p.New(append([]libp2p.Option{
		libp2p.Identity(priv),
		libp2p.ListenAddrs(TCPAddr(i)),
		libp2p.NoTransports,
		libp2p.Transport(libp2ptcp.Constructor(st, i)),
		libp2p.DefaultSecurity,
		libp2p.DefaultMuxers,
	}, append(cheapOptions(), virtualOnly(i)...)...)...)
	if err != nil {
		return nil, fmt.Errorf("node %d host: %w", i, err)
	}
	return h, nil
}
