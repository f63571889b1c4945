package cell

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCPUKnob: the cpu knob is off in every profile (and then absent from
// the profile's JSON, so no cell key changes); a value is stored as
// des.CPUSpec writes it, off clears it, and a bad value names the limit.
func TestCPUKnob(t *testing.T) {
	for _, name := range []string{"harness", "shadow", "kernel"} {
		p, err := LookupProfile(name)
		require.NoError(t, err)
		require.Empty(t, p.CPU, name)
		require.Equal(t, "off", p.Knobs()["cpu"], name)
	}
	p, err := LookupProfile("kernel")
	require.NoError(t, err)
	require.NoError(t, p.Set("cpu", "tx:0.1ns/B+2us, rx:3us+0.2ns/B"))
	require.Equal(t, "rx:3us+0.2ns/B,tx:2us+0.1ns/B", p.CPU)
	require.Equal(t, p.CPU, p.Knobs()["cpu"])
	require.NoError(t, p.Set("cpu", "off"))
	require.Empty(t, p.CPU)
	require.EqualError(t, p.Set("cpu", "rx:20ms"), `knob cpu "rx:20ms": rx: per packet "20ms": want 0 to 10ms`)
}
