package cell

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/queues"
)

// Quantile applies the study's rule to the completion times (seconds from
// the publish) of the N−1 receivers, with +Inf for a receiver that never
// completed: sort, take the element at index ceil(p × (N−1)) − 1. A
// quantile that falls on a censored receiver is censored: ok is false.
func Quantile(times []float64, p float64) (v float64, ok bool) {
	if len(times) == 0 {
		return 0, false
	}
	s := slices.Clone(times)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	i = min(max(i, 0), len(s)-1)
	if math.IsInf(s[i], 1) {
		return 0, false
	}
	return s[i], true
}

// NodeRow is one node's view of a cell run (--per-node).
type NodeRow struct {
	Index       int      `json:"index"`
	Completed   bool     `json:"completed"`
	TimeS       *float64 `json:"time_s"`
	Dups        int      `json:"dups"`
	MeshPublish int      `json:"mesh_at_publish"`
	MeshEnd     int      `json:"mesh_at_end"`
	DataRx      int64    `json:"data_rx_bytes"`
	DataTx      int64    `json:"data_tx_bytes"`
	CtrlRx      int64    `json:"ctrl_rx_bytes"`
	CtrlTx      int64    `json:"ctrl_tx_bytes"`
	PktRx       uint64   `json:"packets_rx"`
	PktTx       uint64   `json:"packets_tx"`
	WireRx      uint64   `json:"wire_rx_bytes"`
	WireTx      uint64   `json:"wire_tx_bytes"`
	IHaveTx     int      `json:"ihave_tx"`
	IHaveRx     int      `json:"ihave_rx"`
	IWantTx     int      `json:"iwant_tx"`
	IWantRx     int      `json:"iwant_rx"`
	IDontWantTx int      `json:"idontwant_tx"`
	IDontWantRx int      `json:"idontwant_rx"`
}

// QueueSummary sums one direction's queue statistics over every node.
type QueueSummary struct {
	Enqueued   uint64            `json:"enqueued"`
	Dequeued   uint64            `json:"dequeued"`
	Drops      map[string]uint64 `json:"drops"`
	CEMarks    uint64            `json:"ce_marks"`
	MaxBacklog int               `json:"max_backlog_packets"`
	DelayP50   float64           `json:"delay_p50_ms"`
	DelayP99   float64           `json:"delay_p99_ms"`
	DelayMax   float64           `json:"delay_max_ms"`
	DelayMean  float64           `json:"delay_mean_ms"`
}

func summarize(stats []*queues.Stats) QueueSummary {
	var q QueueSummary
	var h queues.Histogram
	q.Drops = map[string]uint64{}
	for _, s := range stats {
		q.Enqueued += s.Enqueued
		q.Dequeued += s.Dequeued
		for r := queues.DropReason(0); r < queues.NumDropReasons; r++ {
			q.Drops[r.String()] += s.Drops[r]
		}
		q.CEMarks += s.CEMarks
		q.MaxBacklog = max(q.MaxBacklog, s.MaxLen)
		h.Merge(&s.Sojourn)
	}
	ms := func(t des.Time) float64 { return float64(t) / 1e6 }
	q.DelayP50, q.DelayP99, q.DelayMax, q.DelayMean = ms(h.Quantile(0.5)), ms(h.Quantile(0.99)), ms(h.Max()), ms(h.Mean())
	return q
}

// QueueAssignment is one direction's queue assignment in a record
// (Record.QueueAssignments).
type QueueAssignment struct {
	// Nodes maps each spec to its nodes: indices and ranges of indices,
	// ascending ("0-3,7,12-40", FormatNodeRanges).
	Nodes map[string]string `json:"nodes"`
	// Publisher is the publisher's spec; PublisherBy says what chose it:
	// PinSeed (a mix's seeded shuffle), PinIn or PinOut (a mix's pin,
	// spec@share+pub or spec@share-pub), PinFile (a queue assignment
	// file's node list) or PinEvery (the one spec before a file's
	// exceptions for other nodes).
	Publisher   string `json:"publisher"`
	PublisherBy string `json:"publisher_by"`
	// Classes sums the queue statistics over each spec's nodes, as
	// Record.Queues sums them over all the nodes: its counts (enqueued,
	// dequeued, drops, CE marks) add up over the classes to the
	// direction's; the delays are each class's own.
	Classes map[string]QueueSummary `json:"classes,omitempty"`
}

// queueAssignment is the assignment of a direction whose nodes have more
// than one spec (nil otherwise): specs and stats are per node, by how
// the publisher's spec was chosen (QdiscMap.resolveBy).
func queueAssignment(specs []string, by string, stats []*queues.Stats) *QueueAssignment {
	if len(countSpecs(specs)) < 2 {
		return nil
	}
	nodes := map[string][]int{}
	for i, s := range specs {
		nodes[s] = append(nodes[s], i)
	}
	a := &QueueAssignment{
		Nodes:     map[string]string{},
		Publisher: specs[publisherNode], PublisherBy: by,
	}
	if len(stats) == len(specs) {
		a.Classes = map[string]QueueSummary{}
	}
	for s, idx := range nodes {
		a.Nodes[s] = FormatNodeRanges(idx)
		if a.Classes != nil {
			class := make([]*queues.Stats, 0, len(idx))
			for _, i := range idx {
				if stats[i] != nil {
					class = append(class, stats[i])
				}
			}
			a.Classes[s] = summarize(class)
		}
	}
	return a
}

// setAssignments fills QueueAssignments and PublisherNode from each
// node's uplink and downlink specs, how the publisher's were chosen, and
// each node's queue statistics (nil where not read).
func (r *Record) setAssignments(up, down []string, upBy, downBy string, upStats, downStats []*queues.Stats) {
	r.QueueAssignments, r.PublisherNode = nil, nil
	for _, d := range []struct {
		name  string
		specs []string
		by    string
		stats []*queues.Stats
	}{{"uplink", up, upBy, upStats}, {"downlink", down, downBy, downStats}} {
		if a := queueAssignment(d.specs, d.by, d.stats); a != nil {
			if r.QueueAssignments == nil {
				r.QueueAssignments = map[string]QueueAssignment{}
				r.PublisherNode = new(int)
				*r.PublisherNode = publisherNode
			}
			r.QueueAssignments[d.name] = *a
		}
	}
}

// PublisherUplink names the publisher's uplink queue as the tables show
// it: under a mixed assignment its spec and what chose it ("pie (+pub)",
// "pie (seed)"), else the one spec every uplink has; "?" for a mix
// recorded without its assignment (versions before queue_assignments).
func (r *Record) PublisherUplink() string {
	if a, ok := r.QueueAssignments["uplink"]; ok {
		return a.Publisher + " (" + a.PublisherBy + ")"
	}
	if len(r.UpQdiscs) == 1 {
		for spec := range r.UpQdiscs {
			return spec
		}
	}
	return "?"
}

// FormatNodeRanges writes node indices, ascending and each once, as
// indices and ranges: 0 1 2 3 7 12 13 14 is "0-3,7,12-14".
func FormatNodeRanges(idx []int) string {
	var b strings.Builder
	for k := 0; k < len(idx); {
		j := k
		for j+1 < len(idx) && idx[j+1] == idx[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(idx[k]))
		if j > k {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(idx[j]))
		}
		k = j + 1
	}
	return b.String()
}

// ParseNodeRanges reads what FormatNodeRanges writes, for n nodes: a
// comma-separated list of indices ("7") and ranges ("12-40", first below
// last), ascending without overlap, each index below n.
func ParseNodeRanges(s string, n int) ([]int, error) {
	if s == "" {
		return nil, errors.New(`no nodes: want indices and ranges such as "0-3,7"`)
	}
	var idx []int
	next := 0 // the least index the next item may start at
	for _, item := range strings.Split(s, ",") {
		loS, hiS, isRange := strings.Cut(item, "-")
		lo, err := parseNodeIndex(loS, n)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", item, err)
		}
		hi := lo
		if isRange {
			if hi, err = parseNodeIndex(hiS, n); err != nil {
				return nil, fmt.Errorf("%q: %w", item, err)
			}
			if hi <= lo {
				return nil, fmt.Errorf("%q: a range's last index must be above its first", item)
			}
		}
		if lo < next {
			return nil, fmt.Errorf("%q: not after the item before it (ascending, without overlap)", item)
		}
		for i := lo; i <= hi; i++ {
			idx = append(idx, i)
		}
		next = hi + 1
	}
	return idx, nil
}

// parseNodeIndex reads a node index, 0 to n − 1, in plain decimal.
func parseNodeIndex(s string, n int) (int, error) {
	i, err := strconv.Atoi(s)
	if err != nil || i < 0 || strconv.Itoa(i) != s {
		return 0, fmt.Errorf("%q is not a node index", s)
	}
	if i >= n {
		return 0, fmt.Errorf("node %d is beyond the %d nodes (0 to %d)", i, n, n-1)
	}
	return i, nil
}

// WireRecord is an arm's wire form (study-model.md, "Arms"): records
// with different wire forms are not compared.
type WireRecord struct {
	Messages int `json:"messages"`
	Unit     int `json:"unit"`
	IDWidth  int `json:"id_width"`
	// Encoding is the units' wire encoding ("" raw, or snappy).
	Encoding string `json:"encoding,omitempty"`
}

// Phases are wall seconds spent in each phase of a cell run.
type Phases struct {
	Hosts    float64 `json:"hosts_s"`
	Dial     float64 `json:"dial_s"`
	Mesh     float64 `json:"mesh_s"`
	Warmup   float64 `json:"warmup_s,omitempty"` // the warm-up, its gap and the background's lead-in
	Delivery float64 `json:"delivery_s"`
	Teardown float64 `json:"teardown_s"`
}

// When a record's counts were read (Record.CountsAt).
const (
	CountsAtLastCompletion = "last completion"
	CountsAtWindowEnd      = "window end"
)

// Host is a machine that ran cells: its logical CPUs (the ones the
// process may use) and its memory (MemTotal).
type Host struct {
	CPUs   int     `json:"cpus"`
	MemGiB float64 `json:"mem_gib"` // to 0.1 GiB; 0 where unknown
}

// String names the host as the resource page does: "16 CPUs, 125 GiB".
func (h Host) String() string {
	if h.MemGiB <= 0 {
		return fmt.Sprintf("%d CPUs", h.CPUs)
	}
	return fmt.Sprintf("%d CPUs, %.0f GiB", h.CPUs, h.MemGiB)
}

// Record is one cell run, with the harness record's fields
// (study-model.md, "Records") and what uplink adds: the profile and every
// knob, the transport, the version, wall time, phases and counts.
// docs/records.md describes every field; a reader brings a record to the
// current schema with Migrate.
type Record struct {
	// Schema is the version of the record's form: RecordSchema when
	// written; 0 (absent) in a record written without it, which Migrate
	// brings to RecordSchema.
	Schema int `json:"schema"`
	// Unknown is, in a record read from a line, the first field of that
	// line this build does not know (a newer build wrote it), or "".
	// Every reader takes such a record without the field.
	Unknown string `json:"-"`
	// RawLine is, in a record read with an Unknown field, the line it
	// was read from: writers write such a record as that line
	// (sweep.MarshalRecord), so the field survives a merge or an export.
	// Such a record is passed on as read, never changed.
	RawLine      []byte   `json:"-"`
	Key          string   `json:"key"` // Config.Key of the run
	Arm          string   `json:"arm"` // the published name (harness records)
	Seed         uint64   `json:"seed"`
	Net          string   `json:"net"`
	Pay          string   `json:"pay"`
	NSize        int      `json:"nsize"`
	PayloadBytes int      `json:"payload_bytes"`
	N            int      `json:"n"`
	Degree       int      `json:"degree"`
	Completed    int      `json:"completed"`
	Total        int      `json:"total"`
	LastS        *float64 `json:"last_s"`
	P50S         *float64 `json:"p50_s"`
	P90S         *float64 `json:"p90_s"`
	P99S         *float64 `json:"p99_s"`
	DeadlineS    float64  `json:"deadline_s"`
	RateK        int      `json:"rate_k"`
	RateN        int      `json:"rate_n"`
	Dups         int      `json:"dups"`
	IdwTx        int      `json:"idw_tx"`
	PubBytes     uint64   `json:"publisher_bytes"`      // gossip data the publisher queued (the harness's sense)
	PubWireBytes uint64   `json:"publisher_wire_bytes"` // everything its uplink sent, headers and control included
	// CountsAt says when the counts (duplicates, bytes, drops, queues)
	// were read: CountsAtLastCompletion, as the study's harness reads
	// them, or CountsAtWindowEnd when a receiver never completed. A
	// schema-0 record without it counted to the window's end (Migrate).
	CountsAt    string  `json:"counts_at,omitempty"`
	CountsAtS   float64 `json:"counts_at_s,omitempty"` // virtual seconds from the publish
	RxNodeBytes float64 `json:"rx_node_bytes"`
	CtrlRxNode  float64 `json:"ctrl_rx_node_bytes"`
	WallS       float64 `json:"wall_s"`
	MaxRSSKB    int64   `json:"max_rss_kb"`
	// HugePages is the host's transparent huge page mode when the cell
	// ran ("always", "madvise", "never"; empty where unknown): with
	// "always" the same cell takes less CPU and more memory.
	HugePages string `json:"huge_pages,omitempty"`
	// GOGC is the collector's setting in the process that ran the cell (0
	// where unknown): a lower one holds less memory for more CPU.
	GOGC int `json:"gogc,omitempty"`
	// GOMAXPROCS is the process's GOMAXPROCS while the mesh forms and
	// the message is delivered (--gomaxprocs; 0 where unknown): with a
	// second core a cell near its soft memory limit collects beside the
	// simulation instead of in turn with it.
	GOMAXPROCS int `json:"gomaxprocs,omitempty"`
	// MemLimit is the soft memory limit (GOMEMLIMIT, --memlimit) of the
	// process that ran the cell, in bytes; 0 where it had none or where
	// unknown. Near it the collector works harder and holds the peak
	// (MaxRSSKB) down.
	MemLimit int64 `json:"mem_limit,omitempty"`
	// Host is the machine that ran the cell (nil where unknown): its wall
	// time and peak are read against it.
	Host *Host `json:"host,omitempty"`

	// Late counts the receivers that completed more than LateAfter past
	// the p50, or never (section 5's "late receivers"); nil when the p50
	// is censored, and in a schema-0 record without it whose completion
	// times Migrate could not read (the count is then unknown).
	Late *int `json:"late_receivers,omitempty"`
	// CompletionUS holds the completion times of the receivers that
	// completed, in µs after the publish, ascending; the other Total −
	// len receivers are censored. Enough for a CDF or any quantile
	// without per-node rows (a few KiB at 500 nodes). Absent when no
	// receiver completed, and in a schema-0 record without it and without
	// per-node rows to take it from (Migrate): CompletionTimes then says
	// the times are unknown.
	CompletionUS []int64 `json:"completion_us,omitempty"`

	ArmName  string     `json:"arm_name"` // the catalogue name (protocols/arms)
	Policy   string     `json:"policy"`   // forwarding: stock, stock batch, or the phase policy
	Topics   int        `json:"topics"`
	Wire     WireRecord `json:"wire_form"`
	Verified int        `json:"verified,omitempty"` // receivers whose rebuilt payload matched (--verify)

	// Variant B's claim ledger, summed over the nodes.
	BClaims   int `json:"b_claims,omitempty"`
	BTimeouts int `json:"b_timeouts,omitempty"`
	BStrikes  int `json:"b_strikes,omitempty"`
	// BTimeoutsUnheard: of BTimeouts, the claims to a peer that had
	// answered none before; BLateAnswers: parts that came from a peer
	// after its claim had lapsed (partial.Stats). Set, zero included, on
	// variant B's cells; nil on others and on records from before they
	// were counted.
	BTimeoutsUnheard *int `json:"b_timeouts_unheard,omitempty"`
	BLateAnswers     *int `json:"b_late_answers,omitempty"`
	// Variant B's timeout knobs when changed from the arm's.
	BTimeoutS float64 `json:"b_timeout_s,omitempty"`
	BFixed    bool    `json:"b_fixed,omitempty"`
	// BRulesOff lists the ledger rules switched off (partial.RulesOff).
	BRulesOff string `json:"b_rules_off,omitempty"`

	// The warm-up and background-load modes, when on.
	Warmup          string  `json:"warmup,omitempty"`
	WarmupGapS      float64 `json:"warmup_gap_s,omitempty"`
	WarmupS         float64 `json:"warmup_s,omitempty"`       // virtual seconds the warm-up took
	WarmupMissing   int     `json:"warmup_missing,omitempty"` // receivers without the warm-up payload
	Background      string  `json:"background,omitempty"`
	BackgroundLeadS float64 `json:"background_lead_s,omitempty"`

	// Backend is the network the cell ran on: absent for uplink's model,
	// BackendSimnet for simnet; NotModelled lists what that backend does
	// not model (SimnetNotModelled).
	Backend     string   `json:"backend,omitempty"`
	NotModelled []string `json:"not_modelled,omitempty"`

	Profile    string            `json:"profile"`
	Knobs      map[string]string `json:"knobs"`
	UpQdiscs   map[string]int    `json:"uplink_qdiscs"`
	DownQdiscs map[string]int    `json:"downlink_qdiscs"`

	// QueueAssignments holds, by direction ("uplink", "downlink"), the
	// assignment of each direction whose nodes have more than one queue
	// spec (a mix, or a queue assignment file): which nodes got which
	// spec, the publisher's, and each spec's queue statistics. Absent
	// where every node has the same spec, and in records of versions
	// that did not record it. PublisherNode is the publisher's node
	// index, given with them.
	QueueAssignments map[string]QueueAssignment `json:"queue_assignments,omitempty"`
	PublisherNode    *int                       `json:"publisher_node,omitempty"`

	Gossip    map[string]string `json:"gossip"`
	Transport string            `json:"transport"`
	Latency   string            `json:"latency"`
	WindowS   float64           `json:"window_s"`
	// SetupQuantumS is the setup phases' quantum (Config.SetupQuantum),
	// 0 when setup ran exact.
	SetupQuantumS float64 `json:"setup_quantum_s"`
	// Partitions is how many partitions the cell ran in (Config.Partitions;
	// 1: one bubble), and PartitionWindowMS their window.
	Partitions        int     `json:"partitions"`
	PartitionWindowMS float64 `json:"partition_window_ms,omitempty"`
	// Replicate is Config.Replicate: 0 for the first run of a cell.
	Replicate  int    `json:"replicate,omitempty"`
	Version    string `json:"version"`
	MeshStable bool   `json:"mesh_stable"`
	// MeshLatencyMS is the mean one-way latency of the mesh links at the
	// publish; GraphLatencyMS that of the dial graph's edges.
	MeshLatencyMS  float64 `json:"mesh_latency_ms"`
	GraphLatencyMS float64 `json:"graph_latency_ms"`
	// FirstHeartbeatMS is the virtual time from the subscribe instant to
	// the routers' first heartbeat after it, which grafts the peers whose
	// subscriptions have arrived by then (100 with router-start=after-dial;
	// with before-dial, the heartbeat's phase after the dial).
	FirstHeartbeatMS float64 `json:"first_heartbeat_ms"`
	PublishAtS       float64 `json:"publish_at_s"`
	// NextHeartbeatMS is the virtual time from the publish to the
	// routers' next heartbeat (at the publish itself counts): the first
	// gossip (IHAVE) after the publish, which a pulling arm's receivers
	// answer with their first requests; nil where a record lacks it
	// (versions that did not record it).
	NextHeartbeatMS *float64 `json:"next_heartbeat_ms,omitempty"`
	// PublisherMeshes is the publisher's mesh size on each topic at the
	// publish, for arms on several topics (variant C): a unit published
	// on a topic whose mesh is empty reaches no one until the heartbeat
	// gossips it. EmptyMeshNodes counts the nodes with an empty mesh on
	// some topic at the publish. Both absent in records of versions that
	// did not record them, and for one-topic arms (mesh_at_publish).
	PublisherMeshes []int `json:"publisher_meshes,omitempty"`
	EmptyMeshNodes  *int  `json:"empty_mesh_nodes,omitempty"`
	// UnitFirstMS is, for arms of several units sent as gossip messages
	// (variants A and C), each unit's first delivery at any receiver, in
	// ms after the publish (null: no receiver had it when the counts were
	// read); CompletingUnits counts, per unit, the receivers whose
	// completion it made (their last needed unit). A unit that set out
	// late shows in both. Absent for the whole message, variant B, and in
	// records of versions that did not record them.
	UnitFirstMS     []*float64 `json:"unit_first_ms,omitempty"`
	CompletingUnits []int      `json:"completing_units,omitempty"`
	Phases          Phases     `json:"phases"`
	// PhaseCPU is the CPU time the cell's process used in each phase
	// (des.BusyCPU: user and system): over Phases, the cores each phase
	// used.
	PhaseCPU   Phases `json:"phase_cpu_s"`
	SimPackets uint64 `json:"sim_packets"`
	// CrossPackets are the simulated packets that crossed from one
	// partition to another (split cells only).
	CrossPackets uint64 `json:"cross_packets,omitempty"`
	// ConnAtPublish is quic-go's view of the connections at the publish
	// (QUIC cells).
	ConnAtPublish *ConnState        `json:"conn_at_publish,omitempty"`
	SimBytes      uint64            `json:"sim_bytes"`
	Drops         map[string]uint64 `json:"drops"`
	// Queues sums each direction's queue statistics over the nodes, over
	// the whole run (mesh formation included).
	Queues   map[string]QueueSummary `json:"queues"`
	UsPerPkt float64                 `json:"wall_us_per_packet"`
	Nodes    []NodeRow               `json:"nodes,omitempty"`
}

// fill computes the summary fields from the receivers' completion times.
func (r *Record) fill(times []float64, deadline float64) {
	r.Total = len(times)
	r.DeadlineS = deadline
	for _, t := range times {
		if !math.IsInf(t, 1) {
			r.Completed++
			if t <= deadline {
				r.RateK++
			}
		}
	}
	r.RateN = r.Total
	q := func(p float64) *float64 {
		if v, ok := Quantile(times, p); ok {
			return &v
		}
		return nil
	}
	r.P50S, r.P90S, r.P99S, r.LastS = q(0.5), q(0.9), q(0.99), q(1)
	r.CompletionUS = nil
	for _, t := range times {
		if !math.IsInf(t, 1) {
			r.CompletionUS = append(r.CompletionUS, int64(math.Round(t*1e6)))
		}
	}
	slices.Sort(r.CompletionUS)
	if r.P50S != nil {
		late := 0
		for _, t := range times {
			if t > *r.P50S+LateAfter {
				late++ // +Inf, a receiver that never completed, counts
			}
		}
		r.Late = &late
	}
}

// CompletionTimes returns the receivers' completion times in seconds
// after the publish, ascending, for those that completed, and the number
// of receivers: from the per-node rows when the record has them, else from
// CompletionUS. ok is false for a record with neither.
func (r *Record) CompletionTimes() (done []float64, receivers int, ok bool) {
	if len(r.Nodes) > 0 {
		for _, n := range r.Nodes {
			if n.Index == 0 {
				continue // the publisher
			}
			receivers++
			if n.TimeS != nil {
				done = append(done, *n.TimeS)
			}
		}
		slices.Sort(done)
		return done, receivers, true
	}
	if len(r.CompletionUS) != r.Completed {
		return nil, 0, false // neither rows nor times (with none completed, none are missing)
	}
	for _, us := range r.CompletionUS {
		done = append(done, float64(us)/1e6)
	}
	return done, r.Total, true
}

// LateAfter is how far past the p50 a receiver counts as late (report
// section 5: "late receivers (> p50 + 0.4 s)").
const LateAfter = 0.4
