package main

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/protocols/cell"
	"github.com/uplinksim/uplink/sweep"
)

// memHelp describes --mem (run and validate).
const memHelp = "memory the cells may use at once, e.g. 20GiB (default: $UPLINK_MEM where set, else the machine's available memory, MemAvailable in /proc/meminfo): a cell starts only while its estimated memory fits beside the cells running, else it waits for them and runs alone, and a later cell that fits and cannot delay it may start meanwhile (estimates by sweep.EstimateCost: the measured peak of the nearest kind of cell in results/resources.md, else cell.EstimateMemory; a validate sweep also learns from its cache and reused records, and every sweep from the cells it finishes; under --memlimit, at most that limit plus a quarter); a cell that needs more than this alone, or more than the memory of the machine it runs on (MemTotal in /proc/meminfo) whatever --mem says, is refused before the sweep starts, or left out with --skip-over-mem"

// checkCells makes, before any cell starts, every check a cell process
// would make of its configuration, and checks each cell's memory: a cell
// that needs more than the memory alone (checkMemory) refuses the sweep,
// or with skipBig is left out of it, named on w with its estimate. It
// returns the cells to run. Its errors are usage errors naming the cell.
func checkCells(cfgs []cell.Config, m memOpts, skipBig bool, w io.Writer) ([]cell.Config, error) {
	// The memory first: it is the cheaper check, and names the size.
	if skipBig {
		fit, err := skipOverMemory(cfgs, m, w)
		if err != nil {
			return nil, err
		}
		cfgs = fit
	} else if err := checkMemory(cfgs, m); err != nil {
		return nil, err
	}
	for _, c := range cfgs {
		if err := c.Check(); err != nil {
			return nil, usageError{fmt.Errorf("cell %s: %w", cellName(c), err)}
		}
	}
	return cfgs, nil
}

// checkMemory checks that the largest of the cells fits in memory
// (m.memory: --mem, or the machine's available memory, never more than
// m.machine), each cell's memory its sweep.EstimateCost: measured where
// the committed resource table has its kind. Cells that do not fit beside
// one another are not refused: the sweep runs them fewer at a time
// (memGate).
func checkMemory(cfgs []cell.Config, m memOpts) error {
	_, over, mem, source, capped, err := splitByMemory(cfgs, m)
	if err != nil || len(over) == 0 {
		return err
	}
	big := slices.MaxFunc(over, func(a, b overCell) int { return cmp.Compare(a.need, b.need) })
	n, degree := big.cfg.Size()
	need, have := fmtOver(big.need, mem)
	state := "state the memory with --mem"
	if capped {
		state = "run it on a machine with more memory (uplink slurm)"
	}
	skip := ", or leave such cells out with --skip-over-mem"
	if m.noSkip {
		skip = ""
	}
	return usageError{fmt.Errorf("a cell of %d nodes at degree %d with a %s payload needs about %s (%s); %s is %s: use fewer nodes or a smaller degree, %s, %s%s",
		n, degree, des.FormatBytes(int64(big.cfg.Payload)), need, m.estimateWords(), source, have, state, m.limitAdvice(), skip)}
}

// skipOverMemory returns the cells that fit in memory alone, in their
// order, and names each one left out on w with its estimate and the
// memory it exceeds.
func skipOverMemory(cfgs []cell.Config, m memOpts, w io.Writer) ([]cell.Config, error) {
	fit, over, mem, source, _, err := splitByMemory(cfgs, m)
	for _, o := range over {
		n, degree := o.cfg.Size()
		need, have := fmtOver(o.need, mem)
		fmt.Fprintf(w, "--skip-over-mem: not running %s (%d nodes, degree %d, %s payload): needs about %s (%s), %s is %s\n",
			cellName(o.cfg), n, degree, des.FormatBytes(int64(o.cfg.Payload)), need, m.estimateWords(), source, have)
	}
	return fit, err
}

// cellName names a cell in a message: its arm, profile, transport when not
// QUIC, warm-up when it has one, seed and key (which tells apart a study's
// variants that differ only in knobs).
func cellName(c cell.Config) string {
	name := cmp.Or(c.Arm, "whole") + " " + c.Profile.Name
	if c.Transport != "" && c.Transport != "quic" {
		name += " " + c.Transport
	}
	if w := c.Warmup.String(); w != "" {
		name += " warm-up " + w
	}
	return fmt.Sprintf("%s seed %d [%s]", name, c.Seed, c.Key())
}

// overCell is a cell that needs more than the memory alone.
type overCell struct {
	cfg  cell.Config
	need int64 // memOpts.need: the planned peak RSS
}

// memOpts is what a sweep is told of memory: budget is --mem
// (memBudget), and limit the soft memory limit its cells run under
// (--memlimit or GOMEMLIMIT, in bytes; 0 for none), which caps the
// memory planned for each (sweep.LimitedPeak). machine is the memory of
// the machine the cells run on (machineMemory: MemTotal), which no cell
// can exceed whatever the budget says; 0 where it is unknown, or where
// the cells are only listed or planned for other machines (uplink slurm).
type memOpts struct {
	budget  string
	limit   int64
	machine int64
	// noSkip: the sweep cannot leave a cell out (uplink slurm refuses
	// --skip-over-mem), so a refusal does not suggest it.
	noSkip bool
}

// machineMemory is this machine's memory, MemTotal in /proc/meminfo, in
// bytes; 0 where it cannot be read.
func machineMemory() int64 {
	if kb, ok := meminfoKB("MemTotal"); ok && kb > 0 {
		return kb << 10
	}
	return 0
}

// memory is the memory one cell may use alone: the budget (memBudget),
// held to the machine's memory where that is less, with words naming
// where it came from; capped tells that the machine's memory held it.
func (m memOpts) memory() (mem int64, source string, capped bool, err error) {
	mem, source, err = memBudget(m.budget)
	if err != nil {
		return 0, "", false, err
	}
	if m.machine > 0 && (mem == 0 || m.machine < mem) {
		if mem > 0 {
			source = fmt.Sprintf("this machine's memory (MemTotal in /proc/meminfo, less than the %s of %s)", fmtGiB(mem), source)
		} else {
			source = "this machine's memory (MemTotal in /proc/meminfo)"
		}
		return m.machine, source, true, nil
	}
	return mem, source, false, nil
}

// need is the memory planned for cell c: sweep.EstimateCost's peak, held
// to the soft limit's sweep.LimitedPeak.
func (m memOpts) need(c cell.Config) int64 {
	return sweep.LimitedPeak(sweep.EstimateCost(c).RSS, m.limit)
}

// estimateWords names how a cell's memory was estimated, for messages.
func (m memOpts) estimateWords() string {
	if m.limit > 0 {
		return fmt.Sprintf("sweep.EstimateCost, at most the soft limit %s plus a quarter: sweep.LimitedPeak", fmtGiB(m.limit))
	}
	return "sweep.EstimateCost"
}

// limitAdvice is the refusal's advice on the soft memory limit.
func (m memOpts) limitAdvice() string {
	if m.limit > 0 {
		return "lower --memlimit (the collector then works harder, and a limit under the cell's live heap does not hold)"
	}
	return "run the cells under a soft memory limit with --memlimit"
}

// splitByMemory splits the cells, in their order, into those whose
// planned memory (m.need) fits in memory alone (m.memory: m.budget, or
// the machine's available memory, held to m.machine; named by source)
// and those over it. With no memory figure (not Linux, and no --mem)
// every cell fits.
func splitByMemory(cfgs []cell.Config, m memOpts) (fit []cell.Config, over []overCell, mem int64, source string, capped bool, err error) {
	if len(cfgs) == 0 {
		return nil, nil, 0, "", false, nil
	}
	if mem, source, capped, err = m.memory(); err != nil || mem == 0 {
		return cfgs, nil, mem, source, capped, err
	}
	for _, c := range cfgs {
		if need := m.need(c); need > mem {
			over = append(over, overCell{c, need})
		} else {
			fit = append(fit, c)
		}
	}
	return fit, over, mem, source, capped, nil
}

// memEnv names the environment variable that, where set, stands for
// --mem when the flag is not given: the memory of a shared machine or of
// a batch job's allocation, stated once for every command.
const memEnv = "UPLINK_MEM"

// memBudget is --mem, or else $UPLINK_MEM, or else the machine's
// available memory (0 where /proc/meminfo cannot be read), with words
// naming where it came from.
func memBudget(memS string) (int64, string, error) {
	if memS != "" {
		b, err := flagSize("mem", memS, 64<<20, des.MaxBytes)
		return b, "--mem", err
	}
	if v := os.Getenv(memEnv); v != "" {
		b, err := des.ParseBytes(v, 64<<20, des.MaxBytes)
		if err != nil {
			return 0, "", usageError{fmt.Errorf("%s (the default of --mem): %w", memEnv, err)}
		}
		return b, memEnv, nil
	}
	if kb, ok := meminfoKB("MemAvailable"); ok {
		return kb << 10, "the machine's available memory", nil
	}
	return 0, "", nil
}

// meminfoKB reads one field of /proc/meminfo, in KiB; false where the
// file or the field cannot be read.
func meminfoKB(field string) (int64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb, err == nil
		}
	}
	return 0, false
}

func fmtGiB(b int64) string { return gib(b, 1) }

// gib formats a byte count in GiB with d decimals.
func gib(b int64, d int) string { return fmt.Sprintf("%.*f GiB", d, float64(b)/(1<<30)) }

// fmtOver formats a cell's need and the memory it exceeds with as many
// decimals as it takes to tell them apart (up to three, then bytes), so a
// refusal never reads "needs about 14.1 GiB; --mem is 14.1 GiB".
func fmtOver(need, mem int64) (string, string) {
	for d := 1; d <= 3; d++ {
		if a, b := gib(need, d), gib(mem, d); a != b {
			return a, b
		}
	}
	return fmt.Sprintf("%d bytes", need), fmt.Sprintf("%d bytes", mem)
}
