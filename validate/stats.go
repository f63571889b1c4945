package validate

// The study's statistics (docs/references.md, "Completion rule and
// statistics"; the report, section 2, "Paired cells and statistics", and
// section 10, "Statistic").
//
// Rules this file fixes where the study does not spell them out:
//
//   - Median of an even count: the mean of the two middle values. The
//     report does not state the rule. The circumstantial evidence is that
//     the study's comparison tool is a Python script (the report's
//     Appendix C: "compare.py --queue-agnostic harness"), and
//     Python's statistics.median and numpy.median both take the mean of the
//     two middle values. No printed number in the report contradicts it (the
//     medians are of continuous completion times, so the printed values
//     cannot tell the rules apart).
//   - Censoring in a median: values are sorted with censored ones last (as
//     +Inf); the median is censored when the middle value, or either of the
//     two middle values of an even count, is censored. The report prints no
//     median for a set that is mostly censored (the report, section 9: the
//     warm whole message, "nine of ten seeds do not complete inside the
//     cell's window", has no number), which this rule reproduces.
//   - Differences and ratios of a censored value are censored.
//   - A seed spread is min..max of the per-seed values; its upper end is
//     censored when any seed is.

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Value is a statistic that may be censored: a completion time of a receiver
// that never completed, or any statistic that depends on one. V is
// meaningful only when Censored is false; Censored values order after every
// known value.
type Value struct {
	V        float64
	Censored bool
}

// Known returns the uncensored value v.
func Known(v float64) Value { return Value{V: v} }

// CensoredValue returns a censored value. Its V is +Inf, so that a caller
// that forgets to check Censored sees an obviously wrong number.
func CensoredValue() Value { return Value{V: math.Inf(1), Censored: true} }

// Less reports whether v orders strictly before w: known values by number,
// every known value before every censored one, censored values tied.
func (v Value) Less(w Value) bool {
	switch {
	case v.Censored:
		return false
	case w.Censored:
		return true
	default:
		return v.V < w.V
	}
}

// cmp orders values for sorting: -1, 0 or +1 as v is before, tied with or
// after w.
func (v Value) cmp(w Value) int {
	switch {
	case v.Less(w):
		return -1
	case w.Less(v):
		return 1
	default:
		return 0
	}
}

// String writes the number in the shortest form that reads back exactly, or
// "censored".
func (v Value) String() string {
	if v.Censored {
		return "censored"
	}
	return strconv.FormatFloat(v.V, 'g', -1, 64)
}

// sortedValues returns a sorted copy, censored values last.
func sortedValues(vals []Value) []Value {
	s := slices.Clone(vals)
	slices.SortStableFunc(s, Value.cmp)
	return s
}

// QuantileIndex returns the 0-based index, in the sorted completion times of
// m receivers, of the p-quantile: ceil(p × m) − 1 (docs/references.md,
// "Completion rule and statistics"; m is N − 1, every node but the
// publisher). p must be in (0, 1]. A product p × m within 1e-9 (relative)
// of a whole number is taken as that number, so that the index is the one
// exact decimal arithmetic gives: 0.07 × 100 is 7.000000000000001 in binary
// floating point, and its quantile index is 6, not 7.
func QuantileIndex(p float64, m int) (int, error) {
	if m < 1 {
		return 0, fmt.Errorf("validate: quantile over %d receivers, need at least one", m)
	}
	if !(p > 0 && p <= 1) {
		return 0, fmt.Errorf("validate: quantile p = %v, need 0 < p <= 1", p)
	}
	x := p * float64(m)
	k := math.Ceil(x)
	if r := math.Round(x); math.Abs(x-r) <= 1e-9*math.Max(1, x) {
		k = r
	}
	return max(int(k)-1, 0), nil
}

// Quantile returns the p-quantile of the receivers' completion times by the
// study's rule: sort the times (censored receivers last) and take the
// element at QuantileIndex(p, len(times)). The result is censored when that
// element is.
func Quantile(times []Value, p float64) (Value, error) {
	i, err := QuantileIndex(p, len(times))
	if err != nil {
		return Value{}, err
	}
	return sortedValues(times)[i], nil
}

// RateAtDeadline counts the receivers complete by the deadline (completion
// time <= deadline, in the times' unit) and returns that count and the
// number of receivers: the study's rate@3s with a 3 s deadline. Censored
// receivers never count.
func RateAtDeadline(times []Value, deadline float64) (k, n int) {
	for _, t := range times {
		if !t.Censored && t.V <= deadline {
			k++
		}
	}
	return k, len(times)
}

// ReceiverStats is one run's statistics over its receivers, as a cell record
// carries them.
type ReceiverStats struct {
	Receivers int     // N − 1
	Completed int     // receivers that completed at all
	P50       Value   // receivers' median completion time
	P90       Value   // 90th percentile
	P99       Value   // 99th percentile
	Last      Value   // the last receiver; censored unless all completed
	Deadline  float64 // the deadline RateK is counted against
	RateK     int     // receivers complete by Deadline
}

// SummarizeReceivers computes p50, p90, p99, last and rate@deadline of one
// run from its receivers' completion times (censored for a receiver that
// never completed).
func SummarizeReceivers(times []Value, deadline float64) (ReceiverStats, error) {
	s := ReceiverStats{Receivers: len(times), Deadline: deadline}
	for _, t := range times {
		if !t.Censored {
			s.Completed++
		}
	}
	var err error
	for _, q := range []struct {
		p   float64
		dst *Value
	}{{0.5, &s.P50}, {0.9, &s.P90}, {0.99, &s.P99}, {1, &s.Last}} {
		if *q.dst, err = Quantile(times, q.p); err != nil {
			return ReceiverStats{}, fmt.Errorf("validate: summarize receivers: %w", err)
		}
	}
	s.RateK, _ = RateAtDeadline(times, deadline)
	return s, nil
}

// Median returns the median of per-seed values: the middle value of an odd
// count, the mean of the two middle values of an even count, with censored
// values sorted last. It is censored when a value it depends on is. The
// file comment gives the report evidence for both rules.
func Median(vals []Value) (Value, error) {
	if len(vals) == 0 {
		return Value{}, errors.New("validate: median of no values")
	}
	s := sortedValues(vals)
	n := len(s)
	if n%2 == 1 {
		return s[n/2], nil
	}
	a, b := s[n/2-1], s[n/2]
	if a.Censored || b.Censored {
		return CensoredValue(), nil
	}
	return Known((a.V + b.V) / 2), nil
}

// DiffPct returns the difference of x from the reference y in percent of y,
// (x − y) / y × 100, censored when either is. y must not be zero.
func DiffPct(x, y Value) (Value, error) {
	if x.Censored || y.Censored {
		return CensoredValue(), nil
	}
	if y.V == 0 {
		return Value{}, fmt.Errorf("validate: difference of %v from a zero reference", x.V)
	}
	return Known((x.V - y.V) / y.V * 100), nil
}

// Ratio returns x / y, censored when either is. y must not be zero.
func Ratio(x, y Value) (Value, error) {
	if x.Censored || y.Censored {
		return CensoredValue(), nil
	}
	if y.V == 0 {
		return Value{}, fmt.Errorf("validate: ratio of %v to zero", x.V)
	}
	return Known(x.V / y.V), nil
}

// Spread is a set of per-seed values' range, Lo..Hi. Hi is censored when any
// value is; Lo only when all are.
type Spread struct {
	Lo, Hi Value
}

// SeedSpread returns the min..max range of per-seed values: the reference
// backend's seed-to-seed spread of the report, section 2 ("a difference
// within the harness's own seed-to-seed spread"), and the bracketed range of
// the paired statistic of section 10.
func SeedSpread(vals []Value) (Spread, error) {
	if len(vals) == 0 {
		return Spread{}, errors.New("validate: spread of no values")
	}
	s := sortedValues(vals)
	return Spread{Lo: s[0], Hi: s[len(s)-1]}, nil
}

// Contains reports whether v lies in Lo..Hi, ends included, with censored
// values taken as +Inf: a censored v is inside only when Hi is censored, and
// a known v above every known value is inside when Hi is censored.
func (s Spread) Contains(v Value) bool {
	return !v.Less(s.Lo) && !s.Hi.Less(v)
}

// SeedValue is one seed's value of a statistic.
type SeedValue struct {
	Seed int
	V    Value
}

// Paired is the statistic of the report's Linux tables (section 10): the
// median across seeds of the per-seed differences of a candidate from a
// reference in percent, with the seeds' range.
type Paired struct {
	Median Value
	Spread
	PerSeed []SeedValue // the per-seed differences, by seed
}

// PairedDiff pairs candidate and reference values by seed and returns the
// median and range of the per-seed differences in percent of the reference.
// Both sides must have the same seeds: a seed the report leaves out (its
// stall rule) is left out of both before the call.
func PairedDiff(cand, ref map[int]Value) (Paired, error) {
	if len(cand) == 0 {
		return Paired{}, errors.New("validate: paired difference of no seeds")
	}
	var p Paired
	for _, seed := range slices.Sorted(maps.Keys(cand)) {
		c := cand[seed]
		r, ok := ref[seed]
		if !ok {
			return Paired{}, fmt.Errorf("validate: paired difference: seed %d has a candidate value and no reference", seed)
		}
		d, err := DiffPct(c, r)
		if err != nil {
			return Paired{}, fmt.Errorf("validate: paired difference: seed %d: %w", seed, err)
		}
		p.PerSeed = append(p.PerSeed, SeedValue{Seed: seed, V: d})
	}
	for _, seed := range slices.Sorted(maps.Keys(ref)) {
		if _, ok := cand[seed]; !ok {
			return Paired{}, fmt.Errorf("validate: paired difference: seed %d has a reference value and no candidate", seed)
		}
	}
	return pairedOf(p.PerSeed)
}

// pairedOf summarises per-seed values: their median and range.
func pairedOf(perSeed []SeedValue) (Paired, error) {
	p := Paired{PerSeed: perSeed}
	vals := make([]Value, len(perSeed))
	for i, sv := range perSeed {
		vals[i] = sv.V
	}
	var err error
	if p.Median, err = Median(vals); err != nil {
		return Paired{}, err
	}
	if p.Spread, err = SeedSpread(vals); err != nil {
		return Paired{}, err
	}
	return p, nil
}

// minus is the sign the report prints before a negative number (U+2212).
const minus = "\u2212"

// FormatDiff writes a difference in percent as the report prints it: a
// whole percent with its sign ("+6%", "−34%", "0%"), or, when the ratio it
// stands for is 2 or more (a difference of +100% or more), the ratio as a
// multiplier with one decimal and no trailing ".0" ("2.5×", "8×"), as in
// section 4's "4.1× or 6.5×" and the post's "6.5× and 4.1×". (Section 10's
// host-scale table puts the sign first, "×2.5"; the tables keep that as a
// ratio value.) A censored difference is "censored".
func FormatDiff(d Value) string {
	if d.Censored {
		return "censored"
	}
	if d.V >= 100 {
		s := strconv.FormatFloat(1+d.V/100, 'f', 1, 64)
		return strings.TrimSuffix(s, ".0") + "×"
	}
	r := math.Round(d.V)
	switch {
	case r > 0:
		return "+" + strconv.FormatFloat(r, 'f', 0, 64) + "%"
	case r < 0:
		return minus + strconv.FormatFloat(-r, 'f', 0, 64) + "%"
	default:
		return "0%"
	}
}

// FormatPaired writes a paired statistic as section 10's tables do:
// "+68% [+26 to +79%]", "+4% [0 to +13%]". Each of the three numbers is
// written by FormatDiff; the range's lower end loses its "%".
func FormatPaired(p Paired) string {
	return FormatDiff(p.Median) + " [" + strings.TrimSuffix(FormatDiff(p.Lo), "%") + " to " + FormatDiff(p.Hi) + "]"
}

// FormatValue prints an uplink value in a reference row's unit: seconds to
// the millisecond, percentages to a tenth, "cens." for a censored value.
func FormatValue(v Value, unit string) string {
	switch {
	case v.Censored:
		return "cens."
	case unit == "s":
		return fmt.Sprintf("%.3f s", v.V)
	case unit == "%":
		return fmt.Sprintf("%.1f %%", v.V)
	}
	return fmt.Sprintf("%.4g %s", v.V, unit)
}
