package cell

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/queues"
)

// TestNodeRanges: indices are written as ranges and read back; what is
// not ascending, overlaps, or names a node beyond n is refused.
func TestNodeRanges(t *testing.T) {
	for _, c := range []struct {
		idx  []int
		want string
	}{
		{[]int{0, 1, 2, 3, 7, 12, 13, 14}, "0-3,7,12-14"},
		{[]int{5}, "5"},
		{[]int{1, 3, 5}, "1,3,5"},
		{[]int{0, 1}, "0-1"},
	} {
		s := FormatNodeRanges(c.idx)
		require.Equal(t, c.want, s)
		back, err := ParseNodeRanges(s, 15)
		require.NoError(t, err)
		require.Equal(t, c.idx, back)
	}
	for _, c := range []struct{ s, want string }{
		{"", "no nodes"},
		{"3,1", `"1": not after the item before it`},
		{"0-4,4", `"4": not after the item before it`},
		{"0-15", "node 15 is beyond the 15 nodes (0 to 14)"},
		{"4-2", "a range's last index must be above its first"},
		{"2-2", "a range's last index must be above its first"},
		{"-1", `"" is not a node index`},
		{"01", `"01" is not a node index`},
		{"1,,2", `"" is not a node index`},
		{"+3", `"+3" is not a node index`},
	} {
		_, err := ParseNodeRanges(c.s, 15)
		require.ErrorContains(t, err, c.want, c.s)
	}
}

func ExampleFormatNodeRanges() {
	fmt.Println(FormatNodeRanges([]int{0, 1, 2, 3, 7, 12, 13, 14}))
	idx, err := ParseNodeRanges("0-2,9", 10)
	fmt.Println(idx, err)
	// Output:
	// 0-3,7,12-14
	// [0 1 2 9] <nil>
}

// TestQueueAssignmentClasses: a direction of two specs lists each spec's
// nodes and the publisher's, and its classes' counts add up to the
// direction's; a direction of one spec has no assignment.
func TestQueueAssignmentClasses(t *testing.T) {
	specs := []string{"pie", "fq_codel", "pie", "fq_codel", "fq_codel", "pie"}
	stats := make([]*queues.Stats, len(specs))
	for i := range stats {
		s := &queues.Stats{Enqueued: uint64(100 + i), Dequeued: uint64(90 + i), CEMarks: uint64(i), MaxLen: i}
		s.Drops[queues.DropOverlimit] = uint64(i + 1)
		s.Drops[queues.DropAQM] = uint64(2 * i)
		stats[i] = s
	}
	var r Record
	r.setAssignments(specs, make([]string, len(specs)), PinIn, PinEvery, stats, stats)
	require.Equal(t, 0, *r.PublisherNode)
	require.Len(t, r.QueueAssignments, 1, "the downlink has one spec")
	a := r.QueueAssignments["uplink"]
	require.Equal(t, map[string]string{"pie": "0,2,5", "fq_codel": "1,3-4"}, a.Nodes)
	require.Equal(t, "pie", a.Publisher)
	require.Equal(t, PinIn, a.PublisherBy)
	total := summarize(stats)
	pie, fq := a.Classes["pie"], a.Classes["fq_codel"]
	require.Equal(t, uint64(100+102+105), pie.Enqueued)
	require.Equal(t, total.Enqueued, pie.Enqueued+fq.Enqueued)
	require.Equal(t, total.Dequeued, pie.Dequeued+fq.Dequeued)
	require.Equal(t, total.CEMarks, pie.CEMarks+fq.CEMarks)
	require.Equal(t, uint64(1+3+6), pie.Drops["overlimit"])
	require.Equal(t, uint64(0+4+10), pie.Drops["aqm"])
	for reason, v := range total.Drops {
		require.Equal(t, v, pie.Drops[reason]+fq.Drops[reason], reason)
	}
	require.Equal(t, 5, pie.MaxBacklog)
	require.Equal(t, 4, fq.MaxBacklog)

	r.setAssignments(make([]string, 3), make([]string, 3), PinEvery, PinEvery, nil, nil)
	require.Nil(t, r.QueueAssignments)
	require.Nil(t, r.PublisherNode)
}

// TestRecordQueueAssignment: a cell whose uplinks are a pinned mix
// records which nodes got which spec, as the resolution assigns them,
// the publisher's spec and what chose it, and each spec's queue counts,
// which add up to the uplinks' (drops included); its downlinks, one spec,
// have no assignment.
func TestRecordQueueAssignment(t *testing.T) {
	for _, c := range []struct{ assign, pub, by string }{
		{"pfifo:limit=4@50%+pub", "pfifo:limit=4", PinIn},
		{"pfifo:limit=4@50%-pub", "", PinOut},
		{"pfifo:limit=4@50%", "", PinSeed},
	} {
		p, err := LookupProfile("harness")
		require.NoError(t, err)
		rest := p.UpQdisc
		require.NoError(t, p.Set("uplink-qdisc", c.assign))
		cfg := Config{Profile: p}
		rec := runSmall(t, &cfg)
		specs, err := AssignQdiscs(p.UpQdisc, rec.N, rec.Seed)
		require.NoError(t, err)
		require.NotNil(t, rec.PublisherNode, "%v %v", rec.UpQdiscs, rec.Backend)
		require.Equal(t, 0, *rec.PublisherNode)
		require.NotContains(t, rec.QueueAssignments, "downlink")
		a, ok := rec.QueueAssignments["uplink"]
		require.True(t, ok, c.assign)
		for spec, ranges := range a.Nodes {
			idx, err := ParseNodeRanges(ranges, rec.N)
			require.NoError(t, err)
			require.Len(t, idx, rec.UpQdiscs[spec], spec)
			for _, i := range idx {
				require.Equal(t, specs[i], spec, "node %d", i)
			}
		}
		require.Len(t, a.Nodes, 2)
		require.Equal(t, specs[0], a.Publisher)
		switch c.by {
		case PinIn:
			require.Equal(t, c.pub, a.Publisher)
		case PinOut:
			require.Equal(t, rest, a.Publisher)
		}
		require.Equal(t, c.by, a.PublisherBy)
		total := rec.Queues["uplink"]
		var enq, deq uint64
		drops := map[string]uint64{}
		for _, q := range a.Classes {
			enq += q.Enqueued
			deq += q.Dequeued
			for r, v := range q.Drops {
				drops[r] += v
			}
		}
		require.Equal(t, total.Enqueued, enq, c.assign)
		require.Equal(t, total.Dequeued, deq, c.assign)
		require.Equal(t, total.Drops, drops, c.assign)
		require.NotZero(t, a.Classes["pfifo:limit=4"].Drops["overlimit"], "%s: a 4-packet fifo drops", c.assign)
	}
}

// FuzzNodeRanges: any text either is refused or reads as ascending
// indices below n, which FormatNodeRanges writes back to text that reads
// the same; nothing panics.
func FuzzNodeRanges(f *testing.F) {
	for _, s := range []string{"0-3,7,12-40", "5", "", "3,1", "0-", "-", "1,,2", "99999999999999999999"} {
		f.Add(s, 50)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		n = n%1000 + 1
		if n < 1 {
			n = -n + 1
		}
		idx, err := ParseNodeRanges(s, n)
		if err != nil {
			return
		}
		for k, i := range idx {
			require.True(t, i >= 0 && i < n, "%q: %d of %d", s, i, n)
			if k > 0 {
				require.Greater(t, i, idx[k-1], s)
			}
		}
		back, err := ParseNodeRanges(FormatNodeRanges(idx), n)
		require.NoError(t, err)
		require.Equal(t, idx, back)
	})
}

// FuzzAssignQdiscs: any mix either is refused or gives every node a
// spec; a pinned one puts the publisher where its pin says.
func FuzzAssignQdiscs(f *testing.F) {
	for _, s := range []string{"pie@30%+pub;fq_codel", "pie@30%-pub;fq_codel", "pie@30%", "pie@0%+pub;x", "a@1e-3-pub;b", "a@50%+pub;b@50%-pub", ""} {
		f.Add(s, 20, uint64(1))
	}
	f.Fuzz(func(t *testing.T, assign string, n int, seed uint64) {
		n = n%500 + 1
		if n < 1 {
			n = -n + 1
		}
		specs, by, err := assignQdiscs(assign, n, seed, false)
		if err != nil {
			return
		}
		require.Len(t, specs, n)
		if !isMix(assign) {
			return // one spec for every node, as given (the knob refuses an empty one)
		}
		for _, s := range specs {
			require.NotEmpty(t, s, assign)
		}
		if by == PinIn || by == PinOut {
			for _, e := range strings.Split(assign, ";") {
				me, err := parseEntry(assign, 1, e)
				require.NoError(t, err)
				switch me.pin {
				case PinIn:
					require.Equal(t, me.spec, specs[0], assign)
				case PinOut:
					n := 0
					for _, s := range specs {
						if s == me.spec {
							n++
						}
					}
					// The publisher is out of the entry's nodes; another
					// entry of the same spec may still hold it.
					if n == int(math.Round(me.share*float64(len(specs)))) {
						require.NotEqual(t, me.spec, specs[0], assign)
					}
				}
			}
		}
	})
}
