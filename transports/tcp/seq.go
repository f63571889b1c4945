package tcp

// SeqNum is a TCP sequence or acknowledgement number. Comparisons are
// modulo 2^32 (RFC 9293 §3.4, serial-number arithmetic as in RFC 1982): a
// is before b when the signed 32-bit difference a−b is negative, which is
// right while the two lie less than 2^31 apart (a window is at most 2^30).
type SeqNum uint32

// Before reports a < b modulo 2^32.
func (a SeqNum) Before(b SeqNum) bool { return int32(a-b) < 0 }

// BeforeEq reports a <= b modulo 2^32.
func (a SeqNum) BeforeEq(b SeqNum) bool { return int32(a-b) <= 0 }

// After reports a > b modulo 2^32.
func (a SeqNum) After(b SeqNum) bool { return int32(a-b) > 0 }

// AfterEq reports a >= b modulo 2^32.
func (a SeqNum) AfterEq(b SeqNum) bool { return int32(a-b) >= 0 }

// Add advances a by n bytes (n may be negative).
func (a SeqNum) Add(n int) SeqNum { return a + SeqNum(uint32(int32(n))) }

// Sub is the signed distance a−b in bytes.
func (a SeqNum) Sub(b SeqNum) int { return int(int32(a - b)) }

// InRange reports lo <= a < hi modulo 2^32.
func (a SeqNum) InRange(lo, hi SeqNum) bool { return lo.BeforeEq(a) && a.Before(hi) }

func seqMax(a, b SeqNum) SeqNum {
	if a.After(b) {
		return a
	}
	return b
}

func seqMin(a, b SeqNum) SeqNum {
	if a.Before(b) {
		return a
	}
	return b
}

// seqRange is the half-open byte range [start, end).
type seqRange struct{ start, end SeqNum }

func (r seqRange) len() int { return r.end.Sub(r.start) }

// rangeSet is a sorted set of disjoint, non-touching byte ranges: the
// receiver's out-of-order data and the sender's SACK scoreboard. It holds
// one entry per hole-separated run, so it stays short.
type rangeSet struct{ rs []seqRange }

func (s *rangeSet) empty() bool { return len(s.rs) == 0 }

// search returns the index of the first range whose end is at or after a.
func (s *rangeSet) search(a SeqNum) int {
	lo, hi := 0, len(s.rs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s.rs[m].end.Before(a) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// add inserts [a, b) (a before b) and returns the merged range now holding
// it. fresh, when not nil, is called for each sub-range of [a, b) the set
// did not cover before, in order.
func (s *rangeSet) add(a, b SeqNum, fresh func(a, b SeqNum)) seqRange {
	i := s.search(a)
	lo, hi, cur := a, b, a
	j := i
	for j < len(s.rs) && s.rs[j].start.BeforeEq(b) {
		r := s.rs[j]
		if fresh != nil && cur.Before(r.start) {
			fresh(cur, r.start)
		}
		cur = seqMax(cur, r.end)
		lo, hi = seqMin(lo, r.start), seqMax(hi, r.end)
		j++
	}
	if fresh != nil && cur.Before(b) {
		fresh(cur, b)
	}
	m := seqRange{lo, hi}
	switch {
	case j == i:
		s.rs = append(s.rs, seqRange{})
		copy(s.rs[i+1:], s.rs[i:])
		s.rs[i] = m
	default:
		s.rs[i] = m
		if j > i+1 {
			s.rs = append(s.rs[:i+1], s.rs[j:]...)
		}
	}
	return m
}

// trimBelow drops everything before a.
func (s *rangeSet) trimBelow(a SeqNum) {
	k := 0
	for k < len(s.rs) && s.rs[k].end.BeforeEq(a) {
		k++
	}
	if k > 0 {
		n := copy(s.rs, s.rs[k:])
		s.rs = s.rs[:n]
	}
	if len(s.rs) > 0 && s.rs[0].start.Before(a) {
		s.rs[0].start = a
	}
}

// containing returns the range holding a, if any.
func (s *rangeSet) containing(a SeqNum) (seqRange, bool) {
	i := s.search(a)
	if i < len(s.rs) && s.rs[i].start.BeforeEq(a) && a.Before(s.rs[i].end) {
		return s.rs[i], true
	}
	return seqRange{}, false
}
