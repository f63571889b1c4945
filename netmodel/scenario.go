package netmodel

// Network scenarios and topology draws.
//
// A scenario sets every node's access-link rates (docs/references.md, "A
// cell"; the report's Appendix A). A draw is everything a cell's network is
// made of -- graph, link rates and one-way latencies -- in the exportable
// form the study hands from its harness to Shadow and to the Linux cells
// (the report, section 2, "The cell", and Appendix C), so a cell can be
// replayed on the same draw.

import (
	"bufio"
	"bytes"
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
	scenHomeUp              = 50 * scenMbps   // home uplink (docs/references.md, "A cell")
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
// docs/references.md, "A cell", says only "20 % of nodes 1 to N − 1
// (chosen by index)". The block is the study harness's placement as its
// source describes it (the research tree's
// segmentintegrationtest/topology_test.go, meshLinks and
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
// named scenario on n nodes (docs/references.md, "A cell"):
//
//   - "home": every node 50 Mbit/s up, 100 Mbit/s down;
//   - "dc20": as home, but the nodes DatacenterNodes(n) (20 % of nodes
//     1..n-1) at 1 Gbit/s both ways;
//   - "dcb20": dc20, and the publisher, node 0, at 1 Gbit/s both ways;
//   - "upN", N a whole number from 1 to MaxUpN: every node N Mbit/s up
//     and 2N Mbit/s down (the residual-uplink sweep, up10 to up200 in the
//     study).
//
// Every rate lies within [des.MinRate, des.MaxRate].
func Scenario(name string, n int) (up, down []int64, err error) {
	sc, err := parseScenario(name)
	if err != nil {
		return nil, nil, fmt.Errorf("netmodel: %w", err)
	}
	if n < 1 {
		return nil, nil, fmt.Errorf("netmodel: scenario %q: n = %d, need at least one node", name, n)
	}
	up = make([]int64, n)
	down = make([]int64, n)
	for i := range n {
		up[i], down[i] = sc.up, sc.down
	}
	if sc.datacenter {
		for _, i := range DatacenterNodes(n) {
			up[i], down[i] = scenDatacenter, scenDatacenter
		}
	}
	if sc.builder {
		up[0], down[0] = scenDatacenter, scenDatacenter
	}
	return up, down, nil
}

// MaxUpN is the largest N of the scenario upN: its downlink, 2N Mbit/s,
// is then des.MaxRate.
const MaxUpN = des.MaxRate / (2 * scenMbps)

// scenSpec is a parsed scenario name: every node's rates, and whether the
// datacenter block and the publisher (the builder) get datacenter links.
type scenSpec struct {
	up, down            int64
	datacenter, builder bool
}

// parseScenario reads a scenario name (see Scenario); its errors are
// unprefixed.
func parseScenario(name string) (scenSpec, error) {
	switch name {
	case "home":
		return scenSpec{up: scenHomeUp, down: scenHomeDown}, nil
	case "dc20":
		return scenSpec{up: scenHomeUp, down: scenHomeDown, datacenter: true}, nil
	case "dcb20":
		return scenSpec{up: scenHomeUp, down: scenHomeDown, datacenter: true, builder: true}, nil
	}
	if rest, ok := strings.CutPrefix(name, "up"); ok && rest != "" {
		// Digits only: des.ParseInt would also take a sign or spaces.
		if strings.Trim(rest, "0123456789") == "" {
			if mbps, err := des.ParseInt(rest, 1, MaxUpN); err == nil {
				return scenSpec{up: mbps * scenMbps, down: 2 * mbps * scenMbps}, nil
			}
		}
		return scenSpec{}, fmt.Errorf("scenario %q: upN needs N a whole number of Mbit/s from 1 to %d (2N Mbit/s down is at most des.MaxRate, %s), e.g. up10 or up200", name, MaxUpN, des.FormatRate(des.MaxRate))
	}
	return scenSpec{}, fmt.Errorf("unknown scenario %q (valid: home, dc20, dcb20, upN with N Mbit/s up and 2N down, e.g. up10, up200)", name)
}

// Draw is one topology draw: the dial graph, per-node link rates and the
// one-way latency of every ordered pair, with the parameters that produced
// them. It is the unit a cell is replayed on.
//
// A draw made by NewDraw keeps its latency model and computes a pair's
// latency when asked (OneWay), so it takes memory in proportion to its
// nodes and edges; only a draw read from JSON (ReadDraw) holds an N x N
// matrix, the one it was given.
//
// JSON fields (WriteJSON, ReadDraw; MarshalJSON and UnmarshalJSON are the
// same):
//
//	n          number of nodes, 2 to des.MaxNodes
//	seed       cell seed the draw was made from
//	model      latency model name (LatencyModelByName), e.g. "geo"
//	scenario   scenario name (Scenario), e.g. "home"
//	degree     degree of the regular dial graph
//	edges      dial pairs [lo, hi], lo < hi; lo dials hi
//	up_bps     per-node uplink rate, bit/s, des.MinRate to des.MaxRate
//	down_bps   per-node downlink rate, bit/s, des.MinRate to des.MaxRate
//	latency_ns one-way latency matrix, latency_ns[from][to] in integer
//	           nanoseconds (exact, unlike float milliseconds), 0 to
//	           des.MaxLatency
//	regions    geo model only, optional: each node's region name
//
// A Draw read from JSON need not have been made by NewDraw (the study's own
// exports, for one, use other hashes); ReadDraw checks that it is
// self-consistent and within the bounds above, not that it equals NewDraw's
// output for its parameters.
type Draw struct {
	N        int
	Seed     uint64
	Model    string
	Scenario string
	Degree   int
	Edges    [][2]int
	Up       []int64
	Down     []int64
	Regions  []string

	// latency gives every pair's latency: the model of a draw made by
	// NewDraw, or the *LatencyMatrix of a draw read from JSON.
	latency LatencyModel
}

// CheckDraw reports whether NewDraw accepts its parameters, with the error
// NewDraw would return, without building the graph: n within
// [2, des.MaxNodes], a degree a connected regular graph on n nodes can
// have, a valid latency model name and a valid scenario name. (NewDraw can
// still fail, in the unlikely case that RegularGraph finds no connected
// graph.)
func CheckDraw(n, degree int, latencyModelName, scenarioName string) error {
	if n > des.MaxNodes {
		return fmt.Errorf("netmodel: draw: n = %d: want at most %d nodes (des.MaxNodes)", n, des.MaxNodes)
	}
	if err := topoCheckParams(n, degree); err != nil {
		return fmt.Errorf("netmodel: draw: random %d-regular graph on %d nodes: %w", degree, n, err)
	}
	if _, err := latencyModelByName(latencyModelName, 0, 0); err != nil {
		return fmt.Errorf("netmodel: draw: %w", err)
	}
	if _, err := parseScenario(scenarioName); err != nil {
		return fmt.Errorf("netmodel: draw: %w", err)
	}
	return nil
}

// NewDraw makes the draw of a cell: RegularGraph(n, degree, seed), the
// latency model LatencyModelByName(latencyModelName, n, seed) and
// Scenario(scenarioName, n). The draw keeps the model and computes each
// pair's latency from it when asked.
func NewDraw(n, degree int, seed uint64, latencyModelName, scenarioName string) (*Draw, error) {
	if err := CheckDraw(n, degree, latencyModelName, scenarioName); err != nil {
		return nil, err
	}
	model, err := LatencyModelByName(latencyModelName, n, seed)
	if err != nil {
		return nil, fmt.Errorf("netmodel: draw: %w", err)
	}
	up, down, err := Scenario(scenarioName, n)
	if err != nil {
		return nil, fmt.Errorf("netmodel: draw: %w", err)
	}
	g, err := RegularGraph(n, degree, seed)
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
		latency:  model,
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

// OneWay returns the one-way latency from node from to node to. It panics
// when either index is outside [0, N), like a slice index, and on a Draw
// made neither by NewDraw nor by ReadDraw.
func (d *Draw) OneWay(from, to int) des.Time {
	if from < 0 || from >= d.N || to < 0 || to >= d.N {
		panic(fmt.Sprintf("netmodel: draw of %d nodes has no pair (%d, %d)", d.N, from, to))
	}
	return d.latency.Latency(from, to)
}

// LatencyModel returns the draw's latencies as a model for Config.Latency:
// the latency model itself for a draw made by NewDraw (no matrix is built),
// the imported matrix for one read by ReadDraw; nil for a Draw made neither
// way. Every model it returns is a MinLatencyModel.
func (d *Draw) LatencyModel() LatencyModel { return d.latency }

// Validate checks that the draw is self-consistent and within the bounds of
// Draw's doc comment: n within [2, des.MaxNodes]; a latency model name
// that LatencyModelByName accepts and a scenario name that Scenario
// accepts; a simple, connected, Degree-regular graph on N nodes whose
// edges are dial pairs (lo < hi) within range; N up and N down rates
// within [des.MinRate, des.MaxRate]; latencies (an N x N matrix, for a
// draw read from JSON) within [0, des.MaxLatency]; regions, if present,
// one valid name per node. Each error is one line naming the field, the
// node or pair, and the bound.
func (d *Draw) Validate() error {
	if d.N < 2 || d.N > des.MaxNodes {
		return fmt.Errorf("netmodel: draw: n = %d: want at least 2 and at most %d nodes (des.MaxNodes)", d.N, des.MaxNodes)
	}
	if _, err := latencyModelByName(d.Model, 0, d.Seed); err != nil {
		return fmt.Errorf("netmodel: draw: model: %w", err)
	}
	if _, err := parseScenario(d.Scenario); err != nil {
		return fmt.Errorf("netmodel: draw: scenario: %w", err)
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
	for _, f := range []struct {
		name  string
		rates []int64
	}{{"up_bps", d.Up}, {"down_bps", d.Down}} {
		for i, r := range f.rates {
			if r < des.MinRate || r > des.MaxRate {
				return fmt.Errorf("netmodel: draw: %s[%d] = %d: want a positive rate from %d to %d bit/s (des.MinRate %s to des.MaxRate %s)",
					f.name, i, r, des.MinRate, des.MaxRate, des.FormatRate(des.MinRate), des.FormatRate(des.MaxRate))
			}
		}
	}
	switch m := d.latency.(type) {
	case nil:
		return errors.New("netmodel: draw: no latencies; make a draw with NewDraw or ReadDraw")
	case *LatencyMatrix:
		if err := m.check(d.N); err != nil {
			return fmt.Errorf("netmodel: draw: %w", err)
		}
	}
	if d.Regions != nil {
		if len(d.Regions) != d.N {
			return fmt.Errorf("netmodel: draw: %d regions for %d nodes", len(d.Regions), d.N)
		}
		for i, r := range d.Regions {
			if _, err := ParseRegion(r); err != nil {
				return fmt.Errorf("netmodel: draw: regions[%d]: %w", i, err)
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
// A draw made by NewDraw computes each row as it is written, so the
// output, not the memory, grows with the square of N.
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
	// rows writes n rows, each made by row into the buffer it is given.
	rows := func(name string, n int, row func(buf []byte, i int) []byte, last bool) error {
		if _, err := fmt.Fprintf(bw, " %q: [", name); err != nil {
			return err
		}
		var buf []byte
		for i := range n {
			buf = append(buf[:0], "\n  "...)
			buf = row(buf, i)
			if i < n-1 {
				buf = append(buf, ',')
			}
			if _, err := bw.Write(buf); err != nil {
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
	edge := func(buf []byte, i int) []byte {
		e := d.Edges[i]
		buf = append(buf, '[')
		buf = strconv.AppendInt(buf, int64(e[0]), 10)
		buf = append(buf, ',')
		buf = strconv.AppendInt(buf, int64(e[1]), 10)
		return append(buf, ']')
	}
	latencyRow := func(buf []byte, i int) []byte {
		buf = append(buf, '[')
		for j := range d.N {
			if j > 0 {
				buf = append(buf, ',')
			}
			buf = strconv.AppendInt(buf, int64(d.latency.Latency(i, j)), 10)
		}
		return append(buf, ']')
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
		func() error { return rows("edges", len(d.Edges), edge, false) },
		func() error { return field("up_bps", d.Up, false) },
		func() error { return field("down_bps", d.Down, false) },
		func() error { return rows("latency_ns", d.N, latencyRow, d.Regions == nil) },
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
// seed, edges that are not pairs, a latency matrix that is not N x N, and
// trailing data are errors.
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
	n := *w.N
	if n < 2 || n > des.MaxNodes {
		return nil, fmt.Errorf("netmodel: read draw: n = %d: want at least 2 and at most %d nodes (des.MaxNodes)", n, des.MaxNodes)
	}
	if len(w.Latency) != n {
		return nil, fmt.Errorf("netmodel: read draw: latency_ns has %d rows for %d nodes", len(w.Latency), n)
	}
	for i, row := range w.Latency {
		if len(row) != n {
			return nil, fmt.Errorf("netmodel: read draw: latency_ns row %d has %d entries for %d nodes", i, len(row), n)
		}
	}
	// The rows hold n*n entries read from the input, so the matrix costs
	// what the input did.
	m := &LatencyMatrix{N: n, OneWay: make([]des.Time, 0, n*n)}
	for i, row := range w.Latency {
		m.OneWay = append(m.OneWay, row...)
		w.Latency[i] = nil
	}
	d := &Draw{
		N:        n,
		Seed:     *w.Seed,
		Model:    w.Model,
		Scenario: w.Scenario,
		Degree:   w.Degree,
		Edges:    make([][2]int, len(w.Edges)),
		Up:       w.Up,
		Down:     w.Down,
		Regions:  w.Regions,
		latency:  m,
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

// MarshalJSON is WriteJSON into memory, so that a Draw inside another
// value (a cell's configuration handed to a child process) keeps its
// latencies.
func (d *Draw) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	if err := d.WriteJSON(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// UnmarshalJSON is ReadDraw: it replaces d with the validated draw read
// from b.
func (d *Draw) UnmarshalJSON(b []byte) error {
	r, err := ReadDraw(bytes.NewReader(b))
	if err != nil {
		return err
	}
	*d = *r
	return nil
}
