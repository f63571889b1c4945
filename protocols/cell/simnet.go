package cell

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/libp2p/go-libp2p/core/host"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
	"github.com/uplinksim/uplink/queues"
	"github.com/uplinksim/uplink/transports/simnet"
)

// BackendSimnet is Config.Backend for a cell on github.com/marcopolo/simnet
// v0.0.7, the study's harness network (transports/simnet), instead of
// uplink's model.
const BackendSimnet = "simnet"

// QueueDropsCounted reports whether the record's queue drops were
// counted: false for a cell on simnet made before they were (its record
// says "queue statistics and queue drops" are not modelled, and its 0
// means not measured).
func (r *Record) QueueDropsCounted() bool {
	if r.Backend != BackendSimnet {
		return true
	}
	for _, s := range r.NotModelled {
		if strings.HasPrefix(s, "queue statistics and queue drops") {
			return false
		}
	}
	return true
}

// SimnetNotModelled lists what a cell on simnet does not model, as its
// record states it (Record.NotModelled); transports/simnet's doc has the
// details.
var SimnetNotModelled = []string{
	"queue disciplines other than simnet's own fq_codel (128 buckets, quantum 1500, CoDel 5 ms / 100 ms, no limit) on every link",
	"host queue stage",
	"shapers other than a golang.org/x/time/rate token bucket with a one-MTU burst",
	"IPv4 and UDP headers in link rates (UDP payload bytes only)",
	"socket send buffers (writes never block) and receive buffers in bytes (32 datagrams, blocking the link)",
	"random loss",
	"queue sojourn times and backlogs (the record's queue delays and max_backlog_packets read 0; drops and packet counts are counted from outside simnet, transports/simnet's tracker.go)",
	"TCP",
	"setup quantum",
	"reproducible runs from a seed (a goroutine per link, random flow hashing)",
}

// checkBackend checks Backend: "" (uplink's model) or BackendSimnet, which
// takes QUIC, no per-node queue assignment, no setup quantum, and a
// profile whose network knobs are the harness profile's (simnet's network:
// its fq_codel, a one-MTU bucket, writes that never block, 32 receive
// slots that block the link); the other knobs (mesh wait, settle, router
// start, the phase rules) drive the cell as on uplink's model.
func (c Config) checkBackend() error {
	switch c.Backend {
	case "":
		return nil
	case BackendSimnet:
	default:
		return fmt.Errorf("backend %q: valid backends are: \"\" (uplink's model), %s", c.Backend, BackendSimnet)
	}
	switch {
	case c.Transport != "quic":
		return fmt.Errorf("backend simnet carries datagrams only: transport %q, want quic", c.Transport)
	case c.Qdiscs != nil:
		return errors.New("backend simnet has its own fq_codel on every link: no per-node queue assignment")
	case c.SetupQuantum != 0:
		return errors.New("backend simnet has no setup quantum: its links run on the bubble's clock")
	}
	h, err := LookupProfile("harness")
	if err != nil {
		return err
	}
	want, got := h.Knobs(), c.Profile.Knobs()
	for _, k := range simnetKnobs {
		if got[k] != want[k] {
			return fmt.Errorf("backend simnet models the harness profile's network only: knob %s=%q, simnet's is %q", k, got[k], want[k])
		}
	}
	return nil
}

// simnetKnobs are the profile knobs that describe the network, which on
// simnet must keep the harness profile's values.
var simnetKnobs = []string{"uplink-qdisc", "downlink-qdisc", "host-qdisc", "shaper", "send-mode", "recv-slots", "recv-block", "sockbuf-max", "sndbuf-max", "gso", "netem-limit", "cpu", "mtu"}

// networkSimnet is the network phase on simnet: the draw's rates and
// latencies on one simnet endpoint per node at its QUIC address, the hosts'
// QUIC on those endpoints, and the cell's clock (a des.Live whose Sim holds
// no events: every packet is simnet's).
func (d *driver) networkSimnet() error {
	cfg := &d.cfg
	d.sim = des.NewSim()
	d.live = des.NewLive(d.sim)
	sn, err := simnet.New(simnet.Config{
		Up: d.draw.Up, Down: d.draw.Down, OneWay: d.draw.OneWay, Port: QUICPort,
	})
	if err != nil {
		return fmt.Errorf("cell: network: %w", err)
	}
	d.sn = sn
	d.live.Start()
	d.liveStarted = true
	d.endSetup = func() { d.restoreProcs() }
	d.newHost = func(i int) (host.Host, error) {
		return newQUICHost(func(addr *net.UDPAddr) (net.PacketConn, error) {
			if simnet.NodeOf(addr) != i || addr.Port != QUICPort {
				return nil, fmt.Errorf("node %d: listen on %v, not the node's address %v", i, addr, sn.Addr(i))
			}
			return sn.Conn(i), nil
		}, i, cfg.Seed)
	}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	return nil
}

// readSimnet adds each node's simnet endpoint counters to v (what the
// endpoint wrote and was delivered, UDP payload bytes) with its drops: its
// links' CoDel drops as queue drops and its packets to an address with no
// endpoint as noport drops, as transports/simnet counts them from outside
// simnet (Network.Counts). With readAll it adds each link's packet counts
// as a queue statistic per node and direction: enqueued, dequeued (out of
// the link) and the CoDel drops as AQM drops; simnet measures no sojourn
// times or backlogs, which stay 0.
func (d *driver) readSimnet(v *view, what reading) {
	for i := range d.sn.Len() {
		s := d.sn.Stats(i)
		up, down, noport := d.sn.Counts(i)
		c := netmodel.Counters{
			SentPackets: uint64(s.PacketsSent), SentBytes: uint64(s.BytesSent),
			RecvPackets: uint64(s.PacketsRcvd), RecvBytes: uint64(s.BytesRcvd),
		}
		c.Drops[netmodel.DropQueue] = up.Dropped + down.Dropped
		c.Drops[netmodel.DropNoPort] = noport
		v.net = append(v.net, c)
		if what == readAll {
			for _, l := range []struct {
				c  simnet.LinkCounts
				to *[]*queues.Stats
			}{{up, &v.up}, {down, &v.down}} {
				q := &queues.Stats{Enqueued: l.c.In, Dequeued: l.c.Out}
				q.Drops[queues.DropAQM] = l.c.Dropped
				*l.to = append(*l.to, q)
			}
		}
	}
}
