package netmodel

// Network scenarios and topology draws.
//
// A scenario sets every node's access-link rates (study-model.md, "A cell";
// report.md Appendix A). A draw is everything a cell's network is made of --
// graph, link rates and one-way latencies -- in the exportable form the study
// hands from its harness to Shadow and to the Linux cells (report.md section 2,
// "The cell", and Appendix C), so a cell can be replayed on the same draw.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/uplinksim/uplink/des"
)

// Link rates of the scenarios, in bit/s (decimal: 1 Mbit/s = 10^6 bit/s).
const (
	scenMbps          int64 = 1_000_000
	scenHomeUp              = 50 * scenMbps   // home uplink (study-model.md)
	scenHomeDown            = 100 * scenMbps  // home downlink
	scenDatacenter          = 1000 * scenMbps // datacenter and builder links, both ways
	scenDatacenterPct       = 20              // dc20, dcb20: percent of nodes 1..N-1
)

// ScenarioNames lists the accepted scenario names, upN standing for the
// family up1, up2, ...
func ScenarioNames() []string { return []string{"home", "dc20", "dcb20", "upN"} }

// DatacenterNodes returns the nodes that the dc20 and dcb20 scenarios put on
// datacenter links in a network of n nodes: the contiguous block
// 1, 2, ..., floor(20 * (n-1) / 100).
//
// study-model.md says only "20 % of nodes 1..N-1 (chosen by index)". The
// block is the study harness's placement as its source describes it (the
// research tree's segmentintegrationtest/topology_test.go, meshLinks and
// meshLinkCounts: SEGMENT_DATACENTER_PCT of the n-1 non-publisher nodes,
// rounded down, "the datacenter block first from node 1"). Because the dial
// graph is a random regular graph, a block of indices is as good a random
// sample of graph positions as any other choice. At n = 500 the block is
// nodes 1..99.
func DatacenterNodes(n int) []int {
	k := scenDatacenterPct * max(n-1, 0) / 100
	out := make([]int, k)
	for i := range out {
		out[i] = 1 + i
	}
	return out
}

// Scenario returns the per-node uplink and downlink rates in bit/s of the
// named scenario on n nodes (study-model.md, "A cell"):
//
//   - "home": every node 50 Mbit/s up, 100 Mbit/s down;
//   - "dc20": as home, but the nodes DatacenterNodes(n) (20 % of nodes
//     1..n-1) at 1 Gbit/s both ways;
//   - "dcb20": dc20, and the publisher, node 0, at 1 Gbit/s both ways;
//   - "upN", N a positive integer: every node N Mbit/s up and 2N Mbit/s
//     down (the residual-uplink sweep, up10 to up200 in the study).
func Scenario(name string, n int) (up, down []int64, err error) {
	if n < 1 {
		return nil, nil, fmt.Errorf("netmodel: scenario %q: n = %d, need at least one node", name, n)
	}
	fill := func(u, d int64) {
		up = make([]int64, n)
		down = make([]int64, n)
		for i := range n {
			up[i], down[i] = u, d
		}
	}
	switch name {
	case "home", "dc20", "dcb20":
		fill(scenHomeUp, scenHomeDown)
		if name == "home" {
			return up, down, nil
		}
		for _, i := range DatacenterNodes(n) {
			up[i], down[i] = scenDatacenter, scenDatacenter
		}
		if name == "dcb20" {
			up[0], down[0] = scenDatacenter, scenDatacenter
		}
		return up, down, nil
	}
	if rest, ok := strings.CutPrefix(name, "up"); ok && rest != "" {
		mbps, perr := strconv.ParseInt(rest, 10, 64)
		// Digits only (no sign), positive, and 2N Mbit/s must fit in int64.
		if perr == nil && rest[0] >= '0' && rest[0] <= '9' && mbps > 0 && mbps <= (1<<62)/scenMbps {
			fill(mbps*scenMbps, 2*mbps*scenMbps)
			return up, down, nil
		}
		return nil, nil, fmt.Errorf("netmodel: scenario %q: upN needs N a positive whole number of Mbit/s, e.g. up10 or up200", name)
	}
	return nil, nil, fmt.Errorf("netmodel: unknown scenario %q (valid: home, dc20, dcb20, upN with N Mbit/s up and 2N down, e.g. up10, up200)", name)
}

// Draw is one topology draw: the dial graph, per-node link rates and the
// one-way latency of every ordered pair, with the parameters that produced
// them. It is the unit a cell is replayed on.
//
// JSON fields (WriteJSON, ReadDraw):
//
//	n          number of nodes
//	seed       cell seed the draw was made from
//	model      latency model name (LatencyModelByName), e.g. "geo"
//	scenario   scenario name (Scenario), e.g. "home"
//	degree     degree of the regular dial graph
//	edges      dial pairs [lo, hi], lo < hi; lo dials hi
//	up_bps     per-node uplink rate, bit/s
//	down_bps   per-node downlink rate, bit/s
//	latency_ns one-way latency matrix, latency_ns[from][to] in integer
//	           nanoseconds (exact, unlike float milliseconds)
//	regions    geo model only, optional: each node's region name
//
// A Draw read from JSON need not have been made by NewDraw (the study's own
// exports, for one, use other hashes); ReadDraw checks that it is
// self-consistent, not that it equals NewDraw's output for its parameters.
type Draw struct {
	N        int          `json:"n"`
	Seed     uint64       `json:"seed"`
	Model    string       `json:"model"`
	Scenario string       `json:"scenario"`
	Degree   int          `json:"degree"`
	Edges    [][2]int     `json:"edges"`
	Up       []int64      `json:"up_bps"`
	Down     []int64      `json:"down_bps"`
	Latency  [][]des.Time `json:"latency_ns"`
	Regions  []string     `json:"regions,omitempty"`
}

// NewDraw makes the draw of a cell: RegularGraph(n, degree, seed), the
// latency model LatencyModelByName(latencyModelName, n, seed) evaluated on
// every ordered pair, and Scenario(scenarioName, n).
func NewDraw(n, degree int, seed uint64, latencyModelName, scenarioName string) (*Draw, error) {
	g, err := RegularGraph(n, degree, seed)
	if err != nil {
		return nil, fmt.Errorf("netmodel: draw: %w", err)
	}
	model, err := LatencyModelByName(latencyModelName, n, seed)
	if err != nil {
		return nil, fmt.Errorf("netmodel: draw: %w", err)
	}
	up, down, err := Scenario(scenarioName, n)
	if err != nil {
		return nil, fmt.Errorf("netmodel: draw: %w", err)
	}
	d := &Draw{
		N:        n,
		Seed:     seed,
		Model:    latencyModelName,
		Scenario: scenarioName,
		Degree:   degree,
		Edges:    g.Edges,
		Up:       up,
		Down:     down,
		Latency:  make([][]des.Time, n),
	}
	m := Matrix(model, n)
	for i := range n {
		d.Latency[i] = m.OneWay[i*n : (i+1)*n : (i+1)*n]
	}
	if geo, ok := model.(*GeoLatency); ok {
		d.Regions = make([]string, n)
		for i := range n {
			d.Regions[i] = geo.Region(i).String()
		}
	}
	return d, nil
}

// Graph returns the draw's dial graph.
func (d *Draw) Graph() (*Graph, error) {
	g, err := GraphFromEdges(d.N, d.Edges)
	if err != nil {
		return nil, fmt.Errorf("netmodel: draw graph: %w", err)
	}
	return g, nil
}

// LatencyMatrix returns the draw's latencies as a LatencyModel.
func (d *Draw) LatencyMatrix() *LatencyMatrix {
	m := &LatencyMatrix{N: d.N, OneWay: make([]des.Time, 0, d.N*d.N)}
	for _, row := range d.Latency {
		m.OneWay = append(m.OneWay, row...)
	}
	return m
}

// Validate checks that the draw is self-consistent: at least two nodes; a
// simple, connected, Degree-regular graph on N nodes whose edges are dial
// pairs (lo < hi) within range; N positive up and down rates; an N x N
// latency matrix with non-negative entries; regions, if present, one valid
// name per node; model and scenario named.
func (d *Draw) Validate() error {
	if d.N < 2 {
		return fmt.Errorf("netmodel: draw: n = %d, need at least 2 nodes", d.N)
	}
	if d.Model == "" {
		return errors.New("netmodel: draw: no latency model name")
	}
	if d.Scenario == "" {
		return errors.New("netmodel: draw: no scenario name")
	}
	if d.Degree < 1 || d.Degree >= d.N {
		return fmt.Errorf("netmodel: draw: degree %d outside [1, n-1 = %d]", d.Degree, d.N-1)
	}
	if want := d.N * d.Degree / 2; len(d.Edges) != want || (d.N*d.Degree)%2 != 0 {
		return fmt.Errorf("netmodel: draw: %d edges, a %d-regular graph on %d nodes has n*degree/2 = %d", len(d.Edges), d.Degree, d.N, want)
	}
	for k, e := range d.Edges {
		if e[0] >= e[1] {
			return fmt.Errorf("netmodel: draw: edge %d [%d, %d] is not a dial pair [lo, hi] with lo < hi", k, e[0], e[1])
		}
	}
	g, err := d.Graph()
	if err != nil {
		return err
	}
	if g.Degree != d.Degree {
		for i := range d.N {
			if got := len(g.Neighbors(i)); got != d.Degree {
				return fmt.Errorf("netmodel: draw: node %d has degree %d, the draw says %d-regular", i, got, d.Degree)
			}
		}
	}
	if !g.IsConnected() {
		return errors.New("netmodel: draw: the dial graph is not connected")
	}
	if len(d.Up) != d.N || len(d.Down) != d.N {
		return fmt.Errorf("netmodel: draw: %d up and %d down rates for %d nodes", len(d.Up), len(d.Down), d.N)
	}
	for i := range d.N {
		if d.Up[i] <= 0 || d.Down[i] <= 0 {
			return fmt.Errorf("netmodel: draw: node %d has rates up %d, down %d bit/s; both must be positive", i, d.Up[i], d.Down[i])
		}
	}
	if len(d.Latency) != d.N {
		return fmt.Errorf("netmodel: draw: latency matrix has %d rows for %d nodes", len(d.Latency), d.N)
	}
	for i, row := range d.Latency {
		if len(row) != d.N {
			return fmt.Errorf("netmodel: draw: latency matrix row %d has %d entries for %d nodes", i, len(row), d.N)
		}
		for j, v := range row {
			if v < 0 {
				return fmt.Errorf("netmodel: draw: latency from %d to %d is negative (%d ns)", i, j, int64(v))
			}
		}
	}
	if d.Regions != nil {
		if len(d.Regions) != d.N {
			return fmt.Errorf("netmodel: draw: %d regions for %d nodes", len(d.Regions), d.N)
		}
		for i, r := range d.Regions {
			if _, err := ParseRegion(r); err != nil {
				return fmt.Errorf("netmodel: draw: node %d: %w", i, err)
			}
		}
	}
	return nil
}

// scenDrawWire is Draw's JSON form on input: edges as plain arrays, so an
// edge with other than two entries is reported instead of being silently
// truncated or zero-filled as a Go array would be.
type scenDrawWire struct {
	N        *int         `json:"n"`
	Seed     *uint64      `json:"seed"`
	Model    string       `json:"model"`
	Scenario string       `json:"scenario"`
	Degree   int          `json:"degree"`
	Edges    [][]int      `json:"edges"`
	Up       []int64      `json:"up_bps"`
	Down     []int64      `json:"down_bps"`
	Latency  [][]des.Time `json:"latency_ns"`
	Regions  []string     `json:"regions,omitempty"`
}

// WriteJSON writes the draw as one JSON object (fields in Draw's doc
// comment), one edge and one latency row per line, after validating it.
func (d *Draw) WriteJSON(w io.Writer) error {
	if err := d.Validate(); err != nil {
		return fmt.Errorf("netmodel: write draw: %w", err)
	}
	bw := bufio.NewWriter(w)
	field := func(name string, v any, last bool) error {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("netmodel: write draw field %s: %w", name, err)
		}
		sep := ",\n"
		if last {
			sep = "\n"
		}
		_, err = fmt.Fprintf(bw, " %q: %s%s", name, b, sep)
		return err
	}
	rows := func(name string, n int, row func(i int) any, last bool) error {
		if _, err := fmt.Fprintf(bw, " %q: [", name); err != nil {
			return err
		}
		for i := range n {
			b, err := json.Marshal(row(i))
			if err != nil {
				return fmt.Errorf("netmodel: write draw field %s[%d]: %w", name, i, err)
			}
			sep := ","
			if i == n-1 {
				sep = ""
			}
			if _, err := fmt.Fprintf(bw, "\n  %s%s", b, sep); err != nil {
				return err
			}
		}
		end := "\n ],\n"
		if last {
			end = "\n ]\n"
		}
		_, err := bw.WriteString(end)
		return err
	}
	if _, err := bw.WriteString("{\n"); err != nil {
		return fmt.Errorf("netmodel: write draw: %w", err)
	}
	steps := []func() error{
		func() error { return field("n", d.N, false) },
		func() error { return field("seed", d.Seed, false) },
		func() error { return field("model", d.Model, false) },
		func() error { return field("scenario", d.Scenario, false) },
		func() error { return field("degree", d.Degree, false) },
		func() error { return rows("edges", len(d.Edges), func(i int) any { return d.Edges[i] }, false) },
		func() error { return field("up_bps", d.Up, false) },
		func() error { return field("down_bps", d.Down, false) },
		func() error {
			return rows("latency_ns", len(d.Latency), func(i int) any { return d.Latency[i] }, d.Regions == nil)
		},
	}
	if d.Regions != nil {
		steps = append(steps, func() error { return field("regions", d.Regions, true) })
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return fmt.Errorf("netmodel: write draw: %w", err)
		}
	}
	if _, err := bw.WriteString("}\n"); err != nil {
		return fmt.Errorf("netmodel: write draw: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("netmodel: write draw: %w", err)
	}
	return nil
}

// ReadDraw reads one draw written by WriteJSON (or any JSON object with the
// same fields) and validates it (Draw.Validate). Unknown fields, missing n or
// seed, edges that are not pairs, and trailing data are errors.
func ReadDraw(r io.Reader) (*Draw, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var w scenDrawWire
	if err := dec.Decode(&w); err != nil {
		return nil, fmt.Errorf("netmodel: read draw: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("netmodel: read draw: trailing data after the draw object")
	}
	if w.N == nil {
		return nil, errors.New("netmodel: read draw: missing field n")
	}
	if w.Seed == nil {
		return nil, errors.New("netmodel: read draw: missing field seed")
	}
	d := &Draw{
		N:        *w.N,
		Seed:     *w.Seed,
		Model:    w.Model,
		Scenario: w.Scenario,
		Degree:   w.Degree,
		Edges:    make([][2]int, len(w.Edges)),
		Up:       w.Up,
		Down:     w.Down,
		Latency:  w.Latency,
		Regions:  w.Regions,
	}
	for k, e := range w.Edges {
		if len(e) != 2 {
			return nil, fmt.Errorf("netmodel: read draw: edge %d has %d entries, want a pair [lo, hi]", k, len(e))
		}
		d.Edges[k] = [2]int{e[0], e[1]}
	}
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("netmodel: read draw: %w", err)
	}
	return d, nil
}
