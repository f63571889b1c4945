package queues

import (
	"strings"
	"testing"
)

func TestPfifoTailDropAndOrder(t *testing.T) {
	q, err := NewPfifo(3)
	if err != nil {
		t.Fatal(err)
	}
	var log dropLog
	q.SetDropHook(log.hook)
	var acc []bool
	for i := 0; i < 5; i++ {
		acc = append(acc, q.Enqueue(mkpkt(0, 100+i, uint64(i)), 0))
	}
	if want := []bool{true, true, true, false, false}; !equalBools(acc, want) {
		t.Fatalf("accepted %v, want %v", acc, want)
	}
	if len(log.pkts) != 2 || log.pkts[0].Seq != 3 || log.pkts[1].Seq != 4 || log.count(DropOverlimit) != 2 {
		t.Fatalf("drops %+v", log)
	}
	s := q.Stats()
	if s.Enqueued != 3 || s.Refused != 2 || s.Drops[DropOverlimit] != 2 || s.RefusedBytes != 103+104 || s.MaxLen != 3 {
		t.Fatalf("stats %+v", s)
	}
	conserved(t, q)
	for i := 0; i < 3; i++ {
		p := q.Dequeue(ms * 2)
		if p == nil || p.Seq != uint64(i) {
			t.Fatalf("dequeue %d: %+v", i, p)
		}
		conserved(t, q)
	}
	if q.Dequeue(3*ms) != nil || q.Len() != 0 || q.Bytes() != 0 {
		t.Fatal("not empty")
	}
	if s.Dequeued != 3 || s.Sojourn.Count() != 3 || s.Sojourn.Max() != 2*ms {
		t.Fatalf("dequeue stats %+v", s)
	}
	// Room again after dequeues.
	if !q.Enqueue(mkpkt(0, 1, 9), 4*ms) {
		t.Fatal("refused after draining")
	}
}

func TestBfifoByteLimit(t *testing.T) {
	q, err := NewBfifo(3000)
	if err != nil {
		t.Fatal(err)
	}
	lens := []int{1000, 1500, 600, 500, 1}
	want := []bool{true, true, false, true, false} // 3100 > 3000; 3000 fits; 3001 does not
	for i, l := range lens {
		if got := q.Enqueue(mkpkt(0, l, uint64(i)), 0); got != want[i] {
			t.Fatalf("packet %d (%d bytes): accepted %v, want %v", i, l, got, want[i])
		}
	}
	if q.Bytes() != 3000 || q.Len() != 3 || q.Stats().MaxBytes != 3000 {
		t.Fatalf("backlog %d bytes %d packets", q.Bytes(), q.Len())
	}
	conserved(t, q)
}

func TestUnlimitedFIFO(t *testing.T) {
	q := NewUnlimitedFIFO()
	for i := 0; i < 50000; i++ {
		if !q.Enqueue(mkpkt(i%7, 1500, uint64(i)), 0) {
			t.Fatal("unlimited FIFO dropped")
		}
	}
	for i := 0; i < 50000; i++ {
		if p := q.Dequeue(0); p.Seq != uint64(i) {
			t.Fatalf("order: got %d want %d", p.Seq, i)
		}
	}
	conserved(t, q)
	if q.Stats().Dropped() != 0 || q.Stats().MaxLen != 50000 {
		t.Fatalf("stats %+v", q.Stats())
	}
}

func TestFIFOConstructorErrors(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{second(NewPfifo(0)), "pfifo: limit 0; the limit must be at least 1 packet"},
		{second(NewBfifo(-5)), "bfifo: limit -5; the limit must be at least 1 byte"},
		{second(NewFIFO(-1, 0)), "use 0 for no limit"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("error %v, want it to contain %q", c.err, c.want)
		}
	}
	if q, err := NewFIFO(0, 0); err != nil || q == nil {
		t.Fatal(err)
	}
}

func second[T any](_ T, err error) error { return err }

func equalBools(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
