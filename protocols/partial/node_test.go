package partial

import (
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
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
// the peer with the fewest open claims first; a claim unanswered past the
// timeout strikes its peer, who is passed over for StrikeMemory; answers
// adapt the timeout.
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
	if len(w[a]) != 4 || len(w[b]) != 3 || len(n.claims) != 7 {
		t.Fatalf("first pass: A %v, B %v; want four from A, three from B", w[a], w[b])
	}
	for _, i := range w[b] {
		if i >= 5 {
			t.Fatalf("claimed part %d from B, who lacks it", i)
		}
	}
	// The next pass claims the three parts left, from A (B holds none).
	w = n.pass(t0.Add(100 * time.Millisecond))
	if len(w[a]) != 3 || len(w[b]) != 0 || w[a][0] != 7 {
		t.Fatalf("second pass: A %v, B %v", w[a], w[b])
	}
	// B answers one claim after 40 ms: the timeout becomes 16 × 40 ms.
	var bc claim
	for _, c := range n.claims {
		if c.peer == b {
			bc = c
			break
		}
	}
	n.answered(bc, bc.at.Add(40*time.Millisecond))
	if n.timeout != 640*time.Millisecond {
		t.Fatalf("timeout %v after a 40 ms answer, want 640 ms", n.timeout)
	}
	// The first pass's six other claims run out at 400 ms (the timeout
	// was 400 ms when they opened), the second pass's three at 500 ms:
	// nine strikes; both peers are struck out for 30 s. With no other
	// holder, the next pass claims from them anyway.
	if w = n.pass(t0.Add(400 * time.Millisecond)); n.Stats.Strikes != 6 {
		t.Fatalf("at 400 ms: %d strikes", n.Stats.Strikes)
	}
	w = n.pass(t0.Add(500 * time.Millisecond))
	if n.Stats.Strikes != 9 || n.Stats.TimedOut != 9 || len(n.claims) == 0 {
		t.Fatalf("at 500 ms: wants %v, %d strikes, %d timeouts", w, n.Stats.Strikes, n.Stats.TimedOut)
	}
	// A peer not struck out is preferred: C holds everything.
	c := peer.ID("C")
	for i := range 10 {
		n.peer(c).has[i] = true
	}
	clear(n.claims)
	n.peer(a).open, n.peer(b).open = 0, 0
	w = n.pass(t0.Add(time.Second))
	if len(w[c]) != 4 || len(w[a])+len(w[b]) != 5 {
		t.Fatalf("with C free: C %v, A %v, B %v; want four from C first", w[c], w[a], w[b])
	}
	for _, i := range w[a] {
		for _, j := range w[c] {
			if i == j {
				t.Fatalf("part %d claimed twice", i)
			}
		}
	}
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
