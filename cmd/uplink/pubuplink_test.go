package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/protocols/cell"
	"github.com/uplinksim/uplink/validate"
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

// TestPrintStudyPublisherUplink: validate --study's table is followed by
// the publisher's uplink queue of each row whose uplinks are a mix.
func TestPrintStudyPublisherUplink(t *testing.T) {
	s := validate.Study{Name: "pie", Question: "PIE?", Arms: []string{"wholend"}, N: 20, Payload: 1 << 16, Seeds: []uint64{1, 2},
		Variants: []validate.Variant{
			{Label: "fq_codel", Profile: "harness"},
			{Label: "pie in", Profile: "harness", Knobs: map[string]string{"uplink-qdisc": "pie@30%+pub"}},
		}}
	cells, err := s.Cells(0, nil, cell.Config{})
	require.NoError(t, err)
	records := map[string]*cell.Record{}
	for _, c := range cells {
		for _, cfg := range c.Configs {
			p := 1.0
			r := &cell.Record{Key: cfg.Key(), P50S: &p, P99S: &p, UpQdiscs: map[string]int{"fq_codel:profile=simnet": 20}}
			if c.Variant == 1 {
				r.UpQdiscs = map[string]int{"pie": 6, "fq_codel:profile=simnet": 14}
				r.QueueAssignments = map[string]cell.QueueAssignment{"uplink": {Publisher: "pie", PublisherBy: cell.PinIn}}
			}
			records[cfg.Key()] = r
		}
	}
	var out bytes.Buffer
	printStudy(&out, s, cells, records)
	require.Contains(t, out.String(), "\npublisher's uplink, pie in, wholend: pie (+pub) on 2\n")
	require.NotContains(t, out.String(), "publisher's uplink, fq_codel")
}
