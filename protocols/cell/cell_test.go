package cell

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
	"github.com/uplinksim/uplink/protocols/arms"
	"github.com/uplinksim/uplink/protocols/phase"
	"github.com/uplinksim/uplink/transports/tcp"
)

func TestQuantileRule(t *testing.T) {
	inf := math.Inf(1)
	// Nine receivers: p50 is index ceil(4.5)-1 = 4, p90 index ceil(8.1)-1 = 8.
	times := []float64{9, 1, 8, 2, 7, 3, 6, 4, 5}
	if v, ok := Quantile(times, 0.5); !ok || v != 5 {
		t.Fatalf("p50 = %v, %v; want 5", v, ok)
	}
	if v, ok := Quantile(times, 0.9); !ok || v != 9 {
		t.Fatalf("p90 = %v, %v; want 9", v, ok)
	}
	// Two censored receivers sort last: p50 still 5, p90 censored.
	times = []float64{inf, 1, 8, 2, 7, 3, inf, 4, 5}
	if v, ok := Quantile(times, 0.5); !ok || v != 5 {
		t.Fatalf("censored p50 = %v, %v; want 5", v, ok)
	}
	if _, ok := Quantile(times, 0.9); ok {
		t.Fatal("p90 falls on a censored receiver and must be censored")
	}
}

func TestProfilesAndKnobs(t *testing.T) {
	for _, name := range ProfileNames() {
		p, err := LookupProfile(name)
		if err != nil || p.Name != name {
			t.Fatalf("profile %s: %v", name, err)
		}
	}
	p, _ := LookupProfile("shadow")
	if err := p.Set("uplink-qdisc", "fq_codel"); err != nil || p.Knobs()["uplink-qdisc"] != "fq_codel" {
		t.Fatalf("override: %v, %v", err, p.Knobs())
	}
	if err := p.Set("shaper", "token"); err == nil {
		t.Fatal("an invalid shaper should be rejected")
	}
	if err := p.Set("frobs", "1"); err == nil {
		t.Fatal("an unknown knob should be rejected")
	}
	if _, err := LookupProfile("ns3"); err == nil {
		t.Fatal("an unknown profile should be rejected")
	}
}

// everyProfile checks that every built-in profile sets knob to want.
func everyProfile(t *testing.T, knob, want string) {
	t.Helper()
	for _, name := range ProfileNames() {
		p, _ := LookupProfile(name)
		if got := p.Knobs()[knob]; got != want {
			t.Fatalf("%s: default %s %q; want %q", name, knob, got, want)
		}
	}
}

// TestRouterStartKnob: every profile starts its routers before the dial,
// as the study's harness builder and Shadow node do, and so does a
// hand-built Profile without the field; after-dial is stored as itself;
// and the two orders are different cells.
func TestRouterStartKnob(t *testing.T) {
	everyProfile(t, "router-start", RouterBeforeDial)
	require.Equal(t, RouterBeforeDial, (&Profile{}).Knobs()["router-start"])
	p, _ := LookupProfile("harness")
	base := Config{N: 10, Degree: 4, Payload: 1, Profile: p}
	before := base.Key()
	if err := p.Set("router-start", RouterAfterDial); err != nil || p.Knobs()["router-start"] != RouterAfterDial {
		t.Fatalf("set after-dial: %v, %v", err, p.Knobs()["router-start"])
	}
	require.Equal(t, RouterAfterDial, p.RouterStart)
	after := base
	after.Profile = p
	if after.Key() == before {
		t.Fatal("after-dial and before-dial must be different cells")
	}
	unset := base
	unset.Profile.RouterStart = "" // a profile without the field
	require.Equal(t, before, unset.Key(), "a profile without router-start is a before-dial cell")
	if err := p.Set("router-start", "at-dawn"); err == nil || !strings.Contains(err.Error(), "before-dial") {
		t.Fatalf("an unknown router-start: %v; want an error listing the values", err)
	}
}

// TestPhaseRulesKnob: every profile runs the study's fork rules, and so
// does a hand-built Profile without the field; prose is stored as
// itself; the two are different cells for a phase arm, and the same cell
// for an arm without the phase router; the record names the rules in its
// policy.
func TestPhaseRulesKnob(t *testing.T) {
	everyProfile(t, "phase-rules", PhaseRulesFork)
	require.Equal(t, PhaseRulesFork, (&Profile{}).Knobs()["phase-rules"])
	fork, _ := LookupProfile("harness")
	prose := fork
	if err := prose.Set("phase-rules", PhaseRulesProse); err != nil || prose.PhaseRules != PhaseRulesProse {
		t.Fatalf("set prose: %v, stored %q", err, prose.PhaseRules)
	}
	for _, c := range []struct {
		arm    string
		differ bool
	}{{"atuned_32k", true}, {"c_32k", true}, {"wholend", false}, {"bfixed_32k", false}} {
		a := Config{Arm: c.arm, N: 10, Degree: 4, Payload: 1 << 20, Profile: fork}
		b := a
		b.Profile = prose
		if (a.Key() != b.Key()) != c.differ {
			t.Errorf("%s: fork and prose keys differ %v; want %v", c.arm, a.Key() != b.Key(), c.differ)
		}
	}
	// The phase shift under the fork: A-tuned's forwarding without FINAL,
	// no budget from the whole mesh.
	lad, _ := arms.LookupArm("lad_phase_32k")
	pol, _ := lad.Policy(1 << 20)
	if f := forkPolicy(pol); !pol.Budget || f.Budget || !f.CountSource || !f.Gossip || f.PushWidth != 2 || f.Pull != phase.PullEager {
		t.Errorf("lad_phase under the fork: %+v (prose %+v); want r = 2, eager pulls, source counted, gossip, no budget", f, pol)
	}
	if err := prose.Set("phase-rules", "guess"); err == nil || !strings.Contains(err.Error(), "fork") {
		t.Fatalf("an unknown phase-rules: %v; want an error listing the values", err)
	}
}

// TestTopicMeshWait: the harness profile waits for variant C's meshes as
// the study's harness does (slots, no settle time); each is stored as the
// empty value; the knob keys C's cells only. slotsWithin counts a node as
// settled on its slots summed over the topics, and tolerates tol others.
func TestTopicMeshWait(t *testing.T) {
	h, _ := LookupProfile("harness")
	if got := h.Knobs()["topic-mesh-wait"]; got != TopicMeshSlots {
		t.Fatalf("harness: topic-mesh-wait %q; want %q", got, TopicMeshSlots)
	}
	each := h
	if err := each.Set("topic-mesh-wait", TopicMeshEach); err != nil || each.TopicMeshWait != "" {
		t.Fatalf("set each: %v, stored %q", err, each.TopicMeshWait)
	}
	for arm, differ := range map[string]bool{"c_32k": true, "crs_32k": true, "atuned_32k": false, "wholend": false} {
		a := Config{Arm: arm, N: 10, Degree: 4, Payload: 1 << 20, Profile: h}
		b := a
		b.Profile = each
		if (a.Key() != b.Key()) != differ {
			t.Errorf("%s: keys differ %v; want %v", arm, a.Key() != b.Key(), differ)
		}
	}
	g := StudyGossip() // Dlo 6, Dhi 12
	node := func(sizes ...int) *tracer {
		var names []string
		for i := range sizes {
			names = append(names, fmt.Sprint("t/", i))
		}
		tr := newTracer(names)
		for i, n := range sizes {
			for j := range n {
				tr.Graft(peer.ID(fmt.Sprint("p", j)), names[i])
			}
		}
		return tr
	}
	// One topic short (4) and one full (12): 16 slots, within [12, 24].
	ok := []*tracer{node(4, 12), node(8, 8), node(6, 6)}
	if !slotsWithin(ok, 2, g, 0) || meshesWithin(ok, g) {
		t.Fatal("slots: a short topic beside a full one must pass on the sum, and fail the per-topic test")
	}
	short := append(ok, node(2, 3))
	if slotsWithin(short, 2, g, 0) || !slotsWithin(short, 2, g, 1) {
		t.Fatal("slots: one node at 5 slots fails without tolerance and passes with a tolerance of one")
	}
}

// TestTCPKnobs: the TCP preset follows the profile (shadow: Shadow's Reno,
// unpaced, no restart after idle; kernel and harness: CUBIC, paced,
// Linux's restart); cc, pacing and idle-restart override the preset's
// fields and report the values in effect.
func TestTCPKnobs(t *testing.T) {
	want := map[string][4]string{
		"shadow":  {"shadow", "shadow-reno", "off", "off"},
		"kernel":  {"linux", "cubic", "on", "on"},
		"harness": {"linux", "cubic", "on", "on"},
	}
	for name, w := range want {
		p, _ := LookupProfile(name)
		k := p.Knobs()
		if got := [4]string{k["tcp"], k["cc"], k["pacing"], k["idle-restart"]}; got != w {
			t.Errorf("%s: tcp, cc, pacing, idle-restart = %v; want %v", name, got, w)
		}
	}
	// The knob left at the preset's value keeps the cell key.
	kp, _ := LookupProfile("kernel")
	key := Config{N: 4, Degree: 2, Payload: 1, Transport: "tcp", Profile: kp}.Key()
	kp.Set("idle-restart", "off")
	if (Config{N: 4, Degree: 2, Payload: 1, Transport: "tcp", Profile: kp}.Key()) == key {
		t.Error("idle-restart=off did not change the kernel profile's cell key")
	}
	p, _ := LookupProfile("shadow")
	if err := p.Set("tcp", "linux"); err != nil {
		t.Fatal(err)
	}
	if k := p.Knobs(); k["cc"] != "cubic" || k["pacing"] != "on" {
		t.Fatalf("after tcp=linux: cc %s, pacing %s; want the Linux preset's cubic, on", k["cc"], k["pacing"])
	}
	for kv, bad := range map[[2]string]bool{
		{"cc", "newreno"}: false, {"pacing", "off"}: false, {"idle-restart", "off"}: false,
		{"cc", "bbr"}: true, {"pacing", "maybe"}: true, {"tcp", "freebsd"}: true, {"idle-restart", "1"}: true,
	} {
		if err := p.Set(kv[0], kv[1]); (err != nil) != bad {
			t.Errorf("Set(%s, %s): %v", kv[0], kv[1], err)
		}
	}
	c, err := p.tcpConfig(5)
	if err != nil {
		t.Fatal(err)
	}
	lin := tcp.LinuxConfig()
	if c.CongestionControl != tcp.NewReno || c.Pacing || c.SlowStartAfterIdle || c.Seed != 5 || c.DelayedAck != lin.DelayedAck || !c.SACK {
		t.Fatalf("tcp=linux cc=newreno pacing=off idle-restart=off gave %+v", c)
	}
	bad := Config{N: 4, Degree: 2, Payload: 1, Transport: "tcp", Profile: Profile{TCP: "bsd"}}
	bad.Defaults()
	if err := bad.validate(); err == nil || !strings.Contains(err.Error(), "knob tcp") {
		t.Fatalf("a cell with an unknown TCP preset: %v; want an error naming the knob", err)
	}
}

// TestSetupQuantumBounds: a cell refuses a negative setup quantum or one
// above MaxSetupQuantum, naming the bound.
func TestSetupQuantumBounds(t *testing.T) {
	for _, q := range []des.Time{-des.Millisecond, MaxSetupQuantum + 1} {
		c := Config{N: 4, Degree: 2, Payload: 1, SetupQuantum: q}
		c.Defaults()
		if err := c.validate(); err == nil || !strings.Contains(err.Error(), "up to 10ms") {
			t.Errorf("setup quantum %v: %v; want an error naming the bound", q, err)
		}
	}
	c := Config{N: 4, Degree: 2, Payload: 1, SetupQuantum: MaxSetupQuantum}
	c.Defaults()
	if err := c.validate(); err != nil {
		t.Errorf("setup quantum at the bound: %v", err)
	}
}

// TestSmallWholeMessageCell: 20 nodes, degree 10 (14 with the routers
// started before the dial), 256 KiB, home, under the
// harness and shadow profiles over QUIC and the shadow profile over TCP
// (Shadow's Reno): every receiver completes, completion times are
// ordered, the meshes formed, and the publisher sent at least one copy of
// the payload.
func TestSmallWholeMessageCell(t *testing.T) {
	for _, c := range []struct {
		name, prof, transport string
		payload               int
		quantum               des.Time
		routerStart           string
		degree                int
		firstHB               string
	}{
		// Routers started before the dial (a node program's order). At
		// degree 10 about one run in fifteen left a node below Dlo for the
		// whole mesh timeout (2 of 30 runs; 0 of 60 at degree 14). A likely
		// reading, not yet traced: routers that start first graft the
		// first peers to connect and prune some once later ones arrive,
		// with a 60 s backoff, so a node pruned by most of its ten peers
		// cannot graft again before the timeout. Degree 14 gives it more
		// candidates.
		{"harness-before-dial", "harness", "quic", 256 << 10, 0, RouterBeforeDial, 14, ""},
		// Subscribing where the next heartbeat is 50 ms off.
		{"harness-first-heartbeat", "harness", "quic", 256 << 10, 0, RouterBeforeDial, 14, "50ms"},
		{"harness", "harness", "quic", 256 << 10, 0, RouterAfterDial, 10, ""},
		// A setup quantum rounds what real code sees during setup only.
		// Degree 14: at degree 10 this cell once left a node outside
		// [Dlo, Dhi] for the whole mesh timeout in a full CI run (0 of 60
		// runs alone), the rare stall described above.
		{"harness-setup-quantum", "harness", "quic", 256 << 10, des.Millisecond, RouterAfterDial, 14, ""},
		{"shadow", "shadow", "quic", 256 << 10, 0, RouterAfterDial, 10, ""},
		{"shadow-tcp", "shadow", "tcp", 256 << 10, 0, RouterAfterDial, 10, ""},
		// Linux's socket-buffer cap with a 1 MiB payload: the writers of
		// a host's QUIC connections block on its shared UDP socket (a lost
		// wake-up once stalled this cell for ever).
		{"kernel", "kernel", "quic", 1 << 20, 0, RouterAfterDial, 10, ""},
	} {
		prof, quantum, start, degree, firstHB := c.prof, c.quantum, c.routerStart, c.degree, c.firstHB
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p, _ := LookupProfile(prof)
				p.RouterStart = start
				p.FirstHeartbeat = firstHB
				g := StudyGossip()
				g.D, g.Dlo, g.Dhi = 4, 3, 6
				// Degree 10: at degree 6 (= Dhi) about one run in five
				// leaves a node with a mesh of 1 or 2 for the whole 60 s
				// mesh timeout; why is not known yet (noted on issue 5).
				rec, err := Run(Config{Seed: 7, N: 20, Degree: degree, Payload: c.payload, Transport: c.transport, Profile: p, Gossip: g, SetupQuantum: quantum, Wait: synctest.Wait})
				if err != nil {
					t.Fatal(err)
				}
				switch cs := rec.ConnAtPublish; {
				case c.transport == "tcp" && cs != nil:
					t.Fatalf("a TCP cell recorded QUIC connection state %+v", cs)
				case c.transport == "quic" && (cs == nil || cs.Ends != 20*degree || cs.SRTTOverMinP50 < 0.99 || cs.CwndKiBP10 <= 0):
					// 10 × degree edges, two ends each; a smoothed RTT
					// is not below the minimum sample (but for quic-go's
					// integer rounding).
					t.Fatalf("connection state at the publish %+v; want %d ends, SRTT/min ≥ 0.99, positive windows", cs, 20*degree)
				}
				if rec.SetupQuantumS != quantum.Seconds() {
					t.Fatalf("record setup_quantum_s %v; want %v", rec.SetupQuantumS, quantum.Seconds())
				}
				if rec.Transport != c.transport {
					t.Fatalf("record transport %q; want %q", rec.Transport, c.transport)
				}
				// After the dial, the routers start at the subscribe
				// instant and beat 100 ms later; before it, at some
				// phase of the 700 ms interval.
				if fh := rec.FirstHeartbeatMS; (start == "" && fh != 100) || (firstHB == "50ms" && fh != 50) || fh < 0 || fh >= 700 {
					t.Fatalf("first heartbeat %v ms after subscribing (router-start %q, first-heartbeat %q)", fh, start, firstHB)
				}
				// The publish comes Settle after subscribing (mesh wait
				// "fixed") or at one of the 100 ms polls after it
				// ("stable"), and the heartbeats every 700 ms after the
				// first: the next one after the publish is that far off.
				period := 100.0
				if p.MeshWait == "fixed" {
					period = 700
				}
				if rec.NextHeartbeatMS == nil {
					t.Fatal("record has no next_heartbeat_ms")
				}
				if nh := *rec.NextHeartbeatMS; nh < 0 || nh >= 700 || math.Abs(math.Remainder(nh-(rec.FirstHeartbeatMS-p.Settle*1000), period)) > 1e-6 {
					t.Fatalf("next heartbeat %v ms after the publish; want in [0, 700 ms) and %v ms after the first heartbeat less the %v s settle, modulo %v ms", nh, rec.FirstHeartbeatMS, p.Settle, period)
				}
				if rec.Completed != 19 || rec.Total != 19 {
					t.Fatalf("%d of %d receivers completed", rec.Completed, rec.Total)
				}
				if !rec.MeshStable && prof == "harness" {
					t.Fatal("meshes never settled within [Dlo, Dhi]")
				}
				if *rec.P50S <= 0 || *rec.P50S > *rec.P99S || *rec.P99S > *rec.LastS {
					t.Fatalf("quantiles out of order: %v %v %v", *rec.P50S, *rec.P99S, *rec.LastS)
				}
				// The counts are read at the last completion, as the
				// study's harness reads them.
				if rec.CountsAt != CountsAtLastCompletion || rec.CountsAtS != *rec.LastS {
					t.Fatalf("counts read at %q, %v s; want at the last completion, %v s", rec.CountsAt, rec.CountsAtS, *rec.LastS)
				}
				if rec.PubBytes < uint64(c.payload) {
					t.Fatalf("publisher sent %d bytes, less than one payload", rec.PubBytes)
				}
				t.Logf("%s: p50 %.3f p99 %.3f last %.3f dups %d idw %d pub %d wall %.1fs phases %+v",
					c.name, *rec.P50S, *rec.P99S, *rec.LastS, rec.Dups, rec.IdwTx, rec.PubBytes, rec.WallS, rec.Phases)
			})
		})
	}
}

// TestFirstHeartbeatKnob: first-heartbeat is a duration below the
// heartbeat interval, stored in one spelling, and only with the routers
// started before the dial.
func TestFirstHeartbeatKnob(t *testing.T) {
	p, _ := LookupProfile("harness")
	if err := p.Set("first-heartbeat", "0.05s"); err != nil || p.FirstHeartbeat != "50ms" {
		t.Fatalf("set 0.05s: %v, stored %q; want 50ms", err, p.FirstHeartbeat)
	}
	if err := p.Set("first-heartbeat", "soon"); err == nil {
		t.Fatal("a first-heartbeat that is not a duration should be rejected")
	}
	c := Config{N: 10, Degree: 4, Payload: 1, Profile: p}
	c.Defaults()
	if err := c.validate(); err != nil {
		t.Fatalf("before-dial with first-heartbeat 50ms: %v", err)
	}
	late := c
	late.Profile.FirstHeartbeat = "700ms"
	if err := late.validate(); err == nil || !strings.Contains(err.Error(), "heartbeat interval") {
		t.Fatalf("first-heartbeat at the interval: %v; want an error naming the interval", err)
	}
	after := c
	if err := after.Profile.Set("router-start", RouterAfterDial); err != nil {
		t.Fatal(err)
	}
	if err := after.validate(); err == nil || !strings.Contains(err.Error(), "router-start=before-dial") {
		t.Fatalf("first-heartbeat with after-dial: %v; want an error naming router-start=before-dial", err)
	}
}

// TestFirstHeartbeat: gossipsub beats 100 ms after its router starts,
// then every interval; the first beat at or after the subscribe instant.
func TestFirstHeartbeat(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct{ routers, sub, want time.Duration }{
		{0, 0, 100 * ms},                  // after-dial: the routers start as the nodes subscribe
		{0, 100 * ms, 0},                  // on the first beat
		{0, 150 * ms, 650 * ms},           // just missed it
		{0, 800 * ms, 0},                  // on the second
		{0, 2000 * ms, 200 * ms},          // beats at 1.5 s and 2.2 s
		{1000 * ms, 61000 * ms, 300 * ms}, // 59.9 s after the first beat (1.1 s): the next at 1.1 + 86 × 0.7 = 61.3 s
	} {
		if got := firstHeartbeat(c.routers, c.sub, 700*ms); got != c.want {
			t.Errorf("routers at %v, subscribed at %v: first beat after %v; want %v", c.routers, c.sub, got, c.want)
		}
	}
}

func TestAssignQdiscs(t *testing.T) {
	specs, err := AssignQdiscs("pie@30%;fq_codel", 100, 7)
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, s := range specs {
		n[s]++
	}
	if n["pie"] != 30 || n["fq_codel"] != 70 {
		t.Fatalf("counts %v, want 30 pie and 70 fq_codel", n)
	}
	again, _ := AssignQdiscs("pie@30%;fq_codel", 100, 7)
	other, _ := AssignQdiscs("pie@30%;fq_codel", 100, 8)
	same, diff := true, false
	for i := range specs {
		same = same && specs[i] == again[i]
		diff = diff || specs[i] != other[i]
	}
	if !same || !diff {
		t.Fatalf("assignment deterministic %v, seed-dependent %v", same, diff)
	}
	for _, bad := range []string{"pie@30%;fq_codel@80%", "pie;fq_codel", "pie@x;fifo", "pie@30%"} {
		if _, err := AssignQdiscs(bad, 10, 1); err == nil {
			t.Errorf("mix %q should be rejected", bad)
		}
	}
	m := &QdiscMap{Default: "fq_codel", Nodes: map[string]string{"3": "pie"}}
	got, err := m.resolve("pfifo", 5, 1)
	if err != nil || got[3] != "pie" || got[0] != "fq_codel" {
		t.Fatalf("resolve: %v, %v", got, err)
	}
	if _, err := (&QdiscMap{Nodes: map[string]string{"9": "pie"}}).resolve("fifo", 5, 1); err == nil {
		t.Fatal("an out-of-range node should be rejected")
	}
}

// TestRecordRoundTrip: a record survives JSON encoding, censored
// quantiles included (null).
func TestRecordRoundTrip(t *testing.T) {
	r := &Record{Arm: "whole", Seed: 7, N: 5, Profile: "harness", Knobs: map[string]string{"shaper": "serial"}}
	r.fill([]float64{0.5, 0.7, math.Inf(1), 0.9}, 3)
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back Record
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r, &back) {
		t.Fatalf("round trip changed the record:\n%+v\n%+v", r, back)
	}
	if back.P99S != nil || back.P50S == nil || *back.P50S != 0.7 || back.Completed != 3 || back.RateK != 3 {
		t.Fatalf("summary wrong: p50 %v p99 %v completed %d rate %d", back.P50S, back.P99S, back.Completed, back.RateK)
	}
	if !strings.Contains(string(b), `"p99_s":null`) {
		t.Fatalf("a censored quantile must encode as null: %s", b)
	}
	done, n, ok := back.CompletionTimes()
	if !ok || n != 4 || !reflect.DeepEqual(done, []float64{0.5, 0.7, 0.9}) {
		t.Fatalf("completion times %v of %d (ok %v); want 0.5, 0.7, 0.9 of 4", done, n, ok)
	}
	old := Record{Completed: 3, Total: 4} // no completion_us, no node rows
	if _, _, ok := old.CompletionTimes(); ok {
		t.Fatal("a record without completion times or node rows must say so")
	}
}

// TestLateReceivers by hand (section 5's count, > p50 + 0.4 s): six
// receivers sorted 0.5, 0.7, 0.9, 1.0, 1.31, never; the p50 is the third
// (index ceil(0.5 × 6) − 1 = 2), 0.9 s, so 1.31 s and the censored one are
// late and 1.0 s is not. A censored p50 leaves the count unknown.
func TestLateReceivers(t *testing.T) {
	var r Record
	r.fill([]float64{0.5, 0.7, 1.31, math.Inf(1), 0.9, 1.0}, 3)
	if r.P50S == nil || *r.P50S != 0.9 || r.Late == nil || *r.Late != 2 {
		t.Fatalf("p50 %v, late %v: want 0.9 s and 2", r.P50S, r.Late)
	}
	var c Record
	c.fill([]float64{0.5, math.Inf(1), math.Inf(1)}, 3)
	if c.P50S != nil || c.Late != nil {
		t.Fatalf("censored p50: late %v, want nil", c.Late)
	}
}

// TestMeshLatency by hand: three nodes, latencies 10, 20 and 30 ms on the
// pairs (0,1), (0,2), (1,2); meshes 0–1 and 0–2 seen from both ends give
// (10+20+10+20)/4 = 15 ms; the dial graph's two edges (0,1) and (1,2)
// average 20 ms.
func TestMeshLatency(t *testing.T) {
	draw, err := netmodel.ReadDraw(strings.NewReader(`{"n": 3, "seed": 0, "model": "geo", "scenario": "home", "degree": 2,
		"edges": [[0, 1], [0, 2], [1, 2]], "up_bps": [50000000, 50000000, 50000000], "down_bps": [100000000, 100000000, 100000000],
		"latency_ns": [[1000000, 10000000, 20000000], [10000000, 1000000, 30000000], [20000000, 30000000, 1000000]]}`))
	if err != nil {
		t.Fatal(err)
	}
	g := &netmodel.Graph{N: 3, Degree: 1, Edges: [][2]int{{0, 1}, {1, 2}}}
	ids := []peer.ID{"a", "b", "c"}
	tr := []*tracer{newTracer([]string{Topic}), newTracer([]string{Topic}), newTracer([]string{Topic})}
	tr[0].Graft("b", Topic)
	tr[0].Graft("c", Topic)
	tr[1].Graft("a", Topic)
	tr[2].Graft("a", Topic)
	tr[2].Graft("z", Topic) // not a node of the cell: ignored
	mesh, graph := meshLatency(tr, ids, draw, g)
	if math.Abs(mesh-15) > 1e-9 || math.Abs(graph-20) > 1e-9 {
		t.Fatalf("mesh %v ms, graph %v ms; want 15 and 20", mesh, graph)
	}
}

// TestKeyRevisions: a cell's key holds the revision of each part of the
// model it uses, and only those: Shadow's fifo order for TCP cells behind
// a Shadow fifo (the shadow profile, or one node's queue file), simnet's
// fq_codel wherever it is, and Shadow's Reno recovery for TCP cells with
// cc shadow-reno or Shadow's TCP preset. A QUIC cell under the shadow profile and a kernel cell
// use none.
func TestKeyRevisions(t *testing.T) {
	shadow, _ := LookupProfile("shadow")
	kernel, _ := LookupProfile("kernel")
	harness, _ := LookupProfile("harness")
	for _, c := range []struct {
		what string
		cfg  Config
		want map[string]int
	}{
		{"QUIC under shadow", Config{N: 4, Degree: 2, Payload: 1, Profile: shadow}, nil},
		{"TCP under kernel", Config{N: 4, Degree: 2, Payload: 1, Transport: "tcp", Profile: kernel}, nil},
		{"TCP under shadow", Config{N: 4, Degree: 2, Payload: 1, Transport: "tcp", Profile: shadow},
			map[string]int{"shadow-fifo-order": shadowFIFOOrder, "shadow-reno-recovery": shadowRenoRecovery}},
		{"TCP under kernel, one node behind a Shadow fifo", Config{N: 4, Degree: 2, Payload: 1, Transport: "tcp", Profile: kernel,
			Qdiscs: &NodeQdiscs{Uplink: &QdiscMap{Default: "pfifo", Nodes: map[string]string{"3": "shadow-fifo"}}}},
			map[string]int{"shadow-fifo-order": shadowFIFOOrder}},
		{"QUIC under harness", Config{N: 4, Degree: 2, Payload: 1, Profile: harness}, map[string]int{"simnet-idle-reset": simnetIdleReset}},
		{"kernel, one node behind simnet's fq_codel", Config{N: 4, Degree: 2, Payload: 1, Profile: kernel,
			Qdiscs: &NodeQdiscs{Uplink: &QdiscMap{Default: "pfifo", Nodes: map[string]string{"2": "fq_codel:profile=simnet"}}}},
			map[string]int{"simnet-idle-reset": simnetIdleReset}},
	} {
		require.Equal(t, c.want, c.cfg.KeyFields().Revisions, c.what)
		require.Equal(t, ModelRevision, c.cfg.KeyFields().Model, c.what)
	}
	cc := Config{N: 4, Degree: 2, Payload: 1, Transport: "tcp", Profile: kernel}
	require.NoError(t, cc.Profile.Set("cc", tcp.ShadowReno))
	require.Equal(t, shadowRenoRecovery, cc.KeyFields().Revisions["shadow-reno-recovery"], "kernel with cc shadow-reno")
	preset := Config{N: 4, Degree: 2, Payload: 1, Transport: "tcp", Profile: shadow}
	require.NoError(t, preset.Profile.Set("cc", "cubic"))
	require.Equal(t, shadowRenoRecovery, preset.KeyFields().Revisions["shadow-reno-recovery"], "Shadow's TCP preset with cubic")
}
