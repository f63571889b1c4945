package cell

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// schemaRecord is a record of five nodes as record writes it: the
// receivers complete at 0.5, 0.7 and 1.31 s, one never; the counts were
// read at the window's end; with per-node rows when rows.
func schemaRecord(rows bool) *Record {
	r := &Record{
		Schema: RecordSchema, Key: "k", Arm: "wholend", Profile: "harness", Version: "v", N: 5, WindowS: 8,
		CountsAt: CountsAtWindowEnd, CountsAtS: 8, PubBytes: 1100, PubWireBytes: 1500,
		Knobs: map[string]string{"shaper": "serial"}, Partitions: 1,
	}
	times := []float64{0.5, 0.7, 1.31, math.Inf(1)}
	r.fill(times, 3)
	if rows {
		r.Nodes = append(r.Nodes, NodeRow{Index: 0, Completed: true, DataTx: 1100, WireTx: 1500})
		for i, t := range times {
			row := NodeRow{Index: i + 1}
			if !math.IsInf(t, 1) {
				row.Completed, row.TimeS = true, &t
			}
			r.Nodes = append(r.Nodes, row)
		}
	}
	return r
}

// decode reads a record's JSON as a reader does, migrated.
func decode(t *testing.T, b []byte) *Record {
	t.Helper()
	var r Record
	require.NoError(t, json.Unmarshal(b, &r))
	require.NoError(t, r.Migrate())
	return &r
}

// schema0 is r's JSON as a schema-0 record holds it: without the schema
// and without the fields named in drop, plus what set changes.
func schema0(t *testing.T, r *Record, set map[string]any, drop ...string) []byte {
	t.Helper()
	b, err := json.Marshal(r)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	delete(m, "schema")
	for _, k := range drop {
		delete(m, k)
	}
	for k, v := range set {
		m[k] = v
	}
	b, err = json.Marshal(m)
	require.NoError(t, err)
	return b
}

// TestMigrateSchema0: a schema-0 record means what the schema-1 record
// with its figures means. Without counts_at the counts were read at the
// window's end, and publisher_bytes is the uplink's figure, the data
// coming from node 0's row; completion_us and late_receivers come from
// the rows, or late_receivers from completion_us; what nothing gives
// stays unknown.
func TestMigrateSchema0(t *testing.T) {
	want := schemaRecord(true)
	require.Equal(t, 2, *want.Late) // 1.31 s is past 0.7 + 0.4 s, and the one that never completed
	cur, err := json.Marshal(want)
	require.NoError(t, err)
	require.Contains(t, string(cur), fmt.Sprintf(`"schema":%d`, RecordSchema))
	require.Equal(t, want, decode(t, cur))

	// Written without the schema but with every later field.
	require.Equal(t, want, decode(t, schema0(t, want, nil)))
	// Written before partitions, in either schema: one bubble.
	require.Equal(t, want, decode(t, schema0(t, want, nil, "partitions")))
	b, err := json.Marshal(want)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	delete(m, "partitions")
	b, err = json.Marshal(m)
	require.NoError(t, err)
	require.Equal(t, want, decode(t, b))
	// Without counts_at: publisher_bytes held the uplink's figure.
	old := schema0(t, want, map[string]any{"publisher_bytes": 1500},
		"counts_at", "counts_at_s", "publisher_wire_bytes", "late_receivers", "completion_us")
	require.NotContains(t, string(old), "schema")
	require.Equal(t, want, decode(t, old))

	// No rows: late_receivers from completion_us; the publisher's data
	// is unknown.
	noRows := schemaRecord(false)
	got := decode(t, schema0(t, noRows, map[string]any{"publisher_bytes": 1500}, "counts_at", "counts_at_s", "publisher_wire_bytes", "late_receivers"))
	require.Equal(t, 2, *got.Late)
	require.Equal(t, uint64(1500), got.PubWireBytes)
	require.Zero(t, got.PubBytes)
	require.Equal(t, CountsAtWindowEnd, got.CountsAt)
	require.Equal(t, 8.0, got.CountsAtS)

	// Neither rows nor completion times: both stay unknown.
	got = decode(t, schema0(t, noRows, nil, "late_receivers", "completion_us"))
	require.Nil(t, got.Late)
	_, _, ok := got.CompletionTimes()
	require.False(t, ok)
	require.Equal(t, RecordSchema, got.Schema)

	// A censored p50 leaves no count, in either schema.
	var censored Record
	censored.fill([]float64{0.5, math.Inf(1), math.Inf(1)}, 3)
	censored.Key = "c"
	got = decode(t, schema0(t, &censored, nil))
	require.Nil(t, got.Late)
	require.Equal(t, []int64{500000}, got.CompletionUS)
}

// TestMigrateLastCompletion: a schema-0 record that says when its counts
// were read keeps them as they are.
func TestMigrateLastCompletion(t *testing.T) {
	want := schemaRecord(true)
	want.CountsAt, want.CountsAtS = CountsAtLastCompletion, 1.31
	require.Equal(t, want, decode(t, schema0(t, want, nil)))
}

// TestMigrateSchemaRefused: a schema newer than this build's is refused,
// saying so; so is a negative one. Migrating twice changes nothing.
func TestMigrateSchemaRefused(t *testing.T) {
	r := Record{Schema: 99}
	require.EqualError(t, r.Migrate(), fmt.Sprintf("record schema 99 is newer than this uplink's (%d): update uplink", RecordSchema))
	r.Schema = -1
	require.ErrorContains(t, r.Migrate(), "not a schema version")
	var se *SchemaError
	require.ErrorAs(t, r.Migrate(), &se)

	var old Record
	require.NoError(t, json.Unmarshal(schema0(t, schemaRecord(true), map[string]any{"publisher_bytes": 1500}, "counts_at", "publisher_wire_bytes"), &old))
	require.NoError(t, old.Migrate())
	again := old
	require.NoError(t, again.Migrate())
	require.Equal(t, old, again)
}
