package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/uplinksim/uplink/internal/outfile"
	"github.com/uplinksim/uplink/protocols/cell"
	"github.com/uplinksim/uplink/sweep"
)

const recordsUsage = `Usage:
  uplink records check FILE...
      check every line of records files (sweep.CheckRecord's rules, docs/records.md)
  uplink records merge [--on-conflict refuse|newest] [--force] OUT FILE...
      merge records files into OUT, one record per cell (key), sorted by key

A cell with several different records in the files (a rerun by another
uplink version, a changed record) is a conflict:
  --on-conflict refuse   (the default) write nothing and fail, naming each
                         such cell and the versions of its records
  --on-conflict newest   keep the last record read: the files in the order
                         given, each file's lines in order
The same record read twice is kept once. OUT may be among the FILEs: the
merge then adds to it (OUT is replaced only once it is written whole). An
OUT that exists and is not among them is refused, unless --force replaces
it. Lines that are not records are skipped and listed.
`

// cmdRecords checks or merges records files.
func cmdRecords(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{errors.New("records: want check or merge\n" + recordsUsage)}
	}
	switch args[0] {
	case "check":
		return recordsCheck(args[1:], stdout)
	case "merge":
		return recordsMerge(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, recordsUsage)
		return nil
	}
	return usageError{fmt.Errorf("records: unknown subcommand %q; want check or merge", args[0])}
}

// recordsCheck checks every line of every file (sweep.CheckFile) and fails
// when any is wrong.
func recordsCheck(paths []string, stdout io.Writer) error {
	if len(paths) == 0 {
		return usageError{errors.New("records check: name the records files")}
	}
	bad := 0
	for _, p := range paths {
		n, problems, err := sweep.CheckFile(p)
		for _, pr := range problems {
			fmt.Fprintln(stdout, pr)
		}
		if err != nil {
			return fmt.Errorf("records check: %w", err)
		}
		bad += len(problems)
		fmt.Fprintf(stdout, "%s: %d records valid, %d lines wrong\n", p, n, len(problems))
	}
	if bad > 0 {
		return fmt.Errorf("records check: %d lines wrong", bad)
	}
	return nil
}

// onConflictFlag adds --on-conflict to fs: how a merge of records files
// settles a cell with several different records (sweep.MergeOptions).
func onConflictFlag(fs *pflag.FlagSet) *string {
	return fs.String("on-conflict", sweep.OnConflictRefuse, "a cell with several different records in the files: refuse (fail, naming the cells) or newest (keep the last one read: the files in the order given, lines in file order)")
}

// checkOnConflict refuses an --on-conflict that is not a rule.
func checkOnConflict(cmd, onConflict string) error {
	if onConflict != sweep.OnConflictRefuse && onConflict != sweep.OnConflictNewest {
		return usageError{fmt.Errorf("%s: --on-conflict %q: want %s or %s", cmd, onConflict, sweep.OnConflictRefuse, sweep.OnConflictNewest)}
	}
	return nil
}

// mergeFiles merges records files (sweep.Merge) for the command cmd,
// printing the lines skipped to stderr; a conflict refused names each
// cell, what was not done (refused) and the flag that settles it.
func mergeFiles(cmd, refused string, paths []string, onConflict string, stderr io.Writer) ([]*cell.Record, sweep.MergeReport, error) {
	if err := checkOnConflict(cmd, onConflict); err != nil {
		return nil, sweep.MergeReport{}, err
	}
	recs, rep, err := sweep.Merge(paths, sweep.MergeOptions{OnConflict: onConflict})
	for _, p := range rep.Problems {
		fmt.Fprintf(stderr, "uplink: skipped: %v\n", p)
	}
	if errors.Is(err, sweep.ErrConflict) {
		var b strings.Builder
		cells := fmt.Sprintf("%d cells have", len(rep.Conflicts))
		if len(rep.Conflicts) == 1 {
			cells = "1 cell has"
		}
		fmt.Fprintf(&b, "%s: %s several different records (%s):", cmd, cells, refused)
		for _, c := range rep.Conflicts {
			fmt.Fprintf(&b, "\n  %v", c)
		}
		fmt.Fprintf(&b, "\n--on-conflict newest keeps each cell's last record read (the files in the order given, lines in file order); or remove the records not wanted")
		return nil, rep, errors.New(b.String())
	}
	if err != nil {
		return nil, rep, fmt.Errorf("%s: %w", cmd, err)
	}
	for _, c := range rep.Conflicts {
		fmt.Fprintf(stderr, "uplink: conflict: %v: kept the last read (--on-conflict newest)\n", c)
	}
	return recs, rep, nil
}

// recordsMerge merges the files into out (sweep.Merge), written whole
// before it replaces out.
func recordsMerge(args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("uplink records merge", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, recordsUsage) }
	onConflict := onConflictFlag(fs)
	force := fs.Bool("force", false, "replace an OUT that exists and is not among the files")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return usageError{fmt.Errorf("records merge: %w", err)}
	}
	if fs.NArg() < 2 {
		return usageError{errors.New("records merge: want OUT and at least one records file")}
	}
	out, paths := fs.Arg(0), fs.Args()[1:]
	if err := checkOnConflict("records merge", *onConflict); err != nil {
		return err
	}
	if err := checkMergeOut(out, paths, *force); err != nil {
		return err
	}
	recs, rep, err := mergeFiles("records merge", out+" not written", paths, *onConflict, stderr)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(out, func(w io.Writer) error { return sweep.WriteRecords(w, recs) }); err != nil {
		return fmt.Errorf("records merge: %s: %w", out, outfile.Cause(err))
	}
	// Records written to a device or pipe (/dev/stdout among them) keep
	// the summary off their stream.
	summary := stdout
	if fi, err := os.Stat(out); err == nil && !fi.Mode().IsRegular() {
		summary = stderr
	}
	fmt.Fprintf(summary, "%s: %d records from %d read (%d duplicates, %d conflicts, %d lines skipped)\n",
		out, rep.Written, rep.Read, rep.Duplicates, len(rep.Conflicts), len(rep.Problems))
	return nil
}

// checkMergeOut refuses an out that is a regular file holding records a
// merge would lose: one that exists and is not among the inputs (by the
// file, a link to an input counting as it), unless force. A device or
// pipe (/dev/stdout) holds none.
func checkMergeOut(out string, paths []string, force bool) error {
	st, err := os.Stat(out)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("records merge: %s: %w", out, outfile.Cause(err))
	case st.IsDir():
		return usageError{fmt.Errorf("records merge: OUT %s is a folder; name the merged records file", out)}
	case force || !st.Mode().IsRegular():
		return nil
	}
	for _, p := range paths {
		if pst, err := os.Stat(p); err == nil && os.SameFile(st, pst) {
			return nil
		}
	}
	return usageError{fmt.Errorf("records merge: OUT %s exists and is not among the files merged: its records would be lost; name it among them too to merge into it, or --force to replace it", out)}
}

// cmdSummarize prints run's table from records files, one record per
// cell (sweep.Merge, --on-conflict as records merge's), by variant, with
// the variants' comparison (printSummary, summarizeUsage).
func cmdSummarize(args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("uplink summarize", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	onConflict := onConflictFlag(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprint(stdout, summarizeUsage+fs.FlagUsages())
			return nil
		}
		return usageError{fmt.Errorf("summarize: %w", err)}
	}
	if fs.NArg() == 0 {
		return usageError{errors.New("summarize: name the records files")}
	}
	for _, p := range fs.Args() {
		if _, err := os.Stat(p); err != nil {
			return usageError{fmt.Errorf("summarize: %s: %w", p, outfile.Cause(err))}
		}
	}
	recs, _, err := mergeFiles("summarize", "no table", fs.Args(), *onConflict, stderr)
	if err != nil {
		return err
	}
	if len(recs) == 0 {
		return fmt.Errorf("summarize: no valid record in %s", strings.Join(fs.Args(), ", "))
	}
	printSummary(stdout, stderr, recs)
	return nil
}

// shardCells applies --shard to a sweep's cells and, with list, prints
// them with their keys and estimated cost (sh.costFunc; and reports true:
// the caller stops there). With a plan it hands the plan every cell of
// the sweep, their cost and the soft memory limit instead, and reports
// true.
func shardCells(cfgs []cell.Config, sh shardOpts, stdout io.Writer) ([]cell.Config, bool, error) {
	if sh.plan != nil {
		sh.plan.cells, sh.plan.cost, sh.plan.limit = cfgs, sh.costFunc(), sh.limit
		return nil, true, nil
	}
	if sh.shard != "" {
		i, n, err := sweep.ParseShard(sh.shard)
		if err != nil {
			return nil, false, usageError{fmt.Errorf("--shard: %w", err)}
		}
		cfgs = sweep.Shard(cfgs, i, n)
	}
	if !sh.list {
		return cfgs, false, nil
	}
	// A --vary grid's or a study's cells end with their variant.
	head, last := "warm-up", func(warmup, key string) string { return warmup }
	if sh.labels != nil {
		head = fmt.Sprintf("%-7s  %s", "warm-up", "variant")
		last = func(warmup, key string) string {
			return fmt.Sprintf("%-7s  %s", warmup, cmp.Or(strings.Join(sh.labels[key], "; "), "-"))
		}
	}
	fmt.Fprintf(stdout, "%-24s  %-14s  %-9s  %-8s  %5s  %6s  %8s  %8s  %7s  %s\n", "key", "arm", "transport", "profile", "seed", "nodes", "payload", "wall s", "RSS GiB", head)
	var wall float64
	costOf := sh.costFunc()
	for _, c := range cfgs {
		cost := costOf(c)
		n, _ := c.Size()
		wall += cost.Wall.Seconds()
		key := c.Key()
		fmt.Fprintf(stdout, "%-24s  %-14s  %-9s  %-8s  %5d  %6d  %8d  %8.0f  %7.1f  %s\n", key, cmp.Or(c.Arm, "whole"), cmp.Or(c.Transport, "quic"),
			c.Profile.Name, c.Seed, n, c.Payload, cost.Wall.Seconds(), float64(cost.RSS)/(1<<30), last(cmp.Or(c.Warmup.String(), "-"), key))
	}
	fmt.Fprintf(stdout, "%d cells, about %.0f s of one core (sweep.EstimateCost, learnt from the records the sweep holds; RSS under --memlimit: sweep.LimitedPeak)\n", len(cfgs), wall)
	return cfgs, true, nil
}
