package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uplinksim/uplink/netmodel"
)

// TestExportTopology: --export-topology writes a draw that reads back,
// replacing a file already there; where it cannot be written the run
// fails with exit 1 naming the flag and leaves nothing.
func TestExportTopology(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "topo.json")
	require.NoError(t, os.WriteFile(path, bytes.Repeat([]byte("old "), 10000), 0o644))
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"run", "--nodes", "6", "--degree", "2", "--export-topology", path}, &stdout, &stderr), stderr.String())
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	d, err := netmodel.ReadDraw(f)
	require.NoError(t, err)
	require.NotNil(t, d)
	requireNoTemp(t, dir)

	bad := filepath.Join(notADir(t), "topo.json")
	stderr.Reset()
	require.Equal(t, 1, run([]string{"run", "--nodes", "6", "--degree", "2", "--export-topology", bad}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "--export-topology: cannot create "+bad)
}
