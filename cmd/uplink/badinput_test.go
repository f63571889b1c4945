package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBadInput: every class of bad input is a usage error (exit 2) with
// one line naming the flag or knob, the value and what is allowed, made
// by the parent before any cell starts: values past every bound, NaN and
// infinities, overflows, duplicates, settings a transport or arm cannot
// use, bad files, and cells too large for the memory.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	// A valid draw to break: the first seed's draw of a small cell.
	draw := filepath.Join(dir, "draw.json")
	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"run", "--nodes", "6", "--degree", "2", "--export-topology", draw}, &out, &errb), errb.String())
	drawJSON, err := os.ReadFile(draw)
	require.NoError(t, err)
	edit := func(name string, f func(m map[string]any)) string {
		var m map[string]any
		require.NoError(t, json.Unmarshal(drawJSON, &m))
		f(m)
		b, err := json.Marshal(m)
		require.NoError(t, err)
		return file(name, string(b))
	}
	farLatency := edit("far.json", func(m map[string]any) {
		m["latency_ns"].([]any)[0].([]any)[1] = 9.2e18
	})
	unknownModel := edit("model.json", func(m map[string]any) { m["model"] = "moon" })
	unknownNet := edit("net.json", func(m map[string]any) { m["scenario"] = "mars" })
	slowRate := edit("rate.json", func(m map[string]any) { m["up_bps"].([]any)[0] = 7999 })
	trailing := file("trailing.json", `{"uplink": {"default": "fq_codel"}} garbage`)
	badNode := file("badnode.json", `{"uplink": {"default": "fq_codel", "nodes": {"60": "pie"}}}`)
	badSpec := file("badspec.json", `{"downlink": {"default": "pie:target=NaN"}}`)
	longSpec := file("longspec.json", `{"uplink": {"default": "pie:`+strings.Repeat("x", 2<<20)+`"}}`)
	nullFile := file("null.json", "null\n")
	emptyFile := file("empty.json", `{}`)
	nullDirs := file("nulldirs.json", `{"uplink": null, "downlink": null}`)
	emptyDown := file("emptydown.json", `{"uplink": {"default": "pie"}, "downlink": {"nodes": {}}}`)
	slurmDir := filepath.Join(dir, "slurm")

	cases := []usageCase{
		// 1. Inputs that would make a run never end.
		{[]string{"run", "--seeds", "0-18446744073709551615"}, "--seeds: \"0-18446744073709551615\": at most 10000 seeds"},
		{[]string{"run", "--seeds", "18446744073709551616"}, "--seeds"},
		{[]string{"run", "--window", "2562047h"}, "--window: duration \"2562047h\": want 1ns to 1h0m0s"},
		{[]string{"run", "--window", "1h0m0.001s"}, "--window"},
		{[]string{"run", "--deadline", "2h"}, "--deadline"},
		{[]string{"run", "--knob", "mesh-wait=fixed", "--knob", "settle=1e9"}, "knob settle: seconds \"1e9\": want 0 to 3600"},
		{[]string{"run", "--knob", "settle=3600.5"}, "want 0 to 3600"},
		{[]string{"run", "--knob", "cpu=rx:3"}, "knob cpu \"rx:3\": rx: \"3\": give a unit: ms, us, ns or ps"},
		{[]string{"run", "--warmup", "payload", "--drain-gap", "61m"}, "--drain-gap"},
		{[]string{"run", "--background", "64KiB@999us"}, "--background: duration \"999us\": want 1ms to 1h0m0s"},
		{[]string{"run", "--background", "64KiB@100ms", "--background-lead", "2h"}, "--background-lead"},
		{[]string{"bulk", "--duration", "2h"}, "--duration: duration \"2h\": want 1ns to 1h0m0s"},
		{[]string{"bulk", "--bytes", "1TiB", "--rate", "8kbit"}, "at most 1h0m0s"},
		{[]string{"bulk", "--duration", "1h", "--rate", "10Tbit"}, "--duration 1h at --rate 10Tbit may send"},
		// 2. Inputs that crashed: a latency near the largest int64, a
		// dense n×n allocation, a cell that cannot fit.
		{[]string{"run", "--topology", farLatency}, "latency"},
		{[]string{"run", "--nodes", "100000", "--degree", "70", "--mem", "20GiB"}, "a cell of 100000 nodes at degree 70 with a 1 MiB payload needs about"},
		{[]string{"run", "--nodes", "100001"}, "--nodes: \"100001\": want a whole number from 2 to 100000"},
		// 3. Nonsense once accepted.
		{[]string{"bulk", "--loss", "NaN"}, "--loss: fraction \"NaN\": want a finite decimal number"},
		{[]string{"bulk", "--cpu", "rx:20ms"}, "--cpu: cpu \"rx:20ms\": rx: per packet \"20ms\": want 0 to 10ms"},
		{[]string{"bulk", "--cpu", "tx:5us/B"}, "--cpu: cpu \"tx:5us/B\": tx: per byte \"5us\": want 0 to 1us/B"},
		{[]string{"bulk", "--cpu", "rx:1us", "--backend", "simnet"}, "--backend simnet has no host CPU model: drop --cpu"},
		{[]string{"bulk", "--loss", "100%"}, "--loss: fraction \"100%\": want 0 to below 1"},
		{[]string{"bulk", "--rate", "0.5bit"}, "--rate: rate \"0.5bit\": want 8 kbit/s to 10 Tbit/s"},
		{[]string{"bulk", "--rate", "7999bit"}, "--rate: rate \"7999bit\": want 8 kbit/s to 10 Tbit/s"},
		{[]string{"bulk", "--rate", "7999"}, "--rate \"7999\": give a unit, such as 50Mbit or 1Gbit (bit/s; want 8 kbit/s to 10 Tbit/s)"},
		{[]string{"bulk", "--rate", "10.01Tbit"}, "want 8 kbit/s to 10 Tbit/s"},
		{[]string{"bulk", "--rate", "Inf"}, "--rate: rate \"Inf\": want bit/s, a number with a unit"},
		{[]string{"bulk", "--host-rate", "NaN"}, "--host-rate"},
		{[]string{"bulk", "--rtt", "20.001s"}, "--rtt: duration \"20.001s\": want 0s to 20s"},
		{[]string{"bulk", "--bytes", "0"}, "--bytes: size \"0\": want 1 byte to 1 TiB"},
		{[]string{"bulk", "--bytes", "1.5"}, "not a whole number of bytes"},
		{[]string{"run", "--mem", "14.8GiB"}, "size \"14.8GiB\": 15891378995.2 bytes is not a whole number of bytes; give 15891378995 or a smaller unit"},
		{[]string{"bulk", "--flows", "256"}, "--flows 256: want 1 to 255"},
		{[]string{"bulk", "--gomaxprocs", "1025"}, "--gomaxprocs: \"1025\": want a whole number from 1 to 1024"},
		{[]string{"bulk", "--qdisc", "up=pie:target=NaN"}, "--qdisc up"},
		{[]string{"run", "--knob", "settle=1e10"}, "knob settle: seconds \"1e10\": want 0 to 3600"},
		{[]string{"run", "--knob", "settle=NaN"}, "knob settle: seconds \"NaN\""},
		{[]string{"run", "--knob", "recv-slots=1048577"}, "knob recv-slots=\"1048577\": want a whole number from 0 to 1048576"},
		{[]string{"run", "--knob", "host-rate=0"}, "knob host-rate: rate \"0\""},
		{[]string{"run", "--knob", "first-heartbeat=NaN"}, "knob first-heartbeat"},
		{[]string{"run", "--gossip", "gossip-factor=NaN"}, "gossip knob gossip-factor: fraction \"NaN\""},
		{[]string{"run", "--gossip", "Dlazy=10001"}, "gossip knob Dlazy=\"10001\": want a whole number from 0 to 10000"},
		{[]string{"run", "--uplink-qdisc", "pie@NaN%;fq_codel"}, "share: fraction \"NaN%\""},
		{[]string{"run", "--payload", "1073741825"}, "--payload: size \"1073741825\": want 1 byte to 1 GiB"},
		{[]string{"run", "--payload", "NaN"}, "--payload"},
		{[]string{"run", "--jobs", "257"}, "--jobs: \"257\": want a whole number from 1 to 256"},
		{[]string{"run", "--setup-procs", "0"}, "--setup-procs"},
		{[]string{"run", "--gogc", "1000001"}, "--gogc 1000001"},
		{[]string{"run", "--memlimit", "63MiB"}, "--memlimit: size \"63MiB\": want 64 MiB to 1 TiB"},
		{[]string{"run", "--mem", "NaN"}, "--mem"},
		{[]string{"run", "--qdisc-file", trailing}, "trailing data"},
		{[]string{"run", "--topology", unknownModel}, "moon"},
		{[]string{"run", "--topology", unknownNet}, "mars"},
		{[]string{"run", "--topology", slowRate}, "up_bps"},
		{[]string{"run", "--seeds", "7,7"}, "--seeds: \"7,7\": seed 7 is given twice"},
		{[]string{"run", "--seeds", "7-9,8"}, "seed 8 is given twice"},
		{[]string{"run", "--knob", "cc=newreno"}, "knob [cc=newreno] applies to --transport tcp"},
		{[]string{"run", "--knob", "tcp=shadow", "--profile", "harness"}, "knob [tcp=shadow] applies to --transport tcp"},
		// 4. Checks a cell made late, now made by the parent.
		{[]string{"run", "--qdisc-file", badNode}, "node \"60\" is not an index in [0, 60)"},
		{[]string{"run", "--qdisc-file", badSpec}, "downlink-qdisc"},
		{[]string{"run", "--qdisc-file", longSpec}, "spec \"pie:xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"...: 2097156 bytes, at most 1024"},
		{[]string{"run", "--profile", strings.Repeat("y", 10000)}, "bytes cut)"},
		{[]string{"run", "--transport", "sctp"}, "transport \"sctp\": valid transports are: quic, tcp"},
		{[]string{"run", "--arm", "bfixed", "--warmup", "payload"}, "a payload warm-up needs an arm that publishes gossip messages"},
		{[]string{"run", "--arm", "atuned", "--gossip", "flood-publish=true"}, "no flood publish"},
		{[]string{"run", "--knob", "first-heartbeat=50ms", "--knob", "router-start=after-dial"}, "needs router-start=before-dial"},
		{[]string{"validate", "--table", "appendix_d_home", "--knob", "uplink-qdisc=nonsense", "--dry-run", "--jobs", "1", "--mem", "1TiB"}, "unknown discipline \"nonsense\""},
		{[]string{"validate", "--study", "pie", "--knob", "uplink-qdisc=nonsense", "--dry-run", "--nodes", "20", "--seeds", "7"}, "unknown discipline \"nonsense\""},
		{[]string{"validate", "--table", "appendix_d_home", "--nodes", "100001"}, "--nodes 100001: want 2 to 100000"},
		{[]string{"validate", "--table", "appendix_d_home", "--seeds", "7,7"}, "seed 7 is given twice"},
		{[]string{"validate", "--table", "appendix_d_home", "--fresh", "--cached-only"}, "together they compare nothing"},
		// 5. Settings that were dropped silently or meant nothing.
		{[]string{"run", "--uplink-qdisc", ""}, "--uplink-qdisc \"\": knob uplink-qdisc: empty queue assignment: give a queues spec such as fq_codel"},
		{[]string{"run", "--downlink-qdisc", " ", "--vary", "sockbuf-max=0,212992"}, "knob downlink-qdisc: empty queue assignment"},
		{[]string{"run", "--knob", "uplink-qdisc="}, "--knob: knob uplink-qdisc: empty queue assignment"},
		{[]string{"validate", "--study", "pie", "--knob", "downlink-qdisc=", "--dry-run", "--nodes", "20", "--seeds", "7"}, "--knob: knob downlink-qdisc: empty queue assignment"},
		{[]string{"slurm", "--dir", slurmDir, "--shards", "1", "--", "run", "--uplink-qdisc", ""}, "knob uplink-qdisc: empty queue assignment"},
		{[]string{"run", "--qdisc-file", nullFile}, "--qdisc-file " + nullFile + ": queue assignment file: assigns no queue (null, {} or null directions)"},
		{[]string{"run", "--qdisc-file", emptyFile}, "queue assignment file: assigns no queue"},
		{[]string{"run", "--qdisc-file", nullDirs}, "queue assignment file: assigns no queue"},
		{[]string{"run", "--qdisc-file", emptyDown}, "queue assignment file: downlink assigns no queue: give its \"default\", its \"nodes\", or leave downlink out"},
		{[]string{"run", "--knob", "sndbuf-max=8000000", "--knob", "sockbuf-max=4000000"}, "--knob: knob sndbuf-max=8000000 is above sockbuf-max=4000000, which caps send buffer requests first: give sndbuf-max at most 4000000, or sockbuf-max=0 (no cap)"},
		{[]string{"run", "--profile", "kernel", "--knob", "sndbuf-max=300000"}, "knob sndbuf-max=300000 is above sockbuf-max=212992"},
		{[]string{"run", "--profile", "kernel", "--vary", "sndbuf-max=32768,300000"}, "knob sndbuf-max=300000 is above sockbuf-max=212992"},
		{[]string{"validate", "--study", "pie", "--knob", "sockbuf-max=200000", "--knob", "sndbuf-max=300000", "--dry-run", "--nodes", "20", "--seeds", "7"}, "knob sndbuf-max=300000 is above sockbuf-max=200000"},
		{[]string{"slurm", "--dir", slurmDir, "--shards", "1", "--", "run", "--profile", "kernel", "--knob", "sndbuf-max=300000"}, "knob sndbuf-max=300000 is above sockbuf-max=212992"},
		{[]string{"version", "extra"}, "uplink: version: unexpected argument \"extra\": version takes none"},
		{[]string{"--version", "--verbose"}, "version: unexpected argument \"--verbose\""},
		// 6. Messages that name the flag.
		{[]string{"run", "--rate", "NaN"}, "unknown flag: --rate"},
		{[]string{"bulk", "--rate", "NaN"}, "--rate: rate \"NaN\": want bit/s, a number with a unit"},
	}
	checkUsageErrors(t, cases)
	// One line of error, and no cell started.
	for _, c := range cases {
		var out, errb bytes.Buffer
		run(c.args, &out, &errb)
		lines := 0
		for _, l := range strings.Split(errb.String(), "\n") {
			if strings.HasPrefix(l, "uplink: ") {
				lines++
			}
		}
		if lines != 1 || strings.Contains(errb.String(), "hosts in") {
			t.Errorf("%v: want one error line and no cell started:\n%s", c.args, errb.String())
		}
	}
}

// TestVersionArgs: version prints the version, and its usage with
// --help; any other argument is refused (TestBadInput).
func TestVersionArgs(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var out, errb bytes.Buffer
		require.Equal(t, 0, run(args, &out, &errb), errb.String())
		require.Equal(t, "uplink "+buildVersion()+"\n", out.String())
	}
	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"version", "--help"}, &out, &errb), errb.String())
	require.Contains(t, out.String(), "Usage:\n  uplink version\n")
}

// TestHelpArgs: uplink help COMMAND is COMMAND's --help; any other
// argument is refused, as every command refuses one it does not take.
func TestHelpArgs(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"help", "version"}, &out, &errb), errb.String())
	require.Contains(t, out.String(), "Usage:\n  uplink version\n")
	for _, args := range [][]string{{"help", "extra"}, {"--help", "run"}, {"help", "version", "more"}, {"help", "help"}} {
		out.Reset()
		errb.Reset()
		require.Equal(t, 2, run(args, &out, &errb), "%v", args)
		require.NotEmpty(t, errb.String(), "%v", args)
	}
}

func TestParseSeeds(t *testing.T) {
	got, err := parseSeeds("18446744073709551614-18446744073709551615")
	require.NoError(t, err)
	require.Equal(t, []uint64{1<<64 - 2, 1<<64 - 1}, got)
	got, err = parseSeeds("7-9, 11")
	require.NoError(t, err)
	require.Equal(t, []uint64{7, 8, 9, 11}, got)
	got, err = parseSeeds("0-9999")
	require.NoError(t, err)
	require.Len(t, got, maxSeeds)
	for _, s := range []string{"0-10000", "9-3", "7,,8", "-1", "x", "7,7", "1-3,2"} {
		_, err := parseSeeds(s)
		require.Error(t, err, s)
	}
}

// FuzzParseSeeds: no input makes parseSeeds panic or hang, and what it
// accepts is at most maxSeeds distinct seeds.
func FuzzParseSeeds(f *testing.F) {
	for _, s := range []string{"7", "7-16", "7,9,11", "18446744073709551615", "0-18446744073709551615", "7,7"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseSeeds(s)
		if err != nil {
			return
		}
		if len(got) == 0 || len(got) > maxSeeds {
			t.Fatalf("parseSeeds(%q): %d seeds", s, len(got))
		}
		seen := map[uint64]bool{}
		for _, x := range got {
			if seen[x] {
				t.Fatalf("parseSeeds(%q): seed %d twice", s, x)
			}
			seen[x] = true
		}
	})
}

// FuzzReadRecords: no records file makes readRecords panic or hang; what
// it accepts is keyed by each record's own non-empty key.
func FuzzReadRecords(f *testing.F) {
	for _, s := range []string{
		`{"key":"a1","seed":7,"version":"v"}` + "\n",
		`{"key":"a1","seed":7,"version":"v"}` + "\n" + `{"key":"b2","se`,
		"\xef\xbb\xbf{\"key\":\"a1\"}\n",
		"\n\n{\"key\":\"\"}\n",
		`{"key":"a1"} {"key":"b2"}`,
		`[1,2,3]`,
	} {
		f.Add(s)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, s string) {
		path := filepath.Join(dir, "records.jsonl")
		require.NoError(t, os.WriteFile(path, []byte(s), 0o644))
		var errb bytes.Buffer
		recs, err := readRecords(path, "--cache", "v", true, &errb)
		if err != nil {
			return
		}
		for k, r := range recs {
			if k == "" || r == nil || r.Key != k {
				t.Fatalf("%q: record under key %q: %+v", s, k, r)
			}
		}
	})
}
