package validate

import (
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/uplinksim/uplink/protocols/cell"
)

// WriteReport from synthetic records: the Markdown table holds every
// replayed row with its verdict, and the figures are PNG images.
func TestWriteReport(t *testing.T) {
	p, err := PlanTable("appendix_d_home", PlanOptions{Seeds: []uint64{7, 8}, Arms: []string{"wholend", "atuned", "c32"}, Backends: []string{"shadow", "twin"}})
	if err != nil {
		t.Fatal(err)
	}
	records := map[string]*cell.Record{}
	f := func(v float64) *float64 { return &v }
	for _, c := range p.Cells {
		for i, cfg := range c.Configs {
			base := map[string]float64{"wholend": 3.2, "atuned": 0.8, "c32": 0.7}[c.Arm.Published] + 0.1*float64(i)
			if c.Column.Backend == "twin" { // the base of Shadow QUIC's differences: 25 % slower
				base *= 1.25
			}
			r := &cell.Record{Key: cfg.Key(), P50S: f(base), P99S: f(base * 1.3)}
			for n := range 10 {
				r.Nodes = append(r.Nodes, cell.NodeRow{Index: n, TimeS: f(base * (0.5 + 0.1*float64(n)))})
			}
			records[cfg.Key()] = r
		}
	}
	dir := t.TempDir()
	if err := WriteReport(dir, p, records); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	// 3 arms × 2 transports × 2 statistics, and 3 arms × 2 statistics of
	// Shadow QUIC against the twin (1/1.25 − 1 = −20 %).
	if n := strings.Count(string(md), "| shadow "); n != 18 {
		t.Fatalf("report.md has %d rows, want 18:\n%s", n, md)
	}
	if !strings.Contains(string(md), "| wholend | shadow quic fifo | twin quic fq_codel | p50 | of medians | −34% | −20% |") {
		t.Fatalf("report.md lacks the whole message's difference from the twin:\n%s", md)
	}
	if !strings.Contains(string(md), "| wholend | shadow quic fifo | p50 | 3.22 s | 3.250 s | 3.200 s to 3.300 s | 2/2 |") {
		t.Fatalf("report.md lacks the whole message's p50 row:\n%s", md)
	}
	for _, name := range []string{"bars.png", "cdf-shadow-quic-fifo.png", "cdf-shadow-tcp-fifo.png"} {
		fh, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(fh)
		fh.Close()
		if err != nil || img.Bounds().Dx() < 300 {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

// TestWriteReportLeavesNoPartialFile: a report that cannot be written
// (here a CDF's name is taken by a folder) fails, and leaves no temporary
// folder and no file but whole ones of the report.
func TestWriteReportLeavesNoPartialFile(t *testing.T) {
	p, err := PlanTable("appendix_d_home", PlanOptions{Seeds: []uint64{7}, Arms: []string{"wholend"}, Backends: []string{"shadow"}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "cdf-shadow-tcp-fifo.png"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cdf-shadow-tcp-fifo.png", "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteReport(dir, p, map[string]*cell.Record{}); err == nil {
		t.Fatal("WriteReport over a folder succeeded")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "cdf-shadow-tcp-fifo.png" && e.Name() != "report.md" && e.Name() != "bars.png" && e.Name() != "cdf-shadow-quic-fifo.png" {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

// cdfPoints pools a column's seeds: two records of four receivers, one
// with completion_us (0.5 s, 0.7 s, two censored), one with per-node rows
// (0.6 s and three censored), give 0.5, 0.6, 0.7 s at 1/8, 2/8, 3/8; a
// record with neither adds nothing.
func TestCDFPoints(t *testing.T) {
	p, err := PlanTable("appendix_d_home", PlanOptions{Seeds: []uint64{7, 8, 9}, Arms: []string{"atuned"}, Backends: []string{"shadow"}, Transports: []string{"quic"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Cells) != 1 {
		t.Fatalf("%d cells, want 1", len(p.Cells))
	}
	c := p.Cells[0]
	f := func(v float64) *float64 { return &v }
	records := map[string]*cell.Record{
		c.Configs[0].Key(): {Completed: 2, Total: 4, CompletionUS: []int64{500000, 700000}},
		c.Configs[1].Key(): {Completed: 1, Total: 4, Nodes: []cell.NodeRow{{Index: 0, TimeS: f(0)}, {Index: 1, TimeS: f(0.6)}, {Index: 2}, {Index: 3}, {Index: 4}}},
		c.Configs[2].Key(): {Completed: 3, Total: 4}, // neither: an older record
	}
	got := cdfPoints(p, c.Column, "atuned", records)
	want := []struct{ x, y float64 }{{0.5, 0.125}, {0.6, 0.25}, {0.7, 0.375}}
	if len(got) != len(want) {
		t.Fatalf("points %v, want %v", got, want)
	}
	for i, w := range want {
		if got[i].X != w.x || got[i].Y != w.y {
			t.Fatalf("points %v, want %v", got, want)
		}
	}
}

// The report lists columns as the table does (Appendix D: harness, twin,
// Shadow QUIC, Shadow TCP), although the differences plan the Shadow QUIC
// and twin cells first.
func TestColumnsFollowTheTable(t *testing.T) {
	p, err := PlanTable("appendix_d_home", PlanOptions{Seeds: []uint64{7}, Arms: []string{"atuned"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range columns(p) {
		got = append(got, c.Backend+" "+c.Transport)
	}
	want := []string{"harness quic", "twin quic", "shadow quic", "shadow tcp"}
	if !slices.Equal(got, want) {
		t.Fatalf("columns %v, want %v", got, want)
	}
}
