package validate

// Shadow's per-node records (docs/references.md, "Records"): each node prints
// one line `SHADOWSTAT {json}` in its log, with its index, transport, arm,
// whether and when it completed, its mesh size at the publish and at the
// end, duplicates, rejects, received and sent bytes, control bytes received
// and sent, IHAVE / IWANT / IDONTWANT counts, and snapshots every 100 ms
// after the publish.
//
// The study does not give the JSON key names. The keys accepted, matched
// without regard to case, are (canonical name first, then its variants):
//
//	index          index, idx, node, node_index, node_idx
//	transport      transport
//	arm            arm
//	completed      completed, complete, done              true/false or 1/0
//	completion_s   completion_s, completion_time_s, complete_s, completed_s,
//	               t_complete_s, latency_s                seconds from the publish
//	               *_ms and *_ns of the same names         milliseconds, nanoseconds
//	mesh_publish   mesh_publish, mesh_at_publish, mesh_pub, mesh_size_publish,
//	               mesh_size_at_publish
//	mesh_end       mesh_end, mesh_at_end, mesh_final, mesh_size_end,
//	               mesh_size_at_end
//	dups           dups, duplicates, dup, dups_rx, duplicates_rx
//	rejects        rejects, rejected, reject
//	rx_bytes       rx_bytes, bytes_rx, rx, recv_bytes
//	tx_bytes       tx_bytes, bytes_tx, tx, sent_bytes
//	ctrl_rx_bytes  ctrl_rx_bytes, ctrl_rx, control_rx, control_rx_bytes
//	ctrl_tx_bytes  ctrl_tx_bytes, ctrl_tx, control_tx, control_tx_bytes
//	ihave_tx       ihave_tx, ihave_sent, tx_ihave      (and ihave_rx, ihave_recv, rx_ihave)
//	iwant_tx       iwant_tx, iwant_sent, tx_iwant      (and iwant_rx, iwant_recv, rx_iwant)
//	idontwant_tx   idontwant_tx, idontwant_sent, idw_tx, tx_idontwant
//	               (and idontwant_rx, idontwant_recv, idw_rx, rx_idontwant)
//	snapshots      snapshots, snaps, snap              an array of objects of numbers
//
// A completion time must carry its unit in its key: a key such as
// "completion_time" or "latency" is rejected rather than guessed at. Two
// variants of one canonical key in a line are an error. Every other key is
// kept, unparsed, in ShadowNode.Extra (an IHAVE count without a direction,
// "ihave", among them). A node that completed must give its completion
// time; completed, when absent, is read from whether the time is null.
//
// rx_bytes is taken as the node's received data bytes, beside its control
// bytes, as the harness record separates rx_node_bytes from
// ctrl_rx_node_bytes.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// shadowMarker starts a node's record in its log.
const shadowMarker = "SHADOWSTAT"

// ShadowNode is one node's SHADOWSTAT record.
type ShadowNode struct {
	Line int // the line of the log it was read from

	Index     int
	Transport string
	Arm       string

	Completed  bool
	Completion Value // seconds from the publish; censored when not completed

	MeshAtPublish, MeshAtEnd int

	Dups, Rejects            int64
	RxBytes, TxBytes         int64
	CtrlRxBytes, CtrlTxBytes int64
	IHaveTx, IHaveRx         int64
	IWantTx, IWantRx         int64
	IDontWantTx, IDontWantRx int64

	// Snapshots are the 100 ms snapshots after the publish, each a set of
	// named numbers as the node wrote them.
	Snapshots []map[string]float64

	// Extra keeps the keys not in the accepted set, as they were.
	Extra map[string]json.RawMessage

	present map[string]bool
}

// Has reports whether the record carried the canonical key (in any of its
// variants). Absent counters read as zero.
func (n ShadowNode) Has(key string) bool { return n.present[key] }

// shadowKey is an accepted key: its canonical name and, for a completion
// time, the factor to seconds.
type shadowKey struct {
	canon string
	scale float64
}

// shadowKeys maps every accepted variant, lower case, to its canonical key.
var shadowKeys = func() map[string]shadowKey {
	m := make(map[string]shadowKey)
	add := func(canon string, names ...string) {
		for _, n := range names {
			m[n] = shadowKey{canon: canon, scale: 1}
		}
	}
	add("index", "index", "idx", "node", "node_index", "node_idx")
	add("transport", "transport")
	add("arm", "arm")
	add("completed", "completed", "complete", "done")
	for _, base := range []string{"completion", "completion_time", "complete", "completed", "t_complete", "latency"} {
		m[base+"_s"] = shadowKey{"completion_s", 1}
		m[base+"_ms"] = shadowKey{"completion_s", 1e-3}
		m[base+"_ns"] = shadowKey{"completion_s", 1e-9}
	}
	add("mesh_publish", "mesh_publish", "mesh_at_publish", "mesh_pub", "mesh_size_publish", "mesh_size_at_publish")
	add("mesh_end", "mesh_end", "mesh_at_end", "mesh_final", "mesh_size_end", "mesh_size_at_end")
	add("dups", "dups", "duplicates", "dup", "dups_rx", "duplicates_rx")
	add("rejects", "rejects", "rejected", "reject")
	add("rx_bytes", "rx_bytes", "bytes_rx", "rx", "recv_bytes")
	add("tx_bytes", "tx_bytes", "bytes_tx", "tx", "sent_bytes")
	add("ctrl_rx_bytes", "ctrl_rx_bytes", "ctrl_rx", "control_rx", "control_rx_bytes")
	add("ctrl_tx_bytes", "ctrl_tx_bytes", "ctrl_tx", "control_tx", "control_tx_bytes")
	for _, msg := range []string{"ihave", "iwant", "idontwant"} {
		add(msg+"_tx", msg+"_tx", msg+"_sent", "tx_"+msg)
		add(msg+"_rx", msg+"_rx", msg+"_recv", "rx_"+msg)
	}
	add("idontwant_tx", "idw_tx")
	add("idontwant_rx", "idw_rx")
	add("snapshots", "snapshots", "snaps", "snap")
	return m
}()

// shadowUnitless are completion-time keys without a unit: rejected.
var shadowUnitless = []string{"completion", "completion_time", "complete_time", "t_complete", "latency"}

// ParseShadowLog reads every SHADOWSTAT record of a log, in order. Lines
// without the marker are skipped; on a line with it, the first JSON object
// after the marker (past white space and an optional ':' or '=') is the
// record, and anything after the object is ignored. name is the log's name
// in errors, which also give the line and the key.
func ParseShadowLog(name string, r io.Reader) ([]ShadowNode, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 64<<20) // snapshots make long lines
	var nodes []ShadowNode
	for line := 1; sc.Scan(); line++ {
		text := sc.Bytes()
		i := bytes.Index(text, []byte(shadowMarker))
		if i < 0 {
			continue
		}
		rest := bytes.TrimLeft(text[i+len(shadowMarker):], " \t:=")
		if len(rest) == 0 || rest[0] != '{' {
			return nil, fmt.Errorf("validate: %s:%d: %s without a JSON object after it", name, line, shadowMarker)
		}
		var raw json.RawMessage
		if err := json.NewDecoder(bytes.NewReader(rest)).Decode(&raw); err != nil {
			return nil, fmt.Errorf("validate: %s:%d: %s: %w", name, line, shadowMarker, err)
		}
		n, err := parseShadowNode(raw)
		if err != nil {
			return nil, fmt.Errorf("validate: %s:%d: %s: %w", name, line, shadowMarker, err)
		}
		n.Line = line
		nodes = append(nodes, n)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("validate: %s: %w", name, err)
	}
	return nodes, nil
}

// parseShadowNode reads one record object.
func parseShadowNode(raw json.RawMessage) (ShadowNode, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return ShadowNode{}, fmt.Errorf("want a JSON object: %s", abbreviate(raw))
	}
	n := ShadowNode{present: make(map[string]bool)}
	from := make(map[string]string) // canonical key -> the key that gave it
	counts := map[string]*int64{
		"dups": &n.Dups, "rejects": &n.Rejects,
		"rx_bytes": &n.RxBytes, "tx_bytes": &n.TxBytes,
		"ctrl_rx_bytes": &n.CtrlRxBytes, "ctrl_tx_bytes": &n.CtrlTxBytes,
		"ihave_tx": &n.IHaveTx, "ihave_rx": &n.IHaveRx,
		"iwant_tx": &n.IWantTx, "iwant_rx": &n.IWantRx,
		"idontwant_tx": &n.IDontWantTx, "idontwant_rx": &n.IDontWantRx,
	}
	for _, key := range slices.Sorted(maps.Keys(m)) {
		val, lk := m[key], strings.ToLower(key)
		if slices.Contains(shadowUnitless, lk) {
			return ShadowNode{}, fmt.Errorf("key %q: a completion time needs its unit in the key (completion_s, completion_ms, completion_ns)", key)
		}
		sk, ok := shadowKeys[lk]
		if !ok {
			if n.Extra == nil {
				n.Extra = make(map[string]json.RawMessage)
			}
			n.Extra[key] = val
			continue
		}
		if prev, dup := from[sk.canon]; dup {
			return ShadowNode{}, fmt.Errorf("keys %q and %q both give %s", prev, key, sk.canon)
		}
		from[sk.canon] = key
		n.present[sk.canon] = true
		var err error
		switch sk.canon {
		case "index":
			var i int64
			i, err = jsonCount(val)
			n.Index = int(i)
		case "transport":
			n.Transport, err = jsonString(val)
		case "arm":
			n.Arm, err = jsonString(val)
		case "completed":
			n.Completed, err = jsonBool(val)
		case "completion_s":
			n.Completion, err = jsonTime(val, sk.scale)
		case "mesh_publish", "mesh_end":
			var i int64
			i, err = jsonCount(val)
			if sk.canon == "mesh_publish" {
				n.MeshAtPublish = int(i)
			} else {
				n.MeshAtEnd = int(i)
			}
		case "snapshots":
			n.Snapshots, err = parseSnapshots(val)
		default:
			*counts[sk.canon], err = jsonCount(val)
		}
		if err != nil {
			return ShadowNode{}, fmt.Errorf("key %q: %w", key, err)
		}
	}
	if !n.present["index"] {
		return ShadowNode{}, errors.New("no node index (key index)")
	}
	hasTime := n.present["completion_s"] && !n.Completion.Censored
	switch {
	case !n.present["completed"]:
		n.Completed = hasTime
	case n.Completed && !hasTime:
		return ShadowNode{}, fmt.Errorf("key %q: the node completed but gives no completion time", from["completed"])
	case !n.Completed && hasTime:
		return ShadowNode{}, fmt.Errorf("key %q: the node did not complete but gives completion time %v s", from["completed"], n.Completion)
	}
	if !n.Completed {
		n.Completion = CensoredValue()
	}
	return n, nil
}

// parseSnapshots reads an array of objects whose values are numbers.
func parseSnapshots(raw json.RawMessage) ([]map[string]float64, error) {
	var items []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("want an array of objects: %s", abbreviate(raw))
	}
	out := make([]map[string]float64, len(items))
	for i, it := range items {
		out[i] = make(map[string]float64, len(it))
		for _, k := range slices.Sorted(maps.Keys(it)) {
			f, err := jsonNumber(it[k])
			if err != nil {
				return nil, fmt.Errorf("snapshot %d, %q: %w", i, k, err)
			}
			out[i][k] = f
		}
	}
	return out, nil
}

// ShadowCell is what a Shadow cell's lines do not say about it.
type ShadowCell struct {
	N        int     // nodes in the cell, the publisher (node 0) included
	Seed     int     // the cell's seed
	Deadline float64 // seconds; the study's is 3
}

// ShadowSummary is a Shadow cell's per-node records reduced to the cell's
// record.
type ShadowSummary struct {
	CellSummary
	// Missing lists the nodes, publisher included, that printed no record.
	// A missing receiver counts as never completed.
	Missing []int
}

// SummarizeShadow reduces one cell's per-node records to the cell's record:
// the receivers' (nodes 1..N−1) quantiles by the study's rule, rate at the
// deadline, duplicates and IDONTWANT sent summed over every node, the
// publisher's sent bytes, and received data and control bytes averaged over
// the receivers that printed a record. Every record must be of the same arm
// and transport, with an index below N and no index twice.
func SummarizeShadow(nodes []ShadowNode, cell ShadowCell) (ShadowSummary, error) {
	if cell.N < 2 {
		return ShadowSummary{}, fmt.Errorf("validate: shadow cell of %d nodes, need a publisher and a receiver", cell.N)
	}
	if !(cell.Deadline > 0) {
		return ShadowSummary{}, fmt.Errorf("validate: shadow cell deadline %v s, need above zero", cell.Deadline)
	}
	if len(nodes) == 0 {
		return ShadowSummary{}, errors.New("validate: shadow cell with no node records")
	}
	s := ShadowSummary{CellSummary: CellSummary{Arm: nodes[0].Arm, Transport: nodes[0].Transport, Seed: cell.Seed, N: cell.N}}
	byIndex := make([]*ShadowNode, cell.N)
	for i := range nodes {
		n := &nodes[i]
		switch {
		case n.Index >= cell.N:
			return ShadowSummary{}, fmt.Errorf("validate: shadow record of line %d: node %d in a cell of %d nodes", n.Line, n.Index, cell.N)
		case byIndex[n.Index] != nil:
			return ShadowSummary{}, fmt.Errorf("validate: shadow record of line %d: node %d again (line %d)", n.Line, n.Index, byIndex[n.Index].Line)
		case n.Arm != s.Arm || n.Transport != s.Transport:
			return ShadowSummary{}, fmt.Errorf("validate: shadow record of line %d: arm %q over %q, but line %d is arm %q over %q",
				n.Line, n.Arm, n.Transport, nodes[0].Line, s.Arm, s.Transport)
		}
		byIndex[n.Index] = n
		s.Dups += float64(n.Dups)
		s.IDontWantTx += float64(n.IDontWantTx)
	}
	times := make([]Value, 0, cell.N-1)
	var reported int
	for i, n := range byIndex {
		switch {
		case n == nil:
			s.Missing = append(s.Missing, i)
			if i != 0 {
				times = append(times, CensoredValue())
			}
		case i == 0:
			s.PublisherBytes = float64(n.TxBytes)
		default:
			times = append(times, n.Completion)
			s.RxNodeBytes += float64(n.RxBytes)
			s.CtrlRxNodeBytes += float64(n.CtrlRxBytes)
			reported++
		}
	}
	if reported > 0 {
		s.RxNodeBytes /= float64(reported)
		s.CtrlRxNodeBytes /= float64(reported)
	}
	var err error
	if s.ReceiverStats, err = SummarizeReceivers(times, cell.Deadline); err != nil {
		return ShadowSummary{}, err
	}
	return s, nil
}
