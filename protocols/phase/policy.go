// Package phase is uplink's gossipsub router for the study's segmented
// arms: phase forwarding (a push width r, an immediate IHAVE to the rest
// of the mesh, known holders, hash-ranked push targets), the phase shift's
// push budget that decays on IDONTWANT, FINAL (the pull discipline) and
// stop-pull (docs/references.md, "Phase forwarding" and "FINAL"; the
// report's Appendix A).
//
// The study's own router is a fork of go-libp2p-pubsub v0.17. These
// policies follow the study's description, and two rules of the fork's
// source that the description leaves out are policy options (read from
// the source; nothing is copied): the source counted as a known holder
// (Policy.CountSource) and the heartbeat gossip of forwarded segments
// (Policy.Gossip).
// Router embeds the stock *pubsub.GossipSubRouter, which keeps mesh
// maintenance, the heartbeat, IDONTWANT and every topic without a policy;
// Router takes over forwarding, IHAVE and IWANT for the topics that have
// one. It speaks the stock wire protocol, so stock nodes and Router nodes
// interoperate in one network.
//
// Where the description leaves a choice open, this package makes one and
// says so on the field or method: the publisher forwards like any relay;
// known holders get no IHAVE; a promise is fulfilled by the id's delivery
// from anyone (as the library's own gossip promises are); stop-pull stops a
// complete node from sending IWANTs; the phase shift's budget starts at the
// mesh size and halves with each IDONTWANT heard for the id, never below r.
package phase

import "fmt"

// Pull is how a node fetches an announced id it does not hold.
type Pull int

// The pull modes.
const (
	// PullEager asks every announcer for every announced id it does not
	// hold, as stock gossipsub answers IHAVE (no discipline).
	PullEager Pull = iota
	// PullFinal is FINAL: one ask per id per window, an offer table with
	// cycling retries, promises and ignoring a peer after a break.
	PullFinal
)

func (p Pull) String() string {
	switch p {
	case PullEager:
		return "eager"
	case PullFinal:
		return "final"
	}
	return fmt.Sprintf("Pull(%d)", int(p))
}

// Policy is the forwarding policy of one topic.
type Policy struct {
	// PushWidth is r: a relay pushes a new message to max(0, r - known
	// holders) mesh peers. 0 is pull only.
	PushWidth int
	// Budget is the phase shift as uplink read the study's prose: the push
	// count starts at the whole mesh and halves with each IDONTWANT heard
	// for the id before the push, never below PushWidth. The study's fork
	// has no such budget (its phase shift is A-tuned's forwarding without
	// FINAL), so the cell leaves it off under the fork's rules.
	Budget bool
	// Pull is the pull mode for announced ids.
	Pull Pull
	// Final holds FINAL's knobs when Pull is PullFinal.
	Final FinalParams
	// StopPull: a node that has completed its group sends no more IWANTs
	// for it (coded arms).
	StopPull bool
	// CountSource makes the node a message came from count against r
	// when it is a known holder, which it is once its IDONTWANT for the
	// message has arrived: every relay sends one to its mesh peers other
	// than its own source, ahead of its pushes, and the publisher sends
	// one at the publish. The study's fork counts every mesh peer that
	// sent IDONTWANT (phaseForwarding.trim), so its relays push
	// r - 1 = 1 copy at r = 2. Off: the source is skipped but not
	// counted (the study's description read alone).
	CountSource bool
	// Gossip makes the heartbeat announce the held messages of the topic
	// to non-mesh peers and serve their IWANTs from a message cache, as
	// the fork does by caching every message it forwards (see gossiper).
	Gossip bool
}

// Validate checks the policy.
func (p Policy) Validate() error {
	switch {
	case p.PushWidth < 0:
		return fmt.Errorf("phase policy: push width %d must not be negative", p.PushWidth)
	case p.Pull != PullEager && p.Pull != PullFinal:
		return fmt.Errorf("phase policy: unknown pull mode %v", p.Pull)
	case p.Pull == PullFinal && (p.Final.Window <= 0 || p.Final.Promise <= 0 || p.Final.Breaks < 1 || p.Final.IgnoreFor < 0):
		return fmt.Errorf("phase policy: FINAL needs a positive window and promise and at least one break, have %+v", p.Final)
	}
	return nil
}

// String is the policy in a record's words.
func (p Policy) String() string {
	s := fmt.Sprintf("phase r=%d", p.PushWidth)
	if p.Budget {
		s += " budget"
	}
	s += " pull=" + p.Pull.String()
	if p.StopPull {
		s += " stop-pull"
	}
	if p.CountSource {
		s += " source-counted"
	}
	if p.Gossip {
		s += " heartbeat-gossip"
	}
	return s
}
