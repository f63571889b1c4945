package validate

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/protocols/cell"
)

// Every study builds valid cells (profiles and knobs accepted, and every
// cell's Check passed), one per variant, arm and seed, each variant a
// different cell.
func TestStudiesBuild(t *testing.T) {
	for _, s := range Studies() {
		cells, err := s.Cells(20, []uint64{7, 8}, cell.Config{Gossip: cell.StudyGossip()})
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		want := 0
		for _, v := range s.Variants {
			want += len(s.Arms) - len(v.Skip)
		}
		if len(cells) != want {
			t.Fatalf("%s: %d cells, want %d", s.Name, len(cells), want)
		}
		keys := map[string]bool{}
		for _, c := range cells {
			for _, cfg := range c.Configs {
				if cfg.N != 20 || cfg.Degree != 19 {
					t.Fatalf("%s: N %d degree %d", s.Name, cfg.N, cfg.Degree)
				}
				// What a cell process checks before it builds a host, and
				// validate before any cell starts.
				if err := cfg.Check(); err != nil {
					t.Fatalf("%s: %v", s.Name, err)
				}
				keys[cfg.Key()] = true
			}
		}
		if len(keys) != 2*len(cells) {
			t.Fatalf("%s: %d distinct cells of %d: two variants are the same cell", s.Name, len(keys), 2*len(cells))
		}
	}
	if _, err := LookupStudy("nope"); err == nil {
		t.Fatal("an unknown study was found")
	}
}

// The table's paired difference and the reading, by hand: variant 1 is
// 10 % slower on every seed; variant 2 is faster on one seed and slower on
// the other.
func TestStudyTableReading(t *testing.T) {
	s, _ := LookupStudy("phase-queue")
	s.Variants = s.Variants[:3]
	cells, records := fakeStudyRecords(t, s, func(variant, seed int) (p50, p99 float64) {
		v := map[int][]float64{0: {1, 1}, 1: {1.1, 1.1}, 2: {0.9, 1.05}}[variant][seed] * []float64{1.0, 2.0}[seed]
		return v, v * 1.2
	})
	rows := s.Table(cells, records)
	if len(rows) != 3 || rows[0].VsBase != nil || rows[1].VsBase == nil {
		t.Fatalf("rows %+v", rows)
	}
	if d := rows[1].VsBase.Median.V; d < 9.999 || d > 10.001 {
		t.Fatalf("variant 1 vs baseline %v %%, want +10", d)
	}
	if lo, hi := rows[2].VsBase.Lo.V, rows[2].VsBase.Hi.V; lo > -9.99 || hi < 4.99 {
		t.Fatalf("variant 2 range %v..%v, want -10..+5", lo, hi)
	}
	// Two seeds without a rerun cannot reach 2.5 % either way (1/4).
	r := s.Reading(cells, records)
	if !strings.Contains(r, "by the noise test (two-sided 5 %): 4 too few seeds.") ||
		!strings.Contains(r, "p50 too few seeds, +10% [+10%, +10%] (50 % interval) over 2 seeds (2 up, 0 down), p higher 0.25, lower 1, 0 reruns") ||
		!strings.Contains(r, "No rerun of the baseline") {
		t.Fatalf("reading: %s", r)
	}
}

// fakeStudyRecords builds s's cells at 20 nodes and seeds 7 and 8, with a
// record per run whose p50 and p99 come from value(variant, seed index).
func fakeStudyRecords(t *testing.T, s Study, value func(variant, seed int) (p50, p99 float64)) ([]StudyCell, map[string]*cell.Record) {
	t.Helper()
	cells, err := s.Cells(20, []uint64{7, 8}, cell.Config{Gossip: cell.StudyGossip()})
	if err != nil {
		t.Fatal(err)
	}
	records := map[string]*cell.Record{}
	for _, c := range cells {
		for i, cfg := range c.Configs {
			p50, p99 := value(c.Variant, i)
			records[cfg.Key()] = &cell.Record{Key: cfg.Key(), P50S: &p50, P99S: &p99, Dups: 3}
		}
	}
	return cells, records
}

// connStateStudy is warm-gap cut to its first two variants and first arm,
// with fakeStudyRecords' records (two seeds) carrying state(variant, seed)
// as their connections at the publish.
func connStateStudy(t *testing.T, state func(variant, seed int) *cell.ConnState) (Study, []StudyCell, map[string]*cell.Record) {
	t.Helper()
	s, _ := LookupStudy("warm-gap")
	s.Variants = s.Variants[:2]
	s.Arms = s.Arms[:1]
	cells, records := fakeStudyRecords(t, s, func(variant, seed int) (p50, p99 float64) { return 1, 2 })
	for _, c := range cells {
		for i, cfg := range c.Configs {
			records[cfg.Key()].ConnAtPublish = state(c.Variant, i)
		}
	}
	return s, cells, records
}

// A study about the tail compares p99: b-tail's variant 1 has the
// baseline's p50 but a p99 20 % higher on both seeds, so the reading gives
// p99 +20 % (too few seeds to tell it from noise).
func TestStudyComparesItsStatistic(t *testing.T) {
	s, _ := LookupStudy("b-tail")
	if s.CompareStat() != "p99" {
		t.Fatalf("b-tail compares %s, want p99", s.CompareStat())
	}
	s.Variants = s.Variants[:2]
	s.Arms = s.Arms[:1]
	cells, records := fakeStudyRecords(t, s, func(variant, seed int) (p50, p99 float64) {
		return 0.5, []float64{1.0, 1.5}[seed] * []float64{1, 1.2}[variant]
	})
	rows := s.Table(cells, records)
	if len(rows) != 2 || rows[1].VsBase == nil {
		t.Fatalf("rows %+v", rows)
	}
	if d := rows[1].VsBase.Median.V; d < 19.999 || d > 20.001 {
		t.Fatalf("variant 1 vs baseline %v %%, want +20 (p99)", d)
	}
	if r := s.Reading(cells, records); !strings.Contains(r, "p99 too few seeds, +20% [+20%, +20%]") || !strings.Contains(r, "p50 too few seeds, 0% [0%, 0%]") {
		t.Fatalf("reading: %s", r)
	}
}

// TestKnobOverrides: --knob reaches every cell of a table after the
// column's own queue, and every cell of a study before its variants'
// knobs (a variant that sets the same knob keeps its value).
func TestKnobOverrides(t *testing.T) {
	p, err := PlanTable("s10_fifo_vs_shadow", PlanOptions{Seeds: []uint64{7}, Knobs: []string{"router-start=before-dial", "downlink-qdisc=pfifo:limit=50"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range p.Cells {
		for _, cfg := range c.Configs {
			k := cfg.Profile.Knobs()
			if k["router-start"] != cell.RouterBeforeDial || k["downlink-qdisc"] != "pfifo:limit=50" {
				t.Fatalf("%s %v: knobs %v", c.Arm.Name, c.Column, k)
			}
		}
	}
	s, err := LookupStudy("pie")
	if err != nil {
		t.Fatal(err)
	}
	cells, err := s.Cells(20, []uint64{7}, cell.Config{Gossip: cell.StudyGossip()}, "uplink-qdisc=codel", "router-start=before-dial")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cells {
		k := c.Configs[0].Profile.Knobs()
		want := "codel"
		if q, ok := s.Variants[c.Variant].Knobs["uplink-qdisc"]; ok {
			want = q
		}
		if k["uplink-qdisc"] != want || k["router-start"] != cell.RouterBeforeDial {
			t.Fatalf("variant %q: uplink-qdisc %q, router-start %q; want %q, before-dial", s.Variants[c.Variant].Label, k["uplink-qdisc"], k["router-start"], want)
		}
	}
	if _, err := PlanTable("s10_fifo_vs_shadow", PlanOptions{Knobs: []string{"frobs=1"}}); err == nil || !strings.Contains(err.Error(), "frobs") {
		t.Fatalf("an unknown knob: %v", err)
	}
}

// TestStudyWithArms: --arm keeps the study's order and accepts any
// catalogue name; an arm the study does not run is refused.
func TestStudyWithArms(t *testing.T) {
	s, _ := LookupStudy("pie")
	sub, err := s.WithArms([]string{"c_32k", "wholend"})
	if err != nil {
		t.Fatal(err)
	}
	if len(sub.Arms) != 2 || sub.Arms[0] != s.Arms[0] {
		t.Fatalf("arms %v from %v", sub.Arms, s.Arms)
	}
	cells, err := sub.Cells(20, []uint64{7}, cell.Config{Gossip: cell.StudyGossip()})
	if err != nil || len(cells) != 2*len(s.Variants) {
		t.Fatalf("%d cells, %v; want %d", len(cells), err, 2*len(s.Variants))
	}
	b, _ := LookupStudy("b-tail")
	if _, err := b.WithArms([]string{"c32"}); err == nil {
		t.Fatal("b-tail accepted an arm it does not run")
	}
}

// The study table carries quic-go's state at the publish: the median
// across seeds of each cell's median window and of its packets lost
// before the publish, and NaN where no record has it (TCP cells).
func TestStudyTableConnState(t *testing.T) {
	s, cells, records := connStateStudy(t, func(variant, seed int) *cell.ConnState {
		if variant == 0 {
			return nil // the baseline's records have no connection state
		}
		return &cell.ConnState{CwndKiBP50: []float64{20, 22}[seed], PacketsLost: []uint64{1000, 3000}[seed]}
	})
	rows := s.Table(cells, records)
	if len(rows) != 2 {
		t.Fatalf("rows %+v", rows)
	}
	if !math.IsNaN(rows[0].CwndKiB) || !math.IsNaN(rows[0].LostBefore) {
		t.Fatalf("baseline without connection state: cwnd %v lost %v, want NaN", rows[0].CwndKiB, rows[0].LostBefore)
	}
	if rows[1].CwndKiB != 21 || rows[1].LostBefore != 2000 {
		t.Fatalf("warm row: cwnd %v KiB lost %v, want the seeds' medians 21 and 2000", rows[1].CwndKiB, rows[1].LostBefore)
	}
}

// The payload sweep compares arms within each size: every arm against the
// whole message under the same variant, by hand. Seeds 7 and 8: the whole
// message takes 4 and 6 s at 128 KiB; tier 1 takes 1 and 2 s (−75 % and
// −67 %: the whole message 4× and 3× its time), tier 2 2 and 1.5 s; so the
// fastest arm by median is tier 1 (1.5 s against 1.75 s) and the whole
// message is 3.5× [3×, 4×] it. Tier 3 with the discipline at every size is
// not run from 512 KiB, where tier 3 has it.
func TestStudyComparesArms(t *testing.T) {
	s, _ := LookupStudy("payload-sweep")
	s, err := s.WithArms([]string{"lad_batch16", "aadaptds", "aadaptcfd"})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Arms) != 4 || s.Arms[0] != "wholend" {
		t.Fatalf("arms %v: the base arm must stay", s.Arms)
	}
	s.Variants = s.Variants[1:3] // 256 KiB, 512 KiB
	cells, records := fakeStudyRecords(t, s, func(variant, seed int) (p50, p99 float64) {
		return 0, 0
	})
	if len(cells) != 4+3 {
		t.Fatalf("%d cells, want 7 (aadaptcfd skipped at 512 KiB)", len(cells))
	}
	times := map[string][]float64{"wholend": {4, 6}, "lad_batch16": {1, 2}, "aadaptds": {2, 1.5}, "aadaptcfd": {3, 3}}
	for _, c := range cells {
		for i, cfg := range c.Configs {
			p := times[c.Arm.Published][i]
			records[cfg.Key()].P50S, records[cfg.Key()].P99S = &p, &p
			records[cfg.Key()].RateK, records[cfg.Key()].RateN = 1, 4
		}
	}
	rows := s.Table(cells, records)
	for _, r := range rows {
		switch r.Arm {
		case "wholend":
			if r.VsBase != nil || !r.IsBase {
				t.Fatalf("the base arm compared with itself: %+v", r)
			}
		case "lad_batch16":
			if r.VsBase == nil || math.Abs(r.VsBase.Lo.V+75) > 1e-9 || math.Abs(r.VsBase.Hi.V+200.0/3) > 1e-9 {
				t.Fatalf("tier 1 against the whole message: %+v", r.VsBase)
			}
		}
		if r.ByDeadline != 0.25 {
			t.Fatalf("by deadline %v, want 0.25", r.ByDeadline)
		}
	}
	got := s.Reading(cells, records)
	for _, want := range []string{
		"256 KiB: lad_batch16 1.500 s < aadaptds 1.750 s < aadaptcfd 3.000 s; wholend p50 5.000 s, 25% of receivers by the deadline, against the fastest arm 3.5× [3×, 4×]",
		"512 KiB: lad_batch16 1.500 s < aadaptds 1.750 s;",
		"The order of the arms run at every variant is the same under all 2: lad_batch16 < aadaptds.",
	} {
		if !strings.Contains(got, want) {
			t.Fatalf("reading lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "not faster") {
		t.Fatalf("every arm is faster on every seed: %s", got)
	}
	// A whole message censored on one seed (it did not complete in the
	// window) is slower than every arm that did: the gap's range is
	// censored, and no arm is listed as not faster.
	for _, c := range cells {
		if c.Arm.Published == "wholend" && c.Variant == 1 {
			records[c.Configs[1].Key()].P50S = nil
		}
	}
	got = s.Reading(cells, records)
	if !strings.Contains(got, "512 KiB: lad_batch16 1.500 s < aadaptds 1.750 s; wholend p50 censored, 25% of receivers by the deadline, against the fastest arm censored [4×, censored]") ||
		strings.Contains(got, "not faster") {
		t.Fatalf("reading with a censored whole message:\n%s", got)
	}
}

// TestReadingIdenticalRerun: a grid whose baseline is rerun twice, one
// rerun identical to the baseline on every seed and a variant 30 % slower
// on every seed: the identical rerun reads "no difference" (its ties with
// the baseline count as extreme both ways), the variant "higher" (five
// seeds, the baseline and two reruns: p = 1/4^5 ≤ 2.5 %).
func TestReadingIdenticalRerun(t *testing.T) {
	vs, err := Grid(Variant{Profile: "harness"}, []Axis{{"uplink-qdisc", []string{"fq_codel:profile=simnet", "pie"}}})
	require.NoError(t, err)
	for k := 1; k <= 2; k++ {
		r := vs[0]
		r.Label, r.Replicate = fmt.Sprintf("rerun %d", k), k
		vs = append(vs, r)
	}
	s := Study{Name: "run --vary", Arms: []string{"wholend"}, N: 12, Payload: 1 << 16, Seeds: seeds(7, 11), Variants: vs}
	cells, err := s.Cells(0, nil, cell.Config{})
	require.NoError(t, err)
	records := map[string]*cell.Record{}
	for _, c := range cells {
		for i, cfg := range c.Configs {
			p50 := 1 + 0.1*float64(i)
			switch vs[c.Variant].Label {
			case "uplink-qdisc=pie":
				p50 *= 1.3
			case "rerun 2":
				p50 *= []float64{1.02, 0.97, 1.01, 0.99, 1.03}[i]
			}
			p99 := 2 * p50
			records[cfg.Key()] = &cell.Record{Key: cfg.Key(), P50S: &p50, P99S: &p99}
		}
	}
	r := s.Reading(cells, records)
	require.Contains(t, r, `wholend under "rerun 1": p50 no difference, 0% [0%, 0%]`)
	require.Contains(t, r, `wholend under "uplink-qdisc=pie": p50 higher, +30% [+30%, +30%] (93.8 % interval) over 5 seeds (5 up, 0 down), p higher 0.000977, lower 1, 10 reruns`)
}
