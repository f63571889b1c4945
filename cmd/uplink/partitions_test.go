package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/protocols/cell"
)

// TestPartitionsFlag: --partitions reaches every cell of run and
// validate and their keys (1 leaves the key as it was); a split cell runs
// in its cell process and its record says how it ran.
func TestPartitionsFlag(t *testing.T) {
	one := planCells(t, "run", "--nodes", "20", "--degree", "6", "--profile", "harness")
	two := planCells(t, "run", "--nodes", "20", "--degree", "6", "--profile", "harness", "--partitions", "2")
	same := planCells(t, "run", "--nodes", "20", "--degree", "6", "--profile", "harness", "--partitions", "1")
	require.Len(t, two, 1)
	require.Equal(t, 2, two[0].Partitions)
	require.NotEqual(t, one[0].Key(), two[0].Key())
	require.Equal(t, one[0].Key(), same[0].Key())
	for _, c := range planCells(t, "validate", "--table", "appendix_d_home", "--partitions", "3") {
		require.Equal(t, 3, c.Partitions)
	}
	if testing.Short() {
		t.Skip("runs a cell")
	}
	out := filepath.Join(t.TempDir(), "records.jsonl")
	var stdout, stderr bytes.Buffer
	code := run([]string{"run", "--nodes", "12", "--degree", "4", "--payload", "64KiB", "--profile", "harness", "--seeds", "7",
		"--partitions", "2", "--out", out}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	require.Contains(t, stderr.String(), "2 partitions of 12 nodes, windows of")
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	var rec cell.Record
	require.NoError(t, json.Unmarshal(data, &rec))
	require.Equal(t, 2, rec.Partitions)
	require.Positive(t, rec.PartitionWindowMS)
	require.Equal(t, 11, rec.Completed)
}

// TestSummarizeSplitAndRepeats: summarize keeps a split cell's records and
// a repeat's apart from one bubble's first run: the committed fidelity
// study of partitions reads as three groups of ten seeds.
func TestSummarizeSplitAndRepeats(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"summarize", filepath.Join("..", "..", "results", "partitions-fidelity-100", "records.jsonl")}, &out, &errb), errb.String())
	medians := out.String()[strings.Index(out.String(), "medians across seeds"):]
	for _, group := range []string{"harness  ", "harness r1", "harness K=2"} {
		require.Regexp(t, `wholend +`+regexp.QuoteMeta(strings.TrimSpace(group))+` +10 `, medians)
	}
}
