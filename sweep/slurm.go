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

// K8sMount is where the Kubernetes Jobs mount the sweep's claim: the
// shards' records files, the merged records, and the tasks' working
// folder.
const K8sMount = "/sweep"

// CheckK8sName checks a name of a Kubernetes object (what names it, for
// the error): a DNS-1123 subdomain of lower-case letters, digits, '-'
// and '.', starting and ending with a letter or digit, at most 253
// characters.
func CheckK8sName(what, name string) error {
	ok := name != "" && len(name) <= 253 && strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789-.") == ""
	if ok {
		first, last := name[0], name[len(name)-1]
		alnum := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
		ok = alnum(first) && alnum(last)
	}
	if !ok {
		return fmt.Errorf("%s %q is not a Kubernetes name: want 1 to 253 lower-case letters, digits, '-' and '.', starting and ending with a letter or digit", what, name)
	}
	return nil
}

// recordBytes is about the most a record of each of the plan's cells
// takes: 4 KiB and 1 KiB a node (a record with per-node rows takes about
// 400 bytes a node), all told.
func (p *Plan) recordBytes() int64 {
	var b int64
	for _, s := range p.ShardPlans {
		for i := range s.Keys {
			nodes := 0
			if i < len(s.Cells) {
				nodes = s.Cells[i].Nodes
			}
			b += 4<<10 + int64(nodes)<<10
		}
	}
	return b
}

// K8sClaimBytes is the storage the sweep's claim asks for: its records
// (recordBytes) three times over (the shards' files, a second version's
// records, the merged file), rounded up to whole GiB, at least 1 GiB.
func (p *Plan) K8sClaimBytes() int64 {
	const gib = 1 << 30
	return max(gib, (3*p.recordBytes()+gib-1)/gib*gib)
}

// k8sQuote writes s as a YAML double-quoted scalar (a JSON string is one).
func k8sQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// k8sList writes args as a YAML flow sequence of double-quoted scalars.
func k8sList(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = k8sQuote(a)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// K8sClaim is claim.yaml: the persistent volume claim named claim that
// the sweep's Jobs mount at K8sMount, ReadWriteMany (the tasks' pods,
// on any node, write to it at once), asking for K8sClaimBytes. It is
// applied once; a claim of that name that already exists serves as well
// if it is ReadWriteMany.
func (p *Plan) K8sClaim(claim string) string {
	return fmt.Sprintf(`# The records of the sweep of %d cells (plan.json): shard-I.jsonl of each
# task, merged.jsonl of the merge. Every task's pod mounts it at once, on
# any node: ReadWriteMany.
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: %s
spec:
  accessModes: ["ReadWriteMany"]
  resources:
    requests:
      storage: %dGi
`, p.Cells, k8sQuote(claim), p.K8sClaimBytes()>>30)
}

// k8sPodSpec is the pod template's spec of a sweep's Job: restartPolicy
// Never, the claim mounted at K8sMount (the working folder), and the
// containers (and init containers, where any) given as YAML list items
// indented for it.
func k8sPodSpec(claim string, deadline time.Duration, initContainers, containers string) string {
	var b strings.Builder
	b.WriteString("      restartPolicy: Never\n")
	fmt.Fprintf(&b, "      activeDeadlineSeconds: %d\n", int64(deadline/time.Second))
	if initContainers != "" {
		b.WriteString("      initContainers:\n" + initContainers)
	}
	b.WriteString("      containers:\n" + containers)
	fmt.Fprintf(&b, "      volumes:\n        - name: records\n          persistentVolumeClaim:\n            claimName: %s\n", k8sQuote(claim))
	return b.String()
}

// k8sContainer is one container of a sweep's pod: image, the command,
// K8sMount as working folder with the claim mounted there, and requests
// equal to limits of cpus and memMiB; UPLINK_MEM (run's and validate's
// --mem) is the memory limit, which a container's /proc/meminfo does
// not show; env adds variables, as YAML list items indented for it.
func k8sContainer(name, image string, command []string, cpus int, memMiB int64, env string) string {
	return fmt.Sprintf(`        - name: %s
          image: %s
          workingDir: %s
          command: %s
          env:
            - name: UPLINK_MEM
              value: "%dMiB"
%s          resources:
            requests:
              cpu: "%d"
              memory: %dMi
            limits:
              cpu: "%d"
              memory: %dMi
          volumeMounts:
            - name: records
              mountPath: %s
`, name, k8sQuote(image), k8sQuote(K8sMount), k8sList(command), memMiB, env, cpus, memMiB, cpus, memMiB, k8sQuote(K8sMount))
}

// K8sJob is job.yaml: a Kubernetes Indexed Job of the plan, one
// completion per shard, Parallel at once, each index retried twice
// (a retry runs only the cells its file lacks). Each pod runs the
// task's command line (the binary uplink from image's PATH) with its
// index from JOB_COMPLETION_INDEX and its records file on the claim at
// K8sMount, where relative paths in the command line read from; it
// requests, and is limited to, TaskCPUs CPUs and MemMiB, and TimeLimit.
func (p *Plan) K8sJob(image, claim string) string {
	args := append([]string{"uplink"}, p.taskArgs("$(JOB_COMPLETION_INDEX)", K8sMount+"/shard-$(JOB_COMPLETION_INDEX).jsonl")...)
	index := `            - name: JOB_COMPLETION_INDEX
              valueFrom:
                fieldRef:
                  fieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']"
`
	return fmt.Sprintf(`# Shard I of %d of the sweep of %d cells (plan.json) in completion index I:
#   uplink %s
# Once it is complete (kubectl wait --for=condition=complete), apply
# merge.yaml.
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
%s`, p.Shards, p.Cells, shellJoin(p.Command), k8sQuote(p.Name()), p.Shards, p.Parallel,
		k8sPodSpec(claim, p.TimeLimit(), "", k8sContainer("uplink", image, args, max(p.TaskCPUs, 1), p.MemMiB(), index)))
}

// K8sMergeMiB is the merge's memory in MiB: four times every record
// (recordBytes: the merge holds each as read, decoded, and written
// again), plus 256 MiB.
func (p *Plan) K8sMergeMiB() int64 {
	return 256 + (4*p.recordBytes()+(1<<20)-1)>>20
}

// K8sMergeJob is merge.yaml: a Job that merges the shards' records on
// the claim into K8sMount/merged.jsonl under the plan's rule (an init
// container), then checks every line of it. Kubernetes has no
// dependency between Jobs: apply it once job.yaml's Job is complete
// (kubectl wait --for=condition=complete); a shard's missing file fails
// the merge.
func (p *Plan) K8sMergeJob(image, claim string) string {
	merge := append([]string{"uplink"}, p.mergeArgs(K8sMount+"/merged.jsonl")...)
	for i := range p.Shards {
		merge = append(merge, fmt.Sprintf("%s/shard-%d.jsonl", K8sMount, i))
	}
	check := []string{"uplink", "records", "check", K8sMount + "/merged.jsonl"}
	mem := p.K8sMergeMiB()
	return fmt.Sprintf(`# Merges the records of the %d shards of job.yaml into merged.jsonl, one
# record per cell (a cell with records of several versions:
# --on-conflict %s), then checks it. Apply it once job.yaml's Job is
# complete: kubectl wait --for=condition=complete job/%s
apiVersion: batch/v1
kind: Job
metadata:
  name: %s
spec:
  backoffLimit: 0
  template:
    spec:
%s`, p.Shards, p.onConflict(), p.Name(), k8sQuote(p.Name()+"-merge"),
		k8sPodSpec(claim, 30*time.Minute, k8sContainer("merge", image, merge, 1, mem, ""), k8sContainer("check", image, check, 1, mem, "")))
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
