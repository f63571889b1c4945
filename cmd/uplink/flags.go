package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/protocols/arms"
	"github.com/uplinksim/uplink/protocols/cell"
)

// The --help headings of run's and validate's flags.
const (
	groupReplay   = "table or study"
	groupCell     = "cell"
	groupNet      = "network and queues"
	groupProtocol = "protocol"
	groupOutput   = "output"
	groupPerf     = "performance"
)

// flagGroups are a command's flags under their --help headings: a FlagSet
// per heading, all added to the command's FlagSet before it parses (pflag
// has no groups of its own).
type flagGroups struct {
	fs       *pflag.FlagSet
	synopsis string
	headings []string
	sets     map[string]*pflag.FlagSet
}

// newFlagGroups starts the flags of command (uplink COMMAND), whose
// --help prints synopsis and then the flags under headings, in order.
func newFlagGroups(command, synopsis string, stdout io.Writer, headings ...string) *flagGroups {
	g := &flagGroups{fs: pflag.NewFlagSet("uplink "+command, pflag.ContinueOnError), synopsis: synopsis, headings: headings, sets: map[string]*pflag.FlagSet{}}
	for _, h := range headings {
		g.sets[h] = pflag.NewFlagSet(h, pflag.ContinueOnError)
	}
	g.fs.Usage = func() { g.printUsage(stdout) }
	return g
}

// group is the FlagSet of heading, one of the command's headings.
func (g *flagGroups) group(heading string) *pflag.FlagSet {
	s, ok := g.sets[heading]
	if !ok {
		panic("uplink: no flag heading " + heading)
	}
	return s
}

// parse parses args into the groups' flags; help is true when --help
// asked for the usage, which it has printed.
func (g *flagGroups) parse(args []string, stderr io.Writer) (help bool, err error) {
	for _, h := range g.headings {
		g.fs.AddFlagSet(g.sets[h])
	}
	g.fs.SetOutput(stderr)
	if err := g.fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return true, nil
		}
		return false, usageError{err}
	}
	return false, nil
}

// printUsage writes the synopsis and each heading's flags.
func (g *flagGroups) printUsage(w io.Writer) {
	fmt.Fprintf(w, "Usage: %s\n\n%s\n", g.fs.Name()+" [flags]", g.synopsis)
	for _, h := range g.headings {
		if !g.sets[h].HasFlags() {
			continue
		}
		fmt.Fprintf(w, "\n%s%s:\n%s", strings.ToUpper(h[:1]), h[1:], g.sets[h].FlagUsages())
	}
}

// commonFlags are the flags run and validate share, each defined once
// here: its name, default and help.
type commonFlags struct {
	seeds                              string
	knobs, gossip                      []string
	wireEncoding, network, countsAt    string
	jobs, gomaxprocs, setupProcs, gogc int
	partitions                         int
	setupQuantum, progressEvery        time.Duration
	memLimit, mem, shard               string
	listCells, quiet, skipOverMem      bool
	seedsRequired                      bool
}

// commonDefaults are where run's and validate's common flags differ on
// purpose.
type commonDefaults struct {
	// seeds is --seeds' default and seedsHelp its help: run's cells are
	// seed 7 by default; validate's --seeds replaces a table's or study's
	// own seeds, so it has none. seedsRequired refuses an empty --seeds.
	seeds, seedsHelp string
	seedsRequired    bool
	// knobOrder ends --knob's help: where the overrides apply.
	knobOrder string
}

// Helps of the common flags that other commands' texts cite.
const (
	shardHelp     = "run only shard I of N of the sweep's cells (I from 0 to N-1): a cost-balanced, deterministic subset, e.g. 0/4; give each shard its own records file"
	listCellsHelp = "print the sweep's cells (after --shard) with their keys and estimated wall time and memory, and exit"
	networkHelp   = "network the cells run on: uplink (uplink's own model) or simnet (go-libp2p's simnet, github.com/marcopolo/simnet, the study's harness network: QUIC only, the harness profile's network knobs, no --qdisc-file, no --setup-quantum; its records list what it does not model)"
	// setupQuantumHelp describes --setup-quantum.
	partitionsHelp   = "split each cell's nodes over this many partitions, each on a core of its own, advancing in lock-step windows 1ns under the smallest one-way latency between them (docs/model.md, Partitions); 1: one bubble. Part of the cell key and recorded as partitions"
	setupQuantumHelp = "fidelity setting: during setup (hosts, dial, mesh formation) real code sees the network only at multiples of this, e.g. 1ms, so setup runs on --setup-procs cores; every latency seen in setup is rounded up to it; 0 keeps setup exact. Recorded as setup_quantum_s"
)

// The values of --network.
const (
	networkUplink = "uplink"
	networkSimnet = "simnet"
)

// register defines the common flags under their headings.
func (c *commonFlags) register(g *flagGroups, d commonDefaults) {
	c.seedsRequired = d.seedsRequired
	g.group(groupCell).StringVar(&c.seeds, "seeds", d.seeds, d.seedsHelp)

	g.group(groupNet).StringVar(&c.network, "network", networkUplink, networkHelp)
	g.group(groupNet).StringArrayVar(&c.knobs, "knob", nil, "override a profile knob in every cell, name=value (repeatable; uplink run --list-knobs lists them with each profile's value); "+d.knobOrder)

	proto := g.group(groupProtocol)
	proto.StringArrayVar(&c.gossip, "gossip", nil, "override a gossipsub knob the study leaves open, name=value (repeatable): Dlazy, gossip-factor, history-gossip, gossip-retransmission, flood-publish")
	proto.StringVar(&c.wireEncoding, "wire-encoding", "snappy", "how each gossip message goes on the wire: snappy (the study's gossip encoder: snappy-compressed, the whole message carrying the mainnet-like payload) or raw (the units sent uncompressed, the whole message as random bytes)")

	out := g.group(groupOutput)
	out.StringVar(&c.countsAt, "counts-at", cell.CountsLastCompletion, "when a cell reads its counts (duplicates, bytes, drops, queues): last-completion (at the last receiver's completion) or window-end (at the end of --window, whatever the completions; the cell runs the whole window). Completion times do not depend on it; window-end is part of the cell key")
	out.BoolVar(&c.listCells, "list-cells", false, listCellsHelp)
	out.BoolVar(&c.quiet, "quiet", false, quietHelp)
	out.DurationVar(&c.progressEvery, "progress-every", cell.DefaultProgressEvery, progressEveryHelp)

	perf := g.group(groupPerf)
	perf.IntVar(&c.jobs, "jobs", 2, "cells run in parallel, one process each")
	perf.StringVar(&c.shard, "shard", "", shardHelp)
	perf.StringVar(&c.mem, "mem", "", memHelp)
	perf.BoolVar(&c.skipOverMem, "skip-over-mem", false, "leave out the cells that need more than --mem alone, each named with its estimate (a table or study prints them as not run), instead of refusing the sweep")
	perf.IntVar(&c.partitions, "partitions", 1, partitionsHelp)
	perf.IntVar(&c.gomaxprocs, "gomaxprocs", 0, "GOMAXPROCS of each cell process during mesh formation and delivery (one core per cell, or per partition, is fastest, except for a cell pressing against --memlimit: there 2 lets the collector work on the second core, BENCHMARKS.md); 0: --partitions")
	perf.IntVar(&c.setupProcs, "setup-procs", runtime.NumCPU(), "GOMAXPROCS of each cell process while it builds hosts and dials (TLS handshakes parallelise)")
	perf.DurationVar(&c.setupQuantum, "setup-quantum", 0, setupQuantumHelp)
	perf.IntVar(&c.gogc, "gogc", 100, "GOGC of each cell process: the memory estimates (results/resources.md) were measured at 100; 400 holds about a fifth more memory for no CPU saved, 25 about an eighth less for an eighth more CPU (BENCHMARKS.md)")
	perf.StringVar(&c.memLimit, "memlimit", "", "soft memory limit of each cell process (GOMEMLIMIT, e.g. 7GiB): the GC works harder near it, and --mem plans for each cell at most this plus a quarter (sweep.LimitedPeak)")
}

// sweepSettings are the common flags read and checked: what run and
// validate both need.
type sweepSettings struct {
	seeds        []uint64 // nil for an empty --seeds
	knobs        []string // checked against a profile
	gossip       cell.Gossip
	encoding     arms.Encoding
	countsAt     string // cell.Config.CountsAt: "" or cell.CountsWindowEnd
	backend      string // cell.Config.Backend: "" or cell.BackendSimnet
	setupQuantum des.Time
	setupProcs   int
	partitions   int // cell.Config.Partitions: 0 for one bubble
	mem          memOpts
	skipOverMem  bool // --skip-over-mem: leave out cells over mem rather than refuse
	shard        string
	listCells    bool
	run          runOpts // jobs, the cell processes' environment, quiet, progress-every
}

// check reads and checks the common flags, each error a usage error
// naming its flag.
func (c *commonFlags) check() (sweepSettings, error) {
	var s sweepSettings
	if c.seeds != "" || c.seedsRequired {
		seeds, err := parseSeeds(c.seeds)
		if err != nil {
			return s, usageError{fmt.Errorf("--seeds: %w", err)}
		}
		s.seeds = seeds
	}
	switch c.network {
	case networkUplink:
	case networkSimnet:
		s.backend = cell.BackendSimnet
	default:
		return s, usageError{fmt.Errorf("--network %q: want %s or %s", c.network, networkUplink, networkSimnet)}
	}
	s.knobs = c.knobs
	probe, err := cell.LookupProfile("harness")
	if err != nil {
		return s, err
	}
	if err := probe.SetKnobs(c.knobs); err != nil {
		return s, usageError{fmt.Errorf("--knob: %w", err)}
	}
	s.gossip = cell.StudyGossip()
	for _, kv := range c.gossip {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return s, usageError{fmt.Errorf("--gossip %q: want name=value", kv)}
		}
		if err := s.gossip.Set(k, v); err != nil {
			return s, usageError{fmt.Errorf("--gossip: %w", err)}
		}
	}
	if s.encoding, err = arms.ParseEncoding(c.wireEncoding); err != nil {
		return s, usageError{fmt.Errorf("--wire-encoding: %w", err)}
	}
	switch c.countsAt {
	case cell.CountsLastCompletion:
	case cell.CountsWindowEnd:
		s.countsAt = cell.CountsWindowEnd
	default:
		return s, usageError{fmt.Errorf("--counts-at %q: want %s or %s", c.countsAt, cell.CountsLastCompletion, cell.CountsWindowEnd)}
	}
	if err := flagCount("jobs", c.jobs, 1, maxJobs); err != nil {
		return s, err
	}
	if err := flagCount("setup-procs", c.setupProcs, 1, maxProcs); err != nil {
		return s, err
	}
	if err := checkSetupQuantum(c.setupQuantum); err != nil {
		return s, err
	}
	if err := checkProgressEvery(c.progressEvery); err != nil {
		return s, err
	}
	if err := flagCount("partitions", c.partitions, 1, cell.MaxPartitions); err != nil {
		return s, err
	}
	if c.partitions > 1 {
		s.partitions = c.partitions
		if c.network != networkUplink {
			return s, usageError{fmt.Errorf("--partitions %d: --network %s runs in one bubble; drop --partitions", c.partitions, c.network)}
		}
	}
	procs := c.gomaxprocs
	if procs == 0 {
		procs = c.partitions
	}
	env, err := cellEnv(procs, c.gogc, c.memLimit)
	if err != nil {
		return s, err
	}
	s.setupQuantum, s.setupProcs = des.Time(c.setupQuantum), c.setupProcs
	s.mem = memOpts{budget: c.mem, limit: envMemLimit(env), machine: machineMemory()}
	s.skipOverMem, s.shard, s.listCells = c.skipOverMem, c.shard, c.listCells
	s.run = runOpts{jobs: c.jobs, env: env, quiet: c.quiet, progressEvery: c.progressEvery, mem: s.mem}
	return s, nil
}

// checkSetupQuantum rejects a --setup-quantum outside [0, cell.MaxSetupQuantum].
func checkSetupQuantum(q time.Duration) error {
	if q < 0 || des.Time(q) > cell.MaxSetupQuantum {
		return usageError{fmt.Errorf("--setup-quantum %v: want 0 (exact setup) up to %v, such as 1ms", q, time.Duration(cell.MaxSetupQuantum))}
	}
	return nil
}

// cellEnv is the environment of the cell processes: GOMAXPROCS, GOGC and
// the soft memory limit ("" for none).
func cellEnv(procs, gogc int, memLimit string) ([]string, error) {
	if err := checkGOGC(gogc); err != nil {
		return nil, err
	}
	if err := flagCount("gomaxprocs", procs, 1, maxProcs); err != nil {
		return nil, err
	}
	env := append(os.Environ(), fmt.Sprintf("GOMAXPROCS=%d", procs), fmt.Sprintf("GOGC=%d", gogc))
	if memLimit != "" {
		b, err := flagSize("memlimit", memLimit, 64<<20, des.MaxBytes)
		if err != nil {
			return nil, err
		}
		env = append(env, fmt.Sprintf("GOMEMLIMIT=%d", b))
	}
	return env, nil
}
