package main

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/uplinksim/uplink/protocols/arms"
	"github.com/uplinksim/uplink/protocols/cell"
	"github.com/uplinksim/uplink/validate"
)

// summarizeUsage is uplink summarize's help.
const summarizeUsage = `Usage:
  uplink summarize [--on-conflict refuse|newest] FILE...

Prints run's table from records files, one record per cell (the files are
merged by records merge's rule: --on-conflict).

Variants. Records that share every setting but the seed are one variant;
a rerun of a cell (its replicate) belongs to its variant's runs. Each
variant is named by the settings that differ between the variants present,
setting=value joined by ", " (uplink-qdisc=pie, transport=tcp), as the
records state them; a setting that differs only from arm to arm (one an
arm fixes) names none. With one variant and no rerun the table is run's.
Otherwise each variant, and each rerun, gets a table of its own.

Baselines. A variant whose cells were rerun is a baseline (run --vary
reruns its baseline's); without a rerun, the first variant by name is the
baseline. Every other variant is compared with the baseline it shares the
most settings with.

Pairing. Where an arm ran under more than one variant, the variants are
compared as run --vary compares them: a table per variant and arm (the
median p50 and p99 across seeds, and the median of the per-seed p50
differences from the baseline with their range), then the reading, which
pairs p50 and p99 seed by seed and weighs each difference by the noise
test (every rerun of the baseline's cells counts): at two-sided 5 %, each
reads "higher" or "lower", "no difference", or "too few seeds" where no
result of so few seeds could reach that level. An arm without records
under its variant's baseline is not compared.

Flags:
`

// summaryVariant is one variant of the records summarized: the records
// that share every setting but the seed and replicate.
type summaryVariant struct {
	label    string
	settings map[string]string // the settings that name variants, by name
	base     bool              // a baseline
	runs     map[int][]*cell.Record
}

// recordArm is a record's arm: its catalogue entry where the catalogue
// knows it (by its catalogue name, else its published name), else one
// named as the record names it.
func recordArm(r *cell.Record) arms.Arm {
	for _, name := range []string{r.ArmName, r.Arm} {
		if a, err := arms.LookupArm(name); name != "" && err == nil {
			return a
		}
	}
	name := cmp.Or(r.ArmName, r.Arm)
	return arms.Arm{Name: name, Published: cmp.Or(r.Arm, name)}
}

// recordSettings is every setting of a record's cell the record states,
// but its arm, seed and replicate, by name: the profile's knobs and the
// gossip knobs by their own names, the rest by the names below. A knob or
// gossip knob the record lacks (it was written before the knob existed)
// reads as its profile's value (the study's gossip), the behaviour every
// cell had then. own marks the settings that are the record's own choice:
// every one but a knob at its profile's value and a gossip knob at the
// study's, so that a profile's knobs do not each name a variant of
// profiles.
func recordSettings(r *cell.Record) (m map[string]string, own map[string]bool) {
	secs := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) + "s" }
	m = map[string]string{
		"profile": r.Profile, "transport": r.Transport,
		"nodes": strconv.Itoa(r.N), "degree": strconv.Itoa(r.Degree), "payload": strconv.Itoa(r.PayloadBytes),
		"net": r.Net, "latency": r.Latency, "network": cmp.Or(r.Backend, "uplink"), "encoding": r.Wire.Encoding,
		"window": secs(r.WindowS), "deadline": secs(r.DeadlineS), "setup-quantum": secs(r.SetupQuantumS),
		"warmup": r.Warmup, "warmup-gap": secs(r.WarmupGapS), "background": r.Background, "background-lead": secs(r.BackgroundLeadS),
		"b-timeout": secs(r.BTimeoutS), "b-fixed": strconv.FormatBool(r.BFixed), "b-rules-off": r.BRulesOff,
		"partitions": strconv.Itoa(max(r.Partitions, 1)),
	}
	own = map[string]bool{}
	for name := range m {
		own[name] = true
	}
	var knobs map[string]string
	if p, err := cell.LookupProfile(r.Profile); err == nil {
		knobs = p.Knobs()
	}
	for _, kv := range []struct{ rec, defaults map[string]string }{{r.Knobs, knobs}, {r.Gossip, cell.StudyGossip().Knobs()}} {
		for k, v := range kv.defaults {
			if _, ok := m[k]; !ok {
				m[k] = v
			}
		}
		for k, v := range kv.rec {
			if fixed := own[k] && kv.defaults[k] == ""; fixed {
				continue // a fixed setting's name
			}
			m[k] = v
			if d, ok := kv.defaults[k]; !ok || d != v {
				own[k] = true
			}
		}
	}
	return m, own
}

// fixedSettings orders the settings that are not knobs in a variant's
// name; knobs follow, by name.
var fixedSettings = []string{"profile", "transport", "network", "nodes", "degree", "payload", "net", "latency", "encoding",
	"partitions", "window", "deadline", "setup-quantum", "warmup", "warmup-gap", "background", "background-lead",
	"b-timeout", "b-fixed", "b-rules-off"}

// variantAxes are the settings that name variants: those in which
// records of one arm differ (a setting not the record's own choice reads
// as such, whatever its value), in fixedSettings' order, then by name.
func variantAxes(recs []*cell.Record, settings []map[string]string, own []map[string]bool) []string {
	names := map[string]bool{}
	for i := range recs {
		for name := range settings[i] {
			names[name] = true
		}
	}
	values := map[string]map[string]map[string]bool{} // arm, setting: values
	for i, r := range recs {
		arm := recordArm(r).Name
		if values[arm] == nil {
			values[arm] = map[string]map[string]bool{}
		}
		byName := values[arm]
		for name := range names {
			if byName[name] == nil {
				byName[name] = map[string]bool{}
			}
			v, ok := settings[i][name]
			switch {
			case !ok:
				v = "\x00absent"
			case !own[i][name]:
				v = "\x00default"
			}
			byName[name][v] = true
		}
	}
	differs := map[string]bool{}
	for _, byName := range values {
		for name, vs := range byName {
			if len(vs) > 1 {
				differs[name] = true
			}
		}
	}
	var axes []string
	for _, name := range fixedSettings {
		if differs[name] {
			axes = append(axes, name)
			delete(differs, name)
		}
	}
	return append(axes, slices.Sorted(maps.Keys(differs))...)
}

// oneVariant is the name of the variant of records that differ in no
// setting.
const oneVariant = "baseline"

// groupVariants groups records into variants (summaryVariant), baselines
// first, each followed by the variants compared with it, each group in
// order of name; records that would fall into one variant with the same
// arm, seed and replicate (they differ in a setting records do not list)
// go to variants of their own, "NAME [set 2]" and on, in the order given
// (by key, as sweep.Merge sorts them), and note says so.
func groupVariants(recs []*cell.Record) (vs []*summaryVariant, axes []string, note string) {
	settings := make([]map[string]string, len(recs))
	own := make([]map[string]bool, len(recs))
	for i, r := range recs {
		settings[i], own[i] = recordSettings(r)
	}
	axes = variantAxes(recs, settings, own)
	byLabel := map[string]*summaryVariant{}
	type run struct {
		arm       string
		seed      uint64
		replicate int
	}
	seen := map[string]map[run]bool{}
	split := 0
	for i, r := range recs {
		var parts []string
		named := map[string]string{}
		for _, a := range axes {
			v := settings[i][a]
			named[a] = v
			parts = append(parts, a+"="+cmp.Or(v, "none"))
		}
		label := cmp.Or(strings.Join(parts, ", "), oneVariant)
		id := run{recordArm(r).Name, r.Seed, r.Replicate}
		for set := 1; ; set++ {
			l := label
			if set > 1 {
				l = fmt.Sprintf("%s [set %d]", label, set)
			}
			if seen[l] == nil {
				seen[l] = map[run]bool{}
			}
			if seen[l][id] {
				continue
			}
			seen[l][id] = true
			if set > 1 {
				split++
			}
			label = l
			break
		}
		v := byLabel[label]
		if v == nil {
			v = &summaryVariant{label: label, settings: named, runs: map[int][]*cell.Record{}}
			byLabel[label] = v
		}
		v.runs[r.Replicate] = append(v.runs[r.Replicate], r)
	}
	if split > 0 {
		verb := "share their"
		if split == 1 {
			verb = "shares its"
		}
		note = fmt.Sprintf("%s %s variant, arm, seed and replicate with a record of another cell (they differ in a setting records do not list: "+
			"a replayed topology, per-node queue assignments, withheld units or a mesh timeout); they are told apart as \"[set 2]\" and on, in the order of their keys, "+
			"which need not pair them with the records of their own setting", plural(split, "record"), verb)
	}
	labels := slices.Sorted(maps.Keys(byLabel))
	var bases []*summaryVariant
	for _, l := range labels {
		if v := byLabel[l]; len(v.runs) > 1 || v.runs[0] == nil {
			v.base = true
			bases = append(bases, v)
		}
	}
	if len(bases) == 0 {
		byLabel[labels[0]].base = true
		bases = append(bases, byLabel[labels[0]])
	}
	// Each other variant goes with the baseline it shares the most
	// settings with, the first of those in order of name.
	groups := make([][]*summaryVariant, len(bases))
	for i, b := range bases {
		groups[i] = []*summaryVariant{b}
	}
	for _, l := range labels {
		v := byLabel[l]
		if v.base {
			continue
		}
		best, shared := 0, -1
		for i, b := range bases {
			n := 0
			for _, a := range axes {
				if v.settings[a] == b.settings[a] {
					n++
				}
			}
			if n > shared {
				best, shared = i, n
			}
		}
		groups[best] = append(groups[best], v)
	}
	for _, g := range groups {
		vs = append(vs, g...)
	}
	return vs, axes, note
}

// summaryStudy is the variants as a study of run --vary's kind, for the
// comparison engine (validate.Study): each baseline marked Base, followed
// by the variants compared with it and then by its reruns (Replicate),
// with a cell per variant and arm that has records, and the records by
// the keys of the cells' configurations. The engine reads a record by its
// configuration's key, and these records come without their
// configurations: each is handed to it under a stand-in configuration
// whose key tells its variant, arm, seed and replicate apart, a rerun's
// being its first run's with the replicate set, as the engine pairs them.
// Arms without a record under their variant's baseline are left out and
// listed in skipped.
//
// sections are the study's variants in order, each with all its records
// (an arm left out included).
func summaryStudy(vs []*summaryVariant) (st validate.Study, cells []validate.StudyCell, records map[string]*cell.Record, sections [][]*cell.Record, skipped []string) {
	st = validate.Study{Name: "summarize", Question: "How do the variants of the records differ?"}
	records = map[string]*cell.Record{}
	armsOf := func(v *summaryVariant) map[string]bool {
		out := map[string]bool{}
		for _, r := range v.runs[0] {
			out[recordArm(r).Name] = true
		}
		return out
	}
	add := func(v *summaryVariant, vi, replicate int, label string, base bool, baseArms map[string]bool) {
		st.Variants = append(st.Variants, validate.Variant{Label: label, Base: base, Replicate: replicate})
		variant := len(st.Variants) - 1
		sections = append(sections, v.runs[replicate])
		byArm := map[string][]*cell.Record{}
		armOf := map[string]arms.Arm{}
		for _, r := range v.runs[replicate] {
			a := recordArm(r)
			byArm[a.Name] = append(byArm[a.Name], r)
			armOf[a.Name] = a
		}
		for _, name := range slices.Sorted(maps.Keys(byArm)) {
			if !baseArms[name] {
				skipped = append(skipped, fmt.Sprintf("%s under %q", armOf[name].Published, label))
				continue
			}
			rs := byArm[name]
			slices.SortFunc(rs, func(a, b *cell.Record) int { return cmp.Compare(a.Seed, b.Seed) })
			sc := validate.StudyCell{Variant: variant, Arm: armOf[name]}
			for _, r := range rs {
				c := cell.Config{Arm: name, Seed: r.Seed, Replicate: replicate, Net: fmt.Sprintf("summarize variant %d", vi)}
				sc.Seeds = append(sc.Seeds, r.Seed)
				sc.Configs = append(sc.Configs, c)
				records[c.Key()] = r
			}
			cells = append(cells, sc)
		}
	}
	for i, v := range vs {
		if !v.base {
			continue
		}
		baseArms := armsOf(v)
		add(v, i, 0, v.label, true, baseArms)
		// The variants compared with it (those after it, up to the next
		// baseline), then its reruns.
		next := len(vs)
		if j := slices.IndexFunc(vs[i+1:], func(w *summaryVariant) bool { return w.base }); j >= 0 {
			next = i + 1 + j
		}
		for j := i + 1; j < next; j++ {
			add(vs[j], j, 0, vs[j].label, false, baseArms)
		}
		for _, k := range slices.Sorted(maps.Keys(v.runs)) {
			if k > 0 {
				add(v, i, k, fmt.Sprintf("%s, rerun %d", v.label, k), false, baseArms)
			}
		}
	}
	return st, cells, records, sections, skipped
}

// printSummary writes summarize's tables of recs: run's table alone for
// one variant without reruns; else a table per variant and rerun and, where
// an arm ran under several, their comparison (printStudy). A line to
// stderr counts the variants.
func printSummary(stdout, stderr io.Writer, recs []*cell.Record) {
	vs, axes, note := groupVariants(recs)
	if note != "" {
		fmt.Fprintln(stderr, "uplink: summarize: "+note)
	}
	st, cells, records, sections, skipped := summaryStudy(vs)
	armNames := map[string]bool{}
	for _, r := range recs {
		armNames[recordArm(r).Name] = true
	}
	var bases []string
	reruns := 0
	for _, v := range st.Variants {
		switch {
		case v.Base:
			bases = append(bases, strconv.Quote(v.Label))
		case v.Replicate > 0:
			reruns++
		}
	}
	line := fmt.Sprintf("summarize: %s of %s: ", plural(len(recs), "record"), plural(len(armNames), "arm"))
	switch {
	case len(vs) == 1:
		line += "1 variant (no setting differs but the seed)"
	case len(axes) == 0:
		line += fmt.Sprintf("%s by settings records do not list", plural(len(vs), "variant"))
	default:
		line += fmt.Sprintf("%s by %s", plural(len(vs), "variant"), strings.Join(axes, ", "))
	}
	if reruns > 0 {
		line += ", " + plural(reruns, "rerun")
	}
	if len(vs) > 1 || reruns > 0 {
		line += fmt.Sprintf("; %s %s", map[bool]string{true: "baseline", false: "baselines"}[len(bases) == 1], strings.Join(bases, ", "))
	}
	fmt.Fprintln(stderr, line)
	if len(st.Variants) == 1 {
		printTable(stdout, recs)
		return
	}
	against := ""
	for i, v := range st.Variants {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		switch {
		case v.Base:
			against = v.Label
			if v.Label == oneVariant {
				fmt.Fprintf(stdout, "variant %s:\n", v.Label)
			} else {
				fmt.Fprintf(stdout, "variant %s (baseline):\n", v.Label)
			}
		case len(bases) > 1 && v.Replicate == 0:
			fmt.Fprintf(stdout, "variant %s (against %q):\n", v.Label, against)
		default:
			fmt.Fprintf(stdout, "variant %s:\n", v.Label)
		}
		printTable(stdout, sections[i])
	}
	if !slices.ContainsFunc(cells, func(c validate.StudyCell) bool { return !st.Variants[c.Variant].Base }) {
		return
	}
	fmt.Fprintln(stdout, "\nthe variants compared, p50 and p99 paired by seed with their baseline's:")
	printStudy(stdout, st, cells, records)
	if len(skipped) > 0 {
		fmt.Fprintf(stdout, "\nnot compared (no record of the arm under the variant's baseline): %s\n", strings.Join(skipped, ", "))
	}
}
