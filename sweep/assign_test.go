package sweep

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/protocols/cell"
)

// assignLine returns goodLine with a mixed uplink assignment: nodes 0, 2 and
// 3 behind pie (the publisher among them, pinned), 1 and 4 behind
// fq_codel, and each spec's queue counts adding up to the uplinks'.
func assignLine(t *testing.T) string {
	return edit(t, goodLine,
		"uplink_qdiscs", `{"pie":3,"fq_codel":2}`,
		"downlink_qdiscs", `{"fq_codel":5}`,
		"publisher_node", `0`,
		"queues", `{"uplink":{"enqueued":30,"dequeued":28,"drops":{"aqm":2,"overlimit":0},"ce_marks":1},`+
			`"downlink":{"enqueued":9,"dequeued":9,"drops":{"aqm":0,"overlimit":0}}}`,
		"queue_assignments", `{"uplink":{"nodes":{"pie":"0,2-3","fq_codel":"1,4"},"publisher":"pie","publisher_by":"+pub",`+
			`"classes":{"pie":{"enqueued":20,"dequeued":18,"drops":{"aqm":2,"overlimit":0},"ce_marks":1},`+
			`"fq_codel":{"enqueued":10,"dequeued":10,"drops":{"aqm":0,"overlimit":0}}}}}`,
	)
}

// TestCheckQueueAssignments: a record's queue assignment must cover
// every node once with the nodes its spec counts give, name the
// publisher's spec, say what chose it, and have classes whose counts add
// up to the direction's; each break is refused, naming the field.
func TestCheckQueueAssignments(t *testing.T) {
	good := assignLine(t)
	_, err := checkLine([]byte(good))
	require.NoError(t, err)
	const ua = `queue_assignments["uplink"]`
	for _, c := range []struct {
		sets []string
		want string
	}{
		{[]string{"publisher_node", ""}, "publisher_node: absent"},
		{[]string{"queue_assignments", ""}, "publisher_node: 0 without queue_assignments"},
		{[]string{"publisher_node", "5"}, "publisher_node: 5 is more than the last node index (4)"},
		{[]string{"queue_assignments", `{"sideways":{"nodes":{"a":"0","b":"1-4"},"publisher":"a","publisher_by":"seed"}}`},
			`queue_assignments["sideways"]: not a direction`},
		{[]string{"queue_assignments", `{"uplink":{"nodes":{"pie":"0-4"},"publisher":"pie","publisher_by":"seed"}}`},
			ua + `.nodes: 1 specs`},
		{[]string{"queue_assignments", `{"uplink":{"nodes":{"pie":"0,2-5","fq_codel":"1,4"},"publisher":"pie","publisher_by":"seed"}}`},
			ua + `.nodes["pie"]: "2-5": node 5 is beyond the 5 nodes (0 to 4)`},
		{[]string{"queue_assignments", `{"uplink":{"nodes":{"pie":"0,2-3","fq_codel":"1,3"},"publisher":"pie","publisher_by":"seed"}}`},
			ua + `.nodes["pie"]: node 3 is also behind "fq_codel"`},
		{[]string{"queue_assignments", `{"uplink":{"nodes":{"pie":"0,2","fq_codel":"1,4"},"publisher":"pie","publisher_by":"seed"}}`},
			ua + `.nodes["pie"]: 2 nodes, where uplink_qdiscs gives "pie" 3`},
		{[]string{"uplink_qdiscs", `{"pie":2,"fq_codel":2}`, "queue_assignments", `{"uplink":{"nodes":{"pie":"0,2","fq_codel":"1,4"},"publisher":"pie","publisher_by":"seed"}}`},
			ua + `.nodes: node 3 has no spec`},
		{[]string{"queue_assignments", `{"uplink":{"nodes":{"pie":"0,2-3","fq_codel":"1,4"},"publisher":"fq_codel","publisher_by":"seed"}}`},
			ua + `.publisher: "fq_codel", where node 0 (publisher_node) is behind "pie"`},
		{[]string{"queue_assignments", `{"uplink":{"nodes":{"pie":"0,2-3","fq_codel":"1,4"},"publisher":"pie","publisher_by":"luck"}}`},
			ua + `.publisher_by: "luck": want one of seed, +pub, -pub, file, every node`},
		{[]string{"queue_assignments", `{"uplink":{"nodes":{"pie":"0,2-3","fq_codel":"1,4"},"publisher":"pie","publisher_by":"seed",` +
			`"classes":{"pie":{"enqueued":20,"dequeued":18,"drops":{"aqm":1}},"fq_codel":{"enqueued":10,"dequeued":10}}}}`},
			ua + `.classes: ce_marks adds up to 0, where queues["uplink"].ce_marks is 1`},
		{[]string{"queue_assignments", `{"uplink":{"nodes":{"pie":"0,2-3","fq_codel":"1,4"},"publisher":"pie","publisher_by":"seed",` +
			`"classes":{"pie":{"enqueued":20,"dequeued":18,"drops":{"aqm":1},"ce_marks":1},"fq_codel":{"enqueued":10,"dequeued":10}}}}`},
			ua + `.classes: drops aqm add up to 1, where queues["uplink"].drops.aqm is 2`},
		{[]string{"queue_assignments", `{"uplink":{"nodes":{"pie":"0,2-3","fq_codel":"1,4"},"publisher":"pie","publisher_by":"seed",` +
			`"classes":{"pie":{"enqueued":30,"dequeued":28,"drops":{"aqm":2},"ce_marks":1}}}}`},
			ua + `.classes: 1 classes for 2 specs`},
		{[]string{"queue_assignments", `{"uplink":{"nodes":{"pie":"0,2-3","fq_codel":"1,4"},"publisher":"pie","publisher_by":"seed",` +
			`"classes":{"pfifo":{"enqueued":30,"dequeued":28,"drops":{"aqm":2},"ce_marks":1}}}}`},
			ua + `.classes["pfifo"]: not a spec of its nodes`},
	} {
		_, err := checkLine([]byte(edit(t, good, c.sets...)))
		require.ErrorContains(t, err, c.want, c.sets)
	}
}

// TestCheckRunQueueAssignment: the record of a cell run with a pinned
// PIE mix passes the check.
func TestCheckRunQueueAssignment(t *testing.T) {
	p, err := cell.LookupProfile("harness")
	require.NoError(t, err)
	require.NoError(t, p.Set("uplink-qdisc", "pie@30%+pub"))
	c := cell.Config{Profile: p, Seed: 3, N: 12, Degree: 6, Payload: 16 << 10, Gossip: cell.StudyGossip(), Version: "test"}
	c.Gossip.D, c.Gossip.Dlo, c.Gossip.Dhi = 4, 3, 6
	synctest.Test(t, func(t *testing.T) {
		c.Wait = synctest.Wait
		rec, err := cell.Run(c)
		require.NoError(t, err)
		require.Equal(t, "pie", rec.QueueAssignments["uplink"].Publisher)
		require.NoError(t, CheckRecord(rec))
	})
}
