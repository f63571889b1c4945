package validate

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// appendixDP50 returns Appendix D's home p50 medians of one backend and
// transport, by arm, from the embedded table.
func appendixDP50(t *testing.T, backend, transport string) map[string]Value {
	t.Helper()
	rows, err := LoadTable("appendix_d_home")
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]Value)
	for _, r := range rows {
		if r.Backend == backend && r.Transport == transport && r.Statistic == "p50" && r.Measure == "value" {
			out[r.Arm] = Known(r.Value)
		}
	}
	if len(out) != 7 {
		t.Fatalf("%s/%s: %d arms, want 7", backend, transport, len(out))
	}
	return out
}

func TestRankingTwinAgainstShadowQUIC(t *testing.T) {
	// Appendix D, home p50. Twin order: coded A .705, A-tuned .750,
	// coded B .754, C + RS .931, B .938, C .974, whole 4.91. Shadow QUIC:
	// coded A .699, C + RS .715, C .766, A-tuned .793, coded B .808,
	// B .945, whole 3.22. Writing the twin's order as Shadow positions,
	// 1 4 5 2 6 3 7, has 5 inversions: (A-tuned, C + RS), (A-tuned, C),
	// (coded B, C + RS), (coded B, C), (B, C). 21 pairs, 16 concordant,
	// tau = 11/21. Section 3: "the A family keeps its order, but C moves
	// from the slowest segmented arm on the harness to among the fastest".
	twin := appendixDP50(t, "twin", "quic")
	shadow := appendixDP50(t, "shadow", "quic")
	wantTwin := []string{"coded A 32k", "A-tuned 32k", "coded B 32k", "C + RS 32k", "B tuned 32k", "C 32k", "whole message"}
	if got := RankArms(twin); !slices.Equal(got, wantTwin) {
		t.Errorf("RankArms(twin) = %v, want %v", got, wantTwin)
	}
	r, err := CompareRankings(twin, shadow)
	if err != nil {
		t.Fatal(err)
	}
	wantPairs := [][2]string{
		{"A-tuned 32k", "C + RS 32k"}, {"A-tuned 32k", "C 32k"}, {"B tuned 32k", "C 32k"},
		{"coded B 32k", "C + RS 32k"}, {"coded B 32k", "C 32k"},
	}
	if r.Concordant != 16 || r.Discordant != 5 || r.Tied != 0 || math.Abs(r.Tau-11.0/21) > 1e-12 || r.Same() {
		t.Errorf("ranking = %+v, want 16 concordant, 5 discordant, tau 11/21", r)
	}
	if !slices.Equal(r.DiscordantPairs, wantPairs) {
		t.Errorf("discordant pairs = %v, want %v", r.DiscordantPairs, wantPairs)
	}
	// The published record and its twin rank the A family and the whole
	// message alike.
	pub := appendixDP50(t, "harness", "quic")
	keep := func(m map[string]Value) map[string]Value {
		out := make(map[string]Value)
		for _, a := range []string{"A-tuned 32k", "coded A 32k", "whole message"} {
			out[a] = m[a]
		}
		return out
	}
	if r, _ := CompareRankings(keep(pub), keep(twin)); !r.Same() || r.Tau != 1 {
		t.Errorf("published against twin, A family and whole message: %+v", r)
	}
}

func TestCompareRankingsTiesAndErrors(t *testing.T) {
	// Two censored medians tie; a tie on one side is not a discordance.
	ref := map[string]Value{"a": Known(1), "b": CensoredValue(), "c": CensoredValue()}
	cand := map[string]Value{"a": Known(2), "b": Known(5), "c": Known(3)}
	r, err := CompareRankings(ref, cand)
	if err != nil || r.Concordant != 2 || r.Tied != 1 || r.Discordant != 0 || !r.Same() {
		t.Errorf("CompareRankings with censored ties = %+v, %v", r, err)
	}
	delete(cand, "c")
	if _, err := CompareRankings(ref, cand); err == nil || !strings.Contains(err.Error(), `"c"`) {
		t.Errorf("missing arm: err = %v", err)
	}
}

func TestCompareByHand(t *testing.T) {
	// Reference atuned: 0.70 0.75 0.80 0.72 → median (0.72 + 0.75)/2 =
	// 0.735, spread 0.70..0.80. Candidate atuned 0.78 0.79 0.77 → 0.78,
	// inside; difference (0.78 − 0.735)/0.735 = +6.12 %.
	// Reference c32: 0.95 0.97 1.00 → 0.97, spread 0.95..1.00.
	ref := map[string][]Value{
		"atuned": known(0.70, 0.75, 0.80, 0.72),
		"c32":    known(0.95, 0.97, 1.00),
	}
	// Candidate c32 0.76 0.77 0.75 → 0.76: outside, −21.65 %, and now
	// faster than atuned: one discordant pair.
	v, err := Compare(ref, map[string][]Value{"atuned": known(0.78, 0.79, 0.77), "c32": known(0.76, 0.77, 0.75)})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Arms) != 2 || v.Arms[0].Arm != "atuned" || v.Arms[1].Arm != "c32" {
		t.Fatalf("arms = %+v", v.Arms)
	}
	a, c := v.Arms[0], v.Arms[1]
	if !sameValue(a.RefMedian, Known(0.735)) || !sameValue(a.CandMedian, Known(0.78)) || !a.Within ||
		math.Abs(a.DiffPct.V-6.122448979591836) > 1e-9 || !sameValue(a.RefSpread.Lo, Known(0.70)) || !sameValue(a.RefSpread.Hi, Known(0.80)) {
		t.Errorf("atuned = %+v", a)
	}
	if !sameValue(c.CandMedian, Known(0.76)) || c.Within || math.Abs(c.DiffPct.V-(-21.649484536082475)) > 1e-9 {
		t.Errorf("c32 = %+v", c)
	}
	if v.Ranking.Discordant != 1 || v.Ranking.Tau != -1 || v.Agree() {
		t.Errorf("ranking %+v, agree %v; want one discordant pair, no agreement", v.Ranking, v.Agree())
	}
	// Candidate c32 0.96 0.99 0.98 → 0.98: inside, order kept: agreement.
	v, err = Compare(ref, map[string][]Value{"atuned": known(0.78, 0.79, 0.77), "c32": known(0.96, 0.99, 0.98)})
	if err != nil || !v.Agree() || !v.Arms[1].Within || v.Ranking.Concordant != 1 {
		t.Errorf("Compare = %+v, %v; want agreement", v, err)
	}
	// Inside the spread but the order swapped still disagrees: the
	// reference spreads overlap.
	wide := map[string][]Value{"x": known(1, 2, 3), "y": known(1.5, 2.5, 3.5)}
	v, _ = Compare(wide, map[string][]Value{"x": known(2.9), "y": known(1.6)})
	if !v.Arms[0].Within || !v.Arms[1].Within || v.Agree() {
		t.Errorf("swapped order inside the spreads: %+v, agree %v", v, v.Agree())
	}
	if _, err := Compare(ref, map[string][]Value{"atuned": known(1)}); err == nil || !strings.Contains(err.Error(), `"c32"`) {
		t.Errorf("missing candidate arm: err = %v", err)
	}
	if _, err := Compare(ref, map[string][]Value{"atuned": known(1), "c32": known(1), "b": known(1)}); err == nil || !strings.Contains(err.Error(), `"b"`) {
		t.Errorf("extra candidate arm: err = %v", err)
	}
	if _, err := Compare(ref, map[string][]Value{"atuned": known(1), "c32": nil}); err == nil {
		t.Error("arm without values: no error")
	}
}
