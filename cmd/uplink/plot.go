package main

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/uplinksim/uplink/internal/figure"
	"github.com/uplinksim/uplink/internal/outfile"
	"github.com/uplinksim/uplink/protocols/bulk"
)

// plotPalette is the figures' line colours.
var plotPalette = []color.Color{
	color.RGBA{0x1f, 0x77, 0xb4, 0xff}, color.RGBA{0xff, 0x7f, 0x0e, 0xff}, color.RGBA{0x2c, 0xa0, 0x2c, 0xff},
	color.RGBA{0xd6, 0x27, 0x28, 0xff}, color.RGBA{0x94, 0x67, 0xbd, 0xff},
}

// writeBulkPlots writes bulk's figures into dir, each as SVG and PNG:
// queue-delay-cdf (every queue's delay CDF), backlog (each queue's backlog
// in packets at every sample), throughput (the sender's uplink in Mbit/s
// per interval, with the link rate as reference) and, for TCP, cwnd (each
// flow's window). The files are written into a temporary folder in dir
// and put in place (outfile.Install) once all are written.
func writeBulkPlots(dir string, res bulk.Result, obs *observeFiles) error {
	tmp, err := os.MkdirTemp(dir, ".plot-")
	if err != nil {
		return fmt.Errorf("cannot write in %s: %w", dir, outfile.Cause(err))
	}
	defer os.RemoveAll(tmp)
	figs := map[string]*plot.Plot{}
	var names []string
	add := func(name string, pl *plot.Plot) {
		figs[name] = pl
		names = append(names, name)
	}
	add("queue-delay-cdf", delayCDF(res))
	q, err := readTrace(obs.queues.Bytes())
	if err != nil {
		return err
	}
	add("backlog", series(q, "queue", "backlog_packets", "queue backlog at each sample", "packets", 1))
	nodes, err := readTrace(obs.nodes.Bytes())
	if err != nil {
		return err
	}
	tp := throughput(nodes, res.Config.Trace.Every.Seconds())
	add("throughput", tp)
	if obs.flow.Len() > 0 {
		fl, err := readTrace(obs.flow.Bytes())
		if err != nil {
			return err
		}
		add("cwnd", series(fl, "flow", "cwnd_segments", "TCP congestion window", "segments", 1))
	}
	if res.Config.Rate > 0 {
		ref := plotter.NewFunction(func(float64) float64 { return float64(res.Config.Rate) / 1e6 })
		ref.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		ref.Color = color.RGBA{0xa0, 0, 0, 0xff}
		tp.Add(ref)
		tp.Legend.Add("link rate (reference)", ref)
		tp.Y.Max = max(tp.Y.Max, float64(res.Config.Rate)/1e6*1.1)
	}
	var files []string
	for _, name := range names {
		for _, ext := range []string{".svg", ".png"} {
			// figure.Save empties a plot's legend: save a copy per format.
			pl := *figs[name]
			if err := figure.Save(&pl, 7*vg.Inch, 4*vg.Inch, filepath.Join(tmp, name+ext)); err != nil {
				return err
			}
			files = append(files, name+ext)
		}
	}
	for _, f := range files {
		if err := outfile.Install(filepath.Join(tmp, f), filepath.Join(dir, f), outfile.Replace); err != nil {
			return err
		}
	}
	return nil
}

// trace is a trace CSV as read back: its columns and rows.
type trace struct {
	cols map[string]int
	rows [][]string
}

func readTrace(b []byte) (trace, error) {
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil || len(rows) == 0 {
		return trace{}, fmt.Errorf("reading the trace back: %v", err)
	}
	t := trace{cols: map[string]int{}, rows: rows[1:]}
	for i, c := range rows[0] {
		t.cols[c] = i
	}
	return t, nil
}

func (t trace) float(r []string, col string) float64 {
	v, _ := strconv.ParseFloat(r[t.cols[col]], 64)
	return v
}

// series plots column col against time, one line per value of key,
// scaled by scale.
func series(t trace, key, col, title, unit string, scale float64) *plot.Plot {
	pl := plot.New()
	pl.Title.Text = title
	pl.X.Label.Text = "virtual time (s)"
	pl.Y.Label.Text = unit
	pl.Y.Min = 0
	lines := map[string]plotter.XYs{}
	var order []string
	for _, r := range t.rows {
		k := r[t.cols[key]]
		if _, ok := lines[k]; !ok {
			order = append(order, k)
		}
		lines[k] = append(lines[k], plotter.XY{X: t.float(r, "time_s"), Y: t.float(r, col) * scale})
	}
	for i, k := range order {
		l, err := plotter.NewLine(lines[k])
		if err != nil {
			continue
		}
		l.Color = plotPalette[i%len(plotPalette)]
		l.Width = vg.Points(1.2)
		pl.Add(l)
		name := k
		if key == "flow" {
			name = "flow " + k
		}
		pl.Legend.Add(name, l)
	}
	return pl
}

// throughput plots each node's sent bytes per interval as Mbit/s.
func throughput(t trace, every float64) *plot.Plot {
	pl := plot.New()
	pl.Title.Text = "bytes sent per interval, each node"
	pl.X.Label.Text = "virtual time (s)"
	pl.Y.Label.Text = "Mbit/s"
	pl.Y.Min = 0
	lines := map[string]plotter.XYs{}
	var order []string
	prev := map[string]float64{}
	for _, r := range t.rows {
		k := r[t.cols["node"]]
		if _, ok := lines[k]; !ok {
			order = append(order, k)
		}
		ts := t.float(r, "time_s")
		dt := ts - prev[k]
		prev[k] = ts
		if dt <= 0 {
			dt = every
		}
		lines[k] = append(lines[k], plotter.XY{X: ts, Y: t.float(r, "sent_bytes") * 8 / dt / 1e6})
	}
	for i, k := range order {
		l, err := plotter.NewLine(lines[k])
		if err != nil {
			continue
		}
		l.Color = plotPalette[i%len(plotPalette)]
		l.Width = vg.Points(1.2)
		pl.Add(l)
		pl.Legend.Add("node "+k, l)
	}
	return pl
}

// delayCDF plots each queue's delay distribution from its histogram: the
// fraction of dequeued packets delayed at most each bucket's upper bound.
func delayCDF(res bulk.Result) *plot.Plot {
	pl := plot.New()
	pl.Title.Text = "queue delay CDF"
	pl.X.Label.Text = "queue delay (ms)"
	pl.Y.Label.Text = "fraction of packets"
	pl.Y.Min, pl.Y.Max = 0, 1
	for i, q := range res.Queues {
		h := &q.Stats.Sojourn
		if h.Count() == 0 {
			continue
		}
		xy := plotter.XYs{{X: 0, Y: 0}}
		var n uint64
		for _, b := range h.Buckets() {
			n += b.Count
			xy = append(xy, plotter.XY{X: ms(min(b.Upper, h.Max())), Y: float64(n) / float64(h.Count())})
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			continue
		}
		l.Color = plotPalette[i%len(plotPalette)]
		l.Width = vg.Points(1.5)
		pl.Add(l)
		pl.Legend.Add(q.Name+" ("+q.Spec+")", l)
	}
	return pl
}
