package tcp

import (
	"slices"
	"testing"
)

// TestSeqArithmetic: comparisons and distances hold across the 2^32 wrap.
func TestSeqArithmetic(t *testing.T) {
	a := SeqNum(0xFFFFFF00)
	b := a.Add(0x200) // wrapped to 0x100
	if b != 0x100 || !a.Before(b) || !b.After(a) || b.Sub(a) != 0x200 || a.Sub(b) != -0x200 {
		t.Fatalf("a %#x b %#x: before %v after %v distance %d", uint32(a), uint32(b), a.Before(b), b.After(a), b.Sub(a))
	}
	if !SeqNum(5).InRange(a, b) || SeqNum(0x100).InRange(a, b) || !a.InRange(a, b) {
		t.Fatal("InRange across the wrap")
	}
	if seqMax(a, b) != b || seqMin(a, b) != a || !a.BeforeEq(a) || !a.AfterEq(a) {
		t.Fatal("min/max across the wrap")
	}
}

// TestRangeSet: insertion reports exactly the newly covered pieces, merges
// touching and overlapping ranges, and trims below a point, across the
// wrap.
func TestRangeSet(t *testing.T) {
	base := SeqNum(0xFFFFFFF0)
	r := func(a, b int) seqRange { return seqRange{base.Add(a), base.Add(b)} }
	var s rangeSet
	var fresh []seqRange
	add := func(a, b int) seqRange {
		fresh = fresh[:0]
		return s.add(base.Add(a), base.Add(b), func(x, y SeqNum) { fresh = append(fresh, seqRange{x, y}) })
	}
	add(10, 20)
	add(40, 50)
	if m := add(30, 60); m != r(30, 60) || !slices.Equal(fresh, []seqRange{r(30, 40), r(50, 60)}) {
		t.Fatalf("merged %v, fresh %v", m, fresh)
	}
	if m := add(0, 100); m != r(0, 100) || !slices.Equal(fresh, []seqRange{r(0, 10), r(20, 30), r(60, 100)}) || len(s.rs) != 1 {
		t.Fatalf("merged %v, fresh %v, set %v", m, fresh, s.rs)
	}
	if m := add(100, 110); m != r(0, 110) || len(s.rs) != 1 {
		t.Fatalf("touching ranges must merge: %v %v", m, s.rs)
	}
	add(200, 210)
	if add(205, 208); len(fresh) != 0 {
		t.Fatalf("a covered range reported fresh pieces %v", fresh)
	}
	s.trimBelow(base.Add(105))
	if !slices.Equal(s.rs, []seqRange{r(105, 110), r(200, 210)}) {
		t.Fatalf("after trim: %v", s.rs)
	}
	if g, ok := s.containing(base.Add(207)); !ok || g != r(200, 210) {
		t.Fatalf("containing: %v %v", g, ok)
	}
	if _, ok := s.containing(base.Add(150)); ok {
		t.Fatal("containing a hole")
	}
}
