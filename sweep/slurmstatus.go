package sweep

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/uplinksim/uplink/protocols/cell"
)

// A sweep's status comes from each shard's records file, what Slurm says
// of its task (scontrol -o show job, or the jobcomp/filetxt log once the
// controller has forgotten the job) and the last lines of its stderr.

// JobFields reads one of Slurm's job records as `scontrol -o show job`
// and jobcomp/filetxt write them: KEY=VALUE fields separated by spaces.
func JobFields(line string) map[string]string {
	f := map[string]string{}
	for _, kv := range strings.Fields(line) {
		if k, v, ok := strings.Cut(kv, "="); ok {
			f[k] = v
		}
	}
	return f
}

// Task is what Slurm says of one job or array task.
type Task struct {
	State  string // JobState: PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, ...
	Reason string // Reason, where Slurm gives one ("None" left out)
	Exit   int    // ExitCode's exit status
	Signal int    // ExitCode's signal
}

func (t Task) String() string {
	s := t.State
	if t.Exit != 0 || t.Signal != 0 {
		s += fmt.Sprintf(", exit code %d:%d", t.Exit, t.Signal)
	}
	if t.Reason != "" {
		s += " (" + t.Reason + ")"
	}
	return s
}

// The job states of a task waiting to run, and of one running.
var (
	waitingStates = []string{"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "SUSPENDED", "RESV_DEL_HOLD"}
	runningStates = []string{"RUNNING", "CONFIGURING", "COMPLETING", "RESIZING", "SIGNALING", "STAGE_OUT"}
)

// Active tells a task waiting to run or running.
func (t Task) Active() bool {
	return slices.Contains(waitingStates, t.State) || slices.Contains(runningStates, t.State)
}

func taskOf(f map[string]string) Task {
	t := Task{State: f["JobState"], Reason: f["Reason"]}
	if t.Reason == "None" {
		t.Reason = ""
	}
	e, s, _ := strings.Cut(f["ExitCode"], ":")
	t.Exit, _ = strconv.Atoi(e)
	t.Signal, _ = strconv.Atoi(s)
	return t
}

// ArrayTasks reads job records (one a line) and returns the tasks of job
// array arrayID by index: a record of tasks not yet started
// (ArrayTaskId=1-5%2) stands for each of them; a later record of a task
// replaces an earlier one.
func ArrayTasks(records, arrayID string) map[int]Task {
	out := map[int]Task{}
	for _, line := range strings.Split(records, "\n") {
		f := JobFields(line)
		if f["ArrayJobId"] != arrayID || f["JobState"] == "" {
			continue
		}
		for _, i := range taskIDs(f["ArrayTaskId"]) {
			out[i] = taskOf(f)
		}
	}
	return out
}

// JobTask reads job records and returns the last of job id, if any.
func JobTask(records, id string) (Task, bool) {
	var t Task
	found := false
	for _, line := range strings.Split(records, "\n") {
		if f := JobFields(line); f["JobId"] == id && f["JobState"] != "" {
			t, found = taskOf(f), true
		}
	}
	return t, found
}

// taskIDs reads an ArrayTaskId: 3, 0-7%2, 1,3-5 or 0-10:2 (no more than
// 100000 ids).
func taskIDs(s string) []int {
	s, _, _ = strings.Cut(s, "%")
	var out []int
	for _, part := range strings.Split(s, ",") {
		part, stepS, hasStep := strings.Cut(part, ":")
		a, b, isRange := strings.Cut(part, "-")
		lo, err1 := strconv.Atoi(a)
		hi, err2 := lo, error(nil)
		if isRange {
			hi, err2 = strconv.Atoi(b)
		}
		step, err3 := 1, error(nil)
		if hasStep {
			step, err3 = strconv.Atoi(stepS)
		}
		if err1 != nil || err2 != nil || err3 != nil || lo < 0 || hi < lo || step < 1 || (hi-lo)/step > 100_000 {
			continue
		}
		for i := lo; i <= hi; i += step {
			out = append(out, i)
		}
	}
	return out
}

// TaskLog is what a task's stderr says of its end: the exit status the
// array script notes (TaskExitNote), Slurm's note of a cancellation (a
// time limit, scancel), and the error uplink printed before a non-zero
// exit: its first line and the first line of each failed cell it lists.
type TaskLog struct {
	Ended     bool
	Exit      int
	Cancelled string
	LastError string
	Failures  []string
}

// failedCellLine is the line with which a sweep's error lists one failed
// cell: two spaces, its arm, profile and seed, and why it failed (ending
// "; last lines:" where the cell's last lines of stderr follow).
var failedCellLine = regexp.MustCompile(`^ {2,3}\S+( \S+){0,3} seed \d+: `)

// lastLines ends a failed cell's line where the cell's last lines of
// stderr follow it.
const lastLines = "; last lines:"

// ParseTaskLog reads a task's stderr. The error of a task that exited
// with a non-zero status is the last line starting "uplink: " (not a
// warning) before the exit note, with the failed cells listed under it;
// the lines each failed cell's stderr left are read past, whatever they
// say.
func ParseTaskLog(text string) TaskLog {
	var l TaskLog
	var errLine string
	var failures []string
	tail := false // in a failed cell's last lines
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, TaskExitNote):
			if n, err := strconv.Atoi(strings.TrimPrefix(trimmed, TaskExitNote)); err == nil {
				l.Ended, l.Exit = true, n
				l.LastError, l.Failures = "", nil
				if n != 0 {
					l.LastError, l.Failures = errLine, failures
				}
			}
			errLine, failures, tail = "", nil, false
		case strings.Contains(line, "*** JOB ") && strings.Contains(line, " CANCELLED "):
			l.Cancelled = trimmed
		case errLine != "" && failedCellLine.MatchString(line):
			failures = append(failures, strings.TrimSuffix(trimmed, lastLines))
			tail = strings.HasSuffix(trimmed, lastLines)
		case tail:
		case strings.HasPrefix(line, "uplink: ") && !strings.HasPrefix(line, "uplink: warning: "):
			errLine, failures = trimmed, nil
		}
	}
	return l
}

// logJobID is the job id that shard's log path names (ShardLog), or ""
// for another path.
func logJobID(path string, shard int) string {
	base := filepath.Base(path)
	id, ok := strings.CutPrefix(base, fmt.Sprintf("shard-%d.", shard))
	if !ok {
		return ""
	}
	id, ok = strings.CutSuffix(id, ".err")
	if !ok || id == "" || strings.Trim(id, "0123456789") != "" {
		return ""
	}
	return id
}

// NewestShardLog is the stderr of shard i's task in its newest
// submission: that of array job arrayID where one is given (empty where
// that task wrote none yet), else the log with the highest job id in the
// plan's folder (ShardLog), else "".
func (p *Plan) NewestShardLog(i int, arrayID string) string {
	if arrayID != "" {
		return p.ShardLog(i, arrayID)
	}
	paths, _ := filepath.Glob(filepath.Join(p.Dir, fmt.Sprintf("shard-%d.*.err", i)))
	newest, newestID := "", ""
	for _, path := range paths {
		id := logJobID(path, i)
		if id != "" && (len(id) > len(newestID) || len(id) == len(newestID) && id > newestID) {
			newest, newestID = path, id
		}
	}
	return newest
}

// ShardState is a shard's state in a sweep's status.
type ShardState string

// The states of a shard.
const (
	ShardDone    ShardState = "done"    // its file holds every cell of the shard
	ShardRunning ShardState = "running" // its task is running
	ShardFailed  ShardState = "failed"  // its task ended without all its cells
	ShardMissing ShardState = "missing" // not started (or its task pending)
)

// ShardEvidence is what is known of one shard.
type ShardEvidence struct {
	Want, Have int   // the shard's cells, and those its records file holds
	FileExists bool  // the records file (or something by its name) exists
	FileErr    error // why the records file could not be read
	Task       *Task // what Slurm says of the shard's task, if it knows
	// Asked tells that Slurm was asked of the sweep's array job and told
	// of some task of it: a shard whose task it does not name has none
	// pending or running.
	Asked bool
	Log   TaskLog
}

// State tells the shard's state, with what it rests on. A complete file
// is done whatever else is known; else Slurm's word on the task decides;
// else the task's stderr (an exit or a cancellation noted); else a file
// that exists is a task that stopped short (failed), and no file a shard
// not started (missing).
func (e ShardEvidence) State() (ShardState, string) {
	cells := fmt.Sprintf("%d of %d cells", e.Have, e.Want)
	if e.FileErr != nil {
		cells = fmt.Sprintf("records file unreadable: %v", e.FileErr)
	} else if e.Have == e.Want {
		return ShardDone, cells
	}
	why := func(s string) string {
		if e.Log.LastError != "" {
			s += "; " + e.Log.LastError
		}
		return s
	}
	if t := e.Task; t != nil {
		switch {
		case slices.Contains(waitingStates, t.State):
			return ShardMissing, fmt.Sprintf("%s; task %s", cells, t)
		case slices.Contains(runningStates, t.State):
			return ShardRunning, cells + " so far"
		case t.State == "COMPLETED":
			return ShardFailed, why(cells + "; the task completed without the rest")
		}
		return ShardFailed, why(fmt.Sprintf("%s; task %s", cells, t))
	}
	switch {
	case e.Log.Cancelled != "":
		return ShardFailed, why(cells + "; " + e.Log.Cancelled)
	case e.Log.Ended:
		return ShardFailed, why(fmt.Sprintf("%s; the task exited with status %d", cells, e.Log.Exit))
	case e.FileExists:
		return ShardFailed, why(cells + "; no task of it is running")
	case e.Asked:
		return ShardMissing, cells + "; not started, and Slurm holds no task of it pending or running"
	}
	return ShardMissing, cells + "; not started"
}

// RecordKeys reads the keys of the valid records in a records file
// (ScanFile: the lines every reader takes). A file that does not exist
// holds none; one that is not a regular file is an error.
func RecordKeys(path string) (keys map[string]bool, exists bool, err error) {
	keys = map[string]bool{}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return keys, false, nil
	}
	_, err = ScanFile(path, ReadOptions{Regular: true}, func(_ int, rec *cell.Record) error {
		keys[rec.Key] = true
		return nil
	})
	return keys, true, err
}
