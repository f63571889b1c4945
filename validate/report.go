package validate

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/uplinksim/uplink/internal/figure"
	"github.com/uplinksim/uplink/internal/outfile"
	"github.com/uplinksim/uplink/protocols/cell"
)

// WriteReport writes a replay's comparison into dir: report.md (the
// side-by-side table, the rankings and the rows not replayed), bars.png
// (Figure 1's style: per arm and column, uplink's median p99 as a bar with
// its p50 as a tick, whiskers of ±1 s.d. of the per-seed p99, the
// reference p99 as a ring, and the 3 s budget line) and one
// cdf-COLUMN.png per column (completion times of every receiver of every
// seed, per arm; a record without completion_us needs per-node rows for
// these).
func WriteReport(dir string, p *Plan, records map[string]*cell.Record) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	// Every file is written into a temporary folder beside the report's
	// files and put in place (outfile.Install) only once all are written:
	// a failure leaves no partial file, and none at all unless putting one
	// in place fails.
	tmp, err := os.MkdirTemp(dir, ".report-")
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	defer os.RemoveAll(tmp)
	rows := p.Compare(records)
	names := []string{"report.md", "bars.png"}
	if err := os.WriteFile(filepath.Join(tmp, "report.md"), []byte(markdown(p, rows, records)), 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := bars(filepath.Join(tmp, "bars.png"), p, records); err != nil {
		return fmt.Errorf("report: bars: %w", err)
	}
	for _, col := range columns(p) {
		name := "cdf-" + strings.ReplaceAll(col.String(), " ", "-") + ".png"
		if err := cdf(filepath.Join(tmp, name), p, col, records); err != nil {
			return fmt.Errorf("report: %s: %w", name, err)
		}
		names = append(names, name)
	}
	for _, name := range names {
		if err := outfile.Install(filepath.Join(tmp, name), filepath.Join(dir, name), outfile.Replace); err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}
	return nil
}

// columns lists the plan's columns in the order the table gives them (by
// each column's first row), then those only named by a difference.
func columns(p *Plan) []Column {
	var out []Column
	first := map[Column]int{}
	for _, c := range p.Cells {
		if !slices.Contains(out, c.Column) {
			out = append(out, c.Column)
			first[c.Column] = math.MaxInt
		}
		for _, r := range c.Rows {
			first[c.Column] = min(first[c.Column], r.Line)
		}
	}
	slices.SortStableFunc(out, func(a, b Column) int { return cmp.Compare(first[a], first[b]) })
	return out
}

// arms lists the plan's arms (published names) in first-seen order.
func planArms(p *Plan) []string {
	var out []string
	for _, c := range p.Cells {
		if !slices.Contains(out, c.Arm.Published) {
			out = append(out, c.Arm.Published)
		}
	}
	return out
}

func markdown(p *Plan, rows []Row, records map[string]*cell.Record) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Replay of %s\n\n", p.Table)
	if p.Shrunk {
		b.WriteString("The cells are shrunk (other node count or seeds): the comparison is indicative only.\n\n")
	}
	b.WriteString("| arm | column | statistic | reference | uplink (median) | seed range | seeds | difference | verdict |\n")
	b.WriteString("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |\n")
	for _, r := range rows {
		if len(r.PerSeed) == 0 {
			fmt.Fprintf(&b, "| %s | %s | %s | %s %s | %s | | 0/%d | | |\n", r.Cell.Arm.Published, r.Cell.Column, r.Ref.Statistic, r.Ref.ValueText, r.Ref.Unit, r.NoValue(), len(r.Cell.Seeds))
			continue
		}
		verdict := "outside"
		if r.Within {
			verdict = "within"
		}
		if r.Missing > 0 {
			verdict += " (partial)"
		}
		f := func(v Value) string { return FormatValue(v, r.Ref.Unit) }
		fmt.Fprintf(&b, "| %s | %s | %s | %s %s | %s | %s to %s | %d/%d | %s | %s |\n", r.Cell.Arm.Published, r.Cell.Column, r.Ref.Statistic,
			r.Ref.ValueText, r.Ref.Unit, f(r.Median), f(r.Spread.Lo), f(r.Spread.Hi), len(r.PerSeed), len(r.Cell.Seeds), FormatDiff(r.Diff), verdict)
	}
	b.WriteString("\n" + VerdictRule + "\n")
	if ds := p.CompareDiffs(records); len(ds) > 0 {
		b.WriteString("\n## Differences between columns\n\n")
		b.WriteString("Paired: the median across seeds of the per-seed difference (the seeds' range in brackets); otherwise the difference of the two medians. The verdict reads within when the reference difference lies in uplink's range of per-seed differences.\n\n")
		b.WriteString("| arm | column | against | statistic | kind | reference | uplink | per-seed range | seeds | verdict |\n")
		b.WriteString("| --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | --- |\n")
		for _, d := range ds {
			r := d.Row
			if d.Seeds == 0 {
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | not run | | 0/%d | |\n", r.Cell.Arm.Published, r.Cell.Column, r.Base.Column, r.Ref.Statistic, r.Kind(), r.RefText(), len(r.Cell.Seeds))
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s to %s | %d/%d | %s |\n", r.Cell.Arm.Published, r.Cell.Column, r.Base.Column, r.Ref.Statistic, r.Kind(),
				r.RefText(), FormatDiff(d.Value), FormatDiff(d.Paired.Lo), FormatDiff(d.Paired.Hi), d.Seeds, len(r.Cell.Seeds), d.Verdict())
		}
	}
	if lines := RankingLines(rows); len(lines) > 0 {
		b.WriteString("\n## Ranking of the arms, reference against uplink\n\n")
		for _, l := range lines {
			b.WriteString("- " + l + "\n")
		}
	}
	if len(p.Skipped) > 0 {
		b.WriteString("\n## Rows not replayed\n\n")
		for _, s := range p.Skipped {
			fmt.Fprintf(&b, "- %s line %d (%s %s %s): %s\n", s.Row.File, s.Row.Line, s.Row.ArmPublished, s.Row.Backend, s.Row.Statistic, s.Reason)
		}
	}
	return b.String()
}

// cellStats are one cell's per-seed p50 and p99 from the records.
func cellStats(c *ReplayCell, records map[string]*cell.Record) (p50, p99 []float64) {
	for _, cfg := range c.Configs {
		r := records[cfg.Key()]
		if r == nil {
			continue
		}
		if r.P50S != nil {
			p50 = append(p50, *r.P50S)
		}
		if r.P99S != nil {
			p99 = append(p99, *r.P99S)
		}
	}
	return p50, p99
}

func median(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	s := slices.Clone(x)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

var palette = []color.Color{
	color.RGBA{0x1f, 0x77, 0xb4, 0xff}, color.RGBA{0xff, 0x7f, 0x0e, 0xff}, color.RGBA{0x2c, 0xa0, 0x2c, 0xff},
	color.RGBA{0xd6, 0x27, 0x28, 0xff}, color.RGBA{0x94, 0x67, 0xbd, 0xff}, color.RGBA{0x8c, 0x56, 0x4b, 0xff},
	color.RGBA{0xe3, 0x77, 0xc2, 0xff}, color.RGBA{0x7f, 0x7f, 0x7f, 0xff},
}

// bars draws Figure 1's style for the plan: per arm, one bar per column
// (a thick vertical segment, placed in data units so the marks over it
// line up).
func bars(path string, p *Plan, records map[string]*cell.Record) error {
	arms, cols := planArms(p), columns(p)
	pl := plot.New()
	pl.Title.Text = p.Table + ": p99 (bars), p50 (ticks), reference p99 (rings)" + indicative(p)
	pl.Y.Label.Text = "seconds after the publish"
	pl.NominalX(arms...)
	nc := float64(max(len(cols), 1))
	barW := vg.Points(36 / nc)
	top := 3.5
	for ci, col := range cols {
		dx := (float64(ci) - (nc-1)/2) * 0.8 / nc
		var ticks, refs, tops plotter.XYs
		var yerr plotter.YErrors
		var legend *plotter.Line
		for ai, arm := range arms {
			x := float64(ai) + dx
			for _, c := range p.Cells {
				if c.Column != col || c.Arm.Published != arm {
					continue
				}
				p50, p99 := cellStats(c, records)
				if len(p99) > 0 {
					v := median(p99)
					sd := 0.0
					if len(p99) > 1 {
						sd = stat.StdDev(p99, nil)
					}
					bar, err := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: v}})
					if err != nil {
						return err
					}
					bar.Color, bar.Width = palette[ci%len(palette)], barW
					pl.Add(bar)
					legend = bar
					tops = append(tops, plotter.XY{X: x, Y: v})
					yerr = append(yerr, struct{ Low, High float64 }{sd, sd})
					top = max(top, v+sd)
				}
				if len(p50) > 0 {
					ticks = append(ticks, plotter.XY{X: x, Y: median(p50)})
				}
				for _, r := range c.Rows {
					if r.Statistic == "p99" && r.Measure == "value" {
						v := r.Value / recordScale(r.Statistic, r.Unit) // in seconds
						refs = append(refs, plotter.XY{X: x, Y: v})
						top = max(top, v)
					}
				}
			}
		}
		if legend != nil {
			pl.Legend.Add(col.String(), legend)
		}
		if len(tops) > 0 {
			eb, err := plotter.NewYErrorBars(struct {
				plotter.XYer
				plotter.YErrorer
			}{tops, yerr})
			if err != nil {
				return err
			}
			pl.Add(eb)
		}
		if len(ticks) > 0 {
			s, err := plotter.NewScatter(ticks)
			if err != nil {
				return err
			}
			s.GlyphStyle.Shape = draw.BoxGlyph{}
			s.GlyphStyle.Radius = vg.Points(2.5)
			s.GlyphStyle.Color = color.Black
			pl.Add(s)
		}
		if len(refs) > 0 {
			s, err := plotter.NewScatter(refs)
			if err != nil {
				return err
			}
			s.GlyphStyle.Shape = draw.RingGlyph{}
			s.GlyphStyle.Radius = vg.Points(4)
			s.GlyphStyle.Color = color.Black
			pl.Add(s)
		}
	}
	budget := plotter.NewFunction(func(float64) float64 { return 3 })
	budget.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	budget.Color = color.RGBA{0xa0, 0, 0, 0xff}
	pl.Add(budget)
	pl.Legend.Add("3 s budget", budget)
	pl.Y.Min, pl.Y.Max = 0, top*1.1
	pl.X.Min, pl.X.Max = -0.6, float64(len(arms))-0.4
	// The legend goes in a column of its own: inside the data area it
	// covered the tallest bars and rings.
	return figure.Save(pl, vg.Length(max(7.5, 1.4*float64(len(arms))+1.5))*vg.Inch, 4.5*vg.Inch, path)
}

// indicative is what a figure's title adds for a shrunk plan.
func indicative(p *Plan) string {
	if p.Shrunk {
		return " (shrunk cells: indicative)"
	}
	return ""
}

// cdf draws each arm's completion-time CDF in one column.
func cdf(path string, p *Plan, col Column, records map[string]*cell.Record) error {
	pl := plot.New()
	pl.Title.Text = p.Table + ": " + col.String() + indicative(p)
	pl.X.Label.Text = "completion time after the publish (s)"
	pl.Y.Label.Text = "fraction of receivers"
	pl.Y.Min, pl.Y.Max = 0, 1
	for ai, arm := range planArms(p) {
		xy := cdfPoints(p, col, arm, records)
		if len(xy) == 0 {
			continue
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return err
		}
		l.Color = palette[ai%len(palette)]
		l.Width = vg.Points(1.5)
		pl.Add(l)
		pl.Legend.Add(arm, l)
	}
	return figure.Save(pl, 7*vg.Inch, 4*vg.Inch, path)
}

// cdfPoints pools one arm's receivers over the column's seeds: a point per
// completion at the fraction of all receivers complete by then, so the
// curve tops out below 1 when some are censored.
func cdfPoints(p *Plan, col Column, arm string, records map[string]*cell.Record) plotter.XYs {
	var times []float64
	total := 0
	for _, c := range p.Cells {
		if c.Column != col || c.Arm.Published != arm {
			continue
		}
		for _, cfg := range c.Configs {
			if r := records[cfg.Key()]; r != nil {
				if done, n, ok := r.CompletionTimes(); ok {
					times = append(times, done...)
					total += n
				}
			}
		}
	}
	slices.Sort(times)
	xy := make(plotter.XYs, len(times))
	for i, t := range times {
		xy[i] = plotter.XY{X: t, Y: float64(i+1) / float64(total)}
	}
	return xy
}
