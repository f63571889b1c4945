package validate

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/protocols/arms"
	"github.com/uplinksim/uplink/protocols/cell"
	"github.com/uplinksim/uplink/protocols/partial"
)

// A study is a named experiment for one of the report's open questions
// (section 11, and section 4's untested PIE): a set of arms run under
// variants that each change one modelling choice from the first (the
// baseline), at the study's size and seeds. Its table gives, per variant
// and arm, the medians across seeds with their ranges, and the median of
// the per-seed differences from the baseline; its reading states, per arm
// and variant, whether the change moved the arm beyond its seed-to-seed
// spread.

// Variant is one setting of a study.
type Variant struct {
	Label     string
	Profile   string            // harness, shadow or kernel
	Transport string            // quic or tcp; "" for quic
	Knobs     map[string]string // profile knobs over the profile's
	Gossip    map[string]string // gossip knobs (cell.Gossip.Set) over the base's
	Payload   int               // bytes; 0 for the study's
	// Nodes, when set, is the variant's network size over the study's (a
	// network-size study); such a study takes no --nodes.
	Nodes    int
	Warmup   cell.Warmup
	BTimeout des.Time // variant B's first request timeout (0: the arm's)
	BFixed   bool     // variant B's timeout does not adapt
	// BRulesOff switches rules of variant B's claim ledger off
	// (partial.RulesOff): what each rule changes.
	BRulesOff partial.RulesOff
	// Partitions, when set, runs the variant's cells in that many
	// partitions (cell.Config.Partitions) over the base's.
	Partitions int
	// Replicate, when set, makes the variant's cells repeats of the same
	// cells under another key (cell.Config.Replicate): their difference
	// from the baseline is the run-to-run spread.
	Replicate int
	// Network, when set, is the network the variant's cells run on:
	// cell.BackendSimnet (go-libp2p's simnet); "" for uplink's model.
	Network string
	// Encoding, when set, is the wire encoding of the variant's gossip
	// messages over the base's: "raw" or "snappy" (arms.ParseEncoding).
	Encoding string
	// Base makes the variant a baseline: it and the variants after it, up
	// to the next Base, are compared with it (the first variant always is
	// one). A study of several settings, each with its own pair, marks the
	// first of each pair.
	Base bool
	// Skip lists arms (any catalogue name) the variant does not run,
	// because under it they are another arm's cell (the study's Note
	// says why), or, for a rerun, because no claim needs their spread.
	Skip []string
}

// SizesNodes reports whether a variant of s sets its own node count.
func (s Study) SizesNodes() bool {
	return slices.ContainsFunc(s.Variants, func(v Variant) bool { return v.Nodes != 0 })
}

// Study is one named experiment.
type Study struct {
	Name     string
	Question string // the report's open question, in a sentence
	Arms     []string
	N        int
	Degree   int // the dial graph's degree; 0: the report's 70, capped at N-1
	Payload  int
	Seeds    []uint64
	Variants []Variant
	Note     string // what the study cannot vary here, and why
	// Stat is the statistic the per-seed comparison with the baseline
	// and the reading use: p50 (the default) or p99, for a question about
	// the tail.
	Stat string
	// BaseArm, when set, makes the comparison one between arms: every
	// arm is compared with BaseArm under the same variant (the payload
	// sweep's question is the gap to the whole message and the arms'
	// order at each size), instead of with itself under the first
	// variant.
	BaseArm string
	// Claims are the hypotheses the study's answer judges (Judge), each
	// from the paired statistic that decides it.
	Claims []Claim
}

// CompareStat is the statistic the study compares variants by.
func (s Study) CompareStat() string {
	if s.Stat == "" {
		return "p50"
	}
	return s.Stat
}

func seeds(lo, hi uint64) []uint64 {
	var out []uint64
	for s := lo; s <= hi; s++ {
		out = append(out, s)
	}
	return out
}

// fairNoAQM is the harness's fair share (pairs hashed into 128 queues,
// one-MTU quantum) without CoDel: DRR over the same classes, no limit.
const fairNoAQM = "drr:classify=pair,flows=128,quantum=1500,limit=none"

// rerunLabel labels a study's rerun of its baseline's cells (the arms its
// claims name): more runs of the baseline for the noise test that judges
// each claim (Judge).
const rerunLabel = "rerun of the baseline"

// Studies lists the studies of the report, section 11 (a to e), and the
// untested PIE case of section 4 (f).
func Studies() []Study {
	fig1 := []string{"wholend", "atuned", "acoded", "bfixed", "bcodedfc1", "c32", "c32rs"}
	mib := 1 << 20
	return []Study{
		{
			Name:     "c-residual",
			Question: "Is C's residual advantage under Shadow (7 to 13 % with the queue order equalised) CoDel's drops and quic-go's answer to them, or Shadow's unbounded socket buffers?",
			Arms:     []string{"c32", "c32rs"}, N: 500, Payload: mib, Seeds: seeds(7, 16),
			Variants: []Variant{
				{Label: "harness (fq_codel)", Profile: "harness"},
				{Label: "harness, fair share without AQM", Profile: "harness", Knobs: map[string]string{"uplink-qdisc": fairNoAQM, "downlink-qdisc": fairNoAQM}},
				{Label: "shadow, fq_codel uplink", Profile: "shadow", Knobs: map[string]string{"uplink-qdisc": "fq_codel:profile=simnet"}},
				{Label: "shadow, fq_codel uplink, socket buffers capped at 212 992", Profile: "shadow", Knobs: map[string]string{"uplink-qdisc": "fq_codel:profile=simnet", "sockbuf-max": "212992"}},
				{Label: rerunLabel, Profile: "harness", Replicate: 1},
			},
			Claims: []Claim{
				{Text: "With the uplink queue equalised (fq_codel), Shadow's C is still faster than the twin's (the residual):", Variant: "shadow, fq_codel uplink", Against: "harness (fq_codel)", Direction: -1},
				{Text: "CoDel's drops slow the harness's C: a fair share without AQM makes it faster:", Variant: "harness, fair share without AQM", Against: "harness (fq_codel)", Direction: -1},
				{Text: "Shadow's unbounded socket buffers make its C faster: capping them at 212 992 bytes makes it slower:", Variant: "shadow, fq_codel uplink, socket buffers capped at 212 992", Against: "shadow, fq_codel uplink", Direction: +1},
			},
		},
		{
			Name:     "b-tail",
			Question: "Is B's QUIC tail the send buffer, or B's adaptive request timeout waiting on a slow server?",
			Arms:     []string{"bfixed", "bcodedfc1"}, N: 500, Payload: mib, Seeds: seeds(7, 16), Stat: "p99",
			Variants: []Variant{
				{Label: "shadow QUIC, 2 × 7 MiB buffers", Profile: "shadow"},
				{Label: "shadow QUIC, send buffer capped at 64 KiB (section 5)", Profile: "shadow", Knobs: map[string]string{"sndbuf-max": "32768"}},
				{Label: "shadow QUIC, B timeout fixed at 400 ms", Profile: "shadow", BFixed: true},
				{Label: "shadow QUIC, B timeout from 200 ms", Profile: "shadow", BTimeout: 200 * des.Millisecond},
				{Label: "shadow TCP", Profile: "shadow", Transport: "tcp"},
				{Label: rerunLabel, Profile: "shadow", Replicate: 1},
			},
			Note: "quic-go's initial flow-control windows cannot be varied: go-libp2p's QUIC transport fixes its quic.Config and offers no option for them. The cap is section 5's intervention: quic-go's UDP send buffer stored at 64 KiB (the request capped at 32 KiB, the sndbuf-max knob), its receive buffer left alone; section 5's own seed-7 cells replay with --table s5_sndbuf.",
			Claims: []Claim{
				{Text: "B's tail is longer over QUIC than over TCP under Shadow:", Variant: "shadow QUIC, 2 × 7 MiB buffers", Against: "shadow TCP", Direction: +1},
				{Text: "The shared send buffer makes the tail: capping it at 64 KiB shortens it:", Variant: "shadow QUIC, send buffer capped at 64 KiB (section 5)", Direction: -1, Requires: 1},
				{Text: "B's adaptive request timeout makes the tail: a timeout fixed at 400 ms shortens it:", Variant: "shadow QUIC, B timeout fixed at 400 ms", Direction: -1, Requires: 1},
				{Text: "A shorter first timeout (200 ms) shortens it:", Variant: "shadow QUIC, B timeout from 200 ms", Direction: -1, Requires: 1},
			},
		},
		{
			Name:     "phase-queue",
			Question: "Is the phase shift's 13 % in Figure 8 the uplink queue's order, as for C?",
			Arms:     []string{"lad_phase"}, N: 500, Payload: mib, Seeds: seeds(7, 16),
			Variants: []Variant{
				{Label: "shadow QUIC, FIFO", Profile: "shadow"},
				{Label: "shadow QUIC, round-robin", Profile: "shadow", Knobs: map[string]string{"uplink-qdisc": "shadow-rr"}},
				{Label: "shadow QUIC, fq_codel", Profile: "shadow", Knobs: map[string]string{"uplink-qdisc": "fq_codel:profile=simnet"}},
				{Label: "shadow TCP, FIFO", Profile: "shadow", Transport: "tcp"},
				{Label: "shadow TCP, fq_codel", Profile: "shadow", Transport: "tcp", Knobs: map[string]string{"uplink-qdisc": "fq_codel:profile=simnet"}},
				{Label: rerunLabel, Profile: "shadow", Replicate: 1},
			},
			Claims: []Claim{
				{Text: "Shadow's FIFO makes the phase shift faster over QUIC: its round-robin queue makes it slower:", Variant: "shadow QUIC, round-robin", Direction: +1},
				{Text: "Over QUIC, fq_codel makes it slower:", Variant: "shadow QUIC, fq_codel", Direction: +1},
				{Text: "Over TCP, fq_codel makes it slower:", Variant: "shadow TCP, fq_codel", Against: "shadow TCP, FIFO", Direction: +1},
			},
		},
		{
			Name:     "payload-sweep",
			Question: "Do the tier order and the whole message's gap hold across payload sizes (Figure 9, three seeds in the report) at ten seeds?",
			Arms:     []string{"wholend", "lad_batch16", "aadaptds", "aadaptcf", "aadaptcfd", "am_k64", "acodedcf"}, N: 500, Payload: mib, Seeds: seeds(7, 16),
			BaseArm: "wholend",
			Variants: []Variant{
				{Label: "128 KiB", Profile: "harness", Payload: 128 << 10},
				{Label: "256 KiB", Profile: "harness", Payload: 256 << 10},
				{Label: "512 KiB", Profile: "harness", Payload: 512 << 10, Skip: []string{"aadaptcfd"}},
				{Label: "1 MiB", Profile: "harness", Payload: mib, Skip: []string{"aadaptcfd"}},
				{Label: "2 MiB", Profile: "harness", Payload: 2 * mib, Skip: []string{"aadaptcfd"}},
				// At 128 KiB the arms' gaps to the whole message are
				// smallest: the segmented arms' rerun there stands for
				// every size.
				{Label: rerunLabel, Profile: "harness", Payload: 128 << 10, Replicate: 1, Skip: []string{"wholend"}},
			},
			Note: "Figure 9's arms: the three tiers, tier 3 with the discipline at every size (run below 512 KiB only: from 512 KiB tier 3 has it, so the two are one cell), " +
				"and the reference arms A-tuned 16k and the compress-first code alone 32k. Sections 7 and 8 and their numbers are held back from the report, so there is no reference to replay. " +
				"The rerun of the baseline repeats the segmented arms at 128 KiB, where their gaps to the whole message are smallest: the noise test counts it among those cells' runs.",
			Claims: []Claim{
				{Text: "At 128 KiB every segmented arm is faster than the whole message:", Variant: "128 KiB", AgainstArm: "wholend", Direction: -1},
				{Text: "At 256 KiB every segmented arm is faster than the whole message:", Variant: "256 KiB", AgainstArm: "wholend", Direction: -1},
				{Text: "At 512 KiB every segmented arm is faster than the whole message:", Variant: "512 KiB", AgainstArm: "wholend", Arms: []string{"lad_batch16", "aadaptds", "aadaptcf", "am_k64", "acodedcf"}, Direction: -1},
				{Text: "At 1 MiB every segmented arm is faster than the whole message:", Variant: "1 MiB", AgainstArm: "wholend", Arms: []string{"lad_batch16", "aadaptds", "aadaptcf", "am_k64", "acodedcf"}, Direction: -1},
				{Text: "At 2 MiB every segmented arm is faster than the whole message:", Variant: "2 MiB", AgainstArm: "wholend", Arms: []string{"lad_batch16", "aadaptds", "aadaptcf", "am_k64", "acodedcf"}, Direction: -1},
			},
		},
		{
			Name:     "warm-gap",
			Question: "Is the warm condition's slowdown of the coded arms a transport effect or the warm-up's own load still draining?",
			Arms:     fig1, N: 500, Payload: mib, Seeds: seeds(7, 16),
			Variants: []Variant{
				{Label: "cold", Profile: "harness"},
				{Label: "warm, publish at once", Profile: "harness", Warmup: cell.Warmup{Kind: "streams", Stream: 320 << 10}},
				{Label: "warm, 1 s drain gap", Profile: "harness", Warmup: cell.Warmup{Kind: "streams", Stream: 320 << 10, Gap: des.Second}},
				{Label: "warm, 5 s drain gap", Profile: "harness", Warmup: cell.Warmup{Kind: "streams", Stream: 320 << 10, Gap: 5 * des.Second}},
				// Variant B sends its parts on the partial-messages
				// extension, not as gossip messages: no payload warm-up.
				{Label: "warm by a payload, 1 s drain gap", Profile: "harness", Warmup: cell.Warmup{Kind: "payload", Gap: des.Second}, Skip: []string{"bfixed", "bcodedfc1"}},
				{Label: "warm in turn, 1 s drain gap", Profile: "harness", Warmup: cell.Warmup{Kind: "streams-seq", Stream: 320 << 10, Gap: des.Second}},
				{Label: rerunLabel, Profile: "harness", Replicate: 1, Skip: []string{"wholend", "atuned", "bfixed", "c32", "c32rs"}},
			},
			Note: "The warm-up ends when every dummy stream has arrived (or every receiver has the warm-up payload); the gap is counted from there. " +
				"The cwnd and lost columns are quic-go's state at the publish: the report's 320 KiB streams all start at once, overflow every queue, " +
				"and leave the windows below quic-go's initial 40 KiB (it does not restart a window after idle); a payload warm-up of the arm's own shape does not, " +
				"and 320 KiB streams sent one connection at a time per node (the other reading of the report's warm-up) leave them larger than the initial window.",
			Claims: []Claim{
				{Text: "Warming up and publishing at once slows the coded arms:", Variant: "warm, publish at once", Arms: []string{"acoded", "bcodedfc1"}, Direction: +1},
				{Text: "The slowdown is the warm-up's load still draining: a 5 s gap makes the coded arms faster than publishing at once:", Variant: "warm, 5 s drain gap", Against: "warm, publish at once", Arms: []string{"acoded", "bcodedfc1"}, Direction: -1},
				{Text: "A transport effect remains: after a 5 s gap the coded arms are still slower than cold:", Variant: "warm, 5 s drain gap", Against: "cold", Arms: []string{"acoded", "bcodedfc1"}, Direction: +1},
			},
		},
		{
			Name:     "pie",
			Question: "Where does a delay-controlling single queue (PIE) put Figure 1's arms, between Shadow's FIFO and the harness's fair share or outside, and what does a host fq_codel in front of an access queue change?",
			Arms:     fig1, N: 500, Payload: mib, Seeds: seeds(7, 16),
			Variants: []Variant{
				{Label: "harness (fq_codel)", Profile: "harness"},
				{Label: "PIE uplink, Linux parameters", Profile: "harness", Knobs: map[string]string{"uplink-qdisc": "pie"}},
				{Label: "PIE uplink, RFC 8033 parameters", Profile: "harness", Knobs: map[string]string{"uplink-qdisc": "pie:profile=rfc"}},
				{Label: "host fq_codel in front of an access PIE", Profile: "harness", Knobs: map[string]string{"uplink-qdisc": "pie", "host-qdisc": "fq_codel"}},
				{Label: "host fq_codel in front of an access FIFO", Profile: "harness", Knobs: map[string]string{"uplink-qdisc": "pfifo:limit=1000", "host-qdisc": "fq_codel"}},
				{Label: "FIFO uplink", Profile: "harness", Knobs: map[string]string{"uplink-qdisc": "pfifo:limit=1000"}},
				{Label: "FIFO uplink, TCP paced", Profile: "harness", Transport: "tcp", Knobs: map[string]string{"uplink-qdisc": "pfifo:limit=1000", "pacing": "on"}},
				{Label: "FIFO uplink, TCP unpaced", Profile: "harness", Transport: "tcp", Knobs: map[string]string{"uplink-qdisc": "pfifo:limit=1000", "pacing": "off"}},
				{Label: rerunLabel, Profile: "harness", Replicate: 1, Skip: []string{"atuned", "acoded", "bfixed", "bcodedfc1", "c32rs"}},
			},
			Note: "The TCP rows answer the report's inference about Shadow's unpaced TCP on a FIFO; they matter most for C.",
			Claims: []Claim{
				{Text: "A single FIFO makes the whole message and C faster than the harness's fair share (section 4's gap):", Variant: "FIFO uplink", Arms: []string{"wholend", "c32"}, Direction: -1},
				{Text: "PIE (Linux's parameters) makes them faster than the fair share:", Variant: "PIE uplink, Linux parameters", Arms: []string{"wholend", "c32"}, Direction: -1},
				{Text: "PIE makes them slower than the FIFO (between the two):", Variant: "PIE uplink, Linux parameters", Against: "FIFO uplink", Arms: []string{"wholend", "c32"}, Direction: +1},
				{Text: "A host fq_codel in front of an access FIFO changes nothing:", Variant: "host fq_codel in front of an access FIFO", Against: "FIFO uplink", Direction: 0},
				{Text: "Unpaced TCP on a FIFO makes C faster than paced TCP (the report's inference about Shadow's TCP):", Variant: "FIFO uplink, TCP unpaced", Against: "FIFO uplink, TCP paced", Arms: []string{"c32"}, Direction: -1},
			},
		},
		harnessVsSimnet(),
	}
}

// StudyNames lists the studies.
func StudyNames() []string {
	var out []string
	for _, s := range Studies() {
		out = append(out, s.Name)
	}
	return out
}

// LookupStudy finds a study by name.
func LookupStudy(name string) (Study, error) {
	for _, s := range Studies() {
		if s.Name == name {
			return s, nil
		}
	}
	return Study{}, fmt.Errorf("unknown study %q; valid: %s", name, strings.Join(StudyNames(), ", "))
}

// WithArms restricts the study to the given arms (any catalogue name),
// in the study's order, and its BaseArm, which every arm is compared with;
// an arm the study does not run is an error naming the ones it does.
func (s Study) WithArms(names []string) (Study, error) {
	var keep []string
	for _, n := range names {
		want, err := arms.LookupArm(n)
		if err != nil {
			return Study{}, fmt.Errorf("study %s: %w", s.Name, err)
		}
		found := false
		for _, a := range s.Arms {
			if got, err := arms.LookupArm(a); err == nil && got.Name == want.Name {
				found = true
				if !slices.Contains(keep, a) {
					keep = append(keep, a)
				}
			}
		}
		if !found {
			return Study{}, fmt.Errorf("study %s does not run arm %s; its arms: %s", s.Name, want.Name, strings.Join(s.Arms, ", "))
		}
	}
	out := s
	out.Arms = slices.DeleteFunc(slices.Clone(s.Arms), func(a string) bool { return !slices.Contains(keep, a) && a != s.BaseArm })
	return out, nil
}

// StudyCell is one (variant, arm) of a study with its configurations by
// seed.
type StudyCell struct {
	Variant int
	Arm     arms.Arm
	Seeds   []uint64
	Configs []cell.Config
}

// Cells builds the study's cells. N and seeds replace the study's when
// set; base gives the gossip knobs and the rest; knobs ("name=value")
// override profile knobs in every variant, before the variant's own.
func (s Study) Cells(n int, seeds []uint64, base cell.Config, knobs ...string) ([]StudyCell, error) {
	if n != 0 && s.SizesNodes() {
		return nil, fmt.Errorf("study %s: its variants set their own node counts; run it without --nodes", s.Name)
	}
	if n == 0 {
		n = s.N
	}
	if seeds == nil {
		seeds = s.Seeds
	}
	var out []StudyCell
	for vi, v := range s.Variants {
		skip := map[string]bool{}
		for _, name := range v.Skip {
			arm, err := arms.LookupArm(name)
			if err != nil {
				return nil, fmt.Errorf("study %s, %s: skipped arm: %w", s.Name, v.Label, err)
			}
			skip[arm.Name] = true
		}
		for _, name := range s.Arms {
			arm, err := arms.LookupArm(name)
			if err != nil {
				return nil, fmt.Errorf("study %s: %w", s.Name, err)
			}
			if skip[arm.Name] {
				continue
			}
			sc := StudyCell{Variant: vi, Arm: arm, Seeds: seeds}
			vn := n
			if v.Nodes != 0 {
				vn = v.Nodes
			}
			for _, seed := range seeds {
				cfg, err := s.config(v, arm, vn, seed, base, knobs)
				if err != nil {
					return nil, fmt.Errorf("study %s, %s: %w", s.Name, v.Label, err)
				}
				sc.Configs = append(sc.Configs, cfg)
			}
			out = append(out, sc)
		}
	}
	return out, nil
}

func (s Study) config(v Variant, arm arms.Arm, n int, seed uint64, base cell.Config, knobs []string) (cell.Config, error) {
	prof, err := cell.LookupProfile(v.Profile)
	if err != nil {
		return cell.Config{}, err
	}
	if err := prof.SetKnobs(knobs); err != nil {
		return cell.Config{}, err
	}
	keys := make([]string, 0, len(v.Knobs))
	for k := range v.Knobs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := prof.Set(k, v.Knobs[k]); err != nil {
			return cell.Config{}, err
		}
	}
	c := base
	if len(v.Gossip) > 0 && c.Gossip.D == 0 {
		c.Gossip = cell.StudyGossip() // what Defaults would fill in
	}
	for _, k := range sortedKeys(v.Gossip) {
		if err := c.Gossip.Set(k, v.Gossip[k]); err != nil {
			return cell.Config{}, err
		}
	}
	c.Arm, c.Seed, c.N, c.Profile = arm.Name, seed, n, prof
	c.Payload = s.Payload
	if v.Payload != 0 {
		c.Payload = v.Payload
	}
	c.Transport = v.Transport
	if c.Transport == "" {
		c.Transport = "quic"
	}
	c.Warmup, c.BTimeout, c.BFixed, c.BRulesOff = v.Warmup, v.BTimeout, v.BFixed, v.BRulesOff
	if v.Partitions != 0 {
		c.Partitions = v.Partitions
	}
	c.Replicate = v.Replicate
	if v.Network != "" {
		c.Backend = v.Network
	}
	if v.Encoding != "" {
		enc, err := arms.ParseEncoding(v.Encoding)
		if err != nil {
			return cell.Config{}, err
		}
		c.Encoding = enc
	}
	if s.Degree != 0 {
		c.Degree = s.Degree
	}
	c.Degree = reportDegree(c.Degree, n)
	return c, nil
}

// StudyRow is one (variant, arm) of a study's table.
type StudyRow struct {
	Variant, Arm string
	Seeds        int // seeds with a record
	P50, P99     Value
	P50Range     Spread
	Dups, RxNode float64 // medians across seeds
	QueueDrops   float64 // median across seeds of queue drops, all nodes; NaN when no record counted them
	// ByDeadline is the median across seeds of the share of receivers
	// complete by the deadline (the records' rate@deadline, 3 s).
	ByDeadline float64
	// CwndKiB and LostBefore describe quic-go's connections at the
	// publish (Record.ConnAtPublish): the median across seeds of each
	// cell's median congestion window, and of the packets lost before the
	// publish (setup and warm-up), over every connection end. NaN when no
	// record has them (TCP cells).
	CwndKiB, LostBefore float64
	// Ledger is variant B's claim ledger, the median across seeds of each
	// cell's sums; nil for other arms.
	Ledger *LedgerCounts
	// VsBase is the median of the per-seed differences of the study's
	// statistic (CompareStat) from the baseline variant (or the BaseArm)
	// in percent, with the seeds' range; unset for the baseline.
	VsBase *Paired
	// IsBase marks the rows the others are compared with: the first
	// variant's, or the BaseArm's under each variant.
	IsBase bool
	// BelowBase counts the paired seeds on which the statistic is below
	// the baseline's, censoring included (a censored baseline is above
	// any known value), where the difference itself reads "censored".
	BelowBase int
	// CountsVsBase are the paired differences of the counts
	// (StudyCounts, in that order) from the baseline's; unset for the
	// baseline.
	CountsVsBase []CountDiff
	// PubUplink counts the row's seeds by the publisher's uplink queue
	// (Record.PublisherUplink: "pie (+pub)", "fq_codel (seed)"); nil when
	// no record of the row has a mixed uplink assignment.
	PubUplink map[string]int
}

// LedgerCounts are variant B's claim-ledger counts of a study row, each
// the median across seeds of the cell's sum over its nodes: claims sent,
// claims lapsed, lapses to a peer not yet heard from, and parts that came
// after their claim had lapsed. Unheard and Late are NaN where no record
// counted them (records from before they were counted).
type LedgerCounts struct {
	Claims, Lapsed, Unheard, Late float64
}

// StudyCounts are the counts a study row compares with its baseline, seed
// by seed (StudyRow.CountsVsBase): the share of receivers complete by the
// deadline (rate@3s), duplicates, the publisher's gossip data in MiB
// (publisher_bytes), and queue drops (of records that counted them).
var StudyCounts = []string{"rate@3s", "dups", "publisher MiB", "queue drops"}

// CountDiff is the median across the paired seeds of a count's
// difference from the baseline's (the row's minus the baseline's, in the
// count's unit), with the seeds' range; Seeds is how many seeds paired, 0
// when none did.
type CountDiff struct {
	Median, Lo, Hi float64
	Seeds          int
}

// recordCounts are a record's StudyCounts, NaN where the record has none.
func recordCounts(r *cell.Record) []float64 {
	rate, drops := math.NaN(), math.NaN()
	if r.RateN > 0 {
		rate = float64(r.RateK) / float64(r.RateN)
	}
	if r.QueueDropsCounted() {
		drops = float64(r.Drops["queue"])
	}
	return []float64{rate, float64(r.Dups), float64(r.PubBytes) / (1 << 20), drops}
}

// countDiffs pairs two variants' counts by seed.
func countDiffs(mine, theirs map[int][]float64) []CountDiff {
	out := make([]CountDiff, len(StudyCounts))
	for k := range StudyCounts {
		var d []float64
		for seed, v := range mine {
			if b, ok := theirs[seed]; ok && !math.IsNaN(v[k]) && !math.IsNaN(b[k]) {
				d = append(d, v[k]-b[k])
			}
		}
		if len(d) > 0 {
			out[k] = CountDiff{Median: median(d), Lo: slices.Min(d), Hi: slices.Max(d), Seeds: len(d)}
		}
	}
	return out
}

// Table computes the study's table from records (by Config.Key).
func (s Study) Table(cells []StudyCell, records map[string]*cell.Record) []StudyRow {
	type ref struct {
		variant int
		arm     string // the catalogue name
	}
	bySeed := map[ref]map[int]Value{}           // the compared statistic by seed
	countsBySeed := map[ref]map[int][]float64{} // recordCounts by seed
	var out []StudyRow
	for _, c := range cells {
		row := StudyRow{Variant: s.Variants[c.Variant].Label, Arm: c.Arm.Published}
		var p50, p99 []Value
		var dups, rx, drops, cwnd, lost, rate []float64
		var claims, lapsed, unheard, late []float64
		seedVals := map[int]Value{}
		seedCounts := map[int][]float64{}
		for i, cfg := range c.Configs {
			r := records[cfg.Key()]
			if r == nil {
				continue
			}
			seedCounts[int(c.Seeds[i])] = recordCounts(r)
			if _, mixed := r.QueueAssignments["uplink"]; mixed || len(r.UpQdiscs) > 1 {
				if row.PubUplink == nil {
					row.PubUplink = map[string]int{}
				}
				row.PubUplink[r.PublisherUplink()]++
			}
			v := ptrValue(r.P50S)
			p50 = append(p50, v)
			p99 = append(p99, ptrValue(r.P99S))
			seedVals[int(c.Seeds[i])], _ = RecordStat(s.CompareStat(), r)
			dups = append(dups, float64(r.Dups))
			rx = append(rx, r.RxNodeBytes)
			if r.QueueDropsCounted() {
				drops = append(drops, float64(r.Drops["queue"]))
			}
			if r.RateN > 0 {
				rate = append(rate, float64(r.RateK)/float64(r.RateN))
			}
			if cs := r.ConnAtPublish; cs != nil {
				cwnd = append(cwnd, cs.CwndKiBP50)
				lost = append(lost, float64(cs.PacketsLost))
			}
			if c.Arm.Variant == arms.VariantB {
				claims = append(claims, float64(r.BClaims))
				lapsed = append(lapsed, float64(r.BTimeouts))
				if r.BTimeoutsUnheard != nil && r.BLateAnswers != nil {
					unheard = append(unheard, float64(*r.BTimeoutsUnheard))
					late = append(late, float64(*r.BLateAnswers))
				}
			}
		}
		if len(claims) > 0 {
			row.Ledger = &LedgerCounts{Claims: median(claims), Lapsed: median(lapsed), Unheard: math.NaN(), Late: math.NaN()}
			if len(unheard) > 0 {
				row.Ledger.Unheard, row.Ledger.Late = median(unheard), median(late)
			}
		}
		bySeed[ref{c.Variant, c.Arm.Name}] = seedVals
		countsBySeed[ref{c.Variant, c.Arm.Name}] = seedCounts
		row.CwndKiB, row.LostBefore, row.ByDeadline = math.NaN(), math.NaN(), math.NaN()
		if len(rate) > 0 {
			row.ByDeadline = median(rate)
		}
		if len(cwnd) > 0 {
			row.CwndKiB, row.LostBefore = median(cwnd), median(lost)
		}
		row.Seeds = len(p50)
		if row.Seeds > 0 {
			row.P50, _ = Median(p50)
			row.P99, _ = Median(p99)
			row.P50Range, _ = SeedSpread(p50)
			row.Dups, row.RxNode, row.QueueDrops = median(dups), median(rx), math.NaN()
			if len(drops) > 0 {
				row.QueueDrops = median(drops)
			}
		}
		out = append(out, row)
	}
	base, _ := arms.LookupArm(s.BaseArm)
	for i, c := range cells {
		against := ref{s.baseOf(c.Variant), c.Arm.Name}
		if s.BaseArm != "" {
			against = ref{c.Variant, base.Name}
		}
		if against == (ref{c.Variant, c.Arm.Name}) {
			out[i].IsBase = true
			continue
		}
		mine, theirs := bySeed[ref{c.Variant, c.Arm.Name}], bySeed[against]
		out[i].VsBase = pairedBySeed(mine, theirs)
		out[i].CountsVsBase = countDiffs(countsBySeed[ref{c.Variant, c.Arm.Name}], countsBySeed[against])
		for seed, v := range mine {
			if b, ok := theirs[seed]; ok && v.Less(b) {
				out[i].BelowBase++
			}
		}
	}
	return out
}

// baseOf is the variant variant v is compared with: the nearest one at or
// before it marked Base, or the first.
func (s Study) baseOf(v int) int {
	for i := v; i > 0; i-- {
		if s.Variants[i].Base {
			return i
		}
	}
	return 0
}

// bases reports whether any variant but the first is a baseline.
func (s Study) bases() bool {
	return slices.ContainsFunc(s.Variants[1:], func(v Variant) bool { return v.Base })
}

// pairedBySeed is the paired difference of cand from ref over the seeds
// both have; nil when they share none.
func pairedBySeed(cand, ref map[int]Value) *Paired {
	c, r := map[int]Value{}, map[int]Value{}
	for seed, v := range cand {
		if rv, ok := ref[seed]; ok {
			c[seed], r[seed] = v, rv
		}
	}
	if len(c) == 0 {
		return nil
	}
	pd, err := PairedDiff(c, r)
	if err != nil {
		return nil
	}
	return &pd
}

// CompareAlpha is the level of each side of a comparison's noise test:
// a comparison without a claim reads higher or lower at one-sided p ≤
// CompareAlpha, two-sided 5 % in all.
const CompareAlpha = ClaimAlpha / 2

// Comparison is one variant and arm against its baseline for one
// statistic, by the noise test.
type Comparison struct {
	Variant, Stat string
	ClaimArm
	// Verdict is VerdictHigher, VerdictLower, VerdictNoDifference or
	// VerdictTooFewSeeds at CompareAlpha each way; "" when no seed paired.
	Verdict string
}

// Compare is every variant and arm against its baseline (each variant's
// Base), p50 then p99, by the noise test with every rerun of the
// baseline's cells in the study; a study of arms against its BaseArm has
// none.
func (s Study) Compare(cells []StudyCell, records map[string]*cell.Record) []Comparison {
	if s.BaseArm != "" {
		return nil
	}
	var out []Comparison
	type stat struct {
		bySeed map[statKey]map[int]Value
		reruns map[statKey]map[int][]rerun
		keys   map[statKey]map[int]string
	}
	stats := map[string]stat{}
	for _, st := range []string{"p50", "p99"} {
		r, k := s.rerunsBySeed(cells, records, st)
		stats[st] = stat{s.statBySeed(cells, records, st), r, k}
	}
	for _, c := range cells {
		base := s.baseOf(c.Variant)
		if base == c.Variant {
			continue
		}
		for _, st := range []string{"p50", "p99"} {
			d := stats[st]
			av := pairArm(statKey{c.Variant, c.Arm.Name}, statKey{base, c.Arm.Name}, d.bySeed, d.reruns, d.keys, 0.95)
			av.Arm = c.Arm.Published
			cmp := Comparison{Variant: s.Variants[c.Variant].Label, Stat: st, ClaimArm: av}
			switch {
			case av.Test != nil:
				cmp.Verdict = av.Test.Verdict(CompareAlpha)
			case av.Seeds > 0:
				cmp.Verdict = VerdictTooFewSeeds
			}
			out = append(out, cmp)
		}
	}
	return out
}

// FormatComparison writes one comparison: its statistic, verdict, median
// per-seed difference with its interval, the seeds each way and the
// noise test's p-values and reruns.
func FormatComparison(c Comparison) string {
	if c.Verdict == "" {
		return c.Stat + " not run"
	}
	out := fmt.Sprintf("%s %s, %s", c.Stat, c.Verdict, FormatDiff(c.Paired.Median))
	if c.Coverage > 0 {
		out += fmt.Sprintf(" [%s, %s] (%.3g %% interval)", FormatDiff(Known(c.Lo)), FormatDiff(Known(c.Hi)), 100*c.Coverage)
	}
	out += fmt.Sprintf(" over %d seeds (%d up, %d down)", c.Seeds, c.Up, c.Down)
	if c.Test != nil {
		out += fmt.Sprintf(", p higher %.3g, lower %.3g, %d reruns", c.Test.PHigher, c.Test.PLower, c.Reruns)
	}
	return out
}

// Reading is the study's result in words. For a study of variants: every
// variant and arm against its baseline, p50 and p99, by the noise test
// (Compare), with a count of each verdict; for a study of arms against
// its BaseArm, the arms in order under each variant (readingArms).
func (s Study) Reading(cells []StudyCell, records map[string]*cell.Record) string {
	if s.BaseArm != "" {
		return s.readingArms(s.Table(cells, records))
	}
	var b strings.Builder
	counts := map[string]int{}
	var parts []string
	reruns := false
	missing := 0
	cmps := s.Compare(cells, records)
	for i := 0; i+1 < len(cmps); i += 2 {
		p50, p99 := cmps[i], cmps[i+1]
		if p50.Verdict == "" {
			missing++
			continue
		}
		counts[p50.Verdict]++
		counts[p99.Verdict]++
		reruns = reruns || p50.Reruns > 0
		against := ""
		if s.bases() {
			against = fmt.Sprintf(" against %q", s.Variants[s.baseOf(s.labelIndex(p50.Variant))].Label)
		}
		parts = append(parts, fmt.Sprintf("%s under %q%s: %s; %s", p50.Arm, p50.Variant, against, FormatComparison(p50), FormatComparison(p99)))
	}
	if s.bases() {
		b.WriteString("Each variant against its baseline")
	} else {
		fmt.Fprintf(&b, "Each variant against the baseline %q", s.Variants[0].Label)
	}
	b.WriteString(", p50 and p99, by the noise test (two-sided 5 %):")
	n := 0
	for _, v := range []string{VerdictLower, VerdictHigher, VerdictNoDifference, VerdictTooFewSeeds} {
		if counts[v] > 0 {
			if n > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, " %d %s", counts[v], v)
			n++
		}
	}
	if n == 0 {
		b.WriteString(" nothing paired yet")
	}
	if missing > 0 {
		fmt.Fprintf(&b, " (%d arm-variant pairs have no records yet)", missing)
	}
	b.WriteString(".")
	if len(parts) > 0 {
		b.WriteString(" " + strings.Join(parts, ". ") + ".")
	}
	if len(parts) > 0 && !reruns {
		b.WriteString(" No rerun of the baseline: each effect is weighed against the seeds' pairing alone; rerun the baseline (--reruns) to weigh it against the run-to-run noise.")
	}
	if s.Note != "" {
		b.WriteString(" " + s.Note)
	}
	return b.String()
}

// readingArms is the reading of a study that compares arms with its
// BaseArm under each variant: per variant, the arms in order of the
// compared statistic's median, the base arm's gap to the fastest (the
// median and range of the per-seed ratios) and its share of receivers
// complete by the deadline, the arms not faster than the base on every
// seed; then whether the order of the arms run under every variant is the
// same under all of them.
func (s Study) readingArms(rows []StudyRow) string {
	base, _ := arms.LookupArm(s.BaseArm)
	st := s.CompareStat()
	stat := func(r StudyRow) Value {
		if st == "p99" {
			return r.P99
		}
		return r.P50
	}
	var parts []string
	orders := map[string][]string{} // variant: the arms in order
	count := map[string]int{}       // arm: variants with records
	missing := 0
	for _, v := range s.Variants {
		var baseRow *StudyRow
		var others []StudyRow
		for i, r := range rows {
			switch {
			case r.Variant != v.Label:
			case r.Seeds == 0:
				missing++
			case r.IsBase:
				baseRow = &rows[i]
			default:
				others = append(others, r)
				count[r.Arm]++
			}
		}
		if len(others) == 0 {
			continue
		}
		slices.SortStableFunc(others, func(a, b StudyRow) int { return stat(a).cmp(stat(b)) })
		var order []string
		for _, r := range others {
			order = append(order, fmt.Sprintf("%s %s", r.Arm, fmtSeconds(stat(r))))
			orders[v.Label] = append(orders[v.Label], r.Arm)
		}
		part := fmt.Sprintf("%s: %s", v.Label, strings.Join(order, " < "))
		if baseRow != nil {
			part += fmt.Sprintf("; %s %s %s, %.0f%% of receivers by the deadline", base.Published, st, fmtSeconds(stat(*baseRow)), 100*baseRow.ByDeadline)
			if g, ok := gapToBase(others[0].VsBase); ok {
				part += fmt.Sprintf(", against the fastest arm %s [%s, %s]", FormatDiff(g.Median), FormatDiff(g.Lo), FormatDiff(g.Hi))
			}
			var notFaster []string
			for _, r := range others {
				if r.VsBase == nil || r.BelowBase < len(r.VsBase.PerSeed) {
					notFaster = append(notFaster, r.Arm)
				}
			}
			if len(notFaster) > 0 {
				part += fmt.Sprintf("; not faster than %s on every seed: %s", base.Published, strings.Join(notFaster, ", "))
			}
		}
		parts = append(parts, part)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Arms by median %s under each variant, and %s against them (as a multiple of the fastest arm's %s, per seed). ", st, base.Published, st)
	b.WriteString(strings.Join(parts, ". "))
	if len(parts) > 0 {
		b.WriteString(". ")
	}
	// The order of the arms every variant ran.
	var labels []string
	for _, v := range s.Variants {
		if len(orders[v.Label]) > 0 {
			labels = append(labels, v.Label)
		}
	}
	if len(labels) > 1 {
		common := func(label string) []string {
			return slices.DeleteFunc(slices.Clone(orders[label]), func(a string) bool { return count[a] < len(labels) })
		}
		first := common(labels[0])
		same := true
		for _, l := range labels[1:] {
			same = same && slices.Equal(common(l), first)
		}
		if same {
			fmt.Fprintf(&b, "The order of the arms run at every variant is the same under all %d: %s.", len(labels), strings.Join(first, " < "))
		} else {
			var by []string
			for _, l := range labels {
				by = append(by, fmt.Sprintf("%s %s", l, strings.Join(common(l), " < ")))
			}
			fmt.Fprintf(&b, "The order of the arms run at every variant changes: %s.", strings.Join(by, "; "))
		}
	}
	if missing > 0 {
		fmt.Fprintf(&b, " (%d arm-variant pairs have no records yet.)", missing)
	}
	if s.Note != "" {
		b.WriteString(" " + s.Note)
	}
	return strings.TrimSpace(b.String())
}

// gapToBase turns an arm's per-seed differences from the base arm (in
// percent of the base) into the base's per-seed excess over the arm, in
// percent of the arm (a ratio of 2 or more prints as a multiplier):
// d = (arm − base) / base gives base / arm − 1 = −d / (100 + d).
func gapToBase(p *Paired) (Paired, bool) {
	if p == nil {
		return Paired{}, false
	}
	var gaps []SeedValue
	for _, sv := range p.PerSeed {
		g := CensoredValue()
		if !sv.V.Censored {
			g = Known(-sv.V.V / (100 + sv.V.V) * 100)
		}
		gaps = append(gaps, SeedValue{Seed: sv.Seed, V: g})
	}
	g, err := pairedOf(gaps)
	return g, err == nil
}

func fmtSeconds(v Value) string {
	if v.Censored {
		return "censored"
	}
	return fmt.Sprintf("%.3f s", v.V)
}

// FormatBytes prints a byte count in KiB or MiB.
func FormatBytes(b float64) string {
	switch {
	case math.IsNaN(b):
		return "-"
	case b >= 1<<20:
		return fmt.Sprintf("%.2f MiB", b/(1<<20))
	}
	return fmt.Sprintf("%.0f KiB", b/(1<<10))
}

// FormatCount prints a median count, or "n/a" when nothing counted it
// (NaN).
func FormatCount(n float64) string {
	if math.IsNaN(n) {
		return "n/a"
	}
	return fmt.Sprintf("%.0f", n)
}

// harnessVsSimnet is the harness profile against the network it stands
// for, go-libp2p's simnet, on the same cells: the whole message at 100
// nodes, with the library's gossip emission and without, random (raw) and
// snappy payloads; each simnet variant is compared with the harness
// profile's variant before it.
func harnessVsSimnet() Study {
	off := map[string]string{"Dlazy": "0", "gossip-factor": "0"}
	var vs []Variant
	for _, g := range []struct {
		label  string
		gossip map[string]string
	}{{"library gossip", nil}, {"no gossip emission", off}} {
		for _, enc := range []string{"snappy", "raw"} {
			what := fmt.Sprintf("%s, %s", g.label, enc)
			vs = append(vs,
				Variant{Label: "harness profile, " + what, Profile: "harness", Gossip: g.gossip, Encoding: enc, Base: true},
				Variant{Label: "simnet, " + what, Profile: "harness", Gossip: g.gossip, Encoding: enc, Network: cell.BackendSimnet})
		}
	}
	return Study{
		Name:     "harness-vs-simnet",
		Question: "Does the harness profile reproduce the harness's own network, go-libp2p's simnet, on the same cells, with and without gossip emission, for random and snappy payloads?",
		Arms:     []string{"wholend"}, N: 100, Payload: 1 << 20, Seeds: seeds(7, 16),
		Variants: vs,
		Note:     "Each simnet row is compared with the harness profile's row above it (same gossip and encoding). Run it without --setup-quantum: simnet has none.",
	}
}
