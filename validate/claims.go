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
}

// MinClaimSeeds is the fewest paired seeds a claim is judged on: fewer
// leave it open whatever they show.
const MinClaimSeeds = 5

// Claim verdicts.
const (
	Supported = "supported"
	Refuted   = "refuted"
	Open      = "open"
)

// ClaimArm is a claim's statistic for one arm: the median and range of
// the per-seed differences in percent of the reference (censored seeds
// read as above any known value), how many seeds paired, and how many of
// them moved in each direction.
type ClaimArm struct {
	Arm             string // the published name
	Paired          *Paired
	Seeds, Up, Down int
	Censored        int // seeds on which both sides are censored
	// RerunSpread is the arm's run-to-run spread (RerunSpread); nil when
	// the study has no rerun of it.
	RerunSpread *RerunSpread
}

// SpreadFactor is how many run-to-run spreads an effect must exceed to be
// judged on a study's first five seeds: a smaller one needs all ten.
const SpreadFactor = 3

// RerunSpread is how far an arm's statistic moves when its cells run
// again: the median over seeds of the absolute per-seed difference, in
// percent, between a rerun variant (Variant.Replicate) and the variant
// it repeats. Seeds censored on either side are left out.
type RerunSpread struct {
	Pct   float64
	Seeds int
}

// Beyond reports whether a median effect of diff percent exceeds
// SpreadFactor times the spread.
func (r RerunSpread) Beyond(diff Value) bool {
	return diff.Censored || math.Abs(diff.V) > SpreadFactor*r.Pct
}

// rerunSpreads is every arm's run-to-run spread from the study's rerun
// variants (those with Replicate set, each against its baseline); with
// several, an arm's largest.
func (s Study) rerunSpreads(bySeed map[statKey]map[int]Value) map[string]RerunSpread {
	out := map[string]RerunSpread{}
	for vi, v := range s.Variants {
		if v.Replicate == 0 {
			continue
		}
		bi := s.baseOf(vi)
		for k, cand := range bySeed {
			if k.variant != vi {
				continue
			}
			var abs []float64
			for seed, x := range cand {
				r, ok := bySeed[statKey{bi, k.arm}][seed]
				if !ok || x.Censored || r.Censored || r.V == 0 {
					continue
				}
				abs = append(abs, math.Abs(100*(x.V-r.V)/r.V))
			}
			if len(abs) == 0 {
				continue
			}
			m := median(abs)
			if old, ok := out[k.arm]; !ok || m > old.Pct {
				out[k.arm] = RerunSpread{Pct: m, Seeds: len(abs)}
			}
		}
	}
	return out
}

// NeedsAllSeeds reports whether the verdict's effect is within
// SpreadFactor run-to-run spreads for some arm (so the study's full seed
// range should decide it), and whether any arm's spread is known at all.
func (v ClaimVerdict) NeedsAllSeeds() (needs, known bool) {
	for _, a := range v.Arms {
		if a.RerunSpread == nil || a.Paired == nil {
			continue
		}
		known = true
		needs = needs || !a.RerunSpread.Beyond(a.Paired.Median)
	}
	return needs, known
}

// ClaimVerdict is a claim judged on a study's records.
type ClaimVerdict struct {
	Claim   Claim
	Verdict string // Supported, Refuted or Open
	Why     string // for Open: what it lacks
	Arms    []ClaimArm
}

// Judge decides a claim from the study's records:
//   - Direction −1 or +1: supported when, for every arm, every paired
//     seed moved in Direction; refuted when, for every arm, the median of
//     the per-seed differences is not in Direction (zero or the other
//     way); open otherwise (an effect in Direction smaller than the seeds'
//     spread, arms that disagree), or with fewer than MinClaimSeeds
//     paired seeds.
//   - Direction 0: supported when, for every arm, the seeds moved both
//     ways (the change is within their spread); refuted when some arm
//     moved the same way on every seed; open with too few seeds.
//
// A seed whose candidate alone is censored (it never completed) moved
// up; one whose reference alone is censored moved down; both censored,
// it counts for neither, and a claim with such a seed is open.
func (s Study) Judge(c Claim, cells []StudyCell, records map[string]*cell.Record) (ClaimVerdict, error) {
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
	spreads := s.rerunSpreads(bySeed)
	open := ""
	allUp, allDown, allNotDir, allBoth, someMoved := true, true, true, true, false
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
		cand, ref := bySeed[statKey{vi, arm.Name}], bySeed[statKey{ai, refArm}]
		av := ClaimArm{Arm: arm.Published}
		if sp, ok := spreads[arm.Name]; ok {
			av.RerunSpread = &sp
		}
		pc, pr := map[int]Value{}, map[int]Value{}
		for _, seed := range slices.Sorted(maps.Keys(cand)) {
			r, ok := ref[seed]
			if !ok {
				continue
			}
			x := cand[seed]
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
		}
		if av.Seeds > 0 {
			av.Paired = pairedBySeed(pc, pr)
		}
		v.Arms = append(v.Arms, av)
		switch {
		case av.Seeds < MinClaimSeeds:
			open = fmt.Sprintf("%s has %d paired seeds, fewer than %d", arm.Published, av.Seeds, MinClaimSeeds)
			continue
		case av.Censored > 0:
			open = fmt.Sprintf("%s has %d seeds censored on both sides", arm.Published, av.Censored)
			continue
		}
		allUp = allUp && av.Up == av.Seeds
		allDown = allDown && av.Down == av.Seeds
		someMoved = someMoved || av.Up == av.Seeds || av.Down == av.Seeds
		allBoth = allBoth && av.Up > 0 && av.Down > 0
		med := medianSign(av)
		allNotDir = allNotDir && med*c.Direction <= 0
	}
	switch {
	case open != "":
		v.Verdict, v.Why = Open, open
	case len(v.Arms) == 0:
		v.Verdict, v.Why = Open, "no arm to compare"
	case c.Direction < 0 && allDown, c.Direction > 0 && allUp:
		v.Verdict = Supported
	case c.Direction != 0 && allNotDir:
		v.Verdict = Refuted
	case c.Direction == 0 && someMoved:
		v.Verdict = Refuted
	case c.Direction == 0 && allBoth:
		v.Verdict = Supported
	default:
		v.Verdict, v.Why = Open, "a change smaller than the seeds' spread, or arms that disagree: more seeds"
	}
	return v, nil
}

// medianSign is the sign of an arm's median per-seed difference: +1, −1
// or 0; a censored median (more than half the seeds censored) counts as
// up.
func medianSign(av ClaimArm) int {
	if av.Paired == nil {
		return 0
	}
	m := av.Paired.Median
	switch {
	case m.Censored || m.V > 0:
		return 1
	case m.V < 0:
		return -1
	}
	return 0
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
// the question, then each claim with its verdict and the paired statistic
// that decides it.
func (s Study) Answer(cells []StudyCell, records map[string]*cell.Record) (string, error) {
	if len(s.Claims) == 0 {
		return "", nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## Answer\n\nQuestion: %s\n\n", s.Question)
	spreads := false
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
			parts = append(parts, fmt.Sprintf("%s %s [%s, %s] over %d seeds (%d up, %d down)", a.Arm,
				FormatDiff(a.Paired.Median), FormatDiff(a.Paired.Lo), FormatDiff(a.Paired.Hi), a.Seeds, a.Up, a.Down))
		}
		fmt.Fprintf(&b, ": %s.", strings.Join(parts, "; "))
		if sp := spreadLine(v, s.Seeds); sp != "" {
			fmt.Fprintf(&b, " %s", sp)
			spreads = true
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\nA claim is supported when every arm's every paired seed moved its way, refuted when no arm's median moved its way (for a claim of no change: when some arm moved the same way on every seed), and open otherwise or on fewer than %d seeds.", MinClaimSeeds)
	if spreads {
		fmt.Fprintf(&b, " The run-to-run spread is the median absolute per-seed difference between a rerun of the baseline's cells and the baseline; an effect within %d times it is for the study's full seeds to decide.", SpreadFactor)
	}
	b.WriteString("\n")
	return b.String(), nil
}

// labelIndex is the index of the variant labelled label (labels are
// unique), or −1 (whose baseOf is the first variant).
func (s Study) labelIndex(label string) int {
	return slices.IndexFunc(s.Variants, func(v Variant) bool { return v.Label == label })
}

// spreadLine says, for a judged claim, each arm's run-to-run spread and
// whether its effect is beyond SpreadFactor times it; "" when the study
// has no rerun of the claim's arms.
func spreadLine(v ClaimVerdict, seeds []uint64) string {
	needs, known := v.NeedsAllSeeds()
	if !known {
		return ""
	}
	var parts []string
	for _, a := range v.Arms {
		if a.RerunSpread != nil {
			parts = append(parts, fmt.Sprintf("%s %.1f %% over %d seeds", a.Arm, a.RerunSpread.Pct, a.RerunSpread.Seeds))
		}
	}
	line := "Run-to-run spread: " + strings.Join(parts, ", ") + "; "
	paired := 0
	for _, a := range v.Arms {
		paired = max(paired, a.Seeds)
	}
	if needs && len(seeds) > paired {
		lo, hi := seeds[0], seeds[len(seeds)-1]
		return line + fmt.Sprintf("an effect within %d times it: seeds %d to %d decide.", SpreadFactor, lo, hi)
	}
	if needs {
		return line + fmt.Sprintf("an effect within %d times it: more seeds than these %d decide.", SpreadFactor, paired)
	}
	return line + fmt.Sprintf("every effect beyond %d times it.", SpreadFactor)
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
