package cell

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
	"github.com/uplinksim/uplink/queues"
	"github.com/uplinksim/uplink/transports/tcp"
)

// Profile is a named bundle of network-model knobs that reproduces one
// reference backend (docs/references.md, "The harness", "Shadow" and
// "Linux namespaces"). Every knob has a name, so the command line can
// override it (--knob name=value) and every record lists its value.
type Profile struct {
	Name      string
	UpQdisc   string // uplink queue assignment: a queues spec, or a mix (AssignQdiscs)
	DownQdisc string // downlink queue assignment
	// HostQdisc, when set, puts a host queue (drained at HostRate) in front
	// of every uplink's access queue; "" for none (every backend's model).
	HostQdisc string
	HostRate  int64  // bit/s of the host stage's line
	Shaper    string // "serial": continuous, one-MTU burst; "shadow": 1 ms refill, rate/1000 + 1 500 bytes
	SendMode  string // "never-block" or "block" (writes wait on a full send buffer)
	RecvSlots int    // datagrams a receive buffer holds (0: bytes only)
	RecvBlock bool   // a full receive buffer holds the downlink back instead of dropping
	// SockBufMax caps socket buffer requests before doubling (Linux
	// rmem_max / wmem_max); 0: only the 256 MiB ceiling.
	SockBufMax int
	// SndBufMax, when positive, caps send buffer requests of UDP sockets
	// alone, below SockBufMax (wmem_max apart from rmem_max): section 5's
	// intervention on Shadow's QUIC send buffer. 0 (every profile's
	// value, left out of the cell key): SockBufMax alone.
	SndBufMax int `json:",omitempty"`
	// MeshWait: "stable" waits Settle after subscribing, then until every
	// mesh is within [Dlo, Dhi] (the harness); "fixed" publishes at Settle
	// after subscribing, whatever the meshes (Shadow's fixed instants).
	MeshWait string
	Settle   float64 // seconds
	// TCP is the TCP model preset of Transport "tcp": "linux"
	// (tcp.LinuxConfig: CUBIC with HyStart, SACK, pacing, Linux's delayed
	// ACKs and autotuning) or "shadow" (tcp.ShadowConfig: Shadow's Reno,
	// no SACK, unpaced, Shadow's delayed ACKs and autotuning).
	TCP string
	// RouterStart is when each host starts its gossipsub router:
	// RouterBeforeDial (every profile, from the study's code; also "") or
	// RouterAfterDial.
	RouterStart string `json:",omitempty"`
	// FirstHeartbeat, when set (a duration, stored as time.Duration's
	// String), makes the nodes subscribe at the instant after the dial
	// when the routers' next heartbeat is that far off, which sets how
	// many peers' subscriptions the first graft can see (before-dial
	// only). "": subscribe as the dial ends.
	FirstHeartbeat string `json:",omitempty"`
	// PhaseRules are the phase router's rules for the segmented arms:
	// PhaseRulesFork (every profile: the study's pubsub fork; also "") or
	// PhaseRulesProse.
	PhaseRules string `json:",omitempty"`
	// TopicMeshWait is the "stable" wait of a cell with several topics
	// (variant C): TopicMeshSlots (the harness profile: the study's
	// harness's variant C wait) or TopicMeshEach (also "").
	TopicMeshWait string `json:",omitempty"`
	// CC and Pacing, when set, override the preset's congestion control
	// (cubic, newreno, shadow-reno) and pacing (on, off); every other field
	// of the preset stays.
	CC, Pacing string
	// IdleRestart, when set, overrides the preset's restart after idle
	// (tcp.Config.SlowStartAfterIdle: on for linux, off for shadow); ""
	// keeps the preset's and is left out of the cell key.
	IdleRestart string `json:",omitempty"`
	// GSO sends the datagrams a UDP socket writes to one destination in
	// one instant as GSO units, as quic-go does on Linux
	// (netmodel.Config.GSO); off in every profile, and left out of the
	// cell key when off. TCP is unaffected.
	GSO bool `json:",omitempty"`
	// NetemLimit is the packets each ordered pair's latency pipe holds,
	// netem's limit (netmodel.Config.NetemLimit); 0, unlimited, in every
	// profile, and left out of the cell key when 0.
	NetemLimit int `json:",omitempty"`
	// CPU is every host's CPU cost per packet received and sent
	// (netmodel.NodeConfig.CPU), as des.CPUSpec writes it; "" (off) in
	// every profile, and left out of the cell key when off.
	CPU string `json:",omitempty"`
	// MTU is every link's MTU (netmodel.Config.MTU); with TCP the model's
	// MSS is MTU − 40. 0: 1 500, and left out of the cell key.
	MTU int `json:",omitempty"`
	// TCPRmem and TCPWmem, when set, override the TCP preset's receive
	// and send buffer triples, Linux's net.ipv4.tcp_rmem and tcp_wmem
	// ("min default max" in bytes); "" keeps the preset's and is left out
	// of the cell key.
	TCPRmem string `json:",omitempty"`
	TCPWmem string `json:",omitempty"`
}

// The profiles, knob by knob with the source of each value
// (docs/references.md, "The harness", "Shadow", "Linux namespaces" and
// "Mesh formation and publish").
var profiles = map[string]Profile{
	// The in-process harness: simnet under testing/synctest.
	"harness": {
		Name: "harness",
		// fq_codel, 128 buckets hashed on the (to, from) address pair,
		// quantum = MTU, target 5 ms, interval 100 ms, no packet limit.
		UpQdisc:   "fq_codel:profile=simnet",
		DownQdisc: "fq_codel:profile=simnet",
		// A token bucket with a burst of one MTU (1 500 bytes).
		Shaper: "serial",
		// No send-buffer back-pressure: quic-go's congestion control and
		// pacer do the work.
		SendMode: "never-block",
		// The receiving socket is a 32-slot channel that blocks the link.
		RecvSlots: 32, RecvBlock: true,
		// docs/references.md, "Mesh formation and publish": 2.5 s after
		// subscribing, then until every mesh is within [Dlo, Dhi].
		MeshWait: "stable", Settle: 2.5,
		// Variant C's cells (variantC in the study's harness) do not
		// sleep after subscribing: they poll every 100 ms until all but a
		// few nodes hold between T × Dlo and T × Dhi mesh slots over the
		// T topics (awaitMeshMany), so they publish soon after the first
		// graft.
		TopicMeshWait: TopicMeshSlots,
		// The harness's builder (the study's testing/gossipsim, New) calls
		// NewGossipSub on every host, then dials the edges one by one in
		// edge order, then every node subscribes: the routers' heartbeats
		// run through the dial, so the subscribe instant falls at a phase
		// of the heartbeat set by the dial's length, not 100 ms before it.
		RouterStart: RouterBeforeDial,
		PhaseRules:  PhaseRulesFork,
		HostRate:    1e9,
		// TCP (--transport tcp): the harness's hosts run Linux's stack.
		TCP: "linux",
	},
	// Shadow 3.x.
	"shadow": {
		Name: "shadow",
		// The interface queues sockets: `fifo` by default, no limit, no AQM.
		// It sends by packet priority, a per-host counter taken when a
		// datagram is sent (UDP) or when the application writes the data
		// (Shadow's TCP cuts each write into segments at once): the order
		// of writes, not of congestion-window releases (queues.ShadowFIFO).
		UpQdisc: "shadow-fifo",
		// Inbound: a router queue with CoDel, target 10 ms, interval
		// 100 ms, no limit, no flow queueing.
		DownQdisc: "codel:profile=shadow",
		// Token bucket refilled every 1 ms with rate/1000 bytes, capacity
		// refill + 1 500 bytes, both directions.
		Shaper: "shadow",
		// UDP: quic-go asks 7 MiB, stored doubled; a full send buffer
		// blocks the writer; ceiling 256 MiB.
		SendMode: "block",
		// Shadow cells use fixed instants: publish at 60 s after start;
		// the settle time here is counted from subscribing.
		MeshWait: "fixed", Settle: 10,
		// The Shadow node (the study's shadow_node_test.go, TestShadowNode)
		// calls NewGossipSub at process start, then sleeps until its dial
		// instant, dials its edges, and subscribes at a later instant.
		RouterStart: RouterBeforeDial,
		PhaseRules:  PhaseRulesFork,
		HostRate:    1e9,
		// TCP: Shadow's own stack (Reno with Shadow's constants, unpaced).
		TCP: "shadow",
	},
	// Linux network namespaces (report Appendix C).
	"kernel": {
		Name: "kernel",
		// HTB rate class with a pfifo leaf (txqueuelen 1 000) on upload
		// and, through an intermediate device, on download.
		UpQdisc:   "pfifo:limit=1000",
		DownQdisc: "pfifo:limit=1000",
		// HTB: approximated by the continuous shaper with a one-MTU burst
		// (HTB's default burst of about rate/HZ is not modelled).
		Shaper: "serial",
		// A full UDP send buffer blocks the writer.
		SendMode: "block",
		// UDP buffer requests capped by rmem_max / wmem_max (212 992).
		SockBufMax: 212992,
		// Linux cells: subscribe at 10 s, publish at 30 s: 20 s after
		// subscribing.
		MeshWait: "fixed", Settle: 20,
		// The Linux cells run the Shadow node's binary, one process per
		// namespace (report Appendix C): its order.
		RouterStart: RouterBeforeDial,
		PhaseRules:  PhaseRulesFork,
		HostRate:    1e9,
		// TCP: the kernel's stack (CUBIC, paced).
		TCP: "linux",
		// GSO and netem's limit stay off: quic-go batches with GSO on
		// Linux, but whether the namespace cells' sockets and veths did,
		// and which limit their netem had (tc's default is 1 000
		// packets), the report does not say (docs/model.md).
	},
}

// The values of the router-start knob.
const (
	// RouterAfterDial starts every host's gossipsub router once the whole
	// graph is dialled, just before the subscriptions (a harness that
	// builds hosts, connects them, then attaches gossipsub does this). The
	// first heartbeat then comes 100 ms after subscribing, and grafts the
	// peers heard from by then: near ones.
	RouterAfterDial = "after-dial"
	// RouterBeforeDial starts the routers with the hosts, before any dial
	// (a node program that starts gossipsub, then dials its edges): what
	// the study's harness and Shadow node do.
	RouterBeforeDial = "before-dial"
)

// The values of the phase-rules knob.
const (
	// PhaseRulesFork follows the study's fork of go-libp2p-pubsub
	// (phaseForwarding.trim and rpcs in its gossipsub.go): a relay's
	// source counts against r once its IDONTWANT has arrived, and every
	// forwarded segment is cached and gossiped at the heartbeat
	// (phase.Policy's CountSource and Gossip).
	PhaseRulesFork = "fork"
	// PhaseRulesProse is the study's description of the arms read alone,
	// without its fork's source: the source skipped but not counted, and
	// no heartbeat gossip on the segment topics.
	PhaseRulesProse = "prose"
)

// The values of the topic-mesh-wait knob.
const (
	// TopicMeshSlots is the study's harness's wait for a cell with T
	// topics (awaitMeshMany): from the subscriptions, no settle time,
	// every 100 ms, until all but max(1, min(T·N/100, N/10)) nodes hold
	// between T·Dlo and T·Dhi mesh slots over the T topics; it publishes
	// anyway after 6 virtual minutes.
	TopicMeshSlots = "slots"
	// TopicMeshEach waits the settle time, then until every topic's mesh
	// of every node is within [Dlo, Dhi] (the stable wait, topic by
	// topic).
	TopicMeshEach = "each"
)

// ProfileNames lists the built-in profiles.
func ProfileNames() []string {
	names := make([]string, 0, len(profiles))
	for n := range profiles {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// LookupProfile returns a built-in profile by name.
func LookupProfile(name string) (Profile, error) {
	p, ok := profiles[name]
	if !ok {
		return Profile{}, fmt.Errorf("unknown profile %q; valid: %s", name, strings.Join(ProfileNames(), ", "))
	}
	return p, nil
}

// knob is one named, settable field of a Profile.
type knob struct {
	name, help string
	get        func(*Profile) string
	set        func(*Profile, string) error
}

func stringKnob(name, help string, f func(*Profile) *string, valid ...string) knob {
	return knob{name, help,
		func(p *Profile) string { return *f(p) },
		func(p *Profile, v string) error {
			if len(valid) > 0 && !slices.Contains(valid, v) {
				return fmt.Errorf("knob %s=%q: valid values: %s", name, v, strings.Join(valid, ", "))
			}
			*f(p) = v
			return nil
		}}
}

// twoValueKnob is a two-valued string knob whose value zero is stored as
// the empty string, so that a Profile without the field has it; other is
// the other value.
func twoValueKnob(name, help string, f func(*Profile) *string, zero, other string) knob {
	return knob{name, help,
		func(p *Profile) string { return cmp.Or(*f(p), zero) },
		func(p *Profile, v string) error {
			switch v {
			case zero:
				*f(p) = ""
			case other:
				*f(p) = v
			default:
				return fmt.Errorf("knob %s=%q: valid values: %s, %s", name, v, zero, other)
			}
			return nil
		}}
}

// intKnob is an integer knob within [0, hi].
func intKnob(name, help string, hi int64, f func(*Profile) *int) knob {
	return knob{name, help,
		func(p *Profile) string { return strconv.Itoa(*f(p)) },
		func(p *Profile, v string) error {
			n, err := des.ParseInt(v, 0, hi)
			if err != nil {
				return fmt.Errorf("knob %s=%w", name, err)
			}
			*f(p) = int(n)
			return nil
		}}
}

// tcpBufferKnob is a TCP buffer sysctl knob (Linux's tcp_rmem or
// tcp_wmem triple) over the TCP preset's; its value reads as the triple
// the TCP model gets.
func tcpBufferKnob(name, dir string, f func(*Profile) *string, inEffect func(tcp.Config) tcp.BufferSizes) knob {
	return knob{name, "TCP " + dir + " buffer sysctl, min,default,max in bytes, such as 4096,131072,6291456 (empty: the tcp preset's)",
		func(p *Profile) string {
			if c, err := p.tcpConfig(0); err == nil {
				b := inEffect(c)
				return fmt.Sprintf("%d,%d,%d", b.Min, b.Default, b.Max)
			}
			return *f(p)
		},
		func(p *Profile, v string) error {
			t, err := des.ParseBufferTriple(v)
			if err != nil {
				return fmt.Errorf("knob %s: %w", name, err)
			}
			*f(p) = fmt.Sprintf("%d,%d,%d", t[0], t[1], t[2])
			return nil
		}}
}

// qdiscKnob is a queue assignment knob (AssignQdiscs). An open mix
// ("pie@30%") set over the value it replaces is stored completed by it
// (CompleteMix: "pie@30%;fq_codel:profile=simnet" over the harness's), so
// that the knob's value, and a record's, names every node's discipline.
func qdiscKnob(name, link string, f func(*Profile) *string) knob {
	help := "queue discipline of every " + link + ": a queues spec (uplink run --list-qdiscs), or a mix over the nodes, pie@30%;fq_codel; a mix whose every entry has a share, pie@30%, leaves the other nodes on the value it replaces (the profile's); pie@30%+pub puts the publisher among the PIE nodes, pie@30%-pub keeps it out (else the seed places it)"
	return knob{name, help,
		func(p *Profile) string { return *f(p) },
		func(p *Profile, v string) error {
			if strings.TrimSpace(v) == "" {
				return fmt.Errorf("knob %s: empty queue assignment: give a queues spec such as fq_codel, or a mix such as pie@30%%;fq_codel (uplink run --list-qdiscs)", name)
			}
			full, err := CompleteMix(v, *f(p))
			if err != nil {
				return fmt.Errorf("knob %s: %w", name, err)
			}
			*f(p) = full
			return nil
		}}
}

// Bounds of the integer knobs: a receive buffer's datagram slots, and
// socket buffer requests (an int in the socket API).
const (
	maxRecvSlots = 1 << 20
	maxSockBuf   = 1<<31 - 1
)

// tcpSwitch is an on/off knob over a field of the tcp preset: f is the
// profile's override ("" keeps the preset's), inEffect reads the value the
// TCP model gets.
func tcpSwitch(name, help string, f func(*Profile) *string, inEffect func(tcp.Config) bool) knob {
	return knob{name, help,
		func(p *Profile) string {
			if c, err := p.tcpConfig(0); err == nil {
				return onOff(inEffect(c))
			}
			return *f(p)
		},
		func(p *Profile, v string) error {
			if v != "on" && v != "off" {
				return fmt.Errorf("knob %s=%q: valid values: on, off", name, v)
			}
			*f(p) = v
			return nil
		}}
}

var knobs = []knob{
	qdiscKnob("uplink-qdisc", "uplink", func(p *Profile) *string { return &p.UpQdisc }),
	qdiscKnob("downlink-qdisc", "downlink", func(p *Profile) *string { return &p.DownQdisc }),
	stringKnob("host-qdisc", "host queue in front of every uplink, drained at host-rate (empty: none)", func(p *Profile) *string { return &p.HostQdisc }),
	{"host-rate", "line rate of the host queue stage, bit/s",
		func(p *Profile) string { return strconv.FormatInt(p.HostRate, 10) },
		func(p *Profile, v string) error {
			r, err := des.ParseRate(v)
			if err != nil {
				return fmt.Errorf("knob host-rate: %w", err)
			}
			p.HostRate = r
			return nil
		}},
	stringKnob("shaper", "serial (one-MTU burst) or shadow (1 ms refill)", func(p *Profile) *string { return &p.Shaper }, "serial", "shadow"),
	stringKnob("send-mode", "never-block or block on a full send buffer", func(p *Profile) *string { return &p.SendMode }, "never-block", "block"),
	intKnob("recv-slots", "datagrams a receive buffer holds (0: bytes only)", maxRecvSlots, func(p *Profile) *int { return &p.RecvSlots }),
	{"recv-block", "a full receive buffer blocks the downlink (true) or drops (false)",
		func(p *Profile) string { return strconv.FormatBool(p.RecvBlock) },
		func(p *Profile, v string) error {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("knob recv-block=%q: want true or false", v)
			}
			p.RecvBlock = b
			return nil
		}},
	intKnob("sockbuf-max", "cap on socket buffer requests before doubling (0: none)", maxSockBuf, func(p *Profile) *int { return &p.SockBufMax }),
	{"gso", "UDP datagrams of one instant and destination travel as GSO units (up to quic-go's 20 KiB batch): one packet for queues, shapers, loss and netem-limit, split at delivery (true, false)",
		func(p *Profile) string { return strconv.FormatBool(p.GSO) },
		func(p *Profile, v string) error {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("knob gso=%q: want true or false", v)
			}
			p.GSO = b
			return nil
		}},
	{"cpu", "every host's CPU time per packet received (rx) and sent (tx), per packet and/or per wire byte, e.g. rx:3us+0.2ns/B,tx:2us+0.1ns/B: a datagram is readable, and a sent packet reaches the uplink, when the host has spent it, one packet at a time (off: none)",
		func(p *Profile) string { return p.cpuSpec().String() },
		func(p *Profile, v string) error {
			c, err := des.ParseCPU(v)
			if err != nil {
				return fmt.Errorf("knob %w", err)
			}
			p.CPU = ""
			if !c.Off() {
				p.CPU = c.String()
			}
			return nil
		}},
	{"mtu", "every link's MTU in bytes, 576 to 65535 (Linux loopback's 65536 runs as 65535); TCP's MSS is MTU - 40 (0: 1500)",
		func(p *Profile) string { return strconv.Itoa(p.MTU) },
		func(p *Profile, v string) error {
			n, err := des.ParseInt(v, 0, 65535)
			if err == nil && n != 0 && n < 576 {
				err = fmt.Errorf("%q: want 576 to 65535, or 0 for 1500", v)
			}
			if err != nil {
				return fmt.Errorf("knob mtu=%w", err)
			}
			p.MTU = int(n)
			return nil
		}},
	tcpBufferKnob("tcp-rmem", "receive", func(p *Profile) *string { return &p.TCPRmem }, func(c tcp.Config) tcp.BufferSizes { return c.RecvBuffer }),
	tcpBufferKnob("tcp-wmem", "send", func(p *Profile) *string { return &p.TCPWmem }, func(c tcp.Config) tcp.BufferSizes { return c.SendBuffer }),
	intKnob("netem-limit", "packets each ordered pair's latency pipe holds, netem's limit (tc's default 1000); a packet past it is dropped at the tail (0: unlimited)", queues.MaxSpecPackets, func(p *Profile) *int { return &p.NetemLimit }),
	intKnob("sndbuf-max", "cap on UDP send buffer requests alone before doubling, below sockbuf-max (0: none; 32768 stores section 5's 64 KB)", maxSockBuf, func(p *Profile) *int { return &p.SndBufMax }),
	stringKnob("mesh-wait", "stable (wait for every mesh within [Dlo, Dhi]) or fixed", func(p *Profile) *string { return &p.MeshWait }, "stable", "fixed"),
	{"settle", "seconds from subscribing to publishing (or to the first mesh check)",
		func(p *Profile) string { return strconv.FormatFloat(p.Settle, 'g', -1, 64) },
		func(p *Profile, v string) error {
			d, err := des.ParseSeconds(v, 0, des.MaxVirtual)
			if err != nil {
				return fmt.Errorf("knob settle: %w", err)
			}
			p.Settle = d.Seconds()
			return nil
		}},
	twoValueKnob("router-start", "when each host starts its gossipsub router: before-dial (every profile: the study's code) or after-dial (the routers start after the whole graph is dialled, just before subscribing)", func(p *Profile) *string { return &p.RouterStart }, RouterBeforeDial, RouterAfterDial),
	twoValueKnob("topic-mesh-wait", "with mesh-wait=stable and several topics (variant C): slots (the harness profile: the study's harness, from the subscriptions until all but a few nodes hold T·Dlo to T·Dhi mesh slots) or each (after settle, every topic's mesh within [Dlo, Dhi])", func(p *Profile) *string { return &p.TopicMeshWait }, TopicMeshEach, TopicMeshSlots),
	twoValueKnob("phase-rules", "the phase router's rules for the segmented arms: fork (every profile: the study's pubsub fork, a relay's source counted against r once it sent IDONTWANT, segments gossiped at the heartbeat) or prose (the study's description read alone: the source skipped but not counted, no heartbeat gossip on the segment topics)", func(p *Profile) *string { return &p.PhaseRules }, PhaseRulesFork, PhaseRulesProse),
	{"first-heartbeat", "with router-start=before-dial: subscribe when the routers' next heartbeat is this far off, e.g. 50ms (the first graft sees near peers only) or 400ms (every peer); empty: subscribe as the dial ends",
		func(p *Profile) string { return p.FirstHeartbeat },
		func(p *Profile, v string) error {
			if v == "" {
				p.FirstHeartbeat = ""
				return nil
			}
			d, err := des.ParseDuration(v, 0, des.MaxVirtual)
			if err != nil {
				return fmt.Errorf("knob first-heartbeat: %w, or empty", err)
			}
			p.FirstHeartbeat = d.Duration().String()
			return nil
		}},
	stringKnob("tcp", "TCP model preset of --transport tcp: linux (CUBIC, paced) or shadow (Shadow's Reno, unpaced)", func(p *Profile) *string { return &p.TCP }, tcpPresets...),
	{"cc", "TCP congestion control, over the tcp preset's: " + strings.Join(ccNames, ", "),
		func(p *Profile) string {
			if c, err := p.tcpConfig(0); err == nil {
				return c.CongestionControl
			}
			return p.CC
		},
		func(p *Profile, v string) error {
			if !slices.Contains(ccNames, v) {
				return fmt.Errorf("knob cc=%q: valid values: %s", v, strings.Join(ccNames, ", "))
			}
			p.CC = v
			return nil
		}},
	tcpSwitch("pacing", "TCP pacing, over the tcp preset's: on or off",
		func(p *Profile) *string { return &p.Pacing }, func(c tcp.Config) bool { return c.Pacing }),
	tcpSwitch("idle-restart", "TCP window restart after an idle RTO (Linux's tcp_slow_start_after_idle), over the tcp preset's: on or off",
		func(p *Profile) *string { return &p.IdleRestart }, func(c tcp.Config) bool { return c.SlowStartAfterIdle }),
}

var (
	tcpPresets = []string{"linux", "shadow"}
	ccNames    = []string{tcp.CUBIC, tcp.NewReno, tcp.ShadowReno}
)

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// cpuSpec is the CPU knob's value; the knob stores only what ParseCPU
// reads.
func (p *Profile) cpuSpec() des.CPUSpec {
	c, _ := des.ParseCPU(p.CPU)
	return c
}

// tcpConfig is the TCP model of Transport "tcp": the tcp preset with the
// cc, pacing and idle-restart overrides, its initial sequence numbers
// derived from seed. The knobs cc, pacing and idle-restart report its
// values.
func (p *Profile) tcpConfig(seed uint64) (tcp.Config, error) {
	var c tcp.Config
	switch p.TCP {
	case "linux":
		c = tcp.LinuxConfig()
	case "shadow":
		c = tcp.ShadowConfig()
	default:
		return tcp.Config{}, fmt.Errorf("knob tcp=%q: valid values: %s", p.TCP, strings.Join(tcpPresets, ", "))
	}
	switch {
	case p.CC == "":
	case slices.Contains(ccNames, p.CC):
		c.CongestionControl = p.CC
	default:
		return tcp.Config{}, fmt.Errorf("knob cc=%q: valid values: %s", p.CC, strings.Join(ccNames, ", "))
	}
	if err := overrideSwitch("pacing", p.Pacing, &c.Pacing); err != nil {
		return tcp.Config{}, err
	}
	if err := overrideSwitch("idle-restart", p.IdleRestart, &c.SlowStartAfterIdle); err != nil {
		return tcp.Config{}, err
	}
	if p.MTU > 0 {
		c.MSS = p.MTU - 40
	}
	for _, b := range []struct {
		name, v string
		to      *tcp.BufferSizes
	}{{"tcp-rmem", p.TCPRmem, &c.RecvBuffer}, {"tcp-wmem", p.TCPWmem, &c.SendBuffer}} {
		if b.v == "" {
			continue
		}
		t, err := des.ParseBufferTriple(b.v)
		if err != nil {
			return tcp.Config{}, fmt.Errorf("knob %s: %w", b.name, err)
		}
		*b.to = tcp.BufferSizes{Min: int(t[0]), Default: int(t[1]), Max: int(t[2])}
	}
	if err := c.Validate(cmp.Or(p.MTU, netmodel.DefaultMTU)); err != nil {
		return tcp.Config{}, fmt.Errorf("knobs mtu, tcp-rmem, tcp-wmem: %w", err)
	}
	c.Seed = seed
	return c, nil
}

// overrideSwitch applies an on/off knob's value v to field; "" keeps the
// preset's.
func overrideSwitch(name, v string, field *bool) error {
	switch v {
	case "":
	case "on", "off":
		*field = v == "on"
	default:
		return fmt.Errorf("knob %s=%q: valid values: on, off", name, v)
	}
	return nil
}

// KnobDoc is one profile knob's name and help.
type KnobDoc struct{ Name, Help string }

// KnobDocs lists the profile knobs in order with their help (uplink run
// --list-knobs); a profile's values are its Knobs.
func KnobDocs() []KnobDoc {
	out := make([]KnobDoc, len(knobs))
	for i, k := range knobs {
		out[i] = KnobDoc{k.name, k.help}
	}
	return out
}

// Set overrides one knob by name.
func (p *Profile) Set(name, value string) error {
	for _, k := range knobs {
		if k.name == name {
			return k.set(p, value)
		}
	}
	names := make([]string, len(knobs))
	for i, k := range knobs {
		names[i] = k.name
	}
	return fmt.Errorf("unknown knob %q; valid: %s", name, strings.Join(names, ", "))
}

// SetKnobs applies "name=value" overrides in order, then checks the
// knobs that bound one another (sndbuf-max at most sockbuf-max), in
// whatever order they were given; Config.Check checks them again once
// every override is in.
func (p *Profile) SetKnobs(kvs []string) error {
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("knob %q: want name=value", kv)
		}
		if err := p.Set(k, v); err != nil {
			return err
		}
	}
	return p.checkSockBufs()
}

// checkSockBufs refuses a send buffer cap above the socket buffer cap:
// requests are capped by sockbuf-max first (netmodel's SetSendBuffer), so
// such a sndbuf-max would never bind.
func (p *Profile) checkSockBufs() error {
	if p.SockBufMax > 0 && p.SndBufMax > p.SockBufMax {
		return fmt.Errorf("knob sndbuf-max=%d is above sockbuf-max=%d, which caps send buffer requests first: give sndbuf-max at most %d, or sockbuf-max=0 (no cap)",
			p.SndBufMax, p.SockBufMax, p.SockBufMax)
	}
	return nil
}

// Knobs returns every knob's value, for records.
func (p *Profile) Knobs() map[string]string {
	m := make(map[string]string, len(knobs))
	for _, k := range knobs {
		m[k.name] = k.get(p)
	}
	return m
}

// routerStart is RouterStart's value ("" reads as RouterBeforeDial).
func (p *Profile) routerStart() string { return cmp.Or(p.RouterStart, RouterBeforeDial) }

// phaseRules is PhaseRules' value ("" reads as PhaseRulesFork).
func (p *Profile) phaseRules() string { return cmp.Or(p.PhaseRules, PhaseRulesFork) }

func (p *Profile) sendMode() netmodel.SendMode {
	if p.SendMode == "block" {
		return netmodel.BlockWhenFull
	}
	return netmodel.NeverBlock
}

func (p *Profile) shaper(rate int64) netmodel.ShaperConfig {
	if p.Shaper == "shadow" {
		return netmodel.ShadowBucket(rate)
	}
	return netmodel.OneMTUBurst(rate)
}
