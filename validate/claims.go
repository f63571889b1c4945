package validate

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/uplinksim/uplink/protocols/arms"
	"github.com/uplinksim/uplink/protocols/cell"
)

// A Claim is one hypothesis a study tests: that under Variant the
// statistic Stat of each of Arms moves in Direction against the same arm
// under Against (or against AgainstArm under Variant). The study's page
// ends with each claim's verdict (Judge), so that the question's answer
// is read from the paired statistic that decides it, not from prose.
type Claim struct {
	Text string // the hypothesis, in a sentence
	// Variant is the label of the variant the claim is about.
	Variant string
	// Against is the label of the variant it is compared with; "" for
	// the variant's baseline (the first variant, or its Base), or for
	// Variant itself when AgainstArm is set.
	Against string
	// AgainstArm, when set, compares each arm with this arm (catalogue
	// name) instead of with itself.
	AgainstArm string
	// Arms are catalogue names; nil for every arm of the study but
	// AgainstArm.
	Arms []string
	// Stat is p50, p90, p99 or last; "" for the study's CompareStat.
	Stat string
	// Direction is −1 when the claim is that the statistic falls (the arm
	// is faster), +1 when it rises, 0 when it does not move.
	Direction int
	// Margin, for a claim of no change (Direction 0), is the largest
	// change in percent that still counts as none: the claim is supported
	// only when every arm's 90 % interval of the median paired difference
	// lies within ±Margin. 0: a claim of no change can be refuted, never
	// supported.
	Margin float64
	// Requires, when set, is the number (from 1) of an earlier claim of
	// the study that shows the effect this one acts on (an intervention
	// that removes a tail needs the tail): unless that claim is
	// supported, this one is not testable here.
	Requires int
}

// ClaimAlpha is the level of the noise test behind a claim's verdict: a
// directional claim is supported when each arm's one-sided p-value is at
// most ClaimAlpha (docs/validation.md, "The noise test").
const ClaimAlpha = 0.05

// Claim verdicts.
const (
	// Supported: every arm moved the claim's way beyond its reference's
	// run-to-run noise; for a claim of no change, no arm moved and every
	// arm's interval lies within the claim's margin.
	Supported = "supported"
	// Refuted: some arm moved against the claim beyond the noise (for a
	// claim of no change: moved either way).
	Refuted = "refuted"
	// NotShown: no arm moved against the claim beyond the noise, and not
	// every arm moved its way: these seeds cannot tell the effect from the
	// noise.
	NotShown = "not shown"
	// TooFewSeeds: no data at these seeds and runs could reach the test's
	// level.
	TooFewSeeds = "too few seeds"
	// NotTestable: the effect the claim acts on is not there (the claim it
	// Requires is not supported).
	NotTestable = "not testable here"
)

// ClaimArm is a claim's statistic for one arm: the median of the
// per-seed differences in percent of the reference (censored seeds read
// as above any known value) with their range, the seeds paired and how
// many moved each way, the noise test of the arm against its reference's
// runs, and the distribution-free interval of the median difference.
type ClaimArm struct {
	Arm             string // the published name
	Paired          *Paired
	Seeds, Up, Down int
	Censored        int // seeds on which both sides are censored
	// Reruns is how many reruns of the reference's cells, over all
	// seeds, the noise test counts beside their first runs.
	Reruns int
	// Test is the noise test of the arm (nil with no paired seed).
	Test *NoiseTest
	// Lo and Hi bound the median per-seed difference, in percent, with
	// coverage Coverage (MedianInterval at 95 %, or the full range when
	// too few seeds reach it; at 90 % for a claim of no change).
	Lo, Hi, Coverage float64
}

// ClaimVerdict is a claim judged on a study's records.
type ClaimVerdict struct {
	Claim   Claim
	Verdict string // Supported, Refuted, NotShown, TooFewSeeds or NotTestable
	Why     string // what it lacks, when not Supported or Refuted
	Arms    []ClaimArm
}

// Judge decides a claim from the study's records with the noise test
// (RunNoiseTest): per arm, at each paired seed, the claim's variant
// against its reference's first run and every rerun of that cell in the
// study (a variant with Replicate set repeats its baseline's cells).
//   - Direction −1 or +1: supported when every arm's one-sided p-value in
//     Direction is at most ClaimAlpha (an intersection of tests: level
//     ClaimAlpha); refuted when some arm's p-value the other way is at most
//     ClaimAlpha over the number of arms (Bonferroni); not shown
//     otherwise.
//   - Direction 0: refuted when some arm moved either way at ClaimAlpha/2
//     over the arms; supported when none did and every arm's 90 % interval
//     lies within ±Margin (Margin > 0); not shown otherwise.
//   - Too few seeds when some arm's smallest attainable p-value is above
//     the level it is read at; not testable here when the claim it
//     Requires is not supported.
//
// A run that never completed ranks above every run that did.
func (s Study) Judge(c Claim, cells []StudyCell, records map[string]*cell.Record) (ClaimVerdict, error) {
	return s.judge(c, cells, records, 0)
}

func (s Study) judge(c Claim, cells []StudyCell, records map[string]*cell.Record, depth int) (ClaimVerdict, error) {
	v := ClaimVerdict{Claim: c}
	vi, ai := s.claimVariants(c)
	if vi < 0 {
		return v, fmt.Errorf("study %s: claim %q: no variant %q", s.Name, c.Text, c.Variant)
	}
	if ai < 0 {
		return v, fmt.Errorf("study %s: claim %q: no variant %q", s.Name, c.Text, c.Against)
	}
	if ai == vi && c.AgainstArm == "" {
		return v, fmt.Errorf("study %s: claim %q compares variant %q with itself", s.Name, c.Text, c.Variant)
	}
	if c.Requires < 0 || c.Requires > len(s.Claims) || depth > len(s.Claims) {
		return v, fmt.Errorf("study %s: claim %q: requires claim %d: want an earlier claim of the study's %d", s.Name, c.Text, c.Requires, len(s.Claims))
	}
	if c.Direction == 0 && (c.Margin < 0 || math.IsNaN(c.Margin) || c.Margin > 100) {
		return v, fmt.Errorf("study %s: claim %q: margin %g: want 0 to 100 percent", s.Name, c.Text, c.Margin)
	}
	stat := c.Stat
	if stat == "" {
		stat = s.CompareStat()
	}
	against := ""
	if c.AgainstArm != "" {
		a, err := arms.LookupArm(c.AgainstArm)
		if err != nil {
			return v, fmt.Errorf("study %s: claim %q: %w", s.Name, c.Text, err)
		}
		against = a.Name
	}
	names := c.Arms
	if names == nil {
		names = s.Arms
	}
	bySeed := s.statBySeed(cells, records, stat)
	reruns, keys := s.rerunsBySeed(cells, records, stat)
	var tests []NoiseTest
	for _, name := range names {
		arm, err := arms.LookupArm(name)
		if err != nil {
			return v, fmt.Errorf("study %s: claim %q: %w", s.Name, c.Text, err)
		}
		if arm.Name == against {
			continue
		}
		refArm := arm.Name
		if against != "" {
			refArm = against
		}
		level := 0.95
		if c.Direction == 0 {
			level = 0.90
		}
		av := pairArm(statKey{vi, arm.Name}, statKey{ai, refArm}, bySeed, reruns, keys, level)
		av.Arm = arm.Published
		v.Arms = append(v.Arms, av)
		if av.Test != nil {
			tests = append(tests, *av.Test)
		}
	}
	v.Verdict, v.Why = readTests(c, v.Arms, tests)
	if c.Requires > 0 && v.Verdict != TooFewSeeds {
		pre := s.Claims[c.Requires-1]
		pv, err := s.judge(pre, cells, records, depth+1)
		if err != nil {
			return v, err
		}
		if pv.Verdict != Supported {
			v.Verdict, v.Why = NotTestable, fmt.Sprintf("the effect it acts on is not shown here: claim %d, %q, is %s", c.Requires, strings.TrimRight(pre.Text, ":. "), pv.Verdict)
		}
	}
	return v, nil
}

// pairArm pairs cand's statistic with ref's by seed and runs the noise
// test on them: at each seed cand's run (and its reruns, unless cand is
// ref) against ref's run and its reruns, a rerun that is cand's own cell
// left out; the interval of the median per-seed difference is at level.
// The returned ClaimArm has no Arm name.
func pairArm(cand, ref statKey, bySeed map[statKey]map[int]Value, reruns map[statKey]map[int][]rerun, keys map[statKey]map[int]string, level float64) ClaimArm {
	var av ClaimArm
	cv, rv := bySeed[cand], bySeed[ref]
	pc, pr := map[int]Value{}, map[int]Value{}
	var runs []SeedRuns
	for _, seed := range slices.Sorted(maps.Keys(cv)) {
		r, ok := rv[seed]
		if !ok {
			continue
		}
		x := cv[seed]
		av.Seeds++
		pc[seed], pr[seed] = x, r
		switch {
		case x.Censored && r.Censored:
			av.Censored++
		case x.Censored || (!r.Censored && x.V > r.V):
			av.Up++
		case r.Censored || x.V < r.V:
			av.Down++
		}
		candKey := keys[cand][seed]
		base := []Value{r}
		for _, rr := range reruns[ref][seed] {
			if rr.key != candKey {
				base = append(base, rr.v)
			}
		}
		var more []Value
		if cand != ref {
			for _, rr := range reruns[cand][seed] {
				more = append(more, rr.v)
			}
		}
		av.Reruns += len(base) - 1 + len(more)
		runs = append(runs, SeedRuns{Seed: seed, Variant: x, VariantReruns: more, Base: base})
	}
	if av.Seeds == 0 {
		return av
	}
	av.Paired = pairedBySeed(pc, pr)
	if t, err := RunNoiseTest(runs); err == nil {
		av.Test = &t
	}
	var diffs []float64
	for _, d := range av.Paired.PerSeed {
		if !d.V.Censored {
			diffs = append(diffs, d.V.V)
		}
	}
	if len(diffs) == len(av.Paired.PerSeed) {
		av.Lo, av.Hi, av.Coverage, _ = MedianInterval(diffs, level)
	}
	return av
}

// readTests turns the arms' noise tests into the claim's verdict (Judge).
func readTests(c Claim, armsJudged []ClaimArm, tests []NoiseTest) (verdict, why string) {
	if len(armsJudged) == 0 {
		return TooFewSeeds, "no arm to compare"
	}
	m := float64(len(armsJudged))
	// The level each arm's p-value is read at, and what a move against
	// the claim is read at.
	level, against := ClaimAlpha, ClaimAlpha/m
	if c.Direction == 0 {
		level, against = ClaimAlpha/2/m, ClaimAlpha/2/m
	}
	for _, a := range armsJudged {
		switch {
		case a.Test == nil && a.Seeds == 0:
			return TooFewSeeds, a.Arm + " has no paired seed"
		case a.Test == nil:
			return TooFewSeeds, a.Arm + "'s seeds are censored on both sides"
		case a.Test.MinP > level:
			return TooFewSeeds, fmt.Sprintf("%s has %d paired seeds with %d reruns of the reference: its smallest attainable p-value, %.3g, is above %.3g", a.Arm, a.Test.Seeds, a.Reruns, a.Test.MinP, level)
		}
	}
	if c.Direction == 0 {
		for _, t := range tests {
			if t.PHigher <= against || t.PLower <= against {
				return Refuted, ""
			}
		}
		if c.Margin <= 0 {
			return NotShown, "no move beyond the noise; a claim of no change without a margin cannot be supported"
		}
		for _, a := range armsJudged {
			if a.Coverage == 0 || a.Lo < -c.Margin || a.Hi > c.Margin {
				return NotShown, fmt.Sprintf("no move beyond the noise, but %s's interval is not within ±%g %%", a.Arm, c.Margin)
			}
		}
		return Supported, ""
	}
	all := true
	for _, t := range tests {
		pWay, pAgainst := t.PLower, t.PHigher
		if c.Direction > 0 {
			pWay, pAgainst = pAgainst, pWay
		}
		if pAgainst <= against {
			return Refuted, ""
		}
		all = all && pWay <= level
	}
	if all {
		return Supported, ""
	}
	return NotShown, "an effect these seeds cannot tell from the run-to-run noise"
}

// rerun is one rerun's statistic and its cell's key.
type rerun struct {
	key string
	v   Value
}

// rerunsBySeed is, for each variant and arm whose cells a rerun in the
// study repeats (a cell with Replicate set, read under Replicate 0), the
// reruns' statistic by seed; and every cell's key by variant, arm and
// seed.
func (s Study) rerunsBySeed(cells []StudyCell, records map[string]*cell.Record, stat string) (map[statKey]map[int][]rerun, map[statKey]map[int]string) {
	type at struct {
		k    statKey
		seed int
	}
	first := map[string]at{}
	keys := map[statKey]map[int]string{}
	for _, c := range cells {
		k := statKey{c.Variant, c.Arm.Name}
		keys[k] = map[int]string{}
		for i, cfg := range c.Configs {
			key := cfg.Key()
			keys[k][int(c.Seeds[i])] = key
			if cfg.Replicate == 0 {
				first[key] = at{k, int(c.Seeds[i])}
			}
		}
	}
	out := map[statKey]map[int][]rerun{}
	for _, c := range cells {
		for i, cfg := range c.Configs {
			if cfg.Replicate == 0 {
				continue
			}
			key := keys[statKey{c.Variant, c.Arm.Name}][int(c.Seeds[i])]
			r := records[key]
			if r == nil {
				continue
			}
			val, ok := RecordStat(stat, r)
			if !ok {
				continue
			}
			orig := cfg
			orig.Replicate = 0
			a, ok := first[orig.Key()]
			if !ok {
				continue
			}
			if out[a.k] == nil {
				out[a.k] = map[int][]rerun{}
			}
			out[a.k][a.seed] = append(out[a.k][a.seed], rerun{key, val})
		}
	}
	return out, keys
}

type statKey struct {
	variant int
	arm     string // the catalogue name
}

// statBySeed is the statistic stat of every variant and arm, by seed.
func (s Study) statBySeed(cells []StudyCell, records map[string]*cell.Record, stat string) map[statKey]map[int]Value {
	out := map[statKey]map[int]Value{}
	for _, c := range cells {
		m := map[int]Value{}
		for i, cfg := range c.Configs {
			if r := records[cfg.Key()]; r != nil {
				if val, ok := RecordStat(stat, r); ok {
					m[int(c.Seeds[i])] = val
				}
			}
		}
		out[statKey{c.Variant, c.Arm.Name}] = m
	}
	return out
}

// Answer is the study's claims judged on its records, as Markdown lines:
// the question, then each claim with its verdict, the statistic, seeds
// and test behind it.
func (s Study) Answer(cells []StudyCell, records map[string]*cell.Record) (string, error) {
	if len(s.Claims) == 0 {
		return "", nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## Answer\n\nQuestion: %s\n\n", s.Question)
	for _, c := range s.Claims {
		v, err := s.Judge(c, cells, records)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "- %s **%s**", c.Text, v.Verdict)
		if v.Why != "" {
			fmt.Fprintf(&b, " (%s)", v.Why)
		}
		stat := c.Stat
		if stat == "" {
			stat = s.CompareStat()
		}
		ref := c.Against
		if ref == "" && c.AgainstArm == "" {
			ref = s.Variants[s.baseOf(s.labelIndex(c.Variant))].Label
		}
		what := fmt.Sprintf("%s of %q against %q", stat, c.Variant, ref)
		if c.AgainstArm != "" {
			what = fmt.Sprintf("%s against %s's under %q", stat, c.AgainstArm, cmp.Or(c.Against, c.Variant))
		}
		fmt.Fprintf(&b, ": %s", what)
		var parts []string
		for _, a := range v.Arms {
			if a.Paired == nil {
				parts = append(parts, a.Arm+" not run")
				continue
			}
			part := fmt.Sprintf("%s %s", a.Arm, FormatDiff(a.Paired.Median))
			if a.Coverage > 0 {
				part += fmt.Sprintf(" [%s, %s] (%.3g %% interval)", FormatDiff(Known(a.Lo)), FormatDiff(Known(a.Hi)), 100*a.Coverage)
			}
			part += fmt.Sprintf(" over %d seeds (%d up, %d down)", a.Seeds, a.Up, a.Down)
			if a.Test != nil {
				part += fmt.Sprintf(", noise test with %d reruns: geometric-mean effect %s, p higher %.3g, p lower %.3g", a.Reruns, FormatDiff(Known(a.Test.Effect)), a.Test.PHigher, a.Test.PLower)
			}
			parts = append(parts, part)
		}
		fmt.Fprintf(&b, ": %s.", strings.Join(parts, "; "))
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\nEach claim is judged by the noise test (docs/validation.md): at each paired seed the claim's variant is one more run among its reference's first run and reruns, and the p-value is the share of the within-seed relabellings at least as extreme. A claim is supported when every arm moved its way at one-sided p ≤ %.2g, refuted when some arm moved against it at p ≤ %.2g over the number of arms, not shown otherwise, and too few seeds when no data could reach that level; a claim of no change is refuted by a move either way at p ≤ %.3g over the arms and supported only within its margin; a claim that needs an effect the study does not show is not testable here. Intervals: the distribution-free interval of the median per-seed difference, with its coverage.\n", ClaimAlpha, ClaimAlpha, ClaimAlpha/2)
	return b.String(), nil
}

// labelIndex is the index of the variant labelled label (labels are
// unique), or −1 (whose baseOf is the first variant).
func (s Study) labelIndex(label string) int {
	return slices.IndexFunc(s.Variants, func(v Variant) bool { return v.Label == label })
}

// claimVariants is the index of claim c's variant and of the variant it
// is compared with: Against, or the variant itself when AgainstArm is
// set, or else its baseline; −1 for a label the study lacks.
func (s Study) claimVariants(c Claim) (vi, ai int) {
	vi = s.labelIndex(c.Variant)
	switch {
	case vi < 0:
		return -1, -1
	case c.Against != "":
		return vi, s.labelIndex(c.Against)
	case c.AgainstArm != "":
		return vi, vi
	}
	return vi, s.baseOf(vi)
}

// ClaimCells reports, for each of cells, whether the study's answer reads
// it: each claim's variant and arms and what they are compared with (the
// Against variant or the baseline, or AgainstArm), and, for the arms the
// claims name, each rerun variant (Replicate) with the cells it repeats,
// which give the run-to-run spread. A sweep runs these first, so that a
// sweep stopped part way answers the question before it fills the rest
// of the table.
func (s Study) ClaimCells(cells []StudyCell) []bool {
	type va struct {
		variant int
		arm     string // catalogue name; "" for every arm
	}
	read := map[va]bool{}
	claimArms := map[string]bool{} // "" for every arm
	lookup := func(name string) string {
		if a, err := arms.LookupArm(name); err == nil {
			return a.Name
		}
		return name // Judge names the unknown arm
	}
	for _, c := range s.Claims {
		vi, ai := s.claimVariants(c)
		if vi < 0 || ai < 0 {
			continue // Judge names the missing variant
		}
		if c.Arms == nil {
			read[va{vi, ""}] = true
			claimArms[""] = true
		}
		for _, name := range c.Arms {
			read[va{vi, lookup(name)}] = true
			claimArms[lookup(name)] = true
		}
		switch {
		case c.AgainstArm != "":
			read[va{ai, lookup(c.AgainstArm)}] = true
		case c.Arms == nil:
			read[va{ai, ""}] = true
		default:
			for _, name := range c.Arms {
				read[va{ai, lookup(name)}] = true
			}
		}
	}
	out := make([]bool, len(cells))
	for i, c := range cells {
		k := va{c.Variant, c.Arm.Name}
		out[i] = read[k] || read[va{c.Variant, ""}]
		if s.Variants[c.Variant].Replicate != 0 && (claimArms[""] || claimArms[c.Arm.Name]) {
			out[i] = true
			read[va{s.baseOf(c.Variant), c.Arm.Name}] = true
		}
	}
	// The baseline cells the reruns repeat.
	for i, c := range cells {
		out[i] = out[i] || read[va{c.Variant, c.Arm.Name}]
	}
	return out
}
