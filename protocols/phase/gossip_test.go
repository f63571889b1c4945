package phase

import (
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// TestGossiperHeartbeats: the heartbeat instants are the stock router's
// (its initial delay after the attach, then every interval).
func TestGossiperHeartbeats(t *testing.T) {
	g := newGossiper("self", 6, 0.25, 6, 3, 5000, 700*time.Millisecond, 100*time.Millisecond)
	at := time.Unix(1000, 0)
	for _, c := range []struct{ after, want time.Duration }{
		{0, 100 * time.Millisecond},
		{100 * time.Millisecond, 100 * time.Millisecond},
		{101 * time.Millisecond, 800 * time.Millisecond},
		{2500 * time.Millisecond, 2900 * time.Millisecond},
	} {
		if got := g.nextBeat(at, at.Add(c.after)).Sub(at); got != c.want {
			t.Errorf("%v after the attach: next heartbeat at %v, want %v", c.after, got, c.want)
		}
	}
}

// TestGossiperBeat: as the stock emitGossip, a heartbeat announces the ids
// of the newest HistoryGossip windows, per topic, to max(Dlazy,
// GossipFactor × candidates) candidates; an id leaves the cache after
// HistoryLength heartbeats.
func TestGossiperBeat(t *testing.T) {
	g := newGossiper("self", 6, 0.25, 6, 3, 5000, 700*time.Millisecond, 100*time.Millisecond)
	var peers []peer.ID
	for i := range 62 {
		peers = append(peers, peer.ID(rune('A'+i)))
	}
	cands := func(topic string) []peer.ID {
		if topic == "t/0" {
			return slices.Clone(peers)
		}
		return slices.Clone(peers[:10])
	}
	topics := []string{"t/0", "t/1"}
	if out := g.beat(topics, cands); len(out) != 0 {
		t.Fatalf("an empty cache announced %v", out)
	}
	g.put("a", "t/0")
	g.put("b", "t/0")
	g.put("c", "t/1")
	out := g.beat(topics, cands)
	// 62 candidates: 0.25 × 62 = 15; 10 candidates: Dlazy = 6.
	var t0, t1 int
	for _, ihs := range out {
		for _, ih := range ihs {
			switch ih.GetTopicID() {
			case "t/0":
				t0++
				if ids := slices.Sorted(slices.Values(ih.GetMessageIDs())); !slices.Equal(ids, []string{"a", "b"}) {
					t.Fatalf("t/0 announced %v, want a and b", ids)
				}
			case "t/1":
				t1++
				if !slices.Equal(ih.GetMessageIDs(), []string{"c"}) {
					t.Fatalf("t/1 announced %v, want c", ih.GetMessageIDs())
				}
			}
		}
	}
	if t0 != 15 || t1 != 6 {
		t.Fatalf("announced to %d and %d peers; want 15 (a quarter of 62) and 6 (Dlazy)", t0, t1)
	}
	// Announced in three heartbeats (HistoryGossip), served until the
	// sixth (HistoryLength) shifts it out.
	for beat := 2; beat <= 5; beat++ {
		out := g.beat(topics, cands)
		if announced := len(out) > 0; announced != (beat <= 3) {
			t.Fatalf("heartbeat %d: announced %v", beat, announced)
		}
		if !g.held["a"] {
			t.Fatalf("heartbeat %d: a left the cache before HistoryLength heartbeats", beat)
		}
	}
	g.beat(topics, cands)
	if g.held["a"] || g.held["c"] {
		t.Fatal("ids still served after HistoryLength heartbeats")
	}
}
