package sweep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/protocols/cell"
)

// goodLine is a valid record of the current schema: 5 nodes, 3 of the 4
// receivers complete (at 0.5, 0.7 and 1.31 s), so the p50 is the second
// time and the higher quantiles are censored; 2 receivers are late.
const goodLine = `{"schema":2,"key":"k","arm":"wholend","arm_name":"wholend","profile":"harness","version":"v1","seed":7,` +
	`"n":5,"nsize":5,"degree":4,"total":4,"completed":3,"payload_bytes":1024,"window_s":8,"deadline_s":8,"rate_k":3,"rate_n":4,` +
	`"p50_s":0.7,"p90_s":null,"p99_s":null,"last_s":null,"late_receivers":2,"completion_us":[500000,700000,1310000],` +
	`"counts_at":"window end","counts_at_s":8,"wall_s":12.5,"max_rss_kb":1000,"partitions":1}`

// edit returns line with each field of sets set to its JSON value, or
// removed where the value is "".
func edit(t *testing.T, line string, sets ...string) string {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(line), &m))
	for i := 0; i < len(sets); i += 2 {
		if sets[i+1] == "" {
			delete(m, sets[i])
		} else {
			m[sets[i]] = json.RawMessage(sets[i+1])
		}
	}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return string(b)
}

// TestCheckLineRules: each line breaks one rule of the validator and is
// refused, naming the field; the lines that keep every rule are taken.
func TestCheckLineRules(t *testing.T) {
	_, err := checkLine([]byte(goodLine))
	require.NoError(t, err)

	fullRows := `[{"index":0,"completed":false,"time_s":null},{"index":1,"completed":true,"time_s":0.5},` +
		`{"index":2,"completed":true,"time_s":0.7},{"index":3,"completed":true,"time_s":1.31},{"index":4,"completed":false,"time_s":null}]`
	valid := map[string]string{
		"schema 0 without completion_us, no per-node rows (times unknown)": edit(t, goodLine, "schema", "", "completion_us", "", "late_receivers", ""),
		"that record written again at schema 2":                            edit(t, goodLine, "completion_us", "", "late_receivers", ""),
		"schema 0 with per-node rows (completion_us taken from them)":      edit(t, goodLine, "schema", "", "completion_us", "", "nodes", fullRows),
		"a field this build does not know":                                 edit(t, goodLine, "from_a_later_build", `{"x":1}`),
		"none completed, no completion_us":                                 edit(t, goodLine, "completed", "0", "rate_k", "0", "completion_us", "", "p50_s", "null", "late_receivers", ""),
		"every receiver complete":                                          edit(t, goodLine, "completed", "4", "rate_k", "4", "completion_us", "[500000,700000,1310000,7999999]", "p90_s", "7.999999", "p99_s", "7.999999", "last_s", "7.999999", "late_receivers", "2"),
	}
	for name, line := range valid {
		_, err := checkLine([]byte(line))
		require.NoError(t, err, name)
	}

	cases := []struct{ name, line, want string }{
		{"only key and version", `{"key":"k","version":"v1"}`, "arm: absent"},
		{"no key", edit(t, goodLine, "key", ""), "no cell key"},
		{"no version", edit(t, goodLine, "version", ""), "version: absent"},
		{"no profile", edit(t, goodLine, "profile", `""`), "profile: absent"},
		{"one node", edit(t, goodLine, "n", "1", "total", "0"), "n: 1 nodes: want at least 2"},
		{"receivers not n-1", edit(t, goodLine, "total", "5"), "total: 5 receivers of 5 nodes"},
		{"no payload", edit(t, goodLine, "payload_bytes", "0"), "payload_bytes: 0: want at least 1"},
		{"negative p50", edit(t, goodLine, "p50_s", "-0.7"), "p50_s: -0.7 is negative"},
		{"p50 above p90", edit(t, goodLine, "p90_s", "0.5"), "p90_s: 0.5 is below p50_s 0.7"},
		{"p50 1e308", edit(t, goodLine, "p50_s", "1e308"), "p50_s: 1e+308 is beyond a day of virtual time in s (86400)"},
		{"p50 beyond the window", edit(t, goodLine, "window_s", "0.6", "counts_at_s", "0.6"), "p50_s: 0.7 is beyond the window, window_s 0.6"},
		{"p50 not the median time", edit(t, goodLine, "p50_s", "0.6"), "p50_s: 0.6, while completion_us gives 700000 µs"},
		{"censored p90 given", edit(t, goodLine, "p90_s", "1.31"), "p90_s: 1.31, while it falls on a receiver that never completed (3 of 4 completed): want null"},
		{"empty completion_us", edit(t, goodLine, "completion_us", "[]"), "completion_us: 0 times while 3 receivers completed"},
		{"negative completion_us", edit(t, goodLine, "completion_us", "[-5,700000,1310000]"), "completion_us[0]: -5 is negative"},
		{"completion_us descending", edit(t, goodLine, "completion_us", "[700000,500000,1310000]"), "completion_us[1]: 500000 is below completion_us[0] 700000: want them ascending"},
		{"completion_us beyond the window", edit(t, goodLine, "completion_us", "[500000,700000,9000000]"), "completion_us[2]: 9000000 is beyond the window in µs (8000000)"},
		{"more completed than receivers", edit(t, goodLine, "completed", "5"), "completed: 5 is more than the receivers (4)"},
		{"negative completed", edit(t, goodLine, "completed", "-1"), "completed: -1 is negative"},
		{"rate_k above completed", edit(t, goodLine, "rate_k", "4"), "rate_k: 4 is more than the receivers that completed (3)"},
		{"negative dups", edit(t, goodLine, "dups", "-3"), "dups: -3 is negative"},
		{"late without a p50", edit(t, goodLine, "p50_s", "null"), "late_receivers: 2 while p50_s is null"},
		{"p50 censored while its receiver completed", edit(t, goodLine, "p50_s", "null", "late_receivers", ""), "p50_s: null, while it falls on a receiver that completed, at 700000 µs"},
		{"late receivers beyond the receivers", edit(t, goodLine, "late_receivers", "9"), "late_receivers: 9 is more than the receivers (4)"},
		{"negative wall", edit(t, goodLine, "wall_s", "-1"), "wall_s: -1 is negative"},
		{"huge wall", edit(t, goodLine, "wall_s", "1e300"), "wall_s: 1e+300 is beyond the bound of wall and CPU seconds (1e+08)"},
		{"negative rss", edit(t, goodLine, "max_rss_kb", "-1"), "max_rss_kb: -1 is negative"},
		{"counts beyond the window", edit(t, goodLine, "counts_at_s", "9"), "counts_at_s: 9 is beyond the window, window_s 8"},
		{"window beyond a day", edit(t, goodLine, "window_s", "1e6"), "window_s: 1e+06 is beyond a day of virtual time in s (86400)"},
		{"negative queue delay", edit(t, goodLine, "queues", `{"up":{"delay_p50_ms":-2}}`), `queues["up"].delay_p50_ms: -2 is negative`},
		{"negative phase", edit(t, goodLine, "phases", `{"dial_s":-1}`), "phases.dial_s: -1 is negative"},
		{"per-node rows not one a node", edit(t, goodLine, "nodes", `[{"index":0}]`), "nodes: 1 rows of 5 nodes"},
		{"per-node row of no node", edit(t, goodLine, "nodes", strings.Replace(fullRows, `"index":4`, `"index":5`, 1)), "nodes[4].index: 5: want a node from 0 to n − 1 (4)"},
		{"per-node time without completion", edit(t, goodLine, "nodes", strings.Replace(fullRows, `"index":1,"completed":true`, `"index":1,"completed":false`, 1)), "nodes[1].completed: false while time_s is a time"},
		{"nsize not n", edit(t, goodLine, "nsize", "6"), "nsize: 6: want n (5)"},
		{"degree of more nodes than there are", edit(t, goodLine, "degree", "5"), "degree: 5 is more than the other nodes (4)"},
		{"partitions 0 read as 1; negative refused", edit(t, goodLine, "partitions", "-2"), "partitions: -2: want at least 1"},
		{"newer schema", edit(t, goodLine, "schema", "3"), "record schema 3 is newer than this uplink's (2): update uplink"},
		{"a string for a number", edit(t, goodLine, "p50_s", `"0.7"`), "json: cannot unmarshal string"},
		{"cut short", goodLine[:60], ErrRecordCut.Error()},
		{"two values", goodLine + " " + goodLine, "more than one JSON value on the line"},
		{"not JSON", "not json", "invalid character"},
		{"blank", "  ", ErrBlankLine.Error()},
	}
	for _, c := range cases {
		_, err := checkLine([]byte(c.line))
		require.ErrorContains(t, err, c.want, c.name)
	}
	// Each field error names its field.
	_, err = checkLine([]byte(edit(t, goodLine, "completion_us", "[-5,700000,1310000]")))
	var fe *FieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "completion_us[0]", fe.Field)
}

// TestCheckRecordInMemory: a record built in memory (not read from a
// line, where JSON has no such numbers) with an infinite or NaN figure is
// refused, naming the field; so is one with per-node rows and no
// completion_us (a schema-0 line with rows gets it from them).
func TestCheckRecordInMemory(t *testing.T) {
	r, err := checkLine([]byte(goodLine))
	require.NoError(t, err)
	withRows := *r
	withRows.CompletionUS = nil
	for i := range 5 {
		withRows.Nodes = append(withRows.Nodes, cell.NodeRow{Index: i})
	}
	require.EqualError(t, CheckRecord(&withRows), "completion_us: absent while 3 receivers completed and the record has per-node rows")
	inf := math.Inf(1)
	r.P50S = &inf
	require.EqualError(t, CheckRecord(r), "p50_s: +Inf is not a finite number")
	p50 := 0.7
	r.P50S = &p50
	r.RxNodeBytes = math.NaN()
	require.EqualError(t, CheckRecord(r), "rx_node_bytes: NaN is not a finite number")
}

// zeros reads as an endless run of zero bytes, counting them.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	clear(p)
	z.n += int64(len(p))
	return len(p), nil
}

// noise reads as endless random bytes, newlines among them.
type noise struct {
	r *rand.ChaCha8
	n int64
}

func (z *noise) Read(p []byte) (int, error) {
	z.n += int64(len(p))
	return z.r.Read(p)
}

// TestScanRecordsBounded: endless input without newlines (/dev/zero) ends
// the read at the line bound, having read little more than it; endless
// noise with lines (/dev/urandom) ends it after MaxBadLines wrong lines;
// each error names the line.
func TestScanRecordsBounded(t *testing.T) {
	z := &zeros{}
	visits := 0
	err := ScanRecords(z, func(int, *cell.Record, error) error { visits++; return nil })
	require.EqualError(t, err, "line 1: a line longer than 64 MiB: not a records file")
	require.ErrorIs(t, err, ErrLineTooLong)
	require.Zero(t, visits)
	require.LessOrEqual(t, z.n, int64(MaxLineBytes+2<<20), "read no more than the bound and a buffer")

	nz := &noise{r: rand.NewChaCha8([32]byte{7})}
	visits = 0
	err = ScanRecords(nz, func(_ int, _ *cell.Record, lerr error) error {
		require.Error(t, lerr)
		visits++
		return nil
	})
	require.ErrorIs(t, err, ErrNotRecords)
	require.Regexp(t, `^line \d+: more than 1000 lines that are not records: not a records file$`, err.Error())
	require.Equal(t, MaxBadLines, visits)
	require.Less(t, nz.n, int64(8<<20))

	// A line of exactly the bound reads (as the line it is: not a record).
	long := append(bytes.Repeat([]byte{' '}, MaxLineBytes-1), 'x', '\n')
	var got error
	require.NoError(t, ScanRecords(bytes.NewReader(long), func(line int, _ *cell.Record, lerr error) error {
		got = lerr
		return nil
	}))
	require.ErrorContains(t, got, "invalid character 'x'")
	err = ScanRecords(bytes.NewReader(append([]byte{'y'}, long...)), func(int, *cell.Record, error) error { return nil })
	require.ErrorIs(t, err, ErrLineTooLong)
}

// TestScanFileDevZero: /dev/zero is not a records file: every reader's
// read of it fails at once, naming the file and the line bound.
func TestScanFileDevZero(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	_, _, err := CheckFile("/dev/zero")
	require.EqualError(t, err, "/dev/zero line 1: a line longer than 64 MiB: not a records file")
	_, _, err = Merge([]string{"/dev/zero"}, MergeOptions{})
	require.EqualError(t, err, "/dev/zero line 1: a line longer than 64 MiB: not a records file")
	_, _, err = RecordKeys("/dev/zero")
	require.EqualError(t, err, "/dev/zero: not a regular file (a records file is JSON Lines, one record a line)")
}

// TestReadRecordsOptions: a missing file is an error naming it, or empty
// with MissingEmpty; Strict stops at the first wrong line (a blank line
// and a cut one only reported); otherwise every wrong line is reported
// and the records around it read.
func TestReadRecordsOptions(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "none.jsonl")
	_, _, err := ReadRecords(missing, ReadOptions{})
	require.EqualError(t, err, missing+": no such file or directory")
	require.ErrorIs(t, err, os.ErrNotExist)
	recs, problems, err := ReadRecords(missing, ReadOptions{MissingEmpty: true})
	require.NoError(t, err)
	require.Empty(t, recs)
	require.Empty(t, problems)

	_, _, err = ReadRecords(dir, ReadOptions{})
	require.EqualError(t, err, dir+": a folder, not a records file")

	path := filepath.Join(dir, "r.jsonl")
	second := edit(t, goodLine, "key", `"k2"`)
	content := goodLine + "\n\n" + second + "\n" + edit(t, goodLine, "p50_s", "-1") + "\n" + edit(t, goodLine, "key", `"k3"`) + "\n" + goodLine[:50]
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))

	recs, problems, err = ReadRecords(path, ReadOptions{})
	require.NoError(t, err)
	require.Len(t, recs, 3)
	var got []string
	for _, p := range problems {
		got = append(got, p.Error())
	}
	require.Equal(t, []string{
		path + " line 2: blank line",
		path + " line 4: p50_s: -1 is negative",
		path + " line 6: " + ErrRecordCut.Error(),
	}, got)

	recs, problems, err = ReadRecords(path, ReadOptions{Strict: true})
	require.EqualError(t, err, path+" line 4: p50_s: -1 is negative")
	var p Problem
	require.ErrorAs(t, err, &p)
	require.Equal(t, Problem{path, 4, p.Err}, p)
	var fe *FieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "p50_s", fe.Field)
	require.Len(t, recs, 2)
	require.Len(t, problems, 1, "the blank line before it")
}

// writeFiles writes each content under dir, returning the paths in order.
func writeFiles(t *testing.T, dir string, contents ...string) []string {
	t.Helper()
	var paths []string
	for i, c := range contents {
		p := filepath.Join(dir, fmt.Sprintf("f%d.jsonl", i))
		require.NoError(t, os.WriteFile(p, []byte(c), 0o644))
		paths = append(paths, p)
	}
	return paths
}

// TestMergeOneRecordPerCell: Merge keeps one record per cell. The same
// record twice is a duplicate, kept once; records of a cell by two uplink
// versions (or two different ones of one version) are a conflict: refused
// by default, naming each cell and its versions, or settled by keeping
// the last one read. Wrong lines are skipped and reported.
func TestMergeOneRecordPerCell(t *testing.T) {
	dir := t.TempDir()
	rec := func(key, version, p50 string) string {
		us := map[string]string{"0.7": "700000", "0.8": "800000", "0.9": "900000"}[p50]
		return edit(t, goodLine, "key", `"`+key+`"`, "version", `"`+version+`"`, "p50_s", p50,
			"completion_us", "[500000,"+us+",1310000]") + "\n"
	}
	// k1: the same record in both files. k2: rebuilt binary, v2. k3: two
	// different records of v1. k4: only in the second file.
	paths := writeFiles(t, dir,
		rec("k1", "v1", "0.7")+rec("k2", "v1", "0.7")+rec("k3", "v1", "0.7")+"not json\n",
		rec("k4", "v1", "0.7")+rec("k1", "v1", "0.7")+rec("k2", "v2", "0.8")+rec("k3", "v1", "0.9"))

	recs, rep, err := Merge(paths, MergeOptions{})
	require.ErrorIs(t, err, ErrConflict)
	require.EqualError(t, err, "a cell with several different records: cell k2 has 2 different records, of uplink v1, v2; cell k3 has 2 different records, of uplink v1, v1")
	require.Nil(t, recs)
	require.Equal(t, []Conflict{{"k2", []string{"v1", "v2"}}, {"k3", []string{"v1", "v1"}}}, rep.Conflicts)
	require.Equal(t, "cell k2 has 2 different records, of uplink v1, v2", rep.Conflicts[0].String())
	require.Len(t, rep.Problems, 1)
	require.Equal(t, paths[0]+" line 4: invalid character 'o' in literal null (expecting 'u')", rep.Problems[0].Error())

	_, _, err = Merge(paths, MergeOptions{OnConflict: "oldest"})
	require.EqualError(t, err, `on conflict "oldest": want refuse or newest`)

	recs, rep, err = Merge(paths, MergeOptions{OnConflict: OnConflictNewest})
	require.NoError(t, err)
	require.Equal(t, 7, rep.Read)
	require.Equal(t, 4, rep.Written)
	require.Equal(t, 1, rep.Duplicates)
	require.Len(t, rep.Conflicts, 2)
	var got []string
	for _, r := range recs {
		got = append(got, fmt.Sprintf("%s %s %g", r.Key, r.Version, *r.P50S))
	}
	require.Equal(t, []string{"k1 v1 0.7", "k2 v2 0.8", "k3 v1 0.9", "k4 v1 0.7"}, got, "one a cell, the last read, by key")

	// The files in the other order: the other records are the newest.
	recs, _, err = Merge([]string{paths[1], paths[0]}, MergeOptions{OnConflict: OnConflictNewest})
	require.NoError(t, err)
	require.Equal(t, "v1", recs[1].Version)
	require.Equal(t, 0.7, *recs[2].P50S)

	// A merge's output merged again with its inputs adds nothing.
	out := filepath.Join(dir, "merged.jsonl")
	var buf bytes.Buffer
	require.NoError(t, WriteRecords(&buf, recs))
	require.NoError(t, os.WriteFile(out, buf.Bytes(), 0o644))
	again, rep, err := Merge([]string{out, paths[1], paths[0]}, MergeOptions{OnConflict: OnConflictNewest})
	require.NoError(t, err)
	require.Equal(t, recs, again)
	require.Len(t, rep.Conflicts, 2)

	// A file that is not a records file ends the merge, naming it.
	_, _, err = Merge([]string{paths[0], filepath.Join(dir, "none.jsonl")}, MergeOptions{})
	require.EqualError(t, err, filepath.Join(dir, "none.jsonl")+": no such file or directory")
}

// TestMergeKeepsUnknownField: a record with a field this build does not
// know merges as the line it was read from, so the merged file keeps it.
func TestMergeKeepsUnknownField(t *testing.T) {
	dir := t.TempDir()
	later := edit(t, goodLine, "from_a_later_build", `[1,2]`)
	paths := writeFiles(t, dir, later+"\n"+edit(t, goodLine, "key", `"k0"`)+"\n")
	n, problems, err := CheckFile(paths[0])
	require.NoError(t, err)
	require.Empty(t, problems)
	require.Equal(t, 2, n)
	recs, _, err := Merge(paths, MergeOptions{})
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, WriteRecords(&buf, recs))
	lines := strings.Split(buf.String(), "\n")
	require.Len(t, lines, 3)
	require.Equal(t, later, lines[0], "the line as read")
	r, err := ParseRecord([]byte(lines[1]))
	require.NoError(t, err)
	require.Equal(t, "k0", r.Key)
	require.Empty(t, r.Unknown)
}

// failingReader fails after its content.
type failingReader struct{ r io.Reader }

func (f failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, errors.New("input/output error")
	}
	return n, err
}

// TestScanRecordsReadError: a read error ends the scan, naming the line
// it was reading.
func TestScanRecordsReadError(t *testing.T) {
	n := 0
	err := ScanRecords(failingReader{strings.NewReader(goodLine + "\n" + goodLine[:10])}, func(_ int, _ *cell.Record, lerr error) error {
		require.NoError(t, lerr)
		n++
		return nil
	})
	require.EqualError(t, err, "line 2: input/output error")
	require.Equal(t, 1, n)
}

// ExampleMerge merges two records files, one record per cell, keeping
// the newest record of a cell that a rebuilt uplink ran again.
func ExampleMerge() {
	dir, err := os.MkdirTemp("", "merge-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	rec := func(version string) string {
		return strings.Replace(goodLine, `"version":"v1"`, `"version":"`+version+`"`, 1) + "\n"
	}
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	os.WriteFile(a, []byte(rec("v1")), 0o644)
	os.WriteFile(b, []byte(rec("v2")), 0o644)

	_, rep, err := Merge([]string{a, b}, MergeOptions{})
	fmt.Println(err)
	fmt.Println(rep.Conflicts[0].Versions)
	recs, _, err := Merge([]string{a, b}, MergeOptions{OnConflict: OnConflictNewest})
	fmt.Println(len(recs), recs[0].Version, err)
	// Output:
	// a cell with several different records: cell k has 2 different records, of uplink v1, v2
	// [v1 v2]
	// 1 v2 <nil>
}
