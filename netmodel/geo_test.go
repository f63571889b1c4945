package netmodel

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uplinksim/uplink/des"
)

// The study's seeds (docs/references.md, "A cell": 7 to 16).
var geoTestSeeds = []uint64{7, 8, 9, 10, 11, 12, 13, 14, 15, 16}

// Known answer, by hand from the weights and matrix of docs/references.md,
// "Geographic latency model":
// sum_a w_a sum_b w_b base_ab = 0.35*51.3 + 0.20*44.6 + 0.10*53.3 +
// 0.25*63.0 + 0.10*76.5 = 55.605 ms (E[jitter] = 1).
const geoTestExpectedMeanMs = 55.605

func TestGeoExpectedMeanKnownAnswer(t *testing.T) {
	if got := GeoExpectedMeanMs(); math.Abs(got-geoTestExpectedMeanMs) > 1e-9 {
		t.Fatalf("GeoExpectedMeanMs() = %.6f, want %.3f", got, geoTestExpectedMeanMs)
	}
}

func TestGeoTablesMatchStudy(t *testing.T) {
	names := []string{"eu", "na-east", "na-west", "asia", "rest"}
	weights := []int{35, 20, 10, 25, 10}
	base := [][]des.Time{
		{8, 40, 70, 90, 110},
		{40, 8, 30, 80, 60},
		{70, 30, 8, 60, 70},
		{90, 80, 60, 10, 70},
		{110, 60, 70, 70, 15},
	}
	regions := GeoRegions()
	if len(regions) != len(names) {
		t.Fatalf("%d regions, want %d", len(regions), len(names))
	}
	sum := 0
	for a, r := range regions {
		if r.String() != names[a] || r.Weight() != weights[a] {
			t.Fatalf("region %d = %s weight %d, want %s weight %d", a, r, r.Weight(), names[a], weights[a])
		}
		if p, err := ParseRegion(names[a]); err != nil || p != r {
			t.Fatalf("ParseRegion(%q) = %v, %v", names[a], p, err)
		}
		sum += r.Weight()
		for b, s := range regions {
			if got := GeoBaseLatency(r, s); got != base[a][b]*des.Millisecond {
				t.Fatalf("base %s-%s = %v, want %d ms", r, s, got, base[a][b])
			}
		}
	}
	if sum != 100 {
		t.Fatalf("weights sum to %d", sum)
	}
	if _, err := ParseRegion("mars"); err == nil || !strings.Contains(err.Error(), "na-east") {
		t.Fatalf("ParseRegion(mars): %v, want an error listing the regions", err)
	}
}

// geoTestConditionalMeanMs is the expected mean over ordered pairs i != j
// given the realized regions (jitter averaged out): it isolates the jitter
// from the region sampling noise.
func geoTestConditionalMeanMs(g *GeoLatency, n int) float64 {
	var c [geoRegionCount]float64
	for i := range n {
		c[g.Region(i)]++
	}
	sum := 0.0
	for a := range c {
		for b := range c {
			pairs := c[a] * c[b]
			if a == b {
				pairs -= c[a] // exclude i == j
			}
			sum += pairs * geoBaseMs[a][b]
		}
	}
	return sum / float64(n*(n-1))
}

// geoTestSamplingSDMs is the standard deviation of a draw's mean latency
// around GeoExpectedMeanMs due to the multinomial region counts, to first
// order: the mean is sum_ab f_a f_b base_ab, whose gradient in f_a is
// 2 r_a with r_a = sum_b w_b base_ab, so Var = 4/n (sum w_a r_a^2 - mu^2).
func geoTestSamplingSDMs(n int) float64 {
	mu, m2 := 0.0, 0.0
	for a, wa := range geoRegionWeights {
		r := 0.0
		for b, wb := range geoRegionWeights {
			r += float64(wb) / 100 * geoBaseMs[a][b]
		}
		mu += float64(wa) / 100 * r
		m2 += float64(wa) / 100 * r * r
	}
	return math.Sqrt(4 / float64(n) * (m2 - mu*mu))
}

// The study measured a mean one-way latency of about 56 ms at N = 1 000, an
// independent implementation 55.4 ms.
func TestGeoMeanLatencyN1000(t *testing.T) {
	const n = 1000
	expect := GeoExpectedMeanMs()
	sd := geoTestSamplingSDMs(n)
	t.Logf("analytic expectation %.3f ms, region-sampling sd at N=%d %.3f ms", expect, n, sd)
	all := 0.0
	for _, seed := range geoTestSeeds {
		g := NewGeoLatency(n, seed)
		m := Matrix(g, n)
		mean := float64(m.MeanOffDiagonal()) / float64(des.Millisecond)
		cond := geoTestConditionalMeanMs(g, n)
		t.Logf("seed %2d: mean %.3f ms (given its regions: %.3f ms)", seed, mean, cond)
		if math.Abs(mean-expect) > 4*sd {
			t.Errorf("seed %d: mean %.3f ms is more than 4 sd (%.3f ms) from the expectation %.3f ms", seed, mean, 4*sd, expect)
		}
		// Jitter noise on the mean of ~5e5 pairs is ~0.01 ms.
		if math.Abs(mean-cond) > 0.1 {
			t.Errorf("seed %d: mean %.3f ms, but its regions imply %.3f ms: the jitter is not mean-1", seed, mean, cond)
		}
		all += mean
	}
	all /= float64(len(geoTestSeeds))
	t.Logf("mean over %d seeds: %.3f ms", len(geoTestSeeds), all)
	// The window [54, 57] ms (the study's ~56 ms, an independent 55.4 ms)
	// holds for the mean over the study's seeds. A single seed's mean has a
	// sampling sd of ~0.6 ms, so [54, 57] is only ~2.3 sd around 55.6 and a
	// fair draw may leave it (seed 15 gives ~57.0 ms); per seed the test
	// uses the 4 sd bound above instead.
	if all < 54 || all > 57 {
		t.Errorf("mean one-way latency over seeds %.3f ms outside [54, 57]", all)
	}
	if math.Abs(all-expect) > 4*sd/math.Sqrt(float64(len(geoTestSeeds))) {
		t.Errorf("mean over seeds %.3f ms, expectation %.3f ms", all, expect)
	}
}

func TestGeoRegionFrequencies(t *testing.T) {
	for _, c := range []struct {
		n    int
		seed uint64
	}{{1000, 7}, {1000, 8}, {100000, 9}, {100000, 10}} {
		var counts [geoRegionCount]int
		for i := range c.n {
			counts[GeoDrawRegion(c.seed, i)]++
		}
		for r, k := range counts {
			p := float64(Region(r).Weight()) / 100
			mean := p * float64(c.n)
			sd := math.Sqrt(float64(c.n) * p * (1 - p))
			if math.Abs(float64(k)-mean) > 4.5*sd {
				t.Errorf("n=%d seed %d: region %s drawn %d times, binomial mean %.0f sd %.1f", c.n, c.seed, Region(r), k, mean, sd)
			}
		}
	}
}

func TestGeoLatencyPairs(t *testing.T) {
	const n = 300
	for _, seed := range geoTestSeeds[:3] {
		g := NewGeoLatency(n, seed)
		minF, maxF, sumF := 2.0, 0.0, 0.0
		for i := range n {
			if got := g.Latency(i, i); got != des.Millisecond {
				t.Fatalf("seed %d: self latency of %d = %v, want 1ms", seed, i, got)
			}
			for j := range n {
				if i == j {
					continue
				}
				l := g.Latency(i, j)
				if back := g.Latency(j, i); back != l {
					t.Fatalf("seed %d: latency %d->%d %v, %d->%d %v: not symmetric", seed, i, j, l, j, i, back)
				}
				base := GeoBaseLatency(g.Region(i), g.Region(j))
				f := float64(l) / float64(base)
				// [0.8, 1.2) times base, up to the nanosecond rounding.
				if l < base*8/10 || l > base*12/10 {
					t.Fatalf("seed %d: latency %d->%d = %v is outside [0.8, 1.2] x base %v", seed, i, j, l, base)
				}
				minF, maxF, sumF = min(minF, f), max(maxF, f), sumF+f
			}
		}
		meanF := sumF / float64(n*(n-1))
		t.Logf("seed %d: jitter factor min %.5f max %.5f mean %.5f", seed, minF, maxF, meanF)
		// 44 850 pairs: the extremes come within 1e-3 of the bounds, and the
		// mean (sd 0.115/sqrt(44850) = 5e-4) within 3e-3 of 1.
		if minF > 0.801 || maxF < 1.199 || math.Abs(meanF-1) > 3e-3 {
			t.Fatalf("seed %d: jitter factors span [%.4f, %.4f] mean %.4f, want about [0.8, 1.2) mean 1", seed, minF, maxF, meanF)
		}
	}
}

func TestGeoLatencyDeterministicAndSeeded(t *testing.T) {
	a, b := NewGeoLatency(100, 7), NewGeoLatency(100, 7)
	c := NewGeoLatency(100, 8)
	lazy := &GeoLatency{Seed: 7} // no cached regions: drawn on demand
	diff := 0
	for i := range 100 {
		for j := range 100 {
			if a.Latency(i, j) != b.Latency(i, j) || a.Latency(i, j) != lazy.Latency(i, j) {
				t.Fatalf("seed 7: pair (%d, %d) differs between equal models", i, j)
			}
			if a.Latency(i, j) != c.Latency(i, j) {
				diff++
			}
		}
	}
	if diff < 9000 {
		t.Fatalf("seeds 7 and 8 differ on only %d of 10 000 pairs", diff)
	}
	// Explicit regions override the draw.
	fixed := &GeoLatency{Seed: 7, Regions: []Region{RegionEU, RegionRest}}
	want := des.Time(math.Round(110 * GeoJitter(7, 0, 1) * 1e6))
	if got := fixed.Latency(1, 0); got != want {
		t.Fatalf("eu-rest latency %v, want %v", got, want)
	}
	if fixed.Region(5) != GeoDrawRegion(7, 5) {
		t.Fatal("a node beyond Regions must get its drawn region")
	}
}

func TestFixedAndUniformLatency(t *testing.T) {
	var m LatencyModel = FixedLatency(50 * des.Millisecond)
	if m.Latency(3, 9) != 50*des.Millisecond || m.Latency(2, 2) != 50*des.Millisecond {
		t.Fatal("fixed latency is not fixed")
	}
	lo, hi := 20*des.Millisecond, 100*des.Millisecond
	u, err := NewUniformLatency(lo, hi, 7)
	if err != nil {
		t.Fatal(err)
	}
	u8, _ := NewUniformLatency(lo, hi, 8)
	const n = 200
	sum, minL, maxL, diff := 0.0, hi, lo, 0
	for i := range n {
		for j := range n {
			l := u.Latency(i, j)
			if l < lo || l > hi {
				t.Fatalf("uniform latency %v outside [%v, %v]", l, lo, hi)
			}
			if l != u.Latency(j, i) {
				t.Fatalf("uniform latency (%d, %d) not symmetric", i, j)
			}
			if l != u8.Latency(i, j) {
				diff++
			}
			sum += float64(l)
			minL, maxL = min(minL, l), max(maxL, l)
		}
	}
	mean := sum / (n * n) / float64(des.Millisecond)
	// 20 100 distinct pairs, sd of the mean 23.1/sqrt(20100) = 0.16 ms.
	if math.Abs(mean-60) > 1 || minL > 21*des.Millisecond || maxL < 99*des.Millisecond {
		t.Fatalf("uniform [20, 100] ms: mean %.2f, range [%v, %v]", mean, minL, maxL)
	}
	if diff < n*n*9/10 {
		t.Fatalf("seeds 7 and 8 agree on %d of %d pairs", n*n-diff, n*n)
	}
	one, _ := NewUniformLatency(lo, lo, 1)
	if one.Latency(4, 5) != lo {
		t.Fatal("degenerate uniform [lo, lo] must give lo")
	}
	for _, b := range [][2]des.Time{{-1, 5}, {10, 9}} {
		if _, err := NewUniformLatency(b[0], b[1], 1); err == nil {
			t.Fatalf("NewUniformLatency(%v, %v) accepted", b[0], b[1])
		}
	}
}

func TestLatencyMatrix(t *testing.T) {
	g := NewGeoLatency(40, 9)
	m := Matrix(g, 40)
	for i := range 40 {
		for j := range 40 {
			if m.Latency(i, j) != g.Latency(i, j) {
				t.Fatalf("matrix (%d, %d) = %v, model %v", i, j, m.Latency(i, j), g.Latency(i, j))
			}
		}
	}
	f := Matrix(FixedLatency(7*des.Millisecond), 5)
	if f.MeanOffDiagonal() != 7*des.Millisecond {
		t.Fatalf("mean of fixed 7ms = %v", f.MeanOffDiagonal())
	}
	defer func() {
		if recover() == nil {
			t.Fatal("out-of-range pair did not panic")
		}
	}()
	f.Latency(5, 0)
}

func TestLatencyModelByName(t *testing.T) {
	m, err := LatencyModelByName("geo", 10, 7)
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := m.(*GeoLatency); !ok || g.Seed != 7 || len(g.Regions) != 10 {
		t.Fatalf("geo: got %#v", m)
	}
	m, err = LatencyModelByName("fixed:50ms", 10, 7)
	if err != nil || m.Latency(0, 1) != 50*des.Millisecond {
		t.Fatalf("fixed:50ms: %v, %v", m, err)
	}
	m, err = LatencyModelByName("uniform:20ms,100ms", 10, 7)
	if u, ok := m.(UniformLatency); err != nil || !ok || u.Lo != 20*des.Millisecond || u.Hi != 100*des.Millisecond || u.Seed != 7 {
		t.Fatalf("uniform: %#v, %v", m, err)
	}
	for _, bad := range []string{"", "geo2", "fixed:", "fixed:-5ms", "fixed:5", "uniform:20ms", "uniform:100ms,20ms", "uniform:x,1ms"} {
		if _, err := LatencyModelByName(bad, 10, 7); err == nil {
			t.Fatalf("LatencyModelByName(%q) accepted", bad)
		}
	}
	if _, err := LatencyModelByName("nope", 10, 7); err == nil || !strings.Contains(err.Error(), "geo") {
		t.Fatalf("unknown model error %v does not list the valid ones", err)
	}
}

// Latency-model parameters are read with the des bounds: every latency
// from 0 to des.MaxLatency, no NaN, no overflow.
func TestLatencyModelBounds(t *testing.T) {
	maxL, over := des.MaxLatency.String(), (des.MaxLatency + 1).String()
	m, err := LatencyModelByName("fixed:"+maxL, 4, 1)
	require.NoError(t, err)
	require.Equal(t, FixedLatency(des.MaxLatency), m)
	m, err = LatencyModelByName("uniform:0s,"+maxL, 4, 1)
	require.NoError(t, err)
	require.Equal(t, UniformLatency{Seed: 1, Lo: 0, Hi: des.MaxLatency}, m)
	for _, c := range []struct{ name, want string }{
		{"fixed:" + over, `netmodel: latency model "fixed:` + over + `": duration "` + over + `": want 0s to ` + maxL},
		{"fixed:2562048h", `netmodel: latency model "fixed:2562048h": duration "2562048h": want a duration such as 40ms or 30s, from 0s to ` + maxL},
		{"fixed:NaN", `duration "NaN": want a duration`},
		{"fixed:-1ns", `duration "-1ns": want 0s to ` + maxL},
		{"uniform:0s," + over, `netmodel: latency model "uniform:0s,` + over + `": high bound: duration "` + over + `": want 0s to ` + maxL},
		{"uniform:Infs,1s", `low bound: duration "Infs": want a duration`},
		{"uniform:2ms,1ms", `uniform latency [2ms, 1ms]: need 0 <= lo <= hi <= ` + maxL + ` (des.MaxLatency)`},
		{"bogus", "each latency from 0 to " + maxL},
	} {
		_, err := LatencyModelByName(c.name, 4, 1)
		require.ErrorContains(t, err, c.want, c.name)
	}
	_, err = NewUniformLatency(0, des.MaxLatency+1, 1)
	require.EqualError(t, err, "netmodel: uniform latency [0s, "+over+"]: need 0 <= lo <= hi <= "+maxL+" (des.MaxLatency)")
}
