package validate

import (
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/uplinksim/uplink/internal/outfile"
	"github.com/uplinksim/uplink/protocols/cell"
)

// WriteStudyReport writes dir/report.md: the study's question, its table
// from records (the median and range across seeds of p50, the median p99,
// and the paired per-seed differences from the baseline of p50 and of
// p99, each with the seeds' range) and its reading. The file is written
// through package outfile.
func WriteStudyReport(dir string, s Study, cells []StudyCell, records map[string]*cell.Record) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	err := outfile.WriteFile(filepath.Join(dir, "report.md"), outfile.Replace, func(w io.Writer) error {
		_, err := io.WriteString(w, studyMarkdown(s, cells, records))
		return err
	})
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// studyMarkdown is report.md's text.
// formatCountDiff writes a count's paired difference: signed, with its
// range; rate@3s in percentage points; n/a when no seed paired.
func formatCountDiff(name string, d CountDiff) string {
	if d.Seeds == 0 {
		return "n/a"
	}
	f, scale := "%+.0f", 1.0
	switch name {
	case "rate@3s":
		f, scale = "%+.0f pp", 100
	case "publisher MiB":
		f = "%+.2f"
	}
	v := func(x float64) string { return strings.Replace(fmt.Sprintf(f, x*scale), "-", "−", 1) }
	return fmt.Sprintf("%s [%s, %s]", v(d.Median), v(d.Lo), v(d.Hi))
}

// writeLedger writes the table of variant B's claim ledger, when the
// study has variant B's rows.
func writeLedger(b *strings.Builder, rows []StudyRow) {
	var ledger []StudyRow
	for _, r := range rows {
		if r.Ledger != nil {
			ledger = append(ledger, r)
		}
	}
	if len(ledger) == 0 {
		return
	}
	b.WriteString("\nVariant B's claim ledger, summed over a cell's nodes, the median across seeds: claims sent, claims lapsed (the request timeout passed before the part came), of those the claims to a peer not yet heard from (which wait the first timeout), and parts that came from the claimed peer after the lapse (n/a: records from before these were counted).\n\n")
	b.WriteString("| variant | arm | seeds | claims | lapsed | to peers not yet heard from | answered after the lapse |\n| --- | --- | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range ledger {
		fmt.Fprintf(b, "| %s | %s | %d | %s | %s | %s | %s |\n", r.Variant, r.Arm, r.Seeds,
			FormatCount(r.Ledger.Claims), FormatCount(r.Ledger.Lapsed), FormatCount(r.Ledger.Unheard), FormatCount(r.Ledger.Late))
	}
}

func studyMarkdown(s Study, cells []StudyCell, records map[string]*cell.Record) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Study %s\n\n%s\n\n", s.Name, s.Question)
	against := "the baseline"
	if s.BaseArm != "" {
		against = "arm " + s.BaseArm
	}
	p50 := s
	p50.Stat = "p50"
	p99 := s
	p99.Stat = "p99"
	rows50, rows99 := p50.Table(cells, records), p99.Table(cells, records)
	fmt.Fprintf(&b, "| variant | arm | seeds | p50 (median) | p50 range | p99 (median) | p50 vs %s, per seed | p99 vs %s, per seed | dups | received / node | queue drops |\n", against, against)
	b.WriteString("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	paired := func(r StudyRow) string {
		switch {
		case r.VsBase != nil:
			return fmt.Sprintf("%s [%s, %s]", FormatDiff(r.VsBase.Median), FormatDiff(r.VsBase.Lo), FormatDiff(r.VsBase.Hi))
		case r.IsBase:
			return "baseline"
		}
		return ""
	}
	for i, r := range rows50 {
		if r.Seeds == 0 {
			fmt.Fprintf(&b, "| %s | %s | 0 | not run | | | | | | | |\n", r.Variant, r.Arm)
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s to %s | %s | %s | %s | %.0f | %s | %s |\n", r.Variant, r.Arm, r.Seeds,
			FormatValue(r.P50, "s"), FormatValue(r.P50Range.Lo, "s"), FormatValue(r.P50Range.Hi, "s"), FormatValue(r.P99, "s"),
			paired(r), paired(rows99[i]), r.Dups, FormatBytes(r.RxNode), FormatCount(r.QueueDrops))
	}
	fmt.Fprintf(&b, "\nPaired: the median across seeds of the per-seed difference from %s, in percent, with the seeds' range in brackets. Received / node: the data bytes a receiver took in, the median across seeds of each cell's mean.\n", against)
	fmt.Fprintf(&b, "\nCounts against %s, seed by seed: the median of the per-seed differences (this row's minus %s's) with the seeds' range; rate@3s in percentage points of the receivers, publisher MiB the gossip data the publisher queued, queue drops only from records that counted them.\n\n", against, against)
	b.WriteString("| variant | arm | seeds paired |")
	for _, name := range StudyCounts {
		b.WriteString(" " + name + " |")
	}
	b.WriteString("\n| --- | --- | ---: |" + strings.Repeat(" ---: |", len(StudyCounts)) + "\n")
	for _, r := range rows50 {
		if r.CountsVsBase == nil {
			continue
		}
		paired := 0
		for _, d := range r.CountsVsBase {
			paired = max(paired, d.Seeds)
		}
		fmt.Fprintf(&b, "| %s | %s | %d |", r.Variant, r.Arm, paired)
		for k, d := range r.CountsVsBase {
			b.WriteString(" " + formatCountDiff(StudyCounts[k], d) + " |")
		}
		b.WriteString("\n")
	}
	writeLedger(&b, rows50)
	writeConnState(&b, rows50)
	writePubUplink(&b, rows50)
	fmt.Fprintf(&b, "\nReading (%s): %s\n", s.CompareStat(), s.Reading(cells, records))
	switch a, err := s.Answer(cells, records); {
	case err != nil:
		fmt.Fprintf(&b, "\nAnswer: %v\n", err)
	case a != "":
		b.WriteString("\n" + a)
	}
	return b.String()
}

// writePubUplink writes which uplink queue the publisher had, seed by
// seed, for the rows whose uplinks are a mix (StudyRow.PubUplink).
func writePubUplink(b *strings.Builder, rows []StudyRow) {
	var mixed []StudyRow
	for _, r := range rows {
		if r.PubUplink != nil {
			mixed = append(mixed, r)
		}
	}
	if len(mixed) == 0 {
		return
	}
	b.WriteString("\nThe publisher's uplink queue under a mix, with what placed it (seed: the seeded choice of nodes; +pub, -pub: pinned in or out), and on how many seeds; ? for records written before assignments were recorded.\n\n")
	b.WriteString("| variant | arm | seeds | publisher's uplink |\n| --- | --- | ---: | --- |\n")
	for _, r := range mixed {
		fmt.Fprintf(b, "| %s | %s | %d | %s |\n", r.Variant, r.Arm, r.Seeds, FormatPubUplink(r.PubUplink))
	}
}

// FormatPubUplink writes a row's seeds by the publisher's uplink queue
// (StudyRow.PubUplink), the most seeds first: "pie (seed) on 3, fq_codel
// (seed) on 2".
func FormatPubUplink(m map[string]int) string {
	specs := slices.Collect(maps.Keys(m))
	slices.SortFunc(specs, func(a, b string) int {
		if m[a] != m[b] {
			return m[b] - m[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(specs))
	for i, s := range specs {
		parts[i] = fmt.Sprintf("%s on %d", s, m[s])
	}
	return strings.Join(parts, ", ")
}

// writeConnState writes the table of quic-go's connections at the
// publish (StudyRow.CwndKiB, LostBefore), when some row's cells lost
// packets before it (a warm-up): cold cells start every connection at
// quic-go's initial window with nothing lost, and the table would repeat
// that on every row.
func writeConnState(b *strings.Builder, rows []StudyRow) {
	var quic []StudyRow
	lost := false
	for _, r := range rows {
		if !math.IsNaN(r.CwndKiB) { // NaN for rows without records and for TCP cells
			quic = append(quic, r)
			lost = lost || r.LostBefore > 0
		}
	}
	if !lost {
		return
	}
	b.WriteString("\nquic-go's connections at the publish, the median across seeds of each cell's figure over every connection end: cwnd at publish, the median congestion window (quic-go starts at 40 KiB); lost before, the packets lost before the publish (setup and warm-up).\n\n")
	b.WriteString("| variant | arm | seeds | cwnd at publish | lost before |\n| --- | --- | ---: | ---: | ---: |\n")
	for _, r := range quic {
		fmt.Fprintf(b, "| %s | %s | %d | %.1f KiB | %s |\n", r.Variant, r.Arm, r.Seeds, r.CwndKiB, FormatCount(r.LostBefore))
	}
}
