package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/uplinksim/uplink/protocols/cell"
	"github.com/uplinksim/uplink/queues"
	"github.com/uplinksim/uplink/sweep"
	"github.com/uplinksim/uplink/validate"
)

// The listings of run --list-knobs, run and bulk --list-qdiscs, and
// validate --list-tables.

// defaultProfiles is run's --profile default; listings show these
// profiles first.
const defaultProfiles = "harness,shadow"

// listedProfiles is every built-in profile, run's defaults first.
func listedProfiles() []string {
	out := strings.Split(defaultProfiles, ",")
	for _, p := range cell.ProfileNames() {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// helpWidth is where the listings wrap their help text.
const helpWidth = 100

// wrap writes text as lines of at most helpWidth characters (a longer word
// stays whole), each starting with indent.
func wrap(w io.Writer, indent, text string) {
	line := indent
	for _, word := range strings.Fields(text) {
		if len(line) > len(indent) && len(line)+1+len(word) > helpWidth {
			fmt.Fprintln(w, line)
			line = indent
		}
		if len(line) > len(indent) {
			line += " "
		}
		line += word
	}
	if len(line) > len(indent) {
		fmt.Fprintln(w, line)
	}
}

// printKnobs writes every profile knob: a row of its value in each
// profile, and its help beneath.
func printKnobs(w io.Writer) error {
	names := listedProfiles()
	values := make([]map[string]string, len(names))
	for i, n := range names {
		p, err := cell.LookupProfile(n)
		if err != nil {
			return err
		}
		values[i] = p.Knobs()
	}
	docs := cell.KnobDocs()
	rows := [][]string{append([]string{"knob"}, names...)}
	for _, d := range docs {
		row := []string{d.Name}
		for _, v := range values {
			row = append(row, cmp.Or(v[d.Name], "(empty)"))
		}
		rows = append(rows, row)
	}
	width := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], len(c))
		}
	}
	line := func(r []string) string {
		var b strings.Builder
		for i, c := range r {
			if i < len(r)-1 {
				fmt.Fprintf(&b, "%-*s  ", width[i], c)
			} else {
				b.WriteString(c)
			}
		}
		return b.String()
	}
	fmt.Fprintln(w, "Profile knobs (--knob name=value) and their value in each profile (--profile):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, line(rows[0]))
	for i, d := range docs {
		fmt.Fprintln(w, line(rows[i+1]))
		wrap(w, "    ", d.Help)
	}
	return nil
}

// printQdiscs writes every queue discipline with its keys, their defaults
// and the source it follows.
func printQdiscs(w io.Writer) {
	fmt.Fprintln(w, "Queue disciplines. A spec is NAME or NAME:key=value,key=value; a key left out keeps its default.")
	fmt.Fprintln(w, "uplink run's uplink-qdisc and downlink-qdisc also take a mix over the nodes: pie@30%;fq_codel,")
	fmt.Fprintln(w, "or pie@30% (the other nodes keep the profile's); bulk's --qdisc takes one spec per DIR.")
	for _, d := range queues.Disciplines() {
		fmt.Fprintf(w, "\n%s: %s\n", d.Name, d.About)
		wrap(w, "  ", "follows "+d.Source)
		if len(d.Keys) == 0 {
			fmt.Fprintln(w, "  no keys")
			continue
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  key\tdefault\ttakes")
		for _, k := range d.Keys {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", k.Key, k.Default, k.Takes)
		}
		tw.Flush()
	}
}

// printTables writes each reference table: what it holds, its rows, the
// cells and runs a replay with o runs (their seeds and node counts), and
// the replay's estimated cost, sweep.EstimateCost summed over its distinct
// runs, in core-hours.
func printTables(w io.Writer, o validate.PlanOptions) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "table\trows\treplayed\tcells\truns\tseeds\tnodes\tcore-h\twhat it holds")
	for _, name := range validate.Tables() {
		title, err := validate.TableTitle(name)
		if err != nil {
			return err
		}
		rows, err := validate.LoadTable(name)
		if err != nil {
			return err
		}
		plan, err := validate.PlanTable(name, o)
		if err != nil {
			return usageError{err}
		}
		replayed := 0
		for _, c := range plan.Cells {
			replayed += len(c.Rows)
		}
		for _, d := range plan.Diffs {
			replayed++
			if d.Lo != nil {
				replayed++
			}
			if d.Hi != nil {
				replayed++
			}
		}
		seen := map[string]bool{}
		seeds := map[uint64]bool{}
		nodes := map[int]bool{}
		var wall time.Duration
		for _, c := range plan.Cells {
			nodes[c.N] = true
			for _, cfg := range c.Configs {
				seeds[cfg.Seed] = true
				if k := cfg.Key(); !seen[k] {
					seen[k] = true
					wall += sweep.EstimateCost(cfg).Wall
				}
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t%.2f\t%s\n", name, len(rows), replayed, len(plan.Cells), len(seen),
			formatSeeds(seeds), formatInts(nodes), wall.Hours(), title)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nrows: the reference numbers; replayed: those a replay compares (--dry-run names why the others are not);")
	fmt.Fprintln(w, "cells: arm, column and size; runs: distinct cells by seed (a twin shares the harness's); core-h: the runs'")
	fmt.Fprintln(w, "estimated wall time (sweep.EstimateCost), one core each. --nodes, --seeds, --arm, --backend, --transport apply.")
	return nil
}

// formatSeeds writes a set of seeds as ascending runs: 7-16, 7,9,11.
func formatSeeds(set map[uint64]bool) string {
	if len(set) == 0 {
		return "-"
	}
	var s []uint64
	for x := range set {
		s = append(s, x)
	}
	slices.Sort(s)
	var parts []string
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		switch {
		case j == i:
			parts = append(parts, fmt.Sprint(s[i]))
		case j == i+1:
			parts = append(parts, fmt.Sprint(s[i]), fmt.Sprint(s[j]))
		default:
			parts = append(parts, fmt.Sprintf("%d-%d", s[i], s[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// formatInts writes a set of numbers ascending, comma-separated.
func formatInts(set map[int]bool) string {
	if len(set) == 0 {
		return "-"
	}
	var s []int
	for x := range set {
		s = append(s, x)
	}
	slices.Sort(s)
	parts := make([]string, len(s))
	for i, x := range s {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ",")
}
