package phase

import (
	"slices"
	"testing"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/peer"
)

func peerSet(ps ...peer.ID) map[peer.ID]struct{} {
	m := map[peer.ID]struct{}{}
	for _, p := range ps {
		m[p] = struct{}{}
	}
	return m
}

// TestTargets: with a mesh of eight, the sender skipped and one peer known
// to hold the id (an IDONTWANT), r = 2 pushes to 2 - 1 = 1 peer and
// announces to the other five; the sender does not count against r.
// Without known holders every relay pushes r; a width above the
// candidates pushes to all of them; the choice is the hash rank, the same
// on every call.
func TestTargets(t *testing.T) {
	mesh := peerSet("a", "b", "c", "d", "e", "f", "g", "h")
	push, ann := targets("seg-3", mesh, peerSet("b"), "a", 2, false)
	if len(push) != 1 || len(ann) != 5 {
		t.Fatalf("push %v, announce %v: want 1 and 5 (8 less the sender, less one holder)", push, ann)
	}
	all := append(slices.Clone(push), ann...)
	if slices.Contains(all, "a") || slices.Contains(all, "b") {
		t.Fatalf("the sender or a known holder is targeted: %v", all)
	}
	push, ann = targets("seg-3", mesh, nil, "a", 2, false)
	if len(push) != 2 || len(ann) != 5 {
		t.Fatalf("no holders: push %v, announce %v; want 2 and 5", push, ann)
	}
	again, _ := targets("seg-3", mesh, nil, "a", 2, false)
	if !slices.Equal(push, again) {
		t.Fatalf("hash rank not deterministic: %v then %v", push, again)
	}
	push, ann = targets("seg-3", mesh, peerSet("b", "c", "d"), "self", 2, false)
	if len(push) != 0 || len(ann) != 5 {
		t.Fatalf("three holders, r = 2: push %v, announce %v; want 0 and 5", push, ann)
	}
	push, ann = targets("seg-3", mesh, nil, "self", 12, false)
	if len(push) != 8 || len(ann) != 0 {
		t.Fatalf("width 12 over 8 candidates: push %v, announce %v", push, ann)
	}
}

// msgOf is a message whose data names it.
func msgOf(name string) *pubsub.Message {
	return &pubsub.Message{Message: &pb.Message{Data: []byte(name)}}
}

// TestBatchOrder: a batch sends every message's first push, then every
// second push, then the announcements, round by round (the library's
// round-robin scheduler over message ids, with the fork's pushes ahead of
// its announcements in each message's list).
func TestBatchOrder(t *testing.T) {
	fs := []forwarding{
		{msg: msgOf("m0"), push: []peer.ID{"a", "b"}, announce: []peer.ID{"c", "d", "e"}},
		{msg: msgOf("m1"), push: []peer.ID{"f", "g"}, announce: []peer.ID{"h"}},
		{msg: msgOf("m2"), push: []peer.ID{"i"}},
	}
	identity := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	var got []string
	for _, st := range batchOrder(fs, identity) {
		kind := "announce"
		if st.push {
			kind = "push"
		}
		got = append(got, string(fs[st.f].msg.Data)+" "+kind+" "+string(st.to))
	}
	want := []string{
		"m0 push a", "m1 push f", "m2 push i",
		"m0 push b", "m1 push g",
		"m0 announce c", "m1 announce h",
		"m0 announce d",
		"m0 announce e",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("batch order\n%v\nwant\n%v", got, want)
	}
}
