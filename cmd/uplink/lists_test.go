package main

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uplinksim/uplink/protocols/arms"
	"github.com/uplinksim/uplink/protocols/cell"
	"github.com/uplinksim/uplink/queues"
	"github.com/uplinksim/uplink/sweep"
	"github.com/uplinksim/uplink/validate"
)

// runOK runs a command line that must succeed and returns its stdout.
func runOK(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	require.Equal(t, 0, run(args, &out, &errb), errb.String())
	return out.String()
}

// TestListKnobs: run --list-knobs prints a header of the profiles, run's
// defaults first, and for every knob a row of its value in each profile
// followed by its help.
func TestListKnobs(t *testing.T) {
	out := runOK(t, "run", "--list-knobs")
	lines := strings.Split(out, "\n")
	var header []string
	rows := map[string][]string{}
	for i, l := range lines {
		f := strings.Fields(l)
		if len(f) > 0 && f[0] == "knob" {
			header = f
		}
		for _, d := range cell.KnobDocs() {
			if len(f) > 0 && f[0] == d.Name && !strings.HasPrefix(l, " ") {
				rows[d.Name] = f
				require.Less(t, i+1, len(lines))
				require.True(t, strings.HasPrefix(lines[i+1], "    "), "%s: no help line beneath", d.Name)
				require.Contains(t, strings.Join(strings.Fields(out), " "), strings.Join(strings.Fields(d.Help), " "))
			}
		}
	}
	require.Equal(t, []string{"knob", "harness", "shadow", "kernel"}, header)
	require.Len(t, rows, len(cell.KnobDocs()))
	require.Equal(t, []string{"uplink-qdisc", "fq_codel:profile=simnet", "shadow-fifo", "pfifo:limit=1000"}, rows["uplink-qdisc"])
	require.Equal(t, []string{"downlink-qdisc", "fq_codel:profile=simnet", "codel:profile=shadow", "pfifo:limit=1000"}, rows["downlink-qdisc"])
	require.Equal(t, []string{"settle", "2.5", "10", "20"}, rows["settle"])
	require.Equal(t, []string{"host-qdisc", "(empty)", "(empty)", "(empty)"}, rows["host-qdisc"])
	for name, f := range rows {
		require.Len(t, f, 4, name)
	}
}

// TestListQdiscs: run --list-qdiscs and bulk --list-qdiscs print every
// discipline of queues.SpecNames with its source and each key with its
// default.
func TestListQdiscs(t *testing.T) {
	out := runOK(t, "run", "--list-qdiscs")
	require.Equal(t, out, runOK(t, "bulk", "--list-qdiscs"))
	flat := strings.Join(strings.Fields(out), " ")
	for _, d := range queues.Disciplines() {
		require.Contains(t, out, "\n"+d.Name+": "+d.About+"\n")
		require.Contains(t, flat, "follows "+strings.Join(strings.Fields(d.Source), " "))
		for _, k := range d.Keys {
			require.Regexp(t, fmt.Sprintf(`(?m)^  %s +%s +\S`, k.Key, strings.ReplaceAll(k.Default, ".", `\.`)), out, d.Name)
		}
	}
	for _, name := range queues.SpecNames() {
		require.Contains(t, out, "\n"+name+": ")
	}
	require.Regexp(t, `(?m)^  flows +1024 +buckets`, out)
	require.Regexp(t, `(?m)^  target +15ms +duration`, out)
}

// TestListTables: validate --list-tables prints every table with its
// title, rows, cells, runs, seeds and nodes, and the estimated
// core-hours of its runs; --nodes and --seeds apply to the estimate.
func TestListTables(t *testing.T) {
	out := runOK(t, "validate", "--list-tables")
	for _, name := range validate.Tables() {
		title, err := validate.TableTitle(name)
		require.NoError(t, err)
		require.Regexp(t, `(?m)^`+name+` .*`+regexp.QuoteMeta(title)+`$`, out)
	}
	// appendix_d_home: 70 rows, all replayed, 28 cells, 210 distinct runs
	// at 500 nodes over seeds 7 to 16.
	plan, err := validate.PlanTable("appendix_d_home", validate.PlanOptions{Base: cell.Config{Gossip: cell.StudyGossip(), PerNode: true, Encoding: arms.EncodingSnappy}})
	require.NoError(t, err)
	seen := map[string]bool{}
	var wall time.Duration
	for _, c := range plan.Cells {
		for _, cfg := range c.Configs {
			if !seen[cfg.Key()] {
				seen[cfg.Key()] = true
				wall += sweep.EstimateCost(cfg).Wall
			}
		}
	}
	require.Len(t, seen, 210)
	require.Regexp(t, fmt.Sprintf(`(?m)^appendix_d_home +70 +70 +28 +210 +7-16 +500 +%.2f +Appendix D, the home scenario`, wall.Hours()), out)
	require.Greater(t, wall.Hours(), 1.0)

	small := runOK(t, "validate", "--list-tables", "--nodes", "20", "--seeds", "7,9")
	require.Regexp(t, `(?m)^appendix_d_home +70 +70 +28 +\d+ +7,9 +20 +\d+\.\d\d +Appendix D`, small)
	checkUsageErrors(t, []usageCase{
		{[]string{"validate", "--list-tables", "--nodes", "1"}, "--nodes 1"},
	})
}
