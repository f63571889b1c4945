package validate

import (
	"math"
	"strings"
	"testing"
)

// known is a helper: the uncensored values vs.
func known(vs ...float64) []Value {
	out := make([]Value, len(vs))
	for i, v := range vs {
		out[i] = Known(v)
	}
	return out
}

// censored is n censored values.
func censored(n int) []Value {
	out := make([]Value, n)
	for i := range out {
		out[i] = CensoredValue()
	}
	return out
}

// sameValue compares values, numbers to within 1e-9.
func sameValue(a, b Value) bool {
	if a.Censored || b.Censored {
		return a.Censored == b.Censored
	}
	return math.Abs(a.V-b.V) <= 1e-9
}

func TestQuantileIndexByHand(t *testing.T) {
	// index = ceil(p × m) − 1, worked by hand for each case.
	cases := []struct {
		p    float64
		m    int
		want int
	}{
		{0.5, 9, 4},     // ceil(4.5) = 5
		{0.9, 9, 8},     // ceil(8.1) = 9
		{0.99, 9, 8},    // ceil(8.91) = 9
		{1, 9, 8},       // the last receiver
		{0.5, 10, 4},    // ceil(5) = 5
		{0.9, 10, 8},    // ceil(9) = 9
		{0.99, 10, 9},   // ceil(9.9) = 10
		{0.5, 499, 249}, // N = 500: ceil(249.5) = 250
		{0.9, 499, 449}, // ceil(449.1) = 450
		{0.99, 499, 494},
		{0.5, 99, 49}, // N = 100 (the Linux cells): ceil(49.5) = 50
		{0.9, 99, 89}, // ceil(89.1) = 90
		{0.99, 99, 98},
		{0.5, 1, 0},
		{0.07, 100, 6}, // 7 exactly, though 0.07 × 100 = 7.000000000000001 in float64
		{0.29, 100, 28},
		{0.01, 10, 0}, // ceil(0.1) = 1
	}
	for _, c := range cases {
		got, err := QuantileIndex(c.p, c.m)
		if err != nil || got != c.want {
			t.Errorf("QuantileIndex(%v, %d) = %d, %v; want %d", c.p, c.m, got, err, c.want)
		}
	}
	for _, bad := range []struct {
		p float64
		m int
	}{{0, 9}, {-0.5, 9}, {1.01, 9}, {math.NaN(), 9}, {0.5, 0}} {
		if _, err := QuantileIndex(bad.p, bad.m); err == nil {
			t.Errorf("QuantileIndex(%v, %d): no error", bad.p, bad.m)
		}
	}
}

func TestQuantileNineReceivers(t *testing.T) {
	// N − 1 = 9 receivers, unsorted; sorted: 0.1 … 0.9.
	times := known(0.9, 0.1, 0.5, 0.3, 0.7, 0.2, 0.8, 0.4, 0.6)
	for _, c := range []struct {
		p    float64
		want float64
	}{{0.5, 0.5}, {0.9, 0.9}, {0.99, 0.9}, {0.2, 0.2}, {0.34, 0.4}} {
		// 0.2: ceil(1.8) − 1 = 1 → 0.2; 0.34: ceil(3.06) − 1 = 3 → 0.4.
		got, err := Quantile(times, c.p)
		if err != nil || !sameValue(got, Known(c.want)) {
			t.Errorf("Quantile(p = %v) = %v, %v; want %v", c.p, got, err, c.want)
		}
	}
	if times[0].V != 0.9 {
		t.Errorf("Quantile sorted its input in place: times[0] = %v", times[0])
	}
}

func TestQuantileCensored(t *testing.T) {
	// Nine receivers, two never complete: sorted 0.1 … 0.7, C, C.
	// p50: index 4 → 0.5; p90, p99 and last: index 8 → censored;
	// p = 0.75: ceil(6.75) − 1 = 6 → 0.7; p = 0.8: ceil(7.2) − 1 = 7 → censored.
	times := append(censored(1), known(0.7, 0.1, 0.5, 0.3)...)
	times = append(times, CensoredValue())
	times = append(times, known(0.2, 0.6, 0.4)...)
	s, err := SummarizeReceivers(times, 0.45)
	if err != nil {
		t.Fatal(err)
	}
	want := ReceiverStats{Receivers: 9, Completed: 7, P50: Known(0.5), P90: CensoredValue(), P99: CensoredValue(), Last: CensoredValue(), Deadline: 0.45, RateK: 4}
	if s.Receivers != want.Receivers || s.Completed != want.Completed || s.RateK != want.RateK ||
		!sameValue(s.P50, want.P50) || !sameValue(s.P90, want.P90) || !sameValue(s.P99, want.P99) || !sameValue(s.Last, want.Last) {
		t.Errorf("SummarizeReceivers = %+v, want %+v", s, want)
	}
	for _, c := range []struct {
		p    float64
		want Value
	}{{0.75, Known(0.7)}, {0.8, CensoredValue()}} {
		got, _ := Quantile(times, c.p)
		if !sameValue(got, c.want) {
			t.Errorf("Quantile(p = %v) = %v, want %v", c.p, got, c.want)
		}
	}
}

func TestQuantileTenReceiversOneCensored(t *testing.T) {
	// m = 10: p90 index 8 (the ninth, known), p99 index 9 (censored).
	times := append(known(1, 2, 3, 4, 5, 6, 7, 8, 9), CensoredValue())
	p90, _ := Quantile(times, 0.9)
	p99, _ := Quantile(times, 0.99)
	if !sameValue(p90, Known(9)) || !p99.Censored {
		t.Errorf("p90 = %v, p99 = %v; want 9 and censored", p90, p99)
	}
}

func TestRateAtDeadline(t *testing.T) {
	// The deadline is inclusive ("complete by 3 s"); censored never count.
	times := append(known(0.5, 2.999, 3, 3.001, 7), censored(2)...)
	k, n := RateAtDeadline(times, 3)
	if k != 3 || n != 7 {
		t.Errorf("RateAtDeadline = %d of %d, want 3 of 7", k, n)
	}
}

func TestMedianByHand(t *testing.T) {
	C := CensoredValue()
	cases := []struct {
		name string
		in   []Value
		want Value
	}{
		{"odd", known(3, 1, 2), Known(2)},
		{"even: mean of the two middle", known(4.0, 1.0, 3.0, 2.0), Known(2.5)},
		{"ten seeds", known(0.81, 0.62, 0.75, 0.68, 0.93, 0.71, 0.66, 0.88, 0.79, 0.70), Known((0.71 + 0.75) / 2)},
		{"even, censored above the middle", append(known(1, 2, 3), C), Known(2.5)},
		{"even, a middle value censored", append(known(1, 2), C, C), C},
		{"odd, middle censored", append(known(1), C, C), C},
		{"odd, censored above the middle", append(known(5, 1), C), Known(5)},
		{"one value", known(7), Known(7)},
		{"one censored", []Value{C}, C},
		{"nine of ten seeds censored", append(known(4.2), censored(9)...), C},
	}
	for _, c := range cases {
		got, err := Median(c.in)
		if err != nil || !sameValue(got, c.want) {
			t.Errorf("%s: Median = %v, %v; want %v", c.name, got, err, c.want)
		}
	}
	if _, err := Median(nil); err == nil {
		t.Error("Median of nothing: no error")
	}
}

func TestDiffPctAndRatioAgainstReport(t *testing.T) {
	// Appendix D, home: Shadow QUIC against the twin, from the printed
	// medians. Whole message p50: (3.22 − 4.91) / 4.91 = −34.42 %.
	d, err := DiffPct(Known(3.22), Known(4.91))
	if err != nil || math.Abs(d.V-(-34.419551934826885)) > 1e-9 || FormatDiff(d) != "−34%" {
		t.Errorf("DiffPct(3.22, 4.91) = %v (%s), %v; want −34.42 (−34%%)", d, FormatDiff(d), err)
	}
	// Section 4: whole message over A-tuned, 4.91 / 0.750 = 6.55 (6.5×)
	// and 3.22 / 0.793 = 4.06 (4.1×).
	r, _ := Ratio(Known(4.91), Known(0.750))
	if math.Abs(r.V-6.546666666666667) > 1e-9 {
		t.Errorf("Ratio(4.91, 0.750) = %v", r)
	}
	if d, _ := DiffPct(Known(3.22), Known(0.793)); FormatDiff(d) != "4.1×" {
		t.Errorf("FormatDiff(3.22 vs 0.793) = %s, want 4.1×", FormatDiff(d))
	}
	if d, _ := DiffPct(Known(4.91), Known(0.750)); FormatDiff(d) != "6.5×" {
		t.Errorf("FormatDiff(4.91 vs 0.750) = %s, want 6.5×", FormatDiff(d))
	}
	for _, c := range []struct{ x, y Value }{{CensoredValue(), Known(1)}, {Known(1), CensoredValue()}} {
		if d, err := DiffPct(c.x, c.y); err != nil || !d.Censored {
			t.Errorf("DiffPct(%v, %v) = %v, %v; want censored", c.x, c.y, d, err)
		}
		if r, err := Ratio(c.x, c.y); err != nil || !r.Censored {
			t.Errorf("Ratio(%v, %v) = %v, %v; want censored", c.x, c.y, r, err)
		}
	}
	if _, err := DiffPct(Known(1), Known(0)); err == nil {
		t.Error("DiffPct against zero: no error")
	}
	if _, err := Ratio(Known(1), Known(0)); err == nil {
		t.Error("Ratio to zero: no error")
	}
}

func TestFormatDiff(t *testing.T) {
	cases := []struct {
		in   Value
		want string
	}{
		{Known(5.7), "+6%"},
		{Known(-0.85), "−1%"},
		{Known(0.4), "0%"},
		{Known(-0.4), "0%"},
		{Known(0), "0%"},
		{Known(12.5), "+13%"}, // half away from zero
		{Known(-12.5), "−13%"},
		{Known(99.4), "+99%"},
		{Known(100), "2×"},
		{Known(150), "2.5×"},
		{Known(260), "3.6×"},
		{Known(707.7), "8.1×"},
		{Known(700), "8×"},
		{Known(-60), "−60%"}, // only ratios of 2 or more become multipliers
		{CensoredValue(), "censored"},
	}
	for _, c := range cases {
		if got := FormatDiff(c.in); got != c.want {
			t.Errorf("FormatDiff(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestPairedDiffEvenSeeds(t *testing.T) {
	// Four seeds. Per-seed differences by hand:
	// 7: (110 − 100)/100 = +10; 8: (90 − 100)/100 = −10;
	// 9: (120 − 100)/100 = +20; 10: (100 − 80)/80 = +25.
	// Sorted −10, +10, +20, +25: median (10 + 20)/2 = +15, range −10 to +25.
	cand := map[int]Value{7: Known(110), 8: Known(90), 9: Known(120), 10: Known(100)}
	ref := map[int]Value{7: Known(100), 8: Known(100), 9: Known(100), 10: Known(80)}
	p, err := PairedDiff(cand, ref)
	if err != nil {
		t.Fatal(err)
	}
	if !sameValue(p.Median, Known(15)) || !sameValue(p.Lo, Known(-10)) || !sameValue(p.Hi, Known(25)) {
		t.Errorf("PairedDiff = median %v [%v, %v], want 15 [−10, 25]", p.Median, p.Lo, p.Hi)
	}
	if got := FormatPaired(p); got != "+15% [−10 to +25%]" {
		t.Errorf("FormatPaired = %q", got)
	}
	if len(p.PerSeed) != 4 || p.PerSeed[0].Seed != 7 || !sameValue(p.PerSeed[3].V, Known(25)) {
		t.Errorf("PerSeed = %+v", p.PerSeed)
	}
	// A censored seed: the range's top is censored; the median of
	// −10, +10, +20, C is (10 + 20)/2, unaffected.
	cand[10] = CensoredValue()
	p, _ = PairedDiff(cand, ref)
	if !sameValue(p.Median, Known(15)) || !p.Hi.Censored || !sameValue(p.Lo, Known(-10)) {
		t.Errorf("with a censored seed: %v [%v, %v]", p.Median, p.Lo, p.Hi)
	}
	if got := FormatPaired(p); got != "+15% [−10 to censored]" {
		t.Errorf("FormatPaired = %q", got)
	}
	// Unpaired seeds are an error naming the seed.
	delete(ref, 9)
	if _, err := PairedDiff(cand, ref); err == nil || !strings.Contains(err.Error(), "seed 9") {
		t.Errorf("unpaired seed: err = %v", err)
	}
}

func TestFormatPairedLikeReport(t *testing.T) {
	// The section 10 FIFO table's printed strings from their numbers.
	cases := []struct {
		med, lo, hi float64
		want        string
	}{
		{68, 26, 79, "+68% [+26 to +79%]"},
		{4, 0, 13, "+4% [0 to +13%]"},
		{23, -7, 58, "+23% [−7 to +58%]"},
		{-1, -14, 8, "−1% [−14 to +8%]"},
	}
	for _, c := range cases {
		p := Paired{Median: Known(c.med), Spread: Spread{Lo: Known(c.lo), Hi: Known(c.hi)}}
		if got := FormatPaired(p); got != c.want {
			t.Errorf("FormatPaired(%v [%v, %v]) = %q, want %q", c.med, c.lo, c.hi, got, c.want)
		}
	}
}

func TestSeedSpreadContains(t *testing.T) {
	s, err := SeedSpread(known(0.70, 0.62, 0.81))
	if err != nil || !sameValue(s.Lo, Known(0.62)) || !sameValue(s.Hi, Known(0.81)) {
		t.Fatalf("SeedSpread = %+v, %v", s, err)
	}
	for _, c := range []struct {
		v    Value
		want bool
	}{{Known(0.62), true}, {Known(0.81), true}, {Known(0.7), true}, {Known(0.619), false}, {Known(0.811), false}, {CensoredValue(), false}} {
		if got := s.Contains(c.v); got != c.want {
			t.Errorf("[0.62, 0.81].Contains(%v) = %v, want %v", c.v, got, c.want)
		}
	}
	// A reference seed that never completed stretches the spread to +Inf.
	s, _ = SeedSpread(append(known(0.70, 0.62), CensoredValue()))
	if !s.Hi.Censored || !s.Contains(Known(50)) || !s.Contains(CensoredValue()) || s.Contains(Known(0.5)) {
		t.Errorf("censored spread %+v: contains 50 %v, censored %v, 0.5 %v", s, s.Contains(Known(50)), s.Contains(CensoredValue()), s.Contains(Known(0.5)))
	}
	if _, err := SeedSpread(nil); err == nil {
		t.Error("SeedSpread of nothing: no error")
	}
}
