// Package pcapng writes a node's packets as a pcapng capture (the
// IETF draft "PCAP Next Generation (pcapng) Capture File Format"): one
// Section Header Block, one Interface Description Block of link type raw
// IPv4 (LINKTYPE_RAW, 101) with nanosecond timestamps, and one Enhanced
// Packet Block per packet, stamped with its virtual instant (virtual time 0
// is the Unix epoch) and flagged inbound or outbound.
//
// The network carries transport payloads and their wire length, not
// headers: each packet's IPv4 header and its UDP header (or, for a
// transport header that can write itself, such as the TCP model's, its TCP
// header) are synthesized from the virtual addresses and ports, with
// correct lengths and checksums.
package pcapng

import (
	"bufio"
	"encoding/binary"
	"io"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
)

// Block types and the link type.
const (
	BlockSHB    = 0x0A0D0D0A
	BlockIDB    = 0x00000001
	BlockEPB    = 0x00000006
	ByteOrder   = 0x1A2B3C4D
	LinkTypeRaw = 101 // raw IPv4 or IPv6, no link-layer header
)

// Option codes the writer uses.
const (
	optEnd      = 0
	optShbApp   = 4 // shb_userappl
	optIfName   = 2 // if_name
	optIfTsres  = 9 // if_tsresol
	optEpbFlags = 2 // epb_flags
)

// Direction bits of epb_flags.
const (
	FlagInbound  = 1
	FlagOutbound = 2
)

// WireHeader is a transport header carried in Packet.Hdr that writes
// itself on the wire: its bytes, ports included, with a zero checksum,
// which the writer fills in (transports/tcp.Header).
type WireHeader interface {
	AppendWire(b []byte, srcPort, dstPort uint16) []byte
}

// Writer writes one interface's packets. Its methods run in model events;
// the first write error sticks and is returned by Flush.
type Writer struct {
	w       *bufio.Writer
	err     error
	pkt     []byte // the packet being built
	blk     []byte // the block being built
	packets uint64
}

// NewWriter writes the section and interface headers to w; ifName names
// the interface (the node).
func NewWriter(w io.Writer, ifName string) *Writer {
	pw := &Writer{w: bufio.NewWriterSize(w, 64<<10)}
	// Section Header Block: byte-order magic, version 1.0, unknown
	// section length, the writing application.
	b := binary.LittleEndian.AppendUint32(nil, ByteOrder)
	b = binary.LittleEndian.AppendUint16(b, 1)
	b = binary.LittleEndian.AppendUint16(b, 0)
	b = binary.LittleEndian.AppendUint64(b, ^uint64(0))
	b = appendOption(b, optShbApp, []byte("uplink"))
	b = appendOption(b, optEnd, nil)
	pw.block(BlockSHB, b)
	// Interface Description Block: raw IPv4, no snap length, nanosecond
	// timestamps.
	b = binary.LittleEndian.AppendUint16(b[:0], LinkTypeRaw)
	b = binary.LittleEndian.AppendUint16(b, 0)
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = appendOption(b, optIfName, []byte(ifName))
	b = appendOption(b, optIfTsres, []byte{9})
	b = appendOption(b, optEnd, nil)
	pw.block(BlockIDB, b)
	return pw
}

// Capture installs a tap on nd that writes every packet it sends and
// receives to a new Writer on w, and returns the Writer.
func Capture(nd *netmodel.Node, w io.Writer, ifName string) *Writer {
	pw := NewWriter(w, ifName)
	nd.SetTap(pw.Packet)
	return pw
}

// Packet writes p as sent (out) or received at now; it is a netmodel.Tap.
func (pw *Writer) Packet(p *netmodel.Packet, now des.Time, out bool) {
	if pw.err != nil {
		return
	}
	pw.pkt = AppendIPv4(pw.pkt[:0], p)
	flags := uint32(FlagInbound)
	if out {
		flags = FlagOutbound
	}
	ts := uint64(now)
	b := binary.LittleEndian.AppendUint32(pw.blk[:0], 0) // interface 0
	b = binary.LittleEndian.AppendUint32(b, uint32(ts>>32))
	b = binary.LittleEndian.AppendUint32(b, uint32(ts))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(pw.pkt)))
	b = binary.LittleEndian.AppendUint32(b, uint32(max(p.Len, len(pw.pkt))))
	b = append(b, pw.pkt...)
	b = pad(b)
	b = appendOption(b, optEpbFlags, binary.LittleEndian.AppendUint32(nil, flags))
	b = appendOption(b, optEnd, nil)
	pw.blk = b
	pw.block(BlockEPB, b)
	pw.packets++
}

// Packets is the number of packets written.
func (pw *Writer) Packets() uint64 { return pw.packets }

// Flush writes what is buffered and returns the first error of any write.
func (pw *Writer) Flush() error {
	if pw.err == nil {
		pw.err = pw.w.Flush()
	}
	return pw.err
}

// block writes a block of type typ around body (already padded to 4).
func (pw *Writer) block(typ uint32, body []byte) {
	if pw.err != nil {
		return
	}
	var hdr [8]byte
	total := uint32(12 + len(body))
	binary.LittleEndian.PutUint32(hdr[:4], typ)
	binary.LittleEndian.PutUint32(hdr[4:], total)
	pw.w.Write(hdr[:])
	pw.w.Write(body)
	_, pw.err = pw.w.Write(hdr[4:])
}

// appendOption appends an option: code, length, value padded to 4.
func appendOption(b []byte, code uint16, v []byte) []byte {
	b = binary.LittleEndian.AppendUint16(b, code)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(v)))
	return pad(append(b, v...))
}

func pad(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// AppendIPv4 appends p as an IPv4 packet: a 20-byte header (DF, TTL 64,
// the ECN bits of p, identification the low 16 bits of the packet's
// sequence number on its socket, total length p.Len), then a UDP header
// (ProtoUDP) or the transport header of p.Hdr when it is a WireHeader, or
// a bare 20-byte TCP header with the ports (ProtoTCP without one), then
// the payload; with the transport checksum over the pseudo-header.
func AppendIPv4(b []byte, p *netmodel.Packet) []byte {
	start := len(b)
	src, dst := netmodel.NodeAddr(int(p.Flow.SrcNode)).As4(), netmodel.NodeAddr(int(p.Flow.DstNode)).As4()
	var tos byte
	switch {
	case p.CE:
		tos = 3
	case p.ECT:
		tos = 2
	}
	b = append(b, 0x45, tos)
	b = binary.BigEndian.AppendUint16(b, uint16(p.Len))
	b = binary.BigEndian.AppendUint16(b, uint16(p.Seq))
	b = append(b, 0x40, 0, 64, p.Flow.Proto, 0, 0)
	b = append(b, src[:]...)
	b = append(b, dst[:]...)
	binary.BigEndian.PutUint16(b[start+10:], ^fold(sum(b[start:start+netmodel.IPv4Header], 0)))
	th := len(b)
	sport, dport := p.Flow.SrcPort, p.Flow.DstPort
	csum := -1 // offset of the transport checksum, from th
	switch wh, ok := p.Hdr.(WireHeader); {
	case ok:
		b = wh.AppendWire(b, sport, dport)
		csum = 16
	case p.Flow.Proto == netmodel.ProtoUDP:
		b = binary.BigEndian.AppendUint16(b, sport)
		b = binary.BigEndian.AppendUint16(b, dport)
		b = binary.BigEndian.AppendUint16(b, uint16(netmodel.UDPHeader+len(p.Payload)))
		b = append(b, 0, 0)
		csum = 6
	case p.Flow.Proto == netmodel.ProtoTCP:
		b = binary.BigEndian.AppendUint16(b, sport)
		b = binary.BigEndian.AppendUint16(b, dport)
		b = append(b, 0, 0, 0, 0, 0, 0, 0, 0, 5<<4, 0, 0, 0, 0, 0, 0, 0)
		csum = 16
	}
	b = append(b, p.Payload...)
	if csum >= 0 {
		seg := b[th:]
		// The pseudo-header: addresses, protocol, segment length.
		s := sum(src[:], 0)
		s = sum(dst[:], s)
		s += uint32(p.Flow.Proto) + uint32(len(seg))
		c := ^fold(sum(seg, s))
		if c == 0 && p.Flow.Proto == netmodel.ProtoUDP {
			c = 0xffff // RFC 768: a computed zero is sent as all ones
		}
		binary.BigEndian.PutUint16(seg[csum:], c)
	}
	return b
}

// sum adds b's 16-bit big-endian words to s (the Internet checksum, RFC
// 1071, before folding).
func sum(b []byte, s uint32) uint32 {
	for len(b) >= 2 {
		s += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
		if s >= 1<<31 {
			s = s&0xffff + s>>16
		}
	}
	if len(b) == 1 {
		s += uint32(b[0]) << 8
	}
	return s
}

func fold(s uint32) uint16 {
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}
