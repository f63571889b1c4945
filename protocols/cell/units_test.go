package cell

import (
	"strconv"
	"strings"
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

// TestSizeUnitsKnob: every spelling of unitcases.Sizes reads as its value
// or is refused with its error in the tcp-rmem knob's triple, as
// des.ParseBytes reads it; the knob stores plain bytes. (A spelling with
// a space inside is left out: spaces separate the triple's counts.)
func TestSizeUnitsKnob(t *testing.T) {
	for _, c := range unitcases.Sizes {
		if strings.Contains(strings.TrimSpace(c.In), " ") {
			continue
		}
		p, err := LookupProfile("kernel")
		require.NoError(t, err)
		err = p.Set("tcp-rmem", "1,1,"+c.In)
		if c.Err != "" {
			require.ErrorContains(t, err, "knob tcp-rmem: ", c.In)
			require.ErrorContains(t, err, "max: "+c.Err, c.In)
			continue
		}
		require.NoError(t, err, c.In)
		require.Equal(t, "1,1,"+strconv.FormatInt(c.Bytes, 10), p.TCPRmem, c.In)
	}
}
