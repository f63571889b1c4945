package sweep

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/uplinksim/uplink/internal/outfile"
	"github.com/uplinksim/uplink/protocols/cell"
)

// A records file is JSON Lines: one cell.Record a line. Every reader
// takes its lines through ScanRecords, which bounds a line's length
// (MaxLineBytes) and checks each record (CheckRecord), so every command
// accepts and rejects the same lines.

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

// MaxLineBytes is the longest line a records file may hold, its newline
// not counted: 64 MiB, over 80 times the longest record committed (a
// 2 000-node cell with per-node rows, 0.73 MiB, some 380 bytes a node),
// room for the per-node rows of the largest cell uplink runs (100 000
// nodes, des.MaxNodes). A longer line ends the read (ErrLineTooLong): the
// file is not a records file (/dev/zero, a binary file), and reading on
// would hold it all in memory.
const MaxLineBytes = 64 << 20

// MaxBadLines is how many lines that are not records (blank, cut short or
// wrong) a file may hold before its read ends (ErrNotRecords): what holds
// more is not a records file (/dev/urandom, a log), and its list of
// problems would grow without end.
const MaxBadLines = 1000

// File errors of a records file: each ends the read.
var (
	// ErrLineTooLong is a line longer than MaxLineBytes.
	ErrLineTooLong = fmt.Errorf("a line longer than %d MiB: not a records file", MaxLineBytes>>20)
	// ErrNotRecords is a file with more than MaxBadLines lines that are
	// not records.
	ErrNotRecords = fmt.Errorf("more than %d lines that are not records: not a records file", MaxBadLines)
)

var utf8BOM = []byte{0xef, 0xbb, 0xbf}

// ParseRecord reads one line of a records file: a cell record brought to
// the current schema (cell.Record.Migrate), naming in Unknown the first
// field of the line this build does not know (and keeping the line in
// RawLine), or ErrBlankLine, or ErrRecordCut, or why the line is not a
// record (a record of a schema newer than this build's among them). It
// does not check the record's figures: ScanRecords does (CheckRecord).
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
	if unknown != "" {
		rec.Unknown = unknown
		rec.RawLine = bytes.Clone(bytes.TrimSpace(line))
	}
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

// MarshalRecord encodes a record as one line's JSON. A record read with a
// field this build does not know (cell.Record.Unknown) is its line as
// read (RawLine), so the field is kept; such a record without its line
// is refused, since the line written would lack the field.
func MarshalRecord(r *cell.Record) ([]byte, error) {
	if r.Unknown != "" {
		if len(r.RawLine) == 0 {
			return nil, fmt.Errorf("record %s (arm %s, profile %s, seed %d) holds a field this build does not know, %q (uplink %s wrote it), and not the line it was read from: written again it would lose the field",
				r.Key, r.Arm, r.Profile, r.Seed, r.Unknown, r.Version)
		}
		return slices.Clone(r.RawLine), nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("record %s: %w", r.Key, err)
	}
	return b, nil
}

// ScanRecords reads a records file line by line and calls visit with each
// line's number and its record, checked by CheckRecord, or with the
// line's error (ErrBOM, ErrBlankLine, ErrRecordCut, a parse error or what
// CheckRecord finds). An error visit returns ends the scan and is
// returned; so is a read error, a line longer than MaxLineBytes
// (ErrLineTooLong) and a line that is not a record past MaxBadLines
// (ErrNotRecords), each as a Problem naming the line (its Path empty).
func ScanRecords(r io.Reader, visit func(line int, rec *cell.Record, err error) error) error {
	br := bufio.NewReaderSize(r, 1<<20)
	var long []byte
	bad := 0
	for line := 1; ; line++ {
		b, rerr := readLine(br, &long)
		switch {
		case rerr == ErrLineTooLong:
			return Problem{Line: line, Err: rerr}
		case rerr != nil && rerr != io.EOF:
			return Problem{Line: line, Err: outfile.Cause(rerr)}
		case len(b) == 0 && rerr == io.EOF:
			return nil
		}
		var err error
		var rec *cell.Record
		if line == 1 && bytes.HasPrefix(b, utf8BOM) {
			err = ErrBOM
		} else {
			rec, err = checkLine(bytes.TrimSuffix(b, []byte{'\n'}))
		}
		if err != nil {
			if bad++; bad > MaxBadLines {
				return Problem{Line: line, Err: ErrNotRecords}
			}
			rec = nil
		}
		if verr := visit(line, rec, err); verr != nil {
			return verr
		}
		if rerr == io.EOF {
			return nil
		}
	}
}

// readLine reads the next line of br, its newline included: at most
// MaxLineBytes before the newline (ErrLineTooLong past that, having read
// little more), so a file without newlines is not read whole into memory.
// The line is br's buffer, valid until its next read, or, for a line
// longer than that, *long's storage, reused from line to line.
func readLine(br *bufio.Reader, long *[]byte) ([]byte, error) {
	frag, err := br.ReadSlice('\n')
	if err != bufio.ErrBufferFull {
		return frag, err
	}
	// A long line: its parts copied, joined once whole.
	var parts [][]byte
	n := 0
	for err == bufio.ErrBufferFull {
		parts = append(parts, bytes.Clone(frag))
		n += len(frag)
		if n > MaxLineBytes {
			return nil, ErrLineTooLong
		}
		frag, err = br.ReadSlice('\n')
	}
	content := n + len(frag)
	if err == nil {
		content-- // the newline
	}
	if content > MaxLineBytes {
		return nil, ErrLineTooLong
	}
	b := (*long)[:0]
	for _, p := range parts {
		b = append(b, p...)
	}
	b = append(b, frag...)
	*long = b
	return b, err
}

// checkLine parses a line (ParseRecord) and checks its record
// (CheckRecord).
func checkLine(line []byte) (*cell.Record, error) {
	rec, err := ParseRecord(line)
	if err != nil {
		return nil, err
	}
	if err := CheckRecord(rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// Problem is one thing wrong in a records file. It is an error too,
// naming the file and line.
type Problem struct {
	Path string
	Line int // 0: the file as a whole
	Err  error
}

func (p Problem) String() string {
	switch {
	case p.Path == "":
		return fmt.Sprintf("line %d: %v", p.Line, p.Err)
	case p.Line == 0:
		return fmt.Sprintf("%s: %v", p.Path, p.Err)
	}
	return fmt.Sprintf("%s line %d: %v", p.Path, p.Line, p.Err)
}

func (p Problem) Error() string { return p.String() }

// Unwrap is the problem's cause.
func (p Problem) Unwrap() error { return p.Err }

// ReadOptions says how ScanFile and ReadRecords take a records file.
type ReadOptions struct {
	// MissingEmpty reads a file that does not exist as one without
	// records (a cache or --out that a first run creates), not an error.
	MissingEmpty bool
	// Regular refuses a file that is not a regular file (a FIFO, a
	// device): the records file of a run, which it appends to.
	// Otherwise a FIFO or /dev/stdin reads as any file.
	Regular bool
	// Strict ends the read at the first line that is not a record, with
	// that line's Problem as the error; a blank line and a record cut
	// short (which a rerun reruns) are still only reported among the
	// problems. Otherwise every line that is not a record is reported
	// among the problems and skipped.
	Strict bool
}

// ScanFile reads the records file at path through ScanRecords and calls
// visit with each valid record, in file order. It returns the lines that
// are not records, as Problems naming path and line; an error ends the
// read (one visit returns, or a Problem naming path and, where it is one
// line's, the line).
func ScanFile(path string, opts ReadOptions, visit func(line int, rec *cell.Record) error) ([]Problem, error) {
	f, err := os.Open(path)
	if err != nil {
		if opts.MissingEmpty && errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, Problem{Path: path, Err: outfile.Cause(err)}
	}
	defer f.Close()
	st, err := f.Stat()
	switch {
	case err != nil:
		return nil, Problem{Path: path, Err: outfile.Cause(err)}
	case opts.Regular && !st.Mode().IsRegular():
		return nil, Problem{Path: path, Err: errors.New("not a regular file (a records file is JSON Lines, one record a line)")}
	case st.IsDir():
		return nil, Problem{Path: path, Err: errors.New("a folder, not a records file")}
	}
	var problems []Problem
	err = ScanRecords(f, func(line int, rec *cell.Record, lerr error) error {
		if lerr == nil {
			return visit(line, rec)
		}
		p := Problem{path, line, lerr}
		if opts.Strict && lerr != ErrBlankLine && lerr != ErrRecordCut {
			return p
		}
		problems = append(problems, p)
		return nil
	})
	var p Problem
	if errors.As(err, &p) && p.Path == "" {
		p.Path = path
		err = p
	}
	return problems, err
}

// ReadRecords reads the records file at path (ScanFile): its valid
// records in file order, and the lines that are not records.
func ReadRecords(path string, opts ReadOptions) ([]*cell.Record, []Problem, error) {
	var recs []*cell.Record
	problems, err := ScanFile(path, opts, func(_ int, rec *cell.Record) error {
		recs = append(recs, rec)
		return nil
	})
	return recs, problems, err
}

// Sanity bounds of a record's figures (CheckRecord).
const (
	// MaxVirtualS bounds every virtual time: a day (a cell's window is at
	// most an hour, des.MaxVirtual; its setup takes minutes).
	MaxVirtualS = 24 * 60 * 60
	// MaxWallS bounds wall and CPU seconds: 10⁸ s, over three years.
	MaxWallS = 1e8
	// MaxFigure bounds every other number (bytes, ratios, congestion
	// windows).
	MaxFigure = 1e18
)

// FieldError is a record's field that does not hold what it must.
type FieldError struct {
	Field string // as the JSON names it, such as p50_s or nodes[3].time_s
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// intField and floatField are a field's JSON name and value.
type (
	intField struct {
		name string
		v    int
	}
	floatField struct {
		name string
		v    float64
	}
)

// recordChecker collects the first field error of a record.
type recordChecker struct{ err error }

func (c *recordChecker) fail(field, format string, args ...any) {
	if c.err == nil {
		c.err = &FieldError{field, fmt.Sprintf(format, args...)}
	}
}

// num checks a number: finite, not negative and at most hi (what names).
func (c *recordChecker) num(field string, v, hi float64, what string) {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		c.fail(field, "%g is not a finite number", v)
	case v < 0:
		c.fail(field, "%g is negative", v)
	case v > hi:
		c.fail(field, "%g is beyond %s (%g)", v, what, hi)
	}
}

func (c *recordChecker) virtualS(field string, v float64) {
	c.num(field, v, MaxVirtualS, "a day of virtual time in s")
}

func (c *recordChecker) virtualMS(field string, v float64) {
	c.num(field, v, MaxVirtualS*1e3, "a day of virtual time in ms")
}

func (c *recordChecker) wallS(field string, v float64) {
	c.num(field, v, MaxWallS, "the bound of wall and CPU seconds")
}

func (c *recordChecker) figure(field string, v float64) {
	c.num(field, v, MaxFigure, "the bound of figures")
}

// count checks a count: from 0 to hi.
func (c *recordChecker) count(field string, v, hi int, of string) {
	switch {
	case v < 0:
		c.fail(field, "%d is negative", v)
	case v > hi:
		c.fail(field, "%d is more than %s (%d)", v, of, hi)
	}
}

func (c *recordChecker) nonNegative(field string, v int64) {
	if v < 0 {
		c.fail(field, "%d is negative", v)
	}
}

// CheckRecord checks what every record must hold, naming the first field
// that does not (a *FieldError, or a *cell.SchemaError). docs/records.md
// ("Records files") lists the rules:
//
//   - the current schema (cell.RecordSchema; ParseRecord migrates older
//     ones); a key, an arm, a profile and a version;
//   - at least two nodes, the receivers all but the publisher, nsize
//     absent or n, a degree of at most the other nodes, a payload;
//   - no count negative, and the counts of receivers (completed, rate_k,
//     rate_n, late_receivers, verified, …) within the receivers, or
//     those that completed; late_receivers only with a p50;
//   - every number finite and not negative, virtual times within a day
//     (MaxVirtualS), wall and CPU seconds within MaxWallS, other figures
//     within MaxFigure;
//   - the quantiles that are known in order (p50 ≤ p90 ≤ p99 ≤ last) and,
//     like counts_at_s, within the window (window_s, where the record
//     gives it);
//   - completion_us ascending, within the window, with exactly completed
//     times when present (an empty list included); absent while
//     receivers completed only in a record without per-node rows, whose
//     times are unknown (a schema-0 record written before the field,
//     and that record written again), and then the quantiles are not
//     checked against it; otherwise each known quantile is the completion
//     time the study's rule (cell.Quantile) picks, to the µs, and one
//     that falls on a censored receiver is null;
//   - per-node rows, when present, one a node (indices 0 to n − 1), with
//     completion times within the window, each row's completed flag
//     saying whether it has one;
//   - queue assignments, when present, uplink and downlink only, each of
//     two or more specs whose node ranges cover every node once with the
//     counts uplink_qdiscs or downlink_qdiscs give, the publisher's spec
//     that of publisher_node (present with them, absent without), a known
//     publisher_by, and classes, one a spec, whose counts add up to the
//     direction's queues.
func CheckRecord(r *cell.Record) error {
	switch {
	case r.Schema != cell.RecordSchema:
		return &cell.SchemaError{Schema: r.Schema}
	case r.Key == "":
		return &FieldError{"key", "absent: no cell key"}
	case r.Arm == "":
		return &FieldError{"arm", "absent"}
	case r.Profile == "":
		return &FieldError{"profile", "absent"}
	case r.Version == "":
		return &FieldError{"version", "absent: no uplink version"}
	case r.N < 2:
		return &FieldError{"n", fmt.Sprintf("%d nodes: want at least 2, a publisher and a receiver", r.N)}
	case r.Total != r.N-1:
		return &FieldError{"total", fmt.Sprintf("%d receivers of %d nodes: want all but the publisher, %d", r.Total, r.N, r.N-1)}
	case r.PayloadBytes < 1:
		return &FieldError{"payload_bytes", fmt.Sprintf("%d: want at least 1", r.PayloadBytes)}
	}
	var c recordChecker
	c.checkCounts(r)
	c.checkTimes(r)
	c.checkCompletions(r)
	c.checkNodes(r)
	c.checkCost(r)
	c.checkAssignments(r)
	return c.err
}

// publisherBy are the values of a queue assignment's publisher_by.
var publisherBy = []string{cell.PinSeed, cell.PinIn, cell.PinOut, cell.PinFile, cell.PinEvery}

// checkAssignments checks the queue assignments: each direction's ranges
// cover every node once, with the nodes the spec counts give; the
// publisher's spec is its node's; the classes' counts add up to the
// direction's.
func (c *recordChecker) checkAssignments(r *cell.Record) {
	if len(r.QueueAssignments) == 0 {
		if r.PublisherNode != nil {
			c.fail("publisher_node", "%d without queue_assignments", *r.PublisherNode)
		}
		return
	}
	if r.PublisherNode == nil {
		c.fail("publisher_node", "absent: queue_assignments name the publisher's spec")
		return
	}
	pub := *r.PublisherNode
	c.count("publisher_node", pub, r.N-1, "the last node index")
	if c.err != nil {
		return
	}
	for _, dir := range slices.Sorted(maps.Keys(r.QueueAssignments)) {
		a := r.QueueAssignments[dir]
		field := fmt.Sprintf("queue_assignments[%q]", dir)
		var counts map[string]int
		switch dir {
		case "uplink":
			counts = r.UpQdiscs
		case "downlink":
			counts = r.DownQdiscs
		default:
			c.fail(field, "not a direction: want uplink or downlink")
			return
		}
		if len(a.Nodes) < 2 {
			c.fail(field+".nodes", "%d specs: an assignment is recorded for two or more", len(a.Nodes))
			return
		}
		of := make([]string, r.N) // each node's spec
		for _, spec := range slices.Sorted(maps.Keys(a.Nodes)) {
			sf := fmt.Sprintf("%s.nodes[%q]", field, spec)
			idx, err := cell.ParseNodeRanges(a.Nodes[spec], r.N)
			if err != nil {
				c.fail(sf, "%v", err)
				return
			}
			for _, i := range idx {
				if of[i] != "" {
					c.fail(sf, "node %d is also behind %q", i, of[i])
					return
				}
				of[i] = spec
			}
			if counts[spec] != len(idx) {
				c.fail(sf, "%d nodes, where %s_qdiscs gives %q %d", len(idx), dir, spec, counts[spec])
				return
			}
		}
		if i := slices.Index(of, ""); i >= 0 {
			c.fail(field+".nodes", "node %d has no spec (want every node of %d once)", i, r.N)
			return
		}
		if a.Publisher != of[pub] {
			c.fail(field+".publisher", "%q, where node %d (publisher_node) is behind %q", a.Publisher, pub, of[pub])
		}
		if !slices.Contains(publisherBy, a.PublisherBy) {
			c.fail(field+".publisher_by", "%q: want one of %s", a.PublisherBy, strings.Join(publisherBy, ", "))
		}
		c.checkClasses(r, dir, field, a)
	}
}

// checkClasses checks that a direction's classes are its specs and that
// their counts add up to the direction's queues.
func (c *recordChecker) checkClasses(r *cell.Record, dir, field string, a cell.QueueAssignment) {
	if a.Classes == nil {
		return
	}
	var sum cell.QueueSummary
	sum.Drops = map[string]uint64{}
	for _, spec := range slices.Sorted(maps.Keys(a.Classes)) {
		if _, ok := a.Nodes[spec]; !ok {
			c.fail(fmt.Sprintf("%s.classes[%q]", field, spec), "not a spec of its nodes")
			return
		}
		q := a.Classes[spec]
		sum.Enqueued += q.Enqueued
		sum.Dequeued += q.Dequeued
		sum.CEMarks += q.CEMarks
		for reason, v := range q.Drops {
			sum.Drops[reason] += v
		}
	}
	if len(a.Classes) != len(a.Nodes) {
		c.fail(field+".classes", "%d classes for %d specs: want one a spec", len(a.Classes), len(a.Nodes))
		return
	}
	total, ok := r.Queues[dir]
	if !ok {
		c.fail(field+".classes", "queues has no %s to add up to", dir)
		return
	}
	for _, f := range []struct {
		name     string
		got, all uint64
	}{{"enqueued", sum.Enqueued, total.Enqueued}, {"dequeued", sum.Dequeued, total.Dequeued}, {"ce_marks", sum.CEMarks, total.CEMarks}} {
		if f.got != f.all {
			c.fail(field+".classes", "%s adds up to %d, where queues[%q].%s is %d", f.name, f.got, dir, f.name, f.all)
			return
		}
	}
	for _, reason := range slices.Sorted(maps.Keys(total.Drops)) {
		if sum.Drops[reason] != total.Drops[reason] {
			c.fail(field+".classes", "drops %s add up to %d, where queues[%q].drops.%s is %d", reason, sum.Drops[reason], dir, reason, total.Drops[reason])
			return
		}
	}
	for _, reason := range slices.Sorted(maps.Keys(sum.Drops)) {
		if _, ok := total.Drops[reason]; !ok && sum.Drops[reason] != 0 {
			c.fail(field+".classes", "drops %s add up to %d, where queues[%q] has none", reason, sum.Drops[reason], dir)
			return
		}
	}
}

// checkCounts checks the counts of nodes, receivers, messages and bytes.
func (c *recordChecker) checkCounts(r *cell.Record) {
	c.count("completed", r.Completed, r.Total, "the receivers")
	c.count("rate_k", r.RateK, r.Completed, "the receivers that completed")
	if r.Late != nil {
		c.count("late_receivers", *r.Late, r.Total, "the receivers")
		if r.P50S == nil {
			c.fail("late_receivers", "%d while p50_s is null (late means past the p50)", *r.Late)
		}
	}
	c.count("verified", r.Verified, r.Completed, "the receivers that completed")
	c.count("warmup_missing", r.WarmupMissing, r.Total, "the receivers")
	if r.EmptyMeshNodes != nil {
		c.count("empty_mesh_nodes", *r.EmptyMeshNodes, r.N, "the nodes")
	}
	if r.NSize != 0 && r.NSize != r.N {
		c.fail("nsize", "%d: want n (%d)", r.NSize, r.N)
	}
	if r.RateN != 0 && r.RateN != r.Total {
		c.fail("rate_n", "%d: want the receivers, total (%d)", r.RateN, r.Total)
	}
	c.count("degree", r.Degree, r.N-1, "the other nodes")
	for _, f := range []intField{
		{"dups", r.Dups}, {"idw_tx", r.IdwTx}, {"topics", r.Topics},
		{"b_claims", r.BClaims}, {"b_timeouts", r.BTimeouts}, {"b_strikes", r.BStrikes}, {"replicate", r.Replicate},
		{"gomaxprocs", r.GOMAXPROCS},
		{"wire_form.messages", r.Wire.Messages}, {"wire_form.unit", r.Wire.Unit}, {"wire_form.id_width", r.Wire.IDWidth},
	} {
		c.nonNegative(f.name, int64(f.v))
	}
	if r.Partitions < 1 {
		c.fail("partitions", "%d: want at least 1", r.Partitions)
	}
	if r.GOGC < -1 {
		c.fail("gogc", "%d: want a percentage, or -1 (off)", r.GOGC)
	}
	c.nonNegative("mem_limit", r.MemLimit)
	c.nonNegative("max_rss_kb", r.MaxRSSKB)
	if r.BTimeoutsUnheard != nil {
		c.nonNegative("b_timeouts_unheard", int64(*r.BTimeoutsUnheard))
	}
	if r.BLateAnswers != nil {
		c.nonNegative("b_late_answers", int64(*r.BLateAnswers))
	}
	for i, v := range r.PublisherMeshes {
		c.nonNegative(fmt.Sprintf("publisher_meshes[%d]", i), int64(v))
	}
	for i, v := range r.CompletingUnits {
		c.count(fmt.Sprintf("completing_units[%d]", i), v, r.Total, "the receivers")
	}
	for _, m := range []struct {
		field string
		v     map[string]int
	}{{"uplink_qdiscs", r.UpQdiscs}, {"downlink_qdiscs", r.DownQdiscs}} {
		for _, spec := range slices.Sorted(maps.Keys(m.v)) {
			c.count(fmt.Sprintf("%s[%q]", m.field, spec), m.v[spec], r.N, "the nodes")
		}
	}
	c.figure("rx_node_bytes", r.RxNodeBytes)
	c.figure("ctrl_rx_node_bytes", r.CtrlRxNode)
	if h := r.Host; h != nil {
		c.nonNegative("host.cpus", int64(h.CPUs))
		c.figure("host.mem_gib", h.MemGiB)
	}
	if cs := r.ConnAtPublish; cs != nil {
		c.nonNegative("conn_at_publish.ends", int64(cs.Ends))
		c.figure("conn_at_publish.srtt_over_min_p50", cs.SRTTOverMinP50)
		c.figure("conn_at_publish.srtt_over_min_p90", cs.SRTTOverMinP90)
		c.figure("conn_at_publish.cwnd_kib_p50", cs.CwndKiBP50)
		c.figure("conn_at_publish.cwnd_kib_p10", cs.CwndKiBP10)
		c.figure("conn_at_publish.publisher_srtt_over_min_p50", cs.PublisherSRTTOverMin)
		c.figure("conn_at_publish.publisher_cwnd_kib_p50", cs.PublisherCwndKiB)
	}
}

// checkTimes checks the virtual times: the window and what lies within
// it, the quantiles in order.
func (c *recordChecker) checkTimes(r *cell.Record) {
	c.virtualS("window_s", r.WindowS)
	for _, f := range []floatField{
		{"deadline_s", r.DeadlineS}, {"counts_at_s", r.CountsAtS}, {"publish_at_s", r.PublishAtS},
		{"setup_quantum_s", r.SetupQuantumS}, {"warmup_gap_s", r.WarmupGapS}, {"warmup_s", r.WarmupS},
		{"background_lead_s", r.BackgroundLeadS}, {"b_timeout_s", r.BTimeoutS},
	} {
		c.virtualS(f.name, f.v)
	}
	if r.WindowS > 0 && r.CountsAtS > r.WindowS {
		c.fail("counts_at_s", "%g is beyond the window, window_s %g", r.CountsAtS, r.WindowS)
	}
	for _, f := range []floatField{
		{"partition_window_ms", r.PartitionWindowMS}, {"mesh_latency_ms", r.MeshLatencyMS},
		{"graph_latency_ms", r.GraphLatencyMS}, {"first_heartbeat_ms", r.FirstHeartbeatMS},
	} {
		c.virtualMS(f.name, f.v)
	}
	if r.NextHeartbeatMS != nil {
		c.virtualMS("next_heartbeat_ms", *r.NextHeartbeatMS)
	}
	for i, v := range r.UnitFirstMS {
		if v != nil {
			c.virtualMS(fmt.Sprintf("unit_first_ms[%d]", i), *v)
		}
	}
	for _, dir := range slices.Sorted(maps.Keys(r.Queues)) {
		q := r.Queues[dir]
		for _, f := range []floatField{
			{"delay_p50_ms", q.DelayP50}, {"delay_p99_ms", q.DelayP99}, {"delay_max_ms", q.DelayMax}, {"delay_mean_ms", q.DelayMean},
		} {
			c.virtualMS(fmt.Sprintf("queues[%q].%s", dir, f.name), f.v)
		}
		c.nonNegative(fmt.Sprintf("queues[%q].max_backlog_packets", dir), int64(q.MaxBacklog))
	}
	prev, prevName := 0.0, ""
	for _, q := range quantiles(r) {
		if q.v == nil {
			continue
		}
		c.virtualS(q.name, *q.v)
		if r.WindowS > 0 && *q.v > r.WindowS {
			c.fail(q.name, "%g is beyond the window, window_s %g", *q.v, r.WindowS)
		}
		if prevName != "" && *q.v < prev {
			c.fail(q.name, "%g is below %s %g", *q.v, prevName, prev)
		}
		prev, prevName = *q.v, q.name
	}
}

type quantile struct {
	name string
	p    float64
	v    *float64
}

func quantiles(r *cell.Record) []quantile {
	return []quantile{{"p50_s", 0.5, r.P50S}, {"p90_s", 0.9, r.P90S}, {"p99_s", 0.99, r.P99S}, {"last_s", 1, r.LastS}}
}

// checkCompletions checks completion_us and the quantiles it gives.
func (c *recordChecker) checkCompletions(r *cell.Record) {
	us := r.CompletionUS
	if us == nil && r.Completed > 0 {
		if len(r.Nodes) > 0 {
			c.fail("completion_us", "absent while %d receivers completed and the record has per-node rows", r.Completed)
		}
		return // a schema-0 record's times, unknown
	}
	if len(us) != r.Completed {
		c.fail("completion_us", "%d times while %d receivers completed", len(us), r.Completed)
		return
	}
	limit, what := int64(MaxVirtualS*1e6), "a day of virtual time in µs"
	if r.WindowS > 0 {
		limit, what = int64(math.Round(r.WindowS*1e6)), "the window in µs"
	}
	for i, v := range us {
		field := fmt.Sprintf("completion_us[%d]", i)
		switch {
		case v < 0:
			c.fail(field, "%d is negative", v)
		case v > limit:
			c.fail(field, "%d is beyond %s (%d)", v, what, limit)
		case i > 0 && v < us[i-1]:
			c.fail(field, "%d is below completion_us[%d] %d: want them ascending", v, i-1, us[i-1])
		}
	}
	if c.err != nil {
		return
	}
	// The study's rule: the element at ceil(p × total) − 1 of the times,
	// the censored receivers' last.
	for _, q := range quantiles(r) {
		i := int(math.Ceil(q.p*float64(r.Total))) - 1
		i = min(max(i, 0), r.Total-1)
		switch {
		case i >= len(us) && q.v != nil:
			c.fail(q.name, "%g, while it falls on a receiver that never completed (%d of %d completed): want null", *q.v, len(us), r.Total)
		case i < len(us) && q.v == nil:
			c.fail(q.name, "null, while it falls on a receiver that completed, at %d µs", us[i])
		case i < len(us) && math.Abs(*q.v*1e6-float64(us[i])) > 1:
			c.fail(q.name, "%g, while completion_us gives %d µs", *q.v, us[i])
		}
	}
}

// checkNodes checks the per-node rows.
func (c *recordChecker) checkNodes(r *cell.Record) {
	if len(r.Nodes) > 0 && len(r.Nodes) != r.N {
		c.fail("nodes", "%d rows of %d nodes: want one a node, or none", len(r.Nodes), r.N)
	}
	seen := map[int]bool{}
	for i, n := range r.Nodes {
		field := fmt.Sprintf("nodes[%d]", i)
		switch {
		case n.Index < 0 || n.Index >= r.N:
			c.fail(field+".index", "%d: want a node from 0 to n − 1 (%d)", n.Index, r.N-1)
		case seen[n.Index]:
			c.fail(field+".index", "node %d has two rows", n.Index)
		case n.Completed != (n.TimeS != nil):
			c.fail(field+".completed", "%t while time_s is %s", n.Completed, map[bool]string{true: "null", false: "a time"}[n.TimeS == nil])
		}
		seen[n.Index] = true
		if n.TimeS != nil {
			c.virtualS(field+".time_s", *n.TimeS)
			if r.WindowS > 0 && *n.TimeS > r.WindowS {
				c.fail(field+".time_s", "%g is beyond the window, window_s %g", *n.TimeS, r.WindowS)
			}
		}
		for _, f := range []intField{
			{"dups", n.Dups}, {"mesh_at_publish", n.MeshPublish}, {"mesh_at_end", n.MeshEnd},
			{"ihave_tx", n.IHaveTx}, {"ihave_rx", n.IHaveRx}, {"iwant_tx", n.IWantTx}, {"iwant_rx", n.IWantRx},
			{"idontwant_tx", n.IDontWantTx}, {"idontwant_rx", n.IDontWantRx},
		} {
			c.nonNegative(field+"."+f.name, int64(f.v))
		}
		for _, f := range []struct {
			name string
			v    int64
		}{{"data_rx_bytes", n.DataRx}, {"data_tx_bytes", n.DataTx}, {"ctrl_rx_bytes", n.CtrlRx}, {"ctrl_tx_bytes", n.CtrlTx}} {
			c.nonNegative(field+"."+f.name, f.v)
		}
	}
}

// checkCost checks what the run cost: wall and CPU seconds.
func (c *recordChecker) checkCost(r *cell.Record) {
	c.wallS("wall_s", r.WallS)
	c.figure("wall_us_per_packet", r.UsPerPkt)
	for _, ph := range []struct {
		field string
		p     cell.Phases
	}{{"phases", r.Phases}, {"phase_cpu_s", r.PhaseCPU}} {
		for _, f := range []floatField{
			{"hosts_s", ph.p.Hosts}, {"dial_s", ph.p.Dial}, {"mesh_s", ph.p.Mesh}, {"warmup_s", ph.p.Warmup},
			{"delivery_s", ph.p.Delivery}, {"teardown_s", ph.p.Teardown},
		} {
			c.wallS(ph.field+"."+f.name, f.v)
		}
	}
}

// CheckFile checks every line of a records file: each a valid record, no
// byte-order mark, no line cut short (reported here, where a rerun skips
// it), no blank line. An error (the file cannot be read, or is not a
// records file) names the file.
func CheckFile(path string) (records int, problems []Problem, err error) {
	problems, err = ScanFile(path, ReadOptions{}, func(int, *cell.Record) error {
		records++
		return nil
	})
	return records, problems, err
}

// What Merge does when one cell has several different records
// (MergeOptions.OnConflict).
const (
	// OnConflictRefuse keeps none: Merge fails (ErrConflict), naming
	// each cell.
	OnConflictRefuse = "refuse"
	// OnConflictNewest keeps the last one read: files in the order
	// given, lines in file order.
	OnConflictNewest = "newest"
)

// ErrConflict is Merge's error when a cell has several different records
// and MergeOptions.OnConflict is OnConflictRefuse.
var ErrConflict = errors.New("a cell with several different records")

// MergeOptions says how Merge treats a cell with several records.
type MergeOptions struct {
	// OnConflict is OnConflictRefuse ("refuse", also for "") or
	// OnConflictNewest ("newest").
	OnConflict string
}

// Conflict is a cell with several different records: of several uplink
// versions, or different records of one version.
type Conflict struct {
	Key      string
	Versions []string // the uplink version of each different record, in the order read
}

// String names the cell and its records' versions.
func (c Conflict) String() string {
	return fmt.Sprintf("cell %s has %d different records, of uplink %s", c.Key, len(c.Versions), strings.Join(c.Versions, ", "))
}

// MergeReport says what Merge did.
type MergeReport struct {
	Read, Written int
	Duplicates    int        // a record read again, the same as one already read: kept once
	Conflicts     []Conflict // cells with several different records, by key
	Problems      []Problem  // lines that are not records, skipped
}

// Merge reads the records files in order and returns one record per
// cell key, sorted by key, with a report. A record the same as one
// already read is a duplicate, kept once. A cell with several different
// records (a rerun by another build, a changed record) is a conflict,
// which opts.OnConflict settles: OnConflictRefuse (the default) returns
// no records and an error wrapping ErrConflict that names each cell, as
// the report does; OnConflictNewest keeps the last one read (the files in the
// order given, each file's lines in order) and reports the cells. A line
// that is not a record is skipped and reported; a file that cannot be
// read or is not a records file is an error naming it.
func Merge(paths []string, opts MergeOptions) ([]*cell.Record, MergeReport, error) {
	var rep MergeReport
	switch opts.OnConflict {
	case "", OnConflictRefuse, OnConflictNewest:
	default:
		return nil, rep, fmt.Errorf("on conflict %q: want %s or %s", opts.OnConflict, OnConflictRefuse, OnConflictNewest)
	}
	byKey := map[string]*cell.Record{}
	distinct := map[string][]*cell.Record{} // every different record of a conflicting key
	for _, path := range paths {
		problems, err := ScanFile(path, ReadOptions{}, func(_ int, rec *cell.Record) error {
			rep.Read++
			prev := byKey[rec.Key]
			byKey[rec.Key] = rec
			switch {
			case prev == nil:
			case reflect.DeepEqual(prev, rec):
				rep.Duplicates++
			default:
				d := distinct[rec.Key]
				if d == nil {
					d = []*cell.Record{prev}
				}
				if !slices.ContainsFunc(d, func(x *cell.Record) bool { return reflect.DeepEqual(x, rec) }) {
					d = append(d, rec)
				} else {
					rep.Duplicates++
				}
				distinct[rec.Key] = d
			}
			return nil
		})
		rep.Problems = append(rep.Problems, problems...)
		if err != nil {
			return nil, rep, err
		}
	}
	for key, d := range distinct {
		c := Conflict{Key: key}
		for _, r := range d {
			c.Versions = append(c.Versions, r.Version)
		}
		rep.Conflicts = append(rep.Conflicts, c)
	}
	sort.Slice(rep.Conflicts, func(i, j int) bool { return rep.Conflicts[i].Key < rep.Conflicts[j].Key })
	if len(rep.Conflicts) > 0 && opts.OnConflict != OnConflictNewest {
		names := make([]string, len(rep.Conflicts))
		for i, c := range rep.Conflicts {
			names[i] = c.String()
		}
		return nil, rep, fmt.Errorf("%w: %s", ErrConflict, strings.Join(names, "; "))
	}
	out := make([]*cell.Record, 0, len(byKey))
	for _, r := range byKey {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	rep.Written = len(out)
	return out, rep, nil
}

// WriteRecords writes records as JSON Lines (MarshalRecord).
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
