package queues

import (
	"strings"
	"testing"
)

func TestCheckConservation(t *testing.T) {
	var s Stats
	s.Enqueued, s.EnqueuedBytes = 10, 10000
	s.Dequeued, s.DequeuedBytes = 6, 6000
	s.Drops[DropAQM], s.DropBytes[DropAQM] = 2, 2000 // from the backlog
	s.Drops[DropOverlimit], s.DropBytes[DropOverlimit] = 3, 3000
	s.Refused, s.RefusedBytes = 3, 3000 // never enqueued
	if err := s.CheckConservation(2, 2000); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		n, b int
		mod  func(*Stats)
		want string
	}{
		{3, 2000, nil, "not conserved"},
		{2, 1999, nil, "not conserved"},
		{2, 2000, func(s *Stats) { s.Refused = 2 }, "not conserved"}, // a refused drop counted as from the backlog
		{2, 2000, func(s *Stats) { s.Refused = 9 }, "refused 9 packets"},
		{-1, 2000, nil, "negative backlog"},
	} {
		s2 := s
		if c.mod != nil {
			c.mod(&s2)
		}
		if err := s2.CheckConservation(c.n, c.b); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c, err, c.want)
		}
	}
	if s.Dropped() != 5 || s.DroppedBytes() != 5000 {
		t.Fatal("totals")
	}
}
