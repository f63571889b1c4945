package netmodel

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// topoTestCheckSimpleRegular checks g independently of Graph.Validate: every
// edge a dial pair in range, no self-loop, no repeated edge, every degree d,
// adjacency symmetric and equal to the edge list, Dials = higher neighbours.
func topoTestCheckSimpleRegular(t *testing.T, g *Graph, n, d int) {
	t.Helper()
	if g.N != n || g.Degree != d {
		t.Fatalf("graph N=%d Degree=%d, want %d, %d", g.N, g.Degree, n, d)
	}
	if len(g.Edges) != n*d/2 {
		t.Fatalf("%d edges, want n*d/2 = %d", len(g.Edges), n*d/2)
	}
	seen := make(map[[2]int]bool, len(g.Edges))
	deg := make([]int, n)
	for _, e := range g.Edges {
		if e[0] < 0 || e[1] >= n || e[0] >= e[1] {
			t.Fatalf("edge %v is not a dial pair lo < hi in [0, %d)", e, n)
		}
		if seen[e] {
			t.Fatalf("edge %v repeated", e)
		}
		seen[e] = true
		deg[e[0]]++
		deg[e[1]]++
	}
	if !slices.IsSortedFunc(g.Edges, topoCompareEdges) {
		t.Fatal("edges not sorted")
	}
	dials := 0
	for i := range n {
		if deg[i] != d {
			t.Fatalf("node %d has degree %d, want %d", i, deg[i], d)
		}
		nb := g.Neighbors(i)
		if len(nb) != d || !slices.IsSorted(nb) {
			t.Fatalf("node %d neighbours %v: want %d ascending", i, nb, d)
		}
		for _, j := range nb {
			if !seen[[2]int{min(i, j), max(i, j)}] {
				t.Fatalf("neighbour %d of %d has no edge", j, i)
			}
		}
		for _, j := range g.Dials(i) {
			if j <= i {
				t.Fatalf("node %d dials %d: the lower index must dial", i, j)
			}
		}
		dials += len(g.Dials(i))
	}
	if dials != len(g.Edges) {
		t.Fatalf("%d dials for %d edges: every edge must be dialled exactly once", dials, len(g.Edges))
	}
	if !g.IsConnected() {
		t.Fatal("graph not connected")
	}
	if err := g.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
}

func TestRegularGraphIsSimpleRegularConnected(t *testing.T) {
	cases := []struct {
		n, d int
		seed uint64
	}{
		{2, 1, 1},     // the only 1-regular connected graph
		{4, 3, 1},     // complete: no swap is possible
		{6, 4, 3},     // dense, few swaps possible
		{10, 3, 5},    // odd degree: circulant with antipodes
		{11, 4, 7},    // odd n, even degree
		{50, 2, 9},    // a single cycle after connectivity rounds
		{100, 7, 11},  // odd degree
		{500, 70, 7},  // the study's degree
		{1000, 70, 8}, // the study's network-size sweep
	}
	for _, c := range cases {
		g, err := RegularGraph(c.n, c.d, c.seed)
		if err != nil {
			t.Fatalf("RegularGraph(%d, %d, %d): %v", c.n, c.d, c.seed, err)
		}
		topoTestCheckSimpleRegular(t, g, c.n, c.d)
	}
}

func TestRegularGraphDeterministicInSeed(t *testing.T) {
	a, err := RegularGraph(200, 10, 7)
	if err != nil {
		t.Fatal(err)
	}
	b, err := RegularGraph(200, 10, 7)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Edges, b.Edges) {
		t.Fatal("same seed gave different edges")
	}
	for seed := uint64(8); seed < 12; seed++ {
		c, err := RegularGraph(200, 10, seed)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Equal(a.Edges, c.Edges) {
			t.Fatalf("seeds 7 and %d gave the same edges", seed)
		}
	}
}

// The swaps must move the graph far from the circulant start: in a uniform
// random d-regular graph a given pair is an edge with probability d/(n-1),
// so about that fraction of the circulant's edges survives.
func TestRegularGraphMixesAwayFromCirculant(t *testing.T) {
	const n, d = 500, 70
	g, err := RegularGraph(n, d, 7)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := topoCirculant(n, d)
	circ := make(map[[2]int]bool, len(lo))
	for k := range lo {
		circ[[2]int{int(lo[k]), int(hi[k])}] = true
	}
	kept := 0
	for _, e := range g.Edges {
		if circ[e] {
			kept++
		}
	}
	frac := float64(kept) / float64(len(g.Edges))
	want := float64(d) / float64(n-1)
	t.Logf("circulant edges kept: %.4f (random graph expectation %.4f)", frac, want)
	if frac > 1.5*want {
		t.Fatalf("%.4f of the circulant edges survive the swaps, a random graph keeps about %.4f", frac, want)
	}
	// Local structure: in a circulant graph of degree 70 two adjacent nodes
	// share most of their neighbours; in a random one about d^2/n.
	common := 0
	for _, e := range g.Edges[:200] {
		a, b := g.Neighbors(e[0]), g.Neighbors(e[1])
		for _, x := range a {
			if _, ok := slices.BinarySearch(b, x); ok {
				common++
			}
		}
	}
	meanCommon := float64(common) / 200
	t.Logf("mean common neighbours of adjacent nodes: %.2f (random graph about %.2f)", meanCommon, float64(d*d)/float64(n))
	if meanCommon > 2*float64(d*d)/float64(n) {
		t.Fatalf("adjacent nodes share %.1f neighbours on average: the graph is not mixed", meanCommon)
	}
}

func TestRegularGraphRejectsImpossibleParameters(t *testing.T) {
	cases := []struct {
		n, d int
		want string
	}{
		{1, 1, "at least 2 nodes"},
		{0, 3, "at least 2 nodes"},
		{10, 0, "degree >= 1"},
		{10, -2, "degree >= 1"},
		{5, 5, "at most n-1"},
		{5, 7, "at most n-1"},
		{5, 3, "odd"},
		{71, 69, "odd"},
		{10, 1, "perfect matching"},
	}
	for _, c := range cases {
		g, err := RegularGraph(c.n, c.d, 1)
		if err == nil {
			t.Fatalf("RegularGraph(%d, %d): got a graph with %d edges, want an error", c.n, c.d, len(g.Edges))
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Fatalf("RegularGraph(%d, %d): error %q does not mention %q", c.n, c.d, err, c.want)
		}
	}
}

func TestCirculantIsRegular(t *testing.T) {
	for _, c := range [][2]int{{10, 3}, {10, 9}, {11, 10}, {12, 5}, {7, 2}, {2, 1}} {
		n, d := c[0], c[1]
		lo, hi := topoCirculant(n, d)
		g, err := GraphFromEdges(n, topoTestPairs(lo, hi))
		if err != nil {
			t.Fatalf("circulant(%d, %d): %v", n, d, err)
		}
		if g.Degree != d || !g.IsConnected() {
			t.Fatalf("circulant(%d, %d): degree %d, connected %v", n, d, g.Degree, g.IsConnected())
		}
	}
}

func topoTestPairs(lo, hi []int32) [][2]int {
	out := make([][2]int, len(lo))
	for k := range lo {
		out[k] = [2]int{int(lo[k]), int(hi[k])}
	}
	return out
}

func TestGraphFromEdges(t *testing.T) {
	g, err := GraphFromEdges(4, [][2]int{{1, 0}, {2, 1}, {3, 2}, {0, 3}})
	if err != nil {
		t.Fatal(err)
	}
	if want := [][2]int{{0, 1}, {0, 3}, {1, 2}, {2, 3}}; !slices.Equal(g.Edges, want) {
		t.Fatalf("edges %v, want %v", g.Edges, want)
	}
	if g.Degree != 2 || !g.IsConnected() {
		t.Fatalf("4-cycle: degree %d connected %v", g.Degree, g.IsConnected())
	}
	if got := g.Dials(0); !slices.Equal(got, []int{1, 3}) {
		t.Fatalf("Dials(0) = %v, want [1 3]", got)
	}
	if got := g.Dials(3); len(got) != 0 {
		t.Fatalf("Dials(3) = %v, want none", got)
	}
	// Irregular and disconnected.
	g, err = GraphFromEdges(5, [][2]int{{0, 1}, {1, 2}, {3, 4}})
	if err != nil {
		t.Fatal(err)
	}
	if g.Degree != -1 || g.IsConnected() {
		t.Fatalf("path+edge: degree %d connected %v, want -1 false", g.Degree, g.IsConnected())
	}
	if err := g.Validate(); err == nil {
		t.Fatal("Validate accepted an irregular disconnected graph")
	}
	for _, bad := range []struct {
		edges [][2]int
		want  string
	}{
		{[][2]int{{0, 4}}, "outside"},
		{[][2]int{{-1, 2}}, "outside"},
		{[][2]int{{2, 2}}, "self-loop"},
		{[][2]int{{0, 1}, {1, 0}}, "more than once"},
	} {
		if _, err := GraphFromEdges(4, bad.edges); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Fatalf("GraphFromEdges(%v): error %v, want one mentioning %q", bad.edges, err, bad.want)
		}
	}
}

// The edge set against a Go map under random adds and removes, which
// exercises backward-shift deletion across wrapped probe runs.
func TestTopoEdgeSetMatchesMap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	s := newTopoEdgeSet(64) // 256 slots: long probe runs at up to ~200 keys
	ref := map[uint64]bool{}
	for step := range 200000 {
		k := topoKey(int32(r.IntN(20)), int32(20+r.IntN(12)))
		if ref[k] != s.has(k) {
			t.Fatalf("step %d: key %x: set says %v, map %v", step, k, s.has(k), ref[k])
		}
		if ref[k] {
			s.remove(k)
			delete(ref, k)
		} else if len(ref) < 200 {
			s.add(k)
			ref[k] = true
		}
	}
	for k := range ref {
		if !s.has(k) {
			t.Fatalf("key %x lost", k)
		}
	}
}

func TestTopoBoundedRangeAndUniformity(t *testing.T) {
	src := rand.NewPCG(3, 4)
	const m, draws = 7, 700000
	var counts [m]int
	for range draws {
		v := topoBounded(src, m)
		if v >= m {
			t.Fatalf("topoBounded(%d) = %d", m, v)
		}
		counts[v]++
	}
	// Each count is binomial(draws, 1/7): sd about 293; allow 5 sd.
	for v, c := range counts {
		if c < draws/m-1500 || c > draws/m+1500 {
			t.Fatalf("value %d drawn %d times of %d, want about %d", v, c, draws, draws/m)
		}
	}
}

// BenchmarkRegularGraph2000x70 is the largest graph of the study's
// network-size sweep: 70 000 edges, 3.5 M successful swaps.
func BenchmarkRegularGraph2000x70(b *testing.B) {
	for i := 0; b.Loop(); i++ {
		if _, err := RegularGraph(2000, 70, uint64(i)); err != nil {
			b.Fatal(err)
		}
	}
}
