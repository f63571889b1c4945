// Package bulk runs one bulk transfer between two nodes: the simplest job
// that exercises the whole path from a real transport's socket write to its
// socket read.
package bulk

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	quicgo "github.com/quic-go/quic-go"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
	"github.com/uplinksim/uplink/queues"
	"github.com/uplinksim/uplink/transports/quic"
	"github.com/uplinksim/uplink/transports/udp"
)

// Config describes a transfer from node 0 to node 1. Rate, latency and loss
// apply in both directions, like netem on loopback.
type Config struct {
	Transport string   // "quic"
	Rate      int64    // bit/s on every uplink and downlink; 0: unlimited
	RTT       des.Time // round-trip propagation delay, split evenly
	Loss      float64  // per packet, per direction
	Duration  des.Time // send for this long (when Bytes is 0)
	Bytes     int64    // send exactly this many bytes, then close (overrides Duration)
	Seed      uint64
	// UpQdisc builds each node's uplink queue; nil: pfifo of 1 000 packets.
	UpQdisc  func() (queues.Qdisc, error)
	SendMode netmodel.SendMode
}

// Result is what a transfer measured.
type Result struct {
	Elapsed       des.Time // virtual time from the first byte written to the last read (or Duration)
	BytesReceived int64
	GoodputBps    float64 // application bytes received ×8 / Elapsed
	SHA256        [32]byte
	PacketsSent   uint64 // sender's QUIC packets (quic-go's count)
	PacketsLost   uint64 // declared lost by the sender, hence retransmitted
	NetPackets    uint64 // packets that left any uplink: the simulated packets
	NetBytes      uint64
	LossDrops     uint64
	QueueDrops    uint64
	SockDrops     uint64
	Events        uint64
	CoreWakes     uint64
	ClientStats   quicgo.ConnectionStats
}

// Run performs the transfer. It must run inside a synctest bubble (see
// des.RunInBubble); every goroutine it starts has ended when it returns.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if cfg.Transport != "quic" {
		return Result{}, fmt.Errorf("bulk: transport %q not supported (valid: quic)", cfg.Transport)
	}
	if cfg.Bytes <= 0 && cfg.Duration <= 0 {
		return Result{}, errors.New("bulk: give a duration or a byte count")
	}
	sim := des.NewSim()
	live := des.NewLive(sim)
	n, err := netmodel.New(sim, netmodel.Config{
		Latency: netmodel.FixedLatency(cfg.RTT / 2),
		Loss:    cfg.Loss,
		Seed:    cfg.Seed,
	})
	if err != nil {
		return Result{}, fmt.Errorf("bulk: %w", err)
	}
	for i := range 2 {
		var q queues.Qdisc
		if cfg.UpQdisc != nil {
			q, err = cfg.UpQdisc()
		} else {
			q, err = queues.NewFIFO(queues.DefaultPfifoLimit, 0)
		}
		if err != nil {
			return Result{}, fmt.Errorf("bulk: uplink queue: %w", err)
		}
		_, err := n.AddNode(netmodel.NodeConfig{
			Up:   netmodel.LinkConfig{Qdisc: q, Shaper: netmodel.OneMTUBurst(cfg.Rate)},
			Down: netmodel.LinkConfig{Shaper: netmodel.OneMTUBurst(cfg.Rate)},
		})
		if err != nil {
			return Result{}, fmt.Errorf("bulk: node %d: %w", i, err)
		}
	}
	live.Start()
	defer live.Stop()
	st := udp.NewStack(live, n)
	srvConn, err := st.Listen(1, 4433, cfg.SendMode)
	if err != nil {
		return Result{}, err
	}
	cliConn, err := st.Listen(0, 0, cfg.SendMode)
	if err != nil {
		srvConn.Close()
		return Result{}, err
	}
	tlsConf, err := quic.ServerTLS()
	if err != nil {
		return Result{}, err
	}
	qconf := &quicgo.Config{MaxIdleTimeout: 30 * time.Second}
	srvTr, ln, err := quic.Listen(srvConn, tlsConf, qconf)
	if err != nil {
		return Result{}, err
	}
	defer func() {
		ln.Close()
		srvTr.Close()
		srvConn.Close()
	}()

	var received atomic.Int64
	type srvResult struct {
		sum [32]byte
		at  des.Time
		err error
	}
	srvDone := make(chan srvResult, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var r srvResult
		defer func() { srvDone <- r }()
		conn, err := ln.Accept(ctx)
		if err != nil {
			r.err = fmt.Errorf("accept: %w", err)
			return
		}
		defer conn.CloseWithError(0, "")
		str, err := conn.AcceptStream(ctx)
		if err != nil {
			r.err = fmt.Errorf("accept stream: %w", err)
			return
		}
		h := sha256.New()
		buf := make([]byte, 64<<10)
		for {
			k, err := str.Read(buf)
			if cfg.Bytes > 0 {
				h.Write(buf[:k])
			}
			received.Add(int64(k))
			if err == io.EOF {
				break
			}
			if err != nil {
				if received.Load() > 0 && cfg.Bytes <= 0 {
					break // the sender stopped at the end of the duration
				}
				r.err = fmt.Errorf("read: %w", err)
				return
			}
		}
		r.at = live.Now()
		copy(r.sum[:], h.Sum(nil))
	}()

	cliTr, conn, err := quic.Dial(ctx, cliConn, srvConn.LocalAddr(), quic.ClientTLS(), qconf)
	if err != nil {
		ln.Close()
		wg.Wait()
		return Result{}, err
	}
	defer func() {
		cliTr.Close()
		cliConn.Close()
	}()
	str, err := conn.OpenStreamSync(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("bulk: open stream: %w", err)
	}
	start := live.Now()
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6b756c62))
	chunk := make([]byte, 64<<10)
	var sent int64
	deadline := start + cfg.Duration
	for cfg.Bytes <= 0 || sent < cfg.Bytes {
		if cfg.Bytes <= 0 && live.Now() >= deadline {
			break
		}
		k := int64(len(chunk))
		if cfg.Bytes > 0 {
			k = min(k, cfg.Bytes-sent)
		}
		// A fixed-size transfer is checked by hash, so every chunk is fresh
		// pseudo-random data; a timed one reuses one random chunk.
		if cfg.Bytes > 0 || sent == 0 {
			for i := 0; i < int(k); i += 8 {
				v := rng.Uint64()
				for j := 0; j < 8 && i+j < int(k); j++ {
					chunk[i+j] = byte(v >> (8 * j))
				}
			}
		}
		if cfg.Bytes <= 0 {
			str.SetWriteDeadline(time.Now().Add((deadline - live.Now()).Duration()))
		}
		w, err := str.Write(chunk[:k])
		sent += int64(w)
		if err != nil {
			if cfg.Bytes <= 0 && errors.Is(err, os.ErrDeadlineExceeded) {
				break
			}
			return Result{}, fmt.Errorf("bulk: write: %w", err)
		}
	}
	var res Result
	if cfg.Bytes > 0 {
		str.Close()
		r := <-srvDone
		wg.Wait()
		if r.err != nil {
			return Result{}, fmt.Errorf("bulk: server: %w", r.err)
		}
		res.Elapsed = r.at - start
		res.SHA256 = r.sum
	} else {
		if d := deadline - live.Now(); d > 0 {
			time.Sleep(d.Duration())
		}
		res.Elapsed = cfg.Duration
	}
	res.BytesReceived = received.Load()
	res.ClientStats = conn.ConnectionStats()
	conn.CloseWithError(0, "done")
	if cfg.Bytes <= 0 {
		wg.Wait()
	}
	res.PacketsSent = res.ClientStats.PacketsSent
	res.PacketsLost = res.ClientStats.PacketsLost
	if res.Elapsed > 0 {
		res.GoodputBps = float64(res.BytesReceived) * 8 / res.Elapsed.Seconds()
	}
	live.Lock()
	for _, nd := range n.Nodes() {
		c := nd.Counters
		res.NetPackets += c.SentPackets
		res.NetBytes += c.SentBytes
		res.LossDrops += c.Drops[netmodel.DropLoss]
		res.QueueDrops += c.Drops[netmodel.DropQueue]
		res.SockDrops += c.Drops[netmodel.DropSockBuf]
	}
	res.Events = sim.Fired()
	live.Unlock()
	res.CoreWakes = live.Wakes()
	return res, nil
}
