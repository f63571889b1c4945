package sweep

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/uplinksim/uplink/protocols/cell"
)

// Plan is a sweep planned as a job array: the command line each task runs
// with its shard, and each shard's cells and estimated cost. It is what
// plan.json holds.
type Plan struct {
	// Binary is the uplink binary's absolute path, the same on every node.
	Binary string `json:"binary"`
	// Command is the sweep's command line: run or validate and its flags.
	Command []string `json:"command"`
	// Dir is the sweep's folder (absolute): the scripts, each shard's
	// records file and logs, the merged records.
	Dir string `json:"dir"`
	// WorkDir is the folder the tasks run in (absolute), so that relative
	// paths in Command read as they did when the sweep was planned.
	WorkDir  string `json:"workdir"`
	Shards   int    `json:"shards"`
	Parallel int    `json:"parallel"`
	Cells    int    `json:"cells"`
	// OnConflict is the merge's rule for a cell with several different
	// records in the shards' files (of several uplink versions, say):
	// OnConflictRefuse (the merge fails, naming the cells; also where
	// empty, as in a plan written before the rule existed) or
	// OnConflictNewest (the last record read is kept).
	OnConflict string `json:"on_conflict,omitempty"`
	// TaskMemMiB and TaskTime are each task's request (MemMiB, TimeLimit).
	TaskMemMiB int64 `json:"task_mem_mib"`
	// TaskCPUs is each task's CPU request: the most partitions of a cell
	// (a split cell runs a partition per core), 1 without.
	TaskCPUs   int         `json:"task_cpus"`
	TaskTime   string      `json:"task_time"`
	ShardPlans []ShardPlan `json:"shard_plans"`
}

// ShardPlan is one shard of a Plan.
type ShardPlan struct {
	Index int      `json:"index"`
	Keys  []string `json:"keys"`
	// Cells names the cells of Keys, in the same order (absent from a
	// plan written before it existed).
	Cells []PlannedCell `json:"cells,omitempty"`
	// WallS is the estimated wall time of the shard's cells run one at a
	// time (the sum of their EstimateCost); RSSBytes the estimated peak
	// memory (the largest cell's).
	WallS    float64 `json:"wall_s"`
	RSSBytes int64   `json:"rss_bytes"`
}

// PlannedCell names one cell of a plan: its key, arm, profile, transport
// (empty for QUIC), seed and node count.
type PlannedCell struct {
	Key       string `json:"key"`
	Arm       string `json:"arm"`
	Profile   string `json:"profile"`
	Transport string `json:"transport,omitempty"`
	Seed      uint64 `json:"seed"`
	Nodes     int    `json:"nodes"`
}

func (c PlannedCell) String() string {
	s := cmp.Or(c.Arm, "whole") + " " + c.Profile
	if c.Transport != "" && c.Transport != "quic" {
		s += " " + c.Transport
	}
	return fmt.Sprintf("%s seed %d [%s]", s, c.Seed, c.Key)
}

// Cell names the cell of key in shard i: the plan's PlannedCell, or one
// holding the key alone where the plan names no cell of it.
func (p *Plan) Cell(i int, key string) PlannedCell {
	if i >= 0 && i < len(p.ShardPlans) {
		for _, c := range p.ShardPlans[i].Cells {
			if c.Key == key {
				return c
			}
		}
	}
	return PlannedCell{Key: key, Arm: "?", Profile: "?"}
}

// Sweep commands and the flag each gives its records file.
var outFlags = map[string]string{"run": "--out", "validate": "--cache"}

// NewPlan splits cfgs, the cells of command (run or validate and its
// flags), into shards (Shard), parallel of them run at once, each cell
// costed by cost (nil: EstimateCost; a sweep under a soft memory limit
// passes one whose peak is LimitedPeak's). binary, dir and workDir must
// be absolute; dir is written into #SBATCH lines, so it may hold no
// whitespace, quote, backslash or %. The merge's rule is OnConflictRefuse.
func NewPlan(binary string, command []string, dir, workDir string, cfgs []cell.Config, cost func(cell.Config) Cost, shards, parallel int) (*Plan, error) {
	switch {
	case len(command) == 0 || outFlags[command[0]] == "":
		return nil, fmt.Errorf("the sweep's command line must start with run or validate, not %q", strings.Join(command, " "))
	case len(cfgs) == 0:
		return nil, errors.New("the sweep's command line plans no cell")
	case shards < 1 || shards > len(cfgs):
		return nil, fmt.Errorf("%d shards of %d cells: want 1 to %d, each shard at least one cell", shards, len(cfgs), len(cfgs))
	case parallel < 1:
		return nil, fmt.Errorf("%d shards at once: want at least 1", parallel)
	}
	for _, p := range []struct{ what, path string }{{"the uplink binary", binary}, {"the sweep's folder", dir}, {"the working folder", workDir}} {
		if !filepath.IsAbs(p.path) {
			return nil, fmt.Errorf("%s %q is not an absolute path", p.what, p.path)
		}
	}
	if strings.ContainsAny(dir, " \t\r\n'\"\\%") {
		return nil, fmt.Errorf("the sweep's folder %q holds whitespace, a quote, a backslash or %%, which #SBATCH --output cannot take", dir)
	}
	if cost == nil {
		cost = EstimateCost
	}
	p := &Plan{Binary: binary, Command: slices.Clone(command), Dir: filepath.Clean(dir), WorkDir: workDir,
		Shards: shards, Parallel: min(parallel, shards), Cells: len(cfgs), OnConflict: OnConflictRefuse}
	for i := range shards {
		sp := ShardPlan{Index: i, Keys: []string{}, Cells: []PlannedCell{}}
		for _, c := range Shard(cfgs, i, shards) {
			cc := cost(c)
			n, _ := c.Size()
			sp.Keys = append(sp.Keys, c.Key())
			sp.Cells = append(sp.Cells, PlannedCell{Key: c.Key(), Arm: c.Arm, Profile: c.Profile.Name, Transport: c.Transport, Seed: c.Seed, Nodes: n})
			sp.WallS += cc.Wall.Seconds()
			sp.RSSBytes = max(sp.RSSBytes, cc.RSS)
		}
		p.ShardPlans = append(p.ShardPlans, sp)
	}
	p.TaskMemMiB = p.MemMiB()
	p.TaskCPUs = 1
	for _, c := range cfgs {
		p.TaskCPUs = max(p.TaskCPUs, c.Partitions)
	}
	p.TaskTime = SlurmTime(p.TimeLimit())
	return p, nil
}

// MemMiB is each task's memory request in MiB: the largest shard's
// estimated peak plus 10 %, rounded up.
func (p *Plan) MemMiB() int64 {
	var rss int64
	for _, s := range p.ShardPlans {
		rss = max(rss, s.RSSBytes)
	}
	const unit = 10 << 20
	return (rss*11 + unit - 1) / unit
}

// TimeLimit is each task's time limit: three times the longest shard's
// estimated wall time plus 10 minutes, rounded up to whole minutes.
func (p *Plan) TimeLimit() time.Duration {
	var wall float64
	for _, s := range p.ShardPlans {
		wall = max(wall, s.WallS)
	}
	d := time.Duration(3*wall*float64(time.Second)) + 10*time.Minute
	if r := d % time.Minute; r != 0 {
		d += time.Minute - r
	}
	return d
}

// SlurmTime writes d as Slurm's D-HH:MM:SS.
func SlurmTime(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	return fmt.Sprintf("%d-%02d:%02d:%02d", s/86400, s/3600%24, s/60%60, s%60)
}

// OutFlag is the flag that names a task's records file: --out for run,
// --cache for validate.
func (p *Plan) OutFlag() string { return outFlags[p.Command[0]] }

// ShardFile is shard i's records file.
func (p *Plan) ShardFile(i int) string {
	return filepath.Join(p.Dir, fmt.Sprintf("shard-%d.jsonl", i))
}

// MergedFile is the merged records file the merge job writes.
func (p *Plan) MergedFile() string { return filepath.Join(p.Dir, "merged.jsonl") }

// ShardLog is the stderr of shard i's task in array job arrayID; its
// stdout is the same path ending in .out. Each submission's tasks write
// logs of their own, so a resubmission keeps the earlier ones.
func (p *Plan) ShardLog(i int, arrayID string) string {
	return filepath.Join(p.Dir, fmt.Sprintf("shard-%d.%s.err", i, arrayID))
}

// MergeLog is the stderr of merge job jobID (its stdout ends in .out).
func (p *Plan) MergeLog(jobID string) string {
	return filepath.Join(p.Dir, fmt.Sprintf("merge.%s.err", jobID))
}

// Name is the jobs' name: uplink- and the sweep folder's name.
func (p *Plan) Name() string {
	var b strings.Builder
	for _, r := range strings.ToLower(filepath.Base(p.Dir)) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else if s := b.String(); s != "" && !strings.HasSuffix(s, "-") {
			b.WriteByte('-')
		}
	}
	name := strings.Trim("uplink-"+b.String(), "-")
	return strings.TrimRight(name[:min(len(name), 50)], "-")
}

// onConflict is the merge's rule: OnConflictRefuse where none is set.
func (p *Plan) onConflict() string { return cmp.Or(p.OnConflict, OnConflictRefuse) }

// taskArgs is a task's arguments after the binary: the sweep's command
// line with its shard, one cell at a time, its records file and, for run,
// --skip-done (validate always skips the cells its cache holds). index is
// how the task's index is written, path its records file.
func (p *Plan) taskArgs(index, path string) []string {
	args := append(slices.Clone(p.Command), "--shard", fmt.Sprintf("%s/%d", index, p.Shards), "--jobs", "1", p.OutFlag(), path)
	if p.Command[0] == "run" {
		args = append(args, "--skip-done")
	}
	return args
}

// mergeArgs is the merge's arguments after the binary, before the
// shards' records files: merged into out under the plan's rule; --force
// replaces an earlier merge's file, which the shards' files hold whole.
func (p *Plan) mergeArgs(out string) []string {
	return []string{"records", "merge", "--on-conflict", p.onConflict(), "--force", out}
}

// TaskExitNote starts the line the array script writes last to a task's
// stderr: the status the task exits with.
const TaskExitNote = "uplink slurm: task exited with status "

// ArrayScript is array.sbatch: a job array of one task per shard, at
// most Parallel at once, each with TaskCPUs CPUs, MemMiB and TimeLimit,
// running its shard with its records file in Dir, its stdout and stderr
// in Dir/shard-I.JOB.out and .err (ShardLog: JOB is the array's job id,
// so each submission keeps its own logs).
func (p *Plan) ArrayScript() string {
	var b strings.Builder
	b.WriteString("#!/bin/bash\n")
	fmt.Fprintf(&b, "#SBATCH --job-name=%s\n", p.Name())
	fmt.Fprintf(&b, "#SBATCH --array=0-%d%%%d\n", p.Shards-1, p.Parallel)
	fmt.Fprintf(&b, "#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=%d\n", max(p.TaskCPUs, 1))
	fmt.Fprintf(&b, "#SBATCH --mem=%dM\n", p.MemMiB())
	fmt.Fprintf(&b, "#SBATCH --time=%s\n", SlurmTime(p.TimeLimit()))
	fmt.Fprintf(&b, "#SBATCH --output=%s\n", filepath.Join(p.Dir, "shard-%a.%A.out"))
	fmt.Fprintf(&b, "#SBATCH --error=%s\n", filepath.Join(p.Dir, "shard-%a.%A.err"))
	fmt.Fprintf(&b, "# Task I runs shard I of %d of the sweep of %d cells (plan.json):\n#   uplink %s\n", p.Shards, p.Cells, shellJoin(p.Command))
	fmt.Fprintf(&b, "# appending its records to shard-I.jsonl; run again, it runs only the cells\n# that file lacks.\n")
	b.WriteString("set -euo pipefail\n")
	fmt.Fprintf(&b, "trap 'echo \"%s$?\" >&2' EXIT\n", TaskExitNote)
	fmt.Fprintf(&b, "cd %s\n", shellQuote(p.WorkDir))
	fmt.Fprintf(&b, "dir=%s\n", shellQuote(p.Dir))
	b.WriteString("task=$SLURM_ARRAY_TASK_ID\n")
	args := p.taskArgs(`"$task"`, `"$dir/shard-$task.jsonl"`)
	n := len(p.Command)
	fmt.Fprintf(&b, "%s %s %s\n", shellQuote(p.Binary), shellJoin(args[:n]), strings.Join(args[n:], " "))
	return b.String()
}

// MergeScript is merge.sbatch: it merges the shards' records into
// merged.jsonl under the plan's rule (OnConflict), replacing an earlier
// merge, and checks every line of it; its logs are Dir/merge.JOB.out and
// .err (MergeLog).
func (p *Plan) MergeScript() string {
	var b strings.Builder
	b.WriteString("#!/bin/bash\n")
	fmt.Fprintf(&b, "#SBATCH --job-name=%s-merge\n", p.Name())
	b.WriteString("#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=1\n#SBATCH --time=0-00:30:00\n")
	fmt.Fprintf(&b, "#SBATCH --output=%s\n", filepath.Join(p.Dir, "merge.%j.out"))
	fmt.Fprintf(&b, "#SBATCH --error=%s\n", filepath.Join(p.Dir, "merge.%j.err"))
	fmt.Fprintf(&b, "# Merges the records of the %d shards (array.sbatch) into merged.jsonl, one\n", p.Shards)
	fmt.Fprintf(&b, "# record per cell; a cell with records of several versions: --on-conflict %s.\n", p.onConflict())
	b.WriteString("set -euo pipefail\n")
	fmt.Fprintf(&b, "trap 'echo \"%s$?\" >&2' EXIT\n", TaskExitNote)
	fmt.Fprintf(&b, "dir=%s\n", shellQuote(p.Dir))
	bin := shellQuote(p.Binary)
	shards := `"$dir"/shard-0.jsonl`
	if p.Shards > 1 {
		shards = fmt.Sprintf(`"$dir"/shard-{0..%d}.jsonl`, p.Shards-1)
	}
	fmt.Fprintf(&b, "%s %s %s\n", bin, strings.Join(p.mergeArgs(`"$dir/merged.jsonl"`), " "), shards)
	fmt.Fprintf(&b, "%s records check \"$dir/merged.jsonl\"\n", bin)
	return b.String()
}

// SubmitCommands are the shell commands that submit the array and the
// merge job, which runs once every task has succeeded.
func (p *Plan) SubmitCommands() string {
	return fmt.Sprintf("array=$(sbatch --parsable %s)\nsbatch --parsable --dependency=afterok:${array%%%%;*} %s\n",
		shellQuote(filepath.Join(p.Dir, "array.sbatch")), shellQuote(filepath.Join(p.Dir, "merge.sbatch")))
}

// K8sMount is where the Kubernetes Job mounts its volume: the shards'
// records files and the tasks' working folder.
const K8sMount = "/sweep"

// K8sJob is a Kubernetes Indexed Job of the plan: one completion per
// shard, Parallel at once, each pod requesting one CPU and MemMiB and
// running the task's command line (the binary uplink from image's PATH)
// with its index from JOB_COMPLETION_INDEX and its records file on the
// volume at K8sMount: the persistent volume claim named pvc, or an
// emptyDir where pvc is "" (the records then go with the pod). Relative
// paths in the command line read from K8sMount.
func (p *Plan) K8sJob(image, pvc string) string {
	q := func(s string) string {
		b, _ := json.Marshal(s) // a JSON string is a YAML double-quoted scalar
		return string(b)
	}
	var args []string
	for _, a := range append([]string{"uplink"}, p.taskArgs("$(JOB_COMPLETION_INDEX)", K8sMount+"/shard-$(JOB_COMPLETION_INDEX).jsonl")...) {
		args = append(args, q(a))
	}
	volume := "emptyDir: {}"
	if pvc != "" {
		volume = "persistentVolumeClaim:\n            claimName: " + q(pvc)
	}
	return fmt.Sprintf(`# Shard I of %d of the sweep of %d cells (plan.json) in completion index I:
#   uplink %s
apiVersion: batch/v1
kind: Job
metadata:
  name: %s
spec:
  completionMode: Indexed
  completions: %d
  parallelism: %d
  backoffLimitPerIndex: 2
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: uplink
          image: %s
          workingDir: %s
          command: [%s]
          env:
            - name: JOB_COMPLETION_INDEX
              valueFrom:
                fieldRef:
                  fieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']"
          resources:
            requests:
              cpu: "%d"
              memory: %dMi
          volumeMounts:
            - name: sweep
              mountPath: %s
      volumes:
        - name: sweep
          %s
`, p.Shards, p.Cells, shellJoin(p.Command), q(p.Name()), p.Shards, p.Parallel, q(image), q(K8sMount),
		strings.Join(args, ", "), max(p.TaskCPUs, 1), p.MemMiB(), q(K8sMount), volume)
}

// shellQuote quotes s for the shell where it needs quoting.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}
