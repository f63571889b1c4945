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
	"go.yaml.in/yaml/v3"

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

// TestK8sJob: job.yaml reads as YAML into an Indexed Job of one
// completion per shard, P at once, each pod requesting one CPU and the
// task's memory and running the task's command line with its completion
// index; its volume an emptyDir, or the claim named.
func TestK8sJob(t *testing.T) {
	p, err := NewPlan("/opt/uplink", runCommand, "/data/s", "/w", slurmCells(t), nil, 3, 2)
	require.NoError(t, err)
	type job struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   struct{ Name string }
		Spec       struct {
			CompletionMode string `yaml:"completionMode"`
			Completions    int
			Parallelism    int
			Template       struct {
				Spec struct {
					RestartPolicy string `yaml:"restartPolicy"`
					Containers    []struct {
						Image      string
						WorkingDir string `yaml:"workingDir"`
						Command    []string
						Env        []struct {
							Name      string
							ValueFrom struct {
								FieldRef struct {
									FieldPath string `yaml:"fieldPath"`
								} `yaml:"fieldRef"`
							} `yaml:"valueFrom"`
						}
						Resources struct {
							Requests map[string]string
						}
						VolumeMounts []struct {
							Name      string
							MountPath string `yaml:"mountPath"`
						} `yaml:"volumeMounts"`
					}
					Volumes []map[string]any
				}
			}
		}
	}
	var j job
	require.NoError(t, yaml.Unmarshal([]byte(p.K8sJob("registry/uplink:1", "")), &j))
	require.Equal(t, "batch/v1", j.APIVersion)
	require.Equal(t, "Job", j.Kind)
	require.Equal(t, "uplink-s", j.Metadata.Name)
	require.Equal(t, "Indexed", j.Spec.CompletionMode)
	require.Equal(t, 3, j.Spec.Completions)
	require.Equal(t, 2, j.Spec.Parallelism)
	ps := j.Spec.Template.Spec
	require.Equal(t, "Never", ps.RestartPolicy)
	require.Len(t, ps.Containers, 1)
	c := ps.Containers[0]
	require.Equal(t, "registry/uplink:1", c.Image)
	require.Equal(t, K8sMount, c.WorkingDir)
	want := append(append([]string{"uplink"}, runCommand...), "--shard", "$(JOB_COMPLETION_INDEX)/3", "--jobs", "1",
		"--out", K8sMount+"/shard-$(JOB_COMPLETION_INDEX).jsonl", "--skip-done")
	require.Equal(t, want, c.Command)
	require.Len(t, c.Env, 1)
	require.Equal(t, "JOB_COMPLETION_INDEX", c.Env[0].Name)
	require.Equal(t, "metadata.annotations['batch.kubernetes.io/job-completion-index']", c.Env[0].ValueFrom.FieldRef.FieldPath)
	require.Equal(t, map[string]string{"cpu": "1", "memory": fmt.Sprintf("%dMi", p.MemMiB())}, c.Resources.Requests)
	require.Len(t, c.VolumeMounts, 1)
	require.Equal(t, K8sMount, c.VolumeMounts[0].MountPath)
	require.Equal(t, []map[string]any{{"name": c.VolumeMounts[0].Name, "emptyDir": map[string]any{}}}, ps.Volumes)

	j = job{}
	require.NoError(t, yaml.Unmarshal([]byte(p.K8sJob("uplink", "sweep-records")), &j))
	require.Equal(t, []map[string]any{{"name": "sweep", "persistentVolumeClaim": map[string]any{"claimName": "sweep-records"}}}, j.Spec.Template.Spec.Volumes)
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
