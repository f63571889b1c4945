package main

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/uplinksim/uplink/internal/outfile"
	"github.com/uplinksim/uplink/protocols/cell"
	"github.com/uplinksim/uplink/sweep"
)

const slurmUsage = `Usage:
  uplink slurm --dir DIR --shards N [--parallel P] [--on-conflict RULE] [--submit] -- run|validate FLAGS...
  uplink slurm --dir DIR --shards N --emit k8s --k8s-claim NAME [--k8s-image IMAGE] -- run|validate FLAGS...
  uplink slurm --status DIR

Plans the sweep of a run or validate command line as N cost-balanced shards,
after every check the command makes of its flags and cells, and writes
DIR/plan.json (each shard's cells and estimated cost), DIR/array.sbatch (a
job array: task I runs shard I, P at once, its records in DIR/shard-I.jsonl,
its logs in DIR/shard-I.JOB.out and .err) and DIR/merge.sbatch (DIR/merged.jsonl,
one record per cell, once every task has succeeded; a cell with records of
several versions is refused or its newest kept, as --on-conflict says), and
prints the sbatch commands; --submit runs them and keeps the job ids in
DIR/jobs.json. Planning the same sweep into the same DIR and submitting again
runs only the cells still missing; each submission keeps its own logs.
--emit k8s writes Kubernetes objects instead: DIR/claim.yaml (the records'
volume), DIR/job.yaml (an Indexed Job of the shards) and DIR/merge.yaml (the
merge, to apply once the Indexed Job is complete).
--status DIR tells each shard done, running, failed or missing, the cells
missing, the first line of each failure, the cells with several different
records and whether merged.jsonl holds one record of every cell; it exits 1
until the sweep is complete and merged.

Flags:
`

// sweepPlan takes a sweep command's flags and cells in place of running
// them (sweepRun, sweepValidate).
type sweepPlan struct {
	flags *pflag.FlagSet
	cells []cell.Config // the whole sweep, before --shard
	// cost is each cell's cost as the sweep itself would plan it: learnt
	// from the records it holds, its peak under --memlimit.
	cost func(cell.Config) sweep.Cost
	// limit is the cells' soft memory limit in bytes (--memlimit or
	// GOMEMLIMIT; 0 for none).
	limit int64
}

// slurmRefused are the flags of run and validate that uplink slurm sets
// in each task, or that make the command do something else than run its
// cells, with why.
var slurmRefused = map[string]string{
	"shard":           "uplink slurm gives each task its shard",
	"jobs":            "each task runs one cell at a time on its one CPU (--jobs 1)",
	"out":             "each task writes its records to DIR/shard-I.jsonl",
	"cache":           "each task keeps its records in DIR/shard-I.jsonl",
	"skip-done":       "each task of uplink run skips the cells its file holds",
	"skip-over-mem":   "each task must run every cell of its shard, or the shard never completes; leave such cells out of the sweep (fewer nodes, a smaller degree) or run them under --memlimit",
	"list-cells":      "it lists the cells instead of running them",
	"list-arms":       "it runs no cell",
	"list-knobs":      "it runs no cell",
	"list-qdiscs":     "it runs no cell",
	"list-tables":     "it runs no cell",
	"list-studies":    "it runs no cell",
	"export-topology": "it runs no cell",
	"dry-run":         "it runs no cell",
	"cached-only":     "it runs no cell",
	"report":          "each task would write the report of its shard alone; once merged, uplink validate --cached-only --cache DIR/merged.jsonl --report FOLDER writes the whole",
}

// slurmJobs is DIR/jobs.json: the jobs --submit submitted last, and
// those of the earlier submissions, oldest first.
type slurmJobs struct {
	Array     string      `json:"array"`
	Merge     string      `json:"merge,omitempty"`
	Submitted string      `json:"submitted"`
	Earlier   []slurmJobs `json:"earlier,omitempty"`
}

// cmdSlurm plans a sweep as a Slurm job array (or a Kubernetes Indexed
// Job), submits it, or tells a planned sweep's status.
func cmdSlurm(args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("uplink slurm", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SetInterspersed(false) // the sweep's command line is the command's own
	fs.Usage = func() {
		fmt.Fprint(stderr, slurmUsage)
		fs.PrintDefaults()
	}
	dir := fs.String("dir", "", "the sweep's folder: plan, scripts, each shard's records and logs, the merged records")
	shards := fs.Int("shards", 0, "shards, one array task each")
	parallel := fs.Int("parallel", 0, "tasks run at once (the array's %P; default all)")
	submit := fs.Bool("submit", false, "submit array.sbatch, then merge.sbatch to run once every task has succeeded, and keep their job ids in DIR/jobs.json")
	status := fs.String("status", "", "tell the status of the sweep planned in this folder and exit")
	onConflict := fs.String("on-conflict", sweep.OnConflictRefuse, "the merge's rule for a cell with several different records (a rerun by another uplink build): "+sweep.OnConflictRefuse+" (the merge fails, naming the cells) or "+sweep.OnConflictNewest+" (the last record read is kept); kept in plan.json")
	emit := fs.String("emit", "slurm", "what to write: slurm (array.sbatch and merge.sbatch) or k8s (claim.yaml, job.yaml and merge.yaml)")
	k8sClaim := fs.String("k8s-claim", "", "with --emit k8s: the persistent volume claim (ReadWriteMany) of the records, mounted at "+sweep.K8sMount+" in every pod; claim.yaml makes it")
	k8sImage := fs.String("k8s-image", "uplink:latest", "with --emit k8s: the container image, with uplink on its PATH (the repository's Dockerfile builds one)")
	binary := fs.String("binary", "", "the uplink binary the tasks run, by its path on the nodes (default this one)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return usageError{err}
	}
	if *status != "" {
		var others []string
		fs.Visit(func(f *pflag.Flag) {
			if f.Name != "status" {
				others = append(others, "--"+f.Name)
			}
		})
		if len(others) > 0 || fs.NArg() > 0 {
			return usageError{fmt.Errorf("slurm --status DIR takes no other flag nor a command line (got %s)", strings.Join(append(others, fs.Args()...), " "))}
		}
		return slurmStatus(*status, stdout)
	}
	switch {
	case *dir == "":
		return usageError{errors.New("slurm: name the sweep's folder with --dir")}
	case *shards < 1:
		return usageError{errors.New("slurm: give the number of shards with --shards N (N at least 1)")}
	case *parallel < 0:
		return usageError{fmt.Errorf("slurm: --parallel %d: want at least 1 (0: all at once)", *parallel)}
	case *emit != "slurm" && *emit != "k8s":
		return usageError{fmt.Errorf("slurm: --emit %q: want slurm or k8s", *emit)}
	case *onConflict != sweep.OnConflictRefuse && *onConflict != sweep.OnConflictNewest:
		return usageError{fmt.Errorf("slurm: --on-conflict %q: want %s or %s", *onConflict, sweep.OnConflictRefuse, sweep.OnConflictNewest)}
	case *emit == "k8s" && *submit:
		return usageError{errors.New("slurm: --submit submits to Slurm; with --emit k8s apply the objects with kubectl")}
	case *emit != "k8s" && (fs.Changed("k8s-claim") || fs.Changed("k8s-image")):
		return usageError{errors.New("slurm: --k8s-claim and --k8s-image go with --emit k8s")}
	case fs.NArg() == 0:
		return usageError{errors.New("slurm: give the sweep after --: run or validate and its flags")}
	}
	if *emit == "k8s" {
		if err := sweep.CheckK8sName("--k8s-claim", *k8sClaim); err != nil {
			return usageError{fmt.Errorf("slurm: %w (the claim of the records, which the tasks' pods share)", err)}
		}
		if *k8sImage == "" || strings.ContainsAny(*k8sImage, " \t\r\n") {
			return usageError{fmt.Errorf("slurm: --k8s-image %q: want an image reference, such as registry.example/uplink:1", *k8sImage)}
		}
	}
	if *parallel == 0 {
		*parallel = *shards
	}
	p, err := planSweep(fs.Args(), *binary, *dir, *shards, *parallel, stdout, stderr)
	if err != nil || p == nil {
		return err
	}
	p.OnConflict = *onConflict
	if err := os.MkdirAll(p.Dir, 0o755); err != nil {
		return fmt.Errorf("slurm: --dir: %w", err)
	}
	if err := checkSamePlan(p); err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(p.Dir, "plan.json"), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(p)
	}); err != nil {
		return fmt.Errorf("slurm: %w", err)
	}
	var longest float64
	for _, s := range p.ShardPlans {
		longest = max(longest, s.WallS)
	}
	cpus := "1 CPU"
	if p.TaskCPUs > 1 {
		cpus = fmt.Sprintf("%d CPUs", p.TaskCPUs)
	}
	fmt.Fprintf(stdout, "%d cells in %d shards (%s), %d at once; each task %s, %d MiB, time limit %s (the longest shard about %.0f s)\n",
		p.Cells, p.Shards, filepath.Join(p.Dir, "plan.json"), p.Parallel, cpus, p.MemMiB(), sweep.SlurmTime(p.TimeLimit()), longest)
	if *emit == "k8s" {
		return writeK8s(p, *k8sImage, *k8sClaim, stdout)
	}
	arrayPath, mergePath := filepath.Join(p.Dir, "array.sbatch"), filepath.Join(p.Dir, "merge.sbatch")
	for _, f := range []struct{ path, text string }{{arrayPath, p.ArrayScript()}, {mergePath, p.MergeScript()}} {
		if err := writeFileAtomic(f.path, func(w io.Writer) error {
			_, err := io.WriteString(w, f.text)
			return err
		}); err != nil {
			return fmt.Errorf("slurm: %w", err)
		}
	}
	fmt.Fprintf(stdout, "wrote %s and %s; submit them with:\n%s", arrayPath, mergePath, p.SubmitCommands())
	if !*submit {
		return nil
	}
	return slurmSubmit(p, stdout)
}

// errNotSweep is planCommand's answer to a command that is neither run
// nor validate.
var errNotSweep = errors.New("not a sweep command")

// planCommand takes the flags and cells of command (run or validate and
// its flags) through the command's own code, without running them.
func planCommand(command []string, stdout, stderr io.Writer) (sweepPlan, error) {
	var sp sweepPlan
	switch command[0] {
	case "run":
		return sp, sweepRun(command[1:], &sp, stdout, stderr)
	case "validate":
		return sp, sweepValidate(command[1:], &sp, stdout, stderr)
	}
	return sp, errNotSweep
}

// planSweep plans the sweep of command (run or validate and its flags)
// through the command's own flags and cells; a nil plan and no error is
// a command line that printed its help.
func planSweep(command []string, binary, dir string, shards, parallel int, stdout, stderr io.Writer) (*sweep.Plan, error) {
	sp, err := planCommand(command, stdout, stderr)
	if errors.Is(err, errNotSweep) {
		return nil, usageError{fmt.Errorf("slurm: the sweep is run or validate and its flags, not %q", command[0])}
	}
	var ue usageError
	if errors.As(err, &ue) {
		return nil, usageError{fmt.Errorf("slurm: %s: %w", command[0], ue.error)}
	} else if err != nil {
		return nil, fmt.Errorf("slurm: %s: %w", command[0], err)
	}
	if sp.flags == nil {
		return nil, nil // --help
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range slurmRefused {
			if !yield(k) {
				return
			}
		}
	})
	for _, name := range names {
		if sp.flags.Lookup(name) != nil && sp.flags.Changed(name) {
			return nil, usageError{fmt.Errorf("slurm: leave out %s --%s: %s", command[0], name, slurmRefused[name])}
		}
	}
	if len(sp.cells) == 0 {
		return nil, usageError{fmt.Errorf("slurm: %s runs no cell with these flags", strings.Join(command, " "))}
	}
	if binary == "" {
		if binary, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("slurm: finding the uplink binary: %w", err)
		}
		if binary, err = filepath.EvalSymlinks(binary); err != nil {
			return nil, fmt.Errorf("slurm: finding the uplink binary: %w", err)
		}
	}
	if binary, err = filepath.Abs(binary); err != nil {
		return nil, fmt.Errorf("slurm: --binary: %w", err)
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, fmt.Errorf("slurm: --dir: %w", err)
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("slurm: the working folder: %w", err)
	}
	if err := checkPlannedCells(sp, stderr); err != nil {
		if errors.As(err, &ue) {
			return nil, usageError{fmt.Errorf("slurm: %s: %w", command[0], ue.error)}
		}
		return nil, fmt.Errorf("slurm: %s: %w", command[0], err)
	}
	p, err := sweep.NewPlan(binary, command, dir, wd, sp.cells, sp.cost, shards, parallel)
	if err != nil {
		return nil, usageError{fmt.Errorf("slurm: %w", err)}
	}
	return p, nil
}

// checkPlannedCells makes, before anything is written or submitted, the
// checks each task's command makes of its cells before running any
// (checkCells): every cell's configuration, and its memory where the
// tasks' memory is known here: --mem on the command line, or $UPLINK_MEM,
// which sbatch passes on to the tasks. Without either a task weighs its
// cells against its node's memory, which Slurm matches to the task's
// request.
func checkPlannedCells(sp sweepPlan, stderr io.Writer) error {
	budget := ""
	if f := sp.flags.Lookup("mem"); f != nil {
		budget = f.Value.String()
	}
	if budget != "" || os.Getenv(memEnv) != "" {
		_, err := checkCells(sp.cells, memOpts{budget: budget, limit: sp.limit, noSkip: true}, false, stderr)
		return err
	}
	for _, c := range sp.cells {
		if err := c.Check(); err != nil {
			return usageError{fmt.Errorf("cell %s: %w", cellName(c), err)}
		}
	}
	return nil
}

// writeK8s writes the plan's Kubernetes objects into its folder and
// prints how to apply them.
func writeK8s(p *sweep.Plan, image, claim string, stdout io.Writer) error {
	files := []struct{ name, text string }{
		{"claim.yaml", p.K8sClaim(claim)},
		{"job.yaml", p.K8sJob(image, claim)},
		{"merge.yaml", p.K8sMergeJob(image, claim)},
	}
	for _, f := range files {
		if err := writeFileAtomic(filepath.Join(p.Dir, f.name), func(w io.Writer) error {
			_, err := io.WriteString(w, f.text)
			return err
		}); err != nil {
			return fmt.Errorf("slurm: %w", err)
		}
	}
	path := func(name string) string { return filepath.Join(p.Dir, name) }
	fmt.Fprintf(stdout, "wrote %s, %s and %s; run them with:\n", path("claim.yaml"), path("job.yaml"), path("merge.yaml"))
	fmt.Fprintf(stdout, "kubectl apply -f %s   # once; an existing ReadWriteMany claim %s serves as well\n", path("claim.yaml"), claim)
	fmt.Fprintf(stdout, "kubectl apply -f %s\n", path("job.yaml"))
	fmt.Fprintf(stdout, "kubectl wait --for=condition=complete --timeout=%ds job/%s\n", int64(k8sWait(p)/time.Second), p.Name())
	fmt.Fprintf(stdout, "kubectl apply -f %s\n", path("merge.yaml"))
	return nil
}

// k8sWait bounds the wait for the Indexed Job: each round of Parallel
// shards within the tasks' time limit, and each index retried twice.
func k8sWait(p *sweep.Plan) time.Duration {
	rounds := (p.Shards + p.Parallel - 1) / p.Parallel
	return time.Duration(3*rounds) * p.TimeLimit()
}

// readPlan reads DIR/plan.json.
func readPlan(dir string) (*sweep.Plan, error) {
	b, err := os.ReadFile(filepath.Join(dir, "plan.json"))
	if err != nil {
		return nil, err
	}
	var p sweep.Plan
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "plan.json"), err)
	}
	if p.Shards < 1 || len(p.ShardPlans) != p.Shards || len(p.Command) == 0 {
		return nil, fmt.Errorf("%s: not a sweep's plan (want the command line and one entry per shard)", filepath.Join(dir, "plan.json"))
	}
	return &p, nil
}

// checkSamePlan refuses to plan into a folder that holds the plan of
// another sweep (another command line, or other shards), whose records
// files would mix with this one's; the same sweep planned again is a
// resubmission.
func checkSamePlan(p *sweep.Plan) error {
	old, err := readPlan(p.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("slurm: %w", err)
	}
	same := slices.Equal(old.Command, p.Command) && old.Shards == p.Shards
	for i := 0; same && i < p.Shards; i++ {
		same = slices.Equal(old.ShardPlans[i].Keys, p.ShardPlans[i].Keys)
	}
	if !same {
		return usageError{fmt.Errorf("slurm: %s holds the plan of another sweep (uplink %s in %d shards); plan this one in a folder of its own",
			p.Dir, strings.Join(old.Command, " "), old.Shards)}
	}
	return nil
}

// slurmSubmit submits the array, then the merge job to run once every
// task has succeeded, and writes DIR/jobs.json, keeping the earlier
// submissions' ids. It refuses while a task or the merge job of an
// earlier submission of the sweep is still pending or running.
func slurmSubmit(p *sweep.Plan, stdout io.Writer) error {
	jobsPath := filepath.Join(p.Dir, "jobs.json")
	old, err := readJobs(p.Dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("slurm --submit: %w", err)
	case old.Array != "":
		records, _ := slurmJobRecords(old)
		tasks := sweep.ArrayTasks(records, old.Array)
		for _, i := range slices.Sorted(maps.Keys(tasks)) {
			if t := tasks[i]; t.Active() {
				return fmt.Errorf("slurm --submit: task %d of the sweep's array job %s is %s; wait for it, or scancel %s", i, old.Array, strings.ToLower(t.State), old.Array)
			}
		}
		if t, ok := sweep.JobTask(records, old.Merge); ok && t.Active() {
			return fmt.Errorf("slurm --submit: the sweep's merge job %s is %s; wait for it, or scancel %s", old.Merge, strings.ToLower(t.State), old.Merge)
		}
	}
	array, err := sbatch("--parsable", filepath.Join(p.Dir, "array.sbatch"))
	if err != nil {
		return fmt.Errorf("slurm --submit: %w", err)
	}
	jobs := slurmJobs{Array: array, Submitted: time.Now().UTC().Format(time.RFC3339)}
	if old.Array != "" {
		jobs.Earlier = append(old.Earlier, slurmJobs{Array: old.Array, Merge: old.Merge, Submitted: old.Submitted})
	}
	write := func() error {
		return writeFileAtomic(jobsPath, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(jobs)
		})
	}
	if err := write(); err != nil {
		return fmt.Errorf("slurm --submit: array job %s submitted, but: %w", array, err)
	}
	merge, err := sbatch("--parsable", "--dependency=afterok:"+array, filepath.Join(p.Dir, "merge.sbatch"))
	if err != nil {
		return fmt.Errorf("slurm --submit: array job %s submitted, but: %w", array, err)
	}
	jobs.Merge = merge
	if err := write(); err != nil {
		return fmt.Errorf("slurm --submit: jobs %s and %s submitted, but: %w", array, merge, err)
	}
	fmt.Fprintf(stdout, "submitted array job %s (%d tasks) and merge job %s; ids in %s\n", array, p.Shards, merge, jobsPath)
	return nil
}

// sbatch runs sbatch --parsable and returns the job id it prints.
func sbatch(args ...string) (string, error) {
	cmd := exec.Command("sbatch", args...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("sbatch %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	id, _, _ := strings.Cut(strings.TrimSpace(string(out)), ";") // id;cluster
	if id == "" || strings.Trim(id, "0123456789") != "" {
		return "", fmt.Errorf("sbatch %s printed %q, not a job id", strings.Join(args, " "), out)
	}
	return id, nil
}

func readJobs(dir string) (slurmJobs, error) {
	var j slurmJobs
	b, err := os.ReadFile(filepath.Join(dir, "jobs.json"))
	if err != nil {
		return j, err
	}
	if err := json.Unmarshal(b, &j); err != nil {
		return j, fmt.Errorf("%s: %w", filepath.Join(dir, "jobs.json"), err)
	}
	return j, nil
}

// slurmJobRecords gathers what Slurm says of the sweep's jobs, as job
// records one a line: the jobcomp/filetxt log's (when Slurm keeps one),
// then scontrol's, later lines being newer. Where scontrol is not on the
// PATH it returns "" and why.
func slurmJobRecords(jobs slurmJobs) (string, error) {
	if _, err := exec.LookPath("scontrol"); err != nil {
		return "", err
	}
	var b strings.Builder
	if conf, err := exec.Command("scontrol", "show", "config").Output(); err == nil {
		kv := map[string]string{}
		for _, line := range strings.Split(string(conf), "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				kv[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		}
		if kv["JobCompType"] == "jobcomp/filetxt" && kv["JobCompLoc"] != "" {
			readJobComp(kv["JobCompLoc"], jobs, &b)
		}
	}
	for _, id := range []string{jobs.Array, jobs.Merge} {
		if id == "" {
			continue
		}
		// A job the controller has forgotten (MinJobAge) is an error here.
		if out, err := exec.Command("scontrol", "-o", "show", "job", id).Output(); err == nil {
			b.Write(out)
		}
	}
	return b.String(), nil
}

// readJobComp copies the lines of the jobcomp/filetxt log at path that
// are of the sweep's jobs to b.
func readJobComp(path string, jobs slurmJobs, b *strings.Builder) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	array, merge := "ArrayJobId="+jobs.Array+" ", "JobId="+jobs.Merge+" "
	for sc.Scan() {
		line := sc.Text() + " "
		if jobs.Array != "" && strings.Contains(line, array) || jobs.Merge != "" && strings.HasPrefix(line, merge) {
			b.WriteString(line + "\n")
		}
	}
}

// slurmStatus prints each shard's state with the cells it lacks and the
// first line of each failure, the cells with several different records
// in the shards' files, and whether merged.jsonl holds one record of
// every cell of the plan and no other, as the merge would write it now.
// It fails unless the sweep is complete and merged.
func slurmStatus(dir string, stdout io.Writer) error {
	p, err := readPlan(dir)
	if errors.Is(err, os.ErrNotExist) {
		return usageError{fmt.Errorf("slurm --status: %s holds no plan.json (plan the sweep with uplink slurm --dir %s)", dir, dir)}
	}
	if err != nil {
		return fmt.Errorf("slurm --status: %w", err)
	}
	// The files are read where they are now, wherever the sweep was
	// planned from.
	p.Dir = dir
	var tasks map[int]sweep.Task
	var mergeJob *sweep.Task
	jobs, err := readJobs(dir)
	switch {
	case err == nil:
		records, lerr := slurmJobRecords(jobs)
		if lerr != nil {
			fmt.Fprintf(stdout, "(scontrol is not on the PATH: the states rest on the files alone)\n")
		}
		tasks = sweep.ArrayTasks(records, jobs.Array)
		if t, ok := sweep.JobTask(records, jobs.Merge); ok {
			mergeJob = &t
		}
	case errors.Is(err, os.ErrNotExist):
		fmt.Fprintf(stdout, "(no jobs.json: not submitted with --submit; the states rest on the files alone)\n")
	default:
		return fmt.Errorf("slurm --status: %w", err)
	}
	var wrong []string // what keeps the sweep from complete, for the error
	count := map[sweep.ShardState]int{}
	missing := 0
	for _, sp := range p.ShardPlans {
		keys, exists, ferr := sweep.RecordKeys(p.ShardFile(sp.Index))
		ev := sweep.ShardEvidence{Want: len(sp.Keys), FileExists: exists, FileErr: ferr, Asked: len(tasks) > 0}
		for _, k := range sp.Keys {
			if keys[k] {
				ev.Have++
			}
		}
		if t, ok := tasks[sp.Index]; ok {
			ev.Task = &t
		}
		logPath := p.NewestShardLog(sp.Index, jobs.Array)
		if logPath != "" {
			if b, err := os.ReadFile(logPath); err == nil {
				ev.Log = sweep.ParseTaskLog(string(b))
			} else {
				logPath = ""
			}
		}
		st, why := ev.State()
		count[st]++
		fmt.Fprintf(stdout, "shard %d: %s (%s)\n", sp.Index, st, why)
		for _, f := range ev.Log.Failures {
			fmt.Fprintf(stdout, "  failed: %s\n", f)
		}
		if st == sweep.ShardFailed && logPath != "" {
			fmt.Fprintf(stdout, "  log: %s\n", logPath)
		}
		if st == sweep.ShardFailed || st == sweep.ShardMissing {
			for _, k := range sp.Keys {
				if !keys[k] {
					missing++
					fmt.Fprintf(stdout, "  missing: %s\n", p.Cell(sp.Index, k))
				}
			}
		}
	}
	fmt.Fprintf(stdout, "%d shards: %d done, %d running, %d failed, %d missing\n", p.Shards,
		count[sweep.ShardDone], count[sweep.ShardRunning], count[sweep.ShardFailed], count[sweep.ShardMissing])
	for _, c := range []struct {
		st   sweep.ShardState
		what string
	}{{sweep.ShardFailed, "failed"}, {sweep.ShardMissing, "not started"}, {sweep.ShardRunning, "still running"}} {
		if n := count[c.st]; n > 0 {
			wrong = append(wrong, fmt.Sprintf("%d of %d shards %s", n, p.Shards, c.what))
		}
	}
	if missing > 0 {
		wrong = append(wrong, fmt.Sprintf("%d of %d cells missing", missing, p.Cells))
	}
	shards, merge := shardMerge(p)
	wrong = append(wrong, merge.report(p, stdout)...)
	wrong = append(wrong, mergedStatus(p, shards, merge, jobs.Merge, mergeJob, stdout)...)
	if len(wrong) > 0 {
		return fmt.Errorf("slurm --status: the sweep is not complete: %s", strings.Join(wrong, "; "))
	}
	return nil
}

// planMerge is what the merge job would make of the shards' records
// files as they are now: the same merge (sweep.Merge) under the plan's
// rule.
type planMerge struct {
	recs []*cell.Record
	rep  sweep.MergeReport
	err  error
}

// shardMerge merges the shards' records files that exist, as the merge
// job does; it returns their paths.
func shardMerge(p *sweep.Plan) ([]string, planMerge) {
	var paths []string
	for i := range p.Shards {
		if st, err := os.Stat(p.ShardFile(i)); err == nil && st.Mode().IsRegular() {
			paths = append(paths, p.ShardFile(i))
		}
	}
	var m planMerge
	if len(paths) > 0 {
		m.recs, m.rep, m.err = sweep.Merge(paths, sweep.MergeOptions{OnConflict: cmp.Or(p.OnConflict, sweep.OnConflictRefuse)})
	}
	return paths, m
}

// report prints the cells with several different records in the
// shards' files, and the lines the merge skips; it returns what keeps
// the sweep from complete: conflicts the plan's rule refuses, or a
// merge that fails.
func (m planMerge) report(p *sweep.Plan, stdout io.Writer) []string {
	rule := cmp.Or(p.OnConflict, sweep.OnConflictRefuse)
	for _, pr := range m.rep.Problems {
		fmt.Fprintf(stdout, "skipped by the merge: %v\n", pr)
	}
	if n := len(m.rep.Conflicts); n > 0 {
		verdict := "the merge refuses them (plan.json's on_conflict is refuse): keep one record of each, or plan the sweep again with --on-conflict newest and merge again"
		if rule == sweep.OnConflictNewest {
			verdict = "the merge keeps the last one read (plan.json's on_conflict is newest)"
		}
		fmt.Fprintf(stdout, "%d cells with several different records in the shards' files; %s:\n", n, verdict)
		for _, c := range m.rep.Conflicts {
			fmt.Fprintf(stdout, "  %s: records of uplink %s\n", p.Cell(shardOf(p, c.Key), c.Key), strings.Join(c.Versions, ", "))
		}
	}
	switch {
	case m.err == nil:
		return nil
	case errors.Is(m.err, sweep.ErrConflict):
		return []string{fmt.Sprintf("%d cells with several different records, which the merge refuses", len(m.rep.Conflicts))}
	}
	fmt.Fprintf(stdout, "the shards' files do not merge: %v\n", m.err)
	return []string{"the shards' files do not merge"}
}

// shardOf is the shard of the plan that holds key, or -1.
func shardOf(p *sweep.Plan, key string) int {
	for _, sp := range p.ShardPlans {
		if slices.Contains(sp.Keys, key) {
			return sp.Index
		}
	}
	return -1
}

// mergedStatus prints what merged.jsonl holds: its records and wrong
// lines, the plan's cells it lacks, the cells it holds several records
// of or that the plan does not have, and whether it is what the merge
// would write now from the shards' files; or, absent, what Slurm says
// of the merge job and the first line of its error. It returns what
// keeps the sweep from complete.
func mergedStatus(p *sweep.Plan, shardFiles []string, now planMerge, mergeID string, mergeJob *sweep.Task, stdout io.Writer) []string {
	merged := p.MergedFile()
	var mergeLog sweep.TaskLog
	if mergeID != "" {
		if b, err := os.ReadFile(p.MergeLog(mergeID)); err == nil {
			mergeLog = sweep.ParseTaskLog(string(b))
		}
	}
	// The last merge failed: Slurm says so, or where it has forgotten
	// the job, the merge's log.
	mergeFailed := mergeJob != nil && !mergeJob.Active() && mergeJob.State != "COMPLETED" ||
		mergeJob == nil && mergeLog.Ended && mergeLog.Exit != 0
	mergeState := ""
	if mergeJob != nil {
		mergeState = fmt.Sprintf("merge job %s: %s", mergeID, mergeJob)
	} else if mergeFailed {
		mergeState = fmt.Sprintf("merge job %s: exited with status %d", mergeID, mergeLog.Exit)
	}
	n, problems, err := sweep.CheckFile(merged)
	if errors.Is(err, os.ErrNotExist) {
		line := merged + ": absent"
		if mergeState != "" {
			line += " (" + mergeState + ")"
		}
		fmt.Fprintln(stdout, line)
		if mergeLog.LastError != "" {
			fmt.Fprintf(stdout, "  %s\n", mergeLog.LastError)
		}
		return []string{"merged.jsonl absent"}
	}
	if err != nil {
		fmt.Fprintf(stdout, "%s: %v\n", merged, outfile.Cause(err))
		return []string{"merged.jsonl unreadable"}
	}
	fmt.Fprintf(stdout, "%s: %d records, %d lines wrong\n", merged, n, len(problems))
	var wrong []string
	if len(problems) > 0 {
		for _, pr := range problems {
			fmt.Fprintf(stdout, "  %v\n", pr)
		}
		wrong = append(wrong, fmt.Sprintf("%d lines of merged.jsonl wrong", len(problems)))
	}
	recs, rep, err := sweep.Merge([]string{merged}, sweep.MergeOptions{OnConflict: sweep.OnConflictNewest})
	if err != nil {
		fmt.Fprintf(stdout, "  %v\n", err)
		return append(wrong, "merged.jsonl unreadable")
	}
	planned := map[string]int{} // key: shard
	for _, sp := range p.ShardPlans {
		for _, k := range sp.Keys {
			planned[k] = sp.Index
		}
	}
	held := map[string]bool{}
	var extra []string
	for _, r := range recs {
		held[r.Key] = true
		if _, ok := planned[r.Key]; !ok {
			extra = append(extra, r.Key)
		}
	}
	var lacking int
	for _, sp := range p.ShardPlans {
		for _, k := range sp.Keys {
			if !held[k] {
				lacking++
			}
		}
	}
	if n > len(recs) {
		fmt.Fprintf(stdout, "  %d records of %d cells: several of some\n", n, len(recs))
		for _, c := range rep.Conflicts {
			fmt.Fprintf(stdout, "    %s: records of uplink %s\n", p.Cell(planned[c.Key], c.Key), strings.Join(c.Versions, ", "))
		}
		if rep.Duplicates > 0 {
			fmt.Fprintf(stdout, "    and %d records the same as another\n", rep.Duplicates)
		}
		wrong = append(wrong, fmt.Sprintf("merged.jsonl holds %d records of %d cells", n, len(recs)))
	}
	if lacking > 0 {
		fmt.Fprintf(stdout, "  lacks %d of the plan's %d cells\n", lacking, p.Cells)
		wrong = append(wrong, fmt.Sprintf("merged.jsonl lacks %d cells", lacking))
	}
	if len(extra) > 0 {
		fmt.Fprintf(stdout, "  holds %d cells the plan does not have: %s\n", len(extra), strings.Join(extra, ", "))
		wrong = append(wrong, fmt.Sprintf("merged.jsonl holds %d cells the plan does not have", len(extra)))
	}
	if now.err == nil && len(shardFiles) == p.Shards && !sameRecords(now.recs, recs) {
		fmt.Fprintf(stdout, "  is not what the shards' files merge into now: merge again (sbatch %s)\n", filepath.Join(p.Dir, "merge.sbatch"))
		wrong = append(wrong, "merged.jsonl is older than the shards' records")
	}
	if mergeFailed {
		line := "  the last merge did not write it (" + mergeState + ")"
		if mergeLog.LastError != "" {
			line += ": " + mergeLog.LastError
		}
		fmt.Fprintln(stdout, line)
	}
	return wrong
}

// sameRecords tells two merges' records (each sorted by key) the same,
// as sweep.Merge tells records apart.
func sameRecords(a, b []*cell.Record) bool {
	return slices.EqualFunc(a, b, func(x, y *cell.Record) bool { return reflect.DeepEqual(x, y) })
}
