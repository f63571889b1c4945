package validate

// The in-process harness's cell records (docs/references.md, "Records"): one
// JSON object per cell, with the fields arm, seed, net, pay, nsize,
// payload_bytes, n, completed, total, last_s, p50_s, p90_s, p99_s,
// deadline_s, rate_k, rate_n, dups, idw_tx, publisher_bytes, rx_node_bytes,
// ctrl_rx_node_bytes, wall_s, max_rss_kb. A null quantile is censored.
//
// Readings this loader fixes where the study gives only the field names:
//
//   - total is the number of receivers, N − 1 (the quantiles are "over the
//     N-1 receivers"), and completed counts those that completed.
//   - p50_s, p90_s and p99_s are null exactly when the study's rule puts the
//     quantile on a receiver that never completed; a record that says
//     otherwise is rejected.
//   - last_s may be null or a number when some receiver never completed
//     (the last completion observed); Summary reports Last censored then.
//   - dups and idw_tx are cell totals; publisher_bytes is what node 0 sent;
//     rx_node_bytes and ctrl_rx_node_bytes are per-receiver means. The report
//     reads dups as a cell total (section 10: "1.7 k at 100 idle"), which no
//     per-node count of 32 KiB duplicates could reach.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
)

// HarnessRecord is one harness cell record.
type HarnessRecord struct {
	Line int // line of the record's opening brace in its file

	Arm   string // the published arm name, e.g. "atuned"
	Seed  int
	Net   string // the scenario, e.g. "home"
	Pay   string // the payload label as the record writes it
	NSize string // the network-size label as the record writes it

	PayloadBytes int64
	N            int // nodes, the publisher included
	Completed    int // receivers that completed
	Total        int // receivers, N − 1

	Last, P50, P90, P99 Value   // seconds from the publish; censored for null
	Deadline            float64 // seconds
	RateK, RateN        int     // receivers complete by Deadline, of RateN

	Dups            float64 // duplicates received, cell total
	IDontWantTx     float64 // IDONTWANT sent, cell total
	PublisherBytes  float64 // bytes sent by the publisher
	RxNodeBytes     float64 // data bytes received per receiver
	CtrlRxNodeBytes float64 // control bytes received per receiver
	WallS           float64 // wall-clock seconds the cell took
	MaxRSSKB        float64 // peak resident memory, KiB

	// Extra keeps keys the study does not list, as they were.
	Extra map[string]json.RawMessage

	present map[string]bool
}

// Has reports whether the record carried the named field (a study field
// name such as "idw_tx"). Absent optional fields read as zero.
func (r HarnessRecord) Has(field string) bool { return r.present[field] }

// harnessRequired are the fields every record must carry.
var harnessRequired = []string{"arm", "seed", "n", "payload_bytes", "completed", "total", "p50_s", "p90_s", "p99_s", "last_s"}

// ParseHarnessRecords reads harness records: a JSON array of records, or a
// stream of records (one per line, or pretty-printed one after another).
// name is the input's name in errors, which also give the record's line and
// the field.
func ParseHarnessRecords(name string, r io.Reader) ([]HarnessRecord, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("validate: %s: %w", name, err)
	}
	raws, err := splitJSONRecords(name, data)
	if err != nil {
		return nil, err
	}
	recs := make([]HarnessRecord, 0, len(raws))
	for _, raw := range raws {
		rec, err := parseHarnessRecord(raw.data)
		if err != nil {
			return nil, fmt.Errorf("validate: %s:%d: harness record: %w", name, raw.line, err)
		}
		rec.Line = raw.line
		recs = append(recs, rec)
	}
	return recs, nil
}

// rawRecord is one JSON value of an input and the line it starts on.
type rawRecord struct {
	line int
	data json.RawMessage
}

// splitJSONRecords splits an input into its JSON values: the elements of a
// top-level array, or the values of a stream.
func splitJSONRecords(name string, data []byte) ([]rawRecord, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	start := skipSpace(data, 0, false)
	array := start < len(data) && data[start] == '['
	if array {
		if _, err := dec.Token(); err != nil {
			return nil, fmt.Errorf("validate: %s:%d: %w", name, lineAt(data, start), err)
		}
	}
	var out []rawRecord
	for {
		at := skipSpace(data, int(dec.InputOffset()), array)
		if at >= len(data) || (array && data[at] == ']') {
			break
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("validate: %s:%d: %w", name, lineAt(data, at), err)
		}
		out = append(out, rawRecord{line: lineAt(data, at), data: raw})
	}
	if array {
		at := skipSpace(data, int(dec.InputOffset()), true)
		if _, err := dec.Token(); err != nil {
			return nil, fmt.Errorf("validate: %s:%d: unterminated array: %w", name, lineAt(data, at), err)
		}
		if rest := skipSpace(data, int(dec.InputOffset()), false); rest < len(data) {
			return nil, fmt.Errorf("validate: %s:%d: data after the array", name, lineAt(data, rest))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("validate: %s: no records", name)
	}
	return out, nil
}

// parseHarnessRecord reads one record object.
func parseHarnessRecord(raw json.RawMessage) (HarnessRecord, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return HarnessRecord{}, fmt.Errorf("want a JSON object: %s", abbreviate(raw))
	}
	rec := HarnessRecord{present: make(map[string]bool)}
	for _, f := range harnessRequired {
		if _, ok := m[f]; !ok {
			return HarnessRecord{}, fmt.Errorf("field %s: missing", f)
		}
	}
	str := func(p *string) func(json.RawMessage) error {
		return func(raw json.RawMessage) (err error) { *p, err = jsonString(raw); return }
	}
	label := func(p *string) func(json.RawMessage) error {
		return func(raw json.RawMessage) (err error) { *p, err = jsonLabel(raw); return }
	}
	count := func(p *int) func(json.RawMessage) error {
		return func(raw json.RawMessage) error { n, err := jsonCount(raw); *p = int(n); return err }
	}
	count64 := func(p *int64) func(json.RawMessage) error {
		return func(raw json.RawMessage) (err error) { *p, err = jsonCount(raw); return }
	}
	num := func(p *float64) func(json.RawMessage) error {
		return func(raw json.RawMessage) error {
			f, err := jsonNumber(raw)
			if err == nil && f < 0 {
				err = fmt.Errorf("want zero or more, got %s", raw)
			}
			*p = f
			return err
		}
	}
	tm := func(p *Value) func(json.RawMessage) error {
		return func(raw json.RawMessage) (err error) { *p, err = jsonTime(raw, 1); return }
	}
	fields := map[string]func(json.RawMessage) error{
		"arm": str(&rec.Arm), "seed": count(&rec.Seed), "net": str(&rec.Net),
		"pay": label(&rec.Pay), "nsize": label(&rec.NSize),
		"payload_bytes": count64(&rec.PayloadBytes), "n": count(&rec.N),
		"completed": count(&rec.Completed), "total": count(&rec.Total),
		"last_s": tm(&rec.Last), "p50_s": tm(&rec.P50), "p90_s": tm(&rec.P90), "p99_s": tm(&rec.P99),
		"deadline_s": num(&rec.Deadline), "rate_k": count(&rec.RateK), "rate_n": count(&rec.RateN),
		"dups": num(&rec.Dups), "idw_tx": num(&rec.IDontWantTx), "publisher_bytes": num(&rec.PublisherBytes),
		"rx_node_bytes": num(&rec.RxNodeBytes), "ctrl_rx_node_bytes": num(&rec.CtrlRxNodeBytes),
		"wall_s": num(&rec.WallS), "max_rss_kb": num(&rec.MaxRSSKB),
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parse, ok := fields[k]
		if !ok {
			if rec.Extra == nil {
				rec.Extra = make(map[string]json.RawMessage)
			}
			rec.Extra[k] = m[k]
			continue
		}
		if err := parse(m[k]); err != nil {
			return HarnessRecord{}, fmt.Errorf("field %s: %w", k, err)
		}
		rec.present[k] = true
	}
	if err := rec.check(); err != nil {
		return HarnessRecord{}, err
	}
	return rec, nil
}

// check tests a record's fields against each other.
func (r HarnessRecord) check() error {
	if r.N < 2 {
		return fmt.Errorf("field n: %d nodes, need a publisher and a receiver", r.N)
	}
	if r.Total != r.N-1 {
		return fmt.Errorf("field total: %d receivers in a cell of n = %d, want n − 1 = %d", r.Total, r.N, r.N-1)
	}
	if r.Completed > r.Total {
		return fmt.Errorf("field completed: %d of %d receivers", r.Completed, r.Total)
	}
	if (r.Has("rate_n") && r.RateK > r.RateN) || r.RateK > r.Completed {
		return fmt.Errorf("field rate_k: %d complete by the deadline, of rate_n %d and %d completed", r.RateK, r.RateN, r.Completed)
	}
	prev, prevName := Known(0), ""
	for _, q := range []struct {
		name string
		p    float64
		v    Value
	}{{"p50_s", 0.5, r.P50}, {"p90_s", 0.9, r.P90}, {"p99_s", 0.99, r.P99}} {
		i, err := QuantileIndex(q.p, r.Total)
		if err != nil {
			return fmt.Errorf("field %s: %w", q.name, err)
		}
		if want := i >= r.Completed; q.v.Censored != want {
			return fmt.Errorf("field %s: %v, but with %d of %d receivers complete the quantile (index %d) is %s",
				q.name, q.v, r.Completed, r.Total, i, map[bool]string{true: "censored (null)", false: "a completion time"}[want])
		}
		if q.v.Censored {
			continue
		}
		if q.v.Less(prev) {
			return fmt.Errorf("field %s: %v is below %s %v", q.name, q.v, prevName, prev)
		}
		prev, prevName = q.v, q.name
	}
	if r.Completed == r.Total && r.Last.Censored {
		return errors.New("field last_s: null, but every receiver completed")
	}
	if r.Last.Less(prev) { // prev: the last known quantile
		return fmt.Errorf("field last_s: %v is below %s %v", r.Last, prevName, prev)
	}
	return nil
}

// Summary returns the record as a cell summary. The harness runs QUIC
// only (the report, section 10), so Transport is "quic". Last is censored
// when some receiver never completed, whatever last_s says.
func (r HarnessRecord) Summary() CellSummary {
	last := r.Last
	if r.Completed < r.Total {
		last = CensoredValue()
	}
	return CellSummary{
		Arm: r.Arm, Transport: "quic", Seed: r.Seed, N: r.N,
		ReceiverStats: ReceiverStats{
			Receivers: r.Total, Completed: r.Completed,
			P50: r.P50, P90: r.P90, P99: r.P99, Last: last,
			Deadline: r.Deadline, RateK: r.RateK,
		},
		Dups: r.Dups, IDontWantTx: r.IDontWantTx, PublisherBytes: r.PublisherBytes,
		RxNodeBytes: r.RxNodeBytes, CtrlRxNodeBytes: r.CtrlRxNodeBytes,
	}
}

// CellSummary is one run of a cell as either backend reports it: the
// receivers' statistics and the cell's byte and message counters.
type CellSummary struct {
	Arm       string
	Transport string
	Seed      int
	N         int // nodes, the publisher included
	ReceiverStats
	Dups            float64 // duplicates received, cell total
	IDontWantTx     float64 // IDONTWANT sent, cell total
	PublisherBytes  float64 // bytes sent by the publisher
	RxNodeBytes     float64 // data bytes received per receiver (mean)
	CtrlRxNodeBytes float64 // control bytes received per receiver (mean)
}

// abbreviate shortens raw JSON for an error message.
func abbreviate(raw []byte) string {
	if len(raw) > 60 {
		return string(raw[:60]) + "…"
	}
	return string(raw)
}
