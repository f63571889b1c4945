package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/uplinksim/uplink/internal/outfile"
	"github.com/uplinksim/uplink/protocols/cell"
	"github.com/uplinksim/uplink/sweep"
)

// A results folder (results/NAME/) holds the records behind a page of
// results and the command that made them:
//
//	command        the uplink validate command line, one line ('#' lines
//	               are comments); a study file it names (--study
//	               FILE.json) is a path from the folder that holds the
//	               results folders, where the command runs
//	records.jsonl  the records it wrote (its --cache)
//	report.md      generated: the comparison (and its figures), by
//	               uplink results from the two above
//
// From every folder's records it also generates the resource table,
// resources.json (read by sweep.EstimateCost through package results) and
// its page resources.md, beside the folders, and its brief form in the
// README.md of the folder above, between resourcesBegin and resourcesEnd.
//
// uplink results regenerates every page from its records alone; with
// --check it regenerates into a scratch folder and fails when a committed
// page differs.

// cmdResults regenerates (or checks) the generated pages of the results
// folders under --dir.
func cmdResults(args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("uplink results", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "results", "the folder of results folders (each with a command and its records.jsonl)")
	check := fs.Bool("check", false, "regenerate into a scratch folder and fail when a committed page differs, instead of writing")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("results: unexpected argument %q", fs.Arg(0))}
	}
	entries, err := os.ReadDir(*dir)
	if err != nil {
		return usageError{fmt.Errorf("results: --dir: %w", outfile.Cause(err))}
	}
	var stale []string
	var recs []*cell.Record
	var sources []string
	done := 0
	for _, e := range entries {
		folder := filepath.Join(*dir, e.Name())
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(folder, "command")); err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(folder, "records.jsonl")); errors.Is(err, os.ErrNotExist) {
			// A folder set up before its run: regenerating the others
			// goes on; a check fails, since a committed result holds its
			// records.
			if *check {
				return fmt.Errorf("results %s: no records.jsonl (a results folder holds the records its command compares)", folder)
			}
			fmt.Fprintf(stderr, "results %s: no records.jsonl yet: skipped\n", folder)
			continue
		}
		target := folder
		if *check {
			if target, err = os.MkdirTemp("", "uplink-results-"); err != nil {
				return fmt.Errorf("results: %w", err)
			}
			defer os.RemoveAll(target)
		}
		if err := regenerate(folder, target, filepath.Dir(filepath.Clean(*dir)), stderr); err != nil {
			return fmt.Errorf("results %s: %w", folder, err)
		}
		done++
		rs, err := readFolderRecords(folder)
		if err != nil {
			return fmt.Errorf("results %s: %w", folder, err)
		}
		for _, r := range rs {
			recs = append(recs, r)
			sources = append(sources, e.Name())
		}
		if *check {
			differ, err := differingFiles(target, folder)
			if err != nil {
				return fmt.Errorf("results %s: %w", folder, err)
			}
			stale = append(stale, differ...)
		}
	}
	if done == 0 {
		return usageError{fmt.Errorf("results: no results folder (one with a command file) under %s", *dir)}
	}
	table := sweep.MeasureResources(recs, sources)
	for _, page := range []struct {
		name  string
		write func(io.Writer, []sweep.Resource) error
	}{{"resources.json", sweep.WriteResources}, {"resources.md", sweep.WriteResourcesPage}} {
		var b bytes.Buffer
		if err := page.write(&b, table); err != nil {
			return fmt.Errorf("results: %s: %w", page.name, err)
		}
		path := filepath.Join(*dir, page.name)
		if *check {
			if old, err := os.ReadFile(path); err != nil || !bytes.Equal(old, b.Bytes()) {
				stale = append(stale, path)
			}
			continue
		}
		if err := writeFileAtomic(path, func(w io.Writer) error { _, err := w.Write(b.Bytes()); return err }); err != nil {
			return fmt.Errorf("results: %w", err)
		}
	}
	readme := filepath.Join(filepath.Dir(filepath.Clean(*dir)), "README.md")
	if err := resourcesBlock(readme, table, *check, &stale); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	if len(stale) > 0 {
		return fmt.Errorf("results: %d pages differ from what their records give (run uplink results to regenerate them): %s", len(stale), strings.Join(stale, ", "))
	}
	verb := "regenerated"
	if *check {
		verb = "checked"
	}
	fmt.Fprintf(stdout, "%d results pages %s under %s\n", done, verb, *dir)
	return nil
}

// The README's brief resource table sits between these lines.
const (
	resourcesBegin = "<!-- resources: generated by uplink results from results/resources.json -->\n"
	resourcesEnd   = "<!-- end of resources -->\n"
)

// resourcesBlock regenerates the brief resource table in the README at
// path, when it has the block's markers; with check, it notes the README
// in stale when its block differs instead of writing.
func resourcesBlock(path string, table []sweep.Resource, check bool, stale *[]string) error {
	old, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	i := bytes.Index(old, []byte(resourcesBegin))
	j := bytes.Index(old, []byte(resourcesEnd))
	if i < 0 && j < 0 {
		return nil
	}
	if i < 0 || j < i {
		return fmt.Errorf("%s: the resources block's markers are missing or out of order", path)
	}
	var b bytes.Buffer
	b.Write(old[:i+len(resourcesBegin)])
	if err := sweep.WriteResourcesBrief(&b, table); err != nil {
		return err
	}
	b.Write(old[j:])
	switch {
	case bytes.Equal(old, b.Bytes()):
		return nil
	case check:
		*stale = append(*stale, path)
		return nil
	}
	return writeFileAtomic(path, func(w io.Writer) error { _, err := w.Write(b.Bytes()); return err })
}

// differingFiles lists, as paths under folder, the files regenerated into
// scratch (the page and its figures) that folder lacks or holds with other
// bytes.
func differingFiles(scratch, folder string) ([]string, error) {
	entries, err := os.ReadDir(scratch)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		got, err := os.ReadFile(filepath.Join(scratch, e.Name()))
		if err != nil {
			return nil, err
		}
		path := filepath.Join(folder, e.Name())
		if want, err := os.ReadFile(path); err != nil || !bytes.Equal(want, got) {
			out = append(out, path)
		}
	}
	return out, nil
}

// readFolderRecords reads a results folder's records.jsonl through the
// one reader (sweep.ReadRecords): any line that is not a valid record,
// blank and cut short included, is an error naming the file and line.
func readFolderRecords(folder string) ([]*cell.Record, error) {
	recs, problems, err := sweep.ReadRecords(filepath.Join(folder, "records.jsonl"), sweep.ReadOptions{Strict: true})
	if err != nil {
		return nil, err
	}
	if len(problems) > 0 {
		return nil, problems[0]
	}
	return recs, nil
}

// readCommand reads a results folder's command: its first line that is
// neither blank nor a comment, split on spaces (no quoting), without the
// leading "uplink".
func readCommand(folder string) ([]string, error) {
	f, err := os.Open(filepath.Join(folder, "command"))
	if err != nil {
		return nil, outfile.Cause(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if fields[0] == "uplink" {
			fields = fields[1:]
		}
		if len(fields) == 0 || fields[0] != "validate" {
			return nil, fmt.Errorf("command %q: want an uplink validate command line", line)
		}
		for _, f := range fields {
			if slices.Contains([]string{"--cache", "--reuse", "--report", "--fresh"}, f) {
				return nil, fmt.Errorf("command %q: %s is set by uplink results (the folder's records.jsonl and report)", line, f)
			}
		}
		return fields[1:], nil
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return nil, errors.New("command: no command line in the file")
}

// regenerate writes the page of folder's records into target: the
// folder's validate command, compared from its records alone. A study
// file the command names (--study FILE.json) is read from root, the
// folder the command runs in: the one that holds the results folders.
func regenerate(folder, target, root string, stderr io.Writer) error {
	args, err := readCommand(folder)
	if err != nil {
		return err
	}
	for i := 1; i < len(args); i++ {
		if args[i-1] == "--study" && strings.HasSuffix(args[i], ".json") && !filepath.IsAbs(args[i]) {
			args[i] = filepath.Join(root, args[i])
		}
	}
	args = append(args, "--cached-only", "--any-version", "--cache", filepath.Join(folder, "records.jsonl"), "--report", target)
	return cmdValidate(args, io.Discard, stderr)
}
