package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// A bulkSetup is a named Linux setup of uplink bulk (--setup): the flag
// values that make the model's two hosts and their path look like it.
// A flag given on the command line overrides the setup's value.
type bulkSetup struct {
	name, doc string
	knobs     []setupKnob
}

// A setupKnob is one flag's value in a setup. only names the transport
// the flag applies to ("tcp" or "quic"); "" applies to both.
type setupKnob struct {
	flag, value, only string
}

// Linux's defaults that both setups share, each with its source.
var linuxHostKnobs = []setupKnob{
	// net/ipv4/tcp.c, tcp_init: tcp_rmem 4 KiB / 128 KiB / 6 MiB and
	// tcp_wmem 4 KiB / 16 KiB / 4 MiB on a host with enough memory.
	{"tcp-rmem", "4096 131072 6291456", "tcp"},
	{"tcp-wmem", "4096 16384 4194304", "tcp"},
	// net/core/sock.c: SK_RMEM_MAX and SK_WMEM_MAX, 256 skbs of
	// SKB_TRUESIZE(256) = 832 bytes on x86-64 (upstream commit
	// a6d4f25888b8 raises both to 4 MiB in later kernels).
	{"rmem-max", "212992", ""},
	{"wmem-max", "212992", ""},
	// The default congestion control is CUBIC (net/ipv4/Kconfig,
	// DEFAULT_TCP_CONG "cubic").
	{"tcp", "linux", "tcp"},
	{"cc", "cubic", "tcp"},
	// Internal pacing only when sk_pacing_status is SK_PACING_NEEDED
	// (tcp_output.c, tcp_needs_internal_pacing): a congestion control
	// asks for it in its init (tcp_bbr.c, bbr_init), or SO_MAX_PACING_RATE
	// does (net/core/sock.c, sk_setsockopt); sch_fq paces by itself
	// (SK_PACING_FQ). CUBIC (tcp_cubic.c, cubictcp_init) asks nothing and
	// neither netem, HTB nor pfifo is fq, so Linux sends unpaced; the
	// pacing rate it computes only sizes TSO bursts and TSQ.
	{"pacing", "off", "tcp"},
	// quic-go's UDP writes wait while the socket's send buffer is full:
	// sock_alloc_send_pskb (net/core/sock.c) answers EAGAIN and Go's
	// netpoller parks the writer until the socket is writable.
	{"block-sends", "true", "quic"},
}

var bulkSetups = []bulkSetup{
	{
		name: "loopback-netem",
		doc:  "two processes in one network namespace over lo, netem on lo holding the delay",
		knobs: append([]setupKnob{
			// lo's MTU is 65 536 (drivers/net/loopback.c,
			// loopback_setup: 64 KiB), and IPv4's route MTU is clamped
			// to IP_MAX_MTU, 65 535 (net/ipv4/route.c, ipv4_mtu): the
			// model's largest. Linux's MSS with timestamps is 65 483;
			// the model carries no timestamp option, so its MSS is
			// 65 495 (docs/model.md).
			{"mtu", "65535", ""},
			// lo is not shaped: loopback_xmit hands each skb to the
			// receive path at once (unlimited: no serialisation).
			{"rate", "unlimited", ""},
			// netem's queue: tc-netem(8)'s default limit of 1 000
			// packets (iproute2 tc/q_netem.c), a tail drop at
			// sch->q.qlen >= sch->limit (sch_netem.c, netem_enqueue).
			{"netem-limit", "1000", ""},
			// Both directions leave through lo, so one netem qdisc, its
			// root, queues both (dev_queue_xmit on the same device;
			// netem's tfifo counts every packet in sch->q.qlen).
			{"netem-shared", "true", ""},
			// quic-go sends GSO batches (UDP_SEGMENT) where the kernel
			// takes them; lo has NETIF_F_GSO_SOFTWARE
			// (loopback_setup), so a batch stays one skb through
			// netem, which delays, drops and counts it as one packet
			// (it segments only to corrupt: netem_segment).
			{"gso", "true", "quic"},
		}, linuxHostKnobs...),
	},
	{
		name: "veth-htb",
		doc:  "the study's namespace cells: veth pairs, HTB with a pfifo leaf at --rate each way, netem for the delay",
		knobs: append([]setupKnob{
			// veth's MTU is Ethernet's 1 500 (drivers/net/veth.c,
			// veth_setup: ether_setup).
			{"mtu", "1500", ""},
			// HTB with a pfifo leaf both ways (docs/references.md,
			// Linux namespaces): pfifo's limit is the device's
			// txqueuelen when not given (sch_fifo.c, fifo_init),
			// 1 000 (DEFAULT_TX_QUEUE_LEN, ether_setup). The rate is
			// --rate's.
			{"qdisc", "up=pfifo:limit=1000", ""},
			{"qdisc", "down=pfifo:limit=1000", ""},
			{"netem-limit", "1000", ""},
			// A GSO batch stays one skb through HTB: the qdisc takes
			// the skb before validate_xmit_skb would segment it
			// (net/core/dev.c, __dev_xmit_skb, then sch_direct_xmit),
			// HTB charges its qdisc_pkt_len (every segment's headers,
			// qdisc_pkt_len_init) and its pfifo counts it once; veth
			// (VETH_FEATURES), the bridge and netem pass it whole.
			{"gso", "true", "quic"},
		}, linuxHostKnobs...),
	},
}

// setupNames lists the setups for help and errors.
func setupNames() string {
	names := make([]string, len(bulkSetups))
	for i, s := range bulkSetups {
		names[i] = s.name
	}
	return strings.Join(names, ", ")
}

// findSetup returns the named setup.
func findSetup(name string) (*bulkSetup, error) {
	for i := range bulkSetups {
		if bulkSetups[i].name == name {
			return &bulkSetups[i], nil
		}
	}
	return nil, usageError{fmt.Errorf("--setup %q: valid setups are: %s", name, setupNames())}
}

// apply sets the setup's values of the flags not given on the command
// line, for transport. Values set this way do not count as given
// (fs.Changed stays false). A --qdisc given for one direction keeps the
// setup's for the other.
func (s *bulkSetup) apply(fs *pflag.FlagSet, transport string) error {
	given := map[string]bool{}
	if q, err := fs.GetStringArray("qdisc"); err == nil {
		for _, kv := range q {
			dir, _, _ := strings.Cut(kv, "=")
			given[dir] = true
		}
	}
	for _, k := range s.knobs {
		if k.only != "" && k.only != transport {
			continue
		}
		if k.flag == "qdisc" {
			dir, _, _ := strings.Cut(k.value, "=")
			if given[dir] {
				continue
			}
		} else if fs.Changed(k.flag) {
			continue
		}
		if err := fs.Lookup(k.flag).Value.Set(k.value); err != nil {
			return fmt.Errorf("setup %s: --%s %s: %w", s.name, k.flag, k.value, err)
		}
	}
	return nil
}
