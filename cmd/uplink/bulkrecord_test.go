package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// runBulkRecord runs bulk in-process with --out and returns the record
// read back and what bulk printed.
func runBulkRecord(t *testing.T, args ...string) (BulkRecord, string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "bulk.json")
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run(append([]string{"bulk", "--out", path}, args...), &stdout, &stderr), stderr.String())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var rec BulkRecord
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&rec))
	requireNoTemp(t, dir)
	return rec, stdout.String()
}

// requireFlowsAddUp: the flows' bytes, goodputs and counters add up to the
// run's, and the run's elapsed time is the longest flow's.
func requireFlowsAddUp(t *testing.T, rec BulkRecord) {
	t.Helper()
	require.Len(t, rec.Flows, rec.Config.Flows)
	var b int64
	var g, longest float64
	var sent, lost, segs, retx, fr, rtos uint64
	add := func(sum *uint64, v *uint64) {
		if v != nil {
			*sum += *v
		}
	}
	for _, f := range rec.Flows {
		b += f.Bytes
		g += f.GoodputBps
		longest = max(longest, f.ElapsedS)
		add(&sent, f.PacketsSent)
		add(&lost, f.PacketsLost)
		add(&segs, f.SegmentsSent)
		add(&retx, f.SegmentsRetrans)
		add(&fr, f.FastRecoveries)
		add(&rtos, f.RTOs)
	}
	require.Equal(t, rec.BytesReceived, b)
	require.InDelta(t, rec.GoodputBps, g, 1e-6*rec.GoodputBps)
	require.Equal(t, rec.ElapsedS, longest)
	get := func(v *uint64) uint64 {
		if v == nil {
			return 0
		}
		return *v
	}
	require.Equal(t, get(rec.PacketsSent), sent)
	require.Equal(t, get(rec.PacketsLost), lost)
	require.Equal(t, get(rec.SegmentsSent), segs)
	require.Equal(t, get(rec.SegmentsRetrans), retx)
	require.Equal(t, get(rec.FastRecoveries), fr)
	require.Equal(t, get(rec.RTOs), rtos)
}

// requireHistogramsAddUp: every queue's histogram counts the packets it
// dequeued, in ordered, non-overlapping buckets.
func requireHistogramsAddUp(t *testing.T, rec BulkRecord) {
	t.Helper()
	require.NotEmpty(t, rec.Queues)
	for _, q := range rec.Queues {
		var n uint64
		for i, b := range q.Histogram {
			require.Less(t, b.LowerNs, b.UpperNs)
			if i > 0 {
				require.LessOrEqual(t, q.Histogram[i-1].UpperNs, b.LowerNs)
			}
			n += b.Count
		}
		require.Equal(t, q.Dequeued, n, q.Name)
		require.Equal(t, q.DelayPackets, n, q.Name)
	}
}

// TestBulkRecord: --out writes the run's record: the configuration, the
// bytes and hash bulk prints, queue-delay histograms that count the
// dequeued packets, and flows that add up to the totals.
func TestBulkRecord(t *testing.T) {
	rec, out := runBulkRecord(t, "--bytes", "1MiB", "--rate", "50Mbit", "--rtt", "20ms")
	require.Equal(t, 1, rec.Schema)
	require.Equal(t, buildVersion(), rec.Version)
	require.Equal(t, BulkConfigRecord{
		Transport: "quic", Backend: "uplink", RateBps: 50e6, RTTMs: 20, Bytes: 1 << 20,
		Flows: 1, Seed: 1, UpQdisc: "pfifo:limit=1000", DownQdisc: "fifo",
	}, rec.Config)
	require.Equal(t, int64(1<<20), rec.BytesReceived)
	m := regexp.MustCompile(`(?m)^sha256 +([0-9a-f]{64})$`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	require.Equal(t, m[1], rec.SHA256)
	require.NotNil(t, rec.PacketsSent)
	require.Nil(t, rec.SegmentsSent)
	require.Len(t, rec.Queues, 2)
	require.Equal(t, "sender uplink", rec.Queues[0].Name)
	require.NotZero(t, rec.Queues[0].Dequeued)
	requireHistogramsAddUp(t, rec)
	requireFlowsAddUp(t, rec)
}

// TestBulkRecordTCPFlows: a TCP run's record holds the TCP model and
// per-flow TCP counters that add up to the totals.
func TestBulkRecordTCPFlows(t *testing.T) {
	rec, _ := runBulkRecord(t, "--transport", "tcp", "--tcp", "shadow", "--flows", "2",
		"--bytes", "256KiB", "--rate", "50Mbit", "--rtt", "20ms")
	require.NotNil(t, rec.Config.TCP)
	require.Equal(t, "shadow", rec.Config.TCP.Model)
	require.Equal(t, int64(2<<18), rec.BytesReceived)
	require.Nil(t, rec.PacketsSent)
	require.NotNil(t, rec.SegmentsSent)
	require.NotZero(t, *rec.SegmentsSent)
	for _, f := range rec.Flows {
		require.Equal(t, int64(256<<10), f.Bytes)
		require.NotNil(t, f.SegmentsSent)
	}
	requireHistogramsAddUp(t, rec)
	requireFlowsAddUp(t, rec)
}

// TestBulkRecordUnwritable: --out where the file cannot be created fails
// the run with exit 1 naming the flag, and leaves nothing.
func TestBulkRecordUnwritable(t *testing.T) {
	bad := filepath.Join(notADir(t), "bulk.json")
	var stdout, stderr bytes.Buffer
	require.Equal(t, 1, run([]string{"bulk", "--bytes", "64KiB", "--rate", "50Mbit", "--rtt", "20ms", "--out", bad}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "--out: cannot create "+bad)
	_, err := os.Stat(bad)
	require.Error(t, err)
	parent := filepath.Dir(filepath.Dir(filepath.Dir(bad)))
	requireNoTemp(t, parent)
	entries, err := os.ReadDir(parent)
	require.NoError(t, err)
	require.Len(t, entries, 1) // the regular file alone
	data, err := os.ReadFile(filepath.Join(parent, "file"))
	require.NoError(t, err)
	require.Equal(t, "x", string(data))
}
