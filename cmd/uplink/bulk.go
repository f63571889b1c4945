package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
	"github.com/uplinksim/uplink/protocols/bulk"
	"github.com/uplinksim/uplink/queues"
)

func cmdBulk(args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("uplink bulk", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	transport := fs.String("transport", "quic", "transport: quic")
	rateS := fs.String("rate", "1Gbit", "rate of every uplink and downlink, bit/s (50Mbit, 1Gbit)")
	rttS := fs.String("rtt", "40ms", "round-trip propagation delay, split evenly between the directions")
	lossS := fs.String("loss", "0", "random loss per packet and direction (0.5% or 0.005)")
	durS := fs.String("duration", "10s", "virtual time to send for (ignored with --bytes)")
	sizeS := fs.String("bytes", "", "send exactly this many bytes instead (16MiB), checked by SHA-256")
	seed := fs.Uint64("seed", 1, "seed of the random streams (loss)")
	queueLimit := fs.Int("queue-limit", queues.DefaultPfifoLimit, "uplink pfifo limit in packets")
	block := fs.Bool("block-sends", false, "block socket writes while the send buffer is full (Shadow, Linux) instead of never (simnet)")
	procs := fs.Int("gomaxprocs", 1, "GOMAXPROCS for the run (one simulation uses one core best)")
	gcPercent := fs.Int("gogc", 400, "GOGC for the run")
	reproducible := fs.Bool("reproducible", false, "bit-for-bit reproducible run: GOMAXPROCS=1 and crypto/rand seeded from --seed (needs a binary built with -ldflags=-X=testing.testBinary=1)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile to this file")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("bulk: unexpected argument %q", fs.Arg(0))}
	}
	cfg := bulk.Config{Transport: *transport, Seed: *seed}
	var err error
	if cfg.Rate, err = parseRate(*rateS); err != nil {
		return usageError{fmt.Errorf("--rate: %w", err)}
	}
	if cfg.RTT, err = parseDuration(*rttS); err != nil {
		return usageError{fmt.Errorf("--rtt: %w", err)}
	}
	if cfg.Loss, err = parseFraction(*lossS); err != nil {
		return usageError{fmt.Errorf("--loss: %w", err)}
	}
	if cfg.Duration, err = parseDuration(*durS); err != nil {
		return usageError{fmt.Errorf("--duration: %w", err)}
	}
	if *sizeS != "" {
		if cfg.Bytes, err = parseSize(*sizeS); err != nil || cfg.Bytes <= 0 {
			return usageError{fmt.Errorf("--bytes: want a positive size such as 16MiB")}
		}
	} else if cfg.Duration <= 0 {
		return usageError{errors.New("--duration must be positive (or give --bytes)")}
	}
	if *queueLimit < 1 {
		return usageError{fmt.Errorf("--queue-limit %d: a pfifo needs a limit of at least 1 packet", *queueLimit)}
	}
	if *transport != "quic" {
		return usageError{fmt.Errorf("--transport %q: valid transports are: quic", *transport)}
	}
	if *procs < 1 {
		return usageError{fmt.Errorf("--gomaxprocs %d: must be at least 1", *procs)}
	}
	limit := *queueLimit
	cfg.UpQdisc = func() (queues.Qdisc, error) { return queues.NewFIFO(limit, 0) }
	if *block {
		cfg.SendMode = netmodel.BlockWhenFull
	}

	var opts []des.BubbleOption
	if *reproducible {
		*procs = 1
		opts = append(opts, des.CryptoSeed(*seed))
	}
	runtime.GOMAXPROCS(*procs)
	debug.SetGCPercent(*gcPercent)
	if *cpuprofile != "" {
		// The profiler's writer goroutine must start outside the bubble, or
		// it would keep the bubble's virtual time from advancing.
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	fmt.Fprintf(stderr, "bulk: %s, %s, RTT %v, loss %g, %s\n", cfg.Transport, *rateS, cfg.RTT, cfg.Loss, what(cfg))
	var res bulk.Result
	start := time.Now()
	err = des.RunInBubble(func(*testing.T) error {
		var err error
		res, err = bulk.Run(context.Background(), cfg)
		return err
	}, opts...)
	wall := time.Since(start)
	if err != nil {
		return fmt.Errorf("bulk: %w", err)
	}
	printBulk(stdout, cfg, res, wall)
	return nil
}

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
	row("quic packets sent", "%d", r.PacketsSent)
	row("quic packets lost (retx)", "%d", r.PacketsLost)
	row("network packets", "%d (%.1f MiB)", r.NetPackets, float64(r.NetBytes)/(1<<20))
	row("drops: loss/queue/sockbuf", "%d / %d / %d", r.LossDrops, r.QueueDrops, r.SockDrops)
	row("model events", "%d (%d core wake-ups)", r.Events, r.CoreWakes)
	row("wall time", "%.3f s", wall.Seconds())
	row("simulated MiB per wall s", "%.1f", float64(r.NetBytes)/(1<<20)/wall.Seconds())
	if r.NetPackets > 0 {
		row("wall µs per sim packet", "%.2f", float64(wall.Microseconds())/float64(r.NetPackets))
	}
}
