package figure

import (
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// TestSave: a plot with a legend is written as PNG of the size asked for
// and as SVG holding the legend's entry; an unknown format is an error.
func TestSave(t *testing.T) {
	dir := t.TempDir()
	mk := func() *plot.Plot {
		pl := plot.New()
		pl.Title.Text = "t"
		l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 1}})
		require.NoError(t, err)
		pl.Add(l)
		pl.Legend.Add("a rather long legend entry", l)
		return pl
	}
	require.NoError(t, Save(mk(), 6*vg.Inch, 4*vg.Inch, filepath.Join(dir, "f.png")))
	f, err := os.Open(filepath.Join(dir, "f.png"))
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	require.Equal(t, 6*96, img.Bounds().Dx())
	require.Equal(t, 4*96, img.Bounds().Dy())
	require.NoError(t, Save(mk(), 6*vg.Inch, 4*vg.Inch, filepath.Join(dir, "f.svg")))
	svg, err := os.ReadFile(filepath.Join(dir, "f.svg"))
	require.NoError(t, err)
	require.True(t, strings.Contains(string(svg), "a rather long legend entry"))
	require.Error(t, Save(mk(), vg.Inch, vg.Inch, filepath.Join(dir, "f.xyz")))
}
