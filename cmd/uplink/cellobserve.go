package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/uplinksim/uplink/internal/figure"
	"github.com/uplinksim/uplink/internal/outfile"
	"github.com/uplinksim/uplink/protocols/cell"
)

// cellOutputs are a cell process's trace, capture and figure files (uplink
// cell --trace-dir, --pcap-dir, --plot-dir): written under temporary names
// and renamed into place once the cell has its record.
type cellOutputs struct {
	mu      sync.Mutex // the partitions of a split cell open files at once
	files   observeFiles
	dirs    []string // the cell's folders, removed on failure when left empty
	plotDir string
	strip   bool // the record's per-node rows were asked for the figure only
}

// newCellOutputs checks the folders against c's trace and captures,
// creates them, and points c's Outputs at files in them.
func newCellOutputs(c *cell.Config, traceDir, pcapDir, plotDir string) (*cellOutputs, error) {
	o := &cellOutputs{plotDir: plotDir}
	switch {
	case traceDir != "" && c.Trace == nil:
		return nil, usageError{errors.New("cell: --trace-dir: the configuration has no Trace")}
	case traceDir == "" && c.Trace != nil:
		return nil, usageError{errors.New("cell: the configuration's Trace needs --trace-dir")}
	case pcapDir != "" && len(c.Captures) == 0:
		return nil, usageError{errors.New("cell: --pcap-dir: the configuration has no Captures")}
	case pcapDir == "" && len(c.Captures) > 0:
		return nil, usageError{errors.New("cell: the configuration's Captures need --pcap-dir")}
	}
	for _, d := range []string{traceDir, pcapDir, plotDir} {
		if d == "" || slices.Contains(o.dirs, d) {
			continue
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("cell: %s: %w", d, outfile.Cause(err))
		}
		o.dirs = append(o.dirs, d)
	}
	open := func(flag, dir, name string) func(int) (io.Writer, error) {
		return func(node int) (io.Writer, error) {
			o.mu.Lock()
			defer o.mu.Unlock()
			return o.files.create(flag, filepath.Join(dir, fmt.Sprintf(name, node)))
		}
	}
	if traceDir != "" {
		c.Outputs.Trace = open("trace", traceDir, "node-%d.csv")
		c.Outputs.Flows = open("trace", traceDir, "node-%d-flows.csv")
	}
	if pcapDir != "" {
		c.Outputs.Capture = open("pcap", pcapDir, "node-%d.pcapng")
	}
	if plotDir != "" && !c.PerNode {
		// The figure reads every receiver's completion time.
		c.PerNode, o.strip = true, true
	}
	return o, nil
}

// commit writes the figure of rec and renames every file into place; the
// record then loses the per-node rows only the figure asked for.
func (o *cellOutputs) commit(rec *cell.Record) error {
	if o.plotDir != "" {
		if err := writeCellPlot(o.plotDir, rec); err != nil {
			return fmt.Errorf("cell: --plot: %w", err)
		}
	}
	if o.strip {
		rec.Nodes = nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.files.commit(); err != nil {
		return fmt.Errorf("cell: %w", err)
	}
	o.dirs = nil
	return nil
}

// discard removes the files not committed, and the cell's folders when
// that leaves them empty.
func (o *cellOutputs) discard() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.files.discard()
	for _, d := range o.dirs {
		os.Remove(d) // fails, as it should, on a folder that is not empty
	}
}

// writeCellPlot writes the completion CDF of rec into dir as
// completion-cdf.svg and .png: the fraction of receivers complete at each
// time after the publish (those that never completed keep it below 1),
// titled with the cell's arm, profile and seed. The files are written into a temporary folder in dir and
// renamed into place once both are written.
func writeCellPlot(dir string, rec *cell.Record) error {
	var times []float64
	receivers := 0
	for _, r := range rec.Nodes {
		if r.Index == 0 {
			continue
		}
		receivers++
		if r.TimeS != nil {
			times = append(times, *r.TimeS)
		}
	}
	if receivers == 0 {
		return errors.New("the record has no receivers' rows")
	}
	slices.Sort(times)
	xy := plotter.XYs{{X: 0, Y: 0}}
	for i, t := range times {
		xy = append(xy, plotter.XY{X: t, Y: float64(i) / float64(receivers)}, plotter.XY{X: t, Y: float64(i+1) / float64(receivers)})
	}
	pl := plot.New()
	pl.Title.Text = fmt.Sprintf("completion CDF: arm %s, profile %s, seed %d", rec.ArmName, tableProfile(rec), rec.Seed)
	pl.X.Label.Text = "time after the publish (s)"
	pl.Y.Label.Text = "fraction of receivers complete"
	pl.Y.Min, pl.Y.Max = 0, 1
	pl.X.Min = 0
	l, err := plotter.NewLine(xy)
	if err != nil {
		return err
	}
	l.Color = plotPalette[0]
	l.Width = vg.Points(1.5)
	pl.Add(l)
	pl.Legend.Add(fmt.Sprintf("%d of %d receivers complete", len(times), receivers), l)
	tmp, err := os.MkdirTemp(dir, ".plot-")
	if err != nil {
		return fmt.Errorf("cannot write in %s: %w", dir, outfile.Cause(err))
	}
	defer os.RemoveAll(tmp)
	for _, ext := range []string{".svg", ".png"} {
		// figure.Save empties a plot's legend: save a copy per format.
		cp := *pl
		if err := figure.Save(&cp, 7*vg.Inch, 4*vg.Inch, filepath.Join(tmp, "completion-cdf"+ext)); err != nil {
			return err
		}
	}
	for _, ext := range []string{".svg", ".png"} {
		if err := outfile.Install(filepath.Join(tmp, "completion-cdf"+ext), filepath.Join(dir, "completion-cdf"+ext), outfile.Replace); err != nil {
			return err
		}
	}
	return nil
}
