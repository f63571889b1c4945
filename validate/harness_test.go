package validate

import (
	"os"
	"strings"
	"testing"
)

// openTestdata opens a file under testdata/.
func openTestdata(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestParseHarnessRecordsLines(t *testing.T) {
	recs, err := ParseHarnessRecords("harness_records.jsonl", openTestdata(t, "harness_records.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	a, w, c := recs[0], recs[1], recs[2]
	// Line 1: atuned, seed 7, every receiver complete.
	if a.Line != 1 || a.Arm != "atuned" || a.Seed != 7 || a.Net != "home" || a.Pay != "1m" || a.NSize != "500" ||
		a.PayloadBytes != 1048576 || a.N != 500 || a.Completed != 499 || a.Total != 499 ||
		!sameValue(a.P50, Known(0.75)) || !sameValue(a.P90, Known(0.912)) || !sameValue(a.P99, Known(1.0)) || !sameValue(a.Last, Known(1.212)) ||
		a.Deadline != 3 || a.RateK != 499 || a.RateN != 499 || a.Dups != 1712 || a.IDontWantTx != 40123 ||
		a.PublisherBytes != 2359296 || a.RxNodeBytes != 1612345.5 || a.CtrlRxNodeBytes != 81234.25 || a.WallS != 412.5 || a.MaxRSSKB != 9876543 {
		t.Errorf("record 1 = %+v", a)
	}
	if string(a.Extra["wire"]) != `"32x32768/20"` || len(a.Extra) != 1 {
		t.Errorf("record 1 extra = %v, want the unknown key wire kept", a.Extra)
	}
	// Line 3 (after a blank line): the whole message, 300 of 499 complete.
	// p50 index 249 < 300: a time; p90 index 449 and p99 index 494: censored.
	if w.Line != 3 || w.Arm != "wholend" || w.NSize != "500" || !sameValue(w.P50, Known(4.91)) || !w.P90.Censored || !w.P99.Censored || !w.Last.Censored {
		t.Errorf("record 2 = %+v", w)
	}
	// Line 4: c32 at n = 100, 98 of 99 complete: p90 index 89 a time,
	// p99 index 98 censored; last_s is the last completion seen, 2.5, but
	// the summary's last is censored.
	if c.Line != 4 || c.N != 100 || !sameValue(c.P90, Known(1.02)) || !c.P99.Censored || !sameValue(c.Last, Known(2.5)) {
		t.Errorf("record 3 = %+v", c)
	}
	s := c.Summary()
	if s.Arm != "c32" || s.Transport != "quic" || s.Seed != 9 || s.N != 100 || s.Receivers != 99 || s.Completed != 98 ||
		!s.Last.Censored || !sameValue(s.P50, Known(0.884)) || s.RateK != 97 || s.Deadline != 3 || s.Dups != 1650 || s.RxNodeBytes != 1059061 {
		t.Errorf("record 3 summary = %+v", s)
	}
	if !a.Has("max_rss_kb") || a.Has("wire") {
		t.Error("Has: wrong presence")
	}
}

func TestParseHarnessRecordsArray(t *testing.T) {
	recs, err := ParseHarnessRecords("harness_records_array.json", openTestdata(t, "harness_records_array.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2", len(recs))
	}
	if recs[0].Line != 2 || recs[0].Arm != "acoded" || recs[0].Net != "dc20" || !sameValue(recs[0].P99, Known(0.899)) || recs[0].Has("dups") {
		t.Errorf("record 1 = %+v", recs[0])
	}
	// 100 of 499 complete: even the median is censored.
	w := recs[1]
	if w.Line != 20 || w.PayloadBytes != 2<<20 || !w.P50.Censored || !w.P90.Censored || !w.P99.Censored || w.Dups != 900 || !w.Has("dups") {
		t.Errorf("record 2 = %+v", w)
	}
}

func TestParseHarnessRecordsErrors(t *testing.T) {
	// ok is a valid record; with replaces one of its fields.
	ok := `{"arm":"atuned","seed":7,"n":10,"payload_bytes":1048576,"completed":9,"total":9,"p50_s":0.5,"p90_s":0.9,"p99_s":0.9,"last_s":0.9}`
	with := func(key, val string) string {
		i := strings.Index(ok, `"`+key+`":`)
		j := i + len(key) + 3
		k := j + strings.IndexAny(ok[j:], ",}")
		return ok[:j] + val + ok[k:]
	}
	if _, err := ParseHarnessRecords("r", strings.NewReader(ok)); err != nil {
		t.Fatalf("valid record: %v", err)
	}
	cases := []struct{ name, input, want string }{
		{"bad number", ok + "\n" + with("p50_s", `"fast"`), `r:2: harness record: field p50_s: want a number or null`},
		{"string for a number", with("seed", `"7"`), `r:1: harness record: field seed: want a number`},
		{"fractional count", with("completed", `8.5`), `field completed: want a whole number`},
		{"missing field", strings.Replace(ok, `"total":9,`, "", 1), `field total: missing`},
		{"total not n − 1", with("total", "10"), `field total: 10 receivers in a cell of n = 10`},
		{"more complete than receivers", with("completed", "10"), `field completed: 10 of 9`},
		{"null quantile on a completed receiver", with("p90_s", "null"), `field p90_s: censored, but with 9 of 9 receivers complete the quantile (index 8) is a completion time`},
		{"time on a censored receiver", with("completed", "8"), `field p90_s: 0.9, but with 8 of 9 receivers complete the quantile (index 8) is censored (null)`},
		{"quantiles out of order", with("p50_s", "0.95"), `field p90_s: 0.9 is below p50_s 0.95`},
		{"last below p99", with("last_s", "0.8"), `field last_s: 0.8 is below p99_s 0.9`},
		{"last null though all complete", with("last_s", "null"), `field last_s: null, but every receiver completed`},
		{"negative time", with("p50_s", "-0.1"), `field p50_s: want a time of zero or more`},
		{"rate above completed", strings.Replace(ok, `}`, `,"rate_k":10,"rate_n":9}`, 1), `field rate_k`},
		{"not an object", `[1, 2]`, `r:1: harness record: want a JSON object`},
		{"broken JSON", ok + "\n\n{\"arm\": ", `r:3: unexpected EOF`},
		{"unterminated array", "[\n" + ok + ",\n", `r:3: unterminated array`},
		{"data after the array", "[" + ok + "]\n{}", `r:2: data after the array`},
		{"empty", "  \n", `r: no records`},
	}
	for _, c := range cases {
		_, err := ParseHarnessRecords("r", strings.NewReader(c.input))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to contain %q", c.name, err, c.want)
		}
	}
}
