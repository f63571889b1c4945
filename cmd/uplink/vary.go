package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/uplinksim/uplink/internal/outfile"
	"github.com/uplinksim/uplink/protocols/arms"
	"github.com/uplinksim/uplink/protocols/cell"
	"github.com/uplinksim/uplink/validate"
)

// Comparisons a user defines (docs/studies.md): uplink run --vary, a grid
// of settings run as a study per profile, and uplink validate --study
// FILE.json. The comparison itself (cells, table, reading) is validate's
// Study; this file reads the command line into one.

// varyHelp is --vary's help.
const varyHelp = "compare the values of a setting, SETTING=V1,V2,...: a profile knob (--list-knobs; a queue spec's own options stay together, " +
	"uplink-qdisc=drr:flows=128,quantum=1500,pie is two values), a gossip knob (Dlazy, gossip-factor, history-gossip, gossip-retransmission, flood-publish), " +
	"transport or profile. Repeat for a grid of every combination. The first value of each is the baseline: the table gives, per variant, " +
	"the median and range of its per-seed p50 differences from the baseline (docs/studies.md)"

// parseVary reads the --vary values into the axes of a grid, checked
// (validate.CheckAxes) against the profiles the run uses; every error is
// a usage error naming the flag.
func parseVary(specs []string, profiles []string) ([]validate.Axis, error) {
	var axes []validate.Axis
	for _, s := range specs {
		name, list, ok := strings.Cut(s, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, usageError{fmt.Errorf("--vary %q: want SETTING=V1,V2,..., such as uplink-qdisc=fq_codel,pie", s)}
		}
		axes = append(axes, validate.Axis{Setting: name, Values: splitVaryValues(name, list)})
	}
	if err := validate.CheckAxes(axes, profiles); err != nil {
		return nil, usageError{fmt.Errorf("--vary %w", err)}
	}
	return axes, nil
}

// splitVaryValues splits a --vary list on commas. For a queue knob
// (*-qdisc) a piece that is a spec's option, key=value with a plain key,
// belongs to the spec before it: drr:flows=128,quantum=1500 is one value.
// Values are trimmed; an empty one stays, for CheckAxes to refuse.
func splitVaryValues(setting, list string) []string {
	if strings.TrimSpace(list) == "" {
		return nil
	}
	var out []string
	for _, p := range strings.Split(list, ",") {
		p = strings.TrimSpace(p)
		if strings.HasSuffix(setting, "-qdisc") && len(out) > 0 && isSpecOption(p) && out[len(out)-1] != "" {
			out[len(out)-1] += "," + p
			continue
		}
		out = append(out, p)
	}
	return out
}

// isSpecOption reports whether p reads as a queue spec's option, key=value
// with a key of letters, digits, _ and - only (a spec itself starts with
// its discipline's name and has its options after a colon).
func isSpecOption(p string) bool {
	k, _, ok := strings.Cut(p, "=")
	if !ok || k == "" {
		return false
	}
	for _, r := range k {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// varyConflicts refuses a setting given both with --vary and in every
// cell: by --knob or a queue shorthand (knobs, "name=value"), --gossip
// (gossip, "name=value"), or an explicit --transport or --profile.
func varyConflicts(axes []validate.Axis, knobs, gossip []string, transportSet, profileSet bool) error {
	named := func(kvs []string, name string) bool {
		return slices.ContainsFunc(kvs, func(kv string) bool { k, _, _ := strings.Cut(kv, "="); return k == name })
	}
	for _, a := range axes {
		var other string
		switch {
		case a.Setting == validate.SettingTransport && transportSet:
			other = "--transport"
		case a.Setting == validate.SettingProfile && profileSet:
			other = "--profile"
		case validate.IsGossipSetting(a.Setting) && named(gossip, a.Setting):
			other = "--gossip"
		case named(knobs, a.Setting):
			other = "--knob (or its shorthand --" + a.Setting + ")"
			if !strings.HasSuffix(a.Setting, "-qdisc") {
				other = "--knob"
			}
		}
		if other != "" {
			return usageError{fmt.Errorf("--vary %s and %s both set %s: give it in one place", a.Setting, other, a.Setting)}
		}
	}
	return nil
}

// varyRun is what run --vary takes from run's other flags.
type varyRun struct {
	profiles       string // --profile, comma-separated
	arms           []arms.Arm
	nodes, payload int
	transport      string
	upQ, downQ     string // --uplink-qdisc, --downlink-qdisc
	out, profDir   string
	skipDone       bool
	base           cell.Config
	set            sweepSettings
	flags          *pflag.FlagSet
	sp             *sweepPlan
	reruns         int // --reruns: reruns of the baseline's cells
}

// maxReruns bounds --reruns: each rerun is a whole copy of the baseline's
// cells.
const maxReruns = 10

// runVary is uplink run --vary: the grid's every cell checked before any
// starts, run, and compared with the baseline variant.
func runVary(specs []string, v varyRun, stdout, stderr io.Writer) error {
	var profiles []string
	for _, name := range strings.Split(v.profiles, ",") {
		name = strings.TrimSpace(name)
		if _, err := cell.LookupProfile(name); err != nil {
			return usageError{fmt.Errorf("--profile: %w", err)}
		}
		profiles = append(profiles, name)
	}
	axes, err := parseVary(specs, profiles)
	if err != nil {
		return err
	}
	knobs := slices.Clone(v.set.knobs)
	for _, q := range []struct{ name, v string }{{"uplink-qdisc", v.upQ}, {"downlink-qdisc", v.downQ}} {
		if v.flags.Changed(q.name) {
			knobs = append(knobs, q.name+"="+q.v) // after the knobs, as run applies them
		}
	}
	gossip, _ := v.flags.GetStringArray("gossip")
	if err := varyConflicts(axes, knobs, gossip, v.flags.Changed("transport"), v.flags.Changed("profile")); err != nil {
		return err
	}
	if v.profDir != "" {
		return usageError{errors.New("--cpuprofile with --vary: its files are named by arm, profile and seed, so the variants would overwrite each other's; profile one setting at a time, without --vary")}
	}
	var done map[string]*cell.Record
	if v.skipDone {
		if done, err = readRecords(v.out, "--out", buildVersion(), false, stderr); err != nil {
			return err
		}
	}
	o := v.set.run
	o.out = v.out
	g := gridPlan{axes: axes, profiles: profiles, arms: v.arms, nodes: v.nodes, payload: v.payload, seeds: v.set.seeds,
		transport: v.transport, base: v.base, knobs: knobs, reruns: v.reruns}
	return runGrid(g, done, shardOpts{shard: v.set.shard, list: v.set.listCells, plan: v.sp, limit: v.set.mem.limit}, v.set, o, stdout, stderr)
}

// gridPlan is a --vary run: the settings run and compared, one study per
// profile (one study when the profile is varied).
type gridPlan struct {
	axes      []validate.Axis
	profiles  []string // run's --profile list; ignored when the profile is varied
	arms      []arms.Arm
	nodes     int
	payload   int
	seeds     []uint64
	transport string
	base      cell.Config // every other setting of the cells
	knobs     []string    // --knob, then the queue shorthands
	reruns    int         // reruns of the baseline variant's cells
}

// studies builds the grid's studies and their cells, refusing a grid over
// validate.MaxCells cells and variants that make the same cell; summary
// says what it counted.
func (g gridPlan) studies() (sts []validate.Study, cells [][]validate.StudyCell, summary string, err error) {
	profiles := g.profiles
	var counts []string
	for _, a := range g.axes {
		counts = append(counts, fmt.Sprintf("%s ×%d", a.Setting, len(a.Values)))
	}
	if g.reruns > 0 {
		counts = append(counts, plural(g.reruns, "rerun")+" of the baseline")
	}
	nv := validate.GridSize(g.axes) + g.reruns
	summary = fmt.Sprintf("%d variants (%s) × %s", nv, strings.Join(counts, ", "), plural(len(profiles), "profile"))
	if slices.ContainsFunc(g.axes, func(a validate.Axis) bool { return a.Setting == validate.SettingProfile }) {
		profiles = []string{""} // the variants name theirs
		summary = fmt.Sprintf("%d variants (%s)", nv, strings.Join(counts, ", "))
	}
	summary += fmt.Sprintf(" × %s × %s", plural(len(g.arms), "arm"), plural(len(g.seeds), "seed"))
	total := validate.MulCells(validate.MulCells(validate.MulCells(nv, len(profiles)), len(g.arms)), len(g.seeds))
	if err := validate.CheckSize(total, summary); err != nil {
		return nil, nil, summary, usageError{fmt.Errorf("--vary: %w", err)}
	}
	summary += fmt.Sprintf(" = %d cells", total)
	var names []string
	for _, a := range g.arms {
		names = append(names, a.Name)
	}
	for _, p := range profiles {
		vs, err := validate.Grid(validate.Variant{Profile: p, Transport: g.transport, Warmup: g.base.Warmup}, g.axes)
		if err != nil {
			return nil, nil, summary, usageError{fmt.Errorf("--vary: %w", err)}
		}
		for k := 1; k <= g.reruns; k++ {
			r := vs[0]
			r.Label, r.Replicate = fmt.Sprintf("%s, rerun %d", vs[0].Label, k), k
			vs = append(vs, r)
		}
		st := validate.Study{Name: "run --vary", Arms: names, N: g.nodes, Payload: g.payload, Seeds: g.seeds, Variants: vs}
		cs, err := st.Cells(g.nodes, g.seeds, g.base, g.knobs...)
		if err != nil {
			return nil, nil, summary, usageError{fmt.Errorf("--vary: %w", err)}
		}
		if err := st.CheckDistinct(cs); err != nil {
			return nil, nil, summary, usageError{fmt.Errorf("--vary: %w", err)}
		}
		sts, cells = append(sts, st), append(cells, cs)
	}
	return sts, cells, summary, nil
}

// runGrid runs a --vary grid's missing cells through the sweep machinery
// (--shard, --list-cells, the cell checks, --jobs, --out), then prints
// each study's table and reading. done holds the records already run
// (--skip-done); profDir is refused by the caller.
func runGrid(g gridPlan, done map[string]*cell.Record, sh shardOpts, set sweepSettings, o runOpts, stdout, stderr io.Writer) error {
	sts, cells, summary, err := g.studies()
	if err != nil {
		return err
	}
	var groups [][]cell.Config
	for _, cs := range cells {
		for _, c := range cs {
			groups = append(groups, c.Configs)
		}
	}
	sh.labels = variantLabels(sts, cells)
	o.labels = sh.labels
	all, todo, listed, err := sweepRuns(groups, done, sh, stdout)
	if err != nil || listed {
		return err
	}
	line := "run --vary: " + summary
	if sh.shard != "" {
		line += fmt.Sprintf("; shard %s: %d cells", sh.shard, len(all))
	}
	if done != nil {
		line += fmt.Sprintf(" (%d already in %s, %d to run)", len(all)-len(todo), o.out, len(todo))
	}
	fmt.Fprintln(stderr, line)
	todo, err = checkCells(todo, set.mem, set.skipOverMem, stderr)
	if err != nil {
		return err
	}
	records := map[string]*cell.Record{}
	for k, r := range done {
		records[k] = r
	}
	runErr := runMissing(todo, records, set.setupProcs, o, stderr)
	for i, st := range sts {
		if len(sts) > 1 {
			if i > 0 {
				fmt.Fprintln(stdout)
			}
			fmt.Fprintf(stdout, "profile %s:\n", st.Variants[0].Profile)
		}
		printStudy(stdout, st, cells[i], records)
	}
	if runErr != nil {
		return fmt.Errorf("run: %w", runErr)
	}
	return nil
}

// plural writes a count with its noun, "1 arm" or "2 arms".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// isStudyFile reports whether --study names a study file rather than a
// built-in study.
func isStudyFile(name string) bool { return strings.HasSuffix(name, ".json") }

// studyCacheName is the default --cache of a study: study-NAME.jsonl,
// NAME a built-in study's name, or a study file's name without its folder
// and .json; a file named study.json (a results folder's) takes its
// folder's name, so that two folders' studies do not share a cache.
func studyCacheName(name string) string {
	if isStudyFile(name) {
		dir, file := filepath.Split(filepath.Clean(name))
		name = strings.TrimSuffix(file, ".json")
		if parent := filepath.Base(dir); name == "study" && dir != "" && parent != "." && parent != string(filepath.Separator) {
			name = parent
		}
	}
	return "study-" + name + ".jsonl"
}

// loadStudy finds a built-in study by name, or reads a study file
// (FILE.json); user is true for a file, whose cells checkUserStudy checks.
func loadStudy(name string) (st validate.Study, user bool, err error) {
	if !isStudyFile(name) {
		st, err = validate.LookupStudy(name)
		return st, false, err
	}
	f, err := os.Open(name)
	if err != nil {
		return st, true, fmt.Errorf("--study %s: %w", name, outfile.Cause(err))
	}
	defer f.Close()
	st, err = validate.ReadStudy(f)
	if err != nil {
		return st, true, fmt.Errorf("--study %s: %w", name, err)
	}
	return st, true, nil
}

// checkUserStudy refuses a study file's comparison over validate.MaxCells
// cells or with two variants that make the same cell.
func checkUserStudy(st validate.Study, cells []validate.StudyCell) error {
	runs := 0
	for _, c := range cells {
		runs += len(c.Configs)
	}
	if err := validate.CheckSize(runs, fmt.Sprintf("study %s: %d variant-arm pairs by their seeds", st.Name, len(cells))); err != nil {
		return err
	}
	return st.CheckDistinct(cells)
}
