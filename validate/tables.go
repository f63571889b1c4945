package validate

// The report's tables as data (tables/*.csv, one file per table) and the
// arm catalogue of its Appendix A (tables/arms/appendix_a.csv).
// tables/README.md describes every column, its vocabulary and which report
// tables are captured or withheld.

import (
	"bytes"
	"embed"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

//go:embed tables/*.csv tables/arms/appendix_a.csv tables/README.md
var tableFiles embed.FS

// armsFile is the arm catalogue's path in tableFiles.
const armsFile = "tables/arms/appendix_a.csv"

// RefRow is one number of a report table with its provenance. Columns
// marked "list" may hold several values separated by ";" (a row about two
// arms, or about all three scenarios); the others hold one.
type RefRow struct {
	File string // the table's file, e.g. "tables/appendix_d_home.csv"
	Line int    // the row's line in File (the header is line 1)

	Section string // report section: "3" … "10", "D" (an appendix), or "post"
	Table   string // table id within the section, "<section>.<name>"

	Arm          string // list; the report's arm name (Appendix A), e.g. "A-tuned 32k"
	ArmPublished string // list; the published name of the same arm(s), e.g. "atuned"

	Backend   string // list; harness (the published record), twin, shadow, linux
	Transport string // list; quic, tcp
	Queue     string // list; fq_codel, fifo, round-robin
	Scenario  string // list; home, dc20, dcb20, up<N>
	Condition string // list; cold, warm, sndbuf-7MB, sndbuf-64KB

	N            int   // nodes in the cell
	PayloadBytes int64 // payload size in bytes
	Seeds        Seeds // the seeds the number rests on

	Statistic string // list; p50, p99, rate_3s, ... (tables/README.md)
	// Measure says what Value is of Statistic: value (the statistic
	// itself), diff_pct (a difference from Reference in percent), diff_min
	// and diff_max (the ends of a range of differences), ratio, ratio_min,
	// ratio_max (x / Reference), bound_pct (a bound on |difference|).
	Measure   string
	Reference string // what a difference or ratio is taken against (tables/README.md)

	Value     float64 // the number as printed (signs in ASCII)
	ValueText string  // the number's text in the file, keeping the printed precision
	Unit      string  // s, ms, %, x, count, seeds
	Note      string  // the column or sentence the number comes from, and caveats
}

// Seeds is the set of seeds a table number rests on.
type Seeds struct {
	// List holds the seeds when the report names them; nil otherwise.
	List []int
	// Count is the number of seeds: len(List) when named, the printed count
	// when only a count is printed ("unnamed:1"), 0 when unknown.
	Count int
}

// tableColumns is the header every table file has, in this order.
var tableColumns = []string{
	"section", "table", "arm", "arm_published", "backend", "transport", "queue",
	"scenario", "condition", "n", "payload", "seeds", "statistic", "measure",
	"reference", "value", "unit", "note",
}

// The vocabularies of the list columns.
var (
	vocabBackend    = []string{"harness", "twin", "shadow", "linux"}
	vocabTransport  = []string{"quic", "tcp"}
	vocabQueue      = []string{"fq_codel", "fifo", "round-robin"}
	vocabCondition  = []string{"cold", "warm", "sndbuf-7MB", "sndbuf-64KB"}
	vocabStatistic  = []string{"p50", "p90", "p99", "last", "rate_3s", "late_receivers", "dups", "rx_node_bytes", "cpu_mean", "seeds_incomplete", "p99_excess_removed"}
	vocabScenario   = []string{"home", "dc20", "dcb20"}
	upScenario      = regexp.MustCompile(`^up[1-9][0-9]*$`)
	measureUnits    = map[string][]string{"value": {"s", "ms", "%", "count", "seeds"}, "diff_pct": {"%"}, "diff_min": {"%"}, "diff_max": {"%"}, "bound_pct": {"%"}, "ratio": {"x"}, "ratio_min": {"x"}, "ratio_max": {"x"}}
	sectionPattern  = regexp.MustCompile(`^([1-9][0-9]?|[A-D]|post)$`)
	tableIDPattern  = regexp.MustCompile(`^[a-z0-9-]+$`)
	seedItemPattern = regexp.MustCompile(`^([0-9]+)(?:-([0-9]+))?$`)
)

// Tables returns the names of the embedded reference tables, sorted: the
// file names under tables/ without ".csv", as LoadTable takes them.
func Tables() []string {
	files, err := fs.Glob(tableFiles, "tables/*.csv")
	if err != nil { // only for a malformed pattern
		panic(err)
	}
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = strings.TrimSuffix(path.Base(f), ".csv")
	}
	return names
}

// TableTitle says what the named table holds: its line in the files
// table of tables/README.md (the one description of each file), or an
// error for a table without one.
func TableTitle(name string) (string, error) {
	data, err := tableFiles.ReadFile("tables/README.md")
	if err != nil {
		return "", fmt.Errorf("validate: tables/README.md: %w", err)
	}
	// A row reads | `NAME.csv` | ROWS | WHAT IT HOLDS |.
	lead := "| `" + name + ".csv` |"
	for _, line := range strings.Split(string(data), "\n") {
		rest, ok := strings.CutPrefix(line, lead)
		if !ok {
			continue
		}
		cells := strings.Split(strings.TrimSuffix(strings.TrimSpace(rest), "|"), "|")
		if len(cells) == 2 && strings.TrimSpace(cells[1]) != "" {
			return strings.TrimSpace(cells[1]), nil
		}
	}
	return "", fmt.Errorf("validate: table %s has no line in tables/README.md's files table", name)
}

// LoadTable reads and validates the named reference table (a name from
// Tables). Every row is checked against the column vocabularies and the
// arm catalogue; an error names the file, the line and the column.
func LoadTable(name string) ([]RefRow, error) {
	if !slices.Contains(Tables(), name) {
		return nil, fmt.Errorf("validate: no reference table %q (have %s)", name, strings.Join(Tables(), ", "))
	}
	file := "tables/" + name + ".csv"
	data, err := tableFiles.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("validate: %s: %w", file, err)
	}
	arms, err := Arms()
	if err != nil {
		return nil, err
	}
	return parseTable(file, bytes.NewReader(data), arms)
}

// parseTable reads one table file; file names it in errors.
func parseTable(file string, r io.Reader, arms []Arm) ([]RefRow, error) {
	published := make(map[string]string, len(arms))
	for _, a := range arms {
		published[a.Report] = a.Published
	}
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1 // checked below, with a clearer message
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("validate: %s: header: %w", file, err)
	}
	col := make(map[string]int, len(header))
	for i, h := range header {
		if !slices.Contains(tableColumns, h) {
			return nil, fmt.Errorf("validate: %s:1: unknown column %q (columns: %s)", file, h, strings.Join(tableColumns, ","))
		}
		if _, dup := col[h]; dup {
			return nil, fmt.Errorf("validate: %s:1: column %q twice", file, h)
		}
		col[h] = i
	}
	for _, c := range tableColumns {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("validate: %s:1: missing column %q", file, c)
		}
	}
	var rows []RefRow
	seen := make(map[string]int)
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("validate: %s: %w", file, err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != len(header) {
			return nil, fmt.Errorf("validate: %s:%d: %d fields, header has %d", file, line, len(rec), len(header))
		}
		get := func(c string) string { return rec[col[c]] }
		row, err := parseRefRow(get, published)
		if err != nil {
			return nil, fmt.Errorf("validate: %s:%d: %w", file, line, err)
		}
		row.File, row.Line = file, line
		if len(rows) > 0 && (row.Section != rows[0].Section || row.Table != rows[0].Table) {
			return nil, fmt.Errorf("validate: %s:%d: table %s %s, but line %d starts table %s %s: one table per file",
				file, line, row.Section, row.Table, rows[0].Line, rows[0].Section, rows[0].Table)
		}
		key := rowKey(rec, col)
		if prev, dup := seen[key]; dup {
			return nil, fmt.Errorf("validate: %s:%d: same provenance as line %d (every column but value, unit and note)", file, line, prev)
		}
		seen[key] = line
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("validate: %s: no rows", file)
	}
	return rows, nil
}

// rowKey joins a row's provenance columns: every column but value, unit
// and note.
func rowKey(rec []string, col map[string]int) string {
	var b strings.Builder
	for _, c := range tableColumns {
		if c == "value" || c == "unit" || c == "note" {
			continue
		}
		b.WriteString(rec[col[c]])
		b.WriteByte(0)
	}
	return b.String()
}

// parseRefRow validates one row's fields; get returns a column's text.
// published maps the catalogue's report names to published names.
func parseRefRow(get func(string) string, published map[string]string) (RefRow, error) {
	r := RefRow{
		Section: get("section"), Table: get("table"),
		Arm: get("arm"), ArmPublished: get("arm_published"),
		Backend: get("backend"), Transport: get("transport"), Queue: get("queue"),
		Scenario: get("scenario"), Condition: get("condition"),
		Statistic: get("statistic"), Measure: get("measure"), Reference: get("reference"),
		ValueText: get("value"), Unit: get("unit"), Note: get("note"),
	}
	if !sectionPattern.MatchString(r.Section) {
		return RefRow{}, fmt.Errorf("column section: %q is not a section number, an appendix letter or \"post\"", r.Section)
	}
	if id, ok := strings.CutPrefix(r.Table, r.Section+"."); !ok || !tableIDPattern.MatchString(id) {
		return RefRow{}, fmt.Errorf("column table: %q is not %q followed by a lower-case id", r.Table, r.Section+".")
	}
	if err := checkArms(r.Arm, r.ArmPublished, published); err != nil {
		return RefRow{}, err
	}
	for _, c := range []struct {
		name, text string
		vocab      []string
	}{
		{"backend", r.Backend, vocabBackend},
		{"transport", r.Transport, vocabTransport},
		{"queue", r.Queue, vocabQueue},
		{"scenario", r.Scenario, vocabScenario},
		{"condition", r.Condition, vocabCondition},
		{"statistic", r.Statistic, vocabStatistic},
	} {
		if err := checkList(c.name, c.text, c.vocab); err != nil {
			return RefRow{}, err
		}
	}
	var err error
	if r.N, err = positiveInt("n", get("n")); err != nil {
		return RefRow{}, err
	}
	n, err := positiveInt("payload", get("payload"))
	if err != nil {
		return RefRow{}, err
	}
	r.PayloadBytes = int64(n)
	if r.Seeds, err = parseSeeds(get("seeds")); err != nil {
		return RefRow{}, fmt.Errorf("column seeds: %w", err)
	}
	units, ok := measureUnits[r.Measure]
	if !ok {
		return RefRow{}, fmt.Errorf("column measure: unknown measure %q", r.Measure)
	}
	if !slices.Contains(units, r.Unit) {
		return RefRow{}, fmt.Errorf("column unit: %q with measure %s (want one of %s)", r.Unit, r.Measure, strings.Join(units, " "))
	}
	if r.Measure != "value" && strings.TrimSpace(r.Reference) == "" {
		return RefRow{}, fmt.Errorf("column reference: measure %s needs what it is taken against", r.Measure)
	}
	if r.Value, err = strconv.ParseFloat(r.ValueText, 64); err != nil || math.IsInf(r.Value, 0) || math.IsNaN(r.Value) {
		return RefRow{}, fmt.Errorf("column value: bad number %q", r.ValueText)
	}
	return r, nil
}

// checkArms checks a row's arm list against the catalogue: every report
// name known and paired, in order, with its published name.
func checkArms(arm, pub string, published map[string]string) error {
	arms, pubs := strings.Split(arm, ";"), strings.Split(pub, ";")
	if len(arms) != len(pubs) {
		return fmt.Errorf("columns arm, arm_published: %d arms against %d published names", len(arms), len(pubs))
	}
	for i, a := range arms {
		want, ok := published[a]
		if !ok {
			return fmt.Errorf("column arm: %q is not an arm of the report's Appendix A", a)
		}
		if pubs[i] != want {
			return fmt.Errorf("column arm_published: %q for arm %q, Appendix A says %q", pubs[i], a, want)
		}
	}
	return nil
}

// checkList checks a ";"-separated list against a vocabulary (scenario also
// takes up<N>); no value twice.
func checkList(name, text string, vocab []string) error {
	items := strings.Split(text, ";")
	for i, it := range items {
		if !slices.Contains(vocab, it) && !(name == "scenario" && upScenario.MatchString(it)) {
			return fmt.Errorf("column %s: unknown value %q (want one of %s)", name, it, strings.Join(vocab, " "))
		}
		if slices.Contains(items[:i], it) {
			return fmt.Errorf("column %s: %q twice", name, it)
		}
	}
	return nil
}

// positiveInt parses a column that holds a whole number above zero.
func positiveInt(name, text string) (int, error) {
	n, err := strconv.Atoi(text)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("column %s: bad number %q, want a whole number above zero", name, text)
	}
	return n, nil
}

// parseSeeds reads the seeds column: "unknown"; "unnamed:K" (K seeds, not
// named); or ";"-separated seeds and inclusive ranges, "7-16",
// "7-11;13-16", "7".
func parseSeeds(text string) (Seeds, error) {
	if text == "unknown" {
		return Seeds{}, nil
	}
	if k, ok := strings.CutPrefix(text, "unnamed:"); ok {
		n, err := strconv.Atoi(k)
		if err != nil || n <= 0 {
			return Seeds{}, fmt.Errorf("%q: want unnamed:<count above zero>", text)
		}
		return Seeds{Count: n}, nil
	}
	var s Seeds
	for _, item := range strings.Split(text, ";") {
		m := seedItemPattern.FindStringSubmatch(item)
		if m == nil {
			return Seeds{}, fmt.Errorf("%q: %q is not a seed or a range a-b", text, item)
		}
		lo, _ := strconv.Atoi(m[1])
		hi := lo
		if m[2] != "" {
			hi, _ = strconv.Atoi(m[2])
		}
		if hi < lo {
			return Seeds{}, fmt.Errorf("%q: range %q runs backwards", text, item)
		}
		for seed := lo; seed <= hi; seed++ {
			if slices.Contains(s.List, seed) {
				return Seeds{}, fmt.Errorf("%q: seed %d twice", text, seed)
			}
			s.List = append(s.List, seed)
		}
	}
	s.Count = len(s.List)
	return s, nil
}

// Arm is one row of the report's arm catalogue (Appendix A).
type Arm struct {
	Report    string // the report's name, e.g. "A-tuned 32k"
	Published string // the published (record) name, e.g. "atuned"
	Figures   []int  // the post's figures the arm appears in
}

// Arms returns the report's arm catalogue, Appendix A, in its order.
func Arms() ([]Arm, error) {
	data, err := tableFiles.ReadFile(armsFile)
	if err != nil {
		return nil, fmt.Errorf("validate: %s: %w", armsFile, err)
	}
	cr := csv.NewReader(bytes.NewReader(data))
	recs, err := cr.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("validate: %s: %w", armsFile, err)
	}
	if len(recs) == 0 || !slices.Equal(recs[0], []string{"report_name", "published_name", "figures"}) {
		return nil, fmt.Errorf("validate: %s:1: header must be report_name,published_name,figures", armsFile)
	}
	var arms []Arm
	for i, rec := range recs[1:] {
		a := Arm{Report: rec[0], Published: rec[1]}
		for _, f := range strings.Split(rec[2], ";") {
			n, err := strconv.Atoi(f)
			if err != nil {
				return nil, fmt.Errorf("validate: %s:%d: column figures: bad number %q", armsFile, i+2, f)
			}
			a.Figures = append(a.Figures, n)
		}
		for _, b := range arms {
			if b.Report == a.Report || b.Published == a.Published {
				return nil, fmt.Errorf("validate: %s:%d: arm %q / %q listed twice", armsFile, i+2, a.Report, a.Published)
			}
		}
		arms = append(arms, a)
	}
	return arms, nil
}
