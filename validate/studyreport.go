package validate

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/uplinksim/uplink/protocols/cell"
)

// WriteStudyReport writes dir/report.md: the study's question, its table
// from records (the median and range across seeds of p50, the median p99,
// and the paired per-seed differences from the baseline of p50 and of
// p99, each with the seeds' range) and its reading. The file is written
// beside its final name and renamed into place.
func WriteStudyReport(dir string, s Study, cells []StudyCell, records map[string]*cell.Record) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".report-*.md")
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(studyMarkdown(s, cells, records)); err != nil {
		tmp.Close()
		return fmt.Errorf("report: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, "report.md")); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// studyMarkdown is report.md's text.
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
	fmt.Fprintf(&b, "| variant | arm | seeds | p50 (median) | p50 range | p99 (median) | p50 vs %s, per seed | p99 vs %s, per seed | dups | queue drops |\n", against, against)
	b.WriteString("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
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
			fmt.Fprintf(&b, "| %s | %s | 0 | not run | | | | | | |\n", r.Variant, r.Arm)
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s to %s | %s | %s | %s | %.0f | %s |\n", r.Variant, r.Arm, r.Seeds,
			FormatValue(r.P50, "s"), FormatValue(r.P50Range.Lo, "s"), FormatValue(r.P50Range.Hi, "s"), FormatValue(r.P99, "s"),
			paired(r), paired(rows99[i]), r.Dups, FormatCount(r.QueueDrops))
	}
	fmt.Fprintf(&b, "\nPaired: the median across seeds of the per-seed difference from %s, in percent, with the seeds' range in brackets.\n", against)
	fmt.Fprintf(&b, "\nReading (%s): %s\n", s.CompareStat(), s.Reading(s.Table(cells, records)))
	return b.String()
}
