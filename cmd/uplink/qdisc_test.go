package main

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uplinksim/uplink/protocols/cell"
)

// planCells returns the cells uplink run (or validate) would run with
// args, without running them.
func planCells(t *testing.T, command string, args ...string) []cell.Config {
	t.Helper()
	sp, err := planCommand(append([]string{command}, args...), io.Discard, io.Discard)
	require.NoError(t, err)
	require.NotEmpty(t, sp.cells)
	return sp.cells
}

// TestQdiscMixFlag: --uplink-qdisc pie@30% leaves each profile's other
// nodes on that profile's own discipline, and the cell's knob (what its
// record lists) is the full assignment; 30 of 100 nodes are then behind
// PIE and 70 behind the profile's spec. A mix with its own last entry
// keeps it, and --knob and validate's --knob complete a mix the same way.
func TestQdiscMixFlag(t *testing.T) {
	cells := planCells(t, "run", "--uplink-qdisc", "pie@30%", "--profile", "harness,shadow,kernel", "--nodes", "100")
	want := map[string]string{
		"harness": "pie@30%;fq_codel:profile=simnet",
		"shadow":  "pie@30%;shadow-fifo",
		"kernel":  "pie@30%;pfifo:limit=1000",
	}
	own := map[string]string{"harness": "fq_codel:profile=simnet", "shadow": "shadow-fifo", "kernel": "pfifo:limit=1000"}
	require.Len(t, cells, 3)
	for _, c := range cells {
		require.Equal(t, want[c.Profile.Name], c.Profile.Knobs()["uplink-qdisc"])
		specs, err := cell.AssignQdiscs(c.Profile.UpQdisc, 100, c.Seed)
		require.NoError(t, err)
		n := map[string]int{}
		for _, s := range specs {
			n[s]++
		}
		require.Equal(t, map[string]int{"pie": 30, own[c.Profile.Name]: 70}, n, c.Profile.Name)
		require.NoError(t, c.Check())
	}

	cells = planCells(t, "run", "--uplink-qdisc", "pie@30%;fq_codel", "--profile", "harness")
	require.Equal(t, "pie@30%;fq_codel", cells[0].Profile.UpQdisc)

	cells = planCells(t, "run", "--knob", "downlink-qdisc=pfifo@10%", "--profile", "shadow")
	require.Equal(t, "pfifo@10%;codel:profile=shadow", cells[0].Profile.DownQdisc)

	cells = planCells(t, "validate", "--study", "pie", "--knob", "downlink-qdisc=pie@30%", "--seeds", "7", "--nodes", "20")
	for _, c := range cells {
		require.Equal(t, "pie@30%;fq_codel:profile=simnet", c.Profile.DownQdisc)
	}
}
