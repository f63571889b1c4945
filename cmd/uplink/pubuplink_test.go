package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/protocols/cell"
)

// TestTablePublisherUplink: the table's pub uplink column names the
// publisher's uplink queue: a mixed assignment's publisher spec and what
// chose it, the one spec of an unmixed cell, and ? for a mix recorded
// without its assignment.
func TestTablePublisherUplink(t *testing.T) {
	p50 := 1.5
	rec := func(seed uint64, up map[string]int, a *cell.QueueAssignment) *cell.Record {
		r := &cell.Record{Arm: "wholend", Profile: "harness", Seed: seed, P50S: &p50, UpQdiscs: up}
		if a != nil {
			r.QueueAssignments = map[string]cell.QueueAssignment{"uplink": *a}
		}
		return r
	}
	mix := map[string]int{"pie": 18, "fq_codel": 42}
	recs := []*cell.Record{
		rec(1, mix, &cell.QueueAssignment{Nodes: map[string]string{"pie": "0-17", "fq_codel": "18-59"}, Publisher: "pie", PublisherBy: cell.PinIn}),
		rec(2, mix, &cell.QueueAssignment{Nodes: map[string]string{"pie": "1-18", "fq_codel": "0,19-59"}, Publisher: "fq_codel", PublisherBy: cell.PinSeed}),
		rec(3, map[string]int{"fq_codel:profile=simnet": 60}, nil),
		rec(4, mix, nil),
	}
	var out bytes.Buffer
	printTable(&out, recs)
	lines := strings.Split(out.String(), "\n")
	require.Regexp(t, `RSS MiB +pub uplink *$`, lines[0])
	for i, want := range []string{"pie (+pub)", "fq_codel (seed)", "fq_codel:profile=simnet", "?"} {
		require.True(t, strings.HasSuffix(strings.TrimRight(lines[i+1], " "), "  "+want), "row %d: %q", i+1, lines[i+1])
	}
}
