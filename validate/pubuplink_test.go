package validate

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/protocols/cell"
)

// TestStudyReportPubUplink: a 30 % PIE question at five seeds, with the
// publisher pinned behind PIE in one variant and left to the seed in
// another, gets a verdict with its interval and test, and a table of the
// publisher's uplink queue on each seed: for the pinned variant PIE on
// every seed, for the seeded one the specs the records name, counted; the
// baseline, whose uplinks are all one spec, has no row, and a study
// without a mix has no table.
func TestStudyReportPubUplink(t *testing.T) {
	s := Study{Name: "pie", Question: "Does 30 % PIE move the p50?", Arms: []string{"wholend"}, N: 20, Payload: 1 << 16,
		Seeds: []uint64{1, 2, 3, 4, 5},
		Variants: []Variant{
			{Label: "fq_codel", Profile: "harness"},
			{Label: "30 % PIE, publisher in", Profile: "harness", Knobs: map[string]string{"uplink-qdisc": "pie@30%+pub"}},
			{Label: "30 % PIE, seeded", Profile: "harness", Knobs: map[string]string{"uplink-qdisc": "pie@30%"}},
		},
		Claims: []Claim{{Text: "PIE with the publisher behind it slows the p50.", Variant: "30 % PIE, publisher in", Direction: +1}},
	}
	cells, err := s.Cells(0, nil, cell.Config{})
	require.NoError(t, err)
	const fq = "fq_codel:profile=simnet"
	records := map[string]*cell.Record{}
	for _, c := range cells {
		for i, cfg := range c.Configs {
			p50 := 1.0 + 0.01*float64(i)
			if c.Variant == 1 {
				p50 *= 1.3 + 0.02*float64(i)
			}
			p99 := 2 * p50
			r := &cell.Record{Key: cfg.Key(), P50S: &p50, P99S: &p99, UpQdiscs: map[string]int{fq: 20}}
			if c.Variant > 0 {
				r.UpQdiscs = map[string]int{"pie": 6, fq: 14}
				specs, err := cell.AssignQdiscs(cfg.Profile.UpQdisc, 20, cfg.Seed)
				require.NoError(t, err)
				by := cell.PinSeed
				if c.Variant == 1 {
					by = cell.PinIn
				}
				r.QueueAssignments = map[string]cell.QueueAssignment{"uplink": {Publisher: specs[0], PublisherBy: by}}
			}
			records[cfg.Key()] = r
		}
	}
	md := studyMarkdown(s, cells, records)
	require.Contains(t, md, "| 30 % PIE, publisher in | wholend | 5 | pie (+pub) on 5 |")
	seeded := map[string]int{}
	for _, seed := range s.Seeds {
		specs, err := cell.AssignQdiscs("pie@30%;"+fq, 20, seed)
		require.NoError(t, err)
		seeded[specs[0]+" (seed)"]++
	}
	require.Contains(t, md, "| 30 % PIE, seeded | wholend | 5 | "+FormatPubUplink(seeded)+" |")
	require.NotContains(t, md, "| fq_codel | wholend | 5 | "+fq)
	require.Contains(t, md, `PIE with the publisher behind it slows the p50. **supported**: p50 of "30 % PIE, publisher in" against "fq_codel": `+
		`wholend +34% [+30%, +38%] (93.8 % interval) over 5 seeds (5 up, 0 down), noise test with 0 reruns`)

	require.Equal(t, "pie (seed) on 3, fq_codel (seed) on 2", FormatPubUplink(map[string]int{"fq_codel (seed)": 2, "pie (seed)": 3}))
	require.Equal(t, "a on 1, b on 1", FormatPubUplink(map[string]int{"b": 1, "a": 1}))

	s.Variants, s.Claims = s.Variants[:1], nil
	cells, err = s.Cells(0, nil, cell.Config{})
	require.NoError(t, err)
	require.NotContains(t, studyMarkdown(s, cells, records), "publisher's uplink")
}
