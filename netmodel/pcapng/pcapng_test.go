package pcapng_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
	"github.com/uplinksim/uplink/netmodel/pcapng"
)

// capPacket is one Enhanced Packet Block as read back.
type capPacket struct {
	ts        des.Time
	out       bool
	data      []byte
	orig      int
	ifaceName string
}

// readPcapng parses a capture written by one interface, independently of
// the writer: every block's type and both its length fields, the section
// header's magic and version, the interface's link type and timestamp
// resolution, and each packet's fields.
func readPcapng(t *testing.T, b []byte) []capPacket {
	t.Helper()
	le := binary.LittleEndian
	var out []capPacket
	var linkType uint16
	var tsres byte
	var name string
	first := true
	for len(b) > 0 {
		require.GreaterOrEqual(t, len(b), 12)
		typ, n := le.Uint32(b), int(le.Uint32(b[4:]))
		require.Zero(t, n%4, "block length %d not a multiple of 4", n)
		require.GreaterOrEqual(t, n, 12)
		require.LessOrEqual(t, n, len(b))
		require.Equal(t, uint32(n), le.Uint32(b[n-4:]), "trailing block length")
		body := b[8 : n-4]
		if first {
			require.Equal(t, uint32(0x0A0D0D0A), typ, "the first block is a section header")
			require.Equal(t, uint32(0x1A2B3C4D), le.Uint32(body))
			require.Equal(t, uint16(1), le.Uint16(body[4:]))
			first = false
		} else {
			switch typ {
			case 1:
				linkType = le.Uint16(body)
				for o := body[8:]; len(o) >= 4; {
					code, l := le.Uint16(o), int(le.Uint16(o[2:]))
					if code == 0 {
						break
					}
					switch code {
					case 2:
						name = string(o[4 : 4+l])
					case 9:
						tsres = o[4]
					}
					o = o[4+(l+3)&^3:]
				}
			case 6:
				require.Equal(t, uint16(101), linkType)
				require.Equal(t, byte(9), tsres, "nanosecond timestamps")
				require.Zero(t, le.Uint32(body), "interface 0")
				ts := des.Time(uint64(le.Uint32(body[4:]))<<32 | uint64(le.Uint32(body[8:])))
				capLen, orig := int(le.Uint32(body[12:])), int(le.Uint32(body[16:]))
				data := body[20 : 20+capLen]
				opts := body[20+(capLen+3)&^3:]
				require.Equal(t, uint16(2), le.Uint16(opts), "epb_flags")
				flags := le.Uint32(opts[4:])
				require.Contains(t, []uint32{1, 2}, flags&3)
				out = append(out, capPacket{ts: ts, out: flags&3 == 2, data: data, orig: orig, ifaceName: name})
			default:
				t.Fatalf("unexpected block type %#x", typ)
			}
		}
		b = b[n:]
	}
	return out
}

// checksum is the Internet checksum of b (RFC 1071), folded, not
// complemented.
func checksum(b []byte, s uint32) uint16 {
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

// requireIPv4 checks a packet's IPv4 header, its checksum and, for UDP
// and TCP, the transport checksum over the pseudo-header; it returns the
// protocol and the transport segment.
func requireIPv4(t *testing.T, p []byte, orig int) (proto byte, seg []byte) {
	t.Helper()
	require.GreaterOrEqual(t, len(p), 20)
	require.Equal(t, byte(0x45), p[0])
	require.Equal(t, orig, int(binary.BigEndian.Uint16(p[2:])), "total length is the wire length")
	require.Equal(t, uint16(0xffff), checksum(p[:20], 0), "IPv4 header checksum")
	proto, seg = p[9], p[20:]
	ps := uint32(checksum(p[12:20], 0)) + uint32(proto) + uint32(len(seg))
	require.Equal(t, uint16(0xffff), checksum(seg, ps), "transport checksum of protocol %d", proto)
	return proto, seg
}

// TestCaptureUDP: a capture of node 0 holds every datagram it sent and
// received, as many as its counters, each stamped with the virtual
// instant it left the uplink shaper or reached the socket; the headers
// carry the virtual addresses, ports and lengths with valid checksums.
//
// Node 0's 8 Mbit/s uplink sends 1 000-byte packets handed over at once,
// so packet i leaves at (i+1) ms; node 1 echoes each as it arrives 5 ms
// later, and the echo reaches node 0 5 ms after that.
func TestCaptureUDP(t *testing.T) {
	const lat = 5 * des.Millisecond
	const count = 20
	sim := des.NewSim()
	n, err := netmodel.New(sim, netmodel.Config{Latency: netmodel.FixedLatency(lat)})
	require.NoError(t, err)
	_, err = n.AddNode(netmodel.NodeConfig{Up: netmodel.LinkConfig{Shaper: netmodel.OneMTUBurst(8e6)}})
	require.NoError(t, err)
	_, err = n.AddNode(netmodel.NodeConfig{})
	require.NoError(t, err)
	tx, err := n.Node(0).Bind(netmodel.ProtoUDP, 1000, netmodel.NeverBlock)
	require.NoError(t, err)
	rx, err := n.Node(1).Bind(netmodel.ProtoUDP, 2000, netmodel.NeverBlock)
	require.NoError(t, err)
	buf := make([]byte, 2048)
	rx.OnReadable = func() {
		for {
			k, src, port, ok := rx.Recv(buf)
			if !ok {
				return
			}
			require.NoError(t, rx.Send(src, port, buf[:k], sim.Now()))
		}
	}
	tx.OnReadable = func() {
		for {
			if _, _, _, ok := tx.Recv(buf); !ok {
				return
			}
		}
	}
	var file bytes.Buffer
	w := pcapng.Capture(n.Node(0), &file, "node 0")
	payload := make([]byte, 1000-netmodel.IPv4Header-netmodel.UDPHeader)
	for i := range count {
		payload[0] = byte(i)
		require.NoError(t, tx.Send(1, 2000, payload, 0))
	}
	sim.Run()
	require.NoError(t, w.Flush())

	pkts := readPcapng(t, file.Bytes())
	c := n.Node(0).Counters
	require.Equal(t, uint64(2*count), c.SentPackets+c.RecvPackets)
	require.Len(t, pkts, int(c.SentPackets+c.RecvPackets))
	require.Equal(t, uint64(len(pkts)), w.Packets())
	var outs, ins []des.Time
	for i, p := range pkts {
		require.Equal(t, "node 0", p.ifaceName)
		if i > 0 {
			require.LessOrEqual(t, pkts[i-1].ts, p.ts, "timestamps in order")
		}
		require.Equal(t, 1000, p.orig)
		require.Len(t, p.data, 1000, "the whole packet is captured")
		proto, seg := requireIPv4(t, p.data, p.orig)
		require.Equal(t, byte(netmodel.ProtoUDP), proto)
		require.Equal(t, uint16(1000-20), binary.BigEndian.Uint16(seg[4:]), "UDP length")
		src, dst := [4]byte(p.data[12:16]), [4]byte(p.data[16:20])
		sport, dport := binary.BigEndian.Uint16(seg), binary.BigEndian.Uint16(seg[2:])
		if p.out {
			require.Equal(t, netmodel.NodeAddr(0).As4(), src)
			require.Equal(t, netmodel.NodeAddr(1).As4(), dst)
			require.Equal(t, [2]uint16{1000, 2000}, [2]uint16{sport, dport})
			require.Equal(t, byte(len(outs)), seg[8], "sent in order")
			outs = append(outs, p.ts)
		} else {
			require.Equal(t, netmodel.NodeAddr(1).As4(), src)
			require.Equal(t, [2]uint16{2000, 1000}, [2]uint16{sport, dport})
			ins = append(ins, p.ts)
		}
	}
	require.Len(t, outs, count)
	require.Len(t, ins, count)
	for i := range count {
		require.Equal(t, des.Time(i+1)*des.Millisecond, outs[i], "packet %d left the shaper", i)
		require.Equal(t, des.Time(i+1)*des.Millisecond+2*lat, ins[i], "echo %d reached the socket", i)
	}
}

// TestNoTap: without a capture, a node's packets cost nothing extra: the
// network's send path allocates nothing in the steady state.
func TestNoTap(t *testing.T) {
	sim := des.NewSim()
	n, err := netmodel.New(sim, netmodel.Config{Latency: netmodel.FixedLatency(des.Millisecond)})
	require.NoError(t, err)
	for range 2 {
		_, err = n.AddNode(netmodel.NodeConfig{})
		require.NoError(t, err)
	}
	tx, _ := n.Node(0).Bind(netmodel.ProtoUDP, 1, netmodel.NeverBlock)
	rx, _ := n.Node(1).Bind(netmodel.ProtoUDP, 2, netmodel.NeverBlock)
	buf := make([]byte, 2048)
	rx.OnReadable = func() {
		for {
			if _, _, _, ok := rx.Recv(buf); !ok {
				return
			}
		}
	}
	payload := make([]byte, 1200)
	step := func() {
		require.NoError(t, tx.Send(1, 2, payload, sim.Now()))
		sim.Run()
	}
	step()
	require.Zero(t, testing.AllocsPerRun(100, step))
}
