package validate

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/protocols/arms"
	"github.com/uplinksim/uplink/protocols/cell"
)

// A replay runs the cells behind a reference table's numbers on uplink,
// each on the profile that reproduces the row's backend, and sets uplink's
// result beside the reference.
//
// Which rows replay: the rows whose measure is "value" and whose statistic
// is one a cell record carries (p50, p90, p99, last, rate_3s), about one
// arm, one backend, one transport, one queue, one scenario and one
// condition. A difference between two columns of one arm (diff_pct, with
// its printed range as diff_min and diff_max; the column it is taken
// against in the reference field) replays from uplink's two cells: paired
// per seed when the table's note says the per-seed difference, otherwise
// as the difference of the medians. The others (ratios, bounds, host CPU,
// rows about several arms or scenarios) stay in the table as context and
// are listed as not replayed, with the reason.
//
// How a row maps onto a cell (every choice here is the report's, section 2
// and Appendix C, or says where it is ours):
//
//   - backend harness (the published record) and twin: the harness profile;
//     shadow: the shadow profile; linux: the kernel profile.
//   - queue: the profile's own unless the row names another: shadow with
//     round-robin runs uplink-qdisc=shadow-rr, with fq_codel
//     uplink-qdisc=fq_codel; linux with fq_codel runs fq_codel both ways
//     (the namespace cells put the same leaf on upload and download).
//   - condition cold: no warm-up; warm: 320 KiB each way over a dummy
//     stream on every connection (section 9), publish right after it
//     ends. The send-buffer conditions (section 5) have no knob yet.
//   - the arm by its published name.
//
// A replay may shrink the cell (fewer nodes, other seeds) for a quick
// look; its output then says the comparison is indicative only.

// Column is one backend column of a reference table.
type Column struct {
	Backend, Transport, Queue, Scenario, Condition string
}

func (c Column) String() string {
	s := c.Backend + " " + c.Transport + " " + c.Queue
	if c.Scenario != "home" {
		s += " " + c.Scenario
	}
	if c.Condition != "cold" {
		s += " " + c.Condition
	}
	return s
}

// ReplayCell is one reference cell (arm, column, size) with the uplink
// configuration that replays it, one per seed.
type ReplayCell struct {
	Arm     arms.Arm
	Column  Column
	N       int
	Payload int
	Seeds   []uint64
	Configs []cell.Config // one per seed
	Rows    []RefRow      // the reference numbers about this cell
}

// Skip is a table row that is not replayed, with the reason.
type Skip struct {
	Row    RefRow
	Reason string
}

// Plan is what replaying a table runs.
type Plan struct {
	Table   string
	Cells   []*ReplayCell
	Diffs   []*DiffRow // differences between two columns, replayed from both cells
	Skipped []Skip
	// Shrunk is set when the options changed the cells' size or seeds.
	Shrunk bool
}

// PlanOptions adapt a replay. Zero values keep the table's own.
type PlanOptions struct {
	Seeds    []uint64 // replace every row's seeds
	N        int      // replace every row's node count
	Arms     []string // only these arms (any catalogue name)
	Backends []string // only these backends (harness, twin, shadow, linux)
	// Transports keeps only the columns over these transports (quic,
	// tcp); a difference needs both its columns kept.
	Transports []string
	// Base is the configuration every cell starts from (gossip knobs,
	// window, degree); the plan sets arm, profile, transport, knobs, size,
	// scenario, condition and seed.
	Base cell.Config
	// Knobs override profile knobs ("name=value", in order) in every cell,
	// after the column's own: one modelling choice swapped across a whole
	// table. A study applies them before its variants' knobs.
	Knobs []string
}

// replayable statistics and how a record gives them.
var recordStats = map[string]func(*cell.Record) (Value, bool){
	"p50":  func(r *cell.Record) (Value, bool) { return ptrValue(r.P50S), true },
	"p90":  func(r *cell.Record) (Value, bool) { return ptrValue(r.P90S), true },
	"p99":  func(r *cell.Record) (Value, bool) { return ptrValue(r.P99S), true },
	"last": func(r *cell.Record) (Value, bool) { return ptrValue(r.LastS), true },
	"rate_3s": func(r *cell.Record) (Value, bool) {
		return Known(100 * float64(r.RateK) / float64(max(r.RateN, 1))), true
	},
	// Section 5's late receivers: unknown (censored) with the p50;
	// absent from a record without the count.
	"late_receivers": func(r *cell.Record) (Value, bool) {
		switch {
		case r.P50S == nil:
			return CensoredValue(), true
		case r.Late == nil:
			return Value{}, false
		}
		return Known(float64(*r.Late)), true
	},
}

// diffStats are the statistics a difference between columns can be
// replayed for: recordStats and the bytes a receiver takes in.
var diffStats = map[string]func(*cell.Record) Value{
	"rx_node_bytes": func(r *cell.Record) Value { return Known(r.RxNodeBytes) },
}

func diffStat(stat string, r *cell.Record) (Value, bool) {
	if f, ok := recordStats[stat]; ok {
		return f(r)
	}
	if f, ok := diffStats[stat]; ok {
		return f(r), true
	}
	return Value{}, false
}

func ptrValue(v *float64) Value {
	if v == nil {
		return CensoredValue()
	}
	return Known(*v)
}

// RecordStat returns a record's value of a replayable statistic; ok is
// false for a statistic that is not replayable or that the record lacks.
func RecordStat(stat string, r *cell.Record) (Value, bool) {
	f, ok := recordStats[stat]
	if !ok {
		return Value{}, false
	}
	return f(r)
}

// PlanTable plans the replay of table name.
func PlanTable(name string, o PlanOptions) (*Plan, error) {
	rows, err := LoadTable(name)
	if err != nil {
		return nil, err
	}
	var want []arms.Arm
	for _, a := range o.Arms {
		arm, err := arms.LookupArm(a)
		if err != nil {
			return nil, fmt.Errorf("replay %s: %w", name, err)
		}
		want = append(want, arm)
	}
	for _, b := range o.Backends {
		if _, err := profileFor(b); err != nil {
			return nil, fmt.Errorf("replay %s: %w", name, err)
		}
	}
	for _, t := range o.Transports {
		if t != "quic" && t != "tcp" {
			return nil, fmt.Errorf("replay %s: unknown transport %q; valid: quic, tcp", name, t)
		}
	}
	p := &Plan{Table: name}
	byKey := map[string]*ReplayCell{}
	cellOf := func(arm arms.Arm, col Column, r RefRow) (*ReplayCell, error) {
		n, seeds := r.N, seedsOf(r.Seeds)
		if o.N != 0 {
			n = o.N
		}
		if o.Seeds != nil {
			seeds = o.Seeds
		}
		if n != r.N || !slices.Equal(seeds, seedsOf(r.Seeds)) {
			p.Shrunk = true // the table's own size and seeds, given again, are not a shrink
		}
		key := fmt.Sprint(arm.Name, col, n, r.PayloadBytes, seeds)
		if c := byKey[key]; c != nil {
			return c, nil
		}
		c := &ReplayCell{Arm: arm, Column: col, N: n, Payload: int(r.PayloadBytes), Seeds: seeds}
		for _, s := range seeds {
			cfg, err := configFor(o.Base, arm, col, n, int(r.PayloadBytes), s, o.Knobs)
			if err != nil {
				return nil, fmt.Errorf("replay %s, %s line %d: %w", name, r.File, r.Line, err)
			}
			c.Configs = append(c.Configs, cfg)
		}
		byKey[key] = c
		p.Cells = append(p.Cells, c)
		return c, nil
	}
	diffs := map[string]*DiffRow{}
	for _, r := range rows {
		if r.Measure != "diff_pct" && r.Measure != "diff_min" && r.Measure != "diff_max" {
			continue
		}
		d, reason := planDiff(r, o, want)
		if d == nil && reason == "" {
			continue // another arm or backend than asked for
		}
		if reason != "" {
			p.Skipped = append(p.Skipped, Skip{Row: r, Reason: reason})
			continue
		}
		k := fmt.Sprint(r.ArmPublished, d.col, d.base, r.Statistic, r.N, r.PayloadBytes, r.Seeds.List)
		dr := diffs[k]
		if dr == nil {
			dr = &DiffRow{Paired: strings.Contains(r.Note, "per-seed difference")}
			var err error
			if dr.Cell, err = cellOf(d.arm, d.col, r); err != nil {
				return nil, err
			}
			if dr.Base, err = cellOf(d.arm, d.base, r); err != nil {
				return nil, err
			}
			diffs[k] = dr
			p.Diffs = append(p.Diffs, dr)
		}
		switch r.Measure {
		case "diff_pct":
			dr.Ref = r
		case "diff_min":
			dr.Lo = &r
		case "diff_max":
			dr.Hi = &r
		}
	}
	for _, r := range rows {
		reason := ""
		var arm arms.Arm
		switch {
		case r.Measure == "diff_pct" || r.Measure == "diff_min" || r.Measure == "diff_max":
			continue // planned above
		case r.Measure != "value":
			reason = "a " + r.Measure + " (context, not a cell's value)"
		case recordStats[r.Statistic] == nil:
			reason = "statistic " + r.Statistic + " is not in a cell record"
		case strings.Contains(r.ArmPublished, ";") || strings.Contains(r.Backend, ";") || strings.Contains(r.Transport, ";") ||
			strings.Contains(r.Queue, ";") || strings.Contains(r.Scenario, ";") || strings.Contains(r.Condition, ";"):
			reason = "the row is about several cells"
		default:
			if arm, err = arms.LookupArm(r.ArmPublished); err != nil {
				reason = "arm " + r.ArmPublished + " is not in the catalogue"
			}
		}
		if reason == "" && len(want) > 0 && !slices.ContainsFunc(want, func(a arms.Arm) bool { return a.Name == arm.Name }) {
			continue
		}
		if reason == "" && len(o.Backends) > 0 && !slices.Contains(o.Backends, r.Backend) {
			continue
		}
		if reason == "" && len(o.Transports) > 0 && !slices.Contains(o.Transports, r.Transport) {
			continue
		}
		if reason != "" {
			p.Skipped = append(p.Skipped, Skip{Row: r, Reason: reason})
			continue
		}
		col := Column{r.Backend, r.Transport, r.Queue, r.Scenario, r.Condition}
		if o.Seeds == nil && len(r.Seeds.List) == 0 {
			p.Skipped = append(p.Skipped, Skip{Row: r, Reason: "the report does not name its seeds; give --seeds"})
			continue
		}
		c, err := cellOf(arm, col, r)
		if err != nil {
			return nil, err
		}
		c.Rows = append(c.Rows, r)
	}
	for k, d := range diffs {
		if d.Ref.Measure == "" { // a range without its difference
			p.Diffs = slices.DeleteFunc(p.Diffs, func(x *DiffRow) bool { return x == d })
			delete(diffs, k)
		}
	}
	return p, nil
}

// DiffRow is a table's difference between two columns of one arm (for
// example "real stack vs harness, p50: +25% [−13 to +53%]"), replayed
// from uplink's two cells: Paired rows are the median across seeds of the
// per-seed difference (section 10's statistic), the others the difference
// of the two medians (Appendix D's).
type DiffRow struct {
	Ref    RefRow  // the diff_pct row
	Lo, Hi *RefRow // its printed range (diff_min, diff_max), if any
	Paired bool
	Cell   *ReplayCell // the column the difference is of
	Base   *ReplayCell // the column it is taken against
}

type plannedDiff struct {
	arm       arms.Arm
	col, base Column
}

// planDiff reads a difference row: its arm, its column and the column in
// its reference field ("backend/transport/queue[/condition]"). It returns
// nil and no reason for a row the options leave out.
func planDiff(r RefRow, o PlanOptions, want []arms.Arm) (*plannedDiff, string) {
	switch {
	case strings.Contains(r.Reference, ";") || strings.Contains(r.ArmPublished, ";") || strings.Contains(r.Backend, ";") ||
		strings.Contains(r.Transport, ";") || strings.Contains(r.Queue, ";") || strings.Contains(r.Scenario, ";") || strings.Contains(r.Condition, ";"):
		return nil, "a difference about several cells"
	case recordStats[r.Statistic] == nil && diffStats[r.Statistic] == nil:
		return nil, "statistic " + r.Statistic + " is not in a cell record"
	case o.Seeds == nil && len(r.Seeds.List) == 0:
		return nil, "the report does not name its seeds; give --seeds"
	}
	parts := strings.Split(r.Reference, "/")
	if len(parts) < 3 || len(parts) > 4 {
		return nil, "reference " + r.Reference + " does not name one column"
	}
	base := Column{parts[0], parts[1], parts[2], r.Scenario, r.Condition}
	if len(parts) == 4 {
		base.Condition = parts[3]
	}
	arm, err := arms.LookupArm(r.ArmPublished)
	if err != nil {
		return nil, "arm " + r.ArmPublished + " is not in the catalogue"
	}
	if len(want) > 0 && !slices.ContainsFunc(want, func(a arms.Arm) bool { return a.Name == arm.Name }) {
		return nil, ""
	}
	if len(o.Backends) > 0 && (!slices.Contains(o.Backends, r.Backend) || !slices.Contains(o.Backends, base.Backend)) {
		return nil, "" // a difference needs both its columns selected
	}
	if len(o.Transports) > 0 && (!slices.Contains(o.Transports, r.Transport) || !slices.Contains(o.Transports, base.Transport)) {
		return nil, ""
	}
	col := Column{r.Backend, r.Transport, r.Queue, r.Scenario, r.Condition}
	if _, err := profileFor(col.Backend); err != nil {
		return nil, err.Error()
	}
	if _, err := profileFor(base.Backend); err != nil {
		return nil, err.Error()
	}
	return &plannedDiff{arm: arm, col: col, base: base}, ""
}

// DiffResult is a replayed difference beside the reference.
type DiffResult struct {
	Row     *DiffRow
	Seeds   int   // seeds with a record on both sides
	Value   Value // uplink's difference by the row's statistic (paired or of the medians), percent
	Paired  Paired
	Within  bool // the reference difference lies in uplink's per-seed range
	Missing bool // some seed lacks a record on one side
}

// CompareDiffs replays the plan's differences from the records. Seeds with
// a record on both sides are paired; the verdict reads "within" when the
// reference difference lies in the range of uplink's per-seed differences.
func (p *Plan) CompareDiffs(records map[string]*cell.Record) []DiffResult {
	var out []DiffResult
	for _, d := range p.Diffs {
		res := DiffResult{Row: d}
		cand, ref := map[int]Value{}, map[int]Value{}
		var cv, rv []Value
		for i, cfg := range d.Cell.Configs {
			rc := records[cfg.Key()]
			var rb *cell.Record
			if i < len(d.Base.Configs) {
				rb = records[d.Base.Configs[i].Key()]
			}
			if rc == nil || rb == nil {
				res.Missing = true
				continue
			}
			a, okA := diffStat(d.Ref.Statistic, rc)
			b, okB := diffStat(d.Ref.Statistic, rb)
			if !okA || !okB {
				res.Missing = true
				continue
			}
			cand[int(cfg.Seed)], ref[int(cfg.Seed)] = a, b
			cv, rv = append(cv, a), append(rv, b)
		}
		res.Seeds = len(cand)
		if res.Seeds > 0 {
			var err error
			if res.Paired, err = PairedDiff(cand, ref); err == nil {
				res.Within = res.Paired.Spread.Contains(Known(d.Ref.Value))
			}
			if d.Paired {
				res.Value = res.Paired.Median
			} else {
				mc, _ := Median(cv)
				mr, _ := Median(rv)
				res.Value, _ = DiffPct(mc, mr)
			}
		}
		out = append(out, res)
	}
	return out
}

// Kind names the row's statistic: "paired" or "of medians".
func (d *DiffRow) Kind() string {
	if d.Paired {
		return "paired"
	}
	return "of medians"
}

// Verdict is "within" or "outside", with " (partial)" when some seed
// lacks a record on one side.
func (r DiffResult) Verdict() string {
	v := "outside"
	if r.Within {
		v = "within"
	}
	if r.Missing {
		v += " (partial)"
	}
	return v
}

// RefText prints the reference difference as the table does: "+25%
// [−13 to +53%]", or "+25%" without a printed range.
func (d *DiffRow) RefText() string {
	if d.Lo == nil || d.Hi == nil {
		return FormatDiff(Known(d.Ref.Value))
	}
	return FormatPaired(Paired{Median: Known(d.Ref.Value), Spread: Spread{Lo: Known(d.Lo.Value), Hi: Known(d.Hi.Value)}})
}

func seedsOf(s Seeds) []uint64 {
	out := make([]uint64, 0, len(s.List))
	for _, x := range s.List {
		out = append(out, uint64(x))
	}
	return out
}

// profileFor names the profile of a backend.
func profileFor(backend string) (string, error) {
	switch backend {
	case "harness", "twin":
		return "harness", nil
	case "shadow":
		return "shadow", nil
	case "linux":
		return "kernel", nil
	}
	return "", fmt.Errorf("backend %q: want harness, twin, shadow or linux", backend)
}

// configFor builds the cell configuration of one reference cell at seed.
func configFor(base cell.Config, arm arms.Arm, col Column, n, payload int, seed uint64, knobs []string) (cell.Config, error) {
	name, err := profileFor(col.Backend)
	if err != nil {
		return cell.Config{}, err
	}
	prof, err := cell.LookupProfile(name)
	if err != nil {
		return cell.Config{}, err
	}
	set := func(k, v string) error { return prof.Set(k, v) }
	switch {
	case col.Backend == "shadow" && col.Queue == "round-robin":
		err = set("uplink-qdisc", "shadow-rr")
	case col.Backend == "shadow" && col.Queue == "fq_codel":
		err = set("uplink-qdisc", "fq_codel")
	case col.Backend == "linux" && col.Queue == "fq_codel":
		if err = set("uplink-qdisc", "fq_codel"); err == nil {
			err = set("downlink-qdisc", "fq_codel")
		}
	case (col.Backend == "harness" || col.Backend == "twin") && col.Queue != "fq_codel",
		col.Backend == "shadow" && col.Queue != "fifo",
		col.Backend == "linux" && col.Queue != "fifo":
		err = fmt.Errorf("queue %q under backend %s has no mapping", col.Queue, col.Backend)
	}
	if err == nil {
		err = conditionKnobs(col, set)
	}
	if err == nil {
		err = prof.SetKnobs(knobs)
	}
	if err != nil {
		return cell.Config{}, err
	}
	c := base
	c.Arm, c.Seed, c.N, c.Payload, c.Net = arm.Name, seed, n, payload, col.Scenario
	c.Transport, c.Profile = col.Transport, prof
	if col.Condition == "warm" {
		c.Warmup = cell.Warmup{Kind: "streams", Stream: 320 << 10}
	}
	c.Degree = reportDegree(c.Degree, n)
	if c.Window == 0 {
		c.Window = 8 * des.Second
	}
	return c, nil
}

// NoValue says why a row has no uplink value: its cell has not run, or its
// records lack the statistic.
func (r Row) NoValue() string {
	if r.Lacking > 0 {
		return "not in the records (rerun the cell)"
	}
	return "not run"
}

// conditionKnobs sets what a column's condition changes in its profile.
// The warm condition is a mode of the cell driver, not a knob (configFor).
// Section 5's send-buffer rows cap quic-go's UDP send buffer under Shadow:
// "7 MB" is quic-go's own request (stored doubled, as in the report's
// cells), "64 KB" the stored size ("about 10 ms of uplink" at 50 Mbit/s),
// so the request is capped at 32 KiB; the receive buffer is left alone.
func conditionKnobs(col Column, set func(k, v string) error) error {
	switch col.Condition {
	case "cold", "warm":
		return nil
	case "sndbuf-7MB", "sndbuf-64KB":
		if col.Backend != "shadow" || col.Transport != "quic" {
			return fmt.Errorf("condition %s caps quic-go's UDP send buffer under Shadow; it has no meaning for %s over %s", col.Condition, col.Backend, col.Transport)
		}
		if col.Condition == "sndbuf-64KB" {
			return set("sndbuf-max", "32768")
		}
		return nil
	}
	return fmt.Errorf("condition %q has no mapping", col.Condition)
}

// Row is one replayed number beside its reference.
type Row struct {
	Ref      RefRow
	Cell     *ReplayCell
	PerSeed  []Value // uplink, by the cell's seeds; missing seeds left out
	Missing  int     // seeds without a record, or whose record lacks the statistic
	Lacking  int     // of those, seeds whose record lacks it (a record without the field)
	Median   Value
	Spread   Spread
	Diff     Value // (uplink − reference) / reference, in percent
	Within   bool  // the reference lies within uplink's seed range
	Censored bool
}

// Compare sets the records (by Config.Key) beside the plan's reference
// numbers.
//
// The verdict "within the seed spread" needs the reference backend's
// per-seed values, which the report's tables do not print; it is read here
// as: the reference median lies within uplink's own range of per-seed
// values (the same spread test with the roles swapped, on the assumption
// that both backends spread alike over the same seeds).
func (p *Plan) Compare(records map[string]*cell.Record) []Row {
	var out []Row
	for _, c := range p.Cells {
		for _, r := range c.Rows {
			row := Row{Ref: r, Cell: c}
			for _, cfg := range c.Configs {
				rec := records[cfg.Key()]
				if rec == nil {
					row.Missing++
					continue
				}
				v, ok := RecordStat(r.Statistic, rec)
				if !ok {
					row.Missing++
					row.Lacking++
					continue
				}
				if !v.Censored {
					v.V *= recordScale(r.Statistic, r.Unit)
				}
				row.PerSeed = append(row.PerSeed, v)
			}
			if len(row.PerSeed) > 0 {
				row.Median, _ = Median(row.PerSeed)
				row.Spread, _ = SeedSpread(row.PerSeed)
				row.Diff, _ = DiffPct(row.Median, Known(r.Value))
				row.Within = row.Spread.Contains(Known(r.Value))
				row.Censored = row.Median.Censored
			}
			out = append(out, row)
		}
	}
	slices.SortStableFunc(out, func(a, b Row) int {
		if c := cmp.Compare(a.Cell.Column.String(), b.Cell.Column.String()); c != 0 {
			return c
		}
		return cmp.Compare(a.Ref.Statistic, b.Ref.Statistic)
	})
	return out
}

// recordScale converts a record's statistic into the reference row's
// unit: records hold times in seconds, and some tables print milliseconds.
func recordScale(stat, unit string) float64 {
	switch stat {
	case "p50", "p90", "p99", "last":
		if unit == "ms" {
			return 1000
		}
	}
	return 1
}

// Rankings compares, per column and statistic, the order of the arms by
// the reference medians with their order by uplink's medians (rows with an
// uplink median only).
func Rankings(rows []Row) map[string]Ranking {
	type group struct{ ref, cand map[string]Value }
	groups := map[string]*group{}
	for _, r := range rows {
		if len(r.PerSeed) == 0 {
			continue
		}
		k := r.Cell.Column.String() + " " + r.Ref.Statistic
		g := groups[k]
		if g == nil {
			g = &group{ref: map[string]Value{}, cand: map[string]Value{}}
			groups[k] = g
		}
		g.ref[r.Cell.Arm.Published] = Known(r.Ref.Value)
		g.cand[r.Cell.Arm.Published] = r.Median
	}
	out := map[string]Ranking{}
	for k, g := range groups {
		if len(g.ref) < 2 {
			continue
		}
		if rk, err := CompareRankings(g.ref, g.cand); err == nil {
			out[k] = rk
		}
	}
	return out
}

// VerdictRule says how the verdict reads, for printing under a comparison.
const VerdictRule = `"within": the reference median lies in uplink's range of per-seed values (the tables print no per-seed reference values).`

// RankingLines describes Rankings(rows), one line per column and
// statistic, sorted: "COLUMN STAT: same order (Kendall tau 1.00)" or the
// reversed pairs.
func RankingLines(rows []Row) []string {
	rk := Rankings(rows)
	keys := make([]string, 0, len(rk))
	for k := range rk {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		r := rk[k]
		word := "same order"
		if !r.Same() {
			word = fmt.Sprintf("%d pairs reversed %v", r.Discordant, r.DiscordantPairs)
		}
		out = append(out, fmt.Sprintf("%s: %s (Kendall tau %.2f)", k, word, r.Tau))
	}
	return out
}

// reportDegree is the dial-graph degree of a replayed or studied cell of
// n nodes: the given one, else the report's 70 (docs/references.md, "A
// cell"), and the complete graph when a shrunk cell is too small for it.
func reportDegree(degree, n int) int {
	if degree == 0 {
		degree = 70
	}
	return min(degree, n-1)
}
