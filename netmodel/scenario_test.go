package netmodel

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/uplinksim/uplink/des"
)

func TestDatacenterNodes(t *testing.T) {
	cases := []struct {
		n    int
		want []int
	}{
		{1, []int{}},
		{5, []int{}},      // 20 % of 4 rounds down to 0
		{6, []int{1}},     // 20 % of 5
		{11, []int{1, 2}}, // 20 % of 10
		{100, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}},
	}
	for _, c := range cases {
		if got := DatacenterNodes(c.n); !slices.Equal(got, c.want) {
			t.Fatalf("DatacenterNodes(%d) = %v, want %v", c.n, got, c.want)
		}
	}
	for n, k := range map[int]int{500: 99, 1000: 199, 2000: 399, 250: 49} {
		got := DatacenterNodes(n)
		if len(got) != k || got[0] != 1 || got[k-1] != k {
			t.Fatalf("DatacenterNodes(%d): %d nodes %d..%d, want 1..%d", n, len(got), got[0], got[len(got)-1], k)
		}
	}
}

func TestScenarioRates(t *testing.T) {
	const n = 500
	const mbit = int64(1_000_000)
	dc := map[int]bool{}
	for _, i := range DatacenterNodes(n) {
		dc[i] = true
	}
	cases := []struct {
		name string
		rate func(i int) (up, down int64)
	}{
		{"home", func(int) (int64, int64) { return 50 * mbit, 100 * mbit }},
		{"dc20", func(i int) (int64, int64) {
			if dc[i] {
				return 1000 * mbit, 1000 * mbit
			}
			return 50 * mbit, 100 * mbit
		}},
		{"dcb20", func(i int) (int64, int64) {
			if i == 0 || dc[i] {
				return 1000 * mbit, 1000 * mbit
			}
			return 50 * mbit, 100 * mbit
		}},
		{"up10", func(int) (int64, int64) { return 10 * mbit, 20 * mbit }},
		{"up200", func(int) (int64, int64) { return 200 * mbit, 400 * mbit }},
		{"up50", func(int) (int64, int64) { return 50_000_000, 100_000_000 }},
	}
	for _, c := range cases {
		up, down, err := Scenario(c.name, n)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(up) != n || len(down) != n {
			t.Fatalf("%s: %d up, %d down rates for %d nodes", c.name, len(up), len(down), n)
		}
		fast := 0
		for i := range n {
			wu, wd := c.rate(i)
			if up[i] != wu || down[i] != wd {
				t.Fatalf("%s: node %d up %d down %d, want %d, %d", c.name, i, up[i], down[i], wu, wd)
			}
			if up[i] == 1000*mbit {
				fast++
			}
		}
		t.Logf("%s: %d of %d nodes at 1 Gbit/s", c.name, fast, n)
	}
	// dc20 puts 20 % of nodes 1..N-1 on datacenter links and leaves node 0 home.
	up, _, _ := Scenario("dc20", n)
	fast := 0
	for _, u := range up[1:] {
		if u == 1000*mbit {
			fast++
		}
	}
	if fast != (n-1)/5 || up[0] != 50*mbit {
		t.Fatalf("dc20: %d fast non-publishers of %d, publisher %d", fast, n-1, up[0])
	}
}

func TestScenarioRejectsUnknownNames(t *testing.T) {
	for _, name := range []string{"", "Home", "dc10", "up", "up0", "up-5", "up+5", "upx", "up10k", "up99999999999999"} {
		_, _, err := Scenario(name, 10)
		if err == nil {
			t.Fatalf("Scenario(%q) accepted", name)
		}
	}
	_, _, err := Scenario("office", 10)
	if err == nil {
		t.Fatal("Scenario(office) accepted")
	}
	for _, valid := range ScenarioNames() {
		if !strings.Contains(err.Error(), valid) {
			t.Fatalf("error %q does not list %q", err, valid)
		}
	}
	if _, _, err := Scenario("home", 0); err == nil {
		t.Fatal("Scenario(home, 0) accepted")
	}
}

func TestNewDrawMatchesItsParts(t *testing.T) {
	d, err := NewDraw(60, 8, 7, "geo", "dcb20")
	if err != nil {
		t.Fatal(err)
	}
	g, err := RegularGraph(60, 8, 7)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Edges, g.Edges) {
		t.Fatal("draw edges differ from RegularGraph's")
	}
	up, down, _ := Scenario("dcb20", 60)
	if !slices.Equal(d.Up, up) || !slices.Equal(d.Down, down) {
		t.Fatal("draw rates differ from the scenario's")
	}
	geo := NewGeoLatency(60, 7)
	lm := d.LatencyMatrix()
	for i := range 60 {
		if d.Regions[i] != geo.Region(i).String() {
			t.Fatalf("node %d region %s, want %s", i, d.Regions[i], geo.Region(i))
		}
		for j := range 60 {
			if d.Latency[i][j] != geo.Latency(i, j) || lm.Latency(i, j) != geo.Latency(i, j) {
				t.Fatalf("latency (%d, %d) = %v, model %v", i, j, d.Latency[i][j], geo.Latency(i, j))
			}
		}
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][2]string{{"mars", "home"}, {"geo", "office"}} {
		if _, err := NewDraw(60, 8, 7, bad[0], bad[1]); err == nil {
			t.Fatalf("NewDraw(%q, %q) accepted", bad[0], bad[1])
		}
	}
	if _, err := NewDraw(60, 61, 7, "geo", "home"); err == nil {
		t.Fatal("NewDraw with degree >= n accepted")
	}
}

func TestDrawJSONRoundTrip(t *testing.T) {
	for _, c := range []struct{ model, scen string }{
		{"geo", "dcb20"},
		{"fixed:40ms", "up20"},
		{"uniform:10ms,90ms", "home"},
	} {
		d, err := NewDraw(40, 6, 11, c.model, c.scen)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := d.WriteJSON(&buf); err != nil {
			t.Fatal(err)
		}
		text := buf.String()
		for _, field := range []string{`"n": 40`, `"seed": 11`, `"model": "` + c.model, `"degree": 6`, `"edges"`, `"up_bps"`, `"down_bps"`, `"latency_ns"`} {
			if !strings.Contains(text, field) {
				t.Fatalf("%s: JSON lacks %s", c.model, field)
			}
		}
		if !json.Valid(buf.Bytes()) {
			t.Fatalf("%s: WriteJSON wrote invalid JSON", c.model)
		}
		back, err := ReadDraw(&buf)
		if err != nil {
			t.Fatalf("%s: ReadDraw: %v", c.model, err)
		}
		if !reflect.DeepEqual(d, back) {
			t.Fatalf("%s: round trip changed the draw", c.model)
		}
	}
}

// A seed above 2^53 must survive JSON exactly (no float64 detour).
func TestDrawJSONLargeSeed(t *testing.T) {
	d, err := NewDraw(10, 4, 1<<63+12345, "geo", "home")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := d.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := ReadDraw(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if back.Seed != d.Seed {
		t.Fatalf("seed %d read back as %d", d.Seed, back.Seed)
	}
}

// scenTestValidDraw is a small valid draw to corrupt: two nodes' worth of
// structure is too small for some corruptions, so use 8 nodes at degree 3.
func scenTestValidDraw(t *testing.T) *Draw {
	t.Helper()
	d, err := NewDraw(8, 3, 5, "geo", "home")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestReadDrawRejectsMalformed(t *testing.T) {
	mutations := []struct {
		name string
		mut  func(d *Draw)
		want string
	}{
		{"n too small", func(d *Draw) { d.N = 1 }, "at least 2"},
		{"n disagrees", func(d *Draw) { d.N = 9 }, "edges"},
		{"no model", func(d *Draw) { d.Model = "" }, "latency model"},
		{"no scenario", func(d *Draw) { d.Scenario = "" }, "scenario"},
		{"degree too big", func(d *Draw) { d.Degree = 8 }, "degree"},
		{"edge count", func(d *Draw) { d.Edges = d.Edges[1:] }, "edges"},
		{"edge out of range", func(d *Draw) { d.Edges[0] = [2]int{d.Edges[0][0], 8} }, "outside"},
		{"negative endpoint", func(d *Draw) { d.Edges[0] = [2]int{-1, d.Edges[0][1]} }, "outside"},
		{"self-loop", func(d *Draw) { d.Edges[0] = [2]int{3, 3} }, "dial pair"},
		{"hi dials lo", func(d *Draw) { d.Edges[0] = [2]int{d.Edges[0][1], d.Edges[0][0]} }, "dial pair"},
		{"repeated edge", func(d *Draw) { d.Edges[1] = d.Edges[0] }, "more than once"},
		{"irregular", func(d *Draw) {
			// Replace an edge (a,b) by (a,c) with c not adjacent to a:
			// a keeps its degree, b loses one, c gains one.
			g, _ := GraphFromEdges(d.N, d.Edges)
			a, b := d.Edges[0][0], d.Edges[0][1]
			for c := range d.N {
				if _, adj := slices.BinarySearch(g.Neighbors(a), c); c != a && c != b && !adj {
					d.Edges[0] = [2]int{min(a, c), max(a, c)}
					return
				}
			}
		}, "degree"},
		{"disconnected", func(d *Draw) {
			// Two disjoint K4s: 3-regular on 8 nodes, not connected.
			d.Edges = nil
			for _, base := range []int{0, 4} {
				for i := range 4 {
					for j := i + 1; j < 4; j++ {
						d.Edges = append(d.Edges, [2]int{base + i, base + j})
					}
				}
			}
		}, "not connected"},
		{"up length", func(d *Draw) { d.Up = d.Up[:7] }, "rates"},
		{"zero down", func(d *Draw) { d.Down[3] = 0 }, "positive"},
		{"missing row", func(d *Draw) { d.Latency = d.Latency[:7] }, "rows"},
		{"short row", func(d *Draw) { d.Latency[2] = d.Latency[2][:7] }, "row 2"},
		{"negative latency", func(d *Draw) { d.Latency[1][4] = -des.Millisecond }, "negative"},
		{"region count", func(d *Draw) { d.Regions = d.Regions[:3] }, "regions"},
		{"bad region", func(d *Draw) { d.Regions[2] = "mars" }, "unknown region"},
	}
	for _, m := range mutations {
		d := scenTestValidDraw(t)
		m.mut(d)
		if err := d.WriteJSON(new(bytes.Buffer)); err == nil {
			t.Fatalf("%s: WriteJSON accepted an invalid draw", m.name)
		}
		raw, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		_, err = ReadDraw(bytes.NewReader(raw))
		if err == nil {
			t.Fatalf("%s: ReadDraw accepted it", m.name)
		}
		if !strings.Contains(err.Error(), m.want) {
			t.Fatalf("%s: error %q does not mention %q", m.name, err, m.want)
		}
	}

	valid, err := json.Marshal(scenTestValidDraw(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadDraw(bytes.NewReader(valid)); err != nil {
		t.Fatalf("the uncorrupted draw is rejected: %v", err)
	}
	text := string(valid)
	firstEdge := text[strings.Index(text, `"edges":[[`)+len(`"edges":[`):]
	firstEdge = firstEdge[:strings.Index(firstEdge, "]")+1]
	raw := []struct {
		name, text, want string
	}{
		{"not JSON", "n=8", "invalid"},
		{"empty", "", "EOF"},
		{"unknown field", strings.Replace(text, `"n":8`, `"n":8,"nodes":8`, 1), "unknown field"},
		{"missing n", strings.Replace(text, `"n":8,`, ``, 1), "missing field n"},
		{"missing seed", strings.Replace(text, `"seed":5,`, ``, 1), "missing field seed"},
		{"edge triple", strings.Replace(text, firstEdge, strings.TrimSuffix(firstEdge, "]")+",7]", 1), "pair"},
		{"edge single", strings.Replace(text, firstEdge, firstEdge[:strings.Index(firstEdge, ",")]+"]", 1), "pair"},
		{"trailing data", text + "{}", "trailing"},
		{"fractional latency", strings.Replace(text, `"latency_ns":[[`, `"latency_ns":[[0.5,`, 1), "latency_ns"},
	}
	for _, r := range raw {
		_, err := ReadDraw(strings.NewReader(r.text))
		if err == nil {
			t.Fatalf("%s: ReadDraw accepted it", r.name)
		}
		if !strings.Contains(err.Error(), r.want) {
			t.Fatalf("%s: error %q does not mention %q", r.name, err, r.want)
		}
	}
}
