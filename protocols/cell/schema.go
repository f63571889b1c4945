package cell

import (
	"fmt"
	"math"
	"slices"
)

// RecordSchema is the version of the record's form (Record.Schema) that
// this build writes and reads. A reader brings every record it reads to
// it with Migrate; docs/records.md describes each version.
const RecordSchema = 2

// Migrate brings a record decoded from JSON to RecordSchema, in place.
//
// Schema 0 is a record without the schema field. Migrate makes explicit
// what such a record leaves implicit, so that it means what a schema-1
// record with the same figures means:
//
//   - Without counts_at, the counts were read at the window's end:
//     CountsAt becomes CountsAtWindowEnd and a missing CountsAtS the
//     window (WindowS). Such a record's publisher_bytes is the link-level
//     figure, what the publisher's uplink sent: it moves to PubWireBytes
//     when that is missing, and PubBytes becomes the gossip data the
//     publisher queued, from its per-node row (node 0's data_tx_bytes),
//     or 0 (unknown) when the record has no rows.
//   - Without completion_us while receivers completed, the completion
//     times come from the per-node rows when the record has them, in µs
//     as Record.fill rounds them.
//   - Without late_receivers while the p50 is known, the count is taken
//     by fill's rule (later than the p50 + LateAfter, or never) from the
//     completion times, when the record has them (per-node rows, else
//     completion_us, to the µs).
//
// What a schema-0 record lacks otherwise stays at its zero value.
//
// Schema 1 is a record whose key is of the first form, a hash of the
// whole Config. Migrate re-keys it: its key becomes the hash of the
// KeyFields its own fields give (keyFieldsV1), which is the key today's
// Config of the same cell has. A record that does not describe its cell
// well enough keeps its key, which no current Config has.
//
// A record of a schema newer than RecordSchema is refused: this build
// does not know its fields' meanings. Migrate of a current record changes
// nothing but fields added since with a default: partitions (1).
func (r *Record) Migrate() error {
	switch {
	case r.Schema > RecordSchema || r.Schema < 0:
		return &SchemaError{r.Schema}
	}
	if r.Partitions == 0 {
		r.Partitions = 1 // a record from before partitions: one bubble
	}
	if r.Schema == RecordSchema {
		return nil
	}
	if r.Schema == 0 {
		r.migrate0()
	}
	if k, ok := r.keyFieldsV1(); ok {
		r.Key = k.hash()
	}
	r.Schema = RecordSchema
	return nil
}

// SchemaError is a record whose schema this build cannot use as it is:
// newer than RecordSchema (this build does not know its fields), not a
// version, or older and not migrated.
type SchemaError struct {
	Schema int
}

func (e *SchemaError) Error() string {
	switch {
	case e.Schema > RecordSchema:
		return fmt.Sprintf("record schema %d is newer than this uplink's (%d): update uplink", e.Schema, RecordSchema)
	case e.Schema < 0:
		return fmt.Sprintf("record schema %d is not a schema version (this uplink's is %d)", e.Schema, RecordSchema)
	}
	return fmt.Sprintf("record schema %d is older than this uplink's (%d) and was not migrated (Record.Migrate)", e.Schema, RecordSchema)
}

// migrate0 brings a schema-0 record to schema 1 (Migrate).
func (r *Record) migrate0() {
	if r.CountsAt == "" {
		r.CountsAt = CountsAtWindowEnd
		if r.CountsAtS == 0 {
			r.CountsAtS = r.WindowS
		}
		if r.PubWireBytes == 0 {
			r.PubWireBytes, r.PubBytes = r.PubBytes, 0
			if i := slices.IndexFunc(r.Nodes, func(n NodeRow) bool { return n.Index == 0 }); i >= 0 && r.Nodes[i].DataTx > 0 {
				r.PubBytes = uint64(r.Nodes[i].DataTx)
			}
		}
	}
	if len(r.CompletionUS) == 0 && r.Completed > 0 && len(r.Nodes) > 0 {
		for _, n := range r.Nodes {
			if n.Index != 0 && n.TimeS != nil {
				r.CompletionUS = append(r.CompletionUS, int64(math.Round(*n.TimeS*1e6)))
			}
		}
		slices.Sort(r.CompletionUS)
	}
	if r.Late == nil && r.P50S != nil {
		if done, receivers, ok := r.CompletionTimes(); ok && receivers >= len(done) {
			late := receivers - len(done) // never completed
			for _, t := range done {
				if t > *r.P50S+LateAfter {
					late++
				}
			}
			r.Late = &late
		}
	}
}
