package arms

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/klauspost/compress/snappy"

	"github.com/uplinksim/uplink/protocols/phase"
)

// Unit is one gossip message of an arm: its index (segment or shard), the
// message data as published (after the 81-byte prefix, with structured
// ids) and its message id.
type Unit struct {
	Index int
	Data  []byte
	ID    string
}

// Units is what the publisher of an arm sends for one payload, with the
// completion rule: a receiver is complete once it holds Need of them (all
// K segments; any K of the K + K shards; the one whole message).
type Units struct {
	Units []Unit
	Need  int
	Desc  *Descriptor // coded arms: the code's descriptor
	Form  WireForm
}

// IDs returns the units' message ids in index order.
func (u Units) IDs() []string {
	ids := make([]string, len(u.Units))
	for i, x := range u.Units {
		ids[i] = x.ID
	}
	return ids
}

// MessageID is the message id function of every arm: for data that opens
// with a structured prefix, the prefix plus the 20-byte hash id of the rest
// (101 bytes); otherwise the 20-byte hash id of the data.
func MessageID(data []byte) string {
	if len(data) >= StructuredPrefixLen && bytes.Equal(data[:4], structuredMagic[:]) {
		h := HashID(data[StructuredPrefixLen:])
		return string(data[:StructuredPrefixLen]) + string(h[:])
	}
	h := HashID(data)
	return string(h[:])
}

// Encoding is how a unit's bytes are put on the wire.
type Encoding string

const (
	// EncodingRaw publishes each unit's bytes as they are.
	EncodingRaw Encoding = ""
	// EncodingSnappy publishes each unit snappy-compressed (block
	// format), as the study's harness and Shadow node do: every gossip
	// message goes through Prysm's gossip encoder (SSZ, then snappy;
	// wholeArm and segmentedArm in the study's segmentintegrationtest).
	// The SSZ container's own bytes (a 4-byte offset for the whole
	// message; a segment's signature and proof) are not modelled.
	// Structured ids stay in the clear, in front of the compressed bytes.
	EncodingSnappy Encoding = "snappy"
)

// ParseEncoding checks a wire encoding's name.
func ParseEncoding(s string) (Encoding, error) {
	switch e := Encoding(s); e {
	case EncodingRaw, EncodingSnappy:
		return e, nil
	case "raw":
		return EncodingRaw, nil
	}
	return "", fmt.Errorf("wire encoding %q: valid encodings are raw and snappy", s)
}

// Units is UnitsEncoded with the raw encoding.
func (a Arm) Units(payload []byte, slot uint64) (Units, error) {
	return a.UnitsEncoded(payload, slot, EncodingRaw)
}

// UnitsEncoded splits (and, for coded arms, codes) payload into the arm's units.
// slot is the structured ids' slot; the block root is SHA-256 of the
// payload and the group id SHA-256 of the arm name and the root.
// Variant B has no units here: its parts travel on the partial-messages
// extension.
func (a Arm) UnitsEncoded(payload []byte, slot uint64, enc Encoding) (Units, error) {
	if len(payload) == 0 {
		return Units{}, errors.New("arm units: empty payload")
	}
	form, err := a.WireForm(payload)
	if err != nil {
		return Units{}, err
	}
	var parts [][]byte
	out := Units{Form: form}
	switch {
	case a.Variant == VariantWhole:
		parts = [][]byte{payload}
	case a.Variant == VariantB:
		return Units{}, fmt.Errorf("arm %s: variant B (partial messages) is not implemented yet", a.Name)
	case a.Coded:
		var d Descriptor
		var shards []Shard
		if a.CompressFirst {
			d, shards, err = EncodeCompressFirst(payload, a.Unit)
		} else {
			d, shards, err = Encode(payload, a.Unit)
		}
		if err != nil {
			return Units{}, fmt.Errorf("arm %s: %w", a.Name, err)
		}
		out.Desc = &d
		for _, s := range shards {
			parts = append(parts, s.Data)
		}
		out.Need = d.Count
	default:
		segs, err := Split(payload, a.Unit)
		if err != nil {
			return Units{}, fmt.Errorf("arm %s: %w", a.Name, err)
		}
		for _, s := range segs {
			parts = append(parts, s.Data)
		}
	}
	if out.Need == 0 {
		out.Need = len(parts)
	}
	if len(parts) != form.MessageCount {
		return Units{}, fmt.Errorf("arm %s: %d units, wire form says %d", a.Name, len(parts), form.MessageCount)
	}
	if enc == EncodingSnappy {
		for i, p := range parts {
			parts[i] = snappy.Encode(nil, p)
		}
	}
	seen := make(map[string]int, len(parts))
	prefix := StructuredPrefix{Version: StructuredIDVersion, Slot: slot, BlockRoot: sha256.Sum256(payload)}
	prefix.GroupID = sha256.Sum256(append([]byte(a.Name), prefix.BlockRoot[:]...))
	for i, p := range parts {
		u := Unit{Index: i, Data: p}
		if a.StructuredIDs {
			prefix.Index = uint32(i)
			id, err := StructuredID(prefix, p)
			if err != nil {
				return Units{}, fmt.Errorf("arm %s: %w", a.Name, err)
			}
			u.Data = append(id[:StructuredPrefixLen:StructuredPrefixLen], p...)
			u.ID = string(id)
		} else {
			u.ID = MessageID(p)
		}
		if j, dup := seen[u.ID]; dup {
			return Units{}, fmt.Errorf("arm %s: units %d and %d have the same message id; gossipsub would drop one as a duplicate", a.Name, j, i)
		}
		seen[u.ID] = i
		out.Units = append(out.Units, u)
	}
	return out, nil
}

// Policy is the phase router's policy for the arm at a payload of
// payloadLen bytes; ok is false for stock arms.
func (a Arm) Policy(payloadLen int) (p phase.Policy, ok bool) {
	f := a.Forward
	if f.Stock || a.Variant == VariantB {
		return phase.Policy{}, false
	}
	p = phase.Policy{PushWidth: f.PushWidth, Budget: f.Budget, StopPull: f.StopPull, Pull: phase.PullEager}
	if f.PushWidth == AR {
		p.PushWidth = AdaptivePushWidth(payloadLen)
	}
	if f.Final && payloadLen >= f.FinalFrom {
		p.Pull = phase.PullFinal
		p.Final = phase.DefaultFinal()
	}
	return p, true
}

// Parts is what a variant B publisher sends: the payload split at the
// arm's unit (B tuned) or coded into K data and K parity shards (coded B),
// each part snappy-compressed on its own ("parts snappy-compressed",
// Appendix A; for coded B the report does not say, and the parts are
// compressed the same way). A receiver is complete with Need parts.
type Parts struct {
	Parts [][]byte // compressed, by index
	Need  int
	Desc  *Descriptor // coded B: the code's descriptor
	Form  WireForm
}

// Parts builds variant B's parts of payload.
func (a Arm) Parts(payload []byte) (Parts, error) {
	if a.Variant != VariantB {
		return Parts{}, fmt.Errorf("arm %s: parts are variant B's; use Units", a.Name)
	}
	form, err := a.WireForm(payload)
	if err != nil {
		return Parts{}, err
	}
	out := Parts{Form: form}
	var raw [][]byte
	if a.Coded {
		d, shards, err := Encode(payload, a.Unit)
		if err != nil {
			return Parts{}, fmt.Errorf("arm %s: %w", a.Name, err)
		}
		out.Desc, out.Need = &d, d.Count
		for _, s := range shards {
			raw = append(raw, s.Data)
		}
	} else {
		segs, err := Split(payload, a.Unit)
		if err != nil {
			return Parts{}, fmt.Errorf("arm %s: %w", a.Name, err)
		}
		for _, s := range segs {
			raw = append(raw, s.Data)
		}
		out.Need = len(raw)
	}
	for _, r := range raw {
		out.Parts = append(out.Parts, snappy.Encode(nil, r))
	}
	return out, nil
}

// Rebuild reverses Parts from the parts a receiver holds (nil where
// missing): decompress, then reassemble or decode.
func (p Parts) Rebuild(held [][]byte) ([]byte, error) {
	var raw [][]byte
	for i, h := range held {
		if h == nil {
			raw = append(raw, nil)
			continue
		}
		d, err := snappy.Decode(nil, h)
		if err != nil {
			return nil, fmt.Errorf("part %d: %w", i, err)
		}
		raw = append(raw, d)
	}
	if p.Desc != nil {
		var shards []Shard
		for i, r := range raw {
			if r != nil {
				shards = append(shards, Shard{Index: i, Data: r})
			}
		}
		return Decode(*p.Desc, shards)
	}
	var out []byte
	for i, r := range raw {
		if r == nil {
			return nil, fmt.Errorf("part %d missing", i)
		}
		out = append(out, r...)
	}
	return out, nil
}
