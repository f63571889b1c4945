package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/sweep"
)

var slurmSweep = []string{"run", "--nodes", "12", "--degree", "4", "--payload", "64KiB", "--profile", "harness", "--seeds", "7-12"}

// listedKeys are the keys uplink ... --list-cells prints.
func listedKeys(t *testing.T, command ...string) []string {
	t.Helper()
	var out, errb bytes.Buffer
	require.Equal(t, 0, run(append(command, "--list-cells"), &out, &errb), errb.String())
	var keys []string
	for _, l := range strings.Split(out.String(), "\n")[1:] {
		if f := strings.Fields(l); len(f) == 10 {
			keys = append(keys, f[0])
		}
	}
	return keys
}

func readTestPlan(t *testing.T, dir string) *sweep.Plan {
	t.Helper()
	p, err := readPlan(dir)
	require.NoError(t, err)
	return p
}

// TestSlurmPlan: uplink slurm plans the command's own cells (those
// --list-cells lists) into the shards of plan.json, writes the two
// scripts and prints the sbatch commands; the same sweep planned again
// into its folder is accepted, another refused; validate's tasks keep
// their records in --cache; --emit k8s writes job.yaml alone.
func TestSlurmPlan(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sweep")
	var out, errb bytes.Buffer
	args := append([]string{"slurm", "--dir", dir, "--shards", "3", "--parallel", "2", "--"}, slurmSweep...)
	require.Equal(t, 0, run(args, &out, &errb), errb.String())
	require.Contains(t, out.String(), "6 cells in 3 shards")
	require.Contains(t, out.String(), "array=$(sbatch --parsable "+filepath.Join(dir, "array.sbatch")+")\n")
	require.Contains(t, out.String(), "sbatch --parsable --dependency=afterok:${array%%;*} "+filepath.Join(dir, "merge.sbatch")+"\n")

	p := readTestPlan(t, dir)
	require.Equal(t, slurmSweep, p.Command)
	require.Equal(t, 3, p.Shards)
	require.Equal(t, 2, p.Parallel)
	require.True(t, filepath.IsAbs(p.Binary))
	require.FileExists(t, p.Binary)
	var keys []string
	for i, sp := range p.ShardPlans {
		require.ElementsMatch(t, listedKeys(t, append(slurmSweep, "--shard", fmt.Sprintf("%d/3", i))...), sp.Keys, "shard %d", i)
		require.Positive(t, sp.WallS)
		require.Positive(t, sp.RSSBytes)
		keys = append(keys, sp.Keys...)
	}
	require.ElementsMatch(t, listedKeys(t, slurmSweep...), keys)
	array, err := os.ReadFile(filepath.Join(dir, "array.sbatch"))
	require.NoError(t, err)
	require.Equal(t, p.ArrayScript(), string(array))
	require.Contains(t, string(array), "#SBATCH --array=0-2%2\n")
	merge, err := os.ReadFile(filepath.Join(dir, "merge.sbatch"))
	require.NoError(t, err)
	require.Equal(t, p.MergeScript(), string(merge))

	require.Equal(t, 0, run(args, &out, &errb), "the same sweep again: %s", errb.String())
	checkUsageErrors(t, []usageCase{
		{append([]string{"slurm", "--dir", dir, "--shards", "2", "--"}, slurmSweep...), "holds the plan of another sweep"},
		{[]string{"slurm", "--dir", dir, "--shards", "3", "--", "run", "--seeds", "7-12"}, "holds the plan of another sweep"},
	})

	vdir := filepath.Join(t.TempDir(), "v")
	vargs := []string{"slurm", "--dir", vdir, "--shards", "4", "--", "validate", "--table", "appendix_d_home", "--nodes", "12", "--seeds", "7"}
	require.Equal(t, 0, run(vargs, &out, &errb), errb.String())
	v := readTestPlan(t, vdir)
	require.Equal(t, 4, v.Parallel, "all at once by default")
	var vkeys []string
	for _, sp := range v.ShardPlans {
		vkeys = append(vkeys, sp.Keys...)
	}
	require.ElementsMatch(t, listedKeys(t, vargs[6:]...), vkeys)
	varray, err := os.ReadFile(filepath.Join(vdir, "array.sbatch"))
	require.NoError(t, err)
	require.Contains(t, string(varray), ` --cache "$dir/shard-$task.jsonl"`)

	kdir := filepath.Join(t.TempDir(), "k")
	out.Reset()
	require.Equal(t, 0, run(append([]string{"slurm", "--dir", kdir, "--shards", "3", "--on-conflict", "newest", "--emit", "k8s", "--k8s-claim", "records", "--"}, slurmSweep...), &out, &errb), errb.String())
	kp := readTestPlan(t, kdir)
	require.Equal(t, "newest", kp.OnConflict)
	for name, want := range map[string]string{
		"claim.yaml": kp.K8sClaim("records"),
		"job.yaml":   kp.K8sJob("uplink:latest", "records"),
		"merge.yaml": kp.K8sMergeJob("uplink:latest", "records"),
	} {
		b, err := os.ReadFile(filepath.Join(kdir, name))
		require.NoError(t, err)
		require.Equal(t, want, string(b), name)
	}
	require.Contains(t, out.String(), "kubectl apply -f "+filepath.Join(kdir, "claim.yaml")+" ")
	require.Contains(t, out.String(), "\nkubectl apply -f "+filepath.Join(kdir, "job.yaml")+"\n"+
		"kubectl wait --for=condition=complete --timeout=1980s job/uplink-k\n"+
		"kubectl apply -f "+filepath.Join(kdir, "merge.yaml")+"\n")
	require.NoFileExists(t, filepath.Join(kdir, "array.sbatch"))
}

// TestSlurmPlanMemLimit: under --memlimit each task asks for the peak the
// sweep itself plans for its largest cell (sweep.LimitedPeak: the limit
// plus a quarter, plus the plan's 10 %), not the cell's unlimited
// estimate, and --list-cells shows the same peak.
func TestSlurmPlanMemLimit(t *testing.T) {
	big := []string{"run", "--nodes", "2000", "--degree", "70", "--payload", "1MiB", "--profile", "harness", "--seeds", "7"}
	var out, errb bytes.Buffer
	plan := func(extra ...string) *sweep.Plan {
		dir := filepath.Join(t.TempDir(), "sweep")
		args := append(append([]string{"slurm", "--dir", dir, "--shards", "1", "--"}, big...), extra...)
		require.Equal(t, 0, run(args, &out, &errb), errb.String())
		return readTestPlan(t, dir)
	}
	unlimited := plan()
	const limit = 17 << 30
	require.Greater(t, unlimited.ShardPlans[0].RSSBytes, int64(limit+limit/4), "the whole message at 2 000 nodes is estimated over 21.25 GiB")
	limited := plan("--memlimit", "17GiB")
	require.Equal(t, int64(limit+limit/4), limited.ShardPlans[0].RSSBytes)
	require.Equal(t, int64(23936), limited.TaskMemMiB, "21.25 GiB plus 10 %, in MiB rounded up to 10 MiB")
	require.Less(t, limited.TaskMemMiB, unlimited.TaskMemMiB)
	require.Equal(t, unlimited.ShardPlans[0].WallS, limited.ShardPlans[0].WallS)

	out.Reset()
	require.Equal(t, 0, run(append(big, "--memlimit", "17GiB", "--list-cells"), &out, &errb), errb.String())
	require.Contains(t, out.String(), " 21.2  -\n", "the listed RSS is the limited peak, in GiB")
}

// TestSlurmPlanChecks: planning refuses, before it writes anything, every
// sweep that uplink run refuses before running a cell, with run's own
// error: a cell's configuration (Config.Check), and its memory where the
// tasks' memory is known here (--mem, $UPLINK_MEM); --skip-over-mem,
// which would leave a shard short, is refused. A split cell's CPUs are
// what the plan says and what the script asks for.
func TestSlurmPlanChecks(t *testing.T) {
	small := []string{"--nodes", "12", "--degree", "4", "--payload", "64KiB", "--profile", "harness", "--seeds", "7"}
	big := []string{"--nodes", "2000", "--degree", "70", "--payload", "1MiB", "--profile", "harness", "--seeds", "7"}
	for _, c := range []struct {
		name  string
		flags []string
		env   string // UPLINK_MEM
		want  string
	}{
		{"unknown qdisc", append(slices.Clone(small), "--uplink-qdisc", "notaqdisc"), "", `unknown discipline "notaqdisc"`},
		{"unknown downlink qdisc", append(slices.Clone(small), "--downlink-qdisc", "pie:target=-1ms"), "", "downlink-qdisc"},
		{"over --mem", append(slices.Clone(big), "--mem", "2GiB"), "", "--mem is 2.0 GiB"},
		{"over UPLINK_MEM", slices.Clone(big), "2GiB", "UPLINK_MEM is 2.0 GiB"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(memEnv, c.env)
			var out, errb bytes.Buffer
			runArgs := append(append([]string{"run"}, c.flags...), "--out", filepath.Join(t.TempDir(), "r.jsonl"))
			require.Equal(t, 2, run(runArgs, &out, &errb), "uplink run refuses it: %s", errb.String())
			require.Contains(t, errb.String(), c.want)
			runErr := strings.TrimPrefix(strings.TrimSpace(errb.String()), "uplink: ")

			dir := filepath.Join(t.TempDir(), "sweep")
			out.Reset()
			errb.Reset()
			require.Equal(t, 2, run(append([]string{"slurm", "--dir", dir, "--shards", "1", "--", "run"}, c.flags...), &out, &errb), out.String())
			// run's own error, less --skip-over-mem, which slurm refuses.
			want := strings.Replace(runErr, ", or leave such cells out with --skip-over-mem", "", 1)
			require.Equal(t, "uplink: slurm: run: "+want+"\n", errb.String(), "planning refuses with run's own error")
			require.NoDirExists(t, dir, "nothing written")
		})
	}
	d := filepath.Join(t.TempDir(), "s")
	checkUsageErrors(t, []usageCase{
		{append([]string{"slurm", "--dir", d, "--shards", "1", "--", "run", "--skip-over-mem"}, small...), "leave out run --skip-over-mem"},
	})
	require.NoDirExists(t, d)

	var out, errb bytes.Buffer
	require.Equal(t, 0, run(append([]string{"slurm", "--dir", d, "--shards", "1", "--", "run", "--partitions", "4"}, small...), &out, &errb), errb.String())
	require.Contains(t, out.String(), "each task 4 CPUs, ")
	p := readTestPlan(t, d)
	require.Equal(t, 4, p.TaskCPUs)
	array, err := os.ReadFile(filepath.Join(d, "array.sbatch"))
	require.NoError(t, err)
	require.Contains(t, string(array), "#SBATCH --cpus-per-task=4\n")
}

// TestSlurmUsageErrors: uplink slurm refuses a bad command line, and the
// sweep's flags it sets itself or that run no cell.
func TestSlurmUsageErrors(t *testing.T) {
	d := filepath.Join(t.TempDir(), "s")
	sl := func(args ...string) []string { return append([]string{"slurm", "--dir", d, "--shards", "2"}, args...) }
	checkUsageErrors(t, []usageCase{
		{[]string{"slurm", "--shards", "2", "--", "run"}, "name the sweep's folder with --dir"},
		{[]string{"slurm", "--dir", d, "--", "run"}, "--shards N"},
		{sl(), "give the sweep after --"},
		{sl("--", "bulk"), `not "bulk"`},
		{sl("--", "run", "--out", "x.jsonl"), "leave out run --out"},
		{sl("--", "run", "--jobs", "3"), "leave out run --jobs"},
		{sl("--", "run", "--shard", "0/2"), "leave out run --shard"},
		{sl("--", "run", "--list-arms"), "leave out run --list-arms"},
		{sl("--", "run", "--nodes", "1"), "slurm: run: --nodes"},
		{sl("--", "validate", "--table", "appendix_d_home", "--cache", "c.jsonl"), "leave out validate --cache"},
		{sl("--", "validate", "--table", "appendix_d_home", "--report", "r"), "--cached-only --cache DIR/merged.jsonl --report"},
		{[]string{"slurm", "--dir", d, "--shards", "7", "--", "run", "--seeds", "7-9"}, "7 shards of 6 cells"},
		{sl("--parallel", "-1", "--", "run"), "--parallel -1"},
		{sl("--emit", "pbs", "--", "run"), `--emit "pbs"`},
		{sl("--emit", "k8s", "--submit", "--", "run"), "with --emit k8s apply"},
		{sl("--k8s-claim", "v", "--", "run"), "go with --emit k8s"},
		{sl("--emit", "k8s", "--", "run"), `--k8s-claim "" is not a Kubernetes name`},
		{sl("--emit", "k8s", "--k8s-claim", "My_Records", "--", "run"), `--k8s-claim "My_Records" is not a Kubernetes name`},
		{sl("--emit", "k8s", "--k8s-claim", "r", "--k8s-image", "", "--", "run"), `--k8s-image "": want an image reference`},
		{sl("--on-conflict", "oldest", "--", "run"), `--on-conflict "oldest": want refuse or newest`},
		{[]string{"slurm", "--dir", "/tmp/my sweep", "--shards", "2", "--", "run"}, "#SBATCH --output"},
		{[]string{"slurm", "--status", d, "--shards", "2"}, "takes no other flag"},
		{[]string{"slurm", "--status", d}, "holds no plan.json"},
		{[]string{"run", "--skip-done"}, "--skip-done needs --out"},
	})
	require.NoDirExists(t, d)
}

// fakeSlurm puts sbatch and scontrol stand-ins first on the PATH: sbatch
// notes its arguments in DIR/sbatch.log and prints ids from 41 up (as
// --parsable does on a federation: id;cluster); scontrol prints
// DIR/config for show config and DIR/job-ID for -o show job ID (an
// error where there is none, as for a job the controller forgot).
func fakeSlurm(t *testing.T) string {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "next"), []byte("41\n"), 0o644))
	sbatch := fmt.Sprintf(`#!/bin/sh
echo "$*" >>%[1]s/sbatch.log
n=$(cat %[1]s/next)
echo $((n + 1)) >%[1]s/next
echo "$n;ci"
`, dir)
	scontrol := fmt.Sprintf(`#!/bin/sh
case "$*" in
"show config") cat %[1]s/config 2>/dev/null ;;
"-o show job "*)
	if [ -f %[1]s/job-$4 ]; then cat %[1]s/job-$4; else echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1; fi ;;
*) exit 2 ;;
esac
`, dir)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sbatch"), []byte(sbatch), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "scontrol"), []byte(scontrol), 0o755))
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return dir
}

// shardRecord is a valid record of key by uplink version.
func shardRecord(key, version string) string {
	return fmt.Sprintf(`{"key":%q,"arm":"wholend","profile":"harness","version":%q,"seed":7,"n":12,"total":11,"completed":11,"payload_bytes":65536}`+"\n", key, version)
}

// writeShardRecords writes records of keys by version v1 to path.
func writeShardRecords(t *testing.T, path string, keys ...string) {
	t.Helper()
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(shardRecord(k, "v1"))
	}
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
}

// appendRecords appends text to the records file at path.
func appendRecords(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(text)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// TestSlurmSubmitStatus: --submit submits the array, then the merge job
// depending on it, and keeps both ids (and the earlier submissions');
// --status reads each shard's file, what Slurm says of its task
// (scontrol, the jobcomp log) and the newest submission's stderr, lists
// the cells each failed or missing shard lacks and the first line of
// each failed cell's error, and exits 1 until every cell is done and
// merged.jsonl holds one record of each; a second --submit is refused
// while a task still runs.
func TestSlurmSubmitStatus(t *testing.T) {
	fake := fakeSlurm(t)
	dir := filepath.Join(t.TempDir(), "sweep")
	var out, errb bytes.Buffer
	submit := append([]string{"slurm", "--dir", dir, "--shards", "3", "--parallel", "2", "--submit", "--"}, slurmSweep...)
	require.Equal(t, 0, run(submit, &out, &errb), errb.String())
	require.Contains(t, out.String(), "submitted array job 41 (3 tasks) and merge job 42")
	log, err := os.ReadFile(filepath.Join(fake, "sbatch.log"))
	require.NoError(t, err)
	require.Equal(t, "--parsable "+filepath.Join(dir, "array.sbatch")+"\n--parsable --dependency=afterok:41 "+filepath.Join(dir, "merge.sbatch")+"\n", string(log))
	jobs, err := readJobs(dir)
	require.NoError(t, err)
	require.Equal(t, "41", jobs.Array)
	require.Equal(t, "42", jobs.Merge)
	require.Empty(t, jobs.Earlier)

	p := readTestPlan(t, dir)
	require.Equal(t, "refuse", p.OnConflict)
	cell := func(shard, i int) string { return p.ShardPlans[shard].Cells[i].String() }
	require.Equal(t, fmt.Sprintf("wholend harness seed %d [%s]", p.ShardPlans[1].Cells[0].Seed, p.ShardPlans[1].Keys[0]), cell(1, 0))
	writeShardRecords(t, p.ShardFile(0), p.ShardPlans[0].Keys...)
	writeShardRecords(t, p.ShardFile(2), p.ShardPlans[2].Keys[0])
	jobcomp := filepath.Join(fake, "jobcomp.log")
	require.NoError(t, os.WriteFile(filepath.Join(fake, "config"), []byte("JobCompLoc              = "+jobcomp+"\nJobCompType             = jobcomp/filetxt\n"), 0o644))
	require.NoError(t, os.WriteFile(jobcomp, []byte(
		"JobId=40 UserId=root(0) Name=other JobState=COMPLETED ExitCode=0:0\n"+
			"JobId=44 UserId=root(0) Name=uplink-sweep JobState=FAILED ArrayJobId=41 ArrayTaskId=1 DerivedExitCode=0:0 ExitCode=1:0\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(fake, "job-41"), []byte(
		"JobId=45 ArrayJobId=41 ArrayTaskId=2 JobState=RUNNING Reason=None ExitCode=0:0\n"+
			"JobId=43 ArrayJobId=41 ArrayTaskId=0 JobState=COMPLETED Reason=None ExitCode=0:0\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(fake, "job-42"), []byte("JobId=42 JobName=uplink-sweep-merge JobState=PENDING Reason=Dependency ExitCode=0:0\n"), 0o644))
	// Shard 1's task: one cell killed, the other failed, each error
	// followed by the cell's last lines.
	killed := "uplink: run: 2 of 2 cells failed:\n" +
		"  wholend harness seed 9: signal: killed; last lines:\n" +
		"cell seed 9: 12 hosts in 0.1 s\n" +
		"  wholend harness seed 10: exit status 1; last lines:\n" +
		"uplink: cell: boom\n" +
		sweep.TaskExitNote + "1\n"
	require.NoError(t, os.WriteFile(p.ShardLog(1, "41"), []byte(killed), 0o644))

	status := func(wantCode int) string {
		t.Helper()
		out.Reset()
		errb.Reset()
		require.Equal(t, wantCode, run([]string{"slurm", "--status", dir}, &out, &errb), "%s%s", out.String(), errb.String())
		return out.String()
	}
	st := status(1)
	require.Contains(t, st, "shard 0: done (2 of 2 cells)\n")
	require.Contains(t, st, "shard 1: failed (0 of 2 cells; task FAILED, exit code 1:0; uplink: run: 2 of 2 cells failed:)\n"+
		"  failed: wholend harness seed 9: signal: killed\n"+
		"  failed: wholend harness seed 10: exit status 1\n"+
		"  log: "+p.ShardLog(1, "41")+"\n"+
		"  missing: "+cell(1, 0)+"\n"+
		"  missing: "+cell(1, 1)+"\n")
	require.Contains(t, st, "shard 2: running (1 of 2 cells so far)\n")
	require.Contains(t, st, "3 shards: 1 done, 1 running, 1 failed, 0 missing\n")
	require.Contains(t, st, p.MergedFile()+": absent (merge job 42: PENDING (Dependency))\n")
	require.Contains(t, errb.String(), "the sweep is not complete: 1 of 3 shards failed; 1 of 3 shards still running; 2 of 6 cells missing; merged.jsonl absent")

	out.Reset()
	errb.Reset()
	require.Equal(t, 1, run(submit, &out, &errb))
	require.Contains(t, errb.String(), "task 2 of the sweep's array job 41 is running; wait for it, or scancel 41")

	// Task 1 cancelled while pending: Slurm names the others, not it.
	require.NoError(t, os.Remove(jobcomp))
	require.NoError(t, os.Remove(p.ShardLog(1, "41")))
	require.NoError(t, os.WriteFile(filepath.Join(fake, "job-41"), []byte(
		"JobId=45 ArrayJobId=41 ArrayTaskId=2 JobState=COMPLETED Reason=None ExitCode=0:0\n"+
			"JobId=43 ArrayJobId=41 ArrayTaskId=0 JobState=COMPLETED Reason=None ExitCode=0:0\n"), 0o644))
	writeShardRecords(t, p.ShardFile(2), p.ShardPlans[2].Keys...)
	st = status(1)
	require.Contains(t, st, "shard 1: missing (0 of 2 cells; not started, and Slurm holds no task of it pending or running)\n"+
		"  missing: "+cell(1, 0)+"\n"+"  missing: "+cell(1, 1)+"\n")
	require.Contains(t, st, "3 shards: 2 done, 0 running, 0 failed, 1 missing\n")
	require.Contains(t, errb.String(), "1 of 3 shards not started; 2 of 6 cells missing")

	// Slurm forgot the jobs; shard 1's stderr tells its end.
	require.NoError(t, os.Remove(filepath.Join(fake, "job-41")))
	require.NoError(t, os.Remove(filepath.Join(fake, "job-42")))
	require.NoError(t, os.Remove(filepath.Join(fake, "config")))
	require.NoError(t, os.WriteFile(p.ShardLog(1, "41"), []byte("uplink: run: boom\n"+sweep.TaskExitNote+"1\n"), 0o644))
	st = status(1)
	require.Contains(t, st, "shard 1: failed (0 of 2 cells; the task exited with status 1; uplink: run: boom)\n")
	require.Contains(t, st, "3 shards: 2 done, 0 running, 1 failed, 0 missing\n")

	// Resubmitted: the earlier ids kept, and the earlier logs; the new
	// task pending, its old failure is not its state.
	require.Equal(t, 0, run(submit, &out, &errb), errb.String())
	jobs, err = readJobs(dir)
	require.NoError(t, err)
	require.Equal(t, "43", jobs.Array)
	require.Equal(t, "44", jobs.Merge)
	require.Equal(t, []slurmJobs{{Array: "41", Merge: "42", Submitted: jobs.Earlier[0].Submitted}}, jobs.Earlier)
	require.FileExists(t, p.ShardLog(1, "41"))
	require.NoError(t, os.WriteFile(filepath.Join(fake, "job-43"), []byte("JobId=43 ArrayJobId=43 ArrayTaskId=1 JobState=PENDING Reason=Priority ExitCode=0:0\n"), 0o644))
	st = status(1)
	require.Contains(t, st, "shard 1: missing (0 of 2 cells; task PENDING (Priority))\n")
	require.NotContains(t, st, "boom")

	// Done: every shard complete, merged.jsonl one record of each cell.
	require.NoError(t, os.Remove(filepath.Join(fake, "job-43")))
	writeShardRecords(t, p.ShardFile(1), p.ShardPlans[1].Keys...)
	var all []string
	for _, sp := range p.ShardPlans {
		all = append(all, sp.Keys...)
	}
	writeShardRecords(t, p.MergedFile(), all...)
	st = status(0)
	require.Contains(t, st, "3 shards: 3 done, 0 running, 0 failed, 0 missing\n")
	require.Contains(t, st, p.MergedFile()+": 6 records, 0 lines wrong\n")
	require.NotContains(t, st, "several")

	// merged.jsonl with a record twice, another of a second version, and
	// without a cell: each said, each an exit 1.
	appendRecords(t, p.MergedFile(), shardRecord(all[0], "v1")+shardRecord(all[1], "v2"))
	st = status(1)
	require.Contains(t, st, p.MergedFile()+": 8 records, 0 lines wrong\n  8 records of 6 cells: several of some\n"+
		"    "+p.Cell(0, all[1]).String()+": records of uplink v1, v2\n    and 1 records the same as another\n")
	require.Contains(t, errb.String(), "merged.jsonl holds 8 records of 6 cells")
	writeShardRecords(t, p.MergedFile(), all[1:]...)
	st = status(1)
	require.Contains(t, st, "  lacks 1 of the plan's 6 cells\n")
	require.Contains(t, st, "  is not what the shards' files merge into now: merge again (sbatch "+filepath.Join(dir, "merge.sbatch")+")\n")

	// A cell rerun by another uplink build: two versions in its shard's
	// file. The plan's rule refuses it: said, and exit 1 whatever
	// merged.jsonl holds; the merge's failure is read from its log.
	writeShardRecords(t, p.MergedFile(), all...)
	appendRecords(t, p.ShardFile(0), shardRecord(p.ShardPlans[0].Keys[1], "v2"))
	require.NoError(t, os.WriteFile(p.MergeLog("44"), []byte("uplink: records merge: 1 cells with several different records\n  cell x\n"+sweep.TaskExitNote+"1\n"), 0o644))
	st = status(1)
	conflict := "  " + cell(0, 1) + ": records of uplink v1, v2\n"
	require.Contains(t, st, "1 cells with several different records in the shards' files; the merge refuses them (plan.json's on_conflict is refuse): keep one record of each, or plan the sweep again with --on-conflict newest and merge again:\n"+conflict)
	require.Contains(t, st, "  the last merge did not write it (merge job 44: exited with status 1): uplink: records merge: 1 cells with several different records\n")
	require.Contains(t, errb.String(), "1 cells with several different records, which the merge refuses")

	// Planned again with --on-conflict newest (the same sweep): the merge
	// keeps the newest, which merged.jsonl must then hold.
	plan := append([]string{"slurm", "--dir", dir, "--shards", "3", "--parallel", "2", "--on-conflict", "newest", "--"}, slurmSweep...)
	require.Equal(t, 0, run(plan, &out, &errb), errb.String())
	require.Equal(t, "newest", readTestPlan(t, dir).OnConflict)
	merge, err := os.ReadFile(filepath.Join(dir, "merge.sbatch"))
	require.NoError(t, err)
	require.Contains(t, string(merge), " records merge --on-conflict newest --force ")
	st = status(1)
	require.Contains(t, st, "the merge keeps the last one read (plan.json's on_conflict is newest):\n"+conflict)
	require.Contains(t, errb.String(), "merged.jsonl is older than the shards' records")
	out.Reset()
	errb.Reset()
	require.Equal(t, 0, run([]string{"records", "merge", "--on-conflict", "newest", "--force", p.MergedFile(), p.ShardFile(0), p.ShardFile(1), p.ShardFile(2)}, &out, &errb), errb.String())
	require.NoError(t, os.Remove(p.MergeLog("44")))
	st = status(0)
	require.Contains(t, st, p.MergedFile()+": 6 records, 0 lines wrong\n")

	// Without scontrol the states rest on the files.
	t.Setenv("PATH", t.TempDir())
	st = status(0)
	require.Contains(t, st, "scontrol is not on the PATH")
	require.Contains(t, st, "3 shards: 3 done")
}

// dockerIgnored tells whether .dockerignore's patterns leave path
// (slash-separated, from the repository's root) out of the build
// context, as Docker reads them: each pattern cleaned, matching the path
// or a folder above it, "**/" standing for any folders; the last pattern
// that matches decides, one starting "!" bringing the path back.
func dockerIgnored(patterns []string, path string) bool {
	parts := strings.Split(path, "/")
	ignored := false
	for _, pat := range patterns {
		pat, keep := strings.CutPrefix(pat, "!")
		pat = strings.TrimPrefix(filepath.Clean(pat), "/")
		for i := 1; i <= len(parts); i++ {
			ok, _ := filepath.Match(pat, strings.Join(parts[:i], "/"))
			if rest, deep := strings.CutPrefix(pat, "**/"); deep && !ok {
				ok, _ = filepath.Match(rest, parts[i-1])
			}
			if ok {
				ignored = !keep
				break
			}
		}
	}
	return ignored
}

// TestDockerfile: the image's Go is go.mod's, the binary static and on
// the PATH as uplink (the Kubernetes Jobs run "uplink"), and the build
// context keeps every file the build embeds while it leaves out the
// history, the committed records and build outputs.
func TestDockerfile(t *testing.T) {
	docker, err := os.ReadFile("../../Dockerfile")
	require.NoError(t, err)
	mod, err := os.ReadFile("../../go.mod")
	require.NoError(t, err)
	var goVersion string
	for _, l := range strings.Split(string(mod), "\n") {
		if v, ok := strings.CutPrefix(l, "go "); ok {
			goVersion = v
		}
	}
	f := strings.Split(goVersion, ".")
	require.GreaterOrEqual(t, len(f), 2, "go.mod's go line: %q", goVersion)
	lines := strings.Split(string(docker), "\n")
	require.Contains(t, lines, "FROM golang:"+f[0]+"."+f[1]+" AS build")
	require.Contains(t, lines, "RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false -o /out/uplink ./cmd/uplink")
	require.Contains(t, lines, "COPY --from=build /out/uplink /usr/local/bin/uplink")

	ignore, err := os.ReadFile("../../.dockerignore")
	require.NoError(t, err)
	var patterns []string
	for _, l := range strings.Split(string(ignore), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			patterns = append(patterns, l)
		}
	}
	embedded, err := filepath.Glob("../../validate/tables/*.csv")
	require.NoError(t, err)
	require.NotEmpty(t, embedded)
	for i, p := range embedded {
		embedded[i] = strings.TrimPrefix(p, "../../")
	}
	for _, p := range append(embedded, "results/resources.json", "results/resources.go", "validate/tables/README.md",
		"validate/tables/arms/appendix_a.csv", "cmd/uplink/main.go", "go.sum") {
		require.FileExists(t, "../../"+p)
		require.False(t, dockerIgnored(patterns, p), "%s is left out of the image's build", p)
	}
	for _, p := range []string{".git/HEAD", "uplink", "results/pie-500/records.jsonl", "results/pie-500/README.md", "validate/testdata/harness_records.jsonl"} {
		require.True(t, dockerIgnored(patterns, p), "%s is sent to the image's build", p)
	}
}

// TestRunSkipDone: run --skip-done leaves out the cells its --out file
// holds, says so, and runs only the rest.
func TestRunSkipDone(t *testing.T) {
	out := filepath.Join(t.TempDir(), "records.jsonl")
	cells := func(seeds string) []string {
		return []string{"run", "--nodes", "6", "--degree", "2", "--payload", "4KiB", "--profile", "harness", "--seeds", seeds, "--out", out, "--skip-done", "--jobs", "1"}
	}
	lines := func() []string {
		b, err := os.ReadFile(out)
		require.NoError(t, err)
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run(cells("7"), &stdout, &stderr), stderr.String())
	require.Contains(t, stderr.String(), "--skip-done: 0 of 1 cells already in "+out+", 1 to run")
	require.Len(t, lines(), 1)

	stderr.Reset()
	require.Equal(t, 0, run(cells("7-8"), &stdout, &stderr), stderr.String())
	require.Contains(t, stderr.String(), "--skip-done: 1 of 2 cells already in "+out+", 1 to run")
	require.Contains(t, stderr.String(), "done 1/1 cells")
	require.Len(t, lines(), 2)

	stderr.Reset()
	require.Equal(t, 0, run(cells("7-8"), &stdout, &stderr), stderr.String())
	require.Contains(t, stderr.String(), "--skip-done: 2 of 2 cells already in "+out+", 0 to run")
	require.NotContains(t, stderr.String(), "done ")
	require.Len(t, lines(), 2)
	var keys []string
	for _, l := range lines() {
		var r struct{ Key string }
		require.NoError(t, json.Unmarshal([]byte(l), &r))
		keys = append(keys, r.Key)
	}
	require.ElementsMatch(t, listedKeys(t, cells("7-8")[:11]...), keys)
}
