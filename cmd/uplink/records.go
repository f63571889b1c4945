package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/uplinksim/uplink/protocols/cell"
	"github.com/uplinksim/uplink/sweep"
)

const recordsUsage = `Usage:
  uplink records check FILE...       check every line of records files
  uplink records merge OUT FILE...   merge records files into OUT, one record per cell and version
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

// recordsMerge merges the files (oldest first) into out, written through
// a temporary file.
func recordsMerge(args []string, stdout, stderr io.Writer) error {
	if len(args) < 2 {
		return usageError{errors.New("records merge: want OUT and at least one records file")}
	}
	out, paths := args[0], args[1:]
	for _, p := range paths {
		if p == out {
			return usageError{fmt.Errorf("records merge: %s is both the output and an input; merge into a new file", out)}
		}
	}
	recs, rep, err := sweep.Merge(paths)
	if err != nil {
		return fmt.Errorf("records merge: %w", err)
	}
	for _, p := range rep.Problems {
		fmt.Fprintf(stderr, "uplink: skipped: %v\n", p)
	}
	for _, c := range rep.Conflicts {
		fmt.Fprintf(stderr, "uplink: conflict: %s (each kept)\n", c)
	}
	if err := writeFileAtomic(out, func(w io.Writer) error { return sweep.WriteRecords(w, recs) }); err != nil {
		return fmt.Errorf("records merge: %s: %w", out, pathErrCause(err))
	}
	fmt.Fprintf(stdout, "%s: %d records from %d read (%d duplicates, %d conflicts, %d lines skipped)\n",
		out, rep.Written, rep.Read, rep.Duplicates, len(rep.Conflicts), len(rep.Problems))
	return nil
}

// cmdSummarize prints run's table from records files alone.
func cmdSummarize(args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("uplink summarize", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return usageError{err}
	}
	if fs.NArg() == 0 {
		return usageError{errors.New("summarize: name the records files")}
	}
	for _, p := range fs.Args() {
		if _, err := os.Stat(p); err != nil {
			return usageError{fmt.Errorf("summarize: %s: %w", p, pathErrCause(err))}
		}
	}
	recs, rep, err := sweep.Merge(fs.Args())
	if err != nil {
		return fmt.Errorf("summarize: %w", err)
	}
	for _, p := range rep.Problems {
		fmt.Fprintf(stderr, "uplink: skipped: %v\n", p)
	}
	if len(recs) == 0 {
		return errors.New("summarize: no valid record in the files")
	}
	printTable(stdout, recs)
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
	fmt.Fprintf(stdout, "%-24s  %-14s  %-9s  %-8s  %5s  %6s  %8s  %8s  %7s  %s\n", "key", "arm", "transport", "profile", "seed", "nodes", "payload", "wall s", "RSS GiB", "warm-up")
	var wall float64
	costOf := sh.costFunc()
	for _, c := range cfgs {
		cost := costOf(c)
		n, _ := c.Size()
		wall += cost.Wall.Seconds()
		fmt.Fprintf(stdout, "%-24s  %-14s  %-9s  %-8s  %5d  %6d  %8d  %8.0f  %7.1f  %s\n", c.Key(), cmp.Or(c.Arm, "whole"), cmp.Or(c.Transport, "quic"),
			c.Profile.Name, c.Seed, n, c.Payload, cost.Wall.Seconds(), float64(cost.RSS)/(1<<30), cmp.Or(c.Warmup.String(), "-"))
	}
	fmt.Fprintf(stdout, "%d cells, about %.0f s of one core (sweep.EstimateCost, learnt from the records the sweep holds; RSS under --memlimit: sweep.LimitedPeak)\n", len(cfgs), wall)
	return cfgs, true, nil
}
