package sweep

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/protocols/arms"
	"github.com/uplinksim/uplink/protocols/cell"
)

// Kind is a kind of cell as far as its cost goes: size (nodes, degree,
// payload), arm, transport, profile, network backend, wire encoding,
// partitions and warm-up.
type Kind struct {
	Nodes      int    `json:"nodes"`
	Degree     int    `json:"degree"`
	Payload    int    `json:"payload_bytes"`
	Arm        string `json:"arm"`
	Transport  string `json:"transport"`
	Profile    string `json:"profile"`
	Backend    string `json:"backend,omitempty"`
	Encoding   string `json:"encoding,omitempty"`
	Partitions int    `json:"partitions"`
	// Warmup is the warm-up in a record's words (cell.Warmup.String:
	// "streams:320KiB", "payload"); "" for none. Its drain gap is left
	// out: it adds idle virtual time, not work.
	Warmup string `json:"warmup,omitempty"`
}

// Resource is the measured cost of one kind of cell over every committed
// record of that kind: its peak memory and its wall time.
type Resource struct {
	Kind
	Cells int `json:"cells"`
	// RSSMaxMiB and RSSMedianMiB are the records' peak resident memory
	// (max_rss_kb): the largest and the median.
	RSSMaxMiB    float64 `json:"rss_max_mib"`
	RSSMedianMiB float64 `json:"rss_median_mib"`
	// WallMedianS and WallMaxS are the records' wall times (wall_s): the
	// process's whole run, so they include whatever else the machine ran.
	WallMedianS float64 `json:"wall_median_s"`
	WallMaxS    float64 `json:"wall_max_s"`
	// Sources are the records files the cells came from.
	Sources []string `json:"sources"`
	// Hosts counts the cells by the machine their records name
	// (cell.Host's words, ordered by name); a record that names none is
	// not counted. Empty where none does.
	Hosts []HostCells `json:"hosts,omitempty"`
	// MemLimited counts the cells run under a soft memory limit
	// (mem_limit). Their peaks are held down by it, so they count toward
	// RSSMaxMiB and RSSMedianMiB only where every cell of the kind had one.
	MemLimited int `json:"mem_limited,omitempty"`
}

// HostCells is how many of a kind's cells ran on one machine.
type HostCells struct {
	Host  string `json:"host"`
	Cells int    `json:"cells"`
	// CPUs is the machine's logical CPUs (cell.Host.CPUs).
	CPUs int `json:"cpus,omitempty"`
}

// ReferenceCPUs is the CPUs of the machine the committed records were
// made on, unless a record names another (a 2-core, 24 GiB machine): the
// README's brief marks a wall time measured partly elsewhere.
const ReferenceCPUs = 2

// elsewhere reports whether some of r's cells ran on a machine with other
// than ReferenceCPUs CPUs.
func (r Resource) elsewhere() bool {
	return slices.ContainsFunc(r.Hosts, func(h HostCells) bool { return h.CPUs != ReferenceCPUs })
}

// edges is the dial graph's edge count of the kind's cells.
func (r Kind) edges() float64 { return float64(r.Nodes) * float64(r.Degree) / 2 }

// MeasureResources groups records by kind of cell and measures each kind
// (Resource); recs[i] came from the records file sources[i]. Records
// without a measured wall time or peak memory (zero) are left out, and a
// run that several files hold (the same key, wall time and peak) counts
// once. A peak made under a soft memory limit counts only for a kind whose
// every run had one (Resource.MemLimited). The rows are ordered by nodes,
// degree, payload, arm, transport, profile, backend, encoding, partitions
// and warm-up.
func MeasureResources(recs []*cell.Record, sources []string) []Resource {
	type acc struct {
		rss, rssLimited, wall []float64
		src                   []string
		hosts                 map[string]HostCells // by the host's words
	}
	groups := map[Kind]*acc{}
	// A run held by several files (a results folder reuses another's
	// records) counts once, with each file among its kind's sources.
	type run struct {
		key  string
		wall float64
		rss  int64
	}
	seen := map[run]bool{}
	for i, r := range recs {
		if r.WallS <= 0 || r.MaxRSSKB <= 0 {
			continue
		}
		k := Kind{Nodes: r.N, Degree: r.Degree, Payload: r.PayloadBytes, Arm: r.ArmName, Transport: r.Transport,
			Profile: r.Profile, Backend: r.Backend, Encoding: r.Wire.Encoding, Partitions: max(r.Partitions, 1), Warmup: r.Warmup}
		g := groups[k]
		if g == nil {
			g = &acc{}
			groups[k] = g
		}
		if !slices.Contains(g.src, sources[i]) {
			g.src = append(g.src, sources[i])
		}
		if id := (run{r.Key, r.WallS, r.MaxRSSKB}); !seen[id] {
			seen[id] = true
			if r.MemLimit > 0 {
				g.rssLimited = append(g.rssLimited, float64(r.MaxRSSKB)/1024)
			} else {
				g.rss = append(g.rss, float64(r.MaxRSSKB)/1024)
			}
			g.wall = append(g.wall, r.WallS)
			if r.Host != nil {
				if g.hosts == nil {
					g.hosts = map[string]HostCells{}
				}
				w := r.Host.String()
				g.hosts[w] = HostCells{Host: w, Cells: g.hosts[w].Cells + 1, CPUs: r.Host.CPUs}
			}
		}
	}
	out := make([]Resource, 0, len(groups))
	for k, g := range groups {
		slices.Sort(g.src)
		rss := g.rss
		if len(rss) == 0 {
			rss = g.rssLimited
		}
		row := Resource{Kind: k, Cells: len(g.wall),
			RSSMaxMiB: round1(slices.Max(rss)), RSSMedianMiB: round1(medianOf(rss)),
			WallMaxS: round1(slices.Max(g.wall)), WallMedianS: round1(medianOf(g.wall)), Sources: g.src,
			MemLimited: len(g.rssLimited)}
		for _, w := range slices.Sorted(maps.Keys(g.hosts)) {
			row.Hosts = append(row.Hosts, g.hosts[w])
		}
		out = append(out, row)
	}
	slices.SortFunc(out, compareKinds)
	return out
}

func compareKinds(a, b Resource) int {
	return a.Kind.compare(b.Kind)
}

func (a Kind) compare(b Kind) int {
	return cmp.Or(cmp.Compare(a.Nodes, b.Nodes), cmp.Compare(a.Degree, b.Degree), cmp.Compare(a.Payload, b.Payload),
		strings.Compare(a.Arm, b.Arm), strings.Compare(a.Transport, b.Transport), strings.Compare(a.Profile, b.Profile),
		strings.Compare(a.Backend, b.Backend), strings.Compare(a.Encoding, b.Encoding), cmp.Compare(a.Partitions, b.Partitions),
		strings.Compare(a.Warmup, b.Warmup))
}

func medianOf(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }

// ReadResources reads a resource table written by WriteResources.
func ReadResources(r io.Reader) ([]Resource, error) {
	var t []Resource
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("resource table: %w", err)
	}
	for i, row := range t {
		if row.Nodes < 2 || row.Degree < 1 || row.Cells < 1 || !(row.RSSMaxMiB > 0) || !(row.WallMedianS > 0) {
			return nil, fmt.Errorf("resource table row %d: want at least 2 nodes, degree 1, one cell, and a positive memory and wall time", i+1)
		}
	}
	return t, nil
}

// WriteResources writes a resource table as indented JSON.
func WriteResources(w io.Writer, t []Resource) error {
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteResourcesPage writes the resource table as a Markdown page.
func WriteResourcesPage(w io.Writer, t []Resource) error {
	var b strings.Builder
	b.WriteString("# Resources: what a cell costs\n\n")
	b.WriteString("Generated by `uplink results` from the records under `results/`: one row\n")
	b.WriteString("per kind of cell, with the peak resident memory (max_rss_kb) and the wall\n")
	b.WriteString("time (wall_s) its records measured. The records were made on a 2-core,\n")
	b.WriteString("24 GiB machine, often beside another cell, except those the records\n")
	b.WriteString("column counts on another machine (a record's host field), so a wall time\n")
	b.WriteString("here is what a cell took in a sweep there, not on an idle machine\n")
	b.WriteString("(BENCHMARKS.md has those). A peak made under a soft memory limit\n")
	b.WriteString("(mem_limit, counted in the records column) counts only for a kind whose\n")
	b.WriteString("every cell had one, and such a kind sizes no estimate. `--list-cells`,\n")
	b.WriteString("`--mem` and `uplink slurm` estimate a cell's cost from the nearest row\n")
	b.WriteString("of its kind, scaled by the edge count; a segmented arm with no row\n")
	b.WriteString("takes the costliest segmented arm of its payload, transport and\n")
	b.WriteString("profile; else 256 MiB plus 200 KiB and 0.55 times the payload per edge;\n")
	fmt.Fprintf(&b, "a warm-up not measured with the kind adds %.2f bytes and %.3f s per\n", WarmupStreamRSS, WarmupStreamWall)
	b.WriteString("MiB its streams send (sweep.EstimateCost).\n\n")
	b.WriteString("| nodes | degree | payload | arm | transport | profile | network | encoding | K | cells | peak RSS GiB (median, max) | wall s (median, max) | records |\n")
	b.WriteString("| ---: | ---: | ---: | --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | --- |\n")
	for _, r := range t {
		network := "uplink"
		if r.Backend != "" {
			network = r.Backend
		}
		enc := r.Encoding
		if enc == "" {
			enc = "raw"
		}
		arm := r.Arm
		if r.Warmup != "" {
			arm += ", warm-up " + r.Warmup
		}
		fmt.Fprintf(&b, "| %d | %d | %s | %s | %s | %s | %s | %s | %d | %d | %.1f, %.1f | %.0f, %.0f | %s |\n",
			r.Nodes, r.Degree, des.FormatBytes(int64(r.Payload)), arm, r.Transport, r.Profile, network, enc, r.Partitions, r.Cells,
			r.RSSMedianMiB/1024, r.RSSMaxMiB/1024, r.WallMedianS, r.WallMaxS, r.recordsColumn())
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// limitedOnly says whether every cell of the kind ran under a soft memory
// limit, so that its peak is the limit's doing (Resource.MemLimited).
func (r Resource) limitedOnly() bool { return r.MemLimited > 0 && r.MemLimited == r.Cells }

// recordsColumn is the page's records column: the files, then how many of
// the cells ran on each machine their records name and how many under a
// soft memory limit.
func (r Resource) recordsColumn() string {
	col := strings.Join(r.Sources, ", ")
	for _, h := range r.Hosts {
		col += fmt.Sprintf("; %d on %s", h.Cells, h.Host)
	}
	if r.MemLimited > 0 {
		col += fmt.Sprintf("; %d under a memory limit", r.MemLimited)
	}
	return col
}

// WriteResourcesBrief writes the resource table in brief, for the README:
// the kinds of cell on uplink's network with the study's encoding and
// payload (1 MiB) in one bubble, cold, one column per profile and transport,
// and per size one row for the whole message and one for the segmented
// arms together (so that the table does not grow with the arms
// measured; a kind whose every cell ran under a soft memory limit is left
// out). A cell of the table is the largest peak RSS of its kinds
// (for the segmented arms, what EstimateCost gives one never measured)
// and their median wall time, or the range of the medians over several
// arms.
func WriteResourcesBrief(w io.Writer, t []Resource) error {
	const studyPayload = 1 << 20 // the study's payload, 1 MiB
	type row struct {
		nodes, degree int
		family        string
	}
	type span struct {
		rss, wallLo, wallHi float64
		elsewhere           bool // some cells ran on another machine
	}
	var rows []row
	var cols []string
	cells := map[row]map[string]*span{}
	armsOf := map[row]map[string]bool{}
	for _, r := range t {
		if r.Backend != "" || r.Encoding != "snappy" || r.Partitions > 1 || r.Payload != studyPayload || r.Warmup != "" || r.limitedOnly() {
			continue
		}
		family := r.Arm
		if segmentedArm(r.Arm) {
			family = "segmented arms"
		} else if _, err := arms.LookupArm(r.Arm); err == nil {
			family = "whole message"
		}
		k := row{r.Nodes, r.Degree, family}
		col := r.Profile + " " + strings.ToUpper(r.Transport)
		if cells[k] == nil {
			cells[k], armsOf[k] = map[string]*span{}, map[string]bool{}
			rows = append(rows, k)
		}
		armsOf[k][r.Arm] = true
		sp := cells[k][col]
		if sp == nil {
			sp = &span{wallLo: r.WallMedianS, wallHi: r.WallMedianS}
			cells[k][col] = sp
		}
		sp.rss = max(sp.rss, r.RSSMaxMiB)
		sp.elsewhere = sp.elsewhere || r.elsewhere()
		sp.wallLo, sp.wallHi = min(sp.wallLo, r.WallMedianS), max(sp.wallHi, r.WallMedianS)
		if !slices.Contains(cols, col) {
			cols = append(cols, col)
		}
	}
	slices.Sort(cols)
	slices.SortStableFunc(rows, func(a, b row) int {
		return cmp.Or(cmp.Compare(a.nodes, b.nodes), cmp.Compare(a.degree, b.degree), cmp.Compare(familyOrder(a.family), familyOrder(b.family)))
	})
	var b strings.Builder
	b.WriteString("| nodes, degree | arms |")
	for _, c := range cols {
		b.WriteString(" " + c + " |")
	}
	b.WriteString("\n| --- | --- |" + strings.Repeat(" ---: |", len(cols)) + "\n")
	marked := false
	for _, k := range rows {
		label := k.family
		if n := len(armsOf[k]); k.family == "segmented arms" {
			label = fmt.Sprintf("%d segmented", n)
			if n == 1 {
				for a := range armsOf[k] {
					label = a
				}
			}
		}
		fmt.Fprintf(&b, "| %d, %d | %s |", k.nodes, k.degree, label)
		for _, c := range cols {
			sp, ok := cells[k][c]
			switch {
			case !ok:
				b.WriteString(" |")
			case math.Round(sp.wallLo) == math.Round(sp.wallHi):
				fmt.Fprintf(&b, " %.1f GiB, %.0f s%s |", sp.rss/1024, sp.wallHi, mark(sp.elsewhere))
			default:
				fmt.Fprintf(&b, " %.1f GiB, %.0f–%.0f s%s |", sp.rss/1024, sp.wallLo, sp.wallHi, mark(sp.elsewhere))
			}
			marked = marked || ok && sp.elsewhere
		}
		b.WriteString("\n")
	}
	if marked {
		fmt.Fprintf(&b, "\n%s wall times partly measured on a machine with other than %d CPUs (results/resources.md).\n", elsewhereMark, ReferenceCPUs)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// elsewhereMark marks a brief's figure some of whose cells ran on another
// machine.
const elsewhereMark = "†"

// mark is elsewhereMark when elsewhere, else "".
func mark(elsewhere bool) string {
	if elsewhere {
		return elsewhereMark
	}
	return ""
}

// familyOrder puts the whole message's row of a size first.
func familyOrder(family string) int {
	if family == "whole message" {
		return 0
	}
	return 1
}

// lookup finds the measured kind nearest to c: the same arm, transport,
// profile, backend, encoding, payload, partitions and warm-up, and among those the
// one whose dial graph has the nearest edge count (by ratio). A kind whose
// every cell ran under a soft memory limit is passed over: its peak is the
// limit's, not what the cell holds without one.
func lookup(t []Resource, c cell.Config) (Resource, bool) {
	arm := c.Arm
	if a, err := arms.LookupArm(c.Arm); err == nil {
		arm = a.Name
	}
	k := Kind{Payload: c.Payload, Arm: arm, Transport: c.Transport, Profile: c.Profile.Name,
		Backend: c.Backend, Encoding: string(c.Encoding), Partitions: max(c.Partitions, 1), Warmup: c.Warmup.String()}
	edges := c.Edges()
	best, found, dist := Resource{}, false, math.Inf(1)
	for _, r := range t {
		rk := r.Kind
		rk.Nodes, rk.Degree = 0, 0
		if rk != k || r.limitedOnly() {
			continue
		}
		if d := math.Abs(math.Log(r.edges() / edges)); d < dist {
			best, found, dist = r, true, d
		}
	}
	return best, found
}

// measuredCost is c's cost from the resource table's nearest kind, scaled
// to c's dial graph in formulaCost's shape: the part of the kind's wall
// time above a fixed 5 s, and the part of its memory above a fixed
// 256 MiB, in proportion to the edge count. The memory is the kind's
// largest, the wall time its median.
func measuredCost(t []Resource, c cell.Config) (Cost, bool) {
	r, ok := lookup(t, c)
	if !ok {
		return Cost{}, false
	}
	scale := c.Edges() / r.edges()
	const fixedRSS, fixedWall = 256 << 20, 5.0
	rss, wall := r.RSSMaxMiB*(1<<20), r.WallMedianS
	if scale != 1 {
		rss = fixedRSS + max(rss-fixedRSS, 0)*scale
		wall = fixedWall + max(wall-fixedWall, 0)*scale
	}
	return Cost{Wall: time.Duration(wall * float64(time.Second)), RSS: int64(rss)}, true
}

// profileCost is the cost of c, whose kind the table lacks under c's
// profile, from the same kind measured under the other profiles: the
// largest memory and the longest wall time among them, each scaled to c's
// dial graph as measuredCost does. A profile sets the queues, the latency
// model and their knobs, not what a node holds: at 500 nodes, degree 70
// and 1 MiB, every arm measured over QUIC under both the harness and
// Shadow peaks within 0.6 GiB of itself (results/resources.md), while the
// segmented arms of one profile span 5.3 to 7.5 GiB, so the same arm under
// another profile is the nearer guess. False when no other profile has
// c's kind.
func profileCost(t []Resource, c cell.Config) (Cost, bool) {
	var out Cost
	found := false
	tried := map[string]bool{c.Profile.Name: true}
	for _, r := range t {
		if tried[r.Profile] {
			continue
		}
		tried[r.Profile] = true
		other := c
		other.Profile = cell.Profile{Name: r.Profile}
		if cost, ok := measuredCost(t, other); ok {
			out.RSS, out.Wall, found = max(out.RSS, cost.RSS), max(out.Wall, cost.Wall), true
		}
	}
	return out, found
}

// segmentedCost is the cost of a segmented arm (one that sends units, not
// the whole message) whose own kind the table lacks: the largest memory
// and the longest wall time among the segmented arms measured in c's kind
// otherwise (payload, transport, profile, network, encoding, partitions),
// each scaled to c's dial graph as measuredCost does. Segmented arms hold
// 16 or 32 KiB units in flight rather than whole messages, so they cost
// alike: at 500 nodes, degree 70 and 1 MiB their peaks span 5.4 to 8.8 GiB
// against the whole message's 14.6 GiB (results/resources.md), and
// formulaCost, fitted to the whole message, would refuse two of them at
// once on a 24 GiB machine. False for the whole message, an arm outside
// the catalogue, or a kind with no segmented arm measured.
func segmentedCost(t []Resource, c cell.Config) (Cost, bool) {
	if !segmentedArm(c.Arm) {
		return Cost{}, false
	}
	var out Cost
	found := false
	tried := map[string]bool{}
	for _, r := range t {
		if tried[r.Arm] {
			continue
		}
		tried[r.Arm] = true
		if !segmentedArm(r.Arm) {
			continue
		}
		other := c
		other.Arm = r.Arm
		if cost, ok := measuredCost(t, other); ok {
			out.RSS, out.Wall, found = max(out.RSS, cost.RSS), max(out.Wall, cost.Wall), true
		}
	}
	return out, found
}

// segmentedArm reports whether name is a catalogue arm that sends the
// payload in units rather than as the whole message.
func segmentedArm(name string) bool {
	a, err := arms.LookupArm(name)
	return err == nil && a.Unit > 0
}
