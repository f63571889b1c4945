package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/spf13/pflag"
	"github.com/uplinksim/uplink/cmd/uplink/internal/bubble"
	"github.com/uplinksim/uplink/internal/outfile"
	"github.com/uplinksim/uplink/protocols/cell"
	"github.com/uplinksim/uplink/sweep"
)

// The child processes of uplink run: each cell runs in its own process
// (uplink cell), fed its configuration on standard input.

type runOpts struct {
	jobs    int
	out     string
	outFlag string // the flag that named out, for its errors ("" reads --out)
	env     []string
	profDir string
	// quiet: the cells print no phase or progress lines (uplink cell
	// --quiet); else each prints its progress line every progressEvery
	// (cell.Config.ProgressEvery; 0: never).
	quiet         bool
	progressEvery time.Duration
	// obs: the folders of run's --trace, --pcap and --plot; each cell
	// writes into a folder of its own in each (cellDir).
	obs observePlan
	// mem is --mem (memBudget) and the cells' soft memory limit: a cell
	// starts only while the estimated memory of the cells running, its
	// own added, fits in the budget (memGate).
	mem memOpts
	// known are records made before the sweep (a validate's cache and
	// reused files): the estimates learn from them (sweep.Estimator).
	known []*cell.Record
	// labels are the variants of a --vary grid's or a study's cells, by
	// key (variantLabels): the cells' lines name them.
	labels map[string][]string
}

// cellDir is the folder of a cell's trace, captures and figures under
// run's --trace, --pcap and --plot: arm-profile-seedN-key.
func cellDir(c cell.Config) string {
	name := fmt.Sprintf("%s-%s-seed%d-%s", cmp.Or(c.Arm, "whole"), c.Profile.Name, c.Seed, c.Key())
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_' {
			return r
		}
		return '_'
	}, name)
}

// runCells runs the cells in child processes, appending each record to
// o.out as it arrives, with progress on stderr. It returns the records in
// the order of cfgs (nil where a cell failed or was not run). A record
// that cannot be written stops the other cells and fails the run. The ETA
// it prints is sweepETA's.
func runCells(cfgs []cell.Config, o runOpts, stderr io.Writer) ([]*cell.Record, error) {
	jobs, outFlag := o.jobs, cmp.Or(o.outFlag, "--out")
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("run: finding the uplink binary to run cells: %w", err)
	}
	var outFile *os.File
	if o.out != "" {
		if outFile, err = openRecordFile(o.out); err != nil {
			return nil, fmt.Errorf("%s %s: %w", outFlag, o.out, err)
		}
		defer outFile.Close()
	}
	// Each cell runs in a network namespace of its own where the machine
	// allows it, so that its hosts see no real interface.
	isolate := true
	if err := netIsolation(self); err != nil {
		isolate = false
		fmt.Fprintf(stderr, "uplink: warning: cells run in this machine's network namespace, so go-libp2p may list its interfaces (%v)\n", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// SIGINT and SIGTERM stop the cells; the first one received is
	// reported in the error (interruptedError).
	var caught atomic.Pointer[os.Signal]
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		select {
		case s := <-sigs:
			caught.Store(&s)
			cancel()
		case <-ctx.Done():
		}
	}()
	mem, memSource, err := memBudget(o.mem.budget)
	if err != nil {
		return nil, err
	}
	// Estimates learn from the records at hand and from each cell that
	// finishes: the first cell of a kind never measured sizes the rest.
	estimator := sweep.NewEstimator(o.known)
	wall, rss := cellEstimates(cfgs, estimator, o.mem.limit)
	gate := newMemGate(jobs, mem)
	est := aloneWeights(wall, rss, jobs, mem)
	finished := make([]bool, len(cfgs))
	under := cellsUnder(cfgs, o.labels)
	eta, how := sweepETA(est, finished, jobs, 0)
	at := fmt.Sprintf("%d at a time", min(jobs, len(cfgs)))
	if mem > 0 && jobs > 1 && len(cfgs) > 1 {
		at = fmt.Sprintf("up to %d at a time while their estimated memory fits in %s (%s)", min(jobs, len(cfgs)), fmtGiB(mem), memSource)
	}
	fmt.Fprintf(stderr, "cells: %d to run, %s; ETA %s (%s)\n", len(cfgs), at, eta.Round(time.Second), how)
	start := time.Now()
	type result struct {
		i   int
		rec *cell.Record
		err error
	}
	results := make(chan result)
	var wg sync.WaitGroup
	var mu sync.Mutex // stderr lines
	go func() {
		waiting := make([]int, len(cfgs)) // indices into cfgs, in order
		for i := range waiting {
			waiting[i] = i
		}
		for len(waiting) > 0 {
			k, counted, ok := gate.admit(ctx, len(waiting), func(k int) int64 {
				return estimator.PlannedCost(cfgs[waiting[k]], o.mem.limit).RSS
			})
			if !ok {
				wg.Wait()
				close(results)
				return
			}
			i := waiting[k]
			c := cfgs[i]
			waiting = slices.Delete(waiting, k, k+1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer gate.release(counted)
				var args []string
				if o.profDir != "" {
					args = []string{"--profile-prefix", filepath.Join(o.profDir, fmt.Sprintf("cell-%s-%s-%d", c.Arm, c.Profile.Name, c.Seed))}
				}
				if o.quiet {
					args = append(args, "--quiet")
				}
				for _, d := range []struct{ flag, dir string }{{"--trace-dir", o.obs.traceDir}, {"--pcap-dir", o.obs.pcapDir}, {"--plot-dir", o.obs.plotDir}} {
					if d.dir != "" {
						args = append(args, d.flag, filepath.Join(d.dir, cellDir(c)))
					}
				}
				c.ProgressEvery = o.progressEvery
				rec, err := runChild(ctx, self, c, o.env, args, isolate, func(line string) {
					mu.Lock()
					fmt.Fprintf(stderr, "[%s %s seed %d%s] %s\n", c.Arm, c.Profile.Name, c.Seed, under[i], line)
					mu.Unlock()
				})
				estimator.Add(rec) // before the release lets the next cell ask
				results <- result{i, rec, err}
			}()
		}
		wg.Wait()
		close(results)
	}()
	recs := make([]*cell.Record, len(cfgs))
	var failures []string
	var writeErr error
	done := 0
	for r := range results {
		done++
		finished[r.i] = true
		if r.err != nil {
			failures = append(failures, fmt.Sprintf("%s %s seed %d: %v", cfgs[r.i].Arm, cfgs[r.i].Profile.Name, cfgs[r.i].Seed, r.err))
			continue
		}
		recs[r.i] = r.rec
		if outFile != nil && writeErr == nil {
			if err := appendRecord(outFile, r.rec); err != nil {
				writeErr = fmt.Errorf("%s %s: writing the record of %s %s seed %d: %w; the other cells were stopped",
					outFlag, o.out, r.rec.Arm, r.rec.Profile, r.rec.Seed, err)
				cancel()
			}
		}
		el := time.Since(start)
		eta, how := sweepETA(est, finished, jobs, el)
		mu.Lock()
		fmt.Fprintf(stderr, "done %d/%d cells (%s %s seed %d%s: p50 %s, wall %.1f s); elapsed %s, ETA %s (%s)\n",
			done, len(cfgs), r.rec.Arm, r.rec.Profile, r.rec.Seed, under[r.i], fmtS(r.rec.P50S), r.rec.WallS, el.Round(time.Second), eta.Round(time.Second), how)
		mu.Unlock()
	}
	if outFile != nil {
		if err := outFile.Close(); err != nil && writeErr == nil {
			writeErr = fmt.Errorf("%s %s: %w", outFlag, o.out, outfile.Cause(err))
		}
	}
	if writeErr != nil {
		return recs, writeErr
	}
	if s := caught.Load(); s != nil {
		return recs, interruptedError{*s}
	}
	if len(failures) > 0 {
		return recs, fmt.Errorf("%d of %d cells failed:\n  %s", len(failures), len(cfgs), strings.Join(failures, "\n  "))
	}
	return recs, nil
}

// interruptedError is a sweep stopped by a signal (SIGINT, SIGTERM): the
// command exits 128 plus the signal's number, as a shell reports a
// process the signal ended.
type interruptedError struct{ sig os.Signal }

func (e interruptedError) Error() string {
	return "interrupted; the records written so far are complete"
}

// exitCode is 128 plus the signal's number: 130 for SIGINT, 143 for
// SIGTERM.
func (e interruptedError) exitCode() int {
	if s, ok := e.sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 1
}

// appendRecord appends rec to a records file as one line, in one write.
func appendRecord(f *os.File, rec *cell.Record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	return outfile.Cause(err)
}

// runChild runs one cell in a child process and returns its record with the
// child's peak RSS.
func runChild(ctx context.Context, self string, c cell.Config, env, args []string, isolate bool, progress func(string)) (*cell.Record, error) {
	in, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encoding the cell: %w", err)
	}
	out, state, err := runProcess(ctx, self, append([]string{"cell"}, args...), env, in, isolate, progress)
	if err != nil {
		return nil, err
	}
	var rec cell.Record
	if err := json.Unmarshal(out, &rec); err != nil {
		return nil, fmt.Errorf("reading the cell's record: %w", err)
	}
	if ru, ok := state.SysUsage().(*syscall.Rusage); ok {
		rec.MaxRSSKB = ru.Maxrss
	}
	rec.HugePages = hugePageMode()
	rec.GOGC = envInt(env, "GOGC")
	rec.GOMAXPROCS = envInt(env, "GOMAXPROCS")
	rec.MemLimit = envMemLimit(env)
	rec.Host = thisHost()
	return &rec, nil
}

// thisHost is the machine the cells run on: the CPUs this process may use
// and the memory (MemTotal, 0 where it cannot be read).
func thisHost() *cell.Host {
	h := &cell.Host{CPUs: runtime.NumCPU()}
	if kb, ok := meminfoKB("MemTotal"); ok {
		h.MemGiB = math.Round(float64(kb)/(1<<20)*10) / 10
	}
	return h
}

// envMemLimit is the soft memory limit an environment sets (its last
// GOMEMLIMIT=, in bytes or with the runtime's suffixes B, KiB, MiB, GiB,
// TiB), 0 where it sets none, "off" or one the runtime would not read.
func envMemLimit(env []string) int64 {
	for _, kv := range slices.Backward(env) {
		v, ok := strings.CutPrefix(kv, "GOMEMLIMIT=")
		if !ok {
			continue
		}
		num, mult := v, int64(1)
		for _, u := range []struct {
			suffix string
			mult   int64
		}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}} {
			if n, ok := strings.CutSuffix(v, u.suffix); ok {
				num, mult = n, u.mult
				break
			}
		}
		b, err := strconv.ParseInt(num, 10, 64)
		if err != nil || b <= 0 || b > math.MaxInt64/mult {
			return 0
		}
		return b * mult
	}
	return 0
}

// envInt is the positive integer an environment sets for name (its last
// name=), 0 where it sets none or not a positive integer (GOGC=off).
func envInt(env []string, name string) int {
	for _, kv := range slices.Backward(env) {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			if g, err := strconv.Atoi(v); err == nil && g > 0 {
				return g
			}
			return 0
		}
	}
	return 0
}

// thpEnabled is Linux's transparent huge page setting.
const thpEnabled = "/sys/kernel/mm/transparent_hugepage/enabled"

// hugePageMode is the host's transparent huge page mode, the bracketed
// word of thpEnabled ("always", "madvise" or "never"), or "" where it
// cannot be read. With "always" a cell's heap takes 2 MiB pages: fewer
// page faults and less CPU, more resident memory (BENCHMARKS.md).
func hugePageMode() string {
	b, err := os.ReadFile(thpEnabled)
	if err != nil {
		return ""
	}
	return bracketed(string(b))
}

// bracketed returns the word a sysfs choice file marks as chosen, as in
// "always [madvise] never", or "".
func bracketed(s string) string {
	_, rest, ok := strings.Cut(s, "[")
	word, _, ok2 := strings.Cut(rest, "]")
	if !ok || !ok2 {
		return ""
	}
	return word
}

// maxShownLine is how much of one line of a child's standard error is
// shown and kept; the rest is read and counted.
const maxShownLine = 4 << 10

// tailLines is how many of a child's last lines of standard error an
// error quotes.
const tailLines = 20

// runProcess runs path with args in a child process with env and stdin,
// and returns its standard output and its state once it has exited. Each
// line of its standard error goes to progress as it comes, cut to
// maxShownLine bytes; the last lines are quoted in the error of a failed
// child. The child dies with the parent (setChildProcess), and with
// isolate starts in a network namespace of its own; when ctx is done, and
// whenever runProcess returns, the child's whole process group is killed.
func runProcess(ctx context.Context, path string, args, env []string, stdin []byte, isolate bool, progress func(string)) (stdout []byte, state *os.ProcessState, err error) {
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = env
	cmd.Stdin = bytes.NewReader(stdin)
	var outBuf bytes.Buffer
	cmd.Stdout = &outBuf
	// Not a pipe read here: exec copies the child's standard error to the
	// line writer until EOF, so the child never blocks on a full pipe.
	lines := &lineWriter{emit: progress}
	cmd.Stderr = lines
	setChildProcess(cmd, isolate)
	// Bounds the wait for the output copies once the child has exited,
	// should anything else hold its pipes open.
	cmd.WaitDelay = 5 * time.Second
	// The parent-death signal is tied to the thread that starts the child:
	// keep this goroutine on that thread until the child has been waited
	// for, so the thread does not exit under a running child.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("starting %s: %w", path, err)
	}
	// Whatever way this returns (an error, a panic), nothing the child
	// started outlives it.
	defer killChildGroup(cmd)
	err = cmd.Wait()
	lines.flush()
	if err != nil {
		return nil, cmd.ProcessState, fmt.Errorf("%v; last lines:\n%s", err, strings.Join(lines.tail, "\n"))
	}
	return outBuf.Bytes(), cmd.ProcessState, nil
}

// lineWriter splits what is written to it into lines of any length, hands
// each to emit cut to maxShownLine bytes (with a note of how much was
// cut), and keeps the last tailLines of them.
type lineWriter struct {
	emit func(string)
	buf  []byte // the current line's first bytes, at most maxShownLine
	cut  int    // the current line's bytes beyond buf
	tail []string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		part := p
		if i >= 0 {
			part = p[:i]
		}
		keep := min(len(part), maxShownLine-len(w.buf))
		w.buf = append(w.buf, part[:keep]...)
		w.cut += len(part) - keep
		if i < 0 {
			break
		}
		w.endLine()
		p = p[i+1:]
	}
	return n, nil
}

// flush ends a last line that has no newline.
func (w *lineWriter) flush() {
	if len(w.buf) > 0 || w.cut > 0 {
		w.endLine()
	}
}

func (w *lineWriter) endLine() {
	b, cut := w.buf, w.cut
	if cut > 0 {
		// Cut at a character boundary.
		for k := 1; k < utf8.UTFMax && k <= len(b); k++ {
			if utf8.RuneStart(b[len(b)-k]) {
				if !utf8.FullRune(b[len(b)-k:]) {
					cut += k
					b = b[:len(b)-k]
				}
				break
			}
		}
	}
	line := string(b)
	if cut > 0 {
		line += fmt.Sprintf(" [... %d more bytes of this line not shown]", cut)
	}
	w.buf, w.cut = w.buf[:0], 0
	w.tail = append(w.tail, line)
	if len(w.tail) > tailLines {
		w.tail = w.tail[1:]
	}
	if w.emit != nil {
		w.emit(line)
	}
}

// cmdCell runs one cell given as JSON on stdin and writes its record as
// JSON to stdout: the child side of uplink run.
func cmdCell(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("uplink cell", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	quiet := fs.Bool("quiet", false, "print no phase or progress lines (errors and warnings still go to standard error)")
	prefix := fs.String("profile-prefix", "", "write a CPU profile per phase to PREFIX-PHASE.cpu.prof the heap at the end of the delivery to PREFIX-delivery.heap.prof, and the heap at the delivery's largest live heap to PREFIX-delivery-peak.heap.prof")
	traceDir := fs.String("trace-dir", "", "write the trace of the configuration's Trace into this folder (created if missing): node-N.csv per node")
	pcapDir := fs.String("pcap-dir", "", "write the captures of the configuration's Captures into this folder (created if missing): node-N.pcapng per node")
	plotDir := fs.String("plot-dir", "", "write the cell's completion CDF into this folder (created if missing): completion-cdf.svg and .png")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{errors.New("cell: takes a JSON cell configuration on standard input (it is run by uplink run)")}
	}
	var c cell.Config
	if err := json.NewDecoder(stdin).Decode(&c); err != nil {
		return fmt.Errorf("cell: reading the configuration: %w", err)
	}
	c.Wait = synctest.Wait
	out, err := newCellOutputs(&c, *traceDir, *pcapDir, *plotDir)
	if err != nil {
		return err
	}
	defer out.discard() // on the error paths; after commit it removes nothing
	// The phase lines come from inside the bubble, the progress lines from
	// the watcher outside it: one writer orders them.
	stderr = &syncWriter{w: stderr}
	if !*quiet {
		c.Progress = stderr
		if c.ProgressEvery > 0 {
			c.Watch = &cell.Watch{}
			stop := watchCell(c.Watch, c.ProgressEvery, stderr)
			defer stop()
		}
	}
	finishProfiles := func() error { return nil }
	if *prefix != "" {
		hook, stop, err := phaseProfiler(*prefix)
		if err != nil {
			return fmt.Errorf("cell: profiles: %w", err)
		}
		defer stop() // on the error paths; the cell's error is then the one reported
		c.PhaseHook = hook
		finishProfiles = func() error {
			if err := stop(); err != nil {
				return fmt.Errorf("cell: profiles: %w", err)
			}
			return nil
		}
	}
	// finish hands a complete record over: the profiles written (one that
	// could not be fails the cell), the cell's files committed, the record
	// printed.
	finish := func(rec *cell.Record) error {
		if err := finishProfiles(); err != nil {
			return err
		}
		if err := out.commit(rec); err != nil {
			return err
		}
		return json.NewEncoder(stdout).Encode(rec)
	}
	var rec *cell.Record
	if c.Partitions > 1 {
		err := bubble.RunSplit(func(enter bubble.Enter) error {
			var err error
			rec, err = cell.RunSplit(c, enter)
			return err
		})
		if err != nil {
			return err
		}
		return finish(rec)
	}
	err = bubble.Run(func(*testing.T) error {
		var err error
		rec, err = cell.Run(c)
		if errors.Is(err, cell.ErrTeardownStuck) && rec != nil {
			// The record is complete but the bubble cannot end: its
			// goroutines still run. Hand the record over and leave.
			fmt.Fprintf(stderr, "warning: %v; the record is written, teardown_s is 0\n", err)
			if err := finish(rec); err != nil {
				fmt.Fprintf(stderr, "uplink: %v\n", err)
				os.Exit(1)
			}
			os.Exit(0)
		}
		return err
	})
	if err != nil {
		return err
	}
	return finish(rec)
}
