package arms

import (
	"bytes"
	"testing"
)

func TestSplitSizes(t *testing.T) {
	cases := []struct {
		n, unit, count, last int
	}{
		{1 << 20, Unit32K, 32, Unit32K},
		{1<<20 + 1, Unit32K, 33, 1},
		{1 << 20, Unit16K, 64, Unit16K},
		{100, Unit16K, 1, 100},
		{Unit16K + 5, Unit16K, 2, 5},
	}
	for _, c := range cases {
		p := MainnetLikePayload(1, c.n)
		segs, err := Split(p, c.unit)
		if err != nil {
			t.Fatalf("split %d/%d: %v", c.n, c.unit, err)
		}
		if len(segs) != c.count {
			t.Fatalf("split %d/%d: %d segments, want %d", c.n, c.unit, len(segs), c.count)
		}
		for i, s := range segs[:len(segs)-1] {
			if s.Index != i || s.Total != c.count || len(s.Data) != c.unit {
				t.Fatalf("split %d/%d: segment %d = {%d %d len %d}", c.n, c.unit, i, s.Index, s.Total, len(s.Data))
			}
		}
		if l := len(segs[len(segs)-1].Data); l != c.last {
			t.Fatalf("split %d/%d: last segment %d bytes, want %d", c.n, c.unit, l, c.last)
		}
		// Round trip, reversed order.
		rev := make([]Segment, len(segs))
		for i, s := range segs {
			rev[len(segs)-1-i] = s
		}
		got, err := Reassemble(rev)
		if err != nil {
			t.Fatalf("reassemble %d/%d: %v", c.n, c.unit, err)
		}
		if !bytes.Equal(got, p) {
			t.Fatalf("reassemble %d/%d: bytes differ", c.n, c.unit)
		}
	}
}

func TestSplitErrors(t *testing.T) {
	if _, err := Split(nil, Unit32K); err == nil {
		t.Error("empty payload accepted")
	}
	if _, err := Split([]byte{1}, 0); err == nil {
		t.Error("zero unit accepted")
	}
}

func TestReassembleRejects(t *testing.T) {
	p := MainnetLikePayload(3, 3*Unit16K+10)
	fresh := func() []Segment {
		s, err := Split(p, Unit16K)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := fresh()
	if _, err := Reassemble(s[:3]); err == nil {
		t.Error("missing segment accepted")
	}
	s = fresh()
	s[1] = s[2]
	if _, err := Reassemble(s); err == nil {
		t.Error("duplicate segment accepted")
	}
	s = fresh()
	s[1].Data = s[1].Data[:100]
	if _, err := Reassemble(s); err == nil {
		t.Error("short middle segment accepted")
	}
	s = fresh()
	s[2].Total = 5
	if _, err := Reassemble(s); err == nil {
		t.Error("disagreeing total accepted")
	}
	s = fresh()
	s[3].Index = 7
	if _, err := Reassemble(s); err == nil {
		t.Error("out-of-range index accepted")
	}
	if _, err := Reassemble(nil); err == nil {
		t.Error("no segments accepted")
	}
}
