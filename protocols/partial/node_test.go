package partial

import (
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newTestNode(t *testing.T, total int) *Node {
	t.Helper()
	n, err := New(Tuned(), "t", []byte("g"), total, total, nil)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestWireRoundTrip(t *testing.T) {
	n := newTestNode(t, 11)
	n.parts[0], n.parts[3], n.parts[10] = []byte("a"), []byte("bcd"), []byte{}
	has, want, err := decodeMetadata(n.metadata([]int{1, 9}), 11)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 11 {
		if has[i] != (n.parts[i] != nil) || want[i] != (i == 1 || i == 9) {
			t.Fatalf("part %d: has %v want %v", i, has[i], want[i])
		}
	}
	if _, _, err := decodeMetadata([]byte{1, 2, 3}, 11); err == nil {
		t.Fatal("metadata of the wrong size decoded")
	}
	frames, err := decodeFrames(n.encodeFrames([]int{3, 0}), 11)
	if err != nil || len(frames) != 2 || frames[0].index != 3 || string(frames[0].data) != "bcd" || frames[1].index != 0 {
		t.Fatalf("frames %+v, %v", frames, err)
	}
	if _, err := decodeFrames([]byte{20, 1, 'x'}, 11); err == nil {
		t.Fatal("a frame index beyond the group decoded")
	}
	if _, err := decodeFrames([]byte{1, 9, 'x'}, 11); err == nil {
		t.Fatal("a frame longer than its bytes decoded")
	}
}

// The claim ledger: at most ClaimsPerPeer fresh claims per peer per pass,
// the peer with the fewest open claims first; a claim whose part is still
// missing past the timeout strikes its peer, who is passed over for
// StrikeMemory; a peer's answers adapt that peer's timeout.
func TestClaimLedger(t *testing.T) {
	n := newTestNode(t, 10)
	a, b := peer.ID("A"), peer.ID("B")
	for i := range 10 {
		n.peer(a).has[i] = true
		if i < 5 {
			n.peer(b).has[i] = true
		}
	}
	// The first pass spreads parts 0..4 over both peers, fewest open
	// claims first; A reaches its four with part 6, so 7..9 wait.
	w := n.pass(t0)
	require.Len(t, w[a], 4, "first pass from A")
	require.Len(t, w[b], 3, "first pass from B")
	require.Len(t, n.claims, 7)
	for _, i := range w[b] {
		require.Less(t, i, 5, "claimed part %d from B, who lacks it", i)
	}
	// The next pass claims the three parts left, from A (B holds none).
	w = n.pass(t0.Add(100 * time.Millisecond))
	require.Equal(t, []int{7, 8, 9}, w[a])
	require.Empty(t, w[b])
	// B answers one claim after 40 ms: B's timeout becomes 16 × 40 ms,
	// A's stays the first value.
	bi := -1
	for i, c := range n.claims {
		if c.peer == b {
			bi = i
			break
		}
	}
	n.take(b, []frame{{index: bi, data: []byte("x")}}, t0.Add(40*time.Millisecond))
	require.Equal(t, 640*time.Millisecond, n.timeoutFor(n.peer(b)))
	require.Equal(t, 400*time.Millisecond, n.timeoutFor(n.peer(a)))
	// The first pass's six other claims run out at 400 ms (the timeout
	// was 400 ms when they opened), the second pass's three at 500 ms:
	// nine strikes; both peers are struck out for 30 s. With no other
	// holder, the next pass claims from them anyway.
	n.pass(t0.Add(400 * time.Millisecond))
	require.Equal(t, 6, n.Stats.Strikes, "strikes at 400 ms")
	n.pass(t0.Add(500 * time.Millisecond))
	require.Equal(t, 9, n.Stats.Strikes, "strikes at 500 ms")
	require.Equal(t, 9, n.Stats.TimedOut)
	require.NotEmpty(t, n.claims)
	// A peer not struck out is preferred: C holds everything.
	c := peer.ID("C")
	for i := range 10 {
		n.peer(c).has[i] = true
	}
	clear(n.claims)
	n.peer(a).open, n.peer(b).open = 0, 0
	w = n.pass(t0.Add(time.Second))
	// C takes parts 0..4 but B's answered one; A (struck) the next four,
	// which B lacks; part 9 waits for the next pass.
	require.Len(t, w[c], 4, "four from C first")
	require.Equal(t, []int{5, 6, 7, 8}, w[a])
	require.Empty(t, w[b])
	for _, i := range w[a] {
		require.NotContains(t, w[c], i, "part %d claimed twice", i)
	}
}

// The request timeout is per peer (the study's report, section 5: a
// request is reissued when its per-peer timeout lapses): a slow peer's
// answers lengthen its own timeout only, a peer not yet heard from keeps
// the first value, and Fixed keeps the first value for every peer.
func TestPerPeerTimeout(t *testing.T) {
	for _, fixed := range []bool{false, true} {
		p := Tuned()
		p.Fixed = fixed
		n, fast, slow, quiet := fastSlowQuiet(t, p)
		w := n.pass(t0)
		require.Equal(t, []int{0, 1, 2, 3}, w[fast])
		require.Equal(t, []int{4, 5, 6, 7}, w[slow])
		// F answers part 0 in 20 ms, S answers part 4 in 100 ms, then
		// part 5 in 180 ms: S's mean is 100 + (180 − 100)/8 = 110 ms.
		n.take(fast, []frame{{index: 0, data: []byte("x")}}, t0.Add(20*time.Millisecond))
		n.take(slow, []frame{{index: 4, data: []byte("x")}}, t0.Add(100*time.Millisecond))
		n.take(slow, []frame{{index: 5, data: []byte("x")}}, t0.Add(180*time.Millisecond))
		require.Equal(t, 3, n.Stats.Answered)
		want := map[peer.ID]time.Duration{fast: 320 * time.Millisecond, slow: 1760 * time.Millisecond, quiet: 400 * time.Millisecond}
		if fixed {
			want = map[peer.ID]time.Duration{fast: 400 * time.Millisecond, slow: 400 * time.Millisecond, quiet: 400 * time.Millisecond}
		}
		for q, d := range want {
			require.Equal(t, d, n.timeoutFor(n.peer(q)), "fixed %v, peer %s", fixed, q)
		}
		// Claims opened now carry their peer's timeout: part 1 from F,
		// part 6 from S.
		clear(n.claims)
		n.peer(fast).open, n.peer(slow).open = 0, 0
		t1 := t0.Add(time.Second)
		n.pass(t1)
		require.Equal(t, fast, n.claims[1].peer)
		require.Equal(t, t1.Add(want[fast]), n.claims[1].deadline)
		require.Equal(t, slow, n.claims[6].peer)
		require.Equal(t, t1.Add(want[slow]), n.claims[6].deadline)
	}
}

// fastSlowQuiet is a B tuned node of 8 parts whose peer F holds parts 0
// to 3, S parts 4 to 7 and Q none.
func fastSlowQuiet(t *testing.T, p Params) (n *Node, fast, slow, quiet peer.ID) {
	t.Helper()
	n, err := New(p, "t", []byte("g"), 8, 8, nil)
	require.NoError(t, err)
	fast, slow, quiet = peer.ID("F"), peer.ID("S"), peer.ID("Q")
	for i := range 8 {
		n.peer(fast).has[i] = i < 4
		n.peer(slow).has[i] = i >= 4
		n.peer(quiet).has[i] = false
	}
	return n, fast, slow, quiet
}

// A claim ends when its part arrives from any peer: a push from another
// peer closes it without a response-time sample and without a strike,
// and the claimed peer's later answer is a duplicate, not a sample.
func TestClaimClosedByAnyArrival(t *testing.T) {
	n := newTestNode(t, 2)
	a, b := peer.ID("A"), peer.ID("B")
	n.peer(a).has[0], n.peer(a).has[1] = true, true
	w := n.pass(t0)
	require.Equal(t, []int{0, 1}, w[a])
	fresh := n.take(b, []frame{{index: 0, data: []byte("x")}}, t0.Add(50*time.Millisecond))
	require.Equal(t, []int{0}, fresh)
	require.NotContains(t, n.claims, 0)
	require.Equal(t, 1, n.peer(a).open)
	require.Zero(t, n.peer(a).srtt, "a push from B is no sample of A")
	require.Zero(t, n.Stats.Answered)
	// Past the timeout only part 1's claim, still missing, strikes A.
	n.pass(t0.Add(time.Second))
	require.Equal(t, 1, n.Stats.Strikes)
	require.Equal(t, 1, n.Stats.TimedOut)
	// A's late answer for part 0 is a duplicate.
	require.Empty(t, n.take(a, []frame{{index: 0, data: []byte("x")}}, t0.Add(1100*time.Millisecond)))
	require.Equal(t, 1, n.Stats.Duplicates)
	require.Zero(t, n.Stats.Answered)
}

// A lapsed claim counts as unheard when its peer had answered none of
// the node's claims (it waited Timeout0), and the peer's part arriving
// after the lapse counts once as a late answer.
func TestLapseCounters(t *testing.T) {
	n := newTestNode(t, 2)
	a := peer.ID("A")
	n.peer(a).has[0], n.peer(a).has[1] = true, true
	require.Equal(t, []int{0, 1}, n.pass(t0)[a])
	n.take(a, []frame{{index: 0, data: []byte("x")}}, t0.Add(100*time.Millisecond))
	// Part 1's claim lapses at 400 ms, before A had answered: unheard.
	require.Equal(t, []int{1}, n.pass(t0.Add(500 * time.Millisecond))[a], "A, struck, is the only holder")
	require.Equal(t, 1, n.Stats.TimedOut)
	require.Equal(t, 1, n.Stats.TimedOutUnheard)
	// The new claim waits 16 × 100 ms and lapses too; A had answered.
	n.pass(t0.Add(2200 * time.Millisecond))
	require.Equal(t, 2, n.Stats.TimedOut)
	require.Equal(t, 1, n.Stats.TimedOutUnheard)
	// A's part comes late, then again: one late answer.
	n.take(a, []frame{{index: 1, data: []byte("x")}}, t0.Add(2300*time.Millisecond))
	n.take(a, []frame{{index: 1, data: []byte("x")}}, t0.Add(2400*time.Millisecond))
	require.Equal(t, 1, n.Stats.LateAnswers)
	require.Equal(t, 1, n.Stats.Duplicates)
}

// Coded B claims no more parts than completion still needs: with 4 of 8
// parts needed, a pass claims parts 0..3 only; a pushed part counts
// toward the need, so a lapsed claim is not reissued while the held and
// claimed parts cover it; B tuned (every part needed) claims every
// missing part.
func TestClaimBudget(t *testing.T) {
	n, err := New(Tuned(), "t", []byte("g"), 8, 4, nil)
	require.NoError(t, err)
	a, b := peer.ID("A"), peer.ID("B")
	for i := range 8 {
		n.peer(a).has[i], n.peer(b).has[i] = true, true
	}
	w := n.pass(t0)
	require.Len(t, n.claims, 4)
	require.ElementsMatch(t, []int{0, 1, 2, 3}, append(w[a], w[b]...))
	// Part 6 is pushed; the next pass claims nothing.
	n.take(b, []frame{{index: 6, data: []byte("x")}}, t0.Add(50*time.Millisecond))
	require.Empty(t, n.pass(t0.Add(100*time.Millisecond)))
	// Parts 0..3's claims lapse at 400 ms: three parts are still needed,
	// and the pass claims three again, 0..2.
	w = n.pass(t0.Add(400 * time.Millisecond))
	require.Equal(t, 4, n.Stats.TimedOut)
	require.ElementsMatch(t, []int{0, 1, 2}, append(w[a], w[b]...))
	// Three more parts complete the node; it claims no more.
	for _, i := range []int{0, 1, 2} {
		n.take(a, []frame{{index: i, data: []byte("x")}}, t0.Add(450*time.Millisecond))
	}
	require.True(t, n.done)
	require.Empty(t, n.pass(t0.Add(500*time.Millisecond)))

	tuned := newTestNode(t, 8)
	for i := range 8 {
		tuned.peer(a).has[i], tuned.peer(b).has[i] = true, true
	}
	w = tuned.pass(t0)
	require.Len(t, tuned.claims, 8)
	require.Len(t, append(w[a], w[b]...), 8)
}

func TestParamsValidate(t *testing.T) {
	if err := Tuned().Validate(); err != nil {
		t.Fatal(err)
	}
	p := Tuned()
	p.ClaimsPerPeer = 0
	if p.Validate() == nil {
		t.Fatal("zero claims per peer validated")
	}
	if _, err := New(Tuned(), "t", nil, 4, 5, nil); err == nil {
		t.Fatal("need above total accepted")
	}
}

// TestRulesOff: each ledger rule switched off is the simpler rule it
// replaced. Without the claim budget coded B claims all 8 parts for a
// need of 4; with one timeout for the node, answers in 20, 100 and 180 ms
// give every peer 16 × 48.75 ms (20, then 20 + 80/8 = 30, then 30 +
// 150/8); without closing by any arrival, a part pushed by B leaves A's
// claim open, and A is struck at its timeout for it too.
func TestRulesOff(t *testing.T) {
	a, b := peer.ID("A"), peer.ID("B")

	p := Tuned()
	p.Off.ClaimBudget = true
	n, err := New(p, "t", []byte("g"), 8, 4, nil)
	require.NoError(t, err)
	for i := range 8 {
		n.peer(a).has[i], n.peer(b).has[i] = true, true
	}
	n.pass(t0)
	require.Len(t, n.claims, 8)

	p = Tuned()
	p.Off.PerPeerTimeout = true
	n, fast, slow, quiet := fastSlowQuiet(t, p)
	n.pass(t0)
	require.Equal(t, 400*time.Millisecond, n.timeoutFor(n.peer(quiet)))
	n.take(fast, []frame{{index: 0, data: []byte("x")}}, t0.Add(20*time.Millisecond))
	n.take(slow, []frame{{index: 4, data: []byte("x")}}, t0.Add(100*time.Millisecond))
	n.take(slow, []frame{{index: 5, data: []byte("x")}}, t0.Add(180*time.Millisecond))
	for _, q := range []peer.ID{fast, slow, quiet} {
		require.Equal(t, 780*time.Millisecond, n.timeoutFor(n.peer(q)), "peer %s", q)
	}

	p = Tuned()
	p.Off.AnyArrival = true
	n, err = New(p, "t", []byte("g"), 2, 2, nil)
	require.NoError(t, err)
	n.peer(a).has[0], n.peer(a).has[1] = true, true
	n.pass(t0)
	n.take(b, []frame{{index: 0, data: []byte("x")}}, t0.Add(50*time.Millisecond))
	require.Contains(t, n.claims, 0, "B's push leaves A's claim open")
	n.pass(t0.Add(time.Second))
	require.Equal(t, 2, n.Stats.Strikes)
}

// TestParseRulesOff: rule names read in any order and written in
// RuleNames' order; an unknown name is an error naming it and the list.
func TestParseRulesOff(t *testing.T) {
	r, err := ParseRulesOff(" per-peer-timeout,any-arrival ,claim-budget")
	require.NoError(t, err)
	require.Equal(t, RulesOff{ClaimBudget: true, PerPeerTimeout: true, AnyArrival: true}, r)
	require.Equal(t, "any-arrival,claim-budget,per-peer-timeout", r.String())
	r, err = ParseRulesOff("")
	require.NoError(t, err)
	require.Equal(t, "", r.String())
	_, err = ParseRulesOff("claim-budget,budget")
	require.ErrorContains(t, err, `variant B rule "budget": want a comma-separated list of any-arrival, claim-budget, per-peer-timeout`)
}
