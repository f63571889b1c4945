package validate

// The report's agreement criterion (the report, section 2, "Statistic";
// docs/references.md, "Completion rule and statistics"): "Agreement requires a
// difference within the harness's own seed-to-seed spread (a few percent)
// and the same ranking of the arms."
//
// This file reads it as follows:
//
//   - Within the spread: the candidate backend's median across seeds lies in
//     the reference backend's min..max range of per-seed values, ends
//     included (Spread.Contains). This is the same as the difference from the
//     reference median lying between the differences of the reference's own
//     fastest and slowest seeds.
//   - Same ranking: order the arms by their medians on each backend and
//     compare every pair of arms (Kendall's pairs). A pair is concordant when
//     both backends order it the same way, discordant when they order it
//     strictly the opposite way, and tied when either backend has the two
//     medians equal (two censored medians are equal). The rankings are the
//     same when no pair is discordant.

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// RankArms orders arms by value, fastest first, censored last; equal values
// by name.
func RankArms(vals map[string]Value) []string {
	arms := make([]string, 0, len(vals))
	for a := range vals {
		arms = append(arms, a)
	}
	slices.SortFunc(arms, func(a, b string) int {
		if c := vals[a].cmp(vals[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return arms
}

// Ranking compares two backends' orders of the same arms pair by pair.
type Ranking struct {
	Concordant int
	Discordant int
	Tied       int
	// Tau is Kendall's tau-a, (Concordant − Discordant) / pairs: 1 for the
	// same order, −1 for the reverse; 1 when there are fewer than two arms.
	Tau float64
	// DiscordantPairs lists each discordant pair in the reference's order
	// (the first arm is faster on the reference backend), sorted.
	DiscordantPairs [][2]string
}

// Same reports whether the two orders agree: no discordant pair.
func (r Ranking) Same() bool { return r.Discordant == 0 }

// CompareRankings compares the order of the arms by ref's values with their
// order by cand's values. Both maps must hold the same arms.
func CompareRankings(ref, cand map[string]Value) (Ranking, error) {
	if err := sameArms(ref, cand); err != nil {
		return Ranking{}, err
	}
	arms := RankArms(ref)
	var r Ranking
	for i, a := range arms {
		for _, b := range arms[i+1:] {
			cr, cc := ref[a].cmp(ref[b]), cand[a].cmp(cand[b])
			switch {
			case cr == 0 || cc == 0:
				r.Tied++
			case cr == cc:
				r.Concordant++
			default:
				r.Discordant++
				r.DiscordantPairs = append(r.DiscordantPairs, [2]string{a, b})
			}
		}
	}
	r.Tau = 1
	if pairs := r.Concordant + r.Discordant + r.Tied; pairs > 0 {
		r.Tau = float64(r.Concordant-r.Discordant) / float64(pairs)
	}
	slices.SortFunc(r.DiscordantPairs, func(x, y [2]string) int {
		return cmp.Or(cmp.Compare(x[0], y[0]), cmp.Compare(x[1], y[1]))
	})
	return r, nil
}

// sameArms reports an error naming the first arm that one map has and the
// other lacks.
func sameArms(ref, cand map[string]Value) error {
	for _, a := range slices.Sorted(maps.Keys(ref)) {
		if _, ok := cand[a]; !ok {
			return fmt.Errorf("validate: arm %q has a reference value and no candidate", a)
		}
	}
	for _, a := range slices.Sorted(maps.Keys(cand)) {
		if _, ok := ref[a]; !ok {
			return fmt.Errorf("validate: arm %q has a candidate value and no reference", a)
		}
	}
	return nil
}

// ArmVerdict is one arm's comparison of a candidate backend with the
// reference backend.
type ArmVerdict struct {
	Arm        string
	RefMedian  Value  // median across seeds on the reference backend
	CandMedian Value  // median across seeds on the candidate backend
	RefSpread  Spread // the reference's per-seed min..max
	DiffPct    Value  // (CandMedian − RefMedian) / RefMedian × 100
	Within     bool   // CandMedian inside RefSpread
}

// Verdict is the report's agreement test over a set of arms for one
// statistic (p50, say).
type Verdict struct {
	Arms    []ArmVerdict // by arm name
	Ranking Ranking      // the arms' order by median, reference against candidate
}

// Agree reports whether every arm's candidate median is within the
// reference's seed spread and the arms rank the same on both backends.
func (v Verdict) Agree() bool {
	for _, a := range v.Arms {
		if !a.Within {
			return false
		}
	}
	return v.Ranking.Same()
}

// Compare applies the report's agreement test to one statistic's per-seed
// values by arm: ref is the reference backend's (the harness's, say), cand
// the candidate's. Both must hold the same arms, each with at least one
// value; the seeds need not be paired.
func Compare(ref, cand map[string][]Value) (Verdict, error) {
	if len(ref) == 0 {
		return Verdict{}, errors.New("validate: compare: no arms")
	}
	refMed := make(map[string]Value, len(ref))
	candMed := make(map[string]Value, len(cand))
	var v Verdict
	for _, arm := range slices.Sorted(maps.Keys(ref)) {
		rv := ref[arm]
		cv, ok := cand[arm]
		if !ok {
			return Verdict{}, fmt.Errorf("validate: compare: arm %q has reference values and no candidate", arm)
		}
		a := ArmVerdict{Arm: arm}
		var err error
		if a.RefMedian, err = Median(rv); err != nil {
			return Verdict{}, fmt.Errorf("validate: compare: arm %q reference: %w", arm, err)
		}
		if a.CandMedian, err = Median(cv); err != nil {
			return Verdict{}, fmt.Errorf("validate: compare: arm %q candidate: %w", arm, err)
		}
		if a.RefSpread, err = SeedSpread(rv); err != nil {
			return Verdict{}, fmt.Errorf("validate: compare: arm %q reference: %w", arm, err)
		}
		if a.DiffPct, err = DiffPct(a.CandMedian, a.RefMedian); err != nil {
			return Verdict{}, fmt.Errorf("validate: compare: arm %q: %w", arm, err)
		}
		a.Within = a.RefSpread.Contains(a.CandMedian)
		refMed[arm], candMed[arm] = a.RefMedian, a.CandMedian
		v.Arms = append(v.Arms, a)
	}
	for _, arm := range slices.Sorted(maps.Keys(cand)) {
		if _, ok := ref[arm]; !ok {
			return Verdict{}, fmt.Errorf("validate: compare: arm %q has candidate values and no reference", arm)
		}
	}
	var err error
	if v.Ranking, err = CompareRankings(refMed, candMed); err != nil {
		return Verdict{}, fmt.Errorf("validate: compare: %w", err)
	}
	return v, nil
}
