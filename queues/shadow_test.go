package queues

import (
	"fmt"
	"testing"
)

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
	if len(q.t.socks) > 5 {
		t.Fatalf("%d socket slots for 5 at a time", len(q.t.socks))
	}
	if q.Stats().Dropped() != 0 {
		t.Fatal("dropped")
	}
}

// Priorities that grow with each send (UDP: stamped when sent) give one
// global FIFO across sockets.
func TestShadowFIFO(t *testing.T) {
	q := NewShadowFIFO()
	for i := 0; i < 5000; i++ {
		p := sockPkt(uint32(i%4), uint64(i))
		p.Prio = uint64(i + 1)
		if !q.Enqueue(p, 0) {
			t.Fatal("dropped")
		}
	}
	for i := 0; i < 5000; i++ {
		if q.Dequeue(0).Seq != uint64(i) {
			t.Fatal("not global FIFO order")
		}
	}
	conserved(t, q)
}

// Shadow's TCP stamps a segment when the application writes its data, so
// a connection written to first keeps the interface: connection 1 wrote
// priorities 1 to 6 and connection 2 priorities 7 to 12, and although
// their windows released segments alternately (1, 7, 2, 8, ...), the
// interface sends all of connection 1's before any of connection 2's; a
// pure ACK (priority 0) queued last goes first, and a retransmission keeps
// its old priority.
func TestShadowFIFOWriteOrder(t *testing.T) {
	q := NewShadowFIFO()
	add := func(sock uint32, prio uint64) {
		p := sockPkt(sock, prio)
		p.Prio = prio
		q.Enqueue(p, 0)
	}
	for i := uint64(1); i <= 3; i++ {
		add(1, i)
		add(2, i+6)
	}
	add(3, 0)
	var got []uint64
	next := func() {
		p := q.Dequeue(0)
		got = append(got, p.Prio)
	}
	next()
	next()
	add(2, 10)
	add(1, 4)
	add(1, 2) // a retransmission of priority 2, behind 4 in its socket
	for q.Len() > 0 {
		next()
	}
	want := []uint64{0, 1, 2, 3, 4, 2, 7, 8, 9, 10}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("priorities sent %v, want %v", got, want)
	}
	conserved(t, q)
	if q.Sockets() != 0 {
		t.Fatal("sockets left")
	}
}

// The unlimited FIFO, by contrast, sends in the order queued.
func TestShadowFIFOAgainstPlainFIFO(t *testing.T) {
	shadow, plain := NewShadowFIFO(), NewUnlimitedFIFO()
	for _, q := range []Qdisc{shadow, plain} {
		for i := uint64(1); i <= 3; i++ {
			for _, s := range []uint32{1, 2} {
				p := sockPkt(s, i)
				p.Prio = i + uint64(s-1)*10
				q.Enqueue(p, 0)
			}
		}
	}
	var a, b []uint32
	for shadow.Len() > 0 {
		a = append(a, shadow.Dequeue(0).Flow.Sock)
		b = append(b, plain.Dequeue(0).Flow.Sock)
	}
	if fmt.Sprint(a) != "[1 1 1 2 2 2]" || fmt.Sprint(b) != "[1 2 1 2 1 2]" {
		t.Fatalf("shadow %v, plain %v", a, b)
	}
}
