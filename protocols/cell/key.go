package cell

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/uplinksim/uplink/protocols/arms"
	"github.com/uplinksim/uplink/transports/tcp"
)

// KeyVersion is the form of the cell key (KeyFields): records of
// RecordSchema 2 and later carry keys of this form; Migrate re-keys older
// records.
const KeyVersion = 2

// ModelRevision is the revision of uplink's model as a whole, part of
// every cell key: raising it makes every record of an earlier revision a
// record of another cell, so a sweep runs its cells again. A change that
// moves the results of some cells only raises a revision of its own
// (KeyFields.Revisions) instead.
const ModelRevision = 1

// The revisions of parts of the model, each in the key of the cells it
// affects (revisions).
const (
	// shadowFIFOOrder is how Shadow's fifo orders TCP segments: 1,
	// Shadow's write-time packet priorities (queues.ShadowFIFO,
	// transports/tcp/prio.go). TCP cells with a Shadow fifo anywhere.
	shadowFIFOOrder = 1
	// simnetIdleReset is simnet's fq_codel (the harness profile's): 1, the
	// queue discards a flow's CoDel state when the flow runs empty
	// (queues.FQCoDelConfig.ResetIdle). Cells with it anywhere.
	simnetIdleReset = 1
	// shadowRenoRecovery is Shadow's Reno over uplink's TCP (cc
	// shadow-reno): 1, the lost head leaves on the third duplicate ACK
	// and Shadow's window test on sequence space gates new data
	// (transports/tcp recovery_reno.go), slow start stops at ssthresh and
	// the ACK ending recovery counts in congestion avoidance
	// (cc_shadowreno.go), and a connection starts at Shadow's initial
	// window of 1 segment, 2 once the handshake's ACK is counted
	// (tcp.ShadowConfig, sender.countHandshake in transports/tcp). TCP
	// cells with cc shadow-reno or Shadow's TCP preset (tcp shadow, whose
	// initial window any controller starts from). Records of schema 1 ran
	// before it (revision 0, absent).
	shadowRenoRecovery = 1
	// variantBLedger is variant B's claim ledger (protocols/partial): 1,
	// the request timeout is each peer's own (its first value, then
	// TimeoutMult × that peer's mean response time), a claim ends when its
	// part arrives from any peer (a strike only for a part still missing),
	// and a pass claims no more parts than completion still needs (coded
	// B: K parts between held and claimed, not all 2K). Cells whose arm
	// is variant B. Records of schema 1 ran before it (revision 0,
	// absent).
	variantBLedger = 1
)

// KeyFields is what a cell key hashes: exactly the settings that can
// change a cell's result, each spelled out the way its record states it,
// so that a zero value in a Config or a Profile means today's behaviour
// and a record can be re-keyed from its own fields (Migrate). Run-only
// settings (progress, cores, verification, traces, version) are not in
// it.
type KeyFields struct {
	Key   int // KeyVersion
	Model int // ModelRevision
	// Revisions are the revisions of the parts of the model the cell uses
	// (shadowFIFOOrder, simnetIdleReset, shadowRenoRecovery,
	// variantBLedger), by name;
	// absent when it uses none.
	Revisions map[string]int `json:",omitempty"`

	Arm                     string // the catalogue name (arms.LookupArm)
	Seed                    uint64
	N, Degree, Payload      int
	Net, Latency, Transport string
	Backend                 string `json:",omitempty"`
	Encoding                string `json:",omitempty"`
	Profile                 string
	// Knobs are the profile's knob values as Profile.Knobs prints them,
	// without the knobs the arm does not use (phase-rules without the
	// phase router, topic-mesh-wait with one topic); Gossip the gossip
	// settings as Gossip.Knobs prints them.
	Knobs, Gossip map[string]string

	WindowS, DeadlineS, SetupQuantumS float64
	Warmup                            string  `json:",omitempty"`
	WarmupGapS                        float64 `json:",omitempty"`
	Background                        string  `json:",omitempty"`
	BackgroundLeadS                   float64 `json:",omitempty"`
	BTimeoutS                         float64 `json:",omitempty"`
	BFixed                            bool    `json:",omitempty"`
	BRulesOff                         string  `json:",omitempty"`
	CountsAt                          string  `json:",omitempty"` // CountsWindowEnd only
	Partitions                        int     `json:",omitempty"` // above 1 only
	Replicate                         int     `json:",omitempty"`
	// Extra hashes the settings a record does not list: a replayed
	// topology, per-node queue assignments, withheld units and a mesh
	// timeout other than the default; "" when none is set.
	Extra string `json:",omitempty"`
}

// Key identifies the cell run: the hash of its KeyFields. Records carry
// it, so a rerun can skip cells it already has.
func (c Config) Key() string {
	return c.KeyFields().hash()
}

// KeyFields is the cell's KeyFields (Key).
func (c Config) KeyFields() KeyFields {
	c.Defaults()
	arm := c.Arm
	if a, err := arms.LookupArm(c.Arm); err == nil {
		arm = a.Name
	}
	k := KeyFields{
		Key: KeyVersion, Model: ModelRevision,
		Arm: arm, Seed: c.Seed, N: c.N, Degree: c.Degree, Payload: c.Payload,
		Net: c.Net, Latency: c.Latency, Transport: c.Transport, Backend: c.Backend, Encoding: string(c.Encoding),
		Profile: c.Profile.Name, Knobs: c.Profile.Knobs(), Gossip: c.Gossip.Knobs(),
		WindowS: c.Window.Seconds(), DeadlineS: c.Deadline.Seconds(), SetupQuantumS: c.SetupQuantum.Seconds(),
		Warmup: c.Warmup.String(), WarmupGapS: c.Warmup.Gap.Seconds(),
		Background: c.Background.String(), BackgroundLeadS: c.Background.Lead.Seconds(),
		BTimeoutS: c.BTimeout.Seconds(), BFixed: c.BFixed, BRulesOff: c.BRulesOff.String(), Replicate: c.Replicate,
	}
	if c.Partitions > 1 {
		k.Partitions = c.Partitions
	}
	if c.CountsAt == CountsWindowEnd {
		k.CountsAt = c.CountsAt
	}
	if d := c.Topology; d != nil {
		k.N, k.Degree, k.Net, k.Latency = d.N, d.Degree, d.Scenario, d.Model
	}
	var extra struct {
		Topology    any   `json:",omitempty"`
		Qdiscs      any   `json:",omitempty"`
		Withhold    []int `json:",omitempty"`
		MeshTimeout int64 `json:",omitempty"`
	}
	if c.Topology != nil {
		extra.Topology = c.Topology
	}
	if c.Qdiscs != nil {
		extra.Qdiscs = c.Qdiscs
	}
	extra.Withhold = c.Withhold
	if c.MeshTimeout != defaultMeshTimeout {
		extra.MeshTimeout = int64(c.MeshTimeout)
	}
	if b := mustJSON(extra); string(b) != "{}" {
		h := sha256.Sum256(b)
		k.Extra = hex.EncodeToString(h[:12])
	}
	k.finish(c.qdiscSpecs())
	if k.Transport == "tcp" && (k.Knobs["cc"] == tcp.ShadowReno || k.Knobs["tcp"] == "shadow") {
		k.revise("shadow-reno-recovery", shadowRenoRecovery)
	}
	if a, err := arms.LookupArm(c.Arm); err == nil && a.Variant == arms.VariantB {
		k.revise("variant-b-ledger", variantBLedger)
	}
	return k
}

// revise sets a revision of a part of the model the cell uses.
func (k *KeyFields) revise(name string, rev int) {
	if k.Revisions == nil {
		k.Revisions = map[string]int{}
	}
	k.Revisions[name] = rev
}

// finish drops the knobs the arm cannot use, puts the gossip setting the
// arm fixes at its value, and sets the revisions of the
// parts of the model that the queue specs (every spec the cell's queues
// are drawn from) and the transport use, as far as records of schema 1
// already ran them.
func (k *KeyFields) finish(specs []string) {
	if arm, err := arms.LookupArm(k.Arm); err == nil {
		if _, phased := arm.Policy(k.Payload); !phased {
			delete(k.Knobs, "phase-rules") // no phase router: the rules change nothing
		} else {
			k.Gossip["max-ihave-messages"] = strconv.Itoa(phaseMaxIHave) // the arm sets it
		}
		if arm.Variant != arms.VariantC {
			delete(k.Knobs, "topic-mesh-wait") // one topic: the wait is the same
		}
	}
	uses := func(sub string) bool {
		for _, s := range specs {
			if strings.Contains(s, sub) {
				return true
			}
		}
		return false
	}
	if k.Transport == "tcp" && uses("shadow-fifo") {
		k.revise("shadow-fifo-order", shadowFIFOOrder)
	}
	if uses("profile=simnet") {
		k.revise("simnet-idle-reset", simnetIdleReset)
	}
}

func (k KeyFields) hash() string {
	h := sha256.Sum256(mustJSON(k))
	return hex.EncodeToString(h[:12])
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		// Plain data: maps of strings, numbers, the draw's slices.
		panic(fmt.Sprintf("cell: key: %v", err))
	}
	return b
}

// legacyKnobs are the knobs a record may lack because it was written
// before they existed, with the behaviour every cell had then.
var legacyKnobs = map[string]string{
	"router-start":    RouterAfterDial,
	"phase-rules":     PhaseRulesProse,
	"topic-mesh-wait": TopicMeshEach,
}

// keyFieldsV1 is the KeyFields of a record of schema 1 or earlier, from
// its own fields, or false when the record does not describe its cell
// well enough to tell (a record without its arm, size or knobs, a knob
// this build no longer reads, or per-node queues the knobs do not give).
// Such records were written with the parts of the model at the
// revisions of KeyVersion 2's start (shadowFIFOOrder and
// simnetIdleReset 1), and without the settings Extra covers.
func (r *Record) keyFieldsV1() (KeyFields, bool) {
	if r.ArmName == "" || r.N < 2 || r.Knobs == nil || r.Gossip == nil || r.Transport == "" {
		return KeyFields{}, false
	}
	for _, dir := range []struct {
		counts map[string]int
		knob   string
	}{{r.UpQdiscs, "uplink-qdisc"}, {r.DownQdiscs, "downlink-qdisc"}} {
		if len(dir.counts) > 1 && !strings.Contains(r.Knobs[dir.knob], "%") {
			return KeyFields{}, false // queues assigned per node (Config.Qdiscs)
		}
	}
	p := Profile{Name: r.Profile}
	knobs := maps.Clone(r.Knobs)
	for name, v := range legacyKnobs {
		if _, ok := knobs[name]; !ok {
			knobs[name] = v
		}
	}
	for _, kd := range KnobDocs() {
		if v, ok := knobs[kd.Name]; ok {
			if err := p.Set(kd.Name, v); err != nil {
				return KeyFields{}, false
			}
		}
	}
	for name, v := range p.Knobs() {
		if _, ok := knobs[name]; !ok {
			knobs[name] = v // a knob added since: its value then
		}
	}
	gossip := StudyGossip().Knobs()
	maps.Copy(gossip, r.Gossip)
	k := KeyFields{
		Key: KeyVersion, Model: ModelRevision,
		Arm: r.ArmName, Seed: r.Seed, N: r.N, Degree: r.Degree, Payload: r.PayloadBytes,
		Net: r.Net, Latency: r.Latency, Transport: r.Transport, Backend: r.Backend, Encoding: r.Wire.Encoding,
		Profile: r.Profile, Knobs: knobs, Gossip: gossip,
		WindowS: r.WindowS, DeadlineS: r.DeadlineS, SetupQuantumS: r.SetupQuantumS,
		Warmup: r.Warmup, WarmupGapS: r.WarmupGapS, Background: r.Background, BackgroundLeadS: r.BackgroundLeadS,
		BTimeoutS: r.BTimeoutS, BFixed: r.BFixed, BRulesOff: r.BRulesOff, Replicate: r.Replicate,
	}
	if r.Partitions > 1 {
		k.Partitions = r.Partitions
	}
	specs := []string{knobs["uplink-qdisc"], knobs["downlink-qdisc"], knobs["host-qdisc"]}
	for s := range r.UpQdiscs {
		specs = append(specs, s)
	}
	for s := range r.DownQdiscs {
		specs = append(specs, s)
	}
	k.finish(specs)
	return k, true
}
