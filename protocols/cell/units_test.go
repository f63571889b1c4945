package cell

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/internal/unitcases"
)

// TestRateUnitsKnob: every spelling of unitcases.Rates reads as its value
// or is refused with its error by the host-rate knob (Set and SetKnobs),
// as des.ParseRate reads it; a rate read is stored in plain bit/s, so a
// cell's knobs, and its key, are those of the same rate in any spelling.
func TestRateUnitsKnob(t *testing.T) {
	for _, c := range unitcases.Rates {
		for _, set := range []func(*Profile) error{
			func(p *Profile) error { return p.Set("host-rate", c.In) },
			func(p *Profile) error { return p.SetKnobs([]string{"host-rate=" + c.In}) },
		} {
			p, err := LookupProfile("harness")
			require.NoError(t, err)
			err = set(&p)
			if c.Err != "" {
				require.ErrorContains(t, err, "knob host-rate: "+c.Err, c.In)
				continue
			}
			require.NoError(t, err, c.In)
			require.Equal(t, c.Bps, p.HostRate, c.In)
			require.Equal(t, strconv.FormatInt(c.Bps, 10), p.Knobs()["host-rate"], c.In)
		}
	}
}
