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

// TestSizeUnitsFlags: every spelling of unitcases.Sizes reads as its value
// or is refused with its error by a byte-count flag (run's --payload, and
// bulk's --bytes and --rmem-max, a usage error naming the flag), as
// des.ParseBytes reads it.
func TestSizeUnitsFlags(t *testing.T) {
	for _, c := range unitcases.Sizes {
		got, err := flagSize("payload", c.In, 1, maxPayload)
		if c.Err != "" {
			require.EqualError(t, err, "--payload: "+c.Err, c.In)
			checkUsageErrors(t, []usageCase{
				{[]string{"run", "--payload", c.In, "--profile", "harness"}, "uplink: --payload: " + c.Err + "\n"},
				{[]string{"bulk", "--bytes", c.In}, "uplink: --bytes: " + c.Err + "\n"},
				{[]string{"bulk", "--rmem-max", c.In}, "uplink: --rmem-max: " + c.Err + "\n"},
			})
			continue
		}
		require.NoError(t, err, c.In)
		require.Equal(t, c.Bytes, got, c.In)
		if c.Bytes <= 16<<20 { // a larger payload's cell needs more memory than a test machine has
			cells := planCells(t, "run", "--payload", c.In, "--profile", "harness", "--nodes", "12", "--degree", "4")
			require.Equal(t, c.Bytes, int64(cells[0].Payload), c.In)
		}
	}
}
