package arms

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/reedsolomon"
)

// Reed-Solomon coding of the coded arms (docs/references.md, "Reed-Solomon"
// and "Completion rule and statistics"): a systematic code over GF(2^8) from
// github.com/klauspost/reedsolomon with K data shards (the payload's K
// segments) and K parity shards, so that any K of the 2K complete. GF(2^8)
// allows at most 256 shards, hence K <= MaxDataShards = 128. The last data
// shard is zero-padded to the segment size for coding and sent truncated to
// its true length, which the descriptor's total length determines.
//
// A descriptor carries version, count, segment size, total length and a
// SHA-256 Merkle root over the shards, so that a receiver rejects an
// inconsistent set. The Merkle tree is defined here as:
//
//   - leaves, in shard order 0..2K-1 (data then parity): SHA-256 of each
//     shard padded to the segment size (the last data shard with its zero
//     padding);
//   - each next level: SHA-256(left || right) of adjacent pairs, left to
//     right; an odd last node is promoted to the next level unchanged;
//   - the root is the single node left (with one leaf, the leaf itself;
//     coding always has at least two shards).
const (
	// DescriptorVersion is the only descriptor version this package writes
	// and accepts.
	DescriptorVersion = 1
	// MaxDataShards is the largest K: K data + K parity must fit the 256
	// shards of GF(2^8).
	MaxDataShards = 128
	// DescriptorLen is the length of an encoded descriptor.
	DescriptorLen = 1 + 1 + 2 + 4 + 8 + 32
)

// FlagCompressFirst marks a descriptor whose coded bytes are the snappy
// block encoding of the payload (compress-first arms: aadaptcf, aadaptcfd,
// acodedcf); TotalLength is then the compressed length.
const FlagCompressFirst uint8 = 1

// Descriptor describes one coded group (docs/references.md, "Reed-Solomon").
// Count is K, the number of data shards (the group has 2K shards);
// SegmentSize is the full shard size; TotalLength is the length of the coded
// bytes (the compressed length under FlagCompressFirst); Root is the Merkle
// root defined above.
type Descriptor struct {
	Version     uint8
	Flags       uint8
	Count       int
	SegmentSize int
	TotalLength int
	Root        [32]byte
}

// Shard is one coded shard: Index 0..K-1 are the data shards (the segments),
// K..2K-1 the parity shards. Data is the bytes as sent: segment size, except
// the last data shard, which is truncated to its true length.
type Shard struct {
	Index int
	Data  []byte
}

// Encode codes payload at unit bytes per shard: K = ceil(len/unit) data
// shards and K parity shards, with their descriptor.
func Encode(payload []byte, unit int) (Descriptor, []Shard, error) {
	d, s, err := encode(payload, unit, 0)
	if err != nil {
		return Descriptor{}, nil, fmt.Errorf("rs encode: %w", err)
	}
	return d, s, nil
}

// EncodeCompressFirst snappy-compresses payload (block encoding), then
// segments and codes the compressed bytes as Encode does (tier 3 and
// acodedcf, docs/references.md, "Arms"). The descriptor carries the compressed
// length and FlagCompressFirst; Decode reverses both steps.
func EncodeCompressFirst(payload []byte, unit int) (Descriptor, []Shard, error) {
	if len(payload) == 0 {
		return Descriptor{}, nil, errors.New("rs encode compress-first: empty payload")
	}
	d, s, err := encode(snappy.Encode(nil, payload), unit, FlagCompressFirst)
	if err != nil {
		return Descriptor{}, nil, fmt.Errorf("rs encode compress-first: %w", err)
	}
	return d, s, nil
}

func encode(data []byte, unit int, flags uint8) (Descriptor, []Shard, error) {
	k, err := SegmentCount(len(data), unit)
	if err != nil {
		return Descriptor{}, nil, err
	}
	if k > MaxDataShards {
		return Descriptor{}, nil, fmt.Errorf("%d data shards of %d bytes exceed %d (GF(2^8) holds 256 shards)", k, unit, MaxDataShards)
	}
	enc, err := reedsolomon.New(k, k)
	if err != nil {
		return Descriptor{}, nil, fmt.Errorf("new coder (%d+%d): %w", k, k, err)
	}
	full := make([][]byte, 2*k)
	buf := make([]byte, 2*k*unit)
	for i := range full {
		full[i] = buf[i*unit : (i+1)*unit : (i+1)*unit]
	}
	copy(buf, data) // the tail of the last data shard stays zero
	if err := enc.Encode(full); err != nil {
		return Descriptor{}, nil, fmt.Errorf("code %d+%d shards: %w", k, k, err)
	}
	desc := Descriptor{
		Version:     DescriptorVersion,
		Flags:       flags,
		Count:       k,
		SegmentSize: unit,
		TotalLength: len(data),
		Root:        MerkleRoot(full),
	}
	shards := make([]Shard, 2*k)
	for i := range shards {
		shards[i] = Shard{Index: i, Data: full[i]}
	}
	last := len(data) - (k-1)*unit
	shards[k-1].Data = full[k-1][:last:last]
	return desc, shards, nil
}

// MerkleRoot is the SHA-256 Merkle root over leaves (already padded shards),
// as defined above: leaf hashes, pairwise SHA-256(left || right), an odd
// node promoted unchanged.
func MerkleRoot(leaves [][]byte) [32]byte {
	if len(leaves) == 0 {
		return [32]byte{}
	}
	level := make([][32]byte, len(leaves))
	for i, l := range leaves {
		level[i] = sha256.Sum256(l)
	}
	var pair [64]byte
	for len(level) > 1 {
		next := level[:0:0]
		for i := 0; i+1 < len(level); i += 2 {
			copy(pair[:32], level[i][:])
			copy(pair[32:], level[i+1][:])
			next = append(next, sha256.Sum256(pair[:]))
		}
		if len(level)%2 == 1 {
			next = append(next, level[len(level)-1])
		}
		level = next
	}
	return level[0]
}

// Validate checks a descriptor's own consistency.
func (d Descriptor) Validate() error {
	switch {
	case d.Version != DescriptorVersion:
		return fmt.Errorf("descriptor: version %d, want %d", d.Version, DescriptorVersion)
	case d.Flags&^FlagCompressFirst != 0:
		return fmt.Errorf("descriptor: unknown flags %#x", d.Flags)
	case d.Count < 1 || d.Count > MaxDataShards:
		return fmt.Errorf("descriptor: count %d outside [1, %d]", d.Count, MaxDataShards)
	case d.SegmentSize < 1:
		return fmt.Errorf("descriptor: segment size %d is not positive", d.SegmentSize)
	case d.TotalLength <= (d.Count-1)*d.SegmentSize || d.TotalLength > d.Count*d.SegmentSize:
		return fmt.Errorf("descriptor: total length %d does not fit %d segments of %d bytes", d.TotalLength, d.Count, d.SegmentSize)
	}
	return nil
}

// lastLen is the true length of the last data shard.
func (d Descriptor) lastLen() int { return d.TotalLength - (d.Count-1)*d.SegmentSize }

// MarshalBinary encodes the descriptor in DescriptorLen bytes, big-endian:
// version (1), flags (1), count (2), segment size (4), total length (8),
// root (32).
func (d Descriptor) MarshalBinary() ([]byte, error) {
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("marshal: %w", err)
	}
	b := make([]byte, DescriptorLen)
	b[0] = d.Version
	b[1] = d.Flags
	binary.BigEndian.PutUint16(b[2:4], uint16(d.Count))
	binary.BigEndian.PutUint32(b[4:8], uint32(d.SegmentSize))
	binary.BigEndian.PutUint64(b[8:16], uint64(d.TotalLength))
	copy(b[16:48], d.Root[:])
	return b, nil
}

// UnmarshalBinary decodes and validates a descriptor written by
// MarshalBinary.
func (d *Descriptor) UnmarshalBinary(b []byte) error {
	if len(b) != DescriptorLen {
		return fmt.Errorf("unmarshal descriptor: length %d, want %d", len(b), DescriptorLen)
	}
	total := binary.BigEndian.Uint64(b[8:16])
	if total > 1<<40 {
		return fmt.Errorf("unmarshal descriptor: total length %d is implausible", total)
	}
	v := Descriptor{
		Version:     b[0],
		Flags:       b[1],
		Count:       int(binary.BigEndian.Uint16(b[2:4])),
		SegmentSize: int(binary.BigEndian.Uint32(b[4:8])),
		TotalLength: int(total),
	}
	copy(v.Root[:], b[16:48])
	if err := v.Validate(); err != nil {
		return fmt.Errorf("unmarshal: %w", err)
	}
	*d = v
	return nil
}

// Decode recovers the payload from any K distinct shards of desc's group
// (more are fine). It rejects shards with a bad index or length, conflicting
// duplicates, fewer than K shards, and any set whose completed 2K shards do
// not hash to desc.Root, so a corrupted or foreign shard fails the recovery.
// Under FlagCompressFirst it also snappy-decodes the result.
func Decode(desc Descriptor, shards []Shard) ([]byte, error) {
	if err := desc.Validate(); err != nil {
		return nil, fmt.Errorf("rs decode: %w", err)
	}
	k, unit := desc.Count, desc.SegmentSize
	full := make([][]byte, 2*k)
	have := 0
	for _, s := range shards {
		if s.Index < 0 || s.Index >= 2*k {
			return nil, fmt.Errorf("rs decode: shard index %d out of range [0, %d)", s.Index, 2*k)
		}
		want := unit
		if s.Index == k-1 {
			want = desc.lastLen()
		}
		if len(s.Data) != want {
			return nil, fmt.Errorf("rs decode: shard %d is %d bytes, want %d", s.Index, len(s.Data), want)
		}
		padded := make([]byte, unit)
		copy(padded, s.Data)
		if prev := full[s.Index]; prev != nil {
			if string(prev) != string(padded) {
				return nil, fmt.Errorf("rs decode: conflicting copies of shard %d", s.Index)
			}
			continue
		}
		full[s.Index] = padded
		have++
	}
	if have < k {
		return nil, fmt.Errorf("rs decode: %d distinct shards, need %d", have, k)
	}
	enc, err := reedsolomon.New(k, k)
	if err != nil {
		return nil, fmt.Errorf("rs decode: new coder (%d+%d): %w", k, k, err)
	}
	if err := enc.Reconstruct(full); err != nil {
		return nil, fmt.Errorf("rs decode: reconstruct: %w", err)
	}
	if root := MerkleRoot(full); root != desc.Root {
		return nil, fmt.Errorf("rs decode: merkle root %x does not match descriptor %x: inconsistent shard set", root, desc.Root)
	}
	out := make([]byte, 0, desc.TotalLength)
	for i := range k - 1 {
		out = append(out, full[i]...)
	}
	out = append(out, full[k-1][:desc.lastLen()]...)
	if desc.Flags&FlagCompressFirst != 0 {
		plain, err := snappy.Decode(nil, out)
		if err != nil {
			return nil, fmt.Errorf("rs decode: snappy-decode %d compressed bytes: %w", len(out), err)
		}
		return plain, nil
	}
	return out, nil
}
