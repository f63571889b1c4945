package tcp

// Flags are the TCP control bits the model uses.
type Flags uint8

// Control bits (RFC 9293 §3.1). PSH and URG are not modelled: every
// segment is pushed to the reader as it arrives.
const (
	FlagFIN Flags = 1 << iota
	FlagSYN
	FlagRST
	FlagACK
)

func (f Flags) String() string {
	s := ""
	for _, x := range []struct {
		f Flags
		n string
	}{{FlagSYN, "S"}, {FlagFIN, "F"}, {FlagRST, "R"}, {FlagACK, "."}} {
		if f&x.f != 0 {
			s += x.n
		}
	}
	return s
}

// SACKBlock is one selective-acknowledgement block (RFC 2018): the
// receiver holds [Start, End).
type SACKBlock struct{ Start, End SeqNum }

// MaxSACKBlocks is how many SACK blocks fit in the 40 bytes of option
// space without the timestamp option (RFC 2018 §3: 4 blocks take 34).
const MaxSACKBlocks = 4

// Wire sizes of the TCP header and the options the model carries.
//
// The model does not carry the timestamp option (RFC 7323), so a full data
// segment is MSS 1 460 + 20 + 20 = 1 500 bytes on the wire, as the brief
// (and Shadow) has it; Linux would send 12 bytes of timestamps on every
// segment and 1 448 bytes of payload. SACK blocks cost 4 + 8n bytes
// (two NOPs for alignment, kind, length, n blocks), the SYN's options
// (MSS, SACK-permitted, window scale, with NOP padding) 12 bytes.
const (
	HeaderLen     = 20
	synOptionsLen = 12
	sackBaseLen   = 4
	sackBlockLen  = 8
)

// Header is the TCP header the model carries in Packet.Hdr. Ports travel
// in the packet's flow key. The window is carried in bytes: window scaling
// (RFC 7323) is implicit, so any window up to 2^30 is representable.
// Headers are pooled per Engine; a receiver hands a header back once it has
// processed the segment (headers of lost packets are left to the GC).
type Header struct {
	Seq, Ack SeqNum
	Flags    Flags
	Window   uint32
	// MSS and SACKPermitted are SYN options.
	MSS           uint16
	SACKPermitted bool
	NumSACK       uint8
	SACK          [MaxSACKBlocks]SACKBlock
}

// Len is the header's size on the wire, options included.
func (h *Header) Len() int {
	n := HeaderLen
	if h.Flags&FlagSYN != 0 {
		n += synOptionsLen
	}
	if h.NumSACK > 0 {
		n += sackBaseLen + sackBlockLen*int(h.NumSACK)
	}
	return n
}

// Blocks returns the header's SACK blocks.
func (h *Header) Blocks() []SACKBlock { return h.SACK[:h.NumSACK] }
