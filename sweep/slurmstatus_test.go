package sweep

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Job records as Slurm 22.05 writes them (abridged): scontrol -o show job
// of an array with task 0 done, 1 failed and 2-3 pending, then a later
// record of task 3; and a jobcomp/filetxt line.
const (
	scontrolArray = `JobId=1 ArrayJobId=1 ArrayTaskId=2-3%2 ArrayTaskThrottle=2 JobName=t.sbatch UserId=root(0) JobState=PENDING Reason=JobArrayTaskLimit Dependency=(null) ExitCode=0:0 WorkDir=/
JobId=4 ArrayJobId=1 ArrayTaskId=1 ArrayTaskThrottle=2 JobName=t.sbatch UserId=root(0) JobState=FAILED Reason=NonZeroExitCode Dependency=(null) ExitCode=3:0 WorkDir=/
JobId=3 ArrayJobId=1 ArrayTaskId=0 ArrayTaskThrottle=2 JobName=t.sbatch UserId=root(0) JobState=COMPLETED Reason=None Dependency=(null) ExitCode=0:0 WorkDir=/
JobId=2 JobName=wrap UserId=root(0) JobState=CANCELLED Reason=DependencyNeverSatisfied Dependency=afterok:1_*(failed) ExitCode=0:0
`
	jobcomp = `JobId=7 UserId=root(0) GroupId=root(0) Name=t.sbatch JobState=TIMEOUT Partition=debug TimeLimit=1 NodeList=vm ArrayJobId=1 ArrayTaskId=3 DerivedExitCode=0:0 ExitCode=0:15
JobId=9 UserId=root(0) GroupId=root(0) Name=t.sbatch JobState=COMPLETED Partition=debug ArrayJobId=11 ArrayTaskId=3 DerivedExitCode=0:0 ExitCode=0:0
`
)

func TestArrayTasks(t *testing.T) {
	got := ArrayTasks(scontrolArray+jobcomp, "1")
	require.Equal(t, map[int]Task{
		0: {State: "COMPLETED"},
		1: {State: "FAILED", Reason: "NonZeroExitCode", Exit: 3},
		2: {State: "PENDING", Reason: "JobArrayTaskLimit"},
		3: {State: "TIMEOUT", Signal: 15},
	}, got)
	require.True(t, got[2].Active())
	require.False(t, got[1].Active())
	require.Equal(t, "FAILED, exit code 3:0 (NonZeroExitCode)", got[1].String())
	require.Empty(t, ArrayTasks(scontrolArray, "2"))

	m, ok := JobTask(scontrolArray, "2")
	require.True(t, ok)
	require.Equal(t, Task{State: "CANCELLED", Reason: "DependencyNeverSatisfied"}, m)
	_, ok = JobTask(scontrolArray, "5")
	require.False(t, ok)

	for in, want := range map[string][]int{
		"3": {3}, "0-3%2": {0, 1, 2, 3}, "1,3-4": {1, 3, 4}, "0-6:3": {0, 3, 6}, "": nil, "x": nil, "4-2": nil,
	} {
		require.Equal(t, want, taskIDs(in), in)
	}
}

// TestParseTaskLog: a task's exit status, Slurm's note of a
// cancellation, and the error uplink printed before a non-zero exit with
// the first line of each failed cell, read past the cells' last lines
// (whatever they say), warnings and notes.
func TestParseTaskLog(t *testing.T) {
	require.Equal(t, TaskLog{}, ParseTaskLog(""))
	log := "[wholend harness seed 7] cell seed 7: 12 hosts in 0.1 s\n" +
		"uplink: --out /d/shard-1.jsonl: not a regular file\n" +
		TaskExitNote + "2\n"
	require.Equal(t, TaskLog{Ended: true, Exit: 2, LastError: "uplink: --out /d/shard-1.jsonl: not a regular file"}, ParseTaskLog(log))
	cancelled := "slurmstepd: error: *** JOB 12 ON vm CANCELLED AT 2026-12-01T13:57:21 DUE TO TIME LIMIT ***\n"
	require.Equal(t, TaskLog{Cancelled: strings.TrimSpace(cancelled)}, ParseTaskLog(cancelled))

	// Two cells failed, one killed: run's error lists each with the last
	// lines of its stderr, which may look like uplink's own lines.
	killed := "uplink: /d/shard-1.jsonl line 3: a record cut short (a writer stopped mid-line), skipped\n" +
		"cells: 2 to run, 1 at a time; ETA 3s (estimated from the cells' sizes)\n" +
		"uplink: warning: cells run in this machine's network namespace, so go-libp2p may list its interfaces (x)\n" +
		"[wholend harness seed 7] cell seed 7: 12 hosts in 0.1 s\n" +
		"uplink: run: 2 of 2 cells failed:\n" +
		"  wholend harness seed 7: signal: killed; last lines:\n" +
		"cell seed 7: 12 hosts in 0.1 s\n" +
		"uplink: cell: a line of the cell's own\n" +
		"  wholend harness quic seed 8: exit status 1; last lines:\n" +
		"  an indented line of the cell's\n" +
		"uplink: cell: boom\n" +
		TaskExitNote + "1\n"
	require.Equal(t, TaskLog{Ended: true, Exit: 1, LastError: "uplink: run: 2 of 2 cells failed:",
		Failures: []string{"wholend harness seed 7: signal: killed", "wholend harness quic seed 8: exit status 1"}}, ParseTaskLog(killed))

	// A task that succeeds has no error, whatever notes it printed; one
	// killed before it could note its exit has none either.
	ok := "uplink: /d/shard-1.jsonl line 3: a record cut short (a writer stopped mid-line), skipped\n" + TaskExitNote + "0\n"
	require.Equal(t, TaskLog{Ended: true}, ParseTaskLog(ok))
	require.Equal(t, TaskLog{}, ParseTaskLog("uplink: run: 1 of 1 cells failed:\n  wholend harness seed 7: signal: killed\n"))
}

// TestNewestShardLog: a shard's log is that of the array job named,
// else the one of the highest job id, else none; other files are no log.
func TestNewestShardLog(t *testing.T) {
	dir := t.TempDir()
	p := &Plan{Dir: dir, Shards: 2}
	require.Equal(t, "", p.NewestShardLog(1, ""))
	for _, name := range []string{"shard-1.9.err", "shard-1.10.err", "shard-1.err", "shard-1.x.err", "shard-0.11.err", "shard-1.12.out", "shard-11.13.err"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), nil, 0o644))
	}
	require.Equal(t, filepath.Join(dir, "shard-1.10.err"), p.NewestShardLog(1, ""))
	require.Equal(t, filepath.Join(dir, "shard-1.9.err"), p.NewestShardLog(1, "9"))
	require.Equal(t, filepath.Join(dir, "shard-1.14.err"), p.NewestShardLog(1, "14"), "the array's own, not yet written")
	require.Equal(t, filepath.Join(dir, "shard-0.11.err"), p.NewestShardLog(0, ""))
}

// TestShardState: a complete file is done whatever else is known; Slurm's
// word on the task comes next, then the task's stderr, then the file
// alone.
func TestShardState(t *testing.T) {
	failed := &Task{State: "FAILED", Exit: 2}
	for _, c := range []struct {
		name string
		e    ShardEvidence
		want ShardState
		why  string
	}{
		{"complete", ShardEvidence{Want: 2, Have: 2, FileExists: true, Task: failed}, ShardDone, "2 of 2 cells"},
		{"running", ShardEvidence{Want: 2, Have: 1, FileExists: true, Task: &Task{State: "RUNNING"}}, ShardRunning, "1 of 2 cells so far"},
		{"pending", ShardEvidence{Want: 2, Task: &Task{State: "PENDING", Reason: "Dependency"}}, ShardMissing, "task PENDING (Dependency)"},
		{"pending over an old failure", ShardEvidence{Want: 2, Task: &Task{State: "PENDING"}, Log: TaskLog{Ended: true, Exit: 1}}, ShardMissing, "task PENDING"},
		{"task failed", ShardEvidence{Want: 2, Task: failed, Log: TaskLog{LastError: "uplink: boom"}}, ShardFailed, "task FAILED, exit code 2:0; uplink: boom"},
		{"completed short", ShardEvidence{Want: 2, Have: 1, FileExists: true, Task: &Task{State: "COMPLETED"}}, ShardFailed, "completed without the rest"},
		{"exit noted", ShardEvidence{Want: 2, Log: TaskLog{Ended: true, Exit: 2}}, ShardFailed, "exited with status 2"},
		{"cancelled", ShardEvidence{Want: 2, Log: TaskLog{Cancelled: "*** JOB 3 ON vm CANCELLED AT x ***"}}, ShardFailed, "CANCELLED"},
		{"partial file, nothing running", ShardEvidence{Want: 2, Have: 1, FileExists: true}, ShardFailed, "1 of 2 cells; no task of it is running"},
		{"unreadable", ShardEvidence{Want: 2, FileExists: true, FileErr: errors.New("not a regular file")}, ShardFailed, "records file unreadable: not a regular file"},
		{"not started", ShardEvidence{Want: 2}, ShardMissing, "0 of 2 cells; not started"},
		{"not queued", ShardEvidence{Want: 2, Asked: true}, ShardMissing, "not started, and Slurm holds no task of it pending or running"},
	} {
		st, why := c.e.State()
		require.Equal(t, c.want, st, c.name)
		require.Contains(t, why, c.why, c.name)
	}
}

func TestRecordKeys(t *testing.T) {
	dir := t.TempDir()
	keys, exists, err := RecordKeys(filepath.Join(dir, "none.jsonl"))
	require.NoError(t, err)
	require.False(t, exists)
	require.Empty(t, keys)

	_, exists, err = RecordKeys(dir)
	require.True(t, exists)
	require.ErrorContains(t, err, "not a regular file")

	path := filepath.Join(dir, "shard-0.jsonl")
	rec := `{"key":"k1","arm":"wholend","profile":"harness","version":"v1","seed":7,"n":10,"total":9,"completed":9,"payload_bytes":1024}`
	require.NoError(t, os.WriteFile(path, []byte(rec+"\n"+`{"key":"k2","arm":"wholend"}`+"\n"+`{"key":"k3",`), 0o644))
	keys, exists, err = RecordKeys(path)
	require.NoError(t, err)
	require.True(t, exists)
	require.Equal(t, map[string]bool{"k1": true}, keys, "a record that fails its check, or is cut short, does not count")
}

// A task whose cell was killed: its error's first line and each failed
// cell's, without the lines the cell's stderr left.
func ExampleParseTaskLog() {
	l := ParseTaskLog("uplink: run: 1 of 2 cells failed:\n" +
		"  wholend harness seed 9: signal: killed; last lines:\n" +
		"cell seed 9: 12 hosts in 0.1 s\n" +
		TaskExitNote + "1\n")
	fmt.Println(l.Exit, l.LastError)
	fmt.Println(l.Failures)
	// Output:
	// 1 uplink: run: 1 of 2 cells failed:
	// [wholend harness seed 9: signal: killed]
}
