package main

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/internal/unitcases"
)

// TestRateUnitsFlags: every spelling of unitcases.Rates reads as its value
// or is refused with its error by a rate flag (bulk's --rate and
// --host-rate, a usage error naming the flag) and by run's --knob
// host-rate, as des.ParseRate reads it.
func TestRateUnitsFlags(t *testing.T) {
	for _, c := range unitcases.Rates {
		got, err := flagRate("rate", c.In)
		if c.Err != "" {
			require.EqualError(t, err, "--rate: "+c.Err, c.In)
			checkUsageErrors(t, []usageCase{
				{[]string{"bulk", "--rate", c.In}, "uplink: --rate: " + c.Err + "\n"},
				{[]string{"bulk", "--host-rate", c.In}, "uplink: --host-rate: " + c.Err + "\n"},
			})
			_, err := planCommand([]string{"run", "--knob", "host-rate=" + c.In, "--profile", "harness"}, io.Discard, io.Discard)
			require.ErrorContains(t, err, "knob host-rate: "+c.Err, c.In)
			continue
		}
		require.NoError(t, err, c.In)
		require.Equal(t, c.Bps, got, c.In)
		cells := planCells(t, "run", "--knob", "host-rate="+c.In, "--profile", "harness")
		require.Equal(t, c.Bps, cells[0].Profile.HostRate, c.In)
	}
}
