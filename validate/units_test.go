package validate

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/internal/unitcases"
	"github.com/uplinksim/uplink/protocols/cell"
)

// TestRateUnitsStudy: every spelling of unitcases.Rates in a study file's
// host-rate knob reads as its value in the variant's cells or is refused
// by ReadStudy with its error, as des.ParseRate reads it.
func TestRateUnitsStudy(t *testing.T) {
	for _, c := range unitcases.Rates {
		file := `{"name": "x", "arms": ["wholend"], "nodes": 12, "seeds": [7], "variants": [{"label": "a", "profile": "harness"},
			{"label": "b", "profile": "shadow", "knobs": {"host-rate": ` + strconv.Quote(c.In) + `}}]}`
		s, err := ReadStudy(strings.NewReader(file))
		if c.Err != "" {
			require.ErrorContains(t, err, `variant "b": knobs: on profile shadow: knob host-rate: `+c.Err, c.In)
			continue
		}
		require.NoError(t, err, c.In)
		cells, err := s.Cells(0, nil, cell.Config{})
		require.NoError(t, err, c.In)
		require.Len(t, cells, 2)
		require.Equal(t, c.Bps, cells[1].Configs[0].Profile.HostRate, c.In)
	}
}

// TestSizeUnitsStudy: every spelling of unitcases.Sizes as a study file's
// payload reads as its value or is refused by ReadStudy with its error,
// as des.ParseBytes reads it.
func TestSizeUnitsStudy(t *testing.T) {
	for _, c := range unitcases.Sizes {
		file := `{"name": "x", "arms": ["wholend"], "nodes": 12, "seeds": [7], "payload": ` + strconv.Quote(c.In) + `,
			"variants": [{"label": "a", "profile": "harness"}, {"label": "b", "profile": "shadow"}]}`
		s, err := ReadStudy(strings.NewReader(file))
		if c.Err != "" {
			require.ErrorContains(t, err, c.Err, c.In)
			continue
		}
		require.NoError(t, err, c.In)
		require.Equal(t, c.Bytes, int64(s.Payload), c.In)
	}
}
