package queues

import (
	"math/rand/v2"
	"testing"

	"github.com/uplinksim/uplink/des"
)

// benchPairs measures one Enqueue plus one Dequeue with a standing backlog
// of 100 packets over 16 flows (sockets), an operation every 10 us, so
// every packet waits about 1 ms: under every AQM's target, so nothing is
// dropped and the backlog stays put. Each dequeued packet is re-offered.
func benchPairs(b *testing.B, q Qdisc) {
	const backlog, flows = 100, 16
	const step = 10 * des.Microsecond
	keys := make([]FlowKey, flows)
	for i := range keys {
		keys[i] = flowKey(i)
	}
	pool := make([]Packet, backlog)
	var now des.Time
	for i := range pool {
		pool[i] = Packet{Len: 1500, Flow: keys[i%flows], Prio: uint64(i + 1)} // Prio: in send order, as UDP stamps it
		q.Enqueue(&pool[i], now)
		now += step
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		now += step
		p := q.Dequeue(now)
		if p == nil {
			b.Fatal("empty")
		}
		p.Flow, p.Prio = keys[i%flows], uint64(backlog+i+1)
		if !q.Enqueue(p, now) {
			b.Fatal("dropped")
		}
	}
	b.StopTimer()
	if q.Len() != backlog {
		b.Fatalf("backlog %d", q.Len())
	}
}

func mustQ(b *testing.B, spec string) Qdisc {
	q, err := New(spec, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		b.Fatal(err)
	}
	return q
}

func BenchmarkFIFO(b *testing.B)    { benchPairs(b, mustQ(b, "fifo")) }
func BenchmarkPfifo(b *testing.B)   { benchPairs(b, mustQ(b, "pfifo")) }
func BenchmarkCoDel(b *testing.B)   { benchPairs(b, mustQ(b, "codel")) }
func BenchmarkFQCoDel(b *testing.B) { benchPairs(b, mustQ(b, "fq_codel")) }
func BenchmarkFQCoDelSimnet(b *testing.B) {
	benchPairs(b, mustQ(b, "fq_codel:profile=simnet"))
}
func BenchmarkPIE(b *testing.B)        { benchPairs(b, mustQ(b, "pie")) }
func BenchmarkFQPIE(b *testing.B)      { benchPairs(b, mustQ(b, "fq_pie")) }
func BenchmarkDRR(b *testing.B)        { benchPairs(b, mustQ(b, "drr")) }
func BenchmarkDRRFQ(b *testing.B)      { benchPairs(b, mustQ(b, "drr:sched=fq")) }
func BenchmarkShadowFIFO(b *testing.B) { benchPairs(b, mustQ(b, "shadow-fifo")) }
func BenchmarkShadowRR(b *testing.B)   { benchPairs(b, mustQ(b, "shadow-rr")) }
