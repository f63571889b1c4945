package validate

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/protocols/arms"
	"github.com/uplinksim/uplink/protocols/cell"
	"github.com/uplinksim/uplink/protocols/partial"
)

// TestGrid: two axes make every combination, the first axis slowest, the
// first variant (the baseline) on every axis's first value, each label
// naming its values, each variant's own maps.
func TestGrid(t *testing.T) {
	axes := []Axis{{"uplink-qdisc", []string{"fq_codel", "pie@30%"}}, {"Dlazy", []string{"6", "0"}}, {"transport", []string{"quic", "tcp"}}}
	require.NoError(t, CheckAxes(axes, []string{"harness"}))
	require.Equal(t, 8, GridSize(axes))
	vs, err := Grid(Variant{Profile: "harness", Transport: "quic", Knobs: map[string]string{"settle": "1"}}, axes)
	require.NoError(t, err)
	require.Len(t, vs, 8)
	require.Equal(t, "uplink-qdisc=fq_codel, Dlazy=6, transport=quic", vs[0].Label)
	require.Equal(t, "uplink-qdisc=fq_codel, Dlazy=6, transport=tcp", vs[1].Label)
	require.Equal(t, "uplink-qdisc=pie@30%, Dlazy=0, transport=tcp", vs[7].Label)
	require.Equal(t, map[string]string{"settle": "1", "uplink-qdisc": "pie@30%"}, vs[7].Knobs)
	require.Equal(t, map[string]string{"Dlazy": "0"}, vs[7].Gossip)
	require.Equal(t, "tcp", vs[7].Transport)
	require.Equal(t, "fq_codel", vs[0].Knobs["uplink-qdisc"], "variants share no map")

	// A varied profile sets each variant's, and the knobs are checked on
	// the varied profiles.
	pa := []Axis{{"profile", []string{"harness", "shadow"}}}
	vs, err = Grid(Variant{Profile: "kernel"}, pa)
	require.NoError(t, err)
	require.Equal(t, []string{"harness", "shadow"}, []string{vs[0].Profile, vs[1].Profile})

	// The variants' cells carry their settings: the gossip knob reaches
	// the config over the base's, the profile knob the profile.
	s := Study{Name: "grid", Arms: []string{"wholend"}, N: 12, Payload: 1 << 16, Variants: []Variant{
		{Label: "a", Profile: "harness"},
		{Label: "b", Profile: "harness", Gossip: map[string]string{"Dlazy": "0"}, Knobs: map[string]string{"uplink-qdisc": "pie@30%"}},
	}}
	cells, err := s.Cells(0, []uint64{7}, cell.Config{Degree: 4})
	require.NoError(t, err)
	require.Len(t, cells, 2)
	a, b := cells[0].Configs[0], cells[1].Configs[0]
	require.Equal(t, 0, b.Gossip.Dlazy) // over the study's, as Defaults fills a zero base
	require.Equal(t, 6, cell.StudyGossip().Dlazy, "the study's Dlazy, which b's 0 replaces")
	require.Equal(t, cell.StudyGossip().D, b.Gossip.D)
	require.Equal(t, "pie@30%;fq_codel:profile=simnet", b.Profile.UpQdisc)
	require.Equal(t, 4, b.Degree)
	require.NotEqual(t, a.Key(), b.Key())
	require.NoError(t, s.CheckDistinct(cells))
}

// TestCheckAxesErrors: each bad grid is refused with a message naming
// what is wrong.
func TestCheckAxesErrors(t *testing.T) {
	for _, c := range []struct {
		axes []Axis
		want string
	}{
		{nil, "no setting to vary"},
		{[]Axis{{"bogus", []string{"1", "2"}}}, `unknown setting "bogus"; valid: profile, transport, uplink-qdisc`},
		{[]Axis{{"settle", nil}}, "settle: no values"},
		{[]Axis{{"settle", []string{"1"}}}, "settle=1: one value compares nothing"},
		{[]Axis{{"settle", []string{"1", "2", "1"}}}, `settle: value "1" given twice`},
		{[]Axis{{"settle", []string{"1", " "}}}, "settle: an empty value"},
		{[]Axis{{"settle", []string{"1", "2"}}, {"settle", []string{"3", "4"}}}, "settle varied twice"},
		{[]Axis{{"uplink-qdisc", []string{"pie", "nope"}}}, `uplink-qdisc=nope: on profile harness: queues: spec "nope": unknown discipline`},
		{[]Axis{{"uplink-qdisc", []string{"pie", "pie:target=-1ms"}}}, "uplink-qdisc=pie:target=-1ms"},
		{[]Axis{{"Dlazy", []string{"0", "x"}}}, `Dlazy=x: gossip knob Dlazy="x"`},
		{[]Axis{{"transport", []string{"quic", "udp"}}}, `transport=udp: transport "udp": want quic or tcp`},
		{[]Axis{{"profile", []string{"harness", "ns3"}}}, `profile=ns3: unknown profile`},
	} {
		err := CheckAxes(c.axes, []string{"harness", "shadow"})
		require.Error(t, err, "%v", c.axes)
		require.Contains(t, err.Error(), c.want)
	}
}

// TestCheckSizeAndDistinct: a grid over MaxCells cells is refused naming
// the limit; two variants that make the same cell (phase-rules does not
// reach the whole message) are refused naming both.
func TestCheckSizeAndDistinct(t *testing.T) {
	require.NoError(t, CheckSize(MaxCells, "x"))
	err := CheckSize(MaxCells+1, "1001 variants × 1 seed")
	require.ErrorContains(t, err, "1001 variants × 1 seed = 1001 cells: over the limit of 1000 cells")
	require.Equal(t, MaxProduct, GridSize([]Axis{{"a", make([]string, 1<<20)}, {"b", make([]string, 1<<20)}, {"c", make([]string, 1<<20)}}))

	vs, err := Grid(Variant{Profile: "harness"}, []Axis{{"phase-rules", []string{"fork", "prose"}}})
	require.NoError(t, err)
	s := Study{Name: "same", Arms: []string{"wholend"}, N: 12, Payload: 1 << 16, Variants: vs}
	cells, err := s.Cells(0, []uint64{7}, cell.Config{})
	require.NoError(t, err)
	require.ErrorContains(t, s.CheckDistinct(cells), `variants "phase-rules=fork" and "phase-rules=prose" make the same cell for arm wholend`)
}

// TestGridTable: the paired differences against the first variant from
// synthetic records. Variant 1's per-seed p50 differences are +10, +20
// and −5 %: median +10 %, range −5..+20. Variant 2's are +30, +40 and
// +50 %: median +40 %, up on every seed, which three seeds cannot tell
// from noise.
func TestGridTable(t *testing.T) {
	vs, err := Grid(Variant{Profile: "harness"}, []Axis{{"uplink-qdisc", []string{"fq_codel:profile=simnet", "pie@30%", "pie"}}})
	require.NoError(t, err)
	s := Study{Name: "run --vary", Arms: []string{"wholend"}, N: 12, Payload: 1 << 16, Seeds: []uint64{7, 8, 9}, Variants: vs}
	cells, err := s.Cells(0, nil, cell.Config{})
	require.NoError(t, err)
	base := []float64{1, 2, 4}
	factor := [][]float64{{1, 1, 1}, {1.10, 1.20, 0.95}, {1.30, 1.40, 1.50}}
	records := map[string]*cell.Record{}
	for _, c := range cells {
		for i, cfg := range c.Configs {
			p50 := base[i] * factor[c.Variant][i]
			p99 := 2 * p50
			records[cfg.Key()] = &cell.Record{Key: cfg.Key(), P50S: &p50, P99S: &p99}
		}
	}
	rows := s.Table(cells, records)
	require.Len(t, rows, 3)
	require.Equal(t, "uplink-qdisc=fq_codel:profile=simnet", rows[0].Variant)
	require.True(t, rows[0].IsBase)
	require.Nil(t, rows[0].VsBase)
	require.Equal(t, 3, rows[1].Seeds)
	require.InDelta(t, 2.4, rows[1].P50.V, 1e-9) // 1.1, 2.4, 3.8
	p := rows[1].VsBase
	require.NotNil(t, p)
	require.InDelta(t, 10, p.Median.V, 1e-9)
	require.InDelta(t, -5, p.Lo.V, 1e-9)
	require.InDelta(t, 20, p.Hi.V, 1e-9)
	require.Len(t, p.PerSeed, 3)
	p = rows[2].VsBase
	require.InDelta(t, 40, p.Median.V, 1e-9)
	require.InDelta(t, 30, p.Lo.V, 1e-9)
	require.InDelta(t, 50, p.Hi.V, 1e-9)
	// Three seeds without a rerun cannot reach 2.5 % (1/8): every move,
	// on every seed or not, is too few seeds.
	r := s.Reading(cells, records)
	require.Contains(t, r, `Each variant against the baseline "uplink-qdisc=fq_codel:profile=simnet", p50 and p99, by the noise test (two-sided 5 %): 4 too few seeds.`)
	require.Contains(t, r, `wholend under "uplink-qdisc=pie": p50 too few seeds, +40% [+30%, +50%] (75 % interval) over 3 seeds (3 up, 0 down), p higher 0.125, lower 1, 0 reruns`)
	require.Contains(t, r, `wholend under "uplink-qdisc=pie@30%": p50 too few seeds, +10% [−5%, +20%] (75 % interval) over 3 seeds (2 up, 1 down)`)
}

// TestReadStudy: docs/study-pie-share.json reads as documented
// (docs/studies.md); a field the format does not know, or a bad value, is
// an error naming it.
func TestReadStudy(t *testing.T) {
	f, err := os.Open("../docs/study-pie-share.json")
	require.NoError(t, err)
	defer f.Close()
	s, err := ReadStudy(f)
	require.NoError(t, err)
	require.Equal(t, "pie-share", s.Name)
	require.Equal(t, []string{"wholend"}, s.Arms)
	require.Equal(t, 60, s.N)
	require.Equal(t, 20, s.Degree)
	require.Equal(t, 1<<20, s.Payload)
	require.Equal(t, []uint64{7, 8, 9}, s.Seeds)
	require.Equal(t, "p50", s.CompareStat())
	require.Len(t, s.Variants, 2)
	require.Equal(t, "30 % of nodes behind PIE", s.Variants[1].Label)
	require.Equal(t, map[string]string{"uplink-qdisc": "pie@30%"}, s.Variants[1].Knobs)
	cells, err := s.Cells(0, nil, cell.Config{})
	require.NoError(t, err)
	require.Len(t, cells, 2)
	require.Equal(t, 20, cells[0].Configs[0].Degree)
	require.NoError(t, s.CheckDistinct(cells))

	// docs/studies.md shows the file as it is.
	doc, err := os.ReadFile("../docs/studies.md")
	require.NoError(t, err)
	file, err := os.ReadFile("../docs/study-pie-share.json")
	require.NoError(t, err)
	_, shown, found := strings.Cut(string(doc), "```json\n")
	shown, _, _ = strings.Cut(shown, "```")
	require.True(t, found)
	require.JSONEq(t, string(file), shown)

	const ok = `{"name": "x", "arms": ["wholend"], "nodes": 12, "seeds": [7], "variants": [{"label": "a", "profile": "harness"}, {"label": "b", "profile": "shadow"}]}`
	_, err = ReadStudy(strings.NewReader(ok))
	require.NoError(t, err)
	for _, c := range []struct{ from, to, want string }{
		{`"nodes": 12`, `"nodes": 12, "node": 3`, `json: unknown field "node"`},
		{`"profile": "shadow"`, `"profile": "shadow", "knob": {}`, `json: unknown field "knob"`},
		{`"nodes": 12`, `"nodes": 1`, "nodes 1: want 2 to"},
		{`"seeds": [7]`, `"seeds": [7, 7]`, "seed 7 given twice"},
		{`"seeds": [7]`, `"seeds": []`, "seeds: want 1 to"},
		{`["wholend"]`, `["nope"]`, `arms: `},
		{`"name": "x"`, `"name": "x", "stat": "p42"`, `stat "p42"`},
		{`"label": "b"`, `"label": "a"`, `variant label "a" given twice`},
		{`, "profile": "shadow"`, ``, `variant "b": no profile`},
		{`"profile": "shadow"`, `"profile": "shadow", "knobs": {"uplink-qdisc": "nope"}`, `variant "b": knobs: on profile shadow: queues: spec "nope"`},
		{`"profile": "shadow"`, `"profile": "shadow", "knobs": {"Dlazy": "0"}`, `Dlazy is a gossip knob`},
		{`"profile": "shadow"`, `"profile": "shadow", "gossip": {"settle": "1"}`, `unknown gossip knob "settle"`},
		{`"profile": "shadow"`, `"profile": "shadow", "transport": "udp"`, `transport "udp"`},
		{`, {"label": "b", "profile": "shadow"}`, ``, "1 variants: want two or more"},
		{`"profile": "shadow"`, `"profile": "shadow", "partitions": -1`, `variant "b": partitions -1: want 1 to 256`},
		{`"profile": "shadow"`, `"profile": "shadow", "replicate": 1001`, `variant "b": replicate 1001: want 0 to 1000`},
		{`"profile": "shadow"`, `"profile": "shadow", "network": "ns3"`, `variant "b": network "ns3": want "simnet"`},
		{`"profile": "shadow"`, `"profile": "shadow", "encoding": "zip"`, `variant "b": encoding "zip": want raw or snappy`},
		{`"profile": "shadow"`, `"profile": "shadow", "nodes": 1`, `variant "b": nodes 1: want 2 to`},
		{`"profile": "shadow"`, `"profile": "shadow", "b_rules_off": "budget"`, `variant "b": b_rules_off: variant B rule "budget"`},
		{`"profile": "shadow"`, `"profile": "shadow", "b_timeout": "0.8"`, `variant "b": b_timeout: duration "0.8": want a duration such as 40ms`},
		{`"profile": "shadow"`, `"profile": "shadow", "b_timeout": "0s"`, `variant "b": b_timeout:`},
		{`"seeds": [7]`, `"seeds": [7], "claims": [{"text": "t", "variant": "b", "direction": "up"}]`, `claim 1: direction "up": want lower, higher or same`},
		{`"seeds": [7]`, `"seeds": [7], "claims": [{"text": "t", "variant": "c", "direction": "lower"}]`, `claim 1: study x: claim "t": no variant "c"`},
		{`"seeds": [7]`, `"seeds": [7], "claims": [{"variant": "b", "direction": "lower"}]`, `claim 1: no text`},
		{`"seeds": [7]`, `"seeds": [7], "claims": [{"text": "t", "variant": "a", "direction": "lower"}]`, `compares variant "a" with itself`},
		{`"seeds": [7]`, `"seeds": [7], "claims": [{"text": "t", "variant": "b", "arms": ["c32"], "direction": "lower"}]`, `claim 1: arm "c32" is not one of the study's arms (wholend)`},
		{`"seeds": [7]`, `"seeds": [7], "claims": [{"text": "t", "variant": "b", "stat": "p42", "direction": "lower"}]`, `claim 1: stat "p42"`},
		{`"seeds": [7]`, `"seeds": [7], "claims": [{"text": "t", "variant": "b", "direction": "lower", "margin": 5}]`, `claim 1: margin 5: only a claim of no change (direction "same") has one`},
		{`"seeds": [7]`, `"seeds": [7], "claims": [{"text": "t", "variant": "b", "direction": "same", "margin": 101}]`, `claim 1: study x: claim "t": margin 101: want 0 to 100 percent`},
		{`"seeds": [7]`, `"seeds": [7], "claims": [{"text": "t", "variant": "b", "direction": "lower", "requires": 1}]`, `claim 1: requires 1: want the number of an earlier claim (1 to 0)`},
		{`"seeds": [7]`, `"seeds": [7], "claims": [{"text": "t", "variant": "b", "direction": "lower"}, {"text": "u", "variant": "b", "direction": "lower", "requires": 2}]`, `claim 2: requires 2: want the number of an earlier claim (1 to 1)`},
	} {
		require.Contains(t, ok, c.from)
		_, err := ReadStudy(strings.NewReader(strings.Replace(ok, c.from, c.to, 1)))
		require.ErrorContains(t, err, c.want, c.to)
	}
	_, err = ReadStudy(strings.NewReader(ok + ok))
	require.ErrorContains(t, err, "more than one JSON value")
}

// Every gossip setting a variant may change is one cell.Gossip.Set knows.
func TestGossipSettings(t *testing.T) {
	for _, name := range GossipSettings {
		g := cell.StudyGossip()
		v := "1"
		if name == "flood-publish" {
			v = "true"
		}
		require.NoError(t, g.Set(name, v), name)
		_, err := settingKind(name)
		require.NoError(t, err)
	}
}

// TestStudyPartitionsReplicate: a variant's partitions and replicate
// reach its cells: the partitions split the cell, the replicate only
// changes the key, and both are in the records' keys.
func TestStudyPartitionsReplicate(t *testing.T) {
	s, err := ReadStudy(strings.NewReader(`{"name": "p", "arms": ["wholend"], "nodes": 12, "seeds": [7], "variants": [
		{"label": "one", "profile": "harness"},
		{"label": "again", "profile": "harness", "replicate": 1},
		{"label": "two", "profile": "harness", "partitions": 2}]}`))
	require.NoError(t, err)
	cells, err := s.Cells(0, nil, cell.Config{})
	require.NoError(t, err)
	require.Len(t, cells, 3)
	var keys []string
	for i, sc := range cells {
		c := sc.Configs[0]
		require.Equal(t, []int{0, 1, 0}[i], c.Replicate)
		require.Equal(t, []int{0, 0, 2}[i], c.Partitions)
		require.NoError(t, c.Check())
		keys = append(keys, c.Key())
	}
	require.Len(t, slices.Compact(slices.Sorted(slices.Values(keys))), 3, "three distinct cells")
}

// TestStudyFileClaims: a study file's claims are judged in its answer
// like a built-in study's: a variant 10 % faster on five seeds supports
// "lower" and refutes "higher".
func TestStudyFileClaims(t *testing.T) {
	s, err := ReadStudy(strings.NewReader(`{"name": "c", "question": "Faster?", "arms": ["c32"], "nodes": 12, "seeds": [7, 8, 9, 10, 11], "variants": [
		{"label": "fq", "profile": "harness"},
		{"label": "pie", "profile": "harness", "knobs": {"uplink-qdisc": "pie"}}],
		"claims": [{"text": "PIE is faster:", "variant": "pie", "direction": "lower"},
		           {"text": "PIE is slower:", "variant": "pie", "against": "fq", "stat": "p50", "direction": "higher"}]}`))
	require.NoError(t, err)
	require.Len(t, s.Claims, 2)
	cells, err := s.Cells(0, nil, cell.Config{})
	require.NoError(t, err)
	records := map[string]*cell.Record{}
	for _, c := range cells {
		for _, cfg := range c.Configs {
			v := 1.0 - 0.1*float64(c.Variant)
			records[cfg.Key()] = &cell.Record{Key: cfg.Key(), P50S: &v}
		}
	}
	ans, err := s.Answer(cells, records)
	require.NoError(t, err)
	require.Contains(t, ans, "Question: Faster?")
	require.Contains(t, ans, "- PIE is faster: **supported**")
	require.Contains(t, ans, "- PIE is slower: **refuted**")
}

// TestStudyBTimeout: a variant's b_timeout and b_fixed reach its B cells
// as another key; on an arm without variant B's timeout the cell is
// refused.
func TestStudyBTimeout(t *testing.T) {
	s, err := ReadStudy(strings.NewReader(`{"name": "b", "arms": ["bcodedfc1"], "nodes": 12, "seeds": [7], "variants": [
		{"label": "adaptive", "profile": "shadow"},
		{"label": "800 ms fixed", "profile": "shadow", "b_timeout": "800ms", "b_fixed": true}]}`))
	require.NoError(t, err)
	cells, err := s.Cells(0, nil, cell.Config{})
	require.NoError(t, err)
	require.Len(t, cells, 2)
	fixed := cells[1].Configs[0]
	require.Equal(t, 800*des.Millisecond, fixed.BTimeout)
	require.True(t, fixed.BFixed)
	require.NotEqual(t, cells[0].Configs[0].Key(), fixed.Key())
	fixed.Arm = "atuned"
	require.ErrorContains(t, fixed.Check(), "on an arm without one")
}

// TestStudyBRulesOff: a variant's b_rules_off reaches its B cells as
// another key; on an arm without the claim ledger the cell is refused.
func TestStudyBRulesOff(t *testing.T) {
	s, err := ReadStudy(strings.NewReader(`{"name": "b", "arms": ["bcodedfc1"], "nodes": 12, "seeds": [7], "variants": [
		{"label": "rules", "profile": "harness"},
		{"label": "before", "profile": "harness", "b_rules_off": "claim-budget,any-arrival,per-peer-timeout"}]}`))
	require.NoError(t, err)
	cells, err := s.Cells(0, nil, cell.Config{})
	require.NoError(t, err)
	require.Len(t, cells, 2)
	before := cells[1].Configs[0]
	require.Equal(t, partial.RulesOff{ClaimBudget: true, AnyArrival: true, PerPeerTimeout: true}, before.BRulesOff)
	require.NotEqual(t, cells[0].Configs[0].Key(), before.Key())
	before.Arm = "c32"
	require.ErrorContains(t, before.Check(), "on an arm without its claim ledger")
}

// TestStudyBases: each variant is compared with the nearest baseline at or
// before it; harness-vs-simnet pairs each simnet variant with the
// harness profile's of the same gossip and encoding, on simnet.
func TestStudyBases(t *testing.T) {
	var st Study
	for _, s := range Studies() {
		if s.Name == "harness-vs-simnet" {
			st = s
		}
	}
	require.Len(t, st.Variants, 8)
	cells, err := st.Cells(0, []uint64{7}, cell.Config{})
	require.NoError(t, err)
	for i, c := range cells {
		require.Equal(t, i/2*2, st.baseOf(c.Variant), st.Variants[c.Variant].Label)
		cfg := c.Configs[0]
		require.NoError(t, cfg.Check(), st.Variants[c.Variant].Label)
		require.Equal(t, map[bool]string{true: cell.BackendSimnet, false: ""}[i%2 == 1], cfg.Backend)
		require.Equal(t, []arms.Encoding{arms.EncodingSnappy, arms.EncodingRaw}[i/2%2], cfg.Encoding)
	}
	records := map[string]*cell.Record{}
	for _, c := range cells {
		p50 := 1.0 + 0.5*float64(c.Variant%2) // simnet 50 % later
		records[c.Configs[0].Key()] = &cell.Record{P50S: &p50, P99S: &p50}
	}
	rows := st.Table(cells, records)
	for i, r := range rows {
		if i%2 == 0 {
			require.True(t, r.IsBase)
			continue
		}
		require.InDelta(t, 50, r.VsBase.Median.V, 1e-9)
	}
	require.Contains(t, st.Reading(cells, records), "Each variant against its baseline")
}

// TestStudyVariantNodes: a variant's node count reaches its cells (the
// report's degree 70 capped at nodes − 1), the other variants keep the
// study's, the keys differ, and such a study refuses --nodes; a variant
// smaller than the study's degree is refused.
func TestStudyVariantNodes(t *testing.T) {
	s, err := ReadStudy(strings.NewReader(`{"name": "size", "arms": ["wholend", "atuned"], "nodes": 12, "seeds": [7], "variants": [
		{"label": "12 nodes", "profile": "harness"},
		{"label": "30 nodes", "profile": "harness", "nodes": 30}]}`))
	require.NoError(t, err)
	require.True(t, s.SizesNodes())
	cells, err := s.Cells(0, nil, cell.Config{})
	require.NoError(t, err)
	require.Len(t, cells, 4)
	for _, sc := range cells {
		c := sc.Configs[0]
		want := []int{12, 30}[sc.Variant]
		require.Equal(t, want, c.N, sc.Arm.Name)
		require.Equal(t, want-1, c.Degree, "70 capped at nodes − 1")
	}
	require.NotEqual(t, cells[0].Configs[0].Key(), cells[2].Configs[0].Key())
	_, err = s.Cells(20, nil, cell.Config{})
	require.ErrorContains(t, err, "its variants set their own node counts; run it without --nodes")
	_, err = ReadStudy(strings.NewReader(`{"name": "size", "arms": ["wholend"], "nodes": 12, "degree": 8, "seeds": [7], "variants": [
		{"label": "a", "profile": "harness"},
		{"label": "b", "profile": "harness", "nodes": 8}]}`))
	require.ErrorContains(t, err, `variant "b": nodes 8: the study's degree 8 needs more nodes`)
}
