package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/protocols/cell"
)

// TestResultsPages: a results folder's page is regenerated from its
// records alone; --check passes while the page matches them and fails,
// naming the page, once a record changes.
func TestResultsPages(t *testing.T) {
	root := t.TempDir()
	folder := filepath.Join(root, "whole-shadow")
	require.NoError(t, os.Mkdir(folder, 0o755))
	command := "validate --table appendix_d_home --arm wholend --backend shadow --seeds 7-8 --nodes 20"
	require.NoError(t, os.WriteFile(filepath.Join(folder, "command"), []byte("# the whole message, Shadow's columns\nuplink "+command+"\n"), 0o644))

	// The plan's cells, by the command's own --list-cells.
	var out, errb bytes.Buffer
	require.Equal(t, 0, run(append(strings.Fields(command), "--list-cells", "--cache", filepath.Join(root, "none.jsonl")), &out, &errb), errb.String())
	var recs []string
	for _, l := range strings.Split(out.String(), "\n")[1:] {
		f := strings.Fields(l)
		if len(f) != 10 {
			continue
		}
		p50 := 3.0 + 0.1*float64(len(recs))
		r := cell.Record{Key: f[0], Arm: "wholend", Transport: f[2], Profile: f[3], Version: "test", N: 20, Total: 19, Completed: 19, PayloadBytes: 1 << 20, P50S: &p50, P99S: &p50}
		b, err := json.Marshal(r)
		require.NoError(t, err)
		recs = append(recs, string(b))
	}
	require.Len(t, recs, 4, "2 columns × 2 seeds:\n%s", out.String())
	records := filepath.Join(folder, "records.jsonl")
	require.NoError(t, os.WriteFile(records, []byte(strings.Join(recs, "\n")+"\n"), 0o644))

	// A folder set up before its run is skipped, and fails a check.
	pending := filepath.Join(root, "pending")
	require.NoError(t, os.Mkdir(pending, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(pending, "command"), []byte("uplink "+command+"\n"), 0o644))
	out.Reset()
	errb.Reset()
	require.Equal(t, 0, run([]string{"results", "--dir", root}, &out, &errb), errb.String())
	require.Contains(t, errb.String(), "pending: no records.jsonl yet: skipped")
	require.Equal(t, 1, run([]string{"results", "--dir", root, "--check"}, &out, &errb))
	require.Contains(t, errb.String(), "pending: no records.jsonl (a results folder holds the records its command compares)")
	require.NoError(t, os.RemoveAll(pending))
	page, err := os.ReadFile(filepath.Join(folder, "report.md"))
	require.NoError(t, err)
	require.Contains(t, string(page), "| wholend | shadow quic fifo | p50 | 3.22 s |")
	require.Contains(t, string(page), "2/2")

	errb.Reset()
	require.Equal(t, 0, run([]string{"results", "--dir", root, "--check"}, &out, &errb), errb.String())

	// Pages and figures are readable by all, as any file written anew.
	for _, name := range []string{"report.md", "bars.png"} {
		fi, err := os.Stat(filepath.Join(folder, name))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o644), fi.Mode().Perm(), name)
	}

	// A figure that is not what the records give fails the check too.
	bars := filepath.Join(folder, "bars.png")
	png, err := os.ReadFile(bars)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bars, append(png[:len(png):len(png)], 0), 0o644))
	errb.Reset()
	require.Equal(t, 1, run([]string{"results", "--dir", root, "--check"}, &out, &errb))
	require.Contains(t, errb.String(), fmt.Sprintf("1 pages differ from what their records give (run uplink results to regenerate them): %s", bars))
	require.NoError(t, os.WriteFile(bars, png, 0o644))

	changed := strings.Replace(strings.Join(recs, "\n"), `"p50_s":3`, `"p50_s":2`, 1)
	require.NoError(t, os.WriteFile(records, []byte(changed+"\n"), 0o644))
	errb.Reset()
	require.Equal(t, 1, run([]string{"results", "--dir", root, "--check"}, &out, &errb))
	require.Contains(t, errb.String(), fmt.Sprintf("2 pages differ from what their records give (run uplink results to regenerate them): %s, %s", filepath.Join(folder, "bars.png"), filepath.Join(folder, "report.md")))

	checkUsageErrors(t, []usageCase{
		{[]string{"results", "--dir", filepath.Join(root, "nope")}, "results: --dir"},
		{[]string{"results", "--dir", t.TempDir()}, "no results folder"},
	})
}

// TestCommittedResultsCurrent: every page committed under results/ is what
// its committed records give.
func TestCommittedResultsCurrent(t *testing.T) {
	dir := filepath.Join("..", "..", "results")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Skipf("no results folder: %v", err)
	}
	n := 0
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(dir, e.Name(), "command")); err == nil {
			n++
		}
	}
	if n == 0 {
		t.Skip("no results folder with records yet")
	}
	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"results", "--dir", dir, "--check"}, &out, &errb), errb.String())
}

// TestReadmeSize: the README is a user's guide of at most 15 000 bytes;
// models, validation and results live in docs/ and results/. uplink
// results rewrites its resources block, so a new kind of cell can push it
// over.
func TestReadmeSize(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	require.LessOrEqual(t, len(b), 15000, "README.md is %d bytes; move detail to docs/", len(b))
}

// TestResultsResourceTable: uplink results measures the records of every
// folder into results/resources.json and resources.md, and writes the
// brief table into the README above between its markers; --check fails,
// naming the README, when that block is stale, and a README with one
// marker is an error.
func TestResultsResourceTable(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "results")
	folder := filepath.Join(root, "whole-shadow")
	require.NoError(t, os.MkdirAll(folder, 0o755))
	command := "validate --table appendix_d_home --arm wholend --backend shadow --transport quic --seeds 7 --nodes 20"
	require.NoError(t, os.WriteFile(filepath.Join(folder, "command"), []byte("uplink "+command+"\n"), 0o644))
	var recs []string
	for i, rss := range []int64{2 << 20, 3 << 20, 1 << 20} {
		p50 := 3.0
		r := cell.Record{Key: fmt.Sprintf("k%d", i), Arm: "wholend", ArmName: "wholend", Profile: "shadow", Transport: "quic",
			Wire: cell.WireRecord{Encoding: "snappy"}, Version: "test", N: 20, Degree: 19, Total: 19, Completed: 19,
			PayloadBytes: 1 << 20, P50S: &p50, P99S: &p50, MaxRSSKB: rss, WallS: 10 * float64(i+1)}
		b, err := json.Marshal(r)
		require.NoError(t, err)
		recs = append(recs, string(b))
	}
	require.NoError(t, os.WriteFile(filepath.Join(folder, "records.jsonl"), []byte(strings.Join(recs, "\n")+"\n"), 0o644))
	readme := filepath.Join(base, "README.md")
	require.NoError(t, os.WriteFile(readme, []byte("# x\n\n"+resourcesBegin+"old\n"+resourcesEnd+"\nafter\n"), 0o644))

	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"results", "--dir", root}, &out, &errb), errb.String())
	got, err := os.ReadFile(readme)
	require.NoError(t, err)
	require.Equal(t, "# x\n\n"+resourcesBegin+
		"| nodes, degree | arms | shadow QUIC |\n| --- | --- | ---: |\n| 20, 19 | whole message | 3.0 GiB, 20 s |\n"+
		resourcesEnd+"\nafter\n", string(got))
	js, err := os.ReadFile(filepath.Join(root, "resources.json"))
	require.NoError(t, err)
	require.Contains(t, string(js), `"cells": 3`)
	md, err := os.ReadFile(filepath.Join(root, "resources.md"))
	require.NoError(t, err)
	require.Contains(t, string(md), "| 20 | 19 | 1 MiB | wholend | quic | shadow | uplink | snappy | 1 | 3 | 2.0, 3.0 | 20, 30 | whole-shadow |")
	require.Equal(t, 0, run([]string{"results", "--dir", root, "--check"}, &out, &errb), errb.String())

	require.NoError(t, os.WriteFile(readme, []byte(strings.Replace(string(got), "3.0 GiB", "9.0 GiB", 1)), 0o644))
	errb.Reset()
	require.Equal(t, 1, run([]string{"results", "--dir", root, "--check"}, &out, &errb))
	require.Contains(t, errb.String(), readme)

	require.NoError(t, os.WriteFile(readme, []byte(resourcesBegin+"no end\n"), 0o644))
	errb.Reset()
	require.Equal(t, 1, run([]string{"results", "--dir", root}, &out, &errb))
	require.Contains(t, errb.String(), "markers are missing or out of order")
}
