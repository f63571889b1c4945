package sweep

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	k8syaml "sigs.k8s.io/yaml"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/protocols/cell"
)

// slurmCells is a sweep of 6 small cells and 2 larger ones.
func slurmCells(t *testing.T) []cell.Config {
	p, err := cell.LookupProfile("harness")
	require.NoError(t, err)
	var out []cell.Config
	for seed := uint64(7); seed < 13; seed++ {
		out = append(out, cell.Config{N: 12, Degree: 4, Payload: 64 << 10, Seed: seed, Profile: p})
	}
	for seed := uint64(7); seed < 9; seed++ {
		out = append(out, cell.Config{N: 100, Degree: 20, Payload: 1 << 20, Seed: seed, Profile: p})
	}
	return out
}

var runCommand = []string{"run", "--nodes", "12", "--knob", "x=it's a b", "--seeds", "7-12"}

// TestPlan: every cell in one shard's keys; each shard's cost the sum
// (wall) and the largest (memory) of its cells'; the task's memory the
// largest cell's plus 10 % in whole MiB, its time three times the longest
// shard plus 10 minutes in whole minutes.
func TestPlan(t *testing.T) {
	cells := slurmCells(t)
	p, err := NewPlan("/opt/uplink", runCommand, "/data/sweep-1/", "/home/u", cells, nil, 3, 2)
	require.NoError(t, err)
	require.Equal(t, "/data/sweep-1", p.Dir)
	require.Equal(t, 3, p.Shards)
	require.Equal(t, 8, p.Cells)
	var all []string
	var maxRSS int64
	var maxWall float64
	for i, sp := range p.ShardPlans {
		require.Equal(t, i, sp.Index)
		var wall float64
		var rss int64
		for _, c := range Shard(cells, i, 3) {
			require.Contains(t, sp.Keys, c.Key())
			wall += EstimateCost(c).Wall.Seconds()
			rss = max(rss, EstimateCost(c).RSS)
		}
		require.InDelta(t, wall, sp.WallS, 1e-9)
		require.Equal(t, rss, sp.RSSBytes)
		all = append(all, sp.Keys...)
		maxRSS, maxWall = max(maxRSS, rss), max(maxWall, wall)
	}
	var want []string
	for _, c := range cells {
		want = append(want, c.Key())
	}
	require.ElementsMatch(t, want, all)

	mib := float64(maxRSS) * 1.1 / (1 << 20)
	require.Equal(t, int64(mib)+1, p.MemMiB(), "%.3f MiB rounded up", mib)
	limit := p.TimeLimit()
	require.Zero(t, limit%time.Minute)
	require.GreaterOrEqual(t, limit.Seconds(), 3*maxWall+600)
	require.Less(t, limit.Seconds(), 3*maxWall+660)
	require.Equal(t, p.MemMiB(), p.TaskMemMiB)
	require.Equal(t, SlurmTime(limit), p.TaskTime)
	require.Equal(t, "uplink-sweep-1", p.Name())

	require.Equal(t, "0-00:26:00", SlurmTime(26*time.Minute))
	require.Equal(t, "2-01:02:03", SlurmTime(49*time.Hour+2*time.Minute+3*time.Second))

	for _, c := range []struct {
		command          []string
		dir              string
		shards, parallel int
		want             string
	}{
		{[]string{"bulk"}, "/d", 2, 1, "must start with run or validate"},
		{nil, "/d", 2, 1, "must start with run or validate"},
		{runCommand, "/d", 9, 1, "9 shards of 8 cells"},
		{runCommand, "/d", 0, 1, "0 shards of 8 cells"},
		{runCommand, "/d", 2, 0, "want at least 1"},
		{runCommand, "d", 2, 1, "not an absolute path"},
		{runCommand, "/my sweep", 2, 1, "#SBATCH --output"},
		{runCommand, "/d/50%", 2, 1, "#SBATCH --output"},
	} {
		_, err := NewPlan("/opt/uplink", c.command, c.dir, "/w", cells, nil, c.shards, c.parallel)
		require.ErrorContains(t, err, c.want, "%v", c)
	}
	_, err = NewPlan("/opt/uplink", runCommand, "/d", "/w", nil, nil, 1, 1)
	require.ErrorContains(t, err, "plans no cell")
}

// TestArrayScript: array.sbatch's key lines (the array of N tasks P at a
// time, one CPU, the memory and time, the logs), and run as bash with a
// binary that prints its arguments, task 1 runs exactly the sweep's
// command line with its shard, one cell at a time and its records file,
// arguments with spaces and quotes intact, and notes its exit status.
func TestArrayScript(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "fake uplink")
	require.NoError(t, os.WriteFile(bin, []byte("#!/bin/sh\nprintf '%s\\n' \"$@\"\nexit 3\n"), 0o755))
	p, err := NewPlan(bin, runCommand, filepath.Join(dir, "sweep"), dir, slurmCells(t), nil, 3, 2)
	require.NoError(t, err)
	script := p.ArrayScript()
	lines := strings.Split(script, "\n")
	for _, want := range []string{
		"#!/bin/bash",
		"#SBATCH --array=0-2%2",
		"#SBATCH --ntasks=1",
		"#SBATCH --cpus-per-task=1",
		fmt.Sprintf("#SBATCH --mem=%dM", p.MemMiB()),
		"#SBATCH --time=" + SlurmTime(p.TimeLimit()),
		"#SBATCH --output=" + filepath.Join(dir, "sweep", "shard-%a.%A.out"),
		"#SBATCH --error=" + filepath.Join(dir, "sweep", "shard-%a.%A.err"),
		"set -euo pipefail",
		`'` + bin + `' run --nodes 12 --knob 'x=it'\''s a b' --seeds 7-12 --shard "$task"/3 --jobs 1 --out "$dir/shard-$task.jsonl" --skip-done`,
	} {
		require.Contains(t, lines, want, script)
	}
	// Slurm writes task 1 of array job 57's stderr where ShardLog says.
	for _, l := range lines {
		if errPath, ok := strings.CutPrefix(l, "#SBATCH --error="); ok {
			require.Equal(t, p.ShardLog(1, "57"), strings.NewReplacer("%a", "1", "%A", "57").Replace(errPath))
		}
	}
	// A split cell asks for a CPU per partition.
	split := slurmCells(t)
	split[1].Partitions = 4
	ps, err := NewPlan(bin, runCommand, filepath.Join(dir, "sweep"), dir, split, nil, 3, 2)
	require.NoError(t, err)
	require.Equal(t, 4, ps.TaskCPUs)
	require.Contains(t, strings.Split(ps.ArrayScript(), "\n"), "#SBATCH --cpus-per-task=4")
	// Every #SBATCH line comes before the first command.
	last := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "set ") })
	for i, l := range lines {
		if strings.HasPrefix(l, "#SBATCH") {
			require.Less(t, i, last, l)
		}
	}

	path := filepath.Join(dir, "array.sbatch")
	require.NoError(t, os.WriteFile(path, []byte(script), 0o644))
	cmd := exec.Command("bash", path)
	cmd.Env = append(os.Environ(), "SLURM_ARRAY_TASK_ID=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, stderr.String())
	require.Equal(t, 3, ee.ExitCode())
	want := append(slices.Clone(runCommand), "--shard", "1/3", "--jobs", "1", "--out", filepath.Join(dir, "sweep", "shard-1.jsonl"), "--skip-done")
	require.Equal(t, strings.Join(want, "\n")+"\n", stdout.String())
	require.Equal(t, TaskExitNote+"3\n", stderr.String())
	require.Equal(t, TaskLog{Ended: true, Exit: 3}, ParseTaskLog(stderr.String()))

	// validate keeps its records in its --cache and always skips them.
	v, err := NewPlan("/opt/uplink", []string{"validate", "--table", "appendix_d_home"}, "/d", "/w", slurmCells(t), nil, 4, 9)
	require.NoError(t, err)
	require.Equal(t, 4, v.Parallel)
	vs := v.ArrayScript()
	require.Contains(t, vs, "#SBATCH --array=0-3%4\n")
	require.Contains(t, vs, "\ncd /w\n")
	require.Contains(t, vs, `/opt/uplink validate --table appendix_d_home --shard "$task"/4 --jobs 1 --cache "$dir/shard-$task.jsonl"`+"\n")
	require.NotContains(t, vs, "--skip-done")
}

// TestMergeScript: merge.sbatch merges every shard's records into
// merged.jsonl under the plan's rule, replacing an earlier merge, and
// checks it; run as bash with a binary that prints its arguments, it
// names each shard's file and notes its exit status; its logs are
// MergeLog's; the submit commands chain it to the array.
func TestMergeScript(t *testing.T) {
	p, err := NewPlan("/opt/uplink", runCommand, "/data/s", "/w", slurmCells(t), nil, 3, 2)
	require.NoError(t, err)
	require.Equal(t, OnConflictRefuse, p.OnConflict)
	lines := strings.Split(p.MergeScript(), "\n")
	for _, want := range []string{
		"#!/bin/bash",
		"#SBATCH --output=/data/s/merge.%j.out",
		"#SBATCH --error=/data/s/merge.%j.err",
		"set -euo pipefail",
		"dir=/data/s",
		`/opt/uplink records merge --on-conflict refuse --force "$dir/merged.jsonl" "$dir"/shard-{0..2}.jsonl`,
		`/opt/uplink records check "$dir/merged.jsonl"`,
	} {
		require.Contains(t, lines, want)
	}
	require.Equal(t, "/data/s/merge.58.err", p.MergeLog("58"))
	require.Equal(t, "array=$(sbatch --parsable /data/s/array.sbatch)\nsbatch --parsable --dependency=afterok:${array%%;*} /data/s/merge.sbatch\n", p.SubmitCommands())
	require.Equal(t, "/data/s/shard-2.jsonl", p.ShardFile(2))
	require.Equal(t, "/data/s/merged.jsonl", p.MergedFile())

	dir := t.TempDir()
	bin := filepath.Join(dir, "uplink")
	require.NoError(t, os.WriteFile(bin, []byte("#!/bin/sh\necho \"$*\"\n"), 0o755))
	for _, c := range []struct {
		shards int
		rule   string
		files  string
	}{{1, OnConflictNewest, "D/shard-0.jsonl"}, {3, "", "D/shard-0.jsonl D/shard-1.jsonl D/shard-2.jsonl"}} {
		p, err := NewPlan(bin, runCommand, filepath.Join(dir, "s"), dir, slurmCells(t), nil, c.shards, 1)
		require.NoError(t, err)
		p.OnConflict = c.rule
		path := filepath.Join(dir, "merge.sbatch")
		require.NoError(t, os.WriteFile(path, []byte(p.MergeScript()), 0o644))
		var stdout, stderr bytes.Buffer
		cmd := exec.Command("bash", path)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Run(), stderr.String())
		rule := cmp.Or(c.rule, OnConflictRefuse)
		want := "records merge --on-conflict " + rule + " --force D/merged.jsonl " + c.files + "\nrecords check D/merged.jsonl\n"
		require.Equal(t, strings.ReplaceAll(want, "D/", p.Dir+"/"), stdout.String())
		require.Equal(t, TaskLog{Ended: true}, ParseTaskLog(stderr.String()))
	}
}

// decodeStrict decodes a Kubernetes object written as YAML into obj
// strictly: sigs.k8s.io/yaml turns it into JSON and refuses a field the
// API type does not have, or one given twice.
func decodeStrict(t *testing.T, doc string, obj any) {
	t.Helper()
	require.NoError(t, k8syaml.UnmarshalStrict([]byte(doc), obj), doc)
}

// TestK8sJob: job.yaml, merge.yaml and claim.yaml decode strictly into
// the Kubernetes API's types (batch/v1 Job, core/v1
// PersistentVolumeClaim): an Indexed Job of one completion per shard, P
// at once, each pod requesting and limited to the task's CPUs, memory
// and time, running the task's command line with its completion index
// and its records on the claim named; a Job that merges every shard's
// records on the claim under the plan's rule and then checks them; and
// the claim, ReadWriteMany, sized for the records.
func TestK8sJob(t *testing.T) {
	cells := slurmCells(t)
	cells[3].Partitions = 2
	p, err := NewPlan("/opt/uplink", runCommand, "/data/s", "/w", cells, nil, 3, 2)
	require.NoError(t, err)
	require.Equal(t, 2, p.TaskCPUs)
	mem := resource.MustParse(fmt.Sprintf("%dMi", p.MemMiB()))
	limits := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: mem}
	mount := []corev1.VolumeMount{{Name: "records", MountPath: K8sMount}}
	volumes := []corev1.Volume{{Name: "records", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "sweep-records"}}}}

	var job batchv1.Job
	decodeStrict(t, p.K8sJob("registry.example/uplink:1", "sweep-records"), &job)
	require.Equal(t, "batch/v1", job.APIVersion)
	require.Equal(t, "Job", job.Kind)
	require.Equal(t, "uplink-s", job.Name)
	require.Equal(t, batchv1.IndexedCompletion, *job.Spec.CompletionMode)
	require.Equal(t, int32(3), *job.Spec.Completions)
	require.Equal(t, int32(2), *job.Spec.Parallelism)
	require.Equal(t, int32(2), *job.Spec.BackoffLimitPerIndex)
	ps := job.Spec.Template.Spec
	require.Equal(t, corev1.RestartPolicyNever, ps.RestartPolicy)
	require.Equal(t, int64(p.TimeLimit()/time.Second), *ps.ActiveDeadlineSeconds)
	require.Empty(t, ps.InitContainers)
	require.Len(t, ps.Containers, 1)
	c := ps.Containers[0]
	require.Equal(t, "registry.example/uplink:1", c.Image)
	require.Equal(t, K8sMount, c.WorkingDir)
	want := append(append([]string{"uplink"}, runCommand...), "--shard", "$(JOB_COMPLETION_INDEX)/3", "--jobs", "1",
		"--out", K8sMount+"/shard-$(JOB_COMPLETION_INDEX).jsonl", "--skip-done")
	require.Equal(t, want, c.Command)
	require.Equal(t, []corev1.EnvVar{
		{Name: "UPLINK_MEM", Value: fmt.Sprintf("%dMiB", p.MemMiB())},
		{Name: "JOB_COMPLETION_INDEX", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
			FieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}},
	}, c.Env)
	uplinkMem, err := des.ParseBytes(c.Env[0].Value, 64<<20, des.MaxBytes)
	require.NoError(t, err, "UPLINK_MEM reads as --mem reads it")
	require.Equal(t, mem.Value(), uplinkMem, "the memory limit")
	require.Equal(t, corev1.ResourceRequirements{Requests: limits, Limits: limits}, c.Resources)
	require.Equal(t, mount, c.VolumeMounts)
	require.Equal(t, volumes, ps.Volumes)

	p.OnConflict = OnConflictNewest
	var merge batchv1.Job
	decodeStrict(t, p.K8sMergeJob("registry.example/uplink:1", "sweep-records"), &merge)
	require.Equal(t, "batch/v1", merge.APIVersion)
	require.Equal(t, "Job", merge.Kind)
	require.Equal(t, "uplink-s-merge", merge.Name)
	require.Nil(t, merge.Spec.CompletionMode)
	require.Equal(t, int32(0), *merge.Spec.BackoffLimit)
	ms := merge.Spec.Template.Spec
	require.Equal(t, corev1.RestartPolicyNever, ms.RestartPolicy)
	require.Len(t, ms.InitContainers, 1)
	require.Len(t, ms.Containers, 1)
	require.Equal(t, []string{"uplink", "records", "merge", "--on-conflict", "newest", "--force", "/sweep/merged.jsonl",
		"/sweep/shard-0.jsonl", "/sweep/shard-1.jsonl", "/sweep/shard-2.jsonl"}, ms.InitContainers[0].Command)
	require.Equal(t, []string{"uplink", "records", "check", "/sweep/merged.jsonl"}, ms.Containers[0].Command)
	mergeMem := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse(fmt.Sprintf("%dMi", p.K8sMergeMiB()))}
	for _, c := range append(ms.InitContainers, ms.Containers...) {
		require.Equal(t, "registry.example/uplink:1", c.Image)
		require.Equal(t, K8sMount, c.WorkingDir)
		require.Equal(t, corev1.ResourceRequirements{Requests: mergeMem, Limits: mergeMem}, c.Resources)
		require.Equal(t, mount, c.VolumeMounts)
	}
	require.Equal(t, volumes, ms.Volumes)
	require.GreaterOrEqual(t, p.K8sMergeMiB(), int64(256))

	var claim corev1.PersistentVolumeClaim
	decodeStrict(t, p.K8sClaim("sweep-records"), &claim)
	require.Equal(t, "v1", claim.APIVersion)
	require.Equal(t, "PersistentVolumeClaim", claim.Kind)
	require.Equal(t, "sweep-records", claim.Name)
	require.Equal(t, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}, claim.Spec.AccessModes)
	storage := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	require.Equal(t, resource.MustParse("1Gi"), storage)
	// 8 cells of 12 and 100 nodes: 3 × 8 × 4 KiB + 3 × (6 × 12 + 2 × 100) KiB, under 1 GiB.
	require.Equal(t, int64(1<<30), p.K8sClaimBytes())
	big := *p
	big.ShardPlans = []ShardPlan{{Keys: make([]string, 1000), Cells: make([]PlannedCell, 1000)}}
	for i := range big.ShardPlans[0].Cells {
		big.ShardPlans[0].Cells[i].Nodes = 1000
	}
	require.Equal(t, int64(3<<30), big.K8sClaimBytes(), "3 × 1000 × (4 + 1000) KiB, rounded up to whole GiB")

	// The decoding is strict: a field the type lacks is refused.
	require.Error(t, k8syaml.UnmarshalStrict([]byte(strings.Replace(p.K8sJob("u", "c"), "completions:", "completion:", 1)), &batchv1.Job{}))
	require.Error(t, k8syaml.UnmarshalStrict([]byte(strings.Replace(p.K8sClaim("c"), "accessModes:", "accessMode:", 1)), &corev1.PersistentVolumeClaim{}))
}

func TestCheckK8sName(t *testing.T) {
	for _, ok := range []string{"records", "sweep-1.records", "a", strings.Repeat("a", 253)} {
		require.NoError(t, CheckK8sName("--k8s-claim", ok), ok)
	}
	for _, bad := range []string{"", "Records", "-records", "records-", "my records", "a_b", strings.Repeat("a", 254)} {
		require.ErrorContains(t, CheckK8sName("--k8s-claim", bad), "is not a Kubernetes name", bad)
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"":             "''",
		"7-12":         "7-12",
		"/a/b_c.jsonl": "/a/b_c.jsonl",
		"a b":          "'a b'",
		"it's":         `'it'\''s'`,
		"$HOME":        "'$HOME'",
		"x;rm":         "'x;rm'",
	} {
		require.Equal(t, want, shellQuote(in), in)
	}
}
