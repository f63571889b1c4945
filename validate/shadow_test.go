package validate

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseShadowLog(t *testing.T) {
	nodes, err := ParseShadowLog("shadow_cell.log", openTestdata(t, "shadow_cell.log"))
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 10 {
		t.Fatalf("%d records, want 10 (nodes 0 to 9; node 10 printed none)", len(nodes))
	}
	// Completion times as each line writes them, in seconds.
	want := []struct {
		line int
		done bool
		t    float64
	}{
		{5, true, 0}, {6, true, 0.612}, {7, true, 0.845}, {9, true, 0.733}, {10, false, 0},
		{11, true, 0.701}, {12, true, 0.998}, {13, true, 3.4}, {14, true, 0.655}, {15, true, 1.12},
	}
	for i, n := range nodes {
		w := want[i]
		if n.Index != i || n.Line != w.line || n.Completed != w.done || n.Transport != "quic" || n.Arm != "c32" {
			t.Errorf("record %d: index %d line %d completed %v %q %q; want index %d line %d completed %v",
				i, n.Index, n.Line, n.Completed, n.Transport, n.Arm, i, w.line, w.done)
		}
		if w.done && !sameValue(n.Completion, Known(w.t)) || !w.done && !n.Completion.Censored {
			t.Errorf("node %d: completion %v, want %v (completed %v)", i, n.Completion, w.t, w.done)
		}
	}
	// Key variants land on the canonical fields.
	n1, n2, n3, n5, n8 := nodes[1], nodes[2], nodes[3], nodes[5], nodes[8]
	if n1.MeshAtPublish != 7 || n1.MeshAtEnd != 8 || n1.TxBytes != 900000 || n1.CtrlTxBytes != 18000 ||
		n1.IHaveTx != 40 || n1.IHaveRx != 38 || n1.IWantTx != 2 || n1.IWantRx != 3 || n1.IDontWantTx != 30 || n1.IDontWantRx != 28 {
		t.Errorf("node 1 = %+v", n1)
	}
	if n2.MeshAtPublish != 8 || n2.Dups != 5 || n2.Rejects != 1 || n2.RxBytes != 1050000 || n2.TxBytes != 700000 ||
		n2.CtrlRxBytes != 21000 || n2.CtrlTxBytes != 19000 || n2.IDontWantTx != 32 || n2.Has("completed") || !n2.Has("completion_s") {
		t.Errorf("node 2 = %+v", n2)
	}
	if n5.Dups != 2 || n5.RxBytes != 1070000 || n5.CtrlRxBytes != 20000 || n5.IDontWantTx != 30 {
		t.Errorf("node 5 (upper-case keys) = %+v", n5)
	}
	if n8.Dups != 3 || n8.RxBytes != 1075000 || n8.CtrlRxBytes != 20000 || n8.IDontWantTx != 30 {
		t.Errorf("node 8 (\"SHADOWSTAT:\" and trailing text) = %+v", n8)
	}
	// Node 3: snapshots parsed, unknown keys kept.
	if len(n3.Snapshots) != 3 || n3.Snapshots[1]["t_ms"] != 200 || n3.Snapshots[2]["rx_bytes"] != 786432 {
		t.Errorf("node 3 snapshots = %v", n3.Snapshots)
	}
	if string(n3.Extra["peer_id"]) != `"12D3KooWExample"` || string(n3.Extra["ihave"]) != "12" || len(n3.Extra) != 2 {
		t.Errorf("node 3 extra = %v", n3.Extra)
	}
}

func TestSummarizeShadowCensored(t *testing.T) {
	nodes, err := ParseShadowLog("shadow_cell.log", openTestdata(t, "shadow_cell.log"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := SummarizeShadow(nodes, ShadowCell{N: 11, Seed: 7, Deadline: 3})
	if err != nil {
		t.Fatal(err)
	}
	// Ten receivers: eight times, node 4 never completed, node 10 printed
	// nothing. Sorted: 0.612 0.655 0.701 0.733 0.845 0.998 1.12 3.4 C C.
	// p50: ceil(5) − 1 = 4 → 0.845; p90: ceil(9) − 1 = 8 → censored;
	// p99: ceil(9.9) − 1 = 9 → censored. Seven complete by 3 s.
	if s.Receivers != 10 || s.Completed != 8 || !sameValue(s.P50, Known(0.845)) || !s.P90.Censored || !s.P99.Censored || !s.Last.Censored || s.RateK != 7 {
		t.Errorf("receiver stats = %+v", s.ReceiverStats)
	}
	// Duplicates 0+3+5+4+0+2+6+1+3+2 = 26; IDONTWANT sent
	// 0+30+32+31+10+30+30+29+30+28 = 250; received bytes over the nine
	// receivers that reported: 9 072 000 / 9 = 1 008 000; control
	// 180 000 / 9 = 20 000.
	if s.Arm != "c32" || s.Transport != "quic" || s.Seed != 7 || s.N != 11 || s.Dups != 26 || s.IDontWantTx != 250 ||
		s.PublisherBytes != 2097152 || s.RxNodeBytes != 1008000 || s.CtrlRxNodeBytes != 20000 {
		t.Errorf("summary = %+v", s.CellSummary)
	}
	if len(s.Missing) != 1 || s.Missing[0] != 10 {
		t.Errorf("missing = %v, want [10]", s.Missing)
	}
	// The same lines as a cell of 12 nodes: node 11 is missing too, and
	// p50 moves to ceil(5.5) − 1 = 5 → 0.998.
	s, _ = SummarizeShadow(nodes, ShadowCell{N: 12, Deadline: 3})
	if !sameValue(s.P50, Known(0.998)) || len(s.Missing) != 2 {
		t.Errorf("N = 12: p50 %v, missing %v", s.P50, s.Missing)
	}
}

func TestSummarizeShadowComplete(t *testing.T) {
	nodes, err := ParseShadowLog("shadow_cell_tcp.log", openTestdata(t, "shadow_cell_tcp.log"))
	if err != nil {
		t.Fatal(err)
	}
	// Nine receivers: sorted 0.62 0.66 0.68 0.71 0.75 0.79 0.81 0.88 0.93.
	// p50 index 4 → 0.75; p90 index 8 → 0.93; p99 index 8 → 0.93.
	// With a 0.8 s deadline six are complete (up to 0.79).
	s, err := SummarizeShadow(nodes, ShadowCell{N: 10, Seed: 7, Deadline: 0.8})
	if err != nil {
		t.Fatal(err)
	}
	if s.Transport != "tcp" || s.Arm != "atuned" || s.Completed != 9 || !sameValue(s.P50, Known(0.75)) || !sameValue(s.P90, Known(0.93)) ||
		!sameValue(s.P99, Known(0.93)) || !sameValue(s.Last, Known(0.93)) || s.RateK != 6 || len(s.Missing) != 0 ||
		s.RxNodeBytes != 1640000 || s.PublisherBytes != 2359296 {
		t.Errorf("summary = %+v", s)
	}
}

func TestSummarizeShadowErrors(t *testing.T) {
	node := func(i int, arm, tr string) ShadowNode {
		return ShadowNode{Line: i + 1, Index: i, Arm: arm, Transport: tr, Completed: true, Completion: Known(1)}
	}
	cases := []struct {
		name  string
		nodes []ShadowNode
		cell  ShadowCell
		want  string
	}{
		{"index beyond N", []ShadowNode{node(0, "a", "quic"), node(5, "a", "quic")}, ShadowCell{N: 3, Deadline: 3}, "node 5 in a cell of 3"},
		{"index twice", []ShadowNode{node(1, "a", "quic"), node(1, "a", "quic")}, ShadowCell{N: 3, Deadline: 3}, "node 1 again"},
		{"two arms", []ShadowNode{node(0, "a", "quic"), node(1, "b", "quic")}, ShadowCell{N: 3, Deadline: 3}, `arm "b"`},
		{"two transports", []ShadowNode{node(0, "a", "quic"), node(1, "a", "tcp")}, ShadowCell{N: 3, Deadline: 3}, `over "tcp"`},
		{"no N", []ShadowNode{node(0, "a", "quic")}, ShadowCell{Deadline: 3}, "cell of 0 nodes"},
		{"no deadline", []ShadowNode{node(0, "a", "quic")}, ShadowCell{N: 3}, "deadline"},
		{"no records", nil, ShadowCell{N: 3, Deadline: 3}, "no node records"},
	}
	for _, c := range cases {
		_, err := SummarizeShadow(c.nodes, c.cell)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

func TestParseShadowLogErrors(t *testing.T) {
	line := func(obj string) string { return "noise\n[n] SHADOWSTAT " + obj + "\n" }
	cases := []struct{ name, input, want string }{
		{"no object", "a\nSHADOWSTAT done\n", `s:2: SHADOWSTAT without a JSON object`},
		{"broken JSON", line(`{"index":1,`), `s:2: SHADOWSTAT: unexpected EOF`},
		{"no index", line(`{"arm":"a","completion_s":1}`), `s:2: SHADOWSTAT: no node index`},
		{"negative index", line(`{"index":-1}`), `key "index": want a count of zero or more`},
		{"two variants of a key", line(`{"index":1,"dups":1,"duplicates":2}`), `keys "duplicates" and "dups" both give dups`},
		{"a time without a unit", line(`{"index":1,"completion_time":845}`), `key "completion_time": a completion time needs its unit`},
		{"completed without a time", line(`{"index":1,"completed":true}`), `key "completed": the node completed but gives no completion time`},
		{"completed with a null time", line(`{"index":1,"completed":true,"completion_s":null}`), `the node completed but gives no completion time`},
		{"a time though not completed", line(`{"index":1,"completed":false,"completion_ms":5}`), `the node did not complete but gives completion time 0.005 s`},
		{"bad completed", line(`{"index":1,"completed":"yes"}`), `key "completed": want true, false, 1 or 0`},
		{"bad count", line(`{"index":1,"rx_bytes":12.5}`), `key "rx_bytes": want a whole number`},
		{"bad string", line(`{"index":1,"arm":7}`), `key "arm": want a string`},
		{"bad snapshots", line(`{"index":1,"snapshots":[{"t_ms":"x"}]}`), `key "snapshots": snapshot 0, "t_ms": want a number`},
		{"snapshots not an array", line(`{"index":1,"snapshots":5}`), `key "snapshots": want an array of objects`},
	}
	for _, c := range cases {
		_, err := ParseShadowLog("s", strings.NewReader(c.input))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to contain %q", c.name, err, c.want)
		}
	}
	// Absent "completed" follows the time: null means not completed.
	nodes, err := ParseShadowLog("s", strings.NewReader(line(`{"index":1,"completion_s":null,"extra":{"a":[1]}}`)))
	if err != nil || len(nodes) != 1 || nodes[0].Completed || !nodes[0].Completion.Censored || !json.Valid(nodes[0].Extra["extra"]) {
		t.Errorf("null time without completed: %+v, %v", nodes, err)
	}
	// A log without records has none.
	if nodes, err := ParseShadowLog("s", strings.NewReader("just\nnoise\n")); err != nil || len(nodes) != 0 {
		t.Errorf("log without records: %v, %v", nodes, err)
	}
}
