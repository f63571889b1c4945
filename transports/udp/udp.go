// Package udp gives real code virtual UDP sockets: each Conn is a
// net.PacketConn bound to a node of a netmodel.Network, driven by a
// des.Live on the bubble's virtual clock.
//
// A write takes effect at the caller's virtual now, under the model lock,
// with no goroutine hand-off. A read that finds the receive buffer empty
// waits on the socket's own one-slot channel, which the model signals when a
// datagram is delivered, so a delivery wakes at most that one reader.
// Writers blocked on a full send buffer wake one at a time: each, once its
// datagram is queued, wakes the next while space remains.
package udp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
)

// Stack binds virtual UDP sockets on a network for real code.
type Stack struct {
	live  *des.Live
	net   *netmodel.Network
	addrs map[uint64]*net.UDPAddr // (node, port) -> address, shared and immutable
}

// NewStack returns a stack on n, driven by live (which must wrap n's Sim).
func NewStack(live *des.Live, n *netmodel.Network) *Stack {
	return &Stack{live: live, net: n, addrs: make(map[uint64]*net.UDPAddr)}
}

// Live is the stack's bridge to the event core.
func (st *Stack) Live() *des.Live { return st.live }

// Network is the stack's network.
func (st *Stack) Network() *netmodel.Network { return st.net }

// addr returns the shared address of (node, port); call with the lock held.
func (st *Stack) addr(node int, port uint16) *net.UDPAddr {
	k := uint64(node)<<16 | uint64(port)
	a := st.addrs[k]
	if a == nil {
		a = net.UDPAddrFromAddrPort(netip.AddrPortFrom(netmodel.NodeAddr(node), port))
		st.addrs[k] = a
	}
	return a
}

// Listen binds a socket on node at port (0: an ephemeral port). mode says
// whether writes block on a full send buffer.
func (st *Stack) Listen(node int, port uint16, mode netmodel.SendMode) (*Conn, error) {
	st.live.Lock()
	defer st.live.Unlock()
	if node < 0 || node >= len(st.net.Nodes()) {
		return nil, fmt.Errorf("udp: listen on node %d: no such node (the network has %d)", node, len(st.net.Nodes()))
	}
	s, err := st.net.Node(node).Bind(netmodel.ProtoUDP, port, mode)
	if err != nil {
		return nil, fmt.Errorf("udp: listen: %w", err)
	}
	c := &Conn{
		st:       st,
		s:        s,
		laddr:    st.addr(node, s.Port()),
		readable: make(chan struct{}, 1),
		writable: make(chan struct{}, 1),
		closed:   make(chan struct{}),
		dl:       des.NewDeadlines(),
	}
	s.OnReadable = func() { signal(c.readable) }
	s.OnWritable = func() { signal(c.writable) }
	return c, nil
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Conn is a virtual UDP socket; it implements net.PacketConn and the
// buffer-size setters quic-go looks for.
type Conn struct {
	st        *Stack
	s         *netmodel.Socket
	laddr     *net.UDPAddr
	readable  chan struct{}
	writable  chan struct{}
	closed    chan struct{}
	dl        *des.Deadlines
	closeOnce sync.Once
	// writers counts writers waiting for send-buffer space, under the live
	// lock. quic-go writes from one goroutine per connection, and all of a
	// host's connections share its socket: the model wakes one writer when
	// space comes back, and that writer passes the wake-up on (see
	// WriteTo and netmodel.Socket.AwaitSpace).
	writers int
}

var _ net.PacketConn = (*Conn)(nil)

// Socket is the model socket behind c.
func (c *Conn) Socket() *netmodel.Socket { return c.s }

// ReadFrom reads the next datagram, waiting for one if none is buffered.
func (c *Conn) ReadFrom(b []byte) (int, net.Addr, error) {
	l := c.st.live
	for {
		l.Lock()
		if c.s.Closed() {
			l.Unlock()
			return 0, nil, net.ErrClosed
		}
		n, src, port, ok := c.s.Recv(b)
		if ok {
			a := c.st.addr(src, port)
			l.Unlock()
			return n, a, nil
		}
		l.Unlock()
		if err := c.dl.Wait(c.readable, c.closed, true); err != nil {
			return 0, nil, err
		}
	}
}

// WriteTo sends b to addr, a *net.UDPAddr of a node of the network. In
// blocking mode it waits while the send buffer is full.
func (c *Conn) WriteTo(b []byte, addr net.Addr) (int, error) {
	dst, port, err := c.resolve(addr)
	if err != nil {
		return 0, err
	}
	l := c.st.live
	waited := false
	for {
		now := l.Lock()
		if waited {
			c.writers--
			waited = false
		}
		err := c.s.Send(dst, port, b, now)
		if errors.Is(err, netmodel.ErrWouldBlock) {
			c.writers++
			waited = true
		} else if c.writers > 0 && c.s.AwaitSpace() {
			signal(c.writable) // pass the wake-up on to the next waiting writer
		}
		l.Unlock()
		switch {
		case err == nil:
			return len(b), nil
		case errors.Is(err, netmodel.ErrWouldBlock):
			if err := c.dl.Wait(c.writable, c.closed, false); err != nil {
				l.Lock()
				c.writers--
				l.Unlock()
				return 0, err
			}
		case errors.Is(err, netmodel.ErrClosed):
			return 0, net.ErrClosed
		default:
			return 0, &net.OpError{Op: "write", Net: "udp", Addr: addr, Err: err}
		}
	}
}

func (c *Conn) resolve(addr net.Addr) (int, uint16, error) {
	var ap netip.AddrPort
	switch a := addr.(type) {
	case *net.UDPAddr:
		ap = a.AddrPort()
	default:
		p, err := netip.ParseAddrPort(addr.String())
		if err != nil {
			return 0, 0, fmt.Errorf("udp: write to %v: not a UDP address", addr)
		}
		ap = p
	}
	n := c.st.net.NodeOf(ap.Addr())
	if n < 0 {
		return 0, 0, &net.OpError{Op: "write", Net: "udp", Addr: addr, Err: errors.New("no such node in the simulated network")}
	}
	return n, ap.Port(), nil
}

// Close unbinds the socket and wakes any waiting reader or writer.
func (c *Conn) Close() error {
	err := net.ErrClosed
	c.closeOnce.Do(func() {
		l := c.st.live
		l.Lock()
		c.s.Close()
		l.Unlock()
		close(c.closed)
		err = nil
	})
	return err
}

// LocalAddr is the bound address.
func (c *Conn) LocalAddr() net.Addr { return c.laddr }

// SetDeadline sets the read and write deadlines.
func (c *Conn) SetDeadline(t time.Time) error { c.dl.Set(true, true, t); return nil }

// SetReadDeadline sets the read deadline.
func (c *Conn) SetReadDeadline(t time.Time) error { c.dl.Set(true, false, t); return nil }

// SetWriteDeadline sets the write deadline.
func (c *Conn) SetWriteDeadline(t time.Time) error { c.dl.Set(false, true, t); return nil }

// SetReadBuffer sets the receive buffer; the stored size is doubled and
// clamped, as on Linux and Shadow.
func (c *Conn) SetReadBuffer(n int) error {
	c.st.live.Lock()
	defer c.st.live.Unlock()
	c.s.SetRecvBuffer(n)
	return nil
}

// SetWriteBuffer sets the send buffer; the stored size is doubled and
// clamped, as on Linux and Shadow.
func (c *Conn) SetWriteBuffer(n int) error {
	c.st.live.Lock()
	defer c.st.live.Unlock()
	c.s.SetSendBuffer(n)
	return nil
}
