package cell

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// countSpecsOf counts the nodes of each spec.
func countSpecsOf(specs []string) map[string]int {
	n := map[string]int{}
	for _, s := range specs {
		n[s]++
	}
	return n
}

// TestCompleteMix: an open mix takes the rest of the nodes from the
// assignment it is set over; a closed mix, a single spec and a malformed
// mix stay as they are; an open mix over a mix is refused.
func TestCompleteMix(t *testing.T) {
	for _, c := range []struct{ assign, base, want string }{
		{"pie@30%", "fq_codel:profile=simnet", "pie@30%;fq_codel:profile=simnet"},
		{" pie@30%;pfifo@0.2 ", "shadow-fifo", "pie@30%;pfifo@0.2;shadow-fifo"},
		{"pie@30%;fq_codel", "shadow-fifo", "pie@30%;fq_codel"},
		{"pie@50%;pfifo@50%", "shadow-fifo", "pie@50%;pfifo@50%"},
		{"pie@100%", "shadow-fifo", "pie@100%"},
		{"pie", "shadow-fifo", "pie"},
		{"pie@x", "shadow-fifo", "pie@x"},
		{"pie@30%;", "shadow-fifo", "pie@30%;"},
		{"pie@30%", "", "pie@30%"},
	} {
		got, err := CompleteMix(c.assign, c.base)
		require.NoError(t, err, "%q over %q", c.assign, c.base)
		require.Equal(t, c.want, got, "%q over %q", c.assign, c.base)
	}
	_, err := CompleteMix("pfifo@20%", "pie@30%;fq_codel")
	require.ErrorContains(t, err, `leaves the rest of the nodes to the assignment it replaces, "pie@30%;fq_codel", itself a mix`)
}

// TestMixKnobKeepsProfile: uplink-qdisc=pie@30% over each profile stores
// the full assignment (30 % PIE, the rest the profile's own spec), which
// puts 30 of 100 nodes behind PIE and the other 70 behind the profile's
// exact spec; a mix with its own last entry means that entry.
func TestMixKnobKeepsProfile(t *testing.T) {
	for _, name := range ProfileNames() {
		p, err := LookupProfile(name)
		require.NoError(t, err)
		own := p.UpQdisc
		require.NoError(t, p.Set("uplink-qdisc", "pie@30%"))
		require.Equal(t, "pie@30%;"+own, p.Knobs()["uplink-qdisc"], name)
		specs, err := AssignQdiscs(p.UpQdisc, 100, 7)
		require.NoError(t, err)
		require.Equal(t, map[string]int{"pie": 30, own: 70}, countSpecsOf(specs), name)

		ownDown := p.DownQdisc
		require.NoError(t, p.SetKnobs([]string{"downlink-qdisc=pfifo:limit=100@0.25"}))
		require.Equal(t, "pfifo:limit=100@0.25;"+ownDown, p.DownQdisc, name)
	}
	h, err := LookupProfile("harness")
	require.NoError(t, err)
	require.NoError(t, h.Set("uplink-qdisc", "pie@30%;fq_codel"))
	require.Equal(t, "pie@30%;fq_codel", h.UpQdisc)
	specs, err := AssignQdiscs(h.UpQdisc, 100, 7)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"pie": 30, "fq_codel": 70}, countSpecsOf(specs))

	// Set over a value already changed, the rest is that value.
	k, err := LookupProfile("kernel")
	require.NoError(t, err)
	require.NoError(t, k.SetKnobs([]string{"uplink-qdisc=fq_codel", "uplink-qdisc=pie@30%"}))
	require.Equal(t, "pie@30%;fq_codel", k.UpQdisc)
	// An open mix over a mix is refused, naming the knob.
	err = k.Set("uplink-qdisc", "pfifo@10%")
	require.ErrorContains(t, err, "knob uplink-qdisc: queue mix \"pfifo@10%\"")
	require.Equal(t, "pie@30%;fq_codel", k.UpQdisc, "a refused value leaves the knob as it was")
}

// TestQdiscFileOpenMix: a per-node file's default that is an open mix
// takes its share of the nodes and leaves the others on the profile's
// assignment, the same nodes as the knob's completed mix; exceptions go on
// top.
func TestQdiscFileOpenMix(t *testing.T) {
	const simnet = "fq_codel:profile=simnet"
	m := &QdiscMap{Default: "pie@30%", Nodes: map[string]string{"0": "pfifo"}}
	got, err := m.resolve(simnet, 100, 7)
	require.NoError(t, err)
	want, err := AssignQdiscs("pie@30%;"+simnet, 100, 7)
	require.NoError(t, err)
	want[0] = "pfifo"
	require.Equal(t, want, got)

	// Over a profile's mix, the default's share comes first in the same
	// seeded order of nodes.
	got, err = (&QdiscMap{Default: "pfifo@20%"}).resolve("pie@30%;"+simnet, 100, 7)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"pfifo": 20, "pie": 10, simnet: 70}, countSpecsOf(got))

	// A closed default replaces the profile's assignment.
	got, err = (&QdiscMap{Default: "pie@30%;fifo"}).resolve(simnet, 100, 7)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"pie": 30, "fifo": 70}, countSpecsOf(got))

	_, err = (&QdiscMap{Default: "pie@x"}).resolve(simnet, 10, 7)
	require.ErrorContains(t, err, "share")
}

// TestEmptyQdiscKnob: an empty queue assignment, or one of blanks, is
// refused by the knob, which keeps the profile's.
func TestEmptyQdiscKnob(t *testing.T) {
	for _, name := range []string{"uplink-qdisc", "downlink-qdisc"} {
		for _, v := range []string{"", " ", "\t"} {
			p, err := LookupProfile("shadow")
			require.NoError(t, err)
			before := p.Knobs()[name]
			require.EqualError(t, p.Set(name, v), "knob "+name+": empty queue assignment: give a queues spec such as fq_codel, or a mix such as pie@30%;fq_codel (uplink run --list-qdiscs)")
			require.ErrorContains(t, p.SetKnobs([]string{name + "=" + v}), "empty queue assignment")
			require.Equal(t, before, p.Knobs()[name])
		}
	}
	// host-qdisc's empty value is its "none".
	p, err := LookupProfile("harness")
	require.NoError(t, err)
	require.NoError(t, p.Set("host-qdisc", ""))
}

// TestReadNodeQdiscsNothing: a queue file that assigns nothing (null,
// {}, null directions, a direction with neither a default nor nodes) is
// refused; one that assigns a default or a node is read.
func TestReadNodeQdiscsNothing(t *testing.T) {
	for _, s := range []string{"null", " null\n", "{}", `{"uplink": null}`, `{"uplink": null, "downlink": null}`} {
		nq, err := ReadNodeQdiscs(strings.NewReader(s))
		require.Nil(t, nq, s)
		require.EqualError(t, err, `queue assignment file: assigns no queue (null, {} or null directions): want an object such as {"uplink": {"default": "fq_codel", "nodes": {"0": "pie"}}}`, s)
	}
	for s, dir := range map[string]string{
		`{"uplink": {}}`: "uplink",
		`{"uplink": {"default": "pie"}, "downlink": {"default": "", "nodes": {}}}`: "downlink",
	} {
		_, err := ReadNodeQdiscs(strings.NewReader(s))
		require.EqualError(t, err, `queue assignment file: `+dir+` assigns no queue: give its "default", its "nodes", or leave `+dir+` out`, s)
	}
	for _, s := range []string{`{"uplink": {"default": "pie"}}`, `{"downlink": {"nodes": {"0": "pie"}}}`} {
		nq, err := ReadNodeQdiscs(strings.NewReader(s))
		require.NoError(t, err, s)
		require.NotNil(t, nq)
	}
}
