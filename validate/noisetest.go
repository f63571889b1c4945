package validate

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// The noise test weighs a variant's effect against the run-to-run noise
// of its baseline, measured by rerunning the baseline's cells
// (docs/validation.md, "The noise test").
//
// Data: for each seed s, the variant's statistic V_s (one run) and the
// baseline's runs B_s1 … B_sk (the first run and k−1 reruns, k ≥ 1). On
// the log scale (an effect on completion times is a ratio), the statistic
//
//	T = Σ_s ( log V_s − mean_j log B_sj )
//
// is the sum over seeds of the variant's log ratio to its baseline's mean.
// Where the variant has reruns too (m runs), its mean log replaces log V_s
// and a relabelling chooses which m of the m+k runs are the variant's.
//
// Null hypothesis: the variant does not change the cell, so at each seed
// its run and the baseline's k runs are k+1 draws of one distribution
// (exchangeable), whatever that distribution is and however it differs
// from seed to seed. Then which of the k+1 runs carries the label
// "variant" is, at each seed, uniform and independent of the other seeds,
// and the distribution of T under the null is that of T over the
// Π_s (k_s+1) relabellings. The p-value is the fraction of relabellings
// whose T is at least as extreme as the one observed (ties counted as
// extreme): its false-positive rate is at most α at every α, exactly, for
// any noise distribution (a randomization test within blocks), with no
// assumption of normality or of equal variance across seeds.
//
// Without a rerun (k = 1) it is the paired sign-flip test of log V_s −
// log B_s; each rerun adds a run to relabel at every seed, which refines
// the p-values and adds power, and makes the spread of the baseline's own
// runs part of what an effect is weighed against.
//
// What it cannot do: with few seeds the most extreme relabelling is not
// rare enough. Its probability, MinP = Π_s 1/C(m_s+k_s, m_s) (1/(k_s+1)
// with one run of the variant), bounds every p-value from below: 1/2^n without a rerun (1/32 at five seeds, 1/8 at
// three), 1/3^n with one (1/243 at five seeds). A verdict whose MinP
// exceeds α is "too few seeds", whatever the data say.
//
// A censored run (one whose statistic is unknown: a receiver never
// completed) is set above every completed run of the comparison before
// the logs are taken: it ranks last, as a censored value does everywhere
// in this package.

// SeedRuns is one seed's runs of a comparison: the variant's statistic
// (its first run, and its reruns where it has some) and the baseline's,
// first run and reruns.
type SeedRuns struct {
	Seed          int
	Variant       Value
	VariantReruns []Value
	Base          []Value
}

// NoiseTest is the result of the noise test on one comparison.
type NoiseTest struct {
	Seeds int
	// Effect is exp(T/n) − 1 in percent: the variant's geometric mean
	// ratio to its baseline's mean run, over seeds.
	Effect float64
	// PHigher and PLower are the one-sided p-values: that the variant
	// raised the statistic, that it lowered it.
	PHigher, PLower float64
	// MinP is the smallest p-value any data could give with these seeds
	// and runs.
	MinP float64
	// Relabellings is how many relabellings the p-values count, and Exact
	// whether that is all of them (else a Monte Carlo sample of them with
	// a fixed seed, the observed one included).
	Relabellings int
	Exact        bool
}

// maxExact is the most relabellings the test enumerates; above it, it
// draws MonteCarloDraws of them.
const maxExact = 1 << 20

// MonteCarloDraws is how many relabellings the test draws when there are
// more than it enumerates. The p-value's Monte Carlo error is then at
// most 0.5/√MonteCarloDraws, 0.0035.
const MonteCarloDraws = 20000

// RunNoiseTest runs the noise test on seeds; a seed without a baseline
// run, or whose variant and every baseline run are censored, is left out.
// It refuses a value that is negative or not finite: a statistic here is
// a time.
func RunNoiseTest(seeds []SeedRuns) (NoiseTest, error) {
	// The largest completed run sets where censored ones go.
	top := 0.0
	for _, s := range seeds {
		for _, v := range append(append([]Value{s.Variant}, s.VariantReruns...), s.Base...) {
			if v.Censored {
				continue
			}
			if v.V <= 0 || math.IsInf(v.V, 0) || math.IsNaN(v.V) {
				return NoiseTest{}, fmt.Errorf("seed %d: statistic %v: want a positive, finite time", s.Seed, v.V)
			}
			top = max(top, v.V)
		}
	}
	logOf := func(v Value) float64 {
		if v.Censored {
			return math.Log(2*top) + 1
		}
		return math.Log(v.V)
	}
	// Per seed, the statistic's value under each relabelling: run i
	// labelled the variant gives ((k+1)·x_i − S)/k with S the pool's sum.
	var options [][]float64
	obs := 0.0
	minP, total := 1.0, 1.0
	for _, s := range seeds {
		if len(s.Base) == 0 {
			continue
		}
		runs := append(append([]Value{s.Variant}, s.VariantReruns...), s.Base...)
		allCensored := true
		for _, r := range runs {
			allCensored = allCensored && r.Censored
		}
		if allCensored {
			continue
		}
		pool := make([]float64, len(runs))
		sum := 0.0
		for i, r := range runs {
			pool[i] = logOf(r)
			sum += pool[i]
		}
		// Every choice of m of the runs as the variant's: the first
		// choice, runs 0 to m−1, is the one observed.
		m, k := 1+len(s.VariantReruns), float64(len(s.Base))
		var opts []float64
		for _, sub := range subsets(len(pool), m) {
			in := 0.0
			for _, i := range sub {
				in += pool[i]
			}
			opts = append(opts, in/float64(m)-(sum-in)/k)
		}
		obs += opts[0]
		options = append(options, opts)
		minP /= float64(len(opts))
		total *= float64(len(opts))
	}
	n := len(options)
	if n == 0 {
		return NoiseTest{}, errors.New("no seed with both the variant's run and a run of its baseline")
	}
	t := NoiseTest{Seeds: n, Effect: 100 * math.Expm1(obs/float64(n)), MinP: minP}
	// Ties within rounding count as extreme.
	eps := 1e-9 * (1 + math.Abs(obs))
	var hi, lo int
	if total <= maxExact {
		t.Exact, t.Relabellings = true, int(total)
		idx := make([]int, n)
		for {
			v := 0.0
			for s, i := range idx {
				v += options[s][i]
			}
			if v >= obs-eps {
				hi++
			}
			if v <= obs+eps {
				lo++
			}
			s := 0
			for s < n {
				idx[s]++
				if idx[s] < len(options[s]) {
					break
				}
				idx[s] = 0
				s++
			}
			if s == n {
				break
			}
		}
	} else {
		// The observed labelling counts as one draw, so no p-value is 0.
		rng := rand.New(rand.NewPCG(1, 2))
		hi, lo, t.Relabellings = 1, 1, MonteCarloDraws+1
		for range MonteCarloDraws {
			v := 0.0
			for _, opts := range options {
				v += opts[rng.IntN(len(opts))]
			}
			if v >= obs-eps {
				hi++
			}
			if v <= obs+eps {
				lo++
			}
		}
	}
	t.PHigher = float64(hi) / float64(t.Relabellings)
	t.PLower = float64(lo) / float64(t.Relabellings)
	return t, nil
}

// subsets lists the m-element subsets of 0 … n−1 in lexicographic order
// (the first is 0 … m−1).
func subsets(n, m int) [][]int {
	var out [][]int
	cur := make([]int, 0, m)
	var rec func(from int)
	rec = func(from int) {
		if len(cur) == m {
			out = append(out, slices.Clone(cur))
			return
		}
		for i := from; i <= n-(m-len(cur)); i++ {
			cur = append(cur, i)
			rec(i + 1)
			cur = cur[:len(cur)-1]
		}
	}
	rec(0)
	return out
}

// Comparison verdicts of the noise test, one vocabulary for claims and
// for comparisons without one.
const (
	// VerdictHigher and VerdictLower: the variant moved the statistic
	// beyond its baseline's run-to-run noise (one-sided p ≤ α).
	VerdictHigher = "higher"
	VerdictLower  = "lower"
	// VerdictNoDifference: no move beyond the noise at these seeds (both
	// one-sided p-values above α). It is not evidence of no effect: an
	// effect smaller than the noise can hide in it.
	VerdictNoDifference = "no difference"
	// VerdictTooFewSeeds: no data at these seeds and runs could reach α.
	VerdictTooFewSeeds = "too few seeds"
)

// Verdict reads the test at level alpha in each direction (so a two-sided
// reading has level 2·alpha at most).
func (t NoiseTest) Verdict(alpha float64) string {
	switch {
	case t.MinP > alpha:
		return VerdictTooFewSeeds
	case t.PHigher <= alpha:
		return VerdictHigher
	case t.PLower <= alpha:
		return VerdictLower
	}
	return VerdictNoDifference
}

// MedianInterval is a distribution-free confidence interval for the
// median of diffs (per-seed paired differences): the order statistics
// d_(r) and d_(n+1−r) with the largest r whose coverage, 1 − 2·P(Bin(n,
// ½) < r), is at least level. Coverage is that achieved (≥ level); ok is
// false when even the full range (r = 1, coverage 1 − 2^(1−n)) falls
// short of level, as with fewer than 6 seeds at 95 %.
func MedianInterval(diffs []float64, level float64) (lo, hi, coverage float64, ok bool) {
	n := len(diffs)
	if n == 0 {
		return 0, 0, 0, false
	}
	d := slices.Clone(diffs)
	slices.Sort(d)
	// P(Bin(n, ½) < r), accumulated.
	below := func(r int) float64 {
		p, c := 0.0, 1.0 // c = C(n, i)
		for i := range r {
			if i > 0 {
				c = c * float64(n-i+1) / float64(i)
			}
			p += c
		}
		return p * math.Pow(0.5, float64(n))
	}
	best := 0
	for r := 1; 2*r <= n+1; r++ {
		if 1-2*below(r) >= level {
			best = r
		}
	}
	if best == 0 {
		return d[0], d[n-1], 1 - 2*below(1), false
	}
	return d[best-1], d[n-best], 1 - 2*below(best), true
}
