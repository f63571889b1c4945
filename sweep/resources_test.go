package sweep

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/protocols/arms"
	"github.com/uplinksim/uplink/protocols/cell"
)

func resourceRecord(n, degree int, arm, transport, profile string, rssKB int64, wall float64) *cell.Record {
	return &cell.Record{N: n, Degree: degree, PayloadBytes: 1 << 20, ArmName: arm, Transport: transport,
		Profile: profile, Wire: cell.WireRecord{Encoding: "snappy"}, MaxRSSKB: rssKB, WallS: wall}
}

// TestMeasureResources: records group by kind; each kind's memory is the
// largest and the median, its wall time the median and the largest;
// records without a measurement are left out; a run in two files counts
// once.
func TestMeasureResources(t *testing.T) {
	recs := []*cell.Record{
		resourceRecord(500, 70, "wholend", "quic", "harness", 10<<20, 300),
		resourceRecord(500, 70, "wholend", "quic", "harness", 12<<20, 500),
		resourceRecord(500, 70, "wholend", "quic", "harness", 13<<20, 280),
		resourceRecord(500, 70, "wholend", "tcp", "shadow", 11<<20, 160),
		resourceRecord(100, 70, "wholend", "quic", "harness", 3<<20, 54),
		resourceRecord(100, 70, "wholend", "quic", "harness", 0, 54), // no memory measured
	}
	// A run that a second file holds too counts once, both files its
	// sources.
	for _, r := range recs {
		r.Key = fmt.Sprintf("k%d-%.0f", r.N, r.WallS)
	}
	recs = append(recs, recs[1])
	srcs := []string{"b", "a", "b", "a", "c", "c", "d"}
	got := MeasureResources(recs, srcs)
	require.Len(t, got, 3)
	require.Equal(t, 100, got[0].Nodes)
	require.Equal(t, 1, got[0].Cells)
	h := got[1]
	require.Equal(t, Kind{Nodes: 500, Degree: 70, Payload: 1 << 20, Arm: "wholend", Transport: "quic", Profile: "harness", Encoding: "snappy", Partitions: 1}, h.Kind)
	require.Equal(t, 3, h.Cells)
	require.InDelta(t, 13*1024, h.RSSMaxMiB, 1e-9)
	require.InDelta(t, 12*1024, h.RSSMedianMiB, 1e-9)
	require.InDelta(t, 300, h.WallMedianS, 1e-9)
	require.InDelta(t, 500, h.WallMaxS, 1e-9)
	require.Equal(t, []string{"a", "b", "d"}, h.Sources)
	require.Equal(t, "tcp", got[2].Transport)

	require.Contains(t, roundTripPage(t, got), "| 500 | 70 | 1 MiB | wholend | quic | harness | uplink | snappy | 1 | 3 | 12.0, 13.0 | 300, 500 | a, b, d |")
}

// roundTripPage writes t as JSON, requires it to read back the same, and
// returns its page.
func roundTripPage(t *testing.T, table []Resource) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, WriteResources(&b, table))
	back, err := ReadResources(&b)
	require.NoError(t, err)
	require.Equal(t, table, back)
	var page strings.Builder
	require.NoError(t, WriteResourcesPage(&page, table))
	return page.String()
}

// TestMeasureResourcesHostsAndLimits: a peak made under a soft memory
// limit counts only for a kind whose every run had one; the cells are
// counted by the machine their records name, and the page's records
// column says both.
func TestMeasureResourcesHostsAndLimits(t *testing.T) {
	big := &cell.Host{CPUs: 16, MemGiB: 125.4}
	recs := []*cell.Record{
		resourceRecord(1000, 70, "c_32k", "quic", "shadow", 12<<20, 480),
		resourceRecord(1000, 70, "c_32k", "quic", "shadow", 11<<20, 440),
		resourceRecord(1000, 70, "c_32k", "quic", "shadow", 10<<20, 400),
		resourceRecord(1000, 70, "c_32k", "quic", "shadow", 10<<20, 410),
		resourceRecord(250, 70, "wholend", "quic", "harness", 6<<20, 250),
	}
	for i, r := range recs {
		r.Key = fmt.Sprintf("k%d", i)
	}
	recs[2].MemLimit, recs[2].Host = 10<<30, big
	recs[3].MemLimit, recs[3].Host = 10<<30, big
	recs[1].Host = &cell.Host{CPUs: 2, MemGiB: 23.4}
	recs[4].MemLimit = 6656 << 20
	got := MeasureResources(recs, []string{"n", "n", "n", "n", "n"})
	require.Len(t, got, 2)
	w, c := got[0], got[1]
	require.Equal(t, 250, w.Nodes)
	require.Equal(t, 1, w.MemLimited)
	require.InDelta(t, 6*1024, w.RSSMaxMiB, 1e-9, "every run limited: its peak counts")
	require.Empty(t, w.Hosts)
	require.Equal(t, 4, c.Cells)
	require.Equal(t, 2, c.MemLimited)
	require.InDelta(t, 12*1024, c.RSSMaxMiB, 1e-9)
	require.InDelta(t, 11.5*1024, c.RSSMedianMiB, 1e-9, "the limited peaks left out")
	require.InDelta(t, 425, c.WallMedianS, 1e-9, "every run's wall time counts")
	require.Equal(t, []HostCells{{Host: "16 CPUs, 125 GiB", Cells: 2, CPUs: 16}, {Host: "2 CPUs, 23 GiB", Cells: 1, CPUs: 2}}, c.Hosts)

	require.Contains(t, roundTripPage(t, got), "| 11.5, 12.0 | 425, 480 | n; 2 on 16 CPUs, 125 GiB; 1 on 2 CPUs, 23 GiB; 2 under a memory limit |")
}

// TestReadResourcesRejects: a table with a row that measured nothing, or
// an unknown field, is an error.
func TestReadResourcesRejects(t *testing.T) {
	_, err := ReadResources(strings.NewReader(`[{"nodes":500,"degree":70,"cells":1,"rss_max_mib":0,"wall_median_s":3}]`))
	require.ErrorContains(t, err, "row 1")
	_, err = ReadResources(strings.NewReader(`[{"nodes":500,"degree":70,"cells":1,"rss_max_mib":1,"wall_median_s":3,"walls":1}]`))
	require.ErrorContains(t, err, "unknown field")
}

// TestMeasuredCost: a cell of a measured kind and size costs what was
// measured; another size of that kind scales the parts above 256 MiB and
// 5 s by the edge count; another kind is not matched.
func TestMeasuredCost(t *testing.T) {
	table := MeasureResources([]*cell.Record{
		resourceRecord(100, 70, "wholend", "quic", "harness", 3<<20, 55),
		resourceRecord(500, 70, "wholend", "quic", "harness", 13<<20, 285),
	}, []string{"x", "x"})
	c := cell.Config{Arm: "wholend", N: 500, Degree: 70, Payload: 1 << 20, Transport: "quic",
		Profile: cell.Profile{Name: "harness"}, Encoding: "snappy"}
	cost, ok := measuredCost(table, c)
	require.True(t, ok)
	require.Equal(t, Cost{Wall: 285 * time.Second, RSS: 13 << 30}, cost)

	c.N = 250 // 8 750 edges: nearest by ratio is 500 nodes (17 500), half of it
	cost, ok = measuredCost(table, c)
	require.True(t, ok)
	require.Equal(t, time.Duration((5+280.0/2)*float64(time.Second)), cost.Wall)
	require.Equal(t, int64(256<<20+(13<<30-256<<20)/2), cost.RSS)

	c.N = 150 // 5 250 edges: nearest by ratio is 100 nodes (3 500)
	cost, ok = measuredCost(table, c)
	require.True(t, ok)
	require.Equal(t, time.Duration((5+50*1.5)*float64(time.Second)), cost.Wall)

	c.Transport = "tcp"
	_, ok = measuredCost(table, c)
	require.False(t, ok)
}

// TestMeasuredCostPassesOverLimitedKinds: a kind whose every cell ran
// under a soft memory limit does not size a cell: its peak is the
// limit's, so the estimate scales the nearest kind measured without one.
func TestMeasuredCostPassesOverLimitedKinds(t *testing.T) {
	limited := resourceRecord(1000, 70, "wholend", "quic", "harness", 22<<20, 1257)
	limited.MemLimit = 19 << 30
	table := MeasureResources([]*cell.Record{
		resourceRecord(500, 70, "wholend", "quic", "harness", 14<<20, 600),
		limited,
	}, []string{"x", "y"})
	require.Len(t, table, 2)
	require.True(t, table[1].limitedOnly())
	c := cell.Config{Arm: "wholend", N: 1000, Degree: 70, Payload: 1 << 20, Transport: "quic",
		Profile: cell.Profile{Name: "harness"}, Encoding: "snappy"}
	cost, ok := measuredCost(table, c)
	require.True(t, ok)
	require.Equal(t, int64(256<<20+(14<<30-256<<20)*2), cost.RSS, "500 nodes' peak, doubled")

	var brief strings.Builder
	require.NoError(t, WriteResourcesBrief(&brief, table))
	require.NotContains(t, brief.String(), "| 1000, 70 |")
}

// TestProfileCost: a kind the table lacks under its own profile costs the
// largest memory and the longest wall time of the same kind under the
// other profiles, scaled to its size; another arm or transport, or a kind
// measured only under its own profile, is not matched; EstimateCost's
// rule takes it before the costliest segmented arm of the cell's profile.
func TestProfileCost(t *testing.T) {
	table := MeasureResources([]*cell.Record{
		resourceRecord(500, 70, "c_32k", "tcp", "shadow", 7<<20, 200),
		resourceRecord(500, 70, "c_32k", "tcp", "kernel", 6<<20, 300),
		resourceRecord(500, 70, "c_32k", "quic", "harness", 5<<20, 240),
		resourceRecord(500, 70, "crs_32k", "tcp", "harness", 9<<20, 250),
	}, []string{"x", "x", "x", "x"})
	c := cell.Config{Arm: "c_32k", N: 500, Degree: 70, Payload: 1 << 20, Transport: "tcp",
		Profile: cell.Profile{Name: "harness"}, Encoding: "snappy"}
	_, ok := measuredCost(table, c)
	require.False(t, ok)
	cost, ok := profileCost(table, c)
	require.True(t, ok)
	require.Equal(t, Cost{Wall: 300 * time.Second, RSS: 7 << 30}, cost)
	require.Equal(t, cost, costFrom(table, c), "the same arm elsewhere, not crs_32k's 9 GiB")

	c.N = 250 // half the edges: the parts above 256 MiB and 5 s halve
	cost, ok = profileCost(table, c)
	require.True(t, ok)
	require.Equal(t, Cost{Wall: time.Duration((5 + 295.0/2) * float64(time.Second)), RSS: 256<<20 + (7<<30-256<<20)/2}, cost)

	c.N, c.Arm = 500, "atuned_32k" // measured under no profile
	_, ok = profileCost(table, c)
	require.False(t, ok)
	c.Arm, c.Transport = "crs_32k", "quic" // crs_32k over TCP only
	_, ok = profileCost(table, c)
	require.False(t, ok)
	c.Transport, c.Profile.Name = "tcp", "harness" // its own profile only: measured, not a stand-in
	_, ok = profileCost(table, c)
	require.False(t, ok)
}

// TestSegmentedCost: a segmented arm the table lacks costs the largest
// memory and the longest wall time of the segmented arms measured in its
// kind otherwise, scaled to its size; the whole message, an arm of
// another transport, and an arm outside the catalogue are not matched.
func TestSegmentedCost(t *testing.T) {
	table := MeasureResources([]*cell.Record{
		resourceRecord(500, 70, "atuned_32k", "quic", "shadow", 5<<20, 250),
		resourceRecord(500, 70, "c_32k", "quic", "shadow", 7<<20, 200),
		resourceRecord(500, 70, "wholend", "quic", "shadow", 14<<20, 540),
	}, []string{"x", "x", "x"})
	c := cell.Config{Arm: "lad_phase_32k", N: 500, Degree: 70, Payload: 1 << 20, Transport: "quic",
		Profile: cell.Profile{Name: "shadow"}, Encoding: "snappy"}
	_, ok := measuredCost(table, c)
	require.False(t, ok)
	cost, ok := segmentedCost(table, c)
	require.True(t, ok)
	require.Equal(t, Cost{Wall: 250 * time.Second, RSS: 7 << 30}, cost)

	c.N = 250 // half the edges: the parts above 256 MiB and 5 s halve
	cost, ok = segmentedCost(table, c)
	require.True(t, ok)
	require.Equal(t, Cost{Wall: time.Duration((5 + 245.0/2) * float64(time.Second)), RSS: 256<<20 + (7<<30-256<<20)/2}, cost)

	c.N, c.Transport = 500, "tcp"
	_, ok = segmentedCost(table, c)
	require.False(t, ok)
	c.Transport, c.Arm = "quic", "wholend" // measured, but as itself
	_, ok = segmentedCost(table, c)
	require.False(t, ok)
	c.Arm = "no-such-arm"
	_, ok = segmentedCost(table, c)
	require.False(t, ok)
}

// TestEstimateCostFallsBack: a kind the committed table lacks costs the
// formula's estimate; one it has costs the measured one, unless every
// cell of it ran under a soft memory limit.
func TestEstimateCostFallsBack(t *testing.T) {
	c := cell.Config{Arm: "wholend", N: 40, Degree: 8, Payload: 1 << 20, Transport: "quic",
		Profile: cell.Profile{Name: "no-such-profile"}, Encoding: "no-such-encoding"}
	require.Equal(t, formulaCost(c), EstimateCost(c))
	table, err := committedResources()
	require.NoError(t, err)
	for _, r := range table {
		c := cell.Config{Arm: r.Arm, N: r.Nodes, Degree: r.Degree, Payload: r.Payload, Transport: r.Transport,
			Profile: cell.Profile{Name: r.Profile}, Backend: r.Backend, Encoding: arms.Encoding(r.Encoding), Partitions: r.Partitions,
			Warmup: warmupFrom(t, r.Warmup)}
		if r.limitedOnly() {
			require.NotEqual(t, time.Duration(r.WallMedianS*float64(time.Second)), EstimateCost(c).Wall, "%+v", r.Kind)
			continue
		}
		require.Equal(t, time.Duration(r.WallMedianS*float64(time.Second)), EstimateCost(c).Wall, "%+v", r.Kind)
	}
}

// TestWriteResourcesBrief: per size, the whole message's row comes first
// with its largest peak and median wall; the segmented arms share one row
// per size with the largest peak of any of them and the range of their
// medians (or the arm's name when it is the only one); kinds on another
// network, encoding or with partitions are left out. A figure some of
// whose cells ran on a machine with other than ReferenceCPUs CPUs is
// marked, with a note under the table.
func TestWriteResourcesBrief(t *testing.T) {
	recs := []*cell.Record{
		resourceRecord(500, 70, "atuned_32k", "quic", "harness", 5<<20, 210),
		resourceRecord(500, 70, "c_32k", "quic", "harness", 7<<20, 270),
		resourceRecord(500, 70, "c_32k", "tcp", "shadow", 8<<20, 190),
		resourceRecord(500, 70, "wholend", "quic", "harness", 14<<20, 630),
		resourceRecord(250, 70, "atuned_32k", "quic", "harness", 3<<20, 70),
		resourceRecord(500, 70, "wholend", "quic", "harness", 20<<20, 100),
		resourceRecord(500, 70, "wholend", "quic", "harness", 6<<20, 120),
	}
	recs[5].Partitions = 2
	recs[6].PayloadBytes = 2 << 20 // not the study's payload: left to results/resources.md
	var b strings.Builder
	require.NoError(t, WriteResourcesBrief(&b, MeasureResources(recs, []string{"a", "a", "a", "a", "a", "a", "a"})))
	require.Equal(t, `| nodes, degree | arms | harness QUIC | shadow TCP |
| --- | --- | ---: | ---: |
| 250, 70 | atuned_32k | 3.0 GiB, 70 s | |
| 500, 70 | whole message | 14.0 GiB, 630 s | |
| 500, 70 | 2 segmented | 7.0 GiB, 210–270 s | 8.0 GiB, 190 s |
`, b.String())

	recs[1].Host = &cell.Host{CPUs: 16, MemGiB: 125}
	recs[3].Host = &cell.Host{CPUs: ReferenceCPUs, MemGiB: 23.5}
	b.Reset()
	require.NoError(t, WriteResourcesBrief(&b, MeasureResources(recs, []string{"a", "a", "a", "a", "a", "a", "a"})))
	require.Equal(t, `| nodes, degree | arms | harness QUIC | shadow TCP |
| --- | --- | ---: | ---: |
| 250, 70 | atuned_32k | 3.0 GiB, 70 s | |
| 500, 70 | whole message | 14.0 GiB, 630 s | |
| 500, 70 | 2 segmented | 7.0 GiB, 210–270 s† | 8.0 GiB, 190 s |

† wall times partly measured on a machine with other than 2 CPUs (results/resources.md).
`, b.String())
}

// TestWarmupCost: a warm cell is its own kind. With none of its warm-up
// measured it costs the same cell cold plus warmupCost's term (streams:
// per byte both ways over every edge; a payload: the delivery twice);
// another segmented arm measured with that warm-up, or its own, prices it
// as for any kind. The resource page names the warm-up; the README's
// brief leaves warm kinds out.
func TestWarmupCost(t *testing.T) {
	cold := resourceRecord(500, 70, "acoded_32k", "quic", "harness", 7<<20, 250)
	table := MeasureResources([]*cell.Record{cold}, []string{"x"})
	c := cell.Config{Arm: "acoded_32k", N: 500, Degree: 70, Payload: 1 << 20, Transport: "quic",
		Profile: cell.Profile{Name: "harness"}, Encoding: "snappy"}
	require.Equal(t, Cost{Wall: 250 * time.Second, RSS: 7 << 30}, costFrom(table, c))

	c.Warmup = cell.Warmup{Kind: "streams", Stream: 320 << 10, Gap: des.Second}
	mib := 17500 * 2 * 320.0 / 1024 // both ways over 500 × 70 / 2 edges
	want := Cost{Wall: 250*time.Second + time.Duration(WarmupStreamWall*mib*float64(time.Second)),
		RSS: 7<<30 + int64(WarmupStreamRSS*mib*(1<<20))}
	require.Equal(t, want, costFrom(table, c))
	// 10 937.5 MiB sent: 9.19 GiB and 1 258 s more than cold.
	require.InDelta(t, 7+9.19, float64(want.RSS)/(1<<30), 0.005)
	require.InDelta(t, 250+1258, want.Wall.Seconds(), 0.5)
	c.Warmup.Kind = "streams-seq"
	require.Equal(t, want, costFrom(table, c))
	c.Warmup = cell.Warmup{Kind: "payload"}
	require.Equal(t, Cost{Wall: (5 + 2*245) * time.Second, RSS: 7 << 30}, costFrom(table, c))

	// Measured with the warm-up: another segmented arm's cost, then its own.
	c.Warmup = cell.Warmup{Kind: "streams", Stream: 320 << 10}
	warmC := resourceRecord(500, 70, "c_32k", "quic", "harness", 13<<20, 900)
	warmC.Warmup = "streams:320KiB"
	table = MeasureResources([]*cell.Record{cold, warmC}, []string{"x", "x"})
	require.Len(t, table, 2)
	require.Equal(t, Cost{Wall: 900 * time.Second, RSS: 13 << 30}, costFrom(table, c))
	warmA := resourceRecord(500, 70, "acoded_32k", "quic", "harness", 12<<20, 800)
	warmA.Warmup = "streams:320KiB"
	table = MeasureResources([]*cell.Record{cold, warmC, warmA}, []string{"x", "x", "x"})
	require.Equal(t, Cost{Wall: 800 * time.Second, RSS: 12 << 30}, costFrom(table, c))
	c.Warmup = cell.Warmup{}
	require.Equal(t, Cost{Wall: 250 * time.Second, RSS: 7 << 30}, costFrom(table, c), "the cold cell keeps its own cost")

	var page, brief bytes.Buffer
	require.NoError(t, WriteResourcesPage(&page, table))
	require.Contains(t, page.String(), "| acoded_32k, warm-up streams:320KiB | quic | harness |")
	require.NoError(t, WriteResourcesBrief(&brief, table))
	require.Contains(t, brief.String(), "| 500, 70 | acoded_32k | 7.0 GiB, 250 s |")
	require.NotContains(t, brief.String(), "GiB, 800 s")
}

// warmupFrom is the warm-up a record names (cell.Warmup.String).
func warmupFrom(t *testing.T, s string) cell.Warmup {
	t.Helper()
	kind, size, ok := strings.Cut(s, ":")
	if !ok {
		return cell.Warmup{Kind: kind}
	}
	b, err := des.ParseBytes(size, 1, des.MaxBytes)
	require.NoError(t, err)
	w := cell.Warmup{Kind: kind, Stream: int(b)}
	require.Equal(t, s, w.String())
	return w
}

// TestLimitedPeak: under a soft memory limit a cell plans for the limit
// plus a quarter where its estimate is larger, else for its estimate;
// with no limit, its estimate.
func TestLimitedPeak(t *testing.T) {
	require.Equal(t, int64(28<<30), LimitedPeak(28<<30, 0))
	require.Equal(t, int64(19<<30+19<<28), LimitedPeak(28<<30, 19<<30))
	require.Equal(t, int64(12<<30), LimitedPeak(12<<30, 19<<30))
	require.Equal(t, int64(5<<30), LimitedPeak(28<<30, 4<<30))
}
