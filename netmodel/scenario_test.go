package netmodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
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
	require.NoError(t, err)
	g, err := RegularGraph(60, 8, 7)
	require.NoError(t, err)
	require.Equal(t, g.Edges, d.Edges, "draw edges differ from RegularGraph's")
	up, down, _ := Scenario("dcb20", 60)
	require.Equal(t, up, d.Up)
	require.Equal(t, down, d.Down)
	geo := NewGeoLatency(60, 7)
	require.Equal(t, geo, d.LatencyModel(), "a generated draw keeps its model, not a matrix")
	for i := range 60 {
		require.Equal(t, geo.Region(i).String(), d.Regions[i], "node %d", i)
		for j := range 60 {
			require.Equal(t, geo.Latency(i, j), d.OneWay(i, j), "pair (%d, %d)", i, j)
		}
	}
	require.NoError(t, d.Validate())
	for _, bad := range [][2]string{{"mars", "home"}, {"geo", "office"}} {
		_, err := NewDraw(60, 8, 7, bad[0], bad[1])
		require.Error(t, err, "NewDraw(%q, %q)", bad[0], bad[1])
		require.EqualError(t, CheckDraw(60, 8, bad[0], bad[1]), err.Error(), "CheckDraw says what NewDraw says")
	}
	_, err = NewDraw(60, 61, 7, "geo", "home")
	require.ErrorContains(t, err, "degree = 61 >= n = 60")
	require.EqualError(t, CheckDraw(des.MaxNodes+1, 8, "geo", "home"),
		fmt.Sprintf("netmodel: draw: n = %d: want at most %d nodes (des.MaxNodes)", des.MaxNodes+1, des.MaxNodes))
	require.NoError(t, CheckDraw(des.MaxNodes, 70, "uniform:0s,"+des.MaxLatency.String(), fmt.Sprintf("up%d", MaxUpN)))
	require.Panics(t, func() { d.OneWay(0, 60) })
	require.Panics(t, func() { d.OneWay(-1, 0) })
}

// Each latency model of a generated draw computes the pair's latency from
// the seed; the draw's model is the one LatencyModelByName builds.
func TestNewDrawModels(t *testing.T) {
	for _, c := range []struct {
		model string
		want  LatencyModel
	}{
		{"geo", NewGeoLatency(30, 9)},
		{"fixed:40ms", FixedLatency(40 * des.Millisecond)},
		{"uniform:10ms,90ms", UniformLatency{Seed: 9, Lo: 10 * des.Millisecond, Hi: 90 * des.Millisecond}},
	} {
		d, err := NewDraw(30, 4, 9, c.model, "home")
		require.NoError(t, err)
		require.Equal(t, c.want, d.LatencyModel(), c.model)
		_, ok := d.LatencyModel().(MinLatencyModel)
		require.True(t, ok, "%s: the network's lookahead needs a MinLatencyModel", c.model)
		require.Equal(t, c.want.Latency(3, 17), d.OneWay(3, 17), c.model)
	}
	d, err := NewDraw(30, 4, 9, "fixed:40ms", "home")
	require.NoError(t, err)
	require.Nil(t, d.Regions, "only geo draws name regions")
}

// TestNewDrawMemory: a draw of des.MaxNodes nodes costs memory in
// proportion to its nodes and edges. The n x n matrix it once held would
// be 100 000^2 x 8 bytes = 74.5 GiB; the graph of degree 4 and the rates,
// regions and latency model take about 50 MiB.
func TestNewDrawMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 100 000-node graph (a few seconds)")
	}
	const n, degree = des.MaxNodes, 4
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	d, err := NewDraw(n, degree, 1, "geo", "dcb20")
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("NewDraw(%d nodes, degree %d): %.1f MiB allocated", n, degree, float64(alloc)/(1<<20))
	// 256 bytes per node and per edge end is five times what the graph
	// needs and 1/3000 of a matrix's 800 KB per node.
	require.Less(t, alloc, uint64(256*(n+n*degree)), "NewDraw allocates more than O(n*degree)")
	require.Equal(t, (&GeoLatency{Seed: 1}).Latency(0, n-1), d.OneWay(0, n-1))
}

// BenchmarkNewDraw100k70 reports the memory NewDraw takes for a cell of
// des.MaxNodes nodes at the study's degree 70 (RegularGraph's 175 million
// swaps take minutes).
func BenchmarkNewDraw100k70(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewDraw(des.MaxNodes, 70, 1, "geo", "home"); err != nil {
			b.Fatal(err)
		}
	}
}

// scenTestDrawsEqual checks that two draws have the same fields and the
// same latency for every pair.
func scenTestDrawsEqual(t *testing.T, want, got *Draw) {
	t.Helper()
	require.Equal(t, want.N, got.N)
	require.Equal(t, want.Seed, got.Seed)
	require.Equal(t, want.Model, got.Model)
	require.Equal(t, want.Scenario, got.Scenario)
	require.Equal(t, want.Degree, got.Degree)
	require.Equal(t, want.Edges, got.Edges)
	require.Equal(t, want.Up, got.Up)
	require.Equal(t, want.Down, got.Down)
	require.Equal(t, want.Regions, got.Regions)
	for i := range want.N {
		for j := range want.N {
			if want.OneWay(i, j) != got.OneWay(i, j) {
				t.Fatalf("latency (%d, %d): %v, read back as %v", i, j, want.OneWay(i, j), got.OneWay(i, j))
			}
		}
	}
}

func TestDrawJSONRoundTrip(t *testing.T) {
	for _, c := range []struct{ model, scen string }{
		{"geo", "dcb20"},
		{"fixed:40ms", "up20"},
		{"uniform:10ms,90ms", "home"},
	} {
		d, err := NewDraw(40, 6, 11, c.model, c.scen)
		require.NoError(t, err)
		var buf bytes.Buffer
		require.NoError(t, d.WriteJSON(&buf))
		text := buf.String()
		for _, field := range []string{`"n": 40`, `"seed": 11`, `"model": "` + c.model, `"degree": 6`, `"edges"`, `"up_bps"`, `"down_bps"`, `"latency_ns"`} {
			require.Contains(t, text, field, c.model)
		}
		require.True(t, json.Valid(buf.Bytes()), "%s: WriteJSON wrote invalid JSON", c.model)
		back, err := ReadDraw(&buf)
		require.NoError(t, err, c.model)
		scenTestDrawsEqual(t, d, back)
		m, ok := back.LatencyModel().(*LatencyMatrix)
		require.True(t, ok, "%s: an imported draw holds its matrix", c.model)
		require.Equal(t, d.OneWay(5, 7), m.Latency(5, 7))

		// The imported draw writes the same text again.
		var again bytes.Buffer
		require.NoError(t, back.WriteJSON(&again))
		require.Equal(t, text, again.String(), c.model)
	}
}

// A Draw inside another value (a cell's configuration) goes through
// encoding/json with its latencies, and comes back validated.
func TestDrawMarshalJSON(t *testing.T) {
	d, err := NewDraw(12, 4, 3, "geo", "dc20")
	require.NoError(t, err)
	type holder struct {
		Topology *Draw
		Other    int
	}
	raw, err := json.Marshal(holder{Topology: d, Other: 5})
	require.NoError(t, err)
	var back holder
	require.NoError(t, json.Unmarshal(raw, &back))
	require.Equal(t, 5, back.Other)
	scenTestDrawsEqual(t, d, back.Topology)

	raw, err = json.Marshal(holder{})
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &back))
	require.Nil(t, back.Topology)

	bad := strings.Replace(string(mustMarshal(t, holder{Topology: d})), `"n":12`, `"n":13`, 1)
	require.ErrorContains(t, json.Unmarshal([]byte(bad), &back), "latency_ns has 12 rows for 13 nodes")
	_, err = json.Marshal(holder{Topology: &Draw{N: 12}})
	require.ErrorContains(t, err, "netmodel: write draw")
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// A seed above 2^53 must survive JSON exactly (no float64 detour).
func TestDrawJSONLargeSeed(t *testing.T) {
	d, err := NewDraw(10, 4, 1<<63+12345, "geo", "home")
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, d.WriteJSON(&buf))
	back, err := ReadDraw(&buf)
	require.NoError(t, err)
	require.Equal(t, d.Seed, back.Seed)
}

// scenTestValidDraw is a small valid draw to corrupt: two nodes' worth of
// structure is too small for some corruptions, so use 8 nodes at degree 3.
func scenTestValidDraw(t *testing.T) *Draw {
	t.Helper()
	d, err := NewDraw(8, 3, 5, "geo", "home")
	require.NoError(t, err)
	return d
}

// scenTestWire returns d's JSON form as the wire struct, to corrupt.
func scenTestWire(t *testing.T, d *Draw) *scenDrawWire {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, d.WriteJSON(&buf))
	var w scenDrawWire
	require.NoError(t, json.Unmarshal(buf.Bytes(), &w))
	return &w
}

func TestReadDrawRejectsMalformed(t *testing.T) {
	// Corruptions of the draw itself: WriteJSON refuses them, and ReadDraw
	// refuses their JSON form.
	mutations := []struct {
		name string
		mut  func(d *Draw)
		want string
	}{
		{"n too small", func(d *Draw) { d.N = 1 }, fmt.Sprintf("n = 1: want at least 2 and at most %d nodes (des.MaxNodes)", des.MaxNodes)},
		{"n too large", func(d *Draw) { d.N = des.MaxNodes + 1 }, fmt.Sprintf("n = %d: want at least 2 and at most %d nodes (des.MaxNodes)", des.MaxNodes+1, des.MaxNodes)},
		{"n disagrees", func(d *Draw) { d.N = 9 }, "edges"},
		{"no model", func(d *Draw) { d.Model = "" }, `model: unknown latency model ""`},
		{"unknown model", func(d *Draw) { d.Model = "gauss" }, `model: unknown latency model "gauss"`},
		{"model above the bound", func(d *Draw) { d.Model = "fixed:" + (des.MaxLatency + 1).String() },
			fmt.Sprintf(`model: latency model "fixed:%v": duration "%v": want 0s to %v`, des.MaxLatency+1, des.MaxLatency+1, des.MaxLatency)},
		{"no scenario", func(d *Draw) { d.Scenario = "" }, `scenario: unknown scenario ""`},
		{"unknown scenario", func(d *Draw) { d.Scenario = "office" }, `scenario: unknown scenario "office"`},
		{"scenario above the bound", func(d *Draw) { d.Scenario = fmt.Sprintf("up%d", MaxUpN+1) }, fmt.Sprintf("from 1 to %d", MaxUpN)},
		{"degree too big", func(d *Draw) { d.Degree = 8 }, "degree"},
		{"degree overflows", func(d *Draw) { d.Degree = 1 << 62 }, "degree"},
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
		{"zero down", func(d *Draw) { d.Down[3] = 0 }, fmt.Sprintf("down_bps[3] = 0: want a positive rate from %d to %d bit/s (des.MinRate %s to des.MaxRate %s)",
			des.MinRate, des.MaxRate, des.FormatRate(des.MinRate), des.FormatRate(des.MaxRate))},
		{"slow up", func(d *Draw) { d.Up[5] = des.MinRate - 1 }, fmt.Sprintf("up_bps[5] = %d: want", des.MinRate-1)},
		{"fast up", func(d *Draw) { d.Up[6] = des.MaxRate + 1 }, fmt.Sprintf("up_bps[6] = %d: want", des.MaxRate+1)},
		{"region count", func(d *Draw) { d.Regions = d.Regions[:3] }, "regions"},
		{"bad region", func(d *Draw) { d.Regions[2] = "mars" }, `regions[2]: netmodel: unknown region "mars"`},
	}
	for _, m := range mutations {
		d := scenTestValidDraw(t)
		w := scenTestWire(t, d)
		m.mut(d)
		err := d.WriteJSON(new(bytes.Buffer))
		require.ErrorContains(t, err, m.want, "%s: WriteJSON", m.name)
		// The same corruption, in JSON.
		n := d.N
		edges := make([][]int, len(d.Edges))
		for k, e := range d.Edges {
			edges[k] = []int{e[0], e[1]}
		}
		w.N, w.Model, w.Scenario, w.Degree, w.Edges, w.Up, w.Down, w.Regions = &n, d.Model, d.Scenario, d.Degree, edges, d.Up, d.Down, d.Regions
		if n != 8 && n <= 16 { // keep the matrix n x n, so the corruption is what is reported
			w.Latency = make([][]des.Time, n)
			for i := range w.Latency {
				w.Latency[i] = make([]des.Time, n)
			}
		}
		_, err = ReadDraw(bytes.NewReader(mustMarshal(t, w)))
		require.ErrorContains(t, err, m.want, "%s: ReadDraw", m.name)
		require.NotContains(t, err.Error(), "\n", "%s: one line", m.name)
	}

	// Corruptions of the latency matrix, which only JSON can carry.
	matrix := []struct {
		name string
		mut  func(w *scenDrawWire)
		want string
	}{
		{"missing row", func(w *scenDrawWire) { w.Latency = w.Latency[:7] }, "latency_ns has 7 rows for 8 nodes"},
		{"no matrix", func(w *scenDrawWire) { w.Latency = nil }, "latency_ns has 0 rows for 8 nodes"},
		{"short row", func(w *scenDrawWire) { w.Latency[2] = w.Latency[2][:7] }, "latency_ns row 2 has 7 entries for 8 nodes"},
		{"negative latency", func(w *scenDrawWire) { w.Latency[1][4] = -des.Millisecond },
			fmt.Sprintf("latency_ns[1][4] = -1000000 ns is negative: want 0 to %d ns (des.MaxLatency, %v)", des.MaxLatency, des.MaxLatency)},
		{"latency above the bound", func(w *scenDrawWire) { w.Latency[6][0] = des.MaxLatency + 1 },
			fmt.Sprintf("latency_ns[6][0] = %d ns is above the largest latency: want 0 to %d ns (des.MaxLatency, %v)", des.MaxLatency+1, des.MaxLatency, des.MaxLatency)},
		{"latency near the largest int64", func(w *scenDrawWire) { w.Latency[7][7] = des.Never },
			"latency_ns[7][7] = 9223372036854775807 ns is above"},
	}
	for _, m := range matrix {
		w := scenTestWire(t, scenTestValidDraw(t))
		m.mut(w)
		_, err := ReadDraw(bytes.NewReader(mustMarshal(t, w)))
		require.ErrorContains(t, err, m.want, m.name)
	}

	valid, err := json.Marshal(scenTestWire(t, scenTestValidDraw(t)))
	require.NoError(t, err)
	_, err = ReadDraw(bytes.NewReader(valid))
	require.NoError(t, err, "the uncorrupted draw")
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
		{"huge n", strings.Replace(text, `"n":8`, `"n":4611686018427387904`, 1), "n = 4611686018427387904: want at least 2"},
		{"n beyond int64", strings.Replace(text, `"n":8`, `"n":1e30`, 1), "n"},
		{"edge triple", strings.Replace(text, firstEdge, strings.TrimSuffix(firstEdge, "]")+",7]", 1), "pair"},
		{"edge single", strings.Replace(text, firstEdge, firstEdge[:strings.Index(firstEdge, ",")]+"]", 1), "pair"},
		{"trailing data", text + "{}", "trailing"},
		{"fractional latency", strings.Replace(text, `"latency_ns":[[`, `"latency_ns":[[0.5,`, 1), "latency_ns"},
		{"latency beyond int64", strings.Replace(text, `"latency_ns":[[`, `"latency_ns":[[9223372036854775808,`, 1), "latency_ns"},
		{"NaN latency", strings.Replace(text, `"latency_ns":[[`, `"latency_ns":[[NaN,`, 1), "invalid"},
		{"rate beyond int64", strings.Replace(text, `"up_bps":[`, `"up_bps":[1e19,`, 1), "up_bps"},
	}
	for _, r := range raw {
		_, err := ReadDraw(strings.NewReader(r.text))
		require.ErrorContains(t, err, r.want, r.name)
	}
}

// A draw from JSON with n = des.MaxNodes but empty rows is refused before
// anything of size n x n is allocated.
func TestReadDrawShortRowsCheap(t *testing.T) {
	var b strings.Builder
	fmt.Fprintf(&b, `{"n":%d,"seed":1,"latency_ns":[`, des.MaxNodes)
	for i := range des.MaxNodes {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("[]")
	}
	b.WriteString("]}")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ReadDraw(strings.NewReader(b.String()))
	runtime.ReadMemStats(&after)
	require.ErrorContains(t, err, fmt.Sprintf("latency_ns row 0 has 0 entries for %d nodes", des.MaxNodes))
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<20))
}

func TestScenarioBounds(t *testing.T) {
	require.Equal(t, des.MaxRate, 2*MaxUpN*1_000_000, "upN's downlink reaches des.MaxRate")
	up, down, err := Scenario(fmt.Sprintf("up%d", MaxUpN), 3)
	require.NoError(t, err)
	require.Equal(t, []int64{des.MaxRate / 2, des.MaxRate / 2, des.MaxRate / 2}, up)
	require.Equal(t, []int64{des.MaxRate, des.MaxRate, des.MaxRate}, down)
	up, _, err = Scenario("up1", 2)
	require.NoError(t, err)
	require.Equal(t, []int64{1e6, 1e6}, up)
	for _, name := range []string{fmt.Sprintf("up%d", MaxUpN+1), "up9223372036854775807", "up99999999999999999999", "up0", "up 5", "up5 ", "up1e3", "up1.5", "upNaN", "upInf"} {
		_, _, err := Scenario(name, 3)
		require.EqualError(t, err, fmt.Sprintf("netmodel: scenario %q: upN needs N a whole number of Mbit/s from 1 to %d (2N Mbit/s down is at most des.MaxRate, %s), e.g. up10 or up200",
			name, MaxUpN, des.FormatRate(des.MaxRate)))
	}
}
