package queues

import "testing"

func sockPkt(sock uint32, seq uint64) *Packet {
	return &Packet{Len: 1000, Flow: FlowKey{SrcNode: 1, DstNode: 2, Sock: sock}, Seq: seq}
}

func TestShadowRROrder(t *testing.T) {
	q := NewShadowRR()
	// Socket 1 becomes sendable first, then 2, then 3.
	for i, s := range []uint32{1, 1, 2, 1, 3, 3} {
		q.Enqueue(sockPkt(s, uint64(i)), 0)
	}
	if q.Sockets() != 3 {
		t.Fatalf("%d sockets", q.Sockets())
	}
	var socks []uint32
	var seqs []uint64
	for p := q.Dequeue(0); p != nil; p = q.Dequeue(0) {
		socks = append(socks, p.Flow.Sock)
		seqs = append(seqs, p.Seq)
	}
	// Pop 1 (re-push), 2 (empty), 3 (re-push), 1, 3, 1.
	want := []uint32{1, 2, 3, 1, 3, 1}
	wantSeq := []uint64{0, 2, 4, 1, 5, 3}
	for i := range want {
		if socks[i] != want[i] || seqs[i] != wantSeq[i] {
			t.Fatalf("order %v %v, want %v %v", socks, seqs, want, wantSeq)
		}
	}
	conserved(t, q)
	if q.Sockets() != 0 || q.Len() != 0 {
		t.Fatal("not empty")
	}
}

// A socket that empties leaves the FIFO; its next packet puts it at the
// tail, behind sockets already waiting. Slots are recycled.
func TestShadowRRRejoinAndRecycle(t *testing.T) {
	q := NewShadowRR()
	q.Enqueue(sockPkt(1, 0), 0)
	q.Enqueue(sockPkt(2, 1), 0)
	q.Enqueue(sockPkt(2, 2), 0)
	if p := q.Dequeue(0); p.Flow.Sock != 1 {
		t.Fatal("first")
	}
	q.Enqueue(sockPkt(1, 3), 0) // 1 rejoins behind 2
	var got []uint32
	for p := q.Dequeue(0); p != nil; p = q.Dequeue(0) {
		got = append(got, p.Flow.Sock)
	}
	if len(got) != 3 || got[0] != 2 || got[1] != 1 || got[2] != 2 {
		t.Fatalf("order %v", got)
	}
	for round := 0; round < 100; round++ {
		for s := uint32(0); s < 5; s++ {
			q.Enqueue(sockPkt(s+uint32(round)*5, 0), 0)
		}
		for q.Dequeue(0) != nil {
		}
	}
	if len(q.socks) > 5 {
		t.Fatalf("%d socket slots for 5 at a time", len(q.socks))
	}
	if q.Stats().Dropped() != 0 {
		t.Fatal("dropped")
	}
}

func TestShadowFIFO(t *testing.T) {
	q := NewShadowFIFO()
	for i := 0; i < 5000; i++ {
		if !q.Enqueue(sockPkt(uint32(i%4), uint64(i)), 0) {
			t.Fatal("dropped")
		}
	}
	for i := 0; i < 5000; i++ {
		if q.Dequeue(0).Seq != uint64(i) {
			t.Fatal("not global FIFO order")
		}
	}
}
