package phase

import (
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// FinalParams are the knobs of FINAL, the study's pull discipline
// (docs/references.md, "FINAL"; the report's Appendix A:
// SEGMENT_IWANT_DISCIPLINE_MS=200, SEGMENT_IHAVE_PARK_PROMISE_MS=400,
// SEGMENT_IHAVE_PARK_K=1, SEGMENT_IHAVE_PARK_TTL_MS=30000).
type FinalParams struct {
	Window    time.Duration // at most one outstanding IWANT per id per window
	Promise   time.Duration // an asked peer must deliver within this
	Breaks    int           // unserved promises before a peer is ignored
	IgnoreFor time.Duration // how long a broken peer's announcements are ignored
}

// DefaultFinal returns FINAL's published knobs.
func DefaultFinal() FinalParams {
	return FinalParams{Window: 200 * time.Millisecond, Promise: 400 * time.Millisecond, Breaks: 1, IgnoreFor: 30 * time.Second}
}

// puller is FINAL's state at one node: the offer table (every announcer
// of an id not yet held, in the order they announced), one ask per id per
// window, promises, and the peers whose announcements are ignored after a
// break. It does no I/O: its methods return whom to ask, and the router
// sends the IWANT and arms the timers. All times are the caller's clock.
//
// Promises follow go-libp2p-pubsub's own gossip promises: the delivery of
// an id by anyone fulfils every promise for it, so a break means the id
// was still missing when the promise ran out.
type puller struct {
	p        FinalParams
	offers   map[string]*offer
	breaks   map[peer.ID]int
	ignoring map[peer.ID]time.Time // until when
}

// offer is one id not yet held.
type offer struct {
	from      []peer.ID // announcers, first announcement first
	known     map[peer.ID]struct{}
	next      int       // the cycling cursor into from
	windowEnd time.Time // zero: no ask yet
	asked     map[peer.ID]time.Time
}

func newPuller(p FinalParams) *puller {
	return &puller{p: p, offers: map[string]*offer{}, breaks: map[peer.ID]int{}, ignoring: map[peer.ID]time.Time{}}
}

// ignored reports whether p's announcements are ignored at now.
func (u *puller) ignored(p peer.ID, now time.Time) bool {
	until, ok := u.ignoring[p]
	if !ok {
		return false
	}
	if !now.Before(until) {
		delete(u.ignoring, p)
		delete(u.breaks, p)
		return false
	}
	return true
}

// announce records that p announced id (not held). It returns the peer to
// ask now, if the id has no ask in its current window.
func (u *puller) announce(now time.Time, id string, p peer.ID) (peer.ID, bool) {
	if u.ignored(p, now) {
		return "", false
	}
	o := u.offers[id]
	if o == nil {
		o = &offer{known: map[peer.ID]struct{}{}, asked: map[peer.ID]time.Time{}}
		u.offers[id] = o
	}
	if _, dup := o.known[p]; !dup {
		o.known[p] = struct{}{}
		o.from = append(o.from, p)
	}
	if !o.windowEnd.IsZero() && now.Before(o.windowEnd) {
		return "", false
	}
	return u.ask(now, id, o)
}

// ask picks the next announcer of id, cycling through the table and
// skipping ignored peers, and opens a window and a promise.
func (u *puller) ask(now time.Time, id string, o *offer) (peer.ID, bool) {
	for range len(o.from) {
		p := o.from[o.next%len(o.from)]
		o.next++
		if u.ignored(p, now) {
			continue
		}
		o.windowEnd = now.Add(u.p.Window)
		o.asked[p] = now.Add(u.p.Promise)
		return p, true
	}
	return "", false
}

// retry runs one window after an ask: if id is still missing and its
// window has ended, it asks the next announcer.
func (u *puller) retry(now time.Time, id string) (peer.ID, bool) {
	o := u.offers[id]
	if o == nil || now.Before(o.windowEnd) {
		return "", false
	}
	return u.ask(now, id, o)
}

// expire runs at a promise's deadline: if id is still missing and p's
// promise for it has run out, p has broken a promise.
func (u *puller) expire(now time.Time, id string, p peer.ID) {
	o := u.offers[id]
	if o == nil {
		return
	}
	deadline, ok := o.asked[p]
	if !ok || now.Before(deadline) {
		return
	}
	delete(o.asked, p)
	u.breaks[p]++
	if u.breaks[p] >= u.p.Breaks {
		u.ignoring[p] = now.Add(u.p.IgnoreFor)
	}
}

// deliver records that id is held: its offer, window and promises end.
func (u *puller) deliver(id string) { delete(u.offers, id) }

// drop forgets every offer (stop-pull).
func (u *puller) drop() { clear(u.offers) }
