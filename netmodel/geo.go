package netmodel

// One-way latency models.
//
// The study gives every ordered pair of nodes a fixed one-way propagation
// latency (the report, section 2, "Shared assumptions": "fixed one-way
// latency per pair"; no routers, no shared paths). Its cells use the
// synthetic geographic model `geo` (docs/references.md, "Geographic latency
// model"), reproduced here by GeoLatency: the regions, weights, base
// matrix, jitter range and the 1 ms self latency are the study's; the hash
// functions are ours, so a GeoLatency draw for a seed is statistically the
// study's model but not bit-identical to the study's draw for the same
// seed. Replay an exported draw (ReadDraw) to run on the study's exact
// latencies.

import (
	"fmt"
	"math"
	"math/bits"
	"strings"

	"github.com/uplinksim/uplink/des"
)

// LatencyModel gives the one-way propagation latency from one node to
// another, by node index. Implementations are deterministic: the same pair
// always gets the same latency.
type LatencyModel interface {
	Latency(from, to int) des.Time
}

// Region is a geographic region of the geo latency model.
type Region uint8

// The regions of the geo model, in the order of the table of
// docs/references.md, "Geographic latency model".
const (
	RegionEU Region = iota
	RegionNAEast
	RegionNAWest
	RegionAsia
	RegionRest
	geoRegionCount
)

// geoRegionNames are the study's region names, indexed by Region.
var geoRegionNames = [geoRegionCount]string{"eu", "na-east", "na-west", "asia", "rest"}

// geoRegionWeights are the percentages of nodes drawn into each region
// (docs/references.md, "Geographic latency model": eu 35, na-east 20,
// na-west 10, asia 25, rest 10). Read only; exported through Region.Weight.
var geoRegionWeights = [geoRegionCount]int{35, 20, 10, 25, 10}

// geoBaseMs is the base one-way latency between regions in milliseconds,
// rows and columns in Region order (docs/references.md, "Geographic latency
// model"). Read only; exported through GeoBaseLatency. The study
// calibrated the model to a mean one-way latency of about 62 ms (a RIPE
// Atlas figure of an earlier study), but the matrix and weights as
// published give an expectation of about 55.6 ms over pairs of distinct
// nodes (GeoExpectedMeanMs), and the study measured about 56 ms at
// N = 1 000.
var geoBaseMs = [geoRegionCount][geoRegionCount]float64{
	{8, 40, 70, 90, 110},
	{40, 8, 30, 80, 60},
	{70, 30, 8, 60, 70},
	{90, 80, 60, 10, 70},
	{110, 60, 70, 70, 15},
}

// Jitter range of the geo model: a pair's latency is its base latency times
// GeoJitterMin + GeoJitterSpan*u, u uniform in [0, 1), so the factor lies in
// [0.8, 1.2) with mean 1 (docs/references.md, "Geographic latency model").
const (
	GeoJitterMin  = 0.8
	GeoJitterSpan = 0.4
)

// GeoSelfLatency is the geo model's latency from a node to itself.
const GeoSelfLatency = des.Millisecond

// Hash domain tags, so the region and jitter streams of one seed are
// unrelated to each other and to the uniform model's stream.
const (
	geoTagRegion  uint64 = 0x67656f2d72656769 // "geo-regi"
	geoTagJitter  uint64 = 0x67656f2d6a697474 // "geo-jitt"
	geoTagUniform uint64 = 0x756e69666f726d21 // "uniform!"
)

// String returns the study's name of the region.
func (r Region) String() string {
	if r < geoRegionCount {
		return geoRegionNames[r]
	}
	return fmt.Sprintf("Region(%d)", uint8(r))
}

// Weight returns the percentage of nodes the geo model draws into r, or 0
// for a value that is not a region.
func (r Region) Weight() int {
	if r < geoRegionCount {
		return geoRegionWeights[r]
	}
	return 0
}

// GeoBaseLatency returns the geo model's base one-way latency between
// regions a and b (docs/references.md, "Geographic latency model"), before
// jitter. It panics on a value that is not a region.
func GeoBaseLatency(a, b Region) des.Time { return geoMs(geoBaseMs[a][b]) }

// ParseRegion returns the region with the study's name s.
func ParseRegion(s string) (Region, error) {
	for r, name := range geoRegionNames {
		if s == name {
			return Region(r), nil
		}
	}
	return 0, fmt.Errorf("netmodel: unknown region %q (valid: %s)", s, strings.Join(geoRegionNames[:], ", "))
}

// GeoRegions returns every region in Region order.
func GeoRegions() []Region {
	out := make([]Region, geoRegionCount)
	for r := range out {
		out[r] = Region(r)
	}
	return out
}

// geoMix64 is the splitmix64 output function (Steele, Lea and Flood, 2014):
// a bijective avalanche mix of a 64-bit word, applied after adding the
// splitmix64 increment.
func geoMix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// geoHash hashes a tagged tuple of words by chaining geoMix64.
func geoHash(tag, seed uint64, words ...uint64) uint64 {
	h := geoMix64(seed ^ tag)
	for _, w := range words {
		h = geoMix64(h ^ w)
	}
	return h
}

// geoUnit maps a hash to a float64 uniform in [0, 1) (53 bits).
func geoUnit(h uint64) float64 { return float64(h>>11) * 0x1p-53 }

// GeoDrawRegion returns the region the geo model draws for node i under
// seed: a hash of (seed, i) mapped onto [0, 100) and cut at the cumulative
// region weights.
func GeoDrawRegion(seed uint64, i int) Region {
	pct, _ := bits.Mul64(geoHash(geoTagRegion, seed, uint64(i)), 100) // uniform in [0, 100)
	acc := uint64(0)
	for r, w := range geoRegionWeights {
		acc += uint64(w)
		if pct < acc {
			return Region(r)
		}
	}
	return RegionRest // unreachable: the weights sum to 100
}

// GeoJitter returns the geo model's jitter factor for the unordered pair
// {i, j}: 0.8 + 0.4 u with u uniform in [0, 1) from a hash of (seed, lo, hi).
func GeoJitter(seed uint64, i, j int) float64 {
	lo, hi := min(i, j), max(i, j)
	return GeoJitterMin + GeoJitterSpan*geoUnit(geoHash(geoTagJitter, seed, uint64(lo), uint64(hi)))
}

// GeoLatency is the study's synthetic geographic latency model `geo`.
//
// Node i lies in Regions[i]; a node beyond len(Regions) gets the region
// GeoDrawRegion(Seed, i), so the zero-length Regions of GeoLatency{Seed: s}
// is the model for any number of nodes, and NewGeoLatency only caches the
// draw. Regions may also be set explicitly, e.g. from an imported draw.
//
// Latency(from, to) is GeoSelfLatency when from == to, and otherwise
// GeoBaseLatency between the two regions times GeoJitter(Seed, from, to),
// rounded to the nanosecond. It is symmetric.
type GeoLatency struct {
	Seed    uint64
	Regions []Region
}

// NewGeoLatency draws the regions of n nodes for seed.
func NewGeoLatency(n int, seed uint64) *GeoLatency {
	g := &GeoLatency{Seed: seed, Regions: make([]Region, max(n, 0))}
	for i := range g.Regions {
		g.Regions[i] = GeoDrawRegion(seed, i)
	}
	return g
}

// Region returns node i's region.
func (g *GeoLatency) Region(i int) Region {
	if i >= 0 && i < len(g.Regions) {
		return g.Regions[i]
	}
	return GeoDrawRegion(g.Seed, i)
}

// Latency returns the one-way latency from node from to node to.
func (g *GeoLatency) Latency(from, to int) des.Time {
	if from == to {
		return GeoSelfLatency
	}
	base := geoBaseMs[g.Region(from)][g.Region(to)]
	return geoMs(base * GeoJitter(g.Seed, from, to))
}

// geoMs converts milliseconds to virtual time, rounded to the nanosecond.
func geoMs(ms float64) des.Time { return des.Time(math.Round(ms * float64(des.Millisecond))) }

// GeoExpectedMeanMs is the expected one-way latency in ms between two
// distinct nodes of the geo model: the sum over region pairs of
// w_a w_b base_ab (weights as fractions) times the mean jitter factor, 1.
// It is about 55.6 ms; a draw's mean over its pairs deviates from it by the
// sampling noise of the region counts (about 0.6 ms standard deviation at
// N = 1 000).
func GeoExpectedMeanMs() float64 {
	sum := 0.0
	for a, wa := range geoRegionWeights {
		for b, wb := range geoRegionWeights {
			sum += float64(wa) / 100 * float64(wb) / 100 * geoBaseMs[a][b]
		}
	}
	return sum * (GeoJitterMin + GeoJitterSpan/2)
}

// FixedLatency is a model in which every pair, a node and itself included,
// has the same one-way latency; FixedLatency(50 * des.Millisecond) is a
// LatencyModel.
type FixedLatency des.Time

// Latency returns the fixed latency.
func (f FixedLatency) Latency(from, to int) des.Time { return des.Time(f) }

// UniformLatency gives each unordered pair {i, j} (a node and itself
// included) a latency drawn uniformly from [Lo, Hi] by a hash of
// (Seed, lo, hi), so it is symmetric and deterministic. Build it with
// NewUniformLatency, which checks the bounds.
type UniformLatency struct {
	Seed   uint64
	Lo, Hi des.Time
}

// NewUniformLatency returns the uniform model on [lo, hi] for seed; it needs
// 0 <= lo <= hi <= des.MaxLatency.
func NewUniformLatency(lo, hi des.Time, seed uint64) (UniformLatency, error) {
	u, err := newUniformLatency(lo, hi, seed)
	if err != nil {
		return UniformLatency{}, fmt.Errorf("netmodel: %w", err)
	}
	return u, nil
}

// newUniformLatency is NewUniformLatency with its error unprefixed.
func newUniformLatency(lo, hi des.Time, seed uint64) (UniformLatency, error) {
	if lo < 0 || hi < lo || hi > des.MaxLatency {
		return UniformLatency{}, fmt.Errorf("uniform latency [%v, %v]: need 0 <= lo <= hi <= %v (des.MaxLatency)", lo, hi, des.MaxLatency)
	}
	return UniformLatency{Seed: seed, Lo: lo, Hi: hi}, nil
}

// Latency returns the pair's latency in [Lo, Hi].
func (u UniformLatency) Latency(from, to int) des.Time {
	lo, hi := min(from, to), max(from, to)
	span := uint64(u.Hi-u.Lo) + 1 // Hi-Lo+1 values, at most 2^63 since 0 <= Lo <= Hi
	off, _ := bits.Mul64(geoHash(geoTagUniform, u.Seed, uint64(lo), uint64(hi)), span)
	return u.Lo + des.Time(off)
}

// LatencyMatrix is an explicit N x N one-way latency matrix: OneWay holds
// row from, column to, at index from*N+to. It is a LatencyModel, and the form
// in which a draw read from JSON (ReadDraw) holds its latencies.
type LatencyMatrix struct {
	N      int
	OneWay []des.Time
}

// Matrix evaluates model on every ordered pair of n nodes.
func Matrix(model LatencyModel, n int) *LatencyMatrix {
	n = max(n, 0)
	m := &LatencyMatrix{N: n, OneWay: make([]des.Time, n*n)}
	for i := range n {
		row := m.OneWay[i*n : (i+1)*n]
		for j := range row {
			row[j] = model.Latency(i, j)
		}
	}
	return m
}

// check reports the first entry of the matrix outside [0, des.MaxLatency],
// naming it as the latency_ns field of a draw, or a matrix that is not
// n x n.
func (m *LatencyMatrix) check(n int) error {
	k := len(m.OneWay)
	if n < 0 || m.N != n || (n == 0 && k != 0) || (n > 0 && (k%n != 0 || k/n != n)) { // k/n: n*n may overflow
		return fmt.Errorf("latency_ns: a matrix of %d entries for %d nodes, want %d x %d", len(m.OneWay), n, n, n)
	}
	for k, v := range m.OneWay {
		if v < 0 || v > des.MaxLatency {
			what := "above the largest latency"
			if v < 0 {
				what = "negative"
			}
			return fmt.Errorf("latency_ns[%d][%d] = %d ns is %s: want 0 to %d ns (des.MaxLatency, %v)", k/n, k%n, int64(v), what, int64(des.MaxLatency), des.MaxLatency)
		}
	}
	return nil
}

// Latency returns the entry for (from, to). It panics when either index is
// outside [0, N), like a slice index.
func (m *LatencyMatrix) Latency(from, to int) des.Time {
	if from < 0 || from >= m.N || to < 0 || to >= m.N {
		panic(fmt.Sprintf("netmodel: latency matrix of %d nodes has no pair (%d, %d)", m.N, from, to))
	}
	return m.OneWay[from*m.N+to]
}

// MeanOffDiagonal returns the mean latency over ordered pairs from != to,
// or 0 when there are fewer than two nodes.
func (m *LatencyMatrix) MeanOffDiagonal() des.Time {
	if m.N < 2 {
		return 0
	}
	var sum float64
	for i := range m.N {
		for j, v := range m.OneWay[i*m.N : (i+1)*m.N] {
			if i != j {
				sum += float64(v)
			}
		}
	}
	return des.Time(math.Round(sum / float64(m.N*(m.N-1))))
}

// Latency model names accepted by LatencyModelByName.
const (
	geoModelName     = "geo"
	geoFixedPrefix   = "fixed:"
	geoUniformPrefix = "uniform:"
)

// LatencyModelByName builds a latency model for n nodes from its name:
//
//   - "geo": NewGeoLatency(n, seed);
//   - "fixed:D": FixedLatency(D), D a Go duration such as "50ms";
//   - "uniform:LO,HI": NewUniformLatency(LO, HI, seed), e.g. "uniform:20ms,100ms".
//
// Every latency parameter lies in [0, des.MaxLatency], so no model it
// builds gives a latency outside that range.
func LatencyModelByName(name string, n int, seed uint64) (LatencyModel, error) {
	m, err := latencyModelByName(name, n, seed)
	if err != nil {
		return nil, fmt.Errorf("netmodel: %w", err)
	}
	return m, nil
}

// latencyModelByName is LatencyModelByName with its errors unprefixed.
func latencyModelByName(name string, n int, seed uint64) (LatencyModel, error) {
	switch {
	case name == geoModelName:
		return NewGeoLatency(n, seed), nil
	case strings.HasPrefix(name, geoFixedPrefix):
		d, err := des.ParseDuration(strings.TrimPrefix(name, geoFixedPrefix), 0, des.MaxLatency)
		if err != nil {
			return nil, fmt.Errorf("latency model %q: %w", name, err)
		}
		return FixedLatency(d), nil
	case strings.HasPrefix(name, geoUniformPrefix):
		los, his, ok := strings.Cut(strings.TrimPrefix(name, geoUniformPrefix), ",")
		if !ok {
			return nil, fmt.Errorf("latency model %q: want uniform:LO,HI, e.g. uniform:20ms,100ms", name)
		}
		lo, err := des.ParseDuration(los, 0, des.MaxLatency)
		if err != nil {
			return nil, fmt.Errorf("latency model %q: low bound: %w", name, err)
		}
		hi, err := des.ParseDuration(his, 0, des.MaxLatency)
		if err != nil {
			return nil, fmt.Errorf("latency model %q: high bound: %w", name, err)
		}
		u, err := newUniformLatency(lo, hi, seed)
		if err != nil {
			return nil, fmt.Errorf("latency model %q: %w", name, err)
		}
		return u, nil
	}
	return nil, fmt.Errorf("unknown latency model %q (valid: geo, fixed:D such as fixed:50ms, uniform:LO,HI such as uniform:20ms,100ms, each latency from 0 to %v)", name, des.MaxLatency)
}

// MinLatencyModel is a LatencyModel that knows a lower bound on every
// latency it returns. The network uses it as the lookahead of packets
// leaving an uplink (see des.Sim.SetLookahead); a model without it gets
// lookahead 0, which is always correct, only slower.
type MinLatencyModel interface {
	LatencyModel
	MinLatency() des.Time
}

// MinLatency is the fixed latency.
func (f FixedLatency) MinLatency() des.Time { return des.Time(f) }

// MinLatency is Lo.
func (u UniformLatency) MinLatency() des.Time { return u.Lo }

// MinLatency is the smallest entry of the matrix.
func (m *LatencyMatrix) MinLatency() des.Time {
	if len(m.OneWay) == 0 {
		return 0
	}
	lo := m.OneWay[0]
	for _, v := range m.OneWay {
		lo = min(lo, v)
	}
	return max(lo, 0)
}

// MinLatency is a lower bound on the geo model's latencies: the smaller of
// the self latency and the smallest base latency at the lowest jitter.
func (g *GeoLatency) MinLatency() des.Time {
	lo := math.Inf(1)
	for a := range geoBaseMs {
		for b := range geoBaseMs[a] {
			lo = math.Min(lo, geoBaseMs[a][b])
		}
	}
	return min(GeoSelfLatency, des.Time(math.Floor(lo*GeoJitterMin*float64(des.Millisecond))))
}
