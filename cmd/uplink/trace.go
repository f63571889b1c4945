package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/internal/outfile"
	"github.com/uplinksim/uplink/protocols/bulk"
)

// Bounds of --trace-every: a sample every 100 µs of virtual time at the
// finest; at most the run's length.
const minTraceEvery = 100 * des.Microsecond

// observeFlags are the trace, capture and plot flags of bulk and run.
type observeFlags struct {
	trace, every, pcap, nodes, plot *string
	// traceNodes is run's --trace-nodes (nil for bulk, which traces every
	// node).
	traceNodes *string
	// plotSeries: --plot draws the trace's time series (bulk), so
	// --trace-every applies to it too.
	plotSeries bool
	fs         *pflag.FlagSet
}

func addObserveFlags(fs *pflag.FlagSet) *observeFlags {
	return &observeFlags{
		fs:         fs,
		trace:      fs.String("trace", "", "write time series into this folder (created if missing), sampled every --trace-every of virtual time: queues.csv (backlog, queue delay, drops, CE marks per queue), nodes.csv (packets and bytes sent and received per node), flows.csv (TCP: cwnd, ssthresh, srtt, pacing rate, bytes in flight per flow); docs/records.md"),
		every:      fs.String("trace-every", "10ms", "the sampling interval of --trace and --plot, in virtual time: 100µs up to the run's length"),
		pcap:       fs.String("pcap", "", "write a pcapng capture per node of --pcap-nodes into this folder (created if missing): node-N.pcapng, every packet the node sent and received with synthesized IPv4/UDP or IPv4/TCP headers, stamped with virtual time"),
		nodes:      fs.String("pcap-nodes", "all", "the nodes --pcap captures: all, or a list such as 0 or 0,1 (0 sends, 1 receives)"),
		plot:       fs.String("plot", "", "write figures into this folder (created if missing), each as SVG and PNG: the queue-delay CDF of every queue and the time series of the sender's uplink backlog, the throughput and (TCP) the window; docs/records.md"),
		plotSeries: true,
	}
}

// addCellObserveFlags adds run's trace, capture and plot flags: each
// cell writes into a folder of its own under the flag's folder.
func addCellObserveFlags(fs *pflag.FlagSet) *observeFlags {
	return &observeFlags{
		fs:         fs,
		trace:      fs.String("trace", "", "write each cell's time series of the --trace-nodes into DIR/CELL/ (created if missing; CELL is arm-profile-seedN-key): node-N.csv, every --trace-every of virtual time, the node's uplink and downlink backlog, drops, packets and bytes sent and received; docs/records.md"),
		traceNodes: fs.String("trace-nodes", "0", "the nodes --trace samples: all, or a list such as 0 or 0,3 or 0-3 (0 publishes)"),
		every:      fs.String("trace-every", "10ms", "the sampling interval of --trace, in virtual time: 100µs up to --window"),
		pcap:       fs.String("pcap", "", "write a pcapng capture per node of --pcap-nodes and cell into DIR/CELL/node-N.pcapng (created if missing): every packet the node sent and received, with synthesized IPv4/UDP or IPv4/TCP headers, stamped with virtual time"),
		nodes:      fs.String("pcap-nodes", "0", "the nodes --pcap captures: all, or a list such as 0 or 0,3 or 0-3 (0 publishes)"),
		plot:       fs.String("plot", "", "write each cell's completion CDF into DIR/CELL/ (created if missing) as completion-cdf.svg and .png, labelled with the cell's arm, profile and seed"),
	}
}

// observePlan is what the flags asked for, checked.
type observePlan struct {
	traceDir, pcapDir, plotDir string
	every                      des.Time
	nodes                      []int // --pcap-nodes
	traceNodes                 []int // run's --trace-nodes
}

// tracing reports whether the plan samples a trace.
func (p observePlan) tracing() bool { return p.traceDir != "" }

// any reports whether the plan writes anything.
func (p observePlan) any() bool { return p.traceDir != "" || p.pcapDir != "" || p.plotDir != "" }

// check reads the flags against a run of nodes nodes whose virtual length
// is at most runLen (a timed run's duration, or a fixed-size transfer's
// least time at the link rate, runWhat naming which), creating and probing
// each folder, before anything runs.
func (f *observeFlags) check(nodes int, runLen des.Time, runWhat string) (observePlan, error) {
	var p observePlan
	sampled := *f.trace != "" || f.plotSeries && *f.plot != ""
	switch {
	case f.fs.Changed("trace-every") && !sampled && f.plotSeries:
		return p, usageError{errors.New("--trace-every applies to --trace and --plot: add one, or drop --trace-every")}
	case f.fs.Changed("trace-every") && !sampled:
		return p, usageError{errors.New("--trace-every applies to --trace: add --trace DIR, or drop --trace-every")}
	case f.traceNodes != nil && f.fs.Changed("trace-nodes") && *f.trace == "":
		return p, usageError{errors.New("--trace-nodes applies to --trace: add --trace DIR, or drop --trace-nodes")}
	case f.fs.Changed("pcap-nodes") && *f.pcap == "":
		return p, usageError{errors.New("--pcap-nodes applies to --pcap: add --pcap DIR, or drop --pcap-nodes")}
	}
	if sampled {
		hi := max(min(runLen, des.MaxVirtual), minTraceEvery)
		d, err := des.ParseDuration(*f.every, 0, des.MaxVirtual)
		if err != nil {
			return p, flagErr("trace-every", err)
		}
		switch {
		case !f.fs.Changed("trace-every"):
			d = min(d, hi) // the default, within a short run
		case d < minTraceEvery:
			return p, usageError{fmt.Errorf("--trace-every %s: want at least %v, at most %v (%s)", *f.every, minTraceEvery, hi, runWhat)}
		case d > hi:
			return p, usageError{fmt.Errorf("--trace-every %s: beyond the run's %v (%s); want %v to %v", *f.every, hi, runWhat, minTraceEvery, hi)}
		}
		p.every = d
	}
	if *f.pcap != "" {
		var err error
		if p.nodes, err = parseNodeList("pcap-nodes", *f.nodes, nodes); err != nil {
			return p, err
		}
	}
	if *f.trace != "" && f.traceNodes != nil {
		var err error
		if p.traceNodes, err = parseNodeList("trace-nodes", *f.traceNodes, nodes); err != nil {
			return p, err
		}
	}
	for _, d := range []struct {
		flag string
		dir  *string
		to   *string
	}{{"trace", f.trace, &p.traceDir}, {"pcap", f.pcap, &p.pcapDir}, {"plot", f.plot, &p.plotDir}} {
		if *d.dir == "" {
			continue
		}
		if err := probeDir(*d.dir); err != nil {
			return p, usageError{fmt.Errorf("--%s %s: %w", d.flag, *d.dir, err)}
		}
		*d.to = *d.dir
	}
	return p, nil
}

// probeDir creates dir if missing and checks that a file can be written
// in it.
func probeDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot create the folder: %w", outfile.Cause(err))
	}
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return fmt.Errorf("cannot write a file there: %w", outfile.Cause(err))
	}
	f.Close()
	return os.Remove(f.Name())
}

// parseNodeList reads "all" or a comma-separated list of node indices
// and ranges (0,1 or 0-1) of a network of n nodes, each once.
func parseNodeList(flag, s string, n int) ([]int, error) {
	if strings.TrimSpace(s) == "all" {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out, nil
	}
	var out []int
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(strings.TrimSpace(lo))
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(strings.TrimSpace(hi))
		}
		if err != nil || b < a || a < 0 {
			return nil, usageError{fmt.Errorf("--%s %q: want all, or node indices such as 0 or 0,1 or 0-1, from 0 to %d", flag, s, n-1)}
		}
		if b >= n {
			return nil, usageError{fmt.Errorf("--%s %q: no node %d; the nodes are 0 to %d", flag, s, b, n-1)}
		}
		for i := a; i <= b; i++ {
			if seen[i] {
				return nil, usageError{fmt.Errorf("--%s %q: node %d is given twice", flag, s, i)}
			}
			seen[i] = true
			out = append(out, i)
		}
	}
	return out, nil
}

// observeFiles are the output files of a bulk run's trace and captures,
// written under temporary names and renamed into place once the run
// succeeded; the in-memory copies feed --plot.
type observeFiles struct {
	files               []*outfile.File
	queues, nodes, flow bytes.Buffer
}

// install adds the trace and captures of plan to cfg, opening their files.
func (o *observeFiles) install(plan observePlan, cfg *bulk.Config) error {
	if plan.traceDir != "" || plan.plotDir != "" {
		tr := &bulk.Trace{Every: plan.every}
		for _, f := range []struct {
			name string
			w    *io.Writer
			buf  *bytes.Buffer
		}{{"queues.csv", &tr.Queues, &o.queues}, {"nodes.csv", &tr.Nodes, &o.nodes}, {"flows.csv", &tr.Flows, &o.flow}} {
			if f.name == "flows.csv" && cfg.Transport != "tcp" {
				continue
			}
			var ws []io.Writer
			if plan.plotDir != "" {
				ws = append(ws, f.buf)
			}
			if plan.traceDir != "" {
				a, err := o.create("trace", filepath.Join(plan.traceDir, f.name))
				if err != nil {
					return err
				}
				ws = append(ws, a)
			}
			*f.w = io.MultiWriter(ws...)
		}
		cfg.Trace = tr
	}
	for _, nd := range plan.nodes {
		a, err := o.create("pcap", filepath.Join(plan.pcapDir, fmt.Sprintf("node-%d.pcapng", nd)))
		if err != nil {
			return err
		}
		cfg.Captures = append(cfg.Captures, bulk.Capture{Node: nd, W: a})
	}
	return nil
}

func (o *observeFiles) create(flag, path string) (*outfile.File, error) {
	a, err := createOutput(path)
	if err != nil {
		o.discard()
		return nil, fmt.Errorf("--%s: %w", flag, err)
	}
	o.files = append(o.files, a)
	return a, nil
}

// commit renames every file into place.
func (o *observeFiles) commit() error {
	var first error
	for _, f := range o.files {
		if err := f.Commit(); err != nil && first == nil {
			first = err
		}
	}
	o.files = nil
	return first
}

// discard removes every file.
func (o *observeFiles) discard() {
	for _, f := range o.files {
		f.Discard()
	}
	o.files = nil
}
