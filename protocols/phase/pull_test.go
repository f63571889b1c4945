package phase

import (
	"testing"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func ms(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

func mustAsk(t *testing.T, got peer.ID, ok bool, want peer.ID) {
	t.Helper()
	if !ok || got != want {
		t.Fatalf("asked %q (%v), want %q", got, ok, want)
	}
}

func mustNotAsk(t *testing.T, got peer.ID, ok bool) {
	t.Helper()
	if ok {
		t.Fatalf("asked %q, want no ask", got)
	}
}

// One IWANT per id per 200 ms window; retries cycle through the
// announcers in the order they announced.
func TestFinalWindowAndCycling(t *testing.T) {
	u := newPuller(DefaultFinal())
	p, ok := u.announce(ms(0), "x", "A")
	mustAsk(t, p, ok, "A")
	p, ok = u.announce(ms(50), "x", "B")
	mustNotAsk(t, p, ok)
	p, ok = u.announce(ms(199), "x", "C")
	mustNotAsk(t, p, ok)
	p, ok = u.retry(ms(150), "x") // a stale retry inside the window
	mustNotAsk(t, p, ok)
	p, ok = u.retry(ms(200), "x")
	mustAsk(t, p, ok, "B")
	p, ok = u.retry(ms(400), "x")
	mustAsk(t, p, ok, "C")
	p, ok = u.retry(ms(600), "x")
	mustAsk(t, p, ok, "A") // cycled
	// A new announcer after the window has ended is asked at once.
	u2 := newPuller(DefaultFinal())
	u2.announce(ms(0), "y", "A")
	p, ok = u2.announce(ms(250), "y", "B")
	mustAsk(t, p, ok, "B")
	// A different id is independent.
	p, ok = u.announce(ms(610), "z", "B")
	mustAsk(t, p, ok, "B")
}

// An unserved promise is a break; at one break the peer's announcements
// are ignored for pulls for 30 s.
func TestFinalPromiseBreak(t *testing.T) {
	u := newPuller(DefaultFinal())
	p, ok := u.announce(ms(0), "x", "A")
	mustAsk(t, p, ok, "A")
	u.announce(ms(10), "x", "B")
	u.expire(ms(399), "x", "A") // early: no break yet
	if u.ignored("A", ms(399)) {
		t.Fatal("A ignored before its promise ran out")
	}
	// The retry at 200 ms asked B; A's promise runs out at 400 ms.
	p, ok = u.retry(ms(200), "x")
	mustAsk(t, p, ok, "B")
	u.expire(ms(400), "x", "A")
	if !u.ignored("A", ms(400)) {
		t.Fatal("A not ignored after a broken promise")
	}
	// The next retry skips A and asks B again.
	p, ok = u.retry(ms(400), "x")
	mustAsk(t, p, ok, "B")
	// A's announcements of another id are ignored until 30.4 s.
	p, ok = u.announce(ms(1000), "y", "A")
	mustNotAsk(t, p, ok)
	if u.ignored("A", ms(30400)) {
		t.Fatal("A still ignored after 30 s")
	}
	p, ok = u.announce(ms(30400), "y", "A")
	mustAsk(t, p, ok, "A")
}

// Delivery by anyone fulfils every promise and ends the offer.
func TestFinalDeliveryClears(t *testing.T) {
	u := newPuller(DefaultFinal())
	u.announce(ms(0), "x", "A")
	u.announce(ms(1), "x", "B")
	u.deliver("x")
	p, ok := u.retry(ms(200), "x")
	mustNotAsk(t, p, ok)
	u.expire(ms(400), "x", "A")
	if u.ignored("A", ms(400)) {
		t.Fatal("a promise broke after the id was delivered")
	}
	// With every announcer ignored there is nobody to ask.
	v := newPuller(FinalParams{Window: 200 * time.Millisecond, Promise: 100 * time.Millisecond, Breaks: 1, IgnoreFor: time.Second})
	v.announce(ms(0), "x", "A")
	v.expire(ms(100), "x", "A")
	p, ok = v.retry(ms(200), "x")
	mustNotAsk(t, p, ok)
}

// Two breaks needed when Breaks is 2.
func TestFinalBreakCount(t *testing.T) {
	u := newPuller(FinalParams{Window: 200 * time.Millisecond, Promise: 400 * time.Millisecond, Breaks: 2, IgnoreFor: time.Second})
	u.announce(ms(0), "x", "A")
	u.expire(ms(400), "x", "A")
	if u.ignored("A", ms(400)) {
		t.Fatal("ignored after one break with Breaks 2")
	}
	u.announce(ms(500), "y", "A")
	u.expire(ms(900), "y", "A")
	if !u.ignored("A", ms(900)) {
		t.Fatal("not ignored after two breaks")
	}
}

func TestSortByRankDeterministic(t *testing.T) {
	peers := []peer.ID{"a", "b", "c", "d", "e", "f", "g", "h"}
	a := append([]peer.ID(nil), peers...)
	b := []peer.ID{"h", "g", "f", "e", "d", "c", "b", "a"}
	sortByRank("m1", a)
	sortByRank("m1", b)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("rank order depends on input order: %v vs %v", a, b)
		}
	}
	// Different ids lead with different peers for at least some ids.
	first := map[peer.ID]bool{}
	for _, id := range []string{"m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8"} {
		c := append([]peer.ID(nil), peers...)
		sortByRank(id, c)
		first[c[0]] = true
	}
	if len(first) < 3 {
		t.Fatalf("8 ids led with only %d distinct peers; pushes would not spread", len(first))
	}
}

// withParams must make the library's defaults exactly the given
// parameters while the router is built, and restore them after.
func TestWithParamsRoundTrip(t *testing.T) {
	before := pubsub.DefaultGossipSubParams()
	p := before
	p.D, p.Dlo, p.Dhi, p.Dout = 8, 6, 12, 2
	p.HeartbeatInterval = 700 * time.Millisecond
	p.HistoryLength, p.HistoryGossip = 6, 2
	p.Dlazy, p.GossipFactor, p.GossipRetransmission = 0, 0, 5
	p.MaxIHaveMessages = 4096
	p.IDontWantMessageThreshold = 2048
	p.FanoutTTL = 7 * time.Second
	var inside pubsub.GossipSubParams
	withParams(p, func() { inside = pubsub.DefaultGossipSubParams() })
	if inside != p {
		t.Fatalf("inside withParams the defaults are\n%+v\nwant\n%+v", inside, p)
	}
	if after := pubsub.DefaultGossipSubParams(); after != before {
		t.Fatalf("defaults not restored:\n%+v\nwant\n%+v", after, before)
	}
}

func TestPolicyValidate(t *testing.T) {
	good := Policy{PushWidth: 2, Pull: PullFinal, Final: DefaultFinal()}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []Policy{
		{PushWidth: -1},
		{PushWidth: 2, Pull: PullFinal},
		{PushWidth: 2, Pull: Pull(7)},
	} {
		if bad.Validate() == nil {
			t.Errorf("%+v validated", bad)
		}
	}
}
