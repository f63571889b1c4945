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

// TestMixPinsPublisher: spec@share+pub puts the publisher (node 0) among
// the entry's nodes and spec@share-pub keeps it out, at every seed, with
// every share's node count kept and only the publisher and one other node
// moved from where the seed put them; the unpinned mix keeps its
// assignment.
func TestMixPinsPublisher(t *testing.T) {
	const n = 50
	for seed := uint64(1); seed <= 40; seed++ {
		free, by, err := assignQdiscs("pie@30%;fq_codel", n, seed, false)
		require.NoError(t, err)
		require.Equal(t, PinSeed, by)
		for _, c := range []struct{ assign, pin, pub string }{
			{"pie@30%+pub;fq_codel", PinIn, "pie"},
			{"pie@30%-pub;fq_codel", PinOut, "fq_codel"},
			{"pie@0.3 +pub; fq_codel", PinIn, "pie"},
			{"pfifo@20%;pie@30%-pub;fq_codel", PinOut, ""},
		} {
			specs, by, err := assignQdiscs(c.assign, n, seed, false)
			require.NoError(t, err, c.assign)
			require.Equal(t, c.pin, by, c.assign)
			if c.pub != "" {
				require.Equal(t, c.pub, specs[0], "%s seed %d", c.assign, seed)
			} else {
				require.NotEqual(t, "pie", specs[0], "%s seed %d", c.assign, seed)
			}
			counts := countSpecsOf(specs)
			require.Equal(t, 15, counts["pie"], c.assign)
			if c.pub == "" {
				continue
			}
			require.Equal(t, 35, counts["fq_codel"], c.assign)
			moved := 0
			for i := range specs {
				if specs[i] != free[i] {
					moved++
				}
			}
			if free[0] == c.pub {
				require.Zero(t, moved, "%s seed %d: the seed had put the publisher there", c.assign, seed)
			} else {
				require.Equal(t, 2, moved, "%s seed %d: the publisher and one node trade places", c.assign, seed)
			}
		}
	}
	// The same entry with its share taking every node or none: -pub
	// before the entry's part works too.
	specs, by, err := assignQdiscs("fq_codel@70%;pie@30%-pub", 10, 1, false)
	require.NoError(t, err)
	require.Equal(t, PinOut, by)
	require.Equal(t, "fq_codel", specs[0])
}

// TestMixUnpinnedUnchanged: a mix without a pin assigns the nodes it
// assigned before pins existed, and its cell's key is the same.
func TestMixUnpinnedUnchanged(t *testing.T) {
	specs, err := AssignQdiscs("pie@30%;fq_codel", 20, 7)
	require.NoError(t, err)
	f, p := "fq_codel", "pie"
	require.Equal(t, []string{f, f, f, f, f, f, f, f, p, f, f, f, f, p, f, p, f, p, p, p}, specs)

	h, err := LookupProfile("harness")
	require.NoError(t, err)
	require.NoError(t, h.Set("uplink-qdisc", "pie@30%"))
	c := Config{Profile: h, Seed: 3, N: 50, Degree: 8, Payload: 128 << 10}
	require.Equal(t, "d1f5f5f7eb61b00037920693", c.Key())
	pinned := c
	pinned.Profile, err = LookupProfile("harness")
	require.NoError(t, err)
	own := pinned.Profile.UpQdisc
	require.NoError(t, pinned.Profile.Set("uplink-qdisc", "pie@30%+pub"))
	require.Equal(t, "pie@30%+pub;"+own, pinned.Profile.UpQdisc)
	require.NotEqual(t, c.Key(), pinned.Key(), "a pinned mix is a cell of its own")
}

// TestMixPinRefused: a pin that cannot hold, two pins, and a misspelt pin
// are refused, naming the mix and the entry.
func TestMixPinRefused(t *testing.T) {
	for _, c := range []struct{ assign, want string }{
		{"pie@30%+pub;pfifo@10%-pub;fq_codel", `queue mix "pie@30%+pub;pfifo@10%-pub;fq_codel": entries 1 and 2 both pin the publisher`},
		{"pie@0%+pub;fq_codel", `entry 1, pie@0%+pub, of 10 nodes: its share is no node`},
		{"pie@100%-pub", `entry 1, pie@100%-pub, of 10 nodes: its share is every node`},
		{"pie@30%+pb;fq_codel", `queue mix "pie@30%+pb;fq_codel": entry 1: share: fraction "30%+pb"`},
		{"pie@30%pub;fq_codel", `a pin of the publisher follows the share: pie@30%+pub or pie@30%-pub`},
	} {
		_, err := AssignQdiscs(c.assign, 10, 1)
		require.ErrorContains(t, err, c.want, c.assign)
	}
}

// TestQdiscFilePublisherBy: resolving a direction says how the
// publisher's spec was chosen: by the one spec, the seed, a pin (also in a
// file's open-mix default), or the file's node list.
func TestQdiscFilePublisherBy(t *testing.T) {
	for _, c := range []struct {
		m       *QdiscMap
		profile string
		by, pub string
	}{
		{nil, "fq_codel", PinEvery, "fq_codel"},
		{nil, "pie@30%;fq_codel", PinSeed, ""},
		{nil, "pie@30%+pub;fq_codel", PinIn, "pie"},
		{&QdiscMap{Default: "pie@40%+pub"}, "fq_codel", PinIn, "pie"},
		{&QdiscMap{Default: "pie@40%-pub"}, "fq_codel", PinOut, "fq_codel"},
		{&QdiscMap{Default: "pfifo", Nodes: map[string]string{"3": "pie"}}, "fq_codel", PinEvery, "pfifo"},
		{&QdiscMap{Nodes: map[string]string{"0": "pie"}}, "fq_codel", PinFile, "pie"},
	} {
		specs, by, err := c.m.resolveBy(c.profile, 20, 5)
		require.NoError(t, err)
		require.Equal(t, c.by, by, "%+v over %s", c.m, c.profile)
		if c.pub != "" {
			require.Equal(t, c.pub, specs[0], "%+v over %s", c.m, c.profile)
		}
	}
}
