package validate

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/protocols/arms"
	"github.com/uplinksim/uplink/protocols/cell"
)

// claimStudy is a study of two arms and three variants at 20 nodes over
// seeds 7 to 11, with a record per run whose p50 is value(variant, arm,
// seed index); NaN leaves the p50 censored, a negative value leaves the
// run without a record.
func claimStudy(t *testing.T, value func(variant int, arm string, seed int) float64, more ...Variant) (Study, []StudyCell, map[string]*cell.Record) {
	t.Helper()
	s := Study{Name: "claims", Question: "Does it move?", Arms: []string{"c32", "wholend"}, N: 20, Payload: 1 << 20, Seeds: seeds(7, 11),
		Variants: append([]Variant{
			{Label: "base", Profile: "harness"},
			{Label: "faster", Profile: "harness", Knobs: map[string]string{"uplink-qdisc": "pie"}},
			{Label: "mixed", Profile: "shadow"},
		}, more...)}
	cells, err := s.Cells(0, nil, cell.Config{Gossip: cell.StudyGossip()})
	require.NoError(t, err)
	records := map[string]*cell.Record{}
	for _, c := range cells {
		for i, cfg := range c.Configs {
			v := value(c.Variant, c.Arm.Name, i)
			if v < 0 {
				continue
			}
			r := &cell.Record{Key: cfg.Key()}
			if !math.IsNaN(v) {
				r.P50S = &v
			}
			records[cfg.Key()] = r
		}
	}
	return s, cells, records
}

// base: 1 s on every seed; faster: 10 % faster on every seed; mixed:
// faster on three seeds, slower on two (median −5 %).
func claimValues(variant int, _ string, seed int) float64 {
	switch variant {
	case 1:
		return 0.9
	case 2:
		return []float64{0.95, 0.95, 0.95, 1.05, 1.05}[seed]
	}
	return 1
}

// rerunValues are a rerun of the baseline's cells: 1 to 5 % off.
var rerunValues = []float64{1.02, 0.98, 1.05, 0.97, 1.01}

// withRerun gives the study's rerun variant (index 3) rerunValues.
func withRerun(variant int, arm string, seed int) float64 {
	if variant == 3 {
		return rerunValues[seed]
	}
	return claimValues(variant, arm, seed)
}

var rerunVariant = Variant{Label: "rerun", Profile: "harness", Replicate: 1}

// TestJudgeDirection: without a rerun the noise test is the sign-flip
// test: five seeds all one way give p = 1/32 per arm, which supports a
// claim in that direction but cannot refute the opposite one over two
// arms (that needs p ≤ 2.5 % each); a change that is not on every seed
// is not shown.
func TestJudgeDirection(t *testing.T) {
	s, cells, records := claimStudy(t, claimValues)
	for _, c := range []struct {
		variant string
		dir     int
		want    string
	}{
		{"faster", -1, Supported},
		{"faster", +1, NotShown},
		{"mixed", -1, NotShown},
		{"mixed", +1, NotShown},
	} {
		v, err := s.Judge(Claim{Text: "x", Variant: c.variant, Direction: c.dir}, cells, records)
		require.NoError(t, err)
		require.Equal(t, c.want, v.Verdict, "%s %+d", c.variant, c.dir)
		require.Len(t, v.Arms, 2)
	}
	v, err := s.Judge(Claim{Text: "x", Variant: "faster", Direction: -1}, cells, records)
	require.NoError(t, err)
	a := v.Arms[0]
	require.Equal(t, 5, a.Seeds)
	require.Equal(t, 5, a.Down)
	require.Equal(t, 0, a.Reruns)
	require.InDelta(t, -10, a.Paired.Median.V, 1e-9)
	require.InDelta(t, 1.0/32, a.Test.PLower, 1e-12)
	require.InDelta(t, 0.9375, a.Coverage, 1e-12, "five seeds: the full range")
}

// TestJudgeReruns: a rerun of the baseline puts each seed's variant among
// three runs: faster's −10 % below both at every seed gives p = 1/243,
// which supports its claim and refutes the opposite one; mixed's ±5 %
// sits inside the baseline's own 1 to 5 % spread on two seeds and is not
// shown either way.
func TestJudgeReruns(t *testing.T) {
	s, cells, records := claimStudy(t, withRerun, rerunVariant)
	for _, c := range []struct {
		variant string
		dir     int
		want    string
	}{
		{"faster", -1, Supported},
		{"faster", +1, Refuted},
		{"mixed", -1, NotShown},
		{"mixed", +1, NotShown},
	} {
		v, err := s.Judge(Claim{Text: "x", Variant: c.variant, Direction: c.dir}, cells, records)
		require.NoError(t, err)
		require.Equal(t, c.want, v.Verdict, "%s %+d", c.variant, c.dir)
	}
	v, err := s.Judge(Claim{Text: "x", Variant: "faster", Direction: -1}, cells, records)
	require.NoError(t, err)
	for _, a := range v.Arms {
		require.Equal(t, 5, a.Reruns, a.Arm)
		require.InDelta(t, 1.0/243, a.Test.PLower, 1e-12, a.Arm)
	}
	// The rerun compared with its own baseline: one noise test of the
	// noise, never an effect.
	v, err = s.Judge(Claim{Text: "x", Variant: "rerun", Direction: -1}, cells, records)
	require.NoError(t, err)
	require.Equal(t, NotShown, v.Verdict)
}

// TestJudgeNoChange: a claim of no change is refuted by a move beyond the
// noise, supported only within its margin, and needs a rerun at five
// seeds (two-sided over two arms, p must reach 1.25 %).
func TestJudgeNoChange(t *testing.T) {
	s, cells, records := claimStudy(t, claimValues)
	v, err := s.Judge(Claim{Text: "x", Variant: "mixed", Margin: 10}, cells, records)
	require.NoError(t, err)
	require.Equal(t, TooFewSeeds, v.Verdict)

	s, cells, records = claimStudy(t, withRerun, rerunVariant)
	for _, c := range []struct {
		variant string
		margin  float64
		want    string
	}{
		{"mixed", 10, Supported}, // −5 to +5 %, inside ±10 %
		{"mixed", 3, NotShown},
		{"mixed", 0, NotShown},
		{"faster", 20, Refuted},
	} {
		v, err := s.Judge(Claim{Text: "x", Variant: c.variant, Margin: c.margin}, cells, records)
		require.NoError(t, err)
		require.Equal(t, c.want, v.Verdict, "%s ±%g", c.variant, c.margin)
	}
	_, err = s.Judge(Claim{Text: "x", Variant: "mixed", Margin: -1}, cells, records)
	require.ErrorContains(t, err, "margin -1: want 0 to 100 percent")
}

// TestJudgeRequires: a claim about an intervention on an effect is not
// testable where the claim showing the effect is not supported.
func TestJudgeRequires(t *testing.T) {
	s, cells, records := claimStudy(t, claimValues)
	s.Claims = []Claim{
		{Text: "Mixed is faster:", Variant: "mixed", Direction: -1},
		{Text: "Faster is faster:", Variant: "faster", Direction: -1},
		{Text: "Faster, given mixed:", Variant: "faster", Direction: -1, Requires: 1},
		{Text: "Faster, given faster:", Variant: "faster", Direction: -1, Requires: 2},
	}
	v, err := s.Judge(s.Claims[2], cells, records)
	require.NoError(t, err)
	require.Equal(t, NotTestable, v.Verdict)
	require.Equal(t, `the effect it acts on is not shown here: claim 1, "Mixed is faster", is not shown`, v.Why)
	v, err = s.Judge(s.Claims[3], cells, records)
	require.NoError(t, err)
	require.Equal(t, Supported, v.Verdict)
	_, err = s.Judge(Claim{Text: "x", Variant: "faster", Requires: 9}, cells, records)
	require.ErrorContains(t, err, "requires claim 9")
}

// TestJudgeAgainst: a claim names the variant it compares with, or
// another arm under the same variant.
func TestJudgeAgainst(t *testing.T) {
	s, cells, records := claimStudy(t, func(variant int, arm string, seed int) float64 {
		if arm == "wholend" {
			return 5
		}
		return claimValues(variant, arm, seed)
	})
	v, err := s.Judge(Claim{Text: "x", Variant: "mixed", Against: "faster", Arms: []string{"c32"}, Direction: +1}, cells, records)
	require.NoError(t, err)
	require.Equal(t, Supported, v.Verdict, "0.95 and 1.05 against 0.9")
	v, err = s.Judge(Claim{Text: "x", Variant: "base", AgainstArm: "wholend", Direction: -1}, cells, records)
	require.NoError(t, err)
	require.Equal(t, Supported, v.Verdict)
	require.Len(t, v.Arms, 1, "the arm compared with is not judged against itself")
	require.InDelta(t, -80, v.Arms[0].Paired.Median.V, 1e-9)

	for _, bad := range []struct {
		c    Claim
		want string
	}{
		{Claim{Text: "x", Variant: "nope"}, `no variant "nope"`},
		{Claim{Text: "x", Variant: "faster", Against: "nope"}, `no variant "nope"`},
		{Claim{Text: "x", Variant: "faster", Against: "faster"}, "compares variant \"faster\" with itself"},
		{Claim{Text: "x", Variant: "faster", Arms: []string{"nope"}}, "nope"},
	} {
		_, err := s.Judge(bad.c, cells, records)
		require.ErrorContains(t, err, bad.want)
	}
}

// TestJudgeTooFewSeeds: four paired seeds without a rerun cannot reach
// 5 % (1/16), nor can four left once a seed censored on both sides drops
// out; a candidate censored alone counts as slower.
func TestJudgeTooFewSeeds(t *testing.T) {
	s, cells, records := claimStudy(t, func(variant int, arm string, seed int) float64 {
		if variant == 1 && seed == 4 {
			return -1 // no record
		}
		return claimValues(variant, arm, seed)
	})
	v, err := s.Judge(Claim{Text: "x", Variant: "faster", Direction: -1}, cells, records)
	require.NoError(t, err)
	require.Equal(t, TooFewSeeds, v.Verdict)
	require.Contains(t, v.Why, "4 paired seeds with 0 reruns of the reference: its smallest attainable p-value, 0.0625, is above 0.05")

	s, cells, records = claimStudy(t, func(variant int, arm string, seed int) float64 {
		if variant == 2 {
			return math.NaN()
		}
		return 1
	})
	v, err = s.Judge(Claim{Text: "x", Variant: "mixed", Direction: +1}, cells, records)
	require.NoError(t, err)
	require.Equal(t, Supported, v.Verdict, "never completing is slower on every seed")

	s, cells, records = claimStudy(t, func(variant int, arm string, seed int) float64 {
		if seed == 0 && variant != 1 {
			return math.NaN()
		}
		return claimValues(variant, arm, seed)
	})
	v, err = s.Judge(Claim{Text: "x", Variant: "mixed", Direction: -1}, cells, records)
	require.NoError(t, err)
	require.Equal(t, TooFewSeeds, v.Verdict)
}

// TestStudyAnswer: the page's answer names the question, each claim's
// verdict, the statistic, the seeds and the test behind it.
func TestStudyAnswer(t *testing.T) {
	s, cells, records := claimStudy(t, withRerun, rerunVariant)
	s.Claims = []Claim{{Text: "PIE makes C faster.", Variant: "faster", Arms: []string{"c32"}, Direction: -1}}
	a, err := s.Answer(cells, records)
	require.NoError(t, err)
	require.Contains(t, a, "Question: Does it move?")
	require.Contains(t, a, `- PIE makes C faster. **supported**: p50 of "faster" against "base": c32 −10% [−10%, −10%] (93.8 % interval) over 5 seeds (0 up, 5 down), noise test with 5 reruns: geometric-mean effect −10%, p higher 1, p lower 0.00412.`)
	require.Contains(t, a, "Each claim is judged by the noise test")
	page := studyMarkdown(s, cells, records)
	require.True(t, strings.HasSuffix(strings.TrimSpace(page), strings.TrimSpace(a)), "the page ends with the answer")
}

// Every built-in study's claims name its variants and arms, and judge as
// too few seeds before anything has run.
func TestStudyClaimsJudge(t *testing.T) {
	for _, s := range Studies() {
		cells, err := s.Cells(20, []uint64{7}, cell.Config{Gossip: cell.StudyGossip()})
		require.NoError(t, err)
		if s.Name != "harness-vs-simnet" {
			require.NotEmpty(t, s.Claims, s.Name)
		}
		for _, c := range s.Claims {
			v, err := s.Judge(c, cells, nil)
			require.NoError(t, err, "%s: %s", s.Name, c.Text)
			require.Equal(t, TooFewSeeds, v.Verdict)
		}
	}
}

// TestPayloadSweepRerun: the payload sweep's rerun repeats its segmented
// arms at 128 KiB, where their gaps to the whole message are smallest, as
// the same cells under another key, and the noise test counts it among
// the 128 KiB cells' runs (the candidate's, here).
func TestPayloadSweepRerun(t *testing.T) {
	s, err := LookupStudy("payload-sweep")
	require.NoError(t, err)
	cells, err := s.Cells(20, seeds(7, 11), cell.Config{Gossip: cell.StudyGossip()})
	require.NoError(t, err)
	rerun := s.labelIndex(rerunLabel)
	require.GreaterOrEqual(t, rerun, 0)
	small := s.labelIndex("128 KiB")
	at128 := map[string]cell.Config{}
	for _, c := range cells {
		if c.Variant == small {
			at128[c.Arm.Name] = c.Configs[0]
		}
	}
	off := []float64{1.01, 0.98, 1.02, 1.03, 0.95}
	records := map[string]*cell.Record{}
	reruns := 0
	for _, c := range cells {
		for i, cfg := range c.Configs {
			v := 1.0
			switch {
			case c.Arm.Name == "wholend":
				v = 2
			case c.Variant == rerun:
				v = off[i]
			}
			records[cfg.Key()] = &cell.Record{Key: cfg.Key(), P50S: &v}
		}
		if c.Variant != rerun {
			continue
		}
		reruns++
		require.NotEqual(t, "wholend", c.Arm.Name, "the whole message is the claims' reference, not rerun")
		same := c.Configs[0]
		require.Equal(t, 1, same.Replicate)
		require.Equal(t, 128<<10, int(same.Payload))
		require.NotEqual(t, at128[c.Arm.Name].Key(), same.Key())
		same.Replicate = 0
		require.Equal(t, at128[c.Arm.Name].Key(), same.Key(), "the rerun repeats the 128 KiB cell")
	}
	require.Equal(t, len(s.Arms)-1, reruns)
	v, err := s.Judge(s.Claims[0], cells, records)
	require.NoError(t, err)
	require.Equal(t, Supported, v.Verdict)
	// Each arm against the whole message at 128 KiB: two runs of the arm
	// and one of the whole message at each seed, the arm's two below it,
	// so one of C(3, 2)^5 = 243 relabellings is as low.
	require.Contains(t, s.Claims[0].Text, "128 KiB")
	for _, a := range v.Arms {
		require.Equal(t, 5, a.Reruns, a.Arm)
		require.InDelta(t, 1.0/243, a.Test.PLower, 1e-12, a.Arm)
	}
}

// TestClaimCells: the cells a study's answer reads are each claim's
// variant and arms, what they are compared with, and the reruns with the
// baseline cells they repeat (warm-gap's and pie's, by name); for every
// study, records of the other cells change no answer.
func TestClaimCells(t *testing.T) {
	read := func(s Study, cells []StudyCell) []string {
		var out []string
		for i, in := range s.ClaimCells(cells) {
			if in {
				out = append(out, s.Variants[cells[i].Variant].Label+"/"+cells[i].Arm.Name)
			}
		}
		return out
	}
	base := cell.Config{Gossip: cell.StudyGossip()}

	wg, err := LookupStudy("warm-gap")
	require.NoError(t, err)
	cells, err := wg.Cells(0, nil, base)
	require.NoError(t, err)
	var want []string
	for _, v := range []string{"cold", "warm, publish at once", "warm, 5 s drain gap", rerunLabel} {
		want = append(want, v+"/acoded_32k", v+"/bcodedfc1_32k")
	}
	require.Equal(t, want, read(wg, cells))

	pie, err := LookupStudy("pie")
	require.NoError(t, err)
	cells, err = pie.Cells(0, nil, base)
	require.NoError(t, err)
	want = []string{"harness (fq_codel)/wholend", "harness (fq_codel)/c_32k",
		"PIE uplink, Linux parameters/wholend", "PIE uplink, Linux parameters/c_32k"}
	for _, v := range []string{"host fq_codel in front of an access FIFO", "FIFO uplink"} {
		for _, a := range pie.Arms {
			arm, err := arms.LookupArm(a)
			require.NoError(t, err)
			want = append(want, v+"/"+arm.Name)
		}
	}
	want = append(want, "FIFO uplink, TCP paced/c_32k", "FIFO uplink, TCP unpaced/c_32k", rerunLabel+"/wholend", rerunLabel+"/c_32k")
	require.Equal(t, want, read(pie, cells))

	// A claim that compares two variants, neither the baseline, with a
	// rerun of the baseline: the spread reads the baseline's cells.
	against, _, _ := claimStudy(t, claimValues, Variant{Label: "rerun", Profile: "harness", Replicate: 1, Skip: []string{"wholend"}})
	against.Claims = []Claim{{Text: "Mixed is faster than faster:", Variant: "mixed", Against: "faster", Direction: -1}}
	cells, err = against.Cells(0, nil, base)
	require.NoError(t, err)
	require.Equal(t, []string{"base/c_32k", "faster/c_32k", "faster/wholend", "mixed/c_32k", "mixed/wholend", "rerun/c_32k"}, read(against, cells))

	for _, s := range append(Studies(), against) {
		cells, err := s.Cells(0, s.Seeds[:5], base)
		require.NoError(t, err)
		all, claimed := map[string]*cell.Record{}, map[string]*cell.Record{}
		in := s.ClaimCells(cells)
		for i, c := range cells {
			for j, cfg := range c.Configs {
				// Values that differ by variant, arm and seed, so that
				// any cell read changes some claim's statistic.
				v := 1 + 0.07*float64(c.Variant) + 0.013*float64(len(c.Arm.Name)) + 0.031*float64(j*j%5)
				r := &cell.Record{Key: cfg.Key(), P50S: &v, P90S: &v, P99S: &v, LastS: &v}
				all[cfg.Key()] = r
				if in[i] {
					claimed[cfg.Key()] = r
				}
			}
		}
		want, err := s.Answer(cells, all)
		require.NoError(t, err, s.Name)
		got, err := s.Answer(cells, claimed)
		require.NoError(t, err, s.Name)
		require.Equal(t, want, got, s.Name)
	}
}
