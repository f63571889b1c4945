package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
	"github.com/uplinksim/uplink/protocols/arms"
	"github.com/uplinksim/uplink/protocols/cell"
)

// cmdRun runs cells: every (profile, seed) pair in its own child process
// (uplink cell), up to --jobs at once, appending each record to --out as
// soon as it is done.
func cmdRun(args []string, stdout, stderr io.Writer) error {
	return sweepRun(args, nil, stdout, stderr)
}

// sweepRun is uplink run; with sp it runs nothing and hands sp the
// flags and the sweep's cells instead (uplink slurm).
func sweepRun(args []string, sp *sweepPlan, stdout, stderr io.Writer) error {
	g := newFlagGroups("run", "Runs gossipsub cells: every arm, profile and seed in its own process, --jobs at once, and prints\ntheir completion times (README.md, Quick start).", stdout,
		groupCell, groupNet, groupProtocol, groupOutput, groupPerf)
	var common commonFlags
	common.register(g, commonDefaults{
		seeds: "7", seedsHelp: "seeds: 7, 7-16 or 7,9,11; each runs every arm on every profile", seedsRequired: true,
		knobOrder: "applied in order to every --profile, before --uplink-qdisc and --downlink-qdisc",
	})
	cf := g.group(groupCell)
	armsS := cf.String("arm", "whole", "arms, comma-separated, run side by side: any name of the catalogue (uplink run --list-arms)")
	listArms := cf.Bool("list-arms", false, "list the arms (catalogue name, published name, report name, policy) and exit")
	nodes := cf.Int("nodes", 60, "number of nodes")
	degree := cf.Int("degree", 20, "dial-graph degree (random connected regular graph)")
	payloadS := cf.String("payload", "1MiB", "payload size")
	profilesS := cf.String("profile", defaultProfiles, "profiles, comma-separated, run side by side: "+strings.Join(cell.ProfileNames(), ", "))
	windowS := cf.String("window", "8s", "observation window after the publish")
	deadlineS := cf.String("deadline", "3s", "budget for rate@deadline")
	warmupS := cf.String("warmup", "", "warm-up before the measured publish: payload (one payload of the cell's shape, diffused first) streams:SIZE (SIZE each way over a dummy stream on every connection, all at once; the report's warm cells used 320KiB) or streams-seq:SIZE (the same, each node's connections in turn)")
	drainGapS := cf.String("drain-gap", "0s", "quiet time between the end of the warm-up and the measured publish")
	backgroundS := cf.String("background", "", "background load: SIZE@INTERVAL, e.g. 64KiB@100ms: a random node publishes SIZE every INTERVAL on the cell's topic")
	bgLeadS := cf.String("background-lead", "2s", "how long the background load runs before the measured publish")
	verify := cf.Bool("verify", false, "rebuild the payload at every complete receiver (decoding coded arms) and record how many matched")
	vary := cf.StringArray("vary", nil, varyHelp)
	reruns := cf.Int("reruns", 1, fmt.Sprintf("with --vary: run the baseline's cells this many times more (0 to %d), each a cell of its own, so that the noise test weighs every effect against the run-to-run noise (docs/validation.md); 0 skips them, and the reading says so", maxReruns))

	nf := g.group(groupNet)
	netS := nf.String("net", "home", "scenario: "+strings.Join(netmodel.ScenarioNames(), ", "))
	latency := nf.String("latency", "geo", "latency model: geo, fixed:50ms, uniform:20ms,100ms")
	topo := nf.String("topology", "", "replay a topology draw exported as JSON (replaces --nodes, --degree, --net, --latency)")
	exportTopo := nf.String("export-topology", "", "write the first seed's topology draw as JSON to this file and exit")
	upQ := nf.String("uplink-qdisc", "", "shorthand for --knob uplink-qdisc=SPEC: a queues spec, or a mix: pie@30%;fq_codel (the rest plain fq_codel) or pie@30% (the rest keep each profile's own); uplink run --list-qdiscs")
	downQ := nf.String("downlink-qdisc", "", "shorthand for --knob downlink-qdisc=SPEC (as --uplink-qdisc)")
	qdiscFile := nf.String("qdisc-file", "", `per-node queue assignment, JSON: {"uplink": {"default": "fq_codel", "nodes": {"0": "pie"}}, "downlink": {...}}; a default such as pie@30% leaves the other nodes on the profile's assignment`)
	listKnobs := nf.Bool("list-knobs", false, "list the profile knobs with their help and their value in every profile, and exit")
	listQdiscs := nf.Bool("list-qdiscs", false, "list the queue disciplines with their keys, defaults and sources, and exit")

	transport := g.group(groupProtocol).String("transport", "quic", "transport: quic, or tcp (uplink's TCP model with TLS and yamux; see the tcp, cc and pacing knobs)")

	of := g.group(groupOutput)
	out := of.String("out", "", "append one JSON record per cell run to this file (JSON Lines)")
	skipDone := of.Bool("skip-done", false, "leave out the cells whose key the --out file already holds (records of this uplink version, read as validate reads its cache), so a rerun runs only what is missing")
	perNode := of.Bool("per-node", false, "include per-node rows in the records")
	obsFlags := addCellObserveFlags(of)

	profDir := g.group(groupPerf).String("cpuprofile", "", "write each cell's CPU profile per phase (hosts, dial, mesh, warmup, delivery, teardown) its heap at the end of the delivery, and the heap at the delivery's largest live heap (polled every 0.5 s of wall time) into this folder")
	if help, err := g.parse(args, stderr); help || err != nil {
		return err
	}
	fs := g.fs
	if sp != nil {
		sp.flags = fs
	}
	if *skipDone && *out == "" {
		return usageError{errors.New("--skip-done needs --out: the records file whose cells to leave out")}
	}
	if *listArms {
		for _, a := range arms.Catalogue {
			pol := "stock"
			if a.Forward.Batch {
				pol = "stock batch"
			}
			if p, ok := a.Policy(1 << 20); ok {
				pol = p.String() + " (at 1 MiB)"
			} else if a.Variant == arms.VariantB {
				pol = "partial messages: replication 2, 4 claims per peer, strike cap 1"
				if a.Coded {
					pol += ", one part per frame"
				}
			}
			fmt.Fprintf(stdout, "%-14s %-12s %-50q %s\n", a.Name, a.Published, a.Report, pol)
		}
		return nil
	}
	if *listKnobs {
		return printKnobs(stdout)
	}
	if *listQdiscs {
		printQdiscs(stdout)
		return nil
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("run: unexpected argument %q", fs.Arg(0))}
	}
	set, err := common.check()
	if err != nil {
		return err
	}
	seeds := set.seeds
	if err := flagCount("nodes", *nodes, 2, des.MaxNodes); err != nil && *topo == "" {
		return err
	}
	if err := flagCount("degree", *degree, 1, max(*nodes-1, 1)); err != nil && *topo == "" {
		return err
	}
	payload, err := flagSize("payload", *payloadS, 1, maxPayload)
	if err != nil {
		return err
	}
	window, err := flagDuration("window", *windowS, 1, des.MaxVirtual)
	if err != nil {
		return err
	}
	deadline, err := flagDuration("deadline", *deadlineS, 1, des.MaxVirtual)
	if err != nil {
		return err
	}
	warmup, err := parseWarmup(*warmupS, *drainGapS)
	if err != nil {
		return err
	}
	background, err := parseBackground(*backgroundS, *bgLeadS)
	if err != nil {
		return err
	}
	var armList []arms.Arm
	for _, name := range strings.Split(*armsS, ",") {
		a, err := arms.LookupArm(strings.TrimSpace(name))
		if err != nil {
			return usageError{fmt.Errorf("--arm: %w", err)}
		}
		armList = append(armList, a)
	}
	base := cell.Config{
		Encoding: set.encoding, CountsAt: set.countsAt,
		Verify: *verify, Warmup: warmup, Background: background, N: *nodes, Degree: *degree, Payload: int(payload), Net: *netS, Latency: *latency,
		Transport: *transport, Window: window, Deadline: deadline, PerNode: *perNode, Version: buildVersion(),
		Gossip: set.gossip, SetupQuantum: set.setupQuantum, Backend: set.backend, Partitions: set.partitions,
	}
	if *qdiscFile != "" {
		f, err := os.Open(*qdiscFile)
		if err != nil {
			return usageError{fmt.Errorf("--qdisc-file: %w", err)}
		}
		base.Qdiscs, err = cell.ReadNodeQdiscs(f)
		f.Close()
		if err != nil {
			return usageError{fmt.Errorf("--qdisc-file %s: %w", *qdiscFile, err)}
		}
	}
	if *topo != "" {
		f, err := os.Open(*topo)
		if err != nil {
			return usageError{fmt.Errorf("--topology: %w", err)}
		}
		d, err := netmodel.ReadDraw(f)
		f.Close()
		if err != nil {
			return usageError{fmt.Errorf("--topology %s: %w", *topo, err)}
		}
		base.Topology = d
	} else {
		// Check the topology parameters here, with the flag names, once
		// a cell of this size is known to fit: each arm's under each
		// profile, as below (with --skip-over-mem each cell is checked
		// there). A profile name that does not resolve is reported below;
		// here its cells are sized as the costliest profile's.
		if !set.skipOverMem {
			var sized []cell.Config
			for _, name := range strings.Split(*profilesS, ",") {
				p, _ := cell.LookupProfile(strings.TrimSpace(name))
				for _, a := range armList {
					c := base
					c.Arm, c.Profile = a.Name, p
					sized = append(sized, c)
				}
			}
			// Against --mem alone: these cells may be listed or planned
			// for other machines (checkCells holds them to this one's).
			early := set.mem
			early.machine = 0
			early.noSkip = sp != nil // uplink slurm leaves no cell out
			if err := checkMemory(sized, early); err != nil {
				return err
			}
		}
		if err := netmodel.CheckDraw(*nodes, *degree, *latency, *netS); err != nil {
			return usageError{fmt.Errorf("--nodes %d --degree %d --net %s --latency %s: %w", *nodes, *degree, *netS, *latency, err)}
		}
	}
	plan, err := checkRunObserve(obsFlags, &base, set.backend)
	if err != nil {
		return err
	}
	set.run.obs = plan
	if *exportTopo != "" {
		d := base.Topology
		if d == nil {
			if d, err = netmodel.NewDraw(*nodes, *degree, seeds[0], *latency, *netS); err != nil {
				return err
			}
		}
		if err := writeFileAtomic(*exportTopo, d.WriteJSON); err != nil {
			return fmt.Errorf("--export-topology: %w", err)
		}
		return nil
	}
	if fs.Changed("reruns") && len(*vary) == 0 {
		return usageError{errors.New("--reruns goes with --vary: it reruns the baseline of a comparison")}
	}
	if err := flagCount("reruns", *reruns, 0, maxReruns); err != nil {
		return err
	}
	if len(*vary) > 0 {
		return runVary(*vary, varyRun{profiles: *profilesS, arms: armList, nodes: *nodes, payload: int(payload), transport: *transport,
			upQ: *upQ, downQ: *downQ, out: *out, skipDone: *skipDone, profDir: *profDir, base: base, set: set, flags: fs, sp: sp, reruns: *reruns}, stdout, stderr)
	}
	var jobsList []cell.Config
	for _, name := range strings.Split(*profilesS, ",") {
		p, err := cell.LookupProfile(strings.TrimSpace(name))
		if err != nil {
			return usageError{fmt.Errorf("--profile: %w", err)}
		}
		if err := p.SetKnobs(set.knobs); err != nil {
			return usageError{fmt.Errorf("--knob: %w", err)}
		}
		// After the knobs, as if the last of them; one given empty is
		// the knob's to refuse.
		for _, q := range []struct{ name, v string }{{"uplink-qdisc", *upQ}, {"downlink-qdisc", *downQ}} {
			if !fs.Changed(q.name) {
				continue
			}
			if err := p.Set(q.name, q.v); err != nil {
				return usageError{fmt.Errorf("--%s %q: %w", q.name, q.v, err)}
			}
		}
		for _, a := range armList {
			for _, s := range seeds {
				c := base
				c.Arm, c.Profile, c.Seed = a.Name, p, s
				jobsList = append(jobsList, c)
			}
		}
	}
	for i := range jobsList {
		jobsList[i].SetupProcs = set.setupProcs
	}
	if *profDir != "" {
		if err := os.MkdirAll(*profDir, 0o755); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
	}
	jobsList, listed, err := shardCells(jobsList, shardOpts{shard: set.shard, list: set.listCells, plan: sp, limit: set.mem.limit}, stdout)
	if err != nil || listed {
		return err
	}
	if *skipDone {
		done, err := readRecords(*out, "--out", buildVersion(), false, stderr)
		if err != nil {
			return err
		}
		var todo []cell.Config
		for _, c := range jobsList {
			if done[c.Key()] == nil {
				todo = append(todo, c)
			}
		}
		fmt.Fprintf(stderr, "run: --skip-done: %d of %d cells already in %s, %d to run\n", len(jobsList)-len(todo), len(jobsList), *out, len(todo))
		if len(todo) == 0 {
			return nil
		}
		jobsList = todo
	}
	jobsList, err = checkCells(jobsList, set.mem, set.skipOverMem, stderr)
	if err != nil {
		return err
	}
	o := set.run
	o.out, o.profDir = *out, *profDir
	recs, err := runCells(jobsList, o, stderr)
	printTable(stdout, recs)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	return nil
}

// checkRunObserve reads --trace, --pcap and --plot against the cell base
// (its nodes, its window) and the network, before any cell starts, and
// puts the trace and captures in base; the folders are in the plan.
func checkRunObserve(f *observeFlags, base *cell.Config, backend string) (observePlan, error) {
	if backend != "" && (*f.trace != "" || *f.pcap != "") {
		return observePlan{}, usageError{fmt.Errorf("--network %s runs its links outside uplink's model: drop --trace and --pcap (--plot draws from the records, on either network)", backend)}
	}
	n, _ := base.Size()
	plan, err := f.check(n, base.Window, "--window")
	if err != nil {
		return plan, err
	}
	if plan.tracing() {
		base.Trace = &cell.Trace{Every: plan.every, Nodes: plan.traceNodes}
	}
	base.Captures = plan.nodes
	return plan, nil
}

// checkGOGC refuses a --gogc the collector would read as off (negative)
// or as collecting without pause (0).
func checkGOGC(gogc int) error {
	if gogc < 1 || gogc > maxGOGC {
		return usageError{fmt.Errorf("--gogc %d: want a percentage from 1 to 1000000, such as 100 or 400 (Go reads a negative GOGC as the collector off)", gogc)}
	}
	return nil
}

func fmtS(v *float64) string {
	if v == nil {
		return "cens."
	}
	return fmt.Sprintf("%.3f", *v)
}

// medianOf is the median of per-seed values, censored values sorting last;
// an even count averages the middle two; a median touching a censored
// value is censored.
func medianOf(vs []*float64) *float64 {
	if len(vs) == 0 {
		return nil
	}
	x := make([]float64, len(vs))
	for i, v := range vs {
		if v == nil {
			x[i] = math.Inf(1)
		} else {
			x[i] = *v
		}
	}
	sort.Float64s(x)
	m := x[len(x)/2]
	if len(x)%2 == 0 {
		m = (x[len(x)/2-1] + x[len(x)/2]) / 2
	}
	if math.IsInf(m, 1) || math.IsNaN(m) {
		return nil
	}
	return &m
}

// tableProfile is a record's profile column: the profile, followed by the
// network when it is not uplink's own (harness/simnet), the partitions
// when the cell was split (K=2) and the repeat when it is one (r1), so
// that rows and medians of different runs never mix.
func tableProfile(r *cell.Record) string {
	s := r.Profile
	if r.Backend != "" {
		s += "/" + r.Backend
	}
	if r.Partitions > 1 {
		s += fmt.Sprintf(" K=%d", r.Partitions)
	}
	if r.Replicate > 0 {
		s += fmt.Sprintf(" r%d", r.Replicate)
	}
	return s
}

// printTable writes a row per record and the medians across seeds of each
// arm and profile.
func printTable(w io.Writer, recs []*cell.Record) {
	if !slices.ContainsFunc(recs, func(r *cell.Record) bool { return r != nil }) {
		return // nothing ran (an error says why)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "arm\tprofile\tseed\tp50 s\tp90 s\tp99 s\tlast s\trate@3s\tdups\tpub MiB\twall s\tRSS MiB\tpub uplink\t")
	byProfile := map[string][]*cell.Record{}
	var order []string
	for _, r := range recs {
		if r == nil {
			continue
		}
		profile := tableProfile(r)
		key := r.Arm + "\t" + profile
		if _, ok := byProfile[key]; !ok {
			order = append(order, key)
		}
		byProfile[key] = append(byProfile[key], r)
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%d/%d\t%d\t%.1f\t%.1f\t%.0f\t%s\t\n", r.Arm, profile, r.Seed,
			fmtS(r.P50S), fmtS(r.P90S), fmtS(r.P99S), fmtS(r.LastS), r.RateK, r.RateN, r.Dups,
			float64(r.PubBytes)/(1<<20), r.WallS, float64(r.MaxRSSKB)/1024, r.PublisherUplink())
	}
	tw.Flush()
	if len(order) == 0 {
		return
	}
	fmt.Fprintln(w, "\nmedians across seeds:")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "arm\tprofile\tseeds\tp50 s\tp90 s\tp99 s\tlast s\t")
	for _, name := range order {
		rs := byProfile[name]
		col := func(f func(*cell.Record) *float64) string {
			vs := make([]*float64, len(rs))
			for i, r := range rs {
				vs[i] = f(r)
			}
			return fmtS(medianOf(vs))
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t\n", name, len(rs),
			col(func(r *cell.Record) *float64 { return r.P50S }), col(func(r *cell.Record) *float64 { return r.P90S }),
			col(func(r *cell.Record) *float64 { return r.P99S }), col(func(r *cell.Record) *float64 { return r.LastS }))
	}
	tw.Flush()
}

// parseWarmup reads --warmup (payload, streams:SIZE or streams-seq:SIZE)
// and --drain-gap.
func parseWarmup(s, gapS string) (cell.Warmup, error) {
	gap, err := flagDuration("drain-gap", gapS, 0, des.MaxVirtual)
	if err != nil {
		return cell.Warmup{}, err
	}
	kind, size, hasSize := strings.Cut(s, ":")
	switch {
	case s == "":
		if gap != 0 {
			return cell.Warmup{}, usageError{fmt.Errorf("--drain-gap %s needs --warmup", gapS)}
		}
		return cell.Warmup{}, nil
	case kind == "payload" && !hasSize:
		return cell.Warmup{Kind: "payload", Gap: gap}, nil
	case kind == "streams" || kind == "streams-seq":
		n, err := flagSize("warmup", size, 1, maxPayload)
		if err != nil {
			return cell.Warmup{}, err
		}
		return cell.Warmup{Kind: kind, Stream: int(n), Gap: gap}, nil
	}
	return cell.Warmup{}, usageError{fmt.Errorf("--warmup %q: want payload, streams:SIZE or streams-seq:SIZE", s)}
}

// parseBackground reads --background (SIZE@INTERVAL) and --background-lead.
func parseBackground(s, leadS string) (cell.Background, error) {
	if s == "" {
		return cell.Background{}, nil
	}
	size, every, ok := strings.Cut(s, "@")
	if !ok {
		return cell.Background{}, usageError{fmt.Errorf("--background %q: want SIZE@INTERVAL, such as 64KiB@100ms", s)}
	}
	n, err := flagSize("background", size, 1, maxPayload)
	if err != nil {
		return cell.Background{}, err
	}
	d, err := flagDuration("background", every, minInterval, des.MaxVirtual)
	if err != nil {
		return cell.Background{}, err
	}
	lead, err := flagDuration("background-lead", leadS, 0, des.MaxVirtual)
	if err != nil {
		return cell.Background{}, err
	}
	return cell.Background{Size: int(n), Interval: d, Lead: lead}, nil
}
