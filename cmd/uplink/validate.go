package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/protocols/cell"
	"github.com/uplinksim/uplink/sweep"
	"github.com/uplinksim/uplink/validate"
)

// cmdValidate replays a reference table on uplink and prints uplink's
// numbers beside the report's, with the difference and a verdict.
func cmdValidate(args []string, stdout, stderr io.Writer) error {
	return sweepValidate(args, nil, stdout, stderr)
}

// sweepValidate is uplink validate; with sp it runs nothing and hands
// sp the flags and the sweep's cells instead (uplink slurm).
func sweepValidate(args []string, sp *sweepPlan, stdout, stderr io.Writer) error {
	g := newFlagGroups("validate", "Replays a reference table of the study's report (--table) or runs a study of one of its open\nquestions (--study) on uplink, and compares (docs/validation.md).", stdout,
		groupReplay, groupCell, groupNet, groupProtocol, groupOutput, groupPerf)
	var common commonFlags
	common.register(g, commonDefaults{
		seeds: "", seedsHelp: "replace the table's or study's seeds: 7, 7-16 or 7,9,11 (default: its own)",
		knobOrder: "after a table column's own queue, before a study variant's knobs, e.g. router-start=before-dial",
	})
	rf := g.group(groupReplay)
	table := rf.String("table", "", "the reference table to replay (--list-tables)")
	listTables := rf.Bool("list-tables", false, "list the reference tables: what each holds, its rows, the cells, seeds and runs of its replay and their estimated core-hours (with --nodes, --seeds, --arm, --backend, --transport applied), and exit")
	study := rf.String("study", "", "run a study of an open question instead of a table (--list-studies)")
	listStudies := rf.Bool("list-studies", false, "list the studies with their questions and exit")
	answerOnly := rf.Bool("answer-only", false, "with --study, run only the cells its answer reads (its claims' variants and arms, the rerun and the baseline cells it repeats), which a study runs first anyway; the rest of its table prints as not run")
	backendsS := rf.String("backend", "", "only these backend columns, comma-separated: harness, twin, shadow, linux (a difference between two columns is replayed when both are selected)")
	dryRun := rf.Bool("dry-run", false, "print what would run and exit")

	cf := g.group(groupCell)
	nodes := cf.Int("nodes", 0, "replace the table's node count (a shrunk replay is indicative only)")
	armsS := cf.String("arm", "", "only these arms, comma-separated (any catalogue name)")

	transportsS := g.group(groupProtocol).String("transport", "", "only the columns over these transports, comma-separated: quic, tcp")

	of := g.group(groupOutput)
	cache := of.String("cache", "", "records file: finished cells are appended and reused by a rerun (default validate-TABLE.jsonl)")
	reuse := of.StringArray("reuse", nil, "also reuse finished cells from this records file or quoted glob pattern, read only (repeatable; a later file wins for a cell in several, --cache over all), e.g. another table's cache or 'records/validate-*.jsonl'")
	fresh := of.Bool("fresh", false, "ignore the records already in --cache and --reuse (they stay in the files)")
	anyVersion := of.Bool("any-version", false, "reuse cached records made by another uplink version (by default only this build's are reused)")
	cachedOnly := of.Bool("cached-only", false, "run nothing: compare the records already in --cache (a cell with none prints as not run), e.g. while a long replay is still going")
	export := of.String("export", "", "after the comparison, write the records it used (from --cache and --reuse, one per run, migrated to this schema) to this file, replacing it: a results folder's records.jsonl; not the --cache")
	reportDir := of.String("report", "", "also write report.md, bars.png (Figure 1's style) and a completion-time CDF per column into this folder; with --study, report.md with the study's table (p50 and p99, paired per seed)")
	if help, err := g.parse(args, stderr); help || err != nil {
		return err
	}
	fs := g.fs
	if sp != nil {
		sp.flags = fs
	}
	if *listStudies {
		for _, s := range validate.Studies() {
			fmt.Fprintf(stdout, "%-14s %s\n", s.Name, s.Question)
		}
		return nil
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("validate: unexpected argument %q", fs.Arg(0))}
	}
	if *fresh && *cachedOnly {
		return usageError{errors.New("validate: --fresh ignores the records and --cached-only runs nothing: together they compare nothing; drop one")}
	}
	if *answerOnly && *study == "" {
		return usageError{errors.New("validate: --answer-only is for a --study (a table has no claims)")}
	}
	if !*listTables && (*table == "") == (*study == "") {
		return usageError{fmt.Errorf("validate: give --table (one of: %s) or --study (one of: %s)", strings.Join(validate.Tables(), ", "), strings.Join(validate.StudyNames(), ", "))}
	}
	set, err := common.check()
	if err != nil {
		return err
	}
	// Per-node rows feed the report's CDFs.
	ver := buildVersion()
	o := validate.PlanOptions{N: *nodes, Seeds: set.seeds, Knobs: set.knobs,
		Base: cell.Config{Gossip: set.gossip, Version: ver, PerNode: true, SetupQuantum: set.setupQuantum, Encoding: set.encoding, CountsAt: set.countsAt, Backend: set.backend, Partitions: set.partitions}}
	if *nodes != 0 {
		if err := flagCount("nodes", *nodes, 2, des.MaxNodes); err != nil {
			return usageError{fmt.Errorf("--nodes %d: want 2 to %d, or 0 for the table's", *nodes, des.MaxNodes)}
		}
	}
	if *armsS != "" {
		o.Arms = splitList(*armsS)
	}
	if *backendsS != "" {
		o.Backends = splitList(*backendsS)
	}
	if *transportsS != "" {
		o.Transports = splitList(*transportsS)
	}
	if *listTables {
		return printTables(stdout, o)
	}
	// check makes every check of the cells to run before any starts
	// (also with --dry-run); with --cached-only nothing runs.
	// It returns the cells to run: with --skip-over-mem, those that fit.
	check := func(todo []cell.Config) ([]cell.Config, error) {
		if *cachedOnly {
			return todo, nil
		}
		return checkCells(todo, set.mem, set.skipOverMem, stderr)
	}
	runner := func(cfgs []cell.Config, records map[string]*cell.Record, labels map[string][]string) error {
		if *cachedOnly {
			return nil
		}
		ro := set.run
		ro.out, ro.outFlag, ro.labels = *cache, "--cache", labels
		return runMissing(cfgs, records, set.setupProcs, ro, stderr)
	}
	if *study != "" {
		if *cache == "" {
			*cache = studyCacheName(*study)
		}
		if err := checkExport(*export, *cache); err != nil {
			return err
		}
		return runStudy(*study, o, *fresh, *anyVersion, *cachedOnly, *dryRun, *answerOnly, *cache, *reuse, *reportDir, *export, shardOpts{shard: set.shard, list: set.listCells, plan: sp, limit: set.mem.limit}, check, runner, stdout, stderr)
	}
	plan, err := validate.PlanTable(*table, o)
	if err != nil {
		return usageError{err}
	}
	if *cache == "" {
		*cache = "validate-" + *table + ".jsonl"
	}
	if err := checkExport(*export, *cache); err != nil {
		return err
	}
	records := map[string]*cell.Record{}
	if !*fresh {
		if records, err = readAllRecords(*cache, *reuse, ver, *anyVersion, *cachedOnly, stderr); err != nil {
			return err
		}
	}
	// Columns that map onto the same uplink cell (the published harness
	// record and its twin) share its runs.
	var groups [][]cell.Config
	for _, c := range plan.Cells {
		groups = append(groups, c.Configs)
	}
	all, todo, listed, err := sweepRuns(groups, records, shardOpts{shard: set.shard, list: set.listCells, plan: sp, limit: set.mem.limit}, stdout)
	if err != nil || listed {
		return err
	}
	total := len(all)
	fmt.Fprintf(stderr, "validate %s: %d cells, %d runs (%d from %s, %d to run); %d rows not replayed\n",
		*table, len(plan.Cells), total, total-len(todo), recordSources(*cache, *reuse), len(todo), len(plan.Skipped))
	if plan.Shrunk {
		fmt.Fprintln(stderr, "note: the cells are shrunk (--nodes or --seeds): the comparison is indicative only")
	}
	todo, checkErr := check(todo)
	if *dryRun {
		printPlan(stdout, plan, records)
		return checkErr
	}
	if checkErr != nil {
		return checkErr
	}
	runErr := runner(todo, records, nil)
	printComparison(stdout, plan, records)
	if err := exportRecords(*export, all, records, stderr); err != nil {
		return err
	}
	if *reportDir != "" {
		if err := validate.WriteReport(*reportDir, plan, records); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "report written to %s\n", *reportDir)
	}
	if runErr != nil {
		return fmt.Errorf("validate: %w", runErr)
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// recordSources names where a replay's records come from.
// A glob counts as the files it matches (readAllRecords has checked them).
func recordSources(cache string, reuse []string) string {
	n := 0
	for _, pattern := range reuse {
		matches, _ := reusePaths(pattern)
		n += len(matches)
	}
	switch n {
	case 0:
		return cache
	case 1:
		return cache + " and 1 --reuse file"
	}
	return fmt.Sprintf("%s and %d --reuse files", cache, n)
}

// readAllRecords reads the --reuse files in order and then the cache,
// a later file's record winning for a key in several. With cachedOnly and
// no --reuse file, the cache must exist: there is nothing else to compare.
func readAllRecords(cache string, reuse []string, v string, anyVersion, cachedOnly bool, stderr io.Writer) (map[string]*cell.Record, error) {
	out := map[string]*cell.Record{}
	var paths []string
	for _, path := range reuse {
		matches, err := reusePaths(path)
		if err != nil {
			return nil, usageError{fmt.Errorf("--reuse: %w", err)}
		}
		paths = append(paths, matches...)
	}
	if cachedOnly && len(paths) == 0 {
		if _, err := os.Stat(cache); errors.Is(err, os.ErrNotExist) {
			return nil, usageError{fmt.Errorf("--cached-only: the --cache file %s does not exist; name the records file with --cache, or run without --cached-only to fill it", cache)}
		}
	}
	for _, path := range paths {
		recs, err := readRecords(path, "--reuse", v, anyVersion, stderr)
		if err != nil {
			return nil, err
		}
		maps.Copy(out, recs)
	}
	recs, err := readRecords(cache, "--cache", v, anyVersion, stderr)
	if err != nil {
		return nil, err
	}
	maps.Copy(out, recs)
	return out, nil
}

// reusePaths expands one --reuse value: a file, or a glob pattern (quoted
// from the shell, e.g. 'records/validate-*.jsonl') that must match at
// least one file, taken in name order.
func reusePaths(pattern string) ([]string, error) {
	if !strings.ContainsAny(pattern, "*?[") {
		if _, err := os.Stat(pattern); err != nil {
			return nil, err
		}
		return []string{pattern}, nil
	}
	matches, err := filepath.Glob(pattern)
	if err != nil {
		return nil, fmt.Errorf("pattern %q: %w", pattern, err)
	}
	if len(matches) == 0 {
		return nil, fmt.Errorf("pattern %q matches no file", pattern)
	}
	return matches, nil // Glob sorts them
}

// readRecords reads a JSON Lines records file, given with flag (--cache,
// --reuse, or run's --out), into a map by key (a later record of the same
// key wins), keeping only version v's records unless anyVersion. Its lines
// go through the one reader (sweep.ScanFile, strict): a missing --cache or
// --out is empty (a first run creates it) and must otherwise be a regular
// file (a run appends to it); a blank line or a record cut short (a writer
// killed mid-line) is skipped with a warning; any other line that is not
// a valid record is an error naming the file and line.
func readRecords(path, flag, v string, anyVersion bool, stderr io.Writer) (map[string]*cell.Record, error) {
	out := map[string]*cell.Record{}
	other := 0
	appended := flag != "--reuse"
	problems, err := sweep.ScanFile(path, sweep.ReadOptions{MissingEmpty: appended, Regular: appended, Strict: true}, func(_ int, rec *cell.Record) error {
		if rec.Version != v && !anyVersion {
			other++
		} else {
			out[rec.Key] = rec
		}
		return nil
	})
	for _, p := range problems {
		fmt.Fprintf(stderr, "uplink: %v, skipped\n", p)
	}
	if err != nil {
		var p sweep.Problem
		switch {
		case !errors.As(err, &p):
			return nil, fmt.Errorf("%s %s: %w", flag, path, err)
		case p.Line == 0:
			return nil, usageError{fmt.Errorf("%s %w", flag, err)}
		case errors.Is(err, sweep.ErrBOM) || errors.Is(err, sweep.ErrLineTooLong) || errors.Is(err, sweep.ErrNotRecords):
			return nil, usageError{fmt.Errorf("%s %w", flag, err)}
		}
		return nil, usageError{fmt.Errorf("%s %s line %d: not a cell record: %w", flag, p.Path, p.Line, p.Err)}
	}
	if other > 0 {
		hint := "; --any-version reuses them"
		if flag == "--out" {
			hint = "" // run --skip-done reruns them
		}
		fmt.Fprintf(stderr, "uplink: %s: %d records from other uplink versions not reused (this is %s%s)\n", path, other, v, hint)
	}
	return out, nil
}

// printPlan lists the cells a replay runs and the rows it leaves out.
func printPlan(w io.Writer, p *validate.Plan, records map[string]*cell.Record) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "arm\tcolumn\tnodes\tpayload\tseeds\tcached\tstatistics")
	for _, c := range p.Cells {
		cached := 0
		for _, cfg := range c.Configs {
			if records[cfg.Key()] != nil {
				cached++
			}
		}
		var stats []string
		for _, r := range c.Rows {
			stats = append(stats, r.Statistic)
		}
		for _, d := range p.Diffs {
			if d.Cell == c {
				stats = append(stats, d.Ref.Statistic+" vs "+d.Base.Column.Backend)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\n", c.Arm.Published, c.Column, c.N, c.Payload, len(c.Seeds), cached, strings.Join(stats, ", "))
	}
	tw.Flush()
	printSkipped(w, p)
}

func printSkipped(w io.Writer, p *validate.Plan) {
	if len(p.Skipped) == 0 {
		return
	}
	reasons := map[string]int{}
	var order []string
	for _, s := range p.Skipped {
		if reasons[s.Reason] == 0 {
			order = append(order, s.Reason)
		}
		reasons[s.Reason]++
	}
	fmt.Fprintln(w, "\nrows not replayed:")
	for _, r := range order {
		fmt.Fprintf(w, "  %3d  %s\n", reasons[r], r)
	}
}

// printComparison prints the reference beside uplink, row by row, then the
// rankings.
func printComparison(w io.Writer, p *validate.Plan, records map[string]*cell.Record) {
	rows := p.Compare(records)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "arm\tcolumn\tstat\treference\tuplink\tseed range\tseeds\tdiff\tverdict\t")
	for _, r := range rows {
		unit := r.Ref.Unit
		ref := r.Ref.ValueText + " " + unit
		if len(r.PerSeed) == 0 {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t-\t-\t0/%d\t-\t%s\t\n", r.Cell.Arm.Published, r.Cell.Column, r.Ref.Statistic, ref, len(r.Cell.Seeds), r.NoValue())
			continue
		}
		verdict := "outside"
		if r.Within {
			verdict = "within"
		}
		if r.Missing > 0 {
			verdict += " (partial)"
		}
		f := func(v validate.Value) string { return validate.FormatValue(v, unit) }
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s..%s\t%d/%d\t%s\t%s\t\n", r.Cell.Arm.Published, r.Cell.Column, r.Ref.Statistic, ref,
			f(r.Median), f(r.Spread.Lo), f(r.Spread.Hi), len(r.PerSeed), len(r.Cell.Seeds), validate.FormatDiff(r.Diff), verdict)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nverdict "+validate.VerdictRule)
	printDiffs(w, p.CompareDiffs(records))
	if lines := validate.RankingLines(rows); len(lines) > 0 {
		fmt.Fprintln(w, "\nranking of the arms, reference against uplink:")
		for _, l := range lines {
			fmt.Fprintln(w, "  "+l)
		}
	}
	printSkipped(w, p)
}

// printDiffs prints the table's differences between columns beside
// uplink's, from the same pairs of cells.
func printDiffs(w io.Writer, ds []validate.DiffResult) {
	if len(ds) == 0 {
		return
	}
	fmt.Fprintln(w, "\ndifferences between columns (paired: the median of the per-seed differences; else the difference of the medians):")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "arm\tcolumn\tagainst\tstat\tkind\treference\tuplink\tper-seed range\tseeds\tverdict\t")
	for _, d := range ds {
		r := d.Row
		lead := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t", r.Cell.Arm.Published, r.Cell.Column, r.Base.Column, r.Ref.Statistic, r.Kind(), r.RefText())
		if d.Seeds == 0 {
			fmt.Fprintf(tw, "%s-\t-\t0/%d\tnot run\t\n", lead, len(r.Cell.Seeds))
			continue
		}
		fmt.Fprintf(tw, "%s%s\t%s..%s\t%d/%d\t%s\t\n", lead, validate.FormatDiff(d.Value),
			validate.FormatDiff(d.Paired.Lo), validate.FormatDiff(d.Paired.Hi), d.Seeds, len(r.Cell.Seeds), d.Verdict())
	}
	tw.Flush()
	fmt.Fprintln(w, "verdict: within when the reference difference lies in the range of uplink's per-seed differences.")
}

// runMissing runs cfgs (the cells without records) with setupProcs and
// o, appending their records to o.out and adding them to records.
func runMissing(cfgs []cell.Config, records map[string]*cell.Record, setupProcs int, o runOpts, stderr io.Writer) error {
	if len(cfgs) == 0 {
		return nil
	}
	for i := range cfgs {
		cfgs[i].SetupProcs = setupProcs
	}
	o.known = slices.AppendSeq(o.known, maps.Values(records))
	recs, err := runCells(cfgs, o, stderr)
	for _, r := range recs {
		if r != nil {
			records[r.Key] = r
		}
	}
	return err
}

// runStudy runs a study's missing cells and prints its table and reading.
func runStudy(name string, o validate.PlanOptions, fresh, anyVersion, cachedOnly, dryRun, answerOnly bool, cache string, reuse []string, reportDir, export string, sh shardOpts,
	check func([]cell.Config) ([]cell.Config, error), run func([]cell.Config, map[string]*cell.Record, map[string][]string) error, stdout, stderr io.Writer) error {
	st, user, err := loadStudy(name)
	if err != nil {
		return usageError{err}
	}
	if len(o.Arms) > 0 {
		if st, err = st.WithArms(o.Arms); err != nil {
			return usageError{err}
		}
	}
	cells, err := st.Cells(o.N, o.Seeds, o.Base, o.Knobs...)
	if err != nil {
		return usageError{err}
	}
	if user {
		if err := checkUserStudy(st, cells); err != nil {
			return usageError{err}
		}
	}
	records := map[string]*cell.Record{}
	if !fresh {
		if records, err = readAllRecords(cache, reuse, o.Base.Version, anyVersion, cachedOnly, stderr); err != nil {
			return err
		}
	}
	var groups [][]cell.Config
	for _, c := range cells {
		groups = append(groups, c.Configs)
	}
	labels := variantLabels([]validate.Study{st}, [][]validate.StudyCell{cells})
	sh.labels = labels
	all, todo, listed, err := sweepRuns(groups, records, sh, stdout)
	if err != nil || listed {
		return err
	}
	fmt.Fprintf(stderr, "study %s: %s\n%d variants × %d arms, %d runs (%d from %s, %d to run)\n",
		st.Name, st.Question, len(st.Variants), len(st.Arms), len(all), len(all)-len(todo), recordSources(cache, reuse), len(todo))
	todo, first := claimsFirst(todo, st, cells)
	switch {
	case answerOnly:
		fmt.Fprintf(stderr, "--answer-only: the %d runs its answer reads; %d others left out\n", first, len(todo)-first)
		todo = todo[:first]
	case first > 0 && first < len(todo) && !cachedOnly:
		fmt.Fprintf(stderr, "the %d runs its answer reads go first\n", first)
	}
	todo, checkErr := check(todo)
	if checkErr != nil && !dryRun {
		return checkErr
	}
	if dryRun {
		for i, v := range st.Variants {
			skip := ""
			if len(v.Skip) > 0 {
				skip = ", not running " + strings.Join(v.Skip, ", ")
			}
			if len(v.Gossip) > 0 {
				skip = fmt.Sprintf(", gossip %v", v.Gossip) + skip
			}
			if off := v.BRulesOff.String(); off != "" {
				skip = ", variant B's rules off: " + off + skip
			}
			fmt.Fprintf(stdout, "variant %d: %s (profile %s, transport %s, knobs %v%s)\n", i, v.Label, v.Profile, cmp.Or(v.Transport, "quic"), v.Knobs, skip)
		}
		return checkErr
	}
	runErr := run(todo, records, labels)
	printStudy(stdout, st, cells, records)
	if err := exportRecords(export, all, records, stderr); err != nil {
		return err
	}
	if reportDir != "" {
		if err := validate.WriteStudyReport(reportDir, st, cells, records); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "report written to %s\n", reportDir)
	}
	if runErr != nil {
		return fmt.Errorf("validate --study: %w", runErr)
	}
	return nil
}

// claimsFirst orders a study's runs to do with those its answer reads
// (validate.Study.ClaimCells) first, each part in its order, and says how
// many those are.
func claimsFirst(todo []cell.Config, st validate.Study, cells []validate.StudyCell) ([]cell.Config, int) {
	read := map[string]bool{}
	for i, in := range st.ClaimCells(cells) {
		if in {
			for _, cfg := range cells[i].Configs {
				read[cfg.Key()] = true
			}
		}
	}
	out := make([]cell.Config, 0, len(todo))
	for _, cfg := range todo {
		if read[cfg.Key()] {
			out = append(out, cfg)
		}
	}
	n := len(out)
	for _, cfg := range todo {
		if !read[cfg.Key()] {
			out = append(out, cfg)
		}
	}
	return out, n
}

// printStudy prints a study's table from records and its reading.
func printStudy(w io.Writer, st validate.Study, cells []validate.StudyCell, records map[string]*cell.Record) {
	rows := st.Table(cells, records)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	against := "baseline"
	if st.BaseArm != "" {
		against = st.BaseArm
	}
	fmt.Fprintf(tw, "variant\tarm\tseeds\tp50\tp50 range\tp99\tby deadline\tvs %s (%s, per seed)\tdups\trx/node\tqueue drops\tcwnd at publish\tlost before\t\n", against, st.CompareStat())
	for _, r := range rows {
		if r.Seeds == 0 {
			fmt.Fprintf(tw, "%s\t%s\t0\t-\t-\t-\t-\tnot run\t-\t-\t-\t-\t-\t\n", r.Variant, r.Arm)
			continue
		}
		rate := "-"
		if !math.IsNaN(r.ByDeadline) {
			rate = fmt.Sprintf("%.0f%%", 100*r.ByDeadline)
		}
		cwnd, lost := "-", "-"
		if !math.IsNaN(r.CwndKiB) {
			cwnd, lost = fmt.Sprintf("%.1f KiB", r.CwndKiB), fmt.Sprintf("%.0f", r.LostBefore)
		}
		vs := "-"
		switch {
		case r.VsBase != nil:
			vs = fmt.Sprintf("%s [%s, %s]", validate.FormatDiff(r.VsBase.Median), validate.FormatDiff(r.VsBase.Lo), validate.FormatDiff(r.VsBase.Hi))
		case r.IsBase && st.BaseArm == "":
			vs = "baseline"
		case r.IsBase:
			vs = "base arm"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s..%s\t%s\t%s\t%s\t%.0f\t%s\t%s\t%s\t%s\t\n", r.Variant, r.Arm, r.Seeds,
			validate.FormatValue(r.P50, "s"), validate.FormatValue(r.P50Range.Lo, "s"), validate.FormatValue(r.P50Range.Hi, "s"), validate.FormatValue(r.P99, "s"), rate, vs,
			r.Dups, validate.FormatBytes(r.RxNode), validate.FormatCount(r.QueueDrops), cwnd, lost)
	}
	tw.Flush()
	for _, r := range rows {
		if r.PubUplink != nil {
			fmt.Fprintf(w, "publisher's uplink, %s, %s: %s\n", r.Variant, r.Arm, validate.FormatPubUplink(r.PubUplink))
		}
	}
	fmt.Fprintf(w, "\nreading: %s\n", st.Reading(cells, records))
	switch a, err := st.Answer(cells, records); {
	case err != nil:
		fmt.Fprintf(w, "\nanswer: %v\n", err)
	case a != "":
		fmt.Fprintf(w, "\n%s", strings.TrimPrefix(a, "## "))
	}
}

// shardOpts are --shard and --list-cells, and the plan that takes the
// cells in place of running them (uplink slurm).
type shardOpts struct {
	shard string
	list  bool
	plan  *sweepPlan
	// limit is the cells' soft memory limit (bytes, 0 for none) and known
	// the records the sweep holds, which the listed and planned costs
	// follow (costFunc).
	limit int64
	known []*cell.Record
	// labels are the variants of a --vary grid's or a study's cells, by
	// key (variantLabels): --list-cells names them.
	labels map[string][]string
}

// costFunc is a cell's cost as the sweep plans it: sweep.Estimator on the
// committed table and sh.known, its peak memory sweep.LimitedPeak's under
// sh.limit.
func (sh shardOpts) costFunc() func(cell.Config) sweep.Cost {
	e := sweep.NewEstimator(sh.known)
	return func(c cell.Config) sweep.Cost { return e.PlannedCost(c, sh.limit) }
}

// sweepRuns lists a plan's distinct cells (by key, in plan order) that
// --shard keeps (a shard of the whole plan, whatever is cached, so a rerun
// keeps its cells), and of them those without a record; with list it
// prints them (shardCells) and reports true, and so with a plan.
func sweepRuns(groups [][]cell.Config, records map[string]*cell.Record, sh shardOpts, stdout io.Writer) (all, todo []cell.Config, listed bool, err error) {
	seen := map[string]bool{}
	for _, g := range groups {
		for _, cfg := range g {
			if k := cfg.Key(); !seen[k] {
				seen[k] = true
				all = append(all, cfg)
			}
		}
	}
	sh.known = slices.AppendSeq(sh.known, maps.Values(records))
	if all, listed, err = shardCells(all, sh, stdout); err != nil || listed {
		return all, nil, listed, err
	}
	for _, cfg := range all {
		if records[cfg.Key()] == nil {
			todo = append(todo, cfg)
		}
	}
	return all, todo, false, nil
}

// checkExport refuses an --export that is the --cache: exporting replaces
// the file, and the cache is what a rerun resumes from.
func checkExport(export, cache string) error {
	if export == "" || cache == "" {
		return nil
	}
	a, errA := filepath.Abs(export)
	b, errB := filepath.Abs(cache)
	if errA == nil && errB == nil && a == b {
		return usageError{fmt.Errorf("--export %s is the --cache: it would replace the records a rerun resumes from; export to another file", export)}
	}
	return nil
}

// exportRecords writes to path (when given) the records of runs that
// records holds, one JSON line each in the runs' order, replacing the
// file atomically, and says how many runs had none.
func exportRecords(path string, runs []cell.Config, records map[string]*cell.Record, stderr io.Writer) error {
	if path == "" {
		return nil
	}
	n, missing := 0, 0
	err := writeFileAtomic(path, func(w io.Writer) error {
		for _, c := range runs {
			rec := records[c.Key()]
			if rec == nil {
				missing++
				continue
			}
			b, err := sweep.MarshalRecord(rec)
			if err != nil {
				return err
			}
			if _, err := w.Write(append(b, '\n')); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("--export: %w", err)
	}
	fmt.Fprintf(stderr, "exported %d records to %s", n, path)
	switch {
	case missing == 1:
		fmt.Fprint(stderr, " (1 run has none yet)")
	case missing > 1:
		fmt.Fprintf(stderr, " (%d runs have none yet)", missing)
	}
	fmt.Fprintln(stderr)
	return nil
}
