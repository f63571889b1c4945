package arms

import (
	"errors"
	"fmt"
)

// Unit sizes of the segmented arms (docs/references.md, "Arms"; the
// report's Appendix A): 32 KiB for the 32k arms, 16 KiB for the 16k arms.
const (
	Unit16K = 16 << 10
	Unit32K = 32 << 10
)

// Segment is one unit of a segmented payload: segment Index of Total, with
// its bytes. Every segment but the last is exactly one unit long; the last
// holds the remainder (docs/references.md, "Arms").
type Segment struct {
	Index, Total int
	Data         []byte
}

// SegmentCount returns how many unit-sized segments a payload of length n
// splits into: ceil(n / unit).
func SegmentCount(n, unit int) (int, error) {
	if unit <= 0 {
		return 0, fmt.Errorf("segment count: unit %d is not positive", unit)
	}
	if n <= 0 {
		return 0, fmt.Errorf("segment count: payload length %d is not positive", n)
	}
	return (n + unit - 1) / unit, nil
}

// Split cuts payload into segments of unit bytes, the last one shorter when
// unit does not divide the length. The segments share payload's memory.
func Split(payload []byte, unit int) ([]Segment, error) {
	k, err := SegmentCount(len(payload), unit)
	if err != nil {
		return nil, fmt.Errorf("split: %w", err)
	}
	segs := make([]Segment, k)
	for i := range segs {
		end := min((i+1)*unit, len(payload))
		segs[i] = Segment{Index: i, Total: k, Data: payload[i*unit : end : end]}
	}
	return segs, nil
}

// Reassemble rebuilds a payload from a complete set of segments in any
// order. It rejects a set with a missing, duplicated or out-of-range index,
// disagreeing totals, or segment lengths that are not one unit (the length
// of the non-last segments) except for a shorter, non-empty last segment.
func Reassemble(segs []Segment) ([]byte, error) {
	if len(segs) == 0 {
		return nil, errors.New("reassemble: no segments")
	}
	total := segs[0].Total
	if total != len(segs) {
		return nil, fmt.Errorf("reassemble: have %d segments, total says %d", len(segs), total)
	}
	ordered := make([][]byte, total)
	for _, s := range segs {
		if s.Total != total {
			return nil, fmt.Errorf("reassemble: segment %d says total %d, first says %d", s.Index, s.Total, total)
		}
		if s.Index < 0 || s.Index >= total {
			return nil, fmt.Errorf("reassemble: segment index %d out of range [0, %d)", s.Index, total)
		}
		if ordered[s.Index] != nil {
			return nil, fmt.Errorf("reassemble: duplicate segment %d", s.Index)
		}
		if len(s.Data) == 0 {
			return nil, fmt.Errorf("reassemble: segment %d is empty", s.Index)
		}
		ordered[s.Index] = s.Data
	}
	unit := len(ordered[0])
	out := make([]byte, 0, unit*total)
	for i, d := range ordered {
		switch {
		case i < total-1 && len(d) != unit:
			return nil, fmt.Errorf("reassemble: segment %d is %d bytes, unit is %d", i, len(d), unit)
		case i == total-1 && len(d) > unit:
			return nil, fmt.Errorf("reassemble: last segment %d is %d bytes, longer than unit %d", i, len(d), unit)
		}
		out = append(out, d...)
	}
	return out, nil
}
