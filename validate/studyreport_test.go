package validate

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/protocols/cell"
)

// TestWriteStudyReport: report.md holds the study's question, a row per
// variant with the paired per-seed differences of p50 and of p99 from
// the baseline (known answers from synthetic records), the bytes received
// per node, the median queue
// drops ("n/a" for records on simnet made before its drops were counted),
// the paired differences of the counts (rate@3s, duplicates, publisher
// bytes, queue drops), and the reading; no temporary file is left beside it.
func TestWriteStudyReport(t *testing.T) {
	s := Study{Name: "q", Question: "Does it move?", Arms: []string{"wholend"}, N: 12, Payload: 1 << 16, Seeds: []uint64{7, 8, 9},
		Variants: []Variant{{Label: "base", Profile: "harness"}, {Label: "again", Profile: "harness", Replicate: 1}}}
	cells, err := s.Cells(0, nil, cell.Config{})
	require.NoError(t, err)
	base := []float64{1, 2, 4}
	f50 := [][]float64{{1, 1, 1}, {1.10, 1.20, 0.95}}
	f99 := [][]float64{{1, 1, 1}, {0.90, 0.80, 1.00}}
	records := map[string]*cell.Record{}
	for _, c := range cells {
		for i, cfg := range c.Configs {
			p50, p99 := base[i]*f50[c.Variant][i], 2*base[i]*f99[c.Variant][i]
			r := &cell.Record{Key: cfg.Key(), P50S: &p50, P99S: &p99, Drops: map[string]uint64{"queue": uint64(10 * (i + 1))},
				Dups: 10*(i+1) + c.Variant*5*i, RateK: 2 + c.Variant, RateN: 4, PubBytes: uint64(1+c.Variant) << 20,
				RxNodeBytes: float64((i + 1 + c.Variant) << 20)}
			if c.Variant == 1 { // on simnet, before its drops were counted
				r.Backend, r.NotModelled, r.Drops = cell.BackendSimnet, []string{"queue statistics and queue drops (the record's queues and drops are empty)"}, nil
			}
			records[cfg.Key()] = r
		}
	}
	dir := t.TempDir()
	require.NoError(t, WriteStudyReport(dir, s, cells, records))
	b, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	fi, err := os.Stat(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), fi.Mode().Perm(), "a page is readable by all")
	md := string(b)
	require.Contains(t, md, "# Study q\n\nDoes it move?\n")
	require.Contains(t, md, "| base | wholend | 3 | 2.000 s | 1.000 s to 4.000 s | 4.000 s | baseline | baseline | 20 | 2.00 MiB | 20 |")
	require.Contains(t, md, "| again | wholend | 3 | 2.400 s | 1.100 s to 3.800 s | 3.200 s | +10% [−5%, +20%] | −10% [−20%, 0%] | 25 | 3.00 MiB | n/a |")
	require.Contains(t, md, "| again | wholend | 3 | +25 pp [+25 pp, +25 pp] | +5 [+0, +10] | +1.00 [+1.00, +1.00] | n/a |")
	require.Contains(t, md, "Reading (p50): ")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
}

// TestStudyReportLedger: a study of variant B's arms gets a table of the
// claim ledger, the median across seeds of each cell's counts; records
// from before the lapses to unheard peers were counted read n/a, and a
// study without variant B has no such table.
func TestStudyReportLedger(t *testing.T) {
	s := Study{Name: "b", Question: "Lapses?", Arms: []string{"bcodedfc1"}, N: 12, Payload: 1 << 16, Seeds: []uint64{7, 8, 9},
		Variants: []Variant{{Label: "400 ms", Profile: "shadow"}, {Label: "800 ms", Profile: "shadow", BTimeout: 800 * des.Millisecond}}}
	cells, err := s.Cells(0, nil, cell.Config{})
	require.NoError(t, err)
	records := map[string]*cell.Record{}
	for _, c := range cells {
		for i, cfg := range c.Configs {
			p := 1.0
			r := &cell.Record{Key: cfg.Key(), P50S: &p, P99S: &p, BClaims: 100 * (i + 1), BTimeouts: 10 * (i + 1)}
			if c.Variant == 1 {
				unheard, late := 8*(i+1), 5*(i+1)
				r.BTimeoutsUnheard, r.BLateAnswers = &unheard, &late
			}
			records[cfg.Key()] = r
		}
	}
	md := studyMarkdown(s, cells, records)
	require.Contains(t, md, "| 400 ms | bcodedfc1 | 3 | 200 | 20 | n/a | n/a |")
	require.Contains(t, md, "| 800 ms | bcodedfc1 | 3 | 200 | 20 | 16 | 10 |")

	s.Arms = []string{"c32"}
	s.Variants[1].BTimeout = 0
	s.Variants[1].Replicate = 1
	cells, err = s.Cells(0, nil, cell.Config{})
	require.NoError(t, err)
	require.NotContains(t, studyMarkdown(s, cells, map[string]*cell.Record{}), "claim ledger")
}

// TestStudyReportConnState: a study whose cells lost packets before the
// publish (a warm-up) gets a table of quic-go's connections at the
// publish, the median across seeds of each cell's median window and of
// its packets lost, with a row for each variant that has the state; a
// study of cold cells (nothing lost before the publish) has none.
func TestStudyReportConnState(t *testing.T) {
	s, cells, records := connStateStudy(t, func(variant, seed int) *cell.ConnState {
		if variant == 0 {
			return &cell.ConnState{CwndKiBP50: 40}
		}
		return &cell.ConnState{CwndKiBP50: []float64{20, 22}[seed], PacketsLost: []uint64{1000, 3000}[seed]}
	})
	md := studyMarkdown(s, cells, records)
	require.Contains(t, md, "| variant | arm | seeds | cwnd at publish | lost before |")
	require.Contains(t, md, "| "+s.Variants[0].Label+" | "+s.Arms[0]+" | 2 | 40.0 KiB | 0 |")
	require.Contains(t, md, "| "+s.Variants[1].Label+" | "+s.Arms[0]+" | 2 | 21.0 KiB | 2000 |")

	s, cells, records = connStateStudy(t, func(int, int) *cell.ConnState { return &cell.ConnState{CwndKiBP50: 40} })
	require.NotContains(t, studyMarkdown(s, cells, records), "cwnd at publish")
}
