package queues

import (
	"strconv"
	"strings"

	"github.com/uplinksim/uplink/des"
)

// Discipline describes one discipline New builds, for listings (uplink
// run --list-qdiscs): what it is, the code or document it follows, and its
// spec keys with their defaults.
type Discipline struct {
	Name   string
	About  string // what it does, in a line
	Source string // the Linux code, RFC or simulator it follows
	Keys   []SpecKey
}

// SpecKey is one key of a discipline's spec.
type SpecKey struct {
	Key string
	// Default is the value the discipline has without the key, written as
	// the key reads it (a spec with every key at its default builds the
	// same discipline as the bare name).
	Default string
	// Takes says what values the key takes.
	Takes string
}

// Disciplines describes every discipline New builds, in SpecNames'
// order, with its keys in the order New reads them. The defaults are read
// from the default configurations, so they are the ones New uses.
func Disciplines() []Discipline {
	codel := DefaultCoDelConfig()
	fqc := DefaultFQCoDelConfig()
	pie := DefaultPIEConfig()
	fqp := DefaultFQPIEConfig()
	drr := DefaultDRRConfig()
	return []Discipline{
		{"fifo", "first in, first out with tail drop; unlimited unless a limit is given (0: none)",
			"Linux net/sched/sch_fifo.c without a default limit",
			[]SpecKey{
				{"packets", "none", "packets, or none (0)"},
				{"bytes", "0", "bytes, 0 for none"},
			}},
		{"pfifo", "first in, first out, tail drop at a packet limit",
			"Linux net/sched/sch_fifo.c (pfifo); the limit is txqueuelen",
			[]SpecKey{{"limit", strconv.Itoa(DefaultPfifoLimit), "packets, at least 1"}}},
		{"bfifo", "first in, first out, tail drop at a byte limit",
			"Linux net/sched/sch_fifo.c (bfifo); the limit is txqueuelen × 1 514",
			[]SpecKey{{"limit", strconv.Itoa(DefaultBfifoLimit), "bytes, at least 1"}}},
		{"codel", "one FIFO under the CoDel law, drops at dequeue",
			"Linux net/sched/sch_codel.c and include/net/codel_impl.h (RFC 8289); profile=shadow: Shadow 3.x's inbound router queue",
			append([]SpecKey{
				{"profile", "linux", "linux or shadow (10 ms target, no limit, float law, 1 500-byte guard); applies first"},
				{"limit", limitText(codel.Limit), "packets, or none (0)"},
			}, codelKeyList(codel.CoDelParams)...)},
		{"fq_codel", "flows hashed into buckets, each under CoDel, served by DRR++",
			"Linux net/sched/sch_fq_codel.c (RFC 8290); profile=simnet: the fq_codel of simnet's links",
			append([]SpecKey{
				{"profile", "linux", "linux or simnet (128 buckets on the address pair, quantum 1 500, no limit, no ECN); applies first"},
				{"limit", limitText(fqc.Limit), "packets over all flows, or none (0)"},
				{"flows", strconv.Itoa(fqc.Flows), "buckets, 1 to " + strconv.Itoa(MaxFlows)},
				{"quantum", strconv.Itoa(fqc.Quantum), "bytes per round"},
				{"memory_limit", strconv.Itoa(fqc.MemoryLimit), "bytes held, 0 for none"},
				{"drop_batch", strconv.Itoa(fqc.DropBatch), "packets one overflow drops from the fattest flow"},
				{"classify", fqc.Classify.String(), classifyTakes},
			}, codelKeyList(fqc.CoDelParams)...)},
		{"pie", "one FIFO with PIE's early drop, drops at enqueue",
			"Linux net/sched/sch_pie.c and include/net/pie.h (RFC 8033); profile=rfc: RFC 8033 and ns-3",
			append([]SpecKey{
				{"profile", "linux", "linux, rfc (burst shrinking per update, no 250 ms boost) or legacy (20 ms target, 30 ms tupdate); applies first"},
				{"limit", limitText(pie.Limit), "packets, or none (0)"},
			}, pieKeyList(pie.PIEParams)...)},
		{"fq_pie", "flows hashed into buckets, each with PIE's early drop, served by DRR++",
			"Linux net/sched/sch_fq_pie.c",
			append([]SpecKey{
				{"limit", limitText(fqp.Limit), "packets over all flows, or none (0)"},
				{"flows", strconv.Itoa(fqp.Flows), "buckets, 1 to " + strconv.Itoa(MaxFlows)},
				{"quantum", strconv.Itoa(fqp.Quantum), "bytes per round"},
				{"memory_limit", strconv.Itoa(fqp.MemoryLimit), "bytes above which arrivals are counted, 0 for none"},
				{"classify", fqp.Classify.String(), classifyTakes},
			}, pieKeyList(fqp.PIEParams)...)},
		{"drr", "a fair share without AQM: flows hashed into buckets, each a FIFO, deficit round robin",
			"Linux net/sched/sch_drr.c (Shreedhar and Varghese); sched=fq: the DRR++ of sch_fq_codel.c without CoDel",
			[]SpecKey{
				{"limit", limitText(drr.Limit), "packets over all flows, or none (0)"},
				{"flows", strconv.Itoa(drr.Flows), "buckets, 1 to " + strconv.Itoa(MaxFlows)},
				{"quantum", strconv.Itoa(drr.Quantum), "bytes per round"},
				{"classify", drr.Classify.String(), classifyTakes},
				{"sched", drr.Sched.String(), strings.Join(drrSchedNames[:], " or ")},
			}},
		{"shadow-fifo", "sockets in the order of their next packet's priority (the order of sends), unlimited",
			"Shadow 3.x's interface discipline fifo (experimental.interface_qdisc, the default)", nil},
		{"shadow-rr", "round robin over sockets, one packet each, unlimited",
			"Shadow 3.x's interface discipline round-robin (experimental.interface_qdisc)", nil},
	}
}

const classifyTakes = "5tuple, pair (the address pair) or sock (the sending socket)"

// limitText writes a packet limit as the key reads it.
func limitText(n int) string {
	if n == 0 {
		return "none"
	}
	return strconv.Itoa(n)
}

func durText(t des.Time) string { return t.String() }

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func codelKeyList(p CoDelParams) []SpecKey {
	ce := "off"
	if p.CEThreshold > 0 {
		ce = durText(p.CEThreshold)
	}
	sqrt := "newton"
	if p.FloatSqrt {
		sqrt = "float"
	}
	return []SpecKey{
		{"target", durText(p.Target), "duration, the acceptable standing delay"},
		{"interval", durText(p.Interval), "duration, the control law's window"},
		{"mtu", strconv.Itoa(p.MTU), "bytes: no drop while the backlog is at most this"},
		{"ecn", onOff(p.ECN), "on or off: CE-mark ECN-capable packets instead of dropping"},
		{"ce_threshold", ce, "duration, or off: CE-mark above this sojourn"},
		{"sqrt", sqrt, "newton (Linux's fixed point) or float (RFC 8289's, Shadow's)"},
	}
}

func pieKeyList(p PIEParams) []SpecKey {
	burst := "dequeue"
	if p.BurstPerUpdate {
		burst = "update"
	}
	return []SpecKey{
		{"target", durText(p.Target), "duration, the reference queue delay"},
		{"tupdate", durText(p.TUpdate), "duration, the update period"},
		{"alpha", strconv.FormatFloat(p.Alpha, 'g', -1, 64), "0 to " + strconv.Itoa(MaxSpecPIEGain) + ", per second (RFC units, not tc's sixteenths)"},
		{"beta", strconv.FormatFloat(p.Beta, 'g', -1, 64), "0 to " + strconv.Itoa(MaxSpecPIEGain) + ", per second"},
		{"max_burst", durText(p.MaxBurst), "duration, the burst allowance when idle (0: none)"},
		{"ecn", onOff(p.ECN), "on or off: CE-mark instead of an early drop"},
		{"ecn_prob", strconv.FormatFloat(p.ECNProb, 'g', -1, 64), "fraction or percentage: mark only below this probability"},
		{"bytemode", onOff(p.Bytemode), "on or off: scale the probability by packet size"},
		{"dq_rate_estimator", onOff(p.DqRateEstimator), "on or off: the delay from the departure rate, not timestamps"},
		{"burst", burst, "dequeue (Linux) or update (RFC 8033): how the allowance shrinks"},
		{"boost", onOff(p.HighDelayBoost), "on or off: 2 % more per update above 250 ms of delay"},
		{"mtu", strconv.Itoa(p.MTU), "bytes, of the 2-MTU guard and byte mode"},
	}
}
