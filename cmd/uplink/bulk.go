package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/uplinksim/uplink/cmd/uplink/internal/bubble"
	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
	"github.com/uplinksim/uplink/protocols/bulk"
	"github.com/uplinksim/uplink/queues"
	"github.com/uplinksim/uplink/transports/tcp"
)

func cmdBulk(args []string, stdout, stderr io.Writer) error {
	inv, err := parseBulk(args, stderr)
	if err != nil || inv == nil {
		return err
	}
	if inv.listQdiscs {
		printQdiscs(stdout)
		return nil
	}
	return inv.run(stdout, stderr)
}

// bulkInvocation is a parsed uplink bulk command line: the transfer's
// configuration and how to run it.
type bulkInvocation struct {
	cfg                      bulk.Config
	setup                    string
	tcpPreset, backend, rate string
	procs, gcPercent         int
	reproducible, listQdiscs bool
	cpuprofile, outPath      string
	obsFlags                 *observeFlags
}

// parseBulk reads uplink bulk's flags, with the --setup's values under
// the flags given, into a configuration; nil, nil for --help.
func parseBulk(args []string, stderr io.Writer) (*bulkInvocation, error) {
	fs := pflag.NewFlagSet("uplink bulk", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	transport := fs.String("transport", "quic", "transport: quic (quic-go on virtual UDP) or tcp (uplink's TCP model)")
	tcpPreset := fs.String("tcp", "linux", "TCP model of --transport tcp: linux (CUBIC with HyStart, SACK, pacing, Linux's delayed ACKs and autotuning) or shadow (Shadow's Reno, no SACK, unpaced, Shadow's delayed ACKs and autotuning)")
	ccS := fs.String("cc", "", "congestion control of --transport tcp, over the --tcp model's: cubic, newreno or shadow-reno")
	pacingS := fs.String("pacing", "", "pacing of --transport tcp, over the --tcp model's: on or off")
	setupS := fs.String("setup", "", "a Linux setup's values of the flags not given (docs/model.md, Linux setups): loopback-netem (lo, MTU 65536, unshaped, netem both ways with its 1000-packet limit, GSO) or veth-htb (veth MTU 1500, HTB with a pfifo leaf at --rate each way, netem, GSO); both with Linux's default sysctls, CUBIC unpaced and blocking UDP sends")
	rateS := fs.String("rate", "1Gbit", "rate of every uplink and downlink, with its unit: 50Mbit, 1Gbit (bit/s; a bare number is refused), or unlimited (no serialisation, as loopback)")
	rttS := fs.String("rtt", "40ms", "round-trip propagation delay, split evenly between the directions")
	lossS := fs.String("loss", "0", "random loss per packet and direction (0.5% or 0.005)")
	durS := fs.String("duration", "10s", "virtual time to send for (ignored with --bytes)")
	sizeS := fs.String("bytes", "", "send exactly this many bytes instead (16MiB), checked by SHA-256")
	seed := fs.Uint64("seed", 1, "seed of the random streams (loss)")
	qdiscs := fs.StringArray("qdisc", nil, "queue discipline per direction and stage, DIR=SPEC (repeatable): up (every uplink; default pfifo:limit=1000), down (every downlink; default fifo), host (a host queue in front of every uplink, drained at --host-rate); SPEC as queues.New, e.g. pie, fq_codel:ecn=off, pfifo:limit=100 (--list-qdiscs)")
	hostRateS := fs.String("host-rate", "10Gbit", "line rate of the host queue stage, with its unit: 10Gbit")
	flows := fs.Int("flows", 1, "parallel connections from node 0 to node 1")
	gso := fs.Bool("gso", false, "QUIC: send the UDP datagrams of one instant and destination as GSO units (up to quic-go's 20 KiB batch), one packet for queues, shapers, loss and --netem-limit, split at delivery (docs/model.md)")
	netemLimitS := fs.String("netem-limit", "0", "packets each direction's latency pipe holds, as netem's limit (tc-netem's default is 1000); a packet past it is dropped at the tail; 0: unlimited")
	netemShared := fs.Bool("netem-shared", false, "both directions share one netem queue of --netem-limit packets, as netem on lo carries both (loopback-netem); default: a queue per direction, as netem on each end of a veth pair")
	cpuS := fs.String("cpu", "off", "each host's CPU time per packet received (rx) and sent (tx), a time per packet and/or per wire byte, e.g. rx:3us+0.2ns/B,tx:2us+0.1ns/B: a datagram is readable, and a sent packet reaches the uplink, when the host has spent it, one packet at a time, so a receiver can fall behind and its socket buffer overflow (docs/model.md); off: none")
	block := fs.Bool("block-sends", false, "QUIC: block UDP socket writes while the send buffer is full (Shadow, Linux) instead of never (simnet)")
	procs := fs.Int("gomaxprocs", 1, "GOMAXPROCS for the run (one simulation uses one core best)")
	gcPercent := fs.Int("gogc", 400, "GOGC for the run")
	reproducible := fs.Bool("reproducible", false, "bit-for-bit reproducible run: GOMAXPROCS=1 and crypto/rand seeded from --seed (needs a binary built with -ldflags=-X=testing.testBinary=1; holds on an uncontended core, docs/model.md)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile to this file")
	outPath := fs.String("out", "", "write a JSON record of the run to this file: the configuration, every figure printed, the queues' delay histograms and the flows (docs/records.md)")
	listQdiscs := fs.Bool("list-qdiscs", false, "list the queue disciplines with their keys, defaults and sources, and exit")
	obsFlags := addObserveFlags(fs)
	lf := addLinkFlags(fs)
	backend := fs.String("backend", "uplink", "the network: uplink (uplink's model) or simnet (github.com/marcopolo/simnet v0.0.7, the study's harness network: QUIC only, its own FQ-CoDel and one-MTU token bucket on every link, no loss, no --qdisc, --host-rate or --block-sends)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, nil
		}
		return nil, usageError{err}
	}
	if *listQdiscs {
		return &bulkInvocation{listQdiscs: true}, nil
	}
	if *setupS != "" {
		setup, err := findSetup(*setupS)
		if err != nil {
			return nil, err
		}
		if err := setup.apply(fs, *transport); err != nil {
			return nil, err
		}
	}
	if fs.NArg() > 0 {
		return nil, usageError{fmt.Errorf("bulk: unexpected argument %q", fs.Arg(0))}
	}
	cfg := bulk.Config{Transport: *transport, Seed: *seed}
	var err error
	if *rateS != unlimitedRate {
		if cfg.Rate, err = flagRate("rate", *rateS); err != nil {
			return nil, err
		}
	}
	if cfg.RTT, err = flagDuration("rtt", *rttS, 0, 2*des.MaxLatency); err != nil {
		return nil, err
	}
	if cfg.Rate == 0 && cfg.RTT == 0 {
		// Nothing would bound the transfer's speed.
		return nil, usageError{errors.New("--rate unlimited needs a positive --rtt")}
	}
	if cfg.Loss, err = flagFraction("loss", *lossS); err != nil {
		return nil, err
	}
	if *sizeS != "" {
		if cfg.Bytes, err = flagSize("bytes", *sizeS, 1, des.MaxBytes); err != nil {
			return nil, err
		}
		// At the link rate alone the transfer takes bytes·8/rate: bound it
		// as a run's virtual length is bounded.
		if least := float64(cfg.Bytes) * 8 / float64(cfg.Rate); cfg.Rate > 0 && least > des.MaxVirtual.Seconds() {
			return nil, usageError{fmt.Errorf("--bytes %s at --rate %s takes at least %.0f s of virtual time; at most %v (send fewer bytes or raise the rate)", *sizeS, *rateS, least, des.MaxVirtual)}
		}
	} else if cfg.Duration, err = flagDuration("duration", *durS, 1, des.MaxVirtual); err != nil {
		return nil, err
	} else if most := float64(cfg.Rate) / 8 * cfg.Duration.Seconds() * float64(max(*flows, 1)); most > float64(des.MaxBytes) {
		// What a run may send is bounded as --bytes is.
		return nil, usageError{fmt.Errorf("--duration %s at --rate %s may send %.1f TiB; at most %s (shorten the run or lower the rate)", *durS, *rateS, most/(1<<40), des.FormatBytes(des.MaxBytes))}
	}
	for _, kv := range *qdiscs {
		dir, spec, ok := strings.Cut(kv, "=")
		if !ok || spec == "" {
			return nil, usageError{fmt.Errorf("--qdisc %q: want DIR=SPEC with DIR up, down or host", kv)}
		}
		if _, err := queues.New(spec, rand.New(rand.NewPCG(1, 1))); err != nil {
			return nil, usageError{fmt.Errorf("--qdisc %s: %w", dir, err)}
		}
		switch dir {
		case "up":
			cfg.UpQdisc = spec
		case "down":
			cfg.DownQdisc = spec
		case "host":
			cfg.HostQdisc = spec
		default:
			return nil, usageError{fmt.Errorf("--qdisc %q: unknown direction %q; valid: up, down, host", kv, dir)}
		}
	}
	if cfg.HostRate, err = flagRate("host-rate", *hostRateS); err != nil {
		return nil, err
	}
	if *flows < 1 || *flows > 255 {
		return nil, usageError{fmt.Errorf("--flows %d: want 1 to 255", *flows)}
	}
	cfg.Flows = *flows
	switch *transport {
	case "quic":
		for _, name := range []string{"tcp", "cc", "pacing"} {
			if fs.Changed(name) {
				return nil, usageError{fmt.Errorf("--%s applies to TCP: add --transport tcp, or drop --%s for QUIC", name, name)}
			}
		}
	case "tcp":
		if *block {
			return nil, usageError{errors.New("--block-sends applies to QUIC's UDP sockets (TCP keeps its own send buffer): drop it with --transport tcp")}
		}
		tc, err := tcpConfig(*tcpPreset, *ccS, *pacingS)
		if err != nil {
			return nil, usageError{err}
		}
		cfg.TCP = &tc
	default:
		return nil, usageError{fmt.Errorf("--transport %q: valid transports are: quic, tcp", *transport)}
	}
	if err := lf.apply(fs, &cfg); err != nil {
		return nil, err
	}
	if err := flagCount("gomaxprocs", *procs, 1, maxProcs); err != nil {
		return nil, err
	}
	if *block {
		cfg.SendMode = netmodel.BlockWhenFull
	}
	if *gso && cfg.Transport != "quic" {
		return nil, usageError{errors.New("--gso applies to QUIC's UDP sockets (TCP sends segment by segment): drop it with --transport tcp")}
	}
	cfg.GSO = *gso
	limit, err := des.ParseInt(*netemLimitS, 0, queues.MaxSpecPackets)
	if err != nil {
		return nil, flagErr("netem-limit", err)
	}
	cfg.NetemLimit = int(limit)
	switch {
	case *netemShared && limit == 0 && fs.Changed("netem-shared"):
		return nil, usageError{errors.New("--netem-shared shares netem's queue between the directions: give its --netem-limit too")}
	case limit > 0:
		// A setup's shared queue goes with its limit: --netem-limit 0
		// lifts both.
		cfg.NetemShared = *netemShared
	}
	if cfg.CPU, err = des.ParseCPU(*cpuS); err != nil {
		return nil, flagErr("cpu", err)
	}
	switch *backend {
	case "uplink":
	case bulk.BackendSimnet:
		if err := checkSimnetBulk(fs, cfg, *block, *reproducible); err != nil {
			return nil, usageError{err}
		}
		cfg.Backend = bulk.BackendSimnet
	default:
		return nil, usageError{fmt.Errorf("--backend %q: valid backends are: uplink, %s", *backend, bulk.BackendSimnet)}
	}
	return &bulkInvocation{
		cfg: cfg, setup: *setupS, tcpPreset: *tcpPreset, backend: *backend, rate: *rateS,
		procs: *procs, gcPercent: *gcPercent, reproducible: *reproducible,
		cpuprofile: *cpuprofile, outPath: *outPath, obsFlags: obsFlags,
	}, nil
}

// run performs the transfer and prints (and writes) what it measured.
func (inv *bulkInvocation) run(stdout, stderr io.Writer) error {
	cfg := inv.cfg
	runLen, runWhat := cfg.Duration, "--duration"
	if cfg.Bytes > 0 {
		// A fixed-size transfer lasts at least its bytes at the link
		// rate; handshakes and slow start add round trips.
		runLen = des.Time(float64(cfg.Bytes)*8*float64(cfg.Flows)/float64(cfg.Rate)*1e9) + 10*cfg.RTT
		runWhat = "--bytes at --rate, plus ten round trips"
		if cfg.Rate == 0 {
			runLen, runWhat = des.MaxVirtual, "--bytes at an unlimited rate"
		}
	}
	plan, err := inv.obsFlags.check(2, runLen, runWhat)
	if err != nil {
		return err
	}
	var obs observeFiles
	if err := obs.install(plan, &cfg); err != nil {
		return err
	}
	defer obs.discard()

	var opts []bubble.Option
	if inv.reproducible {
		inv.procs = 1
		opts = append(opts, bubble.CryptoSeed(cfg.Seed))
	}
	runtime.GOMAXPROCS(inv.procs)
	if err := checkGOGC(inv.gcPercent); err != nil {
		return err
	}
	debug.SetGCPercent(inv.gcPercent)
	stopProfile, err := startCPUProfile(inv.cpuprofile)
	if err != nil {
		return err
	}
	defer stopProfile() // on a panic; its error is then lost
	if inv.setup != "" {
		fmt.Fprintf(stderr, "bulk: setup %s (docs/model.md, Linux setups)\n", inv.setup)
	}
	fmt.Fprintf(stderr, "bulk: %s on %s, %d flow(s), %s, RTT %v, loss %g, %s\n", describeTransport(cfg, inv.tcpPreset), inv.backend, cfg.Flows, inv.rate, cfg.RTT, cfg.Loss, what(cfg))
	var res bulk.Result
	start := time.Now()
	err = bubble.Run(func(*testing.T) error {
		var err error
		res, err = bulk.Run(context.Background(), cfg)
		return err
	}, opts...)
	wall := time.Since(start)
	profErr := stopProfile()
	if err != nil {
		if profErr != nil {
			return fmt.Errorf("bulk: %w; %v", err, profErr)
		}
		return fmt.Errorf("bulk: %w", err)
	}
	printBulk(stdout, cfg, res, wall)
	if err := obs.commit(); err != nil {
		return err
	}
	if plan.plotDir != "" {
		if err := writeBulkPlots(plan.plotDir, res, &obs); err != nil {
			return fmt.Errorf("--plot: %w", err)
		}
	}
	if inv.outPath != "" {
		if err := writeBulkRecord(inv.outPath, newBulkRecord(res, inv.tcpPreset, wall)); err != nil {
			if profErr != nil {
				return fmt.Errorf("--out: %w; %v", err, profErr)
			}
			return fmt.Errorf("--out: %w", err)
		}
	}
	return profErr
}

// checkSimnetBulk refuses, with --backend simnet, the flags whose settings
// simnet does not model: --transport tcp, a loss, queue disciplines, a host
// stage, blocking sends, and --reproducible (simnet hashes its flows with a
// random seed and runs a goroutine per link).
func checkSimnetBulk(fs *pflag.FlagSet, cfg bulk.Config, block, reproducible bool) error {
	switch {
	case cfg.Transport != "quic":
		return fmt.Errorf("--backend simnet carries datagrams only: drop --transport %s", cfg.Transport)
	case cfg.Loss != 0:
		return errors.New("--backend simnet has no random loss: drop --loss")
	case fs.Changed("trace") || fs.Changed("pcap") || fs.Changed("plot"):
		return errors.New("--backend simnet runs its links in goroutines of its own, outside uplink's model: drop --trace, --pcap and --plot")
	case fs.Changed("qdisc") || fs.Changed("host-rate"):
		return errors.New("--backend simnet has its own FQ-CoDel on every link and no host stage: drop --qdisc and --host-rate")
	case block:
		return errors.New("--backend simnet's sockets never block a write: drop --block-sends")
	case cfg.GSO || cfg.NetemLimit != 0:
		return errors.New("--backend simnet sends datagram by datagram and has no netem queue: drop --gso and --netem-limit")
	case !cfg.CPU.Off():
		return errors.New("--backend simnet has no host CPU model: drop --cpu")
	case reproducible:
		return errors.New("--backend simnet is not reproducible (random flow hashing, a goroutine per link): drop --reproducible")
	}
	return nil
}

// tcpConfig is the TCP model of --tcp preset with the --cc and --pacing
// overrides ("" keeps the preset's).
func tcpConfig(preset, cc, pacing string) (tcp.Config, error) {
	var c tcp.Config
	switch preset {
	case "linux":
		c = tcp.LinuxConfig()
	case "shadow":
		c = tcp.ShadowConfig()
	default:
		return tcp.Config{}, fmt.Errorf("--tcp %q: valid models are: linux, shadow", preset)
	}
	switch cc {
	case "":
	case tcp.CUBIC, tcp.NewReno, tcp.ShadowReno:
		c.CongestionControl = cc
	default:
		return tcp.Config{}, fmt.Errorf("--cc %q: valid congestion controls are: %s, %s, %s", cc, tcp.CUBIC, tcp.NewReno, tcp.ShadowReno)
	}
	switch pacing {
	case "":
	case "on", "off":
		c.Pacing = pacing == "on"
	default:
		return tcp.Config{}, fmt.Errorf("--pacing %q: want on or off", pacing)
	}
	return c, nil
}

// describeTransport names the transport, with the TCP model's preset,
// congestion control and pacing.
func describeTransport(cfg bulk.Config, preset string) string {
	if cfg.TCP == nil {
		return cfg.Transport
	}
	pacing := "unpaced"
	if cfg.TCP.Pacing {
		pacing = "paced"
	}
	return fmt.Sprintf("%s (%s model, %s, %s)", cfg.Transport, preset, cfg.TCP.CongestionControl, pacing)
}

// unlimitedRate is --rate's value for links without serialisation.
const unlimitedRate = "unlimited"

func ms(t des.Time) float64 { return float64(t) / 1e6 }

func what(cfg bulk.Config) string {
	if cfg.Bytes > 0 {
		return fmt.Sprintf("%d bytes", cfg.Bytes)
	}
	return fmt.Sprintf("for %v", cfg.Duration)
}

func printBulk(w io.Writer, cfg bulk.Config, r bulk.Result, wall time.Duration) {
	row := func(k, f string, a ...any) { fmt.Fprintf(w, "%-28s "+f+"\n", append([]any{k}, a...)...) }
	row("virtual time", "%.3f s", r.Elapsed.Seconds())
	row("received", "%d bytes", r.BytesReceived)
	row("goodput", "%.2f Mbit/s", r.GoodputBps/1e6)
	if cfg.Bytes > 0 {
		row("sha256", "%x", r.SHA256)
	}
	if len(r.FlowGoodput) > 1 {
		parts := make([]string, len(r.FlowGoodput))
		for i, g := range r.FlowGoodput {
			parts[i] = fmt.Sprintf("%.2f", g/1e6)
		}
		row("per-flow goodput", "%s Mbit/s", strings.Join(parts, " / "))
	}
	if cfg.Transport == "tcp" {
		row("tcp segments sent", "%d", r.SegmentsSent)
		row("tcp segments retransmitted", "%d", r.SegmentsRetrans)
		row("tcp fast recoveries / RTOs", "%d / %d", r.FastRecoveries, r.RTOs)
	} else {
		row("quic packets sent", "%d", r.PacketsSent)
		row("quic packets lost (retx)", "%d", r.PacketsLost)
	}
	if cfg.Backend == bulk.BackendSimnet {
		// simnet counts the datagrams its endpoints wrote, in UDP payload
		// bytes, and nothing of its queues.
		row("network datagrams", "%d (%.1f MiB of UDP payload)", r.NetPackets, float64(r.NetBytes)/(1<<20))
		row("wall time", "%.3f s", wall.Seconds())
		return
	}
	row("network packets", "%d (%.1f MiB)", r.NetPackets, float64(r.NetBytes)/(1<<20))
	row("drops: loss/queue/sockbuf", "%d / %d / %d", r.LossDrops, r.QueueDrops, r.SockDrops)
	if cfg.NetemLimit > 0 {
		per := "per direction"
		if cfg.NetemShared {
			per = "shared by both directions"
		}
		row("drops: netem", "%d (limit %d packets %s)", r.NetemDrops, cfg.NetemLimit, per)
	}
	if !cfg.CPU.Off() {
		row("host cpu", "%s", cfg.CPU)
	}
	for _, q := range r.Queues {
		st := &q.Stats
		h := &st.Sojourn
		row(q.Name+" queue", "%s", q.Spec)
		row("  queue delay p50/p90/p99/max", "%.2f / %.2f / %.2f / %.2f ms (mean %.2f, %d packets)",
			ms(h.Quantile(0.5)), ms(h.Quantile(0.9)), ms(h.Quantile(0.99)), ms(h.Max()), ms(h.Mean()), h.Count())
		row("  drops overlimit/aqm/batch", "%d / %d / %d (CE marks %d, peak backlog %d packets)",
			st.Drops[queues.DropOverlimit], st.Drops[queues.DropAQM], st.Drops[queues.DropBatch], st.CEMarks, st.MaxLen)
	}
	row("model events", "%d (%d core wake-ups)", r.Events, r.CoreWakes)
	row("wall time", "%.3f s", wall.Seconds())
	row("simulated MiB per wall s", "%.1f", float64(r.NetBytes)/(1<<20)/wall.Seconds())
	if r.NetPackets > 0 {
		row("wall µs per sim packet", "%.2f", float64(wall.Microseconds())/float64(r.NetPackets))
	}
}

// startCPUProfile starts the CPU profiler writing to path ("" : none) and
// returns the function that stops it and renames the profile into place,
// or removes it and returns the error when it could not be written; stop
// may be called more than once. It must run outside the bubble: the
// profiler's writer goroutine inside it would keep virtual time from
// advancing.
func startCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := createOutput(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Discard()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	var once sync.Once
	var stopErr error
	return func() error {
		once.Do(func() {
			pprof.StopCPUProfile()
			if err := f.Commit(); err != nil {
				stopErr = fmt.Errorf("--cpuprofile: %w", err)
			}
		})
		return stopErr
	}, nil
}
