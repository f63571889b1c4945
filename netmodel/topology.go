package netmodel

// Dial graphs.
//
// The study's cells run on a connected random d-regular graph (degree 70 in
// every cell of the report) in which the lower index of every edge dials the
// higher one (docs/references.md, "A cell" and "Graph"). The study builds it
// by starting from a circulant graph of the target degree and applying
// 50 x |E| double-edge swaps that keep the graph simple, driven by a PCG
// generator seeded from the cell seed. RegularGraph follows that recipe
// with its own random stream: it is deterministic in the seed but not
// bit-identical to the study's draw (docs/references.md, "Graph"). To
// replay a cell on the study's exact graph, import its exported draw
// (ReadDraw) instead.

import (
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
)

// SwapsPerEdge is the number of successful double-edge swaps RegularGraph
// applies per edge of the starting circulant graph (docs/references.md,
// "Graph": 50 x |E|).
const SwapsPerEdge = 50

// topoAttemptsPerSwap bounds the swap attempts at this many times the target
// number of successful swaps. On sparse graphs almost every attempt succeeds;
// on dense graphs (degree close to n) most attempts are rejected because the
// new edges already exist, and the bound keeps the mixing phase finite.
const topoAttemptsPerSwap = 8

// topoMaxConnectRounds bounds the extra mixing rounds spent looking for a
// connected graph (see RegularGraph).
const topoMaxConnectRounds = 10000

// topoStreamTag is the second PCG seed word, so the graph stream differs from
// any other PCG stream seeded with the bare cell seed ("topo" in ASCII).
const topoStreamTag uint64 = 0x746f706f

// Graph is an undirected simple graph on nodes 0..N-1, stored as dial pairs.
//
// Every edge is a pair (lo, hi) with lo < hi, and lo is the node that dials
// (docs/references.md, "Graph": of each edge, the node with the lower index
// dials). Edges is sorted lexicographically. Graphs built by RegularGraph
// are Degree-regular and connected; a Graph built by GraphFromEdges has
// Degree set to the common degree when every node has the same degree and
// to -1 otherwise.
type Graph struct {
	N      int
	Degree int
	Edges  [][2]int

	adj [][]int // adj[i]: the neighbours of i, ascending
}

// RegularGraph returns a random connected degree-regular simple graph on n
// nodes, deterministic in seed.
//
// Construction (docs/references.md, "Graph"):
//
//  1. The circulant graph of the given degree: node i is linked to i±1, ...,
//     i±degree/2 (mod n); when degree is odd, n is necessarily even and node
//     i is also linked to its antipode i+n/2. It is degree-regular, simple
//     and connected.
//  2. SwapsPerEdge x |E| successful double-edge swaps: pick two edges (a,b)
//     and (c,d) uniformly at random and replace them with (a,c),(b,d) or
//     (a,d),(b,c) (one of the two chosen at random), rejecting the attempt
//     when the four endpoints are not distinct or a new edge already exists.
//     Swaps keep every degree. Attempts are capped at topoAttemptsPerSwap
//     times the target, which only binds on dense graphs where few swaps are
//     possible (the complete graph admits none).
//  3. If the result is disconnected, mixing continues on the same stream in
//     rounds of |E| more successful swaps until it is connected, for at most
//     topoMaxConnectRounds rounds. For degree >= 3 a random regular graph is
//     connected with high probability, so this almost never runs; for
//     degree 2 (a set of cycles) it runs until the cycles merge into one.
//
// The random stream is math/rand/v2's PCG seeded with (seed, topoStreamTag),
// consumed only through PCG.Uint64, so it does not depend on the
// implementation of rand.Rand's helpers.
//
// Impossible parameters are reported as errors: n < 2, degree < 1,
// degree >= n, n*degree odd, and degree 1 with n > 2 (a perfect matching is
// never connected).
func RegularGraph(n, degree int, seed uint64) (*Graph, error) {
	if err := topoCheckParams(n, degree); err != nil {
		return nil, fmt.Errorf("netmodel: random %d-regular graph on %d nodes: %w", degree, n, err)
	}
	lo, hi := topoCirculant(n, degree)
	m := len(lo)
	set := newTopoEdgeSet(m)
	for k := range m {
		set.add(topoKey(lo[k], hi[k]))
	}
	src := rand.NewPCG(seed, topoStreamTag)
	topoMix(src, set, lo, hi, SwapsPerEdge*m)

	g := topoBuild(n, lo, hi)
	for round := 0; !g.IsConnected(); round++ {
		if round == topoMaxConnectRounds {
			return nil, fmt.Errorf("netmodel: random %d-regular graph on %d nodes, seed %d: still disconnected after %d extra mixing rounds", degree, n, seed, topoMaxConnectRounds)
		}
		topoMix(src, set, lo, hi, m)
		g = topoBuild(n, lo, hi)
	}
	g.Degree = degree
	return g, nil
}

// topoCheckParams reports why a connected degree-regular simple graph on n
// nodes cannot exist, naming the fix.
func topoCheckParams(n, degree int) error {
	switch {
	case n < 2:
		return fmt.Errorf("n = %d: a graph with edges needs at least 2 nodes; use n >= 2", n)
	case degree < 1:
		return fmt.Errorf("degree = %d: every node needs at least one peer; use degree >= 1", degree)
	case degree >= n:
		return fmt.Errorf("degree = %d >= n = %d: a simple graph has at most n-1 = %d peers per node; lower the degree or add nodes", degree, n, n-1)
	case (n*degree)%2 != 0:
		return fmt.Errorf("n*degree = %d*%d is odd: a regular graph has n*degree/2 edges, so an odd degree needs an even node count; change n or the degree by one", n, degree)
	case degree == 1 && n > 2:
		return fmt.Errorf("degree 1 on %d nodes is a perfect matching, which is never connected; use degree >= 2 (or n = 2)", n)
	}
	return nil
}

// topoCirculant returns the edges of the circulant degree-regular graph on n
// nodes as parallel lo/hi slices (lo < hi). The parameters must have passed
// topoCheckParams.
func topoCirculant(n, degree int) (lo, hi []int32) {
	m := n * degree / 2
	lo = make([]int32, 0, m)
	hi = make([]int32, 0, m)
	push := func(a, b int) {
		if a > b {
			a, b = b, a
		}
		lo = append(lo, int32(a))
		hi = append(hi, int32(b))
	}
	for i := range n {
		for k := 1; k <= degree/2; k++ {
			push(i, (i+k)%n)
		}
	}
	if degree%2 == 1 { // n is even here
		for i := range n / 2 {
			push(i, i+n/2)
		}
	}
	return lo, hi
}

// topoMix applies up to target successful double-edge swaps to the edge list
// lo/hi (kept in step with set), drawing from src. See RegularGraph.
func topoMix(src *rand.PCG, set *topoEdgeSet, lo, hi []int32, target int) {
	m := uint64(len(lo))
	if m < 2 {
		return
	}
	maxAttempts := topoAttemptsPerSwap * target
	done := 0
	for attempt := 0; attempt < maxAttempts && done < target; attempt++ {
		i := topoBounded(src, m)
		j := topoBounded(src, m)
		if i == j {
			continue
		}
		a, b := lo[i], hi[i]
		c, d := lo[j], hi[j]
		if a == c || a == d || b == c || b == d {
			continue
		}
		if src.Uint64()&1 == 1 {
			c, d = d, c
		}
		// New edges: (a,c) and (b,d).
		k1, k2 := topoKey(a, c), topoKey(b, d)
		if set.has(k1) || set.has(k2) {
			continue
		}
		set.remove(topoKey(lo[i], hi[i]))
		set.remove(topoKey(lo[j], hi[j]))
		set.add(k1)
		set.add(k2)
		lo[i], hi[i] = min(a, c), max(a, c)
		lo[j], hi[j] = min(b, d), max(b, d)
		done++
	}
}

// topoBounded returns a uniform value in [0, m) (m > 0) by Lemire's
// multiply-and-reject method on src's 64-bit output.
func topoBounded(src *rand.PCG, m uint64) uint64 {
	hi, low := bits.Mul64(src.Uint64(), m)
	if low < m {
		threshold := -m % m
		for low < threshold {
			hi, low = bits.Mul64(src.Uint64(), m)
		}
	}
	return hi
}

// topoBuild makes a Graph (Degree unset) from a valid simple edge list.
func topoBuild(n int, lo, hi []int32) *Graph {
	edges := make([][2]int, len(lo))
	for k := range lo {
		edges[k] = [2]int{int(lo[k]), int(hi[k])}
	}
	slices.SortFunc(edges, topoCompareEdges)
	return &Graph{N: n, Edges: edges, adj: topoAdjacency(n, edges)}
}

func topoCompareEdges(x, y [2]int) int {
	if x[0] != y[0] {
		return x[0] - y[0]
	}
	return x[1] - y[1]
}

// topoAdjacency builds sorted adjacency lists from sorted (lo, hi) edges.
func topoAdjacency(n int, edges [][2]int) [][]int {
	deg := make([]int, n)
	for _, e := range edges {
		deg[e[0]]++
		deg[e[1]]++
	}
	backing := make([]int, 2*len(edges))
	adj := make([][]int, n)
	off := 0
	for i := range n {
		adj[i] = backing[off : off : off+deg[i]]
		off += deg[i]
	}
	for _, e := range edges {
		adj[e[0]] = append(adj[e[0]], e[1])
		adj[e[1]] = append(adj[e[1]], e[0])
	}
	for i := range adj {
		slices.Sort(adj[i])
	}
	return adj
}

// GraphFromEdges validates an edge list on nodes 0..n-1 and returns it as a
// Graph. Each edge may be given in either order; it is stored as (lo, hi).
// Self-loops, repeated edges and endpoints outside [0, n) are errors. Degree
// is the common degree if the graph is regular and -1 otherwise; the graph
// need not be connected (see IsConnected).
func GraphFromEdges(n int, edges [][2]int) (*Graph, error) {
	if n < 1 {
		return nil, fmt.Errorf("netmodel: graph from edges: n = %d, need at least one node", n)
	}
	out := make([][2]int, len(edges))
	for k, e := range edges {
		a, b := e[0], e[1]
		if a < 0 || a >= n || b < 0 || b >= n {
			return nil, fmt.Errorf("netmodel: graph from edges: edge %d (%d, %d) has an endpoint outside [0, %d)", k, a, b, n)
		}
		if a == b {
			return nil, fmt.Errorf("netmodel: graph from edges: edge %d (%d, %d) is a self-loop", k, a, b)
		}
		out[k] = [2]int{min(a, b), max(a, b)}
	}
	slices.SortFunc(out, topoCompareEdges)
	for k := 1; k < len(out); k++ {
		if out[k] == out[k-1] {
			return nil, fmt.Errorf("netmodel: graph from edges: edge (%d, %d) appears more than once", out[k][0], out[k][1])
		}
	}
	g := &Graph{N: n, Edges: out, adj: topoAdjacency(n, out)}
	g.Degree = len(g.adj[0])
	for i := 1; i < n; i++ {
		if len(g.adj[i]) != g.Degree {
			g.Degree = -1
			break
		}
	}
	return g, nil
}

// Neighbors returns the neighbours of node i in ascending order. The slice
// belongs to the graph and must not be modified.
func (g *Graph) Neighbors(i int) []int { return g.adj[i] }

// Dials returns the peers node i dials: its neighbours with a higher index,
// ascending. The slice belongs to the graph and must not be modified.
func (g *Graph) Dials(i int) []int {
	nb := g.adj[i]
	k, _ := slices.BinarySearch(nb, i)
	return nb[k:]
}

// IsConnected reports whether every node is reachable from node 0.
func (g *Graph) IsConnected() bool {
	if g.N <= 1 {
		return true
	}
	seen := make([]bool, g.N)
	stack := []int{0}
	seen[0] = true
	reached := 1
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, w := range g.adj[v] {
			if !seen[w] {
				seen[w] = true
				reached++
				stack = append(stack, w)
			}
		}
	}
	return reached == g.N
}

// Validate checks that g is a simple, connected, degree-regular graph whose
// Edges, Degree and adjacency agree; it is what RegularGraph guarantees.
func (g *Graph) Validate() error {
	if g.N < 2 {
		return fmt.Errorf("netmodel: graph has %d nodes, need at least 2", g.N)
	}
	if len(g.adj) != g.N {
		return errors.New("netmodel: graph has no adjacency lists; build it with RegularGraph or GraphFromEdges")
	}
	if want := g.N * g.Degree / 2; g.Degree < 1 || len(g.Edges) != want {
		return fmt.Errorf("netmodel: graph has %d edges, a %d-regular graph on %d nodes has %d", len(g.Edges), g.Degree, g.N, want)
	}
	for k, e := range g.Edges {
		if e[0] < 0 || e[1] >= g.N || e[0] >= e[1] {
			return fmt.Errorf("netmodel: graph edge %d (%d, %d) is not a dial pair lo < hi within [0, %d)", k, e[0], e[1], g.N)
		}
		if k > 0 && topoCompareEdges(g.Edges[k-1], e) >= 0 {
			return fmt.Errorf("netmodel: graph edges not sorted or repeated at %d: (%d, %d) after (%d, %d)", k, e[0], e[1], g.Edges[k-1][0], g.Edges[k-1][1])
		}
	}
	for i, nb := range g.adj {
		if len(nb) != g.Degree {
			return fmt.Errorf("netmodel: graph node %d has degree %d, want %d", i, len(nb), g.Degree)
		}
	}
	if !g.IsConnected() {
		return errors.New("netmodel: graph is not connected")
	}
	return nil
}

// topoKey packs an unordered pair into one uint64, smaller index high. Valid
// pairs (a != b) never pack to 0, which topoEdgeSet uses as "empty".
func topoKey(a, b int32) uint64 {
	if a > b {
		a, b = b, a
	}
	return uint64(uint32(a))<<32 | uint64(uint32(b))
}

// topoEdgeSet is an open-addressing hash set of packed edge keys with linear
// probing and backward-shift deletion (no tombstones). It is the simplicity
// check of the swap loop: a Go map costs several times more per operation,
// and the loop performs millions of them at n = 2000, degree 70.
type topoEdgeSet struct {
	slots []uint64
	mask  uint64
	shift uint
}

func newTopoEdgeSet(m int) *topoEdgeSet {
	size := 16
	for size < 4*m { // load factor at most 1/4
		size <<= 1
	}
	return &topoEdgeSet{
		slots: make([]uint64, size),
		mask:  uint64(size - 1),
		shift: uint(64 - bits.TrailingZeros(uint(size))),
	}
}

func (s *topoEdgeSet) home(k uint64) uint64 { return (k * 0x9e3779b97f4a7c15) >> s.shift }

func (s *topoEdgeSet) has(k uint64) bool {
	for i := s.home(k); ; i = (i + 1) & s.mask {
		switch s.slots[i] {
		case k:
			return true
		case 0:
			return false
		}
	}
}

// add inserts k; k must not be present.
func (s *topoEdgeSet) add(k uint64) {
	i := s.home(k)
	for s.slots[i] != 0 {
		i = (i + 1) & s.mask
	}
	s.slots[i] = k
}

// remove deletes k; k must be present.
func (s *topoEdgeSet) remove(k uint64) {
	i := s.home(k)
	for s.slots[i] != k {
		i = (i + 1) & s.mask
	}
	// Backward shift: move later members of the probe run into the hole when
	// their home slot does not lie cyclically in (hole, j].
	hole := i
	for j := (hole + 1) & s.mask; s.slots[j] != 0; j = (j + 1) & s.mask {
		h := s.home(s.slots[j])
		if (j-h)&s.mask >= (j-hole)&s.mask {
			s.slots[hole] = s.slots[j]
			hole = j
		}
	}
	s.slots[hole] = 0
}
