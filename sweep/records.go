package sweep

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/uplinksim/uplink/protocols/cell"
)

// A records file is JSON Lines: one cell.Record a line.

// Line errors of a records file.
var (
	// ErrBlankLine is a line with nothing on it (skipped).
	ErrBlankLine = errors.New("blank line")
	// ErrRecordCut is the start of a record that ends early: what a
	// writer killed mid-line leaves.
	ErrRecordCut = errors.New("a record cut short (a writer stopped mid-line)")
	// ErrBOM is a byte-order mark at the start of the file.
	ErrBOM = errors.New("starts with a UTF-8 byte-order mark; a records file is JSON Lines without one (remove the first 3 bytes)")
)

var utf8BOM = []byte{0xef, 0xbb, 0xbf}

// ParseRecord reads one line of a records file: a cell record brought to
// the current schema (cell.Record.Migrate), naming in Unknown the first
// field of the line this build does not know, or ErrBlankLine, or
// ErrRecordCut, or why the line is not a record (a record of a schema
// newer than this build's among them).
func ParseRecord(line []byte) (*cell.Record, error) {
	if len(bytes.TrimSpace(line)) == 0 {
		return nil, ErrBlankLine
	}
	// Strictly first, so that a line of known fields is decoded once;
	// only a line with an unknown field is decoded again, leniently.
	rec, dec, err := decodeRecord(line, true)
	unknown := unknownField(err)
	if unknown != "" {
		rec, dec, err = decodeRecord(line, false)
	}
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, ErrRecordCut
		}
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("more than one JSON value on the line")
	}
	if rec.Key == "" {
		return nil, errors.New("no cell key")
	}
	if err := rec.Migrate(); err != nil {
		return nil, err
	}
	rec.Unknown = unknown
	return rec, nil
}

// decodeRecord decodes the first JSON value of line as a record; strict
// refuses a field cell.Record does not have, at any depth.
func decodeRecord(line []byte, strict bool) (*cell.Record, *json.Decoder, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	if strict {
		dec.DisallowUnknownFields()
	}
	var rec cell.Record
	err := dec.Decode(&rec)
	return &rec, dec, err
}

// unknownField is the field a strict decode's error names as unknown, or
// "" for any other error or none.
func unknownField(err error) string {
	if err == nil {
		return ""
	}
	// encoding/json names the field only in its message.
	name, ok := strings.CutPrefix(err.Error(), "json: unknown field ")
	if !ok {
		return ""
	}
	if u, err := strconv.Unquote(name); err == nil {
		return u
	}
	return name
}

// MarshalRecord encodes a record as one line's JSON. It refuses a record
// read with a field this build does not know (cell.Record.Unknown): the
// line written would silently lack it.
func MarshalRecord(r *cell.Record) ([]byte, error) {
	if r.Unknown != "" {
		return nil, fmt.Errorf("record %s (arm %s, profile %s, seed %d) holds a field this build does not know, %q (uplink %s wrote it): written again it would lose it; use a build at least as new as that one",
			r.Key, r.Arm, r.Profile, r.Seed, r.Unknown, r.Version)
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("record %s: %w", r.Key, err)
	}
	return b, nil
}

// ScanRecords reads a records file line by line and calls visit with each
// line's number and its record, or with the line's error (ErrBOM,
// ErrBlankLine, ErrRecordCut or a parse error). An error visit returns
// ends the scan and is returned; so is a read error.
func ScanRecords(r io.Reader, visit func(line int, rec *cell.Record, err error) error) error {
	br := bufio.NewReaderSize(r, 1<<20)
	for line := 1; ; line++ {
		b, rerr := br.ReadBytes('\n')
		if rerr != nil && rerr != io.EOF {
			return fmt.Errorf("line %d: %w", line, rerr)
		}
		if len(b) == 0 && rerr == io.EOF {
			return nil
		}
		var err error
		var rec *cell.Record
		if line == 1 && bytes.HasPrefix(b, utf8BOM) {
			err = ErrBOM
		} else {
			rec, err = ParseRecord(bytes.TrimSuffix(b, []byte{'\n'}))
		}
		if verr := visit(line, rec, err); verr != nil {
			return verr
		}
		if rerr == io.EOF {
			return nil
		}
	}
}

// Problem is one thing wrong in a records file.
type Problem struct {
	Path string
	Line int // 0: the file as a whole
	Err  error
}

func (p Problem) String() string {
	if p.Line == 0 {
		return fmt.Sprintf("%s: %v", p.Path, p.Err)
	}
	return fmt.Sprintf("%s line %d: %v", p.Path, p.Line, p.Err)
}

// CheckRecord checks what every record must hold: the current schema
// (cell.RecordSchema; ParseRecord migrates older ones), a key, an arm, a
// profile, a version; at least two nodes and the receivers among them;
// completed receivers within the total; quantiles, wall time and sizes
// not negative, and the quantiles in order (p50 ≤ p90 ≤ p99 ≤ last).
func CheckRecord(r *cell.Record) error {
	switch {
	case r.Schema != cell.RecordSchema:
		return &cell.SchemaError{Schema: r.Schema}
	case r.Key == "":
		return errors.New("no cell key")
	case r.Arm == "" || r.Profile == "":
		return errors.New("no arm or profile")
	case r.Version == "":
		return errors.New("no uplink version")
	case r.N < 2 || r.Total != r.N-1:
		return fmt.Errorf("%d nodes and %d receivers: want at least 2 nodes, the receivers all but the publisher", r.N, r.Total)
	case r.Completed < 0 || r.Completed > r.Total:
		return fmt.Errorf("%d of %d receivers completed", r.Completed, r.Total)
	case r.WallS < 0 || r.MaxRSSKB < 0 || r.PayloadBytes < 1:
		return fmt.Errorf("wall %g s, peak RSS %d KB, payload %d bytes: want non-negative wall and RSS and a payload", r.WallS, r.MaxRSSKB, r.PayloadBytes)
	}
	prev, prevName := 0.0, "0"
	for _, q := range []struct {
		name string
		v    *float64
	}{{"p50_s", r.P50S}, {"p90_s", r.P90S}, {"p99_s", r.P99S}, {"last_s", r.LastS}} {
		if q.v == nil {
			continue
		}
		if *q.v < prev {
			return fmt.Errorf("%s %g is below %s %g", q.name, *q.v, prevName, prev)
		}
		prev, prevName = *q.v, q.name
	}
	return nil
}

// CheckFile checks every line of a records file: each a valid record, no
// byte-order mark, no line cut short (reported here, where a rerun skips
// it), no blank line.
func CheckFile(path string) (records int, problems []Problem, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	err = ScanRecords(f, func(line int, rec *cell.Record, lerr error) error {
		if lerr == nil {
			lerr = CheckRecord(rec)
		}
		if lerr != nil {
			problems = append(problems, Problem{path, line, lerr})
			return nil
		}
		records++
		return nil
	})
	if err != nil {
		return records, problems, fmt.Errorf("%s: %w", path, err)
	}
	return records, problems, nil
}

// MergeReport says what Merge did.
type MergeReport struct {
	Read, Written int
	Duplicates    int       // the same record (key and version) more than once: the last kept
	Conflicts     []string  // one key with records of several versions: each kept
	Problems      []Problem // lines skipped
}

// Merge reads the records files in order and returns their records, one
// per cell key and uplink version (a later one replaces an earlier one:
// the files are taken oldest first), sorted by key and version, with a
// report. A line that is not a valid record is skipped and reported.
func Merge(paths []string) ([]*cell.Record, MergeReport, error) {
	var rep MergeReport
	type kv struct{ key, version string }
	byKV := map[kv]*cell.Record{}
	versions := map[string]map[string]bool{}
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			return nil, rep, err
		}
		err = ScanRecords(f, func(line int, rec *cell.Record, lerr error) error {
			if lerr == nil {
				lerr = CheckRecord(rec)
			}
			if lerr != nil {
				if lerr != ErrBlankLine {
					rep.Problems = append(rep.Problems, Problem{path, line, lerr})
				}
				return nil
			}
			rep.Read++
			k := kv{rec.Key, rec.Version}
			if byKV[k] != nil {
				rep.Duplicates++
			}
			byKV[k] = rec
			if versions[rec.Key] == nil {
				versions[rec.Key] = map[string]bool{}
			}
			versions[rec.Key][rec.Version] = true
			return nil
		})
		f.Close()
		if err != nil {
			return nil, rep, fmt.Errorf("%s: %w", path, err)
		}
	}
	out := make([]*cell.Record, 0, len(byKV))
	for _, r := range byKV {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Key != out[j].Key {
			return out[i].Key < out[j].Key
		}
		return out[i].Version < out[j].Version
	})
	for key, vs := range versions {
		if len(vs) > 1 {
			rep.Conflicts = append(rep.Conflicts, fmt.Sprintf("cell %s has records of %d uplink versions", key, len(vs)))
		}
	}
	sort.Strings(rep.Conflicts)
	rep.Written = len(out)
	return out, rep, nil
}

// WriteRecords writes records as JSON Lines.
func WriteRecords(w io.Writer, recs []*cell.Record) error {
	bw := bufio.NewWriter(w)
	for _, r := range recs {
		b, err := MarshalRecord(r)
		if err != nil {
			return err
		}
		bw.Write(b)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}
