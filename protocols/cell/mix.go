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
// Which nodes get which discipline is a seeded shuffle of the node
// indices, so it is the same in every run of a seed; shares round to the
// nearest node count.
func AssignQdiscs(assign string, n int, seed uint64) ([]string, error) {
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
	if next != n {
		return nil, fmt.Errorf("queue mix %q: %d of %d nodes have no discipline; end the mix with an entry without a share", assign, n-next, n)
	}
	return out, nil
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
// works too) and per-index exceptions.
type QdiscMap struct {
	Default string            `json:"default"`
	Nodes   map[string]string `json:"nodes,omitempty"`
}

// ReadNodeQdiscs parses a per-node queue assignment file.
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
	return &nq, nil
}

// resolve returns one spec per node: the profile's assignment, replaced by
// the map's default and exceptions where given.
func (m *QdiscMap) resolve(profileAssign string, n int, seed uint64) ([]string, error) {
	assign := profileAssign
	if m != nil && m.Default != "" {
		assign = m.Default
	}
	out, err := AssignQdiscs(assign, n, seed)
	if err != nil {
		return nil, err
	}
	if m == nil {
		return out, nil
	}
	for k, spec := range m.Nodes {
		i, err := strconv.Atoi(k)
		if err != nil || i < 0 || i >= n {
			return nil, fmt.Errorf("queue assignment: node %q is not an index in [0, %d)", k, n)
		}
		out[i] = spec
	}
	return out, nil
}
