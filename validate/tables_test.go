package validate

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// field returns a row's column by its CSV name.
func field(r RefRow, col string) string {
	switch col {
	case "section":
		return r.Section
	case "table":
		return r.Table
	case "arm":
		return r.Arm
	case "arm_published":
		return r.ArmPublished
	case "backend":
		return r.Backend
	case "transport":
		return r.Transport
	case "queue":
		return r.Queue
	case "scenario":
		return r.Scenario
	case "condition":
		return r.Condition
	case "n":
		return strconv.Itoa(r.N)
	case "statistic":
		return r.Statistic
	case "measure":
		return r.Measure
	case "reference":
		return r.Reference
	case "unit":
		return r.Unit
	}
	panic("field: no column " + col)
}

// pick returns the one row matching every "column=value" condition.
func pick(t *testing.T, rows []RefRow, conds ...string) RefRow {
	t.Helper()
	var found []RefRow
	for _, r := range rows {
		ok := true
		for _, c := range conds {
			col, val, _ := strings.Cut(c, "=")
			if field(r, col) != val {
				ok = false
				break
			}
		}
		if ok {
			found = append(found, r)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d rows match %v, want 1", len(found), conds)
	}
	return found[0]
}

// load reads a table or fails the test.
func load(t *testing.T, name string) []RefRow {
	t.Helper()
	rows, err := LoadTable(name)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// wantText checks a row's number as printed.
func wantText(t *testing.T, r RefRow, text string) {
	t.Helper()
	if r.ValueText != text {
		t.Errorf("%s:%d (%s %s %s %s %s %s): value %s, report prints %s", r.File, r.Line, r.Arm, r.Backend, r.Transport, r.Queue, r.Statistic, r.Measure, r.ValueText, text)
	}
}

// roundedDiff is DiffPct(x, y) rounded to a whole percent, as the report
// prints it.
func roundedDiff(t *testing.T, x, y float64) float64 {
	t.Helper()
	d, err := DiffPct(Known(x), Known(y))
	if err != nil {
		t.Fatal(err)
	}
	return math.Round(d.V)
}

func TestTablesAllLoad(t *testing.T) {
	want := map[string]int{
		"appendix_d_home":         70,
		"s3_discrepancies":        10,
		"s4_seed7_whole":          15,
		"s4_seed7_c":              8,
		"s5_sndbuf":               12,
		"s6_transport":            21,
		"s9_warm":                 19,
		"s10_fifo_vs_shadow":      72,
		"s10_fqcodel_vs_harness":  36,
		"s10_host_scale":          10,
		"post_fifo_vs_shadow":     42,
		"post_fqcodel_vs_harness": 24,
		"post_headline":           15,
	}
	names := Tables()
	if !slices.IsSorted(names) || len(names) != len(want) {
		t.Errorf("Tables() = %v, want the %d sorted names", names, len(want))
	}
	for _, name := range names {
		rows, err := LoadTable(name)
		if err != nil {
			t.Errorf("LoadTable(%q): %v", name, err)
			continue
		}
		if len(rows) != want[name] {
			t.Errorf("%s: %d rows, want %d", name, len(rows), want[name])
		}
		for _, r := range rows {
			if r.File != "tables/"+name+".csv" || r.Line < 2 || r.Note == "" {
				t.Errorf("%s: row %+v lacks its file, line or note", name, r)
			}
		}
	}
	if _, err := LoadTable("appendix_d_dc"); err == nil {
		t.Error("LoadTable of a table that does not exist: no error")
	}
}

// TestTableTitles: every table has its line in tables/README.md's files
// table, which uplink validate --list-tables prints, with the table's row
// count.
func TestTableTitles(t *testing.T) {
	data, err := tableFiles.ReadFile("tables/README.md")
	require.NoError(t, err)
	for _, name := range Tables() {
		title, err := TableTitle(name)
		require.NoError(t, err)
		require.NotEmpty(t, title)
		rows, err := LoadTable(name)
		require.NoError(t, err)
		require.Contains(t, string(data), fmt.Sprintf("| `%s.csv` | %d | %s |", name, len(rows), title), name)
	}
	title, err := TableTitle("appendix_d_home")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(title, "Appendix D, the home scenario"), title)
	_, err = TableTitle("appendix_d_dc")
	require.ErrorContains(t, err, "no line in tables/README.md")
}

func TestArmsCatalogue(t *testing.T) {
	arms, err := Arms()
	if err != nil {
		t.Fatal(err)
	}
	if len(arms) != 14 {
		t.Errorf("%d arms, Appendix A lists 14", len(arms))
	}
	want := map[string]string{
		"whole message": "wholend", "A-tuned 32k": "atuned", "A-tuned 16k": "am_k64",
		"coded A 32k": "acoded", "B tuned 32k": "bfixed", "coded B 32k": "bcodedfc1",
		"C 32k": "c32", "C + RS 32k": "c32rs", "the phase shift 32k": "lad_phase",
		"tier 3 with the discipline at every size": "aadaptcfd",
	}
	for _, a := range arms {
		if p, ok := want[a.Report]; ok && p != a.Published {
			t.Errorf("arm %q published as %q, Appendix A says %q", a.Report, a.Published, p)
		}
		delete(want, a.Report)
	}
	if len(want) > 0 {
		t.Errorf("arms missing from the catalogue: %v", want)
	}
	if arms[0].Report != "whole message" || !slices.Equal(arms[0].Figures, []int{1, 8, 9}) {
		t.Errorf("first arm %+v, want the whole message in figures 1, 8, 9", arms[0])
	}
}

func TestAppendixDHome(t *testing.T) {
	rows := load(t, "appendix_d_home")
	// The whole-message row: published 4.98 / 5.91, twin 4.91 / 5.91,
	// Shadow QUIC 3.22 / 4.04, Shadow TCP 3.63 / 4.45, −34% / −32%.
	for _, c := range []struct{ backend, transport, p50, p99 string }{
		{"harness", "quic", "4.98", "5.91"}, {"twin", "quic", "4.91", "5.91"},
		{"shadow", "quic", "3.22", "4.04"}, {"shadow", "tcp", "3.63", "4.45"},
	} {
		wantText(t, pick(t, rows, "arm=whole message", "backend="+c.backend, "transport="+c.transport, "statistic=p50", "measure=value"), c.p50)
		wantText(t, pick(t, rows, "arm=whole message", "backend="+c.backend, "transport="+c.transport, "statistic=p99", "measure=value"), c.p99)
	}
	wantText(t, pick(t, rows, "arm=whole message", "statistic=p50", "measure=diff_pct"), "-34")
	wantText(t, pick(t, rows, "arm=whole message", "statistic=p99", "measure=diff_pct"), "-32")
	// Spot checks elsewhere in the table.
	wantText(t, pick(t, rows, "arm=A-tuned 32k", "backend=twin", "statistic=p99", "measure=value"), "1.000")
	wantText(t, pick(t, rows, "arm=coded B 32k", "backend=shadow", "transport=quic", "statistic=p99", "measure=value"), "1.532")
	wantText(t, pick(t, rows, "arm=C + RS 32k", "backend=shadow", "transport=tcp", "statistic=p50", "measure=value"), "0.553")
	wantText(t, pick(t, rows, "arm=B tuned 32k", "backend=harness", "statistic=p50", "measure=value"), "0.897")
	wantText(t, pick(t, rows, "arm=coded A 32k", "statistic=p50", "measure=diff_pct"), "-1")
	r := pick(t, rows, "arm=C 32k", "backend=shadow", "transport=quic", "statistic=p50", "measure=value")
	if r.N != 500 || r.PayloadBytes != 1<<20 || r.Seeds.Count != 10 || r.Seeds.List[0] != 7 || r.Seeds.List[9] != 16 ||
		r.Queue != "fifo" || r.Scenario != "home" || r.ArmPublished != "c32" {
		t.Errorf("provenance of %s:%d: %+v", r.File, r.Line, r)
	}
	// The printed differences are the differences of the printed medians
	// (section 2: "the difference of Shadow from the twin as a percentage
	// of the twin's median"), rounded: a check of the transcription and of
	// DiffPct together.
	for _, arm := range []string{"whole message", "A-tuned 32k", "coded A 32k", "B tuned 32k", "coded B 32k", "C 32k", "C + RS 32k"} {
		for _, st := range []string{"p50", "p99"} {
			sh := pick(t, rows, "arm="+arm, "backend=shadow", "transport=quic", "statistic="+st, "measure=value")
			tw := pick(t, rows, "arm="+arm, "backend=twin", "statistic="+st, "measure=value")
			d := pick(t, rows, "arm="+arm, "statistic="+st, "measure=diff_pct")
			if got := roundedDiff(t, sh.Value, tw.Value); got != d.Value {
				t.Errorf("%s %s: (%v − %v)/%v = %v%%, table prints %v%%", arm, st, sh.Value, tw.Value, tw.Value, got, d.Value)
			}
		}
	}
}

func TestSection3Discrepancies(t *testing.T) {
	rows := load(t, "s3_discrepancies")
	d := load(t, "appendix_d_home")
	wantText(t, pick(t, rows, "arm=whole message", "scenario=dc20"), "-36")
	wantText(t, pick(t, rows, "arm=whole message", "scenario=dcb20"), "-16")
	// The home and TCP figures follow from Appendix D's medians.
	twin := func(arm string) float64 {
		return pick(t, d, "arm="+arm, "backend=twin", "statistic=p50", "measure=value").Value
	}
	shadow := func(arm, tr string) float64 {
		return pick(t, d, "arm="+arm, "backend=shadow", "transport="+tr, "statistic=p50", "measure=value").Value
	}
	for _, c := range []struct{ arm, tr string }{{"whole message", "quic"}, {"C 32k", "quic"}, {"C + RS 32k", "quic"}, {"C 32k", "tcp"}, {"C + RS 32k", "tcp"}} {
		r := pick(t, rows, "arm="+c.arm, "transport="+c.tr, "scenario=home", "measure=diff_pct")
		if got := roundedDiff(t, shadow(c.arm, c.tr), twin(c.arm)); got != r.Value {
			t.Errorf("%s over %s: Appendix D gives %v%%, section 3 prints %v%%", c.arm, c.tr, got, r.Value)
		}
	}
	wantText(t, pick(t, rows, "arm=C + RS 32k", "transport=tcp"), "-41")
	r := pick(t, rows, "arm=coded B 32k", "statistic=p50")
	if r.Measure != "bound_pct" || r.Value != 7 || r.Scenario != "home;dc20;dcb20" {
		t.Errorf("B median bound: %+v", r)
	}
	// 37 % of the excess tail, from the section 5 table: (1.549 − 1.381) /
	// (1.549 − 1.095) = 0.370.
	s5 := load(t, "s5_sndbuf")
	p99 := func(cond, tr string) float64 {
		return pick(t, s5, "condition="+cond, "transport="+tr, "statistic=p99").Value
	}
	removed := (p99("sndbuf-7MB", "quic") - p99("sndbuf-64KB", "quic")) / (p99("sndbuf-7MB", "quic") - p99("cold", "tcp")) * 100
	if got := pick(t, rows, "statistic=p99_excess_removed"); math.Round(removed) != got.Value {
		t.Errorf("excess removed: section 5's table gives %.1f%%, section 3 prints %v%%", removed, got.Value)
	}
}

func TestSection4Seed7(t *testing.T) {
	rows := load(t, "s4_seed7_whole")
	wantText(t, pick(t, rows, "backend=twin", "statistic=p50"), "4.61")
	wantText(t, pick(t, rows, "backend=twin", "statistic=p99"), "5.49")
	wantText(t, pick(t, rows, "backend=twin", "statistic=rate_3s"), "8")
	wantText(t, pick(t, rows, "transport=tcp", "queue=fifo", "statistic=p50"), "3.66")
	wantText(t, pick(t, rows, "transport=tcp", "queue=round-robin", "statistic=p99"), "6.88")
	wantText(t, pick(t, rows, "transport=tcp", "queue=round-robin", "statistic=rate_3s"), "1")
	// "Over QUIC the switch changes nothing, to the byte".
	for _, st := range []string{"p50", "p99", "rate_3s"} {
		a := pick(t, rows, "transport=quic", "queue=fifo", "statistic="+st)
		b := pick(t, rows, "transport=quic", "queue=round-robin", "statistic="+st)
		if a.Value != b.Value {
			t.Errorf("%s: Shadow QUIC FIFO %v, round-robin %v; the report has them equal", st, a.Value, b.Value)
		}
	}
	if r := pick(t, rows, "backend=twin", "statistic=p50"); !slices.Equal(r.Seeds.List, []int{7}) || r.Unit != "s" {
		t.Errorf("seed-7 row: %+v", r)
	}
	c := load(t, "s4_seed7_c")
	wantText(t, pick(t, c, "arm=C 32k", "backend=twin"), "0.808")
	wantText(t, pick(t, c, "arm=C 32k", "transport=tcp", "queue=round-robin"), "0.719")
	wantText(t, pick(t, c, "arm=C + RS 32k", "backend=shadow", "transport=quic"), "0.712")
	wantText(t, pick(t, c, "arm=C + RS 32k", "transport=tcp", "queue=fifo"), "0.546")
}

func TestSection5SendBuffer(t *testing.T) {
	rows := load(t, "s5_sndbuf")
	wantText(t, pick(t, rows, "condition=sndbuf-7MB", "statistic=p50"), "0.843")
	wantText(t, pick(t, rows, "condition=sndbuf-7MB", "statistic=late_receivers"), "37")
	wantText(t, pick(t, rows, "condition=sndbuf-64KB", "statistic=p90"), "1.098")
	wantText(t, pick(t, rows, "condition=sndbuf-64KB", "statistic=late_receivers"), "23")
	wantText(t, pick(t, rows, "transport=tcp", "statistic=p99"), "1.095")
	if r := pick(t, rows, "transport=tcp", "statistic=late_receivers"); r.Unit != "count" || r.Value != 1 {
		t.Errorf("TCP late receivers: %+v", r)
	}
}

func TestSection6Transport(t *testing.T) {
	rows := load(t, "s6_transport")
	d := load(t, "appendix_d_home")
	for _, arm := range []string{"whole message", "A-tuned 32k", "coded A 32k", "B tuned 32k", "coded B 32k", "C 32k", "C + RS 32k"} {
		q := pick(t, rows, "arm="+arm, "transport=quic", "measure=value")
		tc := pick(t, rows, "arm="+arm, "transport=tcp", "measure=value")
		diff := pick(t, rows, "arm="+arm, "measure=diff_pct")
		if got := roundedDiff(t, tc.Value, q.Value); got != diff.Value {
			t.Errorf("%s: TCP vs QUIC from the medians %v%%, table prints %v%%", arm, got, diff.Value)
		}
		// The same medians as Appendix D's Shadow columns, which print the
		// whole message to two decimals (3.629 there is 3.63).
		for _, c := range []struct {
			r  RefRow
			tr string
		}{{q, "quic"}, {tc, "tcp"}} {
			ad := pick(t, d, "arm="+arm, "backend=shadow", "transport="+c.tr, "statistic=p50", "measure=value")
			_, frac, _ := strings.Cut(ad.ValueText, ".")
			if got := strconv.FormatFloat(c.r.Value, 'f', len(frac), 64); got != ad.ValueText {
				t.Errorf("%s over %s: section 6 %s, Appendix D %s", arm, c.tr, c.r.ValueText, ad.ValueText)
			}
		}
	}
	wantText(t, pick(t, rows, "arm=whole message", "transport=tcp", "measure=value"), "3.629")
	wantText(t, pick(t, rows, "arm=B tuned 32k", "measure=diff_pct"), "-12")
	wantText(t, pick(t, rows, "arm=C + RS 32k", "measure=diff_pct"), "-23")
}

func TestSection9Warm(t *testing.T) {
	rows := load(t, "s9_warm")
	wantText(t, pick(t, rows, "arm=coded A 32k", "statistic=p50"), "42")
	wantText(t, pick(t, rows, "arm=coded B 32k", "statistic=p50"), "58")
	wantText(t, pick(t, rows, "arm=coded B 32k", "statistic=p99"), "46")
	wantText(t, pick(t, rows, "arm=coded A 32k", "statistic=rx_node_bytes"), "-17")
	wantText(t, pick(t, rows, "arm=A-tuned 32k", "statistic=p99"), "-4")
	wantText(t, pick(t, rows, "arm=C + RS 32k", "statistic=p99"), "-2")
	wantText(t, pick(t, rows, "arm=B tuned 32k", "statistic=rx_node_bytes"), "0")
	r := pick(t, rows, "arm=whole message")
	if r.Statistic != "seeds_incomplete" || r.Value != 9 || r.Seeds.Count != 10 || r.Condition != "warm" {
		t.Errorf("warm whole message: %+v", r)
	}
}

func TestSection10FIFO(t *testing.T) {
	rows := load(t, "s10_fifo_vs_shadow")
	wantText(t, pick(t, rows, "arm=whole message", "transport=quic", "backend=shadow", "statistic=p50"), "2202")
	wantText(t, pick(t, rows, "arm=whole message", "transport=quic", "backend=linux", "statistic=p99", "measure=value"), "4779")
	wantText(t, pick(t, rows, "arm=whole message", "transport=quic", "statistic=p50", "measure=diff_pct"), "68")
	wantText(t, pick(t, rows, "arm=whole message", "transport=quic", "statistic=p50", "measure=diff_min"), "26")
	wantText(t, pick(t, rows, "arm=whole message", "transport=quic", "statistic=p50", "measure=diff_max"), "79")
	wantText(t, pick(t, rows, "arm=A-tuned 32k", "transport=quic", "statistic=p99", "measure=diff_min"), "-15")
	wantText(t, pick(t, rows, "arm=C 32k", "transport=tcp", "statistic=p99", "measure=diff_max"), "89")
	wantText(t, pick(t, rows, "arm=A-tuned 32k", "transport=tcp", "statistic=rx_node_bytes"), "12")
	wantText(t, pick(t, rows, "arm=whole message", "transport=tcp", "statistic=cpu_mean"), "23")
	wantText(t, pick(t, rows, "arm=C 32k", "transport=tcp", "backend=shadow", "statistic=p50"), "558")
	// The whole message's FIFO rows rest on nine seeds (seed 12 left out).
	for _, r := range rows {
		want := 10
		if r.Arm == "whole message" {
			want = 9
		}
		if r.Seeds.Count != want || (want == 9 && slices.Contains(r.Seeds.List, 12)) || r.N != 100 {
			t.Errorf("%s:%d: %d seeds %v at n = %d", r.File, r.Line, r.Seeds.Count, r.Seeds.List, r.N)
		}
	}
	checkPairedRanges(t, rows)
}

// checkPairedRanges checks that every paired median lies in its printed
// seed range, as a median must.
func checkPairedRanges(t *testing.T, rows []RefRow) {
	t.Helper()
	n := 0
	for _, r := range rows {
		if r.Measure != "diff_pct" || r.Statistic == "rx_node_bytes" {
			continue
		}
		lo := pick(t, rows, "arm="+r.Arm, "transport="+r.Transport, "statistic="+r.Statistic, "measure=diff_min")
		hi := pick(t, rows, "arm="+r.Arm, "transport="+r.Transport, "statistic="+r.Statistic, "measure=diff_max")
		if !(lo.Value <= r.Value && r.Value <= hi.Value) {
			t.Errorf("%s:%d: median %v outside its seed range [%v, %v]", r.File, r.Line, r.Value, lo.Value, hi.Value)
		}
		n++
	}
	if n == 0 {
		t.Error("no paired differences found")
	}
}

func TestSection10FQCoDel(t *testing.T) {
	rows := load(t, "s10_fqcodel_vs_harness")
	wantText(t, pick(t, rows, "arm=whole message", "transport=quic", "backend=twin", "statistic=p50"), "3492")
	wantText(t, pick(t, rows, "arm=A-tuned 32k", "backend=linux", "transport=quic", "statistic=p99", "measure=value"), "1090")
	wantText(t, pick(t, rows, "arm=C 32k", "statistic=p50", "measure=diff_pct"), "-1")
	wantText(t, pick(t, rows, "arm=C 32k", "statistic=p99", "measure=diff_max"), "6")
	wantText(t, pick(t, rows, "arm=whole message", "statistic=p99", "measure=diff_min"), "-12")
	wantText(t, pick(t, rows, "arm=whole message", "transport=tcp", "statistic=p99"), "5598")
	// "the TCP rows have no harness twin".
	for _, r := range rows {
		if r.Transport == "tcp" && (r.Backend != "linux" || r.Measure != "value") {
			t.Errorf("%s:%d: a TCP row with a harness side: %+v", r.File, r.Line, r)
		}
	}
	checkPairedRanges(t, rows)
}

func TestSection10HostScale(t *testing.T) {
	rows := load(t, "s10_host_scale")
	fifo := load(t, "s10_fifo_vs_shadow")
	wantText(t, pick(t, rows, "arm=A-tuned 32k", "n=250", "measure=value"), "1.84")
	wantText(t, pick(t, rows, "arm=C 32k", "n=250", "measure=ratio"), "3.6")
	wantText(t, pick(t, rows, "arm=A-tuned 32k", "n=500", "measure=value"), "6.3")
	wantText(t, pick(t, rows, "arm=A-tuned 32k", "n=500", "measure=ratio"), "8")
	if r := pick(t, rows, "arm=A-tuned 32k", "n=250", "measure=ratio"); r.Unit != "x" || r.Value != 2.5 || r.Seeds.Count != 1 || r.Seeds.List != nil {
		t.Errorf("250-node ratio row: %+v", r)
	}
	// The 100-node line is the FIFO table's QUIC cells in seconds.
	for _, arm := range []string{"A-tuned 32k", "C 32k"} {
		ms := pick(t, fifo, "arm="+arm, "transport=quic", "backend=linux", "statistic=p50", "measure=value").Value
		s := pick(t, rows, "arm="+arm, "n=100", "measure=value")
		wantText(t, s, fmt.Sprintf("%.2f", ms/1000))
		d := pick(t, fifo, "arm="+arm, "transport=quic", "statistic=p50", "measure=diff_pct").Value
		if got := pick(t, rows, "arm="+arm, "n=100", "measure=diff_pct").Value; got != d {
			t.Errorf("%s at 100 nodes: %v%% here, %v%% in the FIFO table", arm, got, d)
		}
	}
}

func TestPostTablesAreTheReportsInSeconds(t *testing.T) {
	// The post prints section 10's tables in seconds to two decimals; each
	// of its numbers is the report's milliseconds / 1000 formatted %.2f
	// (0.715 s prints as 0.71: the binary 0.715 is just below it).
	for _, pair := range [][2]string{{"post_fifo_vs_shadow", "s10_fifo_vs_shadow"}, {"post_fqcodel_vs_harness", "s10_fqcodel_vs_harness"}} {
		post, report := load(t, pair[0]), load(t, pair[1])
		for _, p := range post {
			conds := []string{"arm=" + p.Arm, "backend=" + p.Backend, "transport=" + p.Transport, "queue=" + p.Queue, "statistic=" + p.Statistic, "measure=" + p.Measure}
			r := pick(t, report, conds...)
			if p.Unit == "s" {
				wantText(t, p, fmt.Sprintf("%.2f", r.Value/1000))
			} else if p.Value != r.Value || p.Unit != r.Unit {
				t.Errorf("%s:%d: post %v %s, report %v %s", p.File, p.Line, p.Value, p.Unit, r.Value, r.Unit)
			}
			if p.Seeds.Count != r.Seeds.Count || p.N != r.N || p.Reference != r.Reference {
				t.Errorf("%s:%d: provenance differs from %s:%d", p.File, p.Line, r.File, r.Line)
			}
		}
	}
}

func TestPostHeadline(t *testing.T) {
	rows := load(t, "post_headline")
	d := load(t, "appendix_d_home")
	wantText(t, pick(t, rows, "arm=whole message", "backend=shadow", "scenario=home", "measure=diff_pct"), "-34")
	wantText(t, pick(t, rows, "arm=whole message", "scenario=dcb20"), "-16")
	wantText(t, pick(t, rows, "arm=whole message", "scenario=home;dc20;dcb20"), "-33")
	wantText(t, pick(t, rows, "arm=whole message", "backend=twin", "scenario=dc20"), "19")
	wantText(t, pick(t, rows, "arm=coded B 32k"), "40")
	// 4.9 s and 3.2 s, 6.5× and 4.1×, from Appendix D's medians.
	p50 := func(arm, backend string) float64 {
		return pick(t, d, "arm="+arm, "backend="+backend, "transport=quic", "statistic=p50", "measure=value").Value
	}
	for _, backend := range []string{"twin", "shadow"} {
		whole, atuned := p50("whole message", backend), p50("A-tuned 32k", backend)
		wantText(t, pick(t, rows, "arm=whole message", "backend="+backend, "scenario=home", "measure=value"), fmt.Sprintf("%.1f", whole))
		ratio, _ := Ratio(Known(whole), Known(atuned))
		wantText(t, pick(t, rows, "arm=whole message", "backend="+backend, "measure=ratio"), fmt.Sprintf("%.1f", ratio.V))
	}
	lo := pick(t, rows, "arm=A-tuned 32k;C 32k", "measure=diff_min")
	hi := pick(t, rows, "arm=A-tuned 32k;C 32k", "measure=diff_max")
	if lo.Value != -1 || hi.Value != 18 || lo.Queue != "fifo;fq_codel" || lo.ArmPublished != "atuned;c32" {
		t.Errorf("−1 to +18%%: %+v, %+v", lo, hi)
	}
	// The range covers every segmented QUIC median of section 10's two tables.
	for _, name := range []string{"s10_fifo_vs_shadow", "s10_fqcodel_vs_harness"} {
		for _, r := range load(t, name) {
			if r.Arm != "whole message" && r.Transport == "quic" && r.Measure == "diff_pct" && r.Statistic != "rx_node_bytes" &&
				(r.Value < lo.Value || r.Value > hi.Value) {
				t.Errorf("%s:%d: %v%% outside the post's −1 to +18%%", r.File, r.Line, r.Value)
			}
		}
	}
}

func TestParseTableErrors(t *testing.T) {
	arms, err := Arms()
	if err != nil {
		t.Fatal(err)
	}
	header := strings.Join(tableColumns, ",")
	good := "D,D.home,C 32k,c32,shadow,quic,fifo,home,cold,500,1048576,7-16,p50,value,,0.766,s,a note"
	if _, err := parseTable("t.csv", strings.NewReader(header+"\n"+good+"\n"), arms); err != nil {
		t.Fatalf("a good row: %v", err)
	}
	// replace swaps one column of the good row.
	replace := func(col, val string) string {
		f := strings.Split(good, ",")
		f[slices.Index(tableColumns, col)] = val
		return strings.Join(f, ",")
	}
	cases := []struct {
		name, input, want string
	}{
		{"unknown column", strings.Replace(header, "note", "comment", 1) + "\n" + good, `t.csv:1: unknown column "comment"`},
		{"missing column", strings.TrimSuffix(header, ",note") + "\n" + strings.TrimSuffix(good, ",a note"), `t.csv:1: missing column "note"`},
		{"bad number", header + "\n" + good + "\n" + replace("value", "0.7x"), `t.csv:3: column value: bad number "0.7x"`},
		{"empty number", header + "\n" + replace("value", ""), `t.csv:2: column value: bad number ""`},
		{"infinite number", header + "\n" + replace("value", "Inf"), `t.csv:2: column value`},
		{"bad n", header + "\n" + replace("n", "five hundred"), `t.csv:2: column n: bad number`},
		{"unknown backend", header + "\n" + replace("backend", "simnet"), `t.csv:2: column backend: unknown value "simnet"`},
		{"unknown queue in a list", header + "\n" + replace("queue", "fifo;pie"), `t.csv:2: column queue: unknown value "pie"`},
		{"unknown arm", header + "\n" + replace("arm", "D 32k"), `t.csv:2: column arm: "D 32k"`},
		{"wrong published name", header + "\n" + replace("arm_published", "c32rs"), `t.csv:2: column arm_published: "c32rs" for arm "C 32k"`},
		{"bad seeds", header + "\n" + replace("seeds", "16-7"), `t.csv:2: column seeds`},
		{"unit against measure", header + "\n" + replace("unit", "x"), `t.csv:2: column unit: "x" with measure value`},
		{"unknown unit", header + "\n" + replace("unit", "sec"), `t.csv:2: column unit: "sec"`},
		{"unknown measure", header + "\n" + replace("measure", "mean"), `t.csv:2: column measure: unknown measure "mean"`},
		{"difference without reference", header + "\n" + replace("measure", "diff_pct"), `t.csv:2: column unit`},
		{"difference without reference, right unit", header + "\n" + strings.Replace(replace("measure", "diff_pct"), ",s,", ",%,", 1), `t.csv:2: column reference`},
		{"table id not of its section", header + "\n" + replace("table", "4.home"), `t.csv:2: column table`},
		{"two tables in a file", header + "\n" + good + "\n" + replace("table", "D.other"), `t.csv:3: table D D.other, but line 2 starts table D D.home`},
		{"duplicate row", header + "\n" + good + "\n" + replace("value", "0.8"), `t.csv:3: same provenance as line 2`},
		{"short row", header + "\n" + "D,D.home", `t.csv:2: 2 fields, header has 18`},
		{"no rows", header + "\n", `t.csv: no rows`},
	}
	for _, c := range cases {
		_, err := parseTable("t.csv", strings.NewReader(c.input), arms)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

func TestParseSeeds(t *testing.T) {
	for _, c := range []struct {
		in    string
		list  []int
		count int
	}{
		{"7", []int{7}, 1},
		{"7-9", []int{7, 8, 9}, 3},
		{"7-11;13-16", []int{7, 8, 9, 10, 11, 13, 14, 15, 16}, 9},
		{"unnamed:1", nil, 1},
		{"unknown", nil, 0},
	} {
		s, err := parseSeeds(c.in)
		if err != nil || !slices.Equal(s.List, c.list) || s.Count != c.count {
			t.Errorf("parseSeeds(%q) = %+v, %v", c.in, s, err)
		}
	}
	for _, bad := range []string{"", "7-", "a", "9-7", "7;7", "7-9;8", "unnamed:0", "unnamed:x"} {
		if _, err := parseSeeds(bad); err == nil {
			t.Errorf("parseSeeds(%q): no error", bad)
		}
	}
}
