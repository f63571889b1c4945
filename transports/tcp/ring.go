package tcp

import "github.com/uplinksim/uplink/des"

// byteRing is a circular byte buffer addressed by offset from its head. The
// send buffer keeps [snd_una, end of written data) in it; the receive
// buffer keeps [first unread byte, right window edge), in-order and
// out-of-order data alike, at their offsets. Capacity is a power of two and
// grows by copying, which autotuning makes rare.
type byteRing struct {
	buf  []byte
	head int
}

func (r *byteRing) cap() int { return len(r.buf) }

// grow makes room for at least n bytes, keeping the first keep bytes.
func (r *byteRing) grow(n, keep int) {
	if n <= len(r.buf) {
		return
	}
	c := 4096
	for c < n {
		c <<= 1
	}
	nb := make([]byte, c)
	r.copyOut(0, nb[:keep])
	r.buf, r.head = nb, 0
}

// copyIn writes p at offset off (off+len(p) <= cap).
func (r *byteRing) copyIn(off int, p []byte) {
	m := len(r.buf) - 1
	i := (r.head + off) & m
	k := copy(r.buf[i:], p)
	if k < len(p) {
		copy(r.buf, p[k:])
	}
}

// copyOut reads len(dst) bytes at offset off into dst.
func (r *byteRing) copyOut(off int, dst []byte) {
	if len(r.buf) == 0 {
		return
	}
	m := len(r.buf) - 1
	i := (r.head + off) & m
	k := copy(dst, r.buf[i:])
	if k < len(dst) {
		copy(dst[k:], r.buf)
	}
}

// view returns the n bytes at offset off: a slice of the ring when they
// are contiguous, else a copy into scratch.
func (r *byteRing) view(off, n int, scratch []byte) []byte {
	m := len(r.buf) - 1
	i := (r.head + off) & m
	if i+n <= len(r.buf) {
		return r.buf[i : i+n]
	}
	r.copyOut(off, scratch[:n])
	return scratch[:n]
}

// ringKeep is the largest ring kept while empty. An emptied ring above it
// is released (shed), so the megabyte rings of a burst (a 1 MiB message,
// an autotuned window) do not stay live, and resident, for the rest of a
// run on every one of a cell's tens of thousands of connections.
const ringKeep = 64 << 10

// shed releases the ring if it is larger than ringKeep; the caller knows
// it holds nothing.
func (r *byteRing) shed() {
	if len(r.buf) > ringKeep {
		r.buf, r.head = nil, 0
	}
}

// advance drops the first k bytes.
func (r *byteRing) advance(k int) {
	if len(r.buf) > 0 {
		r.head = (r.head + k) & (len(r.buf) - 1)
	}
}

// segment is one transmitted, not yet cumulatively acknowledged segment of
// the retransmission queue. Its boundaries are fixed when first sent, as
// Linux's skbs are, so retransmissions resend the same bytes.
type segment struct {
	seq   SeqNum
	len   int32 // payload bytes
	flags uint8
	sent  des.Time // last transmission
}

const (
	segFIN         uint8 = 1 << iota
	segSacked            // covered by a SACK block
	segLost              // presumed lost (RFC 6675 IsLost, NewReno, RTO)
	segRetrans           // lost and retransmitted, the retransmission in flight
	segEverRetrans       // retransmitted at least once (Karn's rule)
)

// end is the sequence number after the segment (a FIN takes one).
func (s *segment) end() SeqNum {
	e := s.seq.Add(int(s.len))
	if s.flags&segFIN != 0 {
		e++
	}
	return e
}

// segRing is the retransmission queue: segments in sequence order.
type segRing struct {
	buf  []segment
	head int
	n    int
}

func (r *segRing) at(i int) *segment {
	return &r.buf[(r.head+i)&(len(r.buf)-1)]
}

func (r *segRing) push(s segment) {
	if r.n == len(r.buf) {
		c := 2 * len(r.buf)
		if c == 0 {
			c = 64
		}
		nb := make([]segment, c)
		for i := 0; i < r.n; i++ {
			nb[i] = *r.at(i)
		}
		r.buf, r.head = nb, 0
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = s
	r.n++
}

func (r *segRing) popFront() {
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
}

// search returns the index of the first segment that ends after seq (the
// one holding seq, or the next), or n.
func (r *segRing) search(seq SeqNum) int {
	lo, hi := 0, r.n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if r.at(m).end().BeforeEq(seq) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}
