// Package figure saves gonum plots with their legend beside the data, in
// a column of its own on the right, so no entry covers a curve or a bar
// and none runs off the canvas.
package figure

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/uplinksim/uplink/internal/outfile"
)

// Save writes pl to path (through package outfile), in the format of its extension (png, svg, pdf,
// …), w × h in all: the plot on the left, its legend (when it has
// entries) on the right, top-aligned with the data, in a column as wide as
// its longest entry. pl's legend is left empty afterwards.
func Save(pl *plot.Plot, w, h vg.Length, path string) error {
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	cw, err := draw.NewFormattedCanvas(w, h, format)
	if err != nil {
		return fmt.Errorf("figure %s: %w", path, err)
	}
	dc := draw.New(cw)
	leg := pl.Legend
	pl.Legend = plot.NewLegend()
	legW := leg.Rectangle(dc).Size().X
	if legW > 0 {
		legW += vg.Points(18)
	}
	pl.Draw(draw.Crop(dc, 0, -legW, 0, 0))
	if legW > 0 {
		var title vg.Length
		if pl.Title.Text != "" {
			title = pl.Title.TextStyle.Rectangle(pl.Title.Text).Size().Y + pl.Title.Padding
		}
		leg.Top, leg.Left = true, true
		leg.XOffs, leg.YOffs = 0, 0
		leg.Draw(draw.Crop(dc, w-legW+vg.Points(6), -vg.Points(4), 0, -title))
	}
	return outfile.WriteFile(path, outfile.Replace, func(w io.Writer) error {
		_, err := cw.WriteTo(w)
		return err
	})
}
