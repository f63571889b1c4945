package main

import (
	"bytes"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uplinksim/uplink/protocols/cell"
)

// TestRecordWriteError: a record that cannot be written fails the run
// with exit 1 naming the flag that gave the file: --out for run, --cache
// for validate.
func TestRecordWriteError(t *testing.T) {
	if testing.Short() {
		t.Skip("runs cells")
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"run", "--nodes", "6", "--degree", "2", "--payload", "64KiB", "--profile", "harness", "--out", "/dev/full"}, &stdout, &stderr)
	require.Equal(t, 1, code, stderr.String())
	require.Contains(t, stderr.String(), "--out /dev/full: writing the record of wholend harness seed 7: no space left on device")

	err := runMissing([]cell.Config{tinyCell(t)}, map[string]*cell.Record{}, 1, runOpts{jobs: 1, out: "/dev/full", outFlag: "--cache", env: os.Environ()}, &bytes.Buffer{})
	require.ErrorContains(t, err, "--cache /dev/full: writing the record of")
	require.NotContains(t, err.Error(), "--out")
}
