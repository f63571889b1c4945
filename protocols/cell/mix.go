package cell

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/uplinksim/uplink/des"
)

// AssignQdiscs turns a queue assignment into one queue spec per node.
// An assignment is either a single spec ("fq_codel", "pie:ecn=on"), used
// for every node, or a mix: entries separated by ';', each "spec@share"
// with a share in percent or as a fraction, and one last entry without a
// share that takes the remaining nodes:
//
//	pie@30%;fq_codel        30 % of nodes behind PIE, the rest fq_codel
//
// A mix whose entries all have shares ("pie@30%") is open: it says nothing
// of the other nodes, and is completed by the assignment it is set over
// (CompleteMix) before it gets here.
//
// Which nodes get which discipline is a seeded shuffle of the node
// indices, so it is the same in every run of a seed; shares round to the
// nearest node count. One entry with a share may pin the publisher (node
// 0) instead of leaving it to the seed: "spec@share+pub" puts it among
// that entry's nodes, "spec@share-pub" keeps it out of them. A pin moves
// only the publisher: it trades places in the seeded order with one node
// (the entry's first, or the first after the entry's), so every share
// keeps its node count.
//
//	pie@30%+pub;fq_codel    30 % behind PIE, the publisher one of them
//	pie@30%-pub;fq_codel    30 % behind PIE, the publisher behind fq_codel
func AssignQdiscs(assign string, n int, seed uint64) ([]string, error) {
	out, _, err := assignQdiscs(assign, n, seed, false)
	return out, err
}

// The pins of a mix entry (AssignQdiscs), and how a record says the
// publisher's queue was chosen (QueueAssignment.PublisherBy).
const (
	// PinIn, written after an entry's share, puts the publisher among
	// the entry's nodes.
	PinIn = "+pub"
	// PinOut, written after an entry's share, keeps the publisher out of
	// the entry's nodes.
	PinOut = "-pub"
	// PinSeed: the seeded shuffle of a mix without a pin placed the
	// publisher.
	PinSeed = "seed"
	// PinFile: a queue assignment file names the publisher's node among
	// its "nodes".
	PinFile = "file"
	// PinEvery: the publisher has the one spec every node has (before a
	// file's exceptions, which name other nodes).
	PinEvery = "every node"
)

// publisherNode is the publisher's node index.
const publisherNode = 0

// mixEntry is one entry of a mix: spec@share, with an optional pin.
type mixEntry struct {
	spec     string
	share    float64
	hasShare bool
	pin      string // "", PinIn or PinOut
}

// parseEntry reads entry k (from 1) of the mix assign.
func parseEntry(assign string, k int, e string) (mixEntry, error) {
	spec, shareS, hasShare := strings.Cut(strings.TrimSpace(e), "@")
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return mixEntry{}, fmt.Errorf("queue mix %q: empty spec in entry %d", assign, k)
	}
	me := mixEntry{spec: spec, hasShare: hasShare}
	if !hasShare {
		return me, nil
	}
	shareS = strings.TrimSpace(shareS)
	for _, pin := range []string{PinIn, PinOut} {
		if rest, ok := strings.CutSuffix(shareS, pin); ok {
			shareS, me.pin = rest, pin
			break
		}
	}
	share, err := parseShare(shareS)
	if err != nil {
		return mixEntry{}, fmt.Errorf("queue mix %q: entry %d: %w (a pin of the publisher follows the share: %s@30%%%s or %s@30%%%s)", assign, k, err, spec, PinIn, spec, PinOut)
	}
	me.share = share
	return me, nil
}

// assignQdiscs is AssignQdiscs; with open, a mix may leave nodes over,
// whose specs are then "". It also says how the publisher's spec was
// chosen: PinEvery for a single spec, PinSeed for a mix without a pin,
// else the pin.
func assignQdiscs(assign string, n int, seed uint64, open bool) ([]string, string, error) {
	out := make([]string, n)
	entries := strings.Split(assign, ";")
	if len(entries) == 1 && !strings.Contains(assign, "@") {
		for i := range out {
			out[i] = strings.TrimSpace(assign)
		}
		return out, PinEvery, nil
	}
	perm := rand.New(rand.NewPCG(des.Mix64(seed^0x6d6978), 0x717565756573)).Perm(n)
	parsed := make([]mixEntry, len(entries))
	bounds := make([][2]int, len(entries)) // each entry's part of perm
	pinned := -1
	next := 0
	for k, e := range entries {
		me, err := parseEntry(assign, k+1, e)
		if err != nil {
			return nil, "", err
		}
		parsed[k] = me
		if me.pin != "" {
			if pinned >= 0 {
				return nil, "", fmt.Errorf("queue mix %q: entries %d and %d both pin the publisher; pin it in one entry", assign, pinned+1, k+1)
			}
			pinned = k
		}
		if !me.hasShare {
			if k != len(entries)-1 {
				return nil, "", fmt.Errorf("queue mix %q: only the last entry may omit its share (spec@30%%)", assign)
			}
			bounds[k] = [2]int{next, n}
			next = n
			continue
		}
		cnt := int(math.Round(me.share * float64(n)))
		if next+cnt > n {
			return nil, "", fmt.Errorf("queue mix %q: the shares add up to more than all nodes", assign)
		}
		bounds[k] = [2]int{next, next + cnt}
		next += cnt
	}
	if next != n && !open {
		return nil, "", fmt.Errorf("queue mix %q: %d of %d nodes have no discipline; end the mix with an entry without a share", assign, n-next, n)
	}
	by := PinSeed
	if pinned >= 0 {
		me := parsed[pinned]
		if err := pinPublisher(perm, bounds[pinned], me.pin); err != nil {
			return nil, "", fmt.Errorf("queue mix %q: entry %d, %s@%s%s, of %d nodes: %w", assign, pinned+1, me.spec, strconv.FormatFloat(me.share*100, 'g', -1, 64)+"%", me.pin, n, err)
		}
		by = me.pin
	}
	for k, me := range parsed {
		for _, i := range perm[bounds[k][0]:bounds[k][1]] {
			out[i] = me.spec
		}
	}
	return out, by, nil
}

// pinPublisher moves the publisher into perm[lo:hi] (PinIn) or out of
// it (PinOut), trading places with one node: the part's first for PinIn,
// the first after the part (or the last before it) for PinOut.
func pinPublisher(perm []int, part [2]int, pin string) error {
	lo, hi := part[0], part[1]
	at := slices.Index(perm, publisherNode)
	if at < 0 {
		return errors.New("no publisher's node to pin")
	}
	inside := at >= lo && at < hi
	switch {
	case pin == PinIn && hi == lo:
		return errors.New("its share is no node, so the publisher cannot be among them")
	case pin == PinIn && !inside:
		perm[at], perm[lo] = perm[lo], perm[at]
	case pin == PinOut && inside && hi < len(perm):
		perm[at], perm[hi] = perm[hi], perm[at]
	case pin == PinOut && inside && lo > 0:
		perm[at], perm[lo-1] = perm[lo-1], perm[at]
	case pin == PinOut && inside:
		return errors.New("its share is every node, so the publisher cannot be left out")
	}
	return nil
}

// isMix reports whether an assignment is a mix rather than one spec.
func isMix(assign string) bool { return strings.ContainsAny(assign, ";@") }

// openMix reports whether assign is a mix whose every entry has a share
// and whose shares add up to less than all nodes, so that it leaves
// nodes without a discipline.
func openMix(assign string) bool {
	if !isMix(assign) {
		return false
	}
	sum := 0.0
	for k, e := range strings.Split(assign, ";") {
		me, err := parseEntry(assign, k+1, e)
		if err != nil || !me.hasShare {
			return false
		}
		sum += me.share
	}
	return sum < 1-1e-9
}

// CompleteMix returns the queue assignment assign set over base (the
// assignment it replaces): assign itself, unless it is an open mix (every
// entry with a share, the shares short of all nodes), whose remaining
// nodes then keep base as its last entry:
//
//	CompleteMix("pie@30%", "fq_codel:profile=simnet") = "pie@30%;fq_codel:profile=simnet"
//
// An open mix over a base that is itself a mix is an error (mixes do not
// nest), and one over an empty base is returned as it is, for
// AssignQdiscs to refuse. Any other malformed assign is returned as it is
// too: AssignQdiscs reports what is wrong with it.
func CompleteMix(assign, base string) (string, error) {
	base = strings.TrimSpace(base)
	if !openMix(assign) || base == "" {
		return assign, nil
	}
	if isMix(base) {
		return "", fmt.Errorf("queue mix %q leaves the rest of the nodes to the assignment it replaces, %q, itself a mix; end the mix with an entry without a share, such as %s;fq_codel", assign, base, strings.TrimSpace(assign))
	}
	return strings.TrimSpace(assign) + ";" + base, nil
}

func parseShare(s string) (float64, error) {
	v, err := des.ParseProbability(s, true)
	if err != nil {
		return 0, fmt.Errorf("share: %w", err)
	}
	return v, nil
}

// NodeQdiscs is a per-node queue assignment read from a file: a default
// for each direction and exceptions by node index.
//
//	{"uplink": {"default": "fq_codel", "nodes": {"0": "pie", "17": "pfifo:limit=100"}},
//	 "downlink": {"default": "fq_codel:profile=simnet"}}
type NodeQdiscs struct {
	Uplink   *QdiscMap `json:"uplink,omitempty"`
	Downlink *QdiscMap `json:"downlink,omitempty"`
}

// QdiscMap assigns specs to nodes: Default (itself an assignment, so a mix
// works too; an open mix such as "pie@30%" leaves the other nodes on the
// profile's assignment) and per-index exceptions.
type QdiscMap struct {
	Default string            `json:"default"`
	Nodes   map[string]string `json:"nodes,omitempty"`
}

// ReadNodeQdiscs parses a per-node queue assignment file. A file that
// assigns nothing (null, {}, a direction that is null or has neither a
// default nor nodes) is refused: it would run the profile's queues under
// a cell key of its own.
func ReadNodeQdiscs(r io.Reader) (*NodeQdiscs, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var nq NodeQdiscs
	if err := dec.Decode(&nq); err != nil {
		return nil, fmt.Errorf("queue assignment file: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("queue assignment file: trailing data after the JSON object")
	}
	if nq.Uplink == nil && nq.Downlink == nil {
		return nil, errors.New(`queue assignment file: assigns no queue (null, {} or null directions): want an object such as {"uplink": {"default": "fq_codel", "nodes": {"0": "pie"}}}`)
	}
	for _, d := range []struct {
		name string
		m    *QdiscMap
	}{{"uplink", nq.Uplink}, {"downlink", nq.Downlink}} {
		if d.m != nil && d.m.Default == "" && len(d.m.Nodes) == 0 {
			return nil, fmt.Errorf(`queue assignment file: %s assigns no queue: give its "default", its "nodes", or leave %s out`, d.name, d.name)
		}
	}
	return &nq, nil
}

// resolve returns one spec per node: the profile's assignment, replaced by
// the map's default and exceptions where given. An open mix as the
// default takes its shares of the nodes from the profile's assignment
// and leaves it the rest (over a profile's mix, the same seeded order of
// nodes picks both, the default's entries first).
func (m *QdiscMap) resolve(profileAssign string, n int, seed uint64) ([]string, error) {
	out, _, err := m.resolveBy(profileAssign, n, seed)
	return out, err
}

// resolveBy is resolve, and says how the publisher's spec was chosen
// (PinEvery, PinSeed, PinIn, PinOut or PinFile).
func (m *QdiscMap) resolveBy(profileAssign string, n int, seed uint64) ([]string, string, error) {
	out, by, err := assignQdiscs(profileAssign, n, seed, false)
	if m == nil || m.Default == "" {
		if err != nil {
			return nil, "", err
		}
		return m.except(out, by)
	}
	if !openMix(m.Default) {
		if out, by, err = assignQdiscs(m.Default, n, seed, false); err != nil {
			return nil, "", err
		}
		return m.except(out, by)
	}
	if err != nil {
		return nil, "", err
	}
	over, overBy, err := assignQdiscs(m.Default, n, seed, true)
	if err != nil {
		return nil, "", err
	}
	for i, spec := range over {
		if spec != "" {
			out[i] = spec
		}
	}
	if (n > publisherNode && over[publisherNode] != "") || overBy != PinSeed {
		by = overBy // the default's entries or its pin placed the publisher
	}
	return m.except(out, by)
}

// except puts the map's per-node exceptions over out; by is how the
// publisher's spec was chosen before them, PinFile once they name it.
func (m *QdiscMap) except(out []string, by string) ([]string, string, error) {
	if m == nil {
		return out, by, nil
	}
	n := len(out)
	for k, spec := range m.Nodes {
		i, err := strconv.Atoi(k)
		if err != nil || i < 0 || i >= n {
			return nil, "", fmt.Errorf("queue assignment: node %q is not an index in [0, %d)", k, n)
		}
		out[i] = spec
		if i == publisherNode {
			by = PinFile
		}
	}
	return out, by, nil
}
