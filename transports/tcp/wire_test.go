package tcp

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAppendWire: a header on the wire is h.Len() bytes with its data
// offset, ports, numbers, flags, scaled window and options in place.
func TestAppendWire(t *testing.T) {
	syn := &Header{Seq: 100, Flags: FlagSYN, Window: 65535, MSS: 1460, SACKPermitted: true}
	b := syn.AppendWire(nil, 5000, 80)
	require.Len(t, b, syn.Len())
	require.Equal(t, byte(32/4)<<4, b[12])
	require.Equal(t, byte(0x02), b[13])
	require.Equal(t, uint16(5000), binary.BigEndian.Uint16(b))
	require.Equal(t, uint16(80), binary.BigEndian.Uint16(b[2:]))
	require.Equal(t, uint32(100), binary.BigEndian.Uint32(b[4:]))
	require.Zero(t, binary.BigEndian.Uint32(b[8:]), "no ACK, no acknowledgement number")
	require.Equal(t, uint16(65535), binary.BigEndian.Uint16(b[14:]))
	require.Equal(t, []byte{2, 4, 0x05, 0xb4, 1, 3, 3, WireScale, 1, 1, 4, 2}, b[20:])

	ack := &Header{Seq: 7, Ack: 9, Flags: FlagACK | FlagFIN, Window: 1 << 20, NumSACK: 2,
		SACK: [MaxSACKBlocks]SACKBlock{{10, 20}, {30, 40}}}
	b = ack.AppendWire(nil, 1, 2)
	require.Len(t, b, ack.Len())
	require.Equal(t, byte(ack.Len()/4)<<4, b[12])
	require.Equal(t, byte(0x11), b[13])
	require.Equal(t, uint32(9), binary.BigEndian.Uint32(b[8:]))
	require.Equal(t, uint16(1<<20>>WireScale), binary.BigEndian.Uint16(b[14:]))
	require.Equal(t, []byte{1, 1, 5, 18}, b[20:24])
	require.Equal(t, uint32(40), binary.BigEndian.Uint32(b[len(b)-4:]))
}
