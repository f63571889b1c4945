package cell

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
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
// nearest node count.
func AssignQdiscs(assign string, n int, seed uint64) ([]string, error) {
	return assignQdiscs(assign, n, seed, false)
}

// assignQdiscs is AssignQdiscs; with open, a mix may leave nodes over,
// whose specs are then "".
func assignQdiscs(assign string, n int, seed uint64, open bool) ([]string, error) {
	out := make([]string, n)
	entries := strings.Split(assign, ";")
	if len(entries) == 1 && !strings.Contains(assign, "@") {
		for i := range out {
			out[i] = strings.TrimSpace(assign)
		}
		return out, nil
	}
	perm := rand.New(rand.NewPCG(des.Mix64(seed^0x6d6978), 0x717565756573)).Perm(n)
	next := 0
	for k, e := range entries {
		e = strings.TrimSpace(e)
		spec, shareS, hasShare := strings.Cut(e, "@")
		if spec == "" {
			return nil, fmt.Errorf("queue mix %q: empty spec in entry %d", assign, k+1)
		}
		if !hasShare {
			if k != len(entries)-1 {
				return nil, fmt.Errorf("queue mix %q: only the last entry may omit its share (spec@30%%)", assign)
			}
			for _, i := range perm[next:] {
				out[i] = spec
			}
			next = n
			continue
		}
		share, err := parseShare(shareS)
		if err != nil {
			return nil, fmt.Errorf("queue mix %q: %w", assign, err)
		}
		cnt := int(math.Round(share * float64(n)))
		if next+cnt > n {
			return nil, fmt.Errorf("queue mix %q: the shares add up to more than all nodes", assign)
		}
		for _, i := range perm[next : next+cnt] {
			out[i] = spec
		}
		next += cnt
	}
	if next != n && !open {
		return nil, fmt.Errorf("queue mix %q: %d of %d nodes have no discipline; end the mix with an entry without a share", assign, n-next, n)
	}
	return out, nil
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
	for _, e := range strings.Split(assign, ";") {
		spec, shareS, hasShare := strings.Cut(strings.TrimSpace(e), "@")
		if spec == "" || !hasShare {
			return false
		}
		share, err := parseShare(shareS)
		if err != nil {
			return false
		}
		sum += share
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
	out, err := AssignQdiscs(profileAssign, n, seed)
	if m == nil || m.Default == "" {
		if err != nil {
			return nil, err
		}
		return m.except(out)
	}
	if !openMix(m.Default) {
		if out, err = AssignQdiscs(m.Default, n, seed); err != nil {
			return nil, err
		}
		return m.except(out)
	}
	if err != nil {
		return nil, err
	}
	over, err := assignQdiscs(m.Default, n, seed, true)
	if err != nil {
		return nil, err
	}
	for i, spec := range over {
		if spec != "" {
			out[i] = spec
		}
	}
	return m.except(out)
}

// except puts the map's per-node exceptions over out.
func (m *QdiscMap) except(out []string) ([]string, error) {
	if m == nil {
		return out, nil
	}
	n := len(out)
	for k, spec := range m.Nodes {
		i, err := strconv.Atoi(k)
		if err != nil || i < 0 || i >= n {
			return nil, fmt.Errorf("queue assignment: node %q is not an index in [0, %d)", k, n)
		}
		out[i] = spec
	}
	return out, nil
}
