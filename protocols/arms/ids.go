package arms

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// Message ids (docs/references.md, "Gossipsub settings" and "Structured
// ids").
//
// Plain arms use the 20-byte hash id: the first 20 bytes of SHA-256 of the
// message data. With structured ids each segment's id is an 81-byte prefix
// followed by that 20-byte hash id, 101 bytes in all. The study gives the
// prefix's fields (magic "SGID", version, slot, block root, group id,
// index) and its total of 81 bytes but not the field widths
// (docs/references.md, "Structured ids"); this package fixes them, all
// integers big-endian:
//
//	offset  width  field
//	     0      4  magic "SGID"
//	     4      1  version (StructuredIDVersion)
//	     5      8  slot
//	    13     32  block root
//	    45     32  group id (the set of segments or shards the unit belongs to)
//	    77      4  index (segment or shard index within the group)
//	    81     20  hash id of the segment data (HashID)
//	   101         end
const (
	HashIDLen           = 20
	StructuredPrefixLen = 81
	StructuredIDLen     = StructuredPrefixLen + HashIDLen
	// StructuredIDVersion is the only prefix version this package writes
	// and accepts.
	StructuredIDVersion = 1
)

// structuredMagic opens every structured id.
var structuredMagic = [4]byte{'S', 'G', 'I', 'D'}

// HashID is the 20-byte hash id of plain arms: SHA-256(data)[:20].
func HashID(data []byte) [HashIDLen]byte {
	sum := sha256.Sum256(data)
	var id [HashIDLen]byte
	copy(id[:], sum[:HashIDLen])
	return id
}

// StructuredPrefix is the decoded 81-byte prefix of a structured id.
type StructuredPrefix struct {
	Version   uint8
	Slot      uint64
	BlockRoot [32]byte
	GroupID   [32]byte
	Index     uint32
}

// StructuredID builds the 101-byte structured id of a segment: p encoded as
// the 81-byte prefix, followed by HashID(data). p.Version must be
// StructuredIDVersion.
func StructuredID(p StructuredPrefix, data []byte) ([]byte, error) {
	if p.Version != StructuredIDVersion {
		return nil, fmt.Errorf("structured id: version %d, want %d", p.Version, StructuredIDVersion)
	}
	id := make([]byte, StructuredIDLen)
	copy(id[0:4], structuredMagic[:])
	id[4] = p.Version
	binary.BigEndian.PutUint64(id[5:13], p.Slot)
	copy(id[13:45], p.BlockRoot[:])
	copy(id[45:77], p.GroupID[:])
	binary.BigEndian.PutUint32(id[77:81], p.Index)
	h := HashID(data)
	copy(id[81:], h[:])
	return id, nil
}

// ParseStructuredID decodes a 101-byte structured id into its prefix and
// hash id. It rejects a wrong length, a wrong magic and an unknown version.
func ParseStructuredID(id []byte) (StructuredPrefix, [HashIDLen]byte, error) {
	var p StructuredPrefix
	var h [HashIDLen]byte
	if len(id) != StructuredIDLen {
		return p, h, fmt.Errorf("parse structured id: length %d, want %d", len(id), StructuredIDLen)
	}
	if !bytes.Equal(id[0:4], structuredMagic[:]) {
		return p, h, fmt.Errorf("parse structured id: magic %q, want %q", id[0:4], structuredMagic[:])
	}
	p.Version = id[4]
	if p.Version != StructuredIDVersion {
		return p, h, fmt.Errorf("parse structured id: version %d, want %d", p.Version, StructuredIDVersion)
	}
	p.Slot = binary.BigEndian.Uint64(id[5:13])
	copy(p.BlockRoot[:], id[13:45])
	copy(p.GroupID[:], id[45:77])
	p.Index = binary.BigEndian.Uint32(id[77:81])
	copy(h[:], id[81:])
	return p, h, nil
}

// VerifyStructuredID parses id and checks that its hash id is HashID(data).
func VerifyStructuredID(id, data []byte) (StructuredPrefix, error) {
	p, h, err := ParseStructuredID(id)
	if err != nil {
		return p, fmt.Errorf("verify structured id: %w", err)
	}
	if h != HashID(data) {
		return p, fmt.Errorf("verify structured id: hash id %x does not match data (index %d)", h, p.Index)
	}
	return p, nil
}

// WireForm is an arm's wire form, which every record carries; records with
// different wire forms are not compared (docs/references.md, "Arms"; the
// report's Appendix A). MessageCount is the number of gossip messages the
// publisher publishes (for coded arms data plus parity shards), Unit the
// bytes per full unit (the whole payload for the whole-message arm),
// IDWidth the message id length in bytes.
type WireForm struct {
	MessageCount int
	Unit         int
	IDWidth      int
}

// WholeWireForm is the wire form of the whole-message arm for a payload of n
// bytes: one message of n bytes with a 20-byte hash id.
func WholeWireForm(n int) (WireForm, error) {
	if n <= 0 {
		return WireForm{}, fmt.Errorf("whole wire form: payload length %d is not positive", n)
	}
	return WireForm{MessageCount: 1, Unit: n, IDWidth: HashIDLen}, nil
}

// SegmentedWireForm is the wire form of a segmented arm for n bytes (after
// compression, for compress-first arms) at unit bytes: K = ceil(n / unit)
// messages, or 2K with K parity shards when coded, and 101-byte ids with
// structured ids, 20-byte ones otherwise.
func SegmentedWireForm(n, unit int, coded, structured bool) (WireForm, error) {
	k, err := SegmentCount(n, unit)
	if err != nil {
		return WireForm{}, fmt.Errorf("segmented wire form: %w", err)
	}
	wf := WireForm{MessageCount: k, Unit: unit, IDWidth: HashIDLen}
	if coded {
		wf.MessageCount = 2 * k
	}
	if structured {
		wf.IDWidth = StructuredIDLen
	}
	return wf, nil
}
