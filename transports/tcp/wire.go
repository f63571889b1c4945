package tcp

import "encoding/binary"

// WireScale is the window scale a capture of the model's segments
// announces in their SYNs (RFC 7323): the model carries windows in bytes,
// so AppendWire writes a SYN's window as is (at most 65 535) and every
// other segment's shifted right by WireScale.
const WireScale = 7

// AppendWire appends h as a TCP header on the wire, h.Len() bytes, with
// the ports given and a zero checksum: a SYN's options are MSS, window
// scale (WireScale) and SACK-permitted with NOP padding (12 bytes, as the
// model counts them), SACK blocks are two NOPs, kind 5 and the blocks.
// A capture (netmodel/pcapng) uses it to write the model's segments.
func (h *Header) AppendWire(b []byte, srcPort, dstPort uint16) []byte {
	n := h.Len()
	b = binary.BigEndian.AppendUint16(b, srcPort)
	b = binary.BigEndian.AppendUint16(b, dstPort)
	b = binary.BigEndian.AppendUint32(b, uint32(h.Seq))
	ack := uint32(0)
	if h.Flags&FlagACK != 0 {
		ack = uint32(h.Ack)
	}
	b = binary.BigEndian.AppendUint32(b, ack)
	var flags byte
	for _, f := range [...]struct {
		m    Flags
		wire byte
	}{{FlagFIN, 0x01}, {FlagSYN, 0x02}, {FlagRST, 0x04}, {FlagACK, 0x10}} {
		if h.Flags&f.m != 0 {
			flags |= f.wire
		}
	}
	win := h.Window
	if h.Flags&FlagSYN == 0 {
		win >>= WireScale
	}
	b = append(b, byte(n/4)<<4, flags)
	b = binary.BigEndian.AppendUint16(b, uint16(min(win, 0xffff)))
	b = append(b, 0, 0, 0, 0) // checksum, urgent pointer
	if h.Flags&FlagSYN != 0 {
		b = append(b, 2, 4)
		b = binary.BigEndian.AppendUint16(b, h.MSS)
		b = append(b, 1, 3, 3, WireScale, 1, 1)
		if h.SACKPermitted {
			b = append(b, 4, 2)
		} else {
			b = append(b, 1, 1)
		}
	}
	if h.NumSACK > 0 {
		b = append(b, 1, 1, 5, byte(2+sackBlockLen*int(h.NumSACK)))
		for _, s := range h.Blocks() {
			b = binary.BigEndian.AppendUint32(b, uint32(s.Start))
			b = binary.BigEndian.AppendUint32(b, uint32(s.End))
		}
	}
	return b
}
