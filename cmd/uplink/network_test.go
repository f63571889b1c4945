package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNetworkFlag: --network takes uplink or simnet; a simnet cell runs
// and its table row names the network beside the profile; what simnet
// cannot model is refused before any cell starts.
func TestNetworkFlag(t *testing.T) {
	checkUsageErrors(t, []usageCase{
		{[]string{"run", "--network", "ns3"}, `--network "ns3": want uplink or simnet`},
		{[]string{"validate", "--table", "appendix_d_home", "--network", "shadow"}, `--network "shadow": want uplink or simnet`},
		{[]string{"run", "--network", "simnet", "--transport", "tcp"}, "backend simnet carries datagrams only"},
	})
	cells := planCells(t, "validate", "--table", "appendix_d_home", "--network", "simnet")
	require.NotEmpty(t, cells)
	for _, c := range cells {
		require.Equal(t, "simnet", c.Backend)
	}
	if testing.Short() {
		t.Skip("runs a cell")
	}
	var out, errb bytes.Buffer
	code := run([]string{"run", "--network", "simnet", "--nodes", "6", "--degree", "2", "--payload", "64KiB", "--profile", "harness", "--seeds", "7", "--quiet"}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	require.Contains(t, out.String(), "harness/simnet")
}
