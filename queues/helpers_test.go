package queues

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/uplinksim/uplink/des"
)

const ms = des.Millisecond

// flowKey returns a distinct 5-tuple, pair and socket for each i.
func flowKey(i int) FlowKey {
	return FlowKey{
		SrcNode: uint32(1 + i), DstNode: 1000,
		SrcPort: uint16(4000 + i), DstPort: 443, Proto: 17,
		Sock: uint32(100 + i),
	}
}

// mkpkt returns a packet of flow i with the given length and sequence.
func mkpkt(i, length int, seq uint64) *Packet {
	return &Packet{Len: length, Flow: flowKey(i), Seq: seq}
}

// dropLog records the drop hook's calls.
type dropLog struct {
	pkts    []*Packet
	reasons []DropReason
	times   []des.Time
}

func (d *dropLog) hook(p *Packet, r DropReason, now des.Time) {
	d.pkts = append(d.pkts, p)
	d.reasons = append(d.reasons, r)
	d.times = append(d.times, now)
}

func (d *dropLog) count(r DropReason) int {
	n := 0
	for _, x := range d.reasons {
		if x == r {
			n++
		}
	}
	return n
}

func conserved(t *testing.T, q Qdisc) {
	t.Helper()
	if err := q.Stats().CheckConservation(q.Len(), q.Bytes()); err != nil {
		t.Fatal(err)
	}
}

func near(a, b, rel float64) bool {
	return math.Abs(a-b) <= rel*math.Max(math.Abs(a), math.Abs(b))
}

// seqSource is a rand.Source that counts its draws and returns a constant.
type seqSource struct {
	v     uint64
	draws int
}

func (s *seqSource) Uint64() uint64 { s.draws++; return s.v }

// buildT builds a discipline for a test: cfg (a default config) is
// modified by mod (if any), built by mk, and given a drop log.
func buildT[C any, Q Qdisc](t *testing.T, cfg C, mod func(*C), mk func(C) (Q, error)) (Q, *dropLog) {
	t.Helper()
	if mod != nil {
		mod(&cfg)
	}
	q, err := mk(cfg)
	if err != nil {
		t.Fatal(err)
	}
	log := &dropLog{}
	q.SetDropHook(log.hook)
	return q, log
}

// rngOr returns rng, or a fixed PCG stream when rng is nil.
func rngOr(rng *rand.Rand, a, b uint64) *rand.Rand {
	if rng == nil {
		return rand.New(rand.NewPCG(a, b))
	}
	return rng
}
