package queues

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/uplinksim/uplink/des"
)

// MaxSpecLen bounds a spec's length: the longest valid spec, every key of
// a discipline with long values, is a few hundred bytes.
const MaxSpecLen = 1024

// New builds a discipline from a spec string:
//
//	spec   = name [ ":" option { "," option } ]
//	option = key "=" value
//
// Names and keys (defaults are Linux's unless said otherwise):
//
//	fifo         packets=N, bytes=SIZE      unlimited unless given (0: none)
//	pfifo        limit=N                     packets, >= 1, default 1000
//	bfifo        limit=SIZE                  bytes, >= 1, default 1514000
//	codel        profile=linux|shadow, limit, target, interval, mtu, ecn,
//	             ce_threshold, sqrt=newton|float
//	fq_codel     profile=linux|simnet, limit, flows, quantum, target,
//	             interval, mtu, memory_limit, ecn, ce_threshold, drop_batch,
//	             classify=5tuple|pair|sock, sqrt=newton|float
//	pie          profile=linux|rfc|legacy, limit, target, tupdate, alpha,
//	             beta, max_burst, ecn, ecn_prob, bytemode, dq_rate_estimator,
//	             burst=dequeue|update, boost, mtu
//	fq_pie       the keys of pie but profile, plus flows, quantum,
//	             memory_limit, classify
//	drr          limit, flows, quantum, classify, sched=classic|fq
//	shadow-fifo  (no keys) Shadow's interface fifo: sockets by their next
//	             packet's priority (Packet.Prio), unlimited
//	shadow-rr    (no keys) Shadow's interface round-robin over sockets
//
// Values: N is a decimal integer; limit=none (or unlimited, or 0) means no
// packet limit where a discipline allows it (not pfifo or bfifo); SIZE is
// bytes with an optional unit b, KiB, MiB, GiB or TiB (powers of 1 024),
// a whole number of bytes (k, kb, m, mb, ... are refused: tc reads them
// as powers of 1 024, SI as powers of 1 000); durations are Go
// durations ("10ms", "500us"); booleans are on/off, true/false, yes/no,
// 1/0; ce_threshold=off disables it; ecn_prob is a fraction ("0.1") or a
// percentage ("10%"); alpha and beta are the RFC values (0.125, 1.25),
// not tc's sixteenths. A profile applies first, wherever it is written;
// each key may appear once.
//
// Bounds: packet limits and drop_batch at most MaxSpecPackets; flows at
// most MaxFlows; quantum at most MaxSpecQuantum; mtu at most MaxSpecMTU;
// byte limits at most des.MaxBytes; durations from 0 to des.MaxVirtual;
// alpha and beta from 0 to MaxSpecPIEGain; ecn_prob from 0 to 1. NaN,
// infinity and numbers that overflow are refused. The least values are
// each discipline's (a positive target, at least one flow, ...).
//
// PIE and FQ-PIE draw from rng, which must then be non-nil; the other
// disciplines ignore it.
func New(spec string, rng *rand.Rand) (Qdisc, error) {
	if len(spec) > MaxSpecLen {
		return nil, fmt.Errorf("queues: spec %.40q...: %d bytes, at most %d", spec, len(spec), MaxSpecLen)
	}
	name, opts, err := splitSpec(spec)
	if err != nil {
		return nil, err
	}
	b, ok := builders[name]
	if !ok {
		return nil, fmt.Errorf("queues: spec %q: unknown discipline %q; valid: %s", spec, name, strings.Join(SpecNames(), ", "))
	}
	q, err := b(opts, rng)
	if err != nil {
		return nil, fmt.Errorf("queues: spec %q: %w", spec, err)
	}
	return q, nil
}

// SpecNames lists the discipline names New accepts.
func SpecNames() []string {
	return []string{"fifo", "pfifo", "bfifo", "codel", "fq_codel", "pie", "fq_pie", "drr", "shadow-fifo", "shadow-rr"}
}

// built converts a constructor's result, keeping a nil Qdisc on error
// (a nil *T in an interface would not compare equal to nil).
func built[T Qdisc](q T, err error) (Qdisc, error) {
	if err != nil {
		return nil, err
	}
	return q, nil
}

type specOpt struct{ key, val string }

func splitSpec(spec string) (string, []specOpt, error) {
	name, rest, hasOpts := strings.Cut(strings.TrimSpace(spec), ":")
	name = strings.TrimSpace(name)
	if name == "" {
		return "", nil, fmt.Errorf("queues: spec %q: empty discipline name; valid: %s", spec, strings.Join(SpecNames(), ", "))
	}
	if !hasOpts {
		return name, nil, nil
	}
	var opts []specOpt
	seen := map[string]bool{}
	for _, kv := range strings.Split(rest, ",") {
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return "", nil, fmt.Errorf("queues: spec %q: option %q is not key=value", spec, strings.TrimSpace(kv))
		}
		k = strings.ToLower(k)
		if seen[k] {
			return "", nil, fmt.Errorf("queues: spec %q: key %q given twice", spec, k)
		}
		seen[k] = true
		opts = append(opts, specOpt{k, v})
	}
	return name, opts, nil
}

// specShow writes a value as given when it is plain printable text, and
// quoted otherwise, so that an error stays one readable line.
func specShow(v string) string {
	for _, r := range v {
		if r < ' ' || r > '~' || r == '"' {
			return strconv.Quote(v)
		}
	}
	return v
}

// keySet maps each key of one discipline to the function that applies it.
type keySet struct {
	name string
	keys []string
	set  map[string]func(string) error
}

func newKeySet(name string) *keySet { return &keySet{name: name, set: map[string]func(string) error{}} }

func (ks *keySet) add(key string, f func(string) error) {
	ks.keys = append(ks.keys, key)
	ks.set[key] = f
}

// apply runs the profile option first, then the others in order.
func (ks *keySet) apply(opts []specOpt) error {
	for pass := 0; pass < 2; pass++ {
		for _, o := range opts {
			if (o.key == "profile") != (pass == 0) {
				continue
			}
			f, ok := ks.set[o.key]
			if !ok {
				if len(ks.keys) == 0 {
					return fmt.Errorf("%s takes no options (got %q)", ks.name, o.key)
				}
				return fmt.Errorf("%s has no key %q; valid keys: %s", ks.name, o.key, strings.Join(ks.keys, ", "))
			}
			if err := f(o.val); err != nil {
				return fmt.Errorf("%s: %s=%s: %w", ks.name, o.key, specShow(o.val), err)
			}
		}
	}
	return nil
}

// Upper bounds of the numbers a spec gives, beside MaxFlows (Linux's
// 65 536 buckets), des.MaxBytes for byte limits (fifo bytes, bfifo limit,
// memory_limit) and des.MaxVirtual for durations. The lower bounds are the
// disciplines' own checks (NewFQCoDel and the others), whose errors name
// the default; a spec's parser refuses only what no discipline could take:
// NaN, infinity, overflow, a size or duration below zero, and values above
// these bounds.
const (
	// MaxSpecPackets bounds a packet limit and a drop batch: Linux keeps
	// both in 32 bits.
	MaxSpecPackets = 1<<32 - 1
	// MaxSpecQuantum bounds a quantum in bytes: Linux's fq_codel and
	// fq_pie refuse more than 1 MiB; drr takes the same bound.
	MaxSpecQuantum = 1 << 20
	// MaxSpecMTU bounds an mtu in bytes: the largest IPv4 packet.
	MaxSpecMTU = 65535
	// MaxSpecPIEGain bounds PIE's alpha and beta, as PIEParams does.
	MaxSpecPIEGain = 32
)

// parseCount reads a decimal integer at most hi; the discipline checks
// the lower bound.
func parseCount(hi int64) func(string) (int, error) {
	return func(v string) (int, error) {
		n, err := des.ParseInt(v, math.MinInt64, hi)
		if err != nil {
			return 0, fmt.Errorf("want a decimal integer, at most %d", hi)
		}
		return int(n), nil
	}
}

// parseLimit reads a packet limit where none is allowed: none, unlimited
// and 0 all mean no limit; otherwise 1 to MaxSpecPackets.
func parseLimit(v string) (int, error) {
	switch strings.ToLower(v) {
	case "none", "unlimited":
		return 0, nil
	}
	n, err := des.ParseInt(v, 0, MaxSpecPackets)
	if err != nil {
		return 0, fmt.Errorf("want a packet count >= 1, or none (0) for no limit; at most %d", int64(MaxSpecPackets))
	}
	return int(n), nil
}

// parseSize reads a byte count, 0 to hi, with an optional unit
// (des.ParseBytes: b, KiB, MiB, GiB, TiB); k, kb, m, mb, ..., which tc
// reads as powers of 1 024 and SI as powers of 1 000, are refused with
// both readings.
func parseSize(hi int64) func(string) (int, error) {
	return func(v string) (int, error) {
		n, err := des.ParseBytes(v, 0, hi)
		if errors.Is(err, des.ErrAmbiguousUnit) {
			return 0, err
		}
		if err != nil {
			return 0, fmt.Errorf("want a byte count such as 1514000 or 32MiB, a whole number from 0 to %s", des.FormatBytes(hi))
		}
		return int(n), nil
	}
}

// parseDur reads a Go duration from 0 to des.MaxVirtual.
func parseDur(v string) (des.Time, error) {
	d, err := des.ParseDuration(v, 0, des.MaxVirtual)
	if err != nil {
		return 0, fmt.Errorf("want a duration such as 10ms or 500us, from 0s to %v", des.MaxVirtual)
	}
	return d, nil
}

func parseBool(v string) (bool, error) {
	switch strings.ToLower(v) {
	case "on", "true", "yes", "1":
		return true, nil
	case "off", "false", "no", "0":
		return false, nil
	}
	return false, fmt.Errorf("want on or off")
}

// parseGain reads PIE's alpha or beta: a finite decimal number from 0 to
// MaxSpecPIEGain.
func parseGain(v string) (float64, error) {
	f, err := des.ParseFloat(v, 0, MaxSpecPIEGain)
	if err != nil {
		return 0, fmt.Errorf("want a decimal number from 0 to %d", MaxSpecPIEGain)
	}
	return f, nil
}

// parseProb reads a probability in [0, 1]: a fraction or a percentage.
func parseProb(v string) (float64, error) {
	f, err := des.ParseProbability(v, true)
	if err != nil {
		return 0, fmt.Errorf("want a fraction in [0, 1] such as 0.1, or a percentage such as 10%%")
	}
	return f, nil
}

func choice(v string, names ...string) (int, error) {
	for i, n := range names {
		if strings.EqualFold(v, n) {
			return i, nil
		}
	}
	return 0, fmt.Errorf("valid: %s", strings.Join(names, ", "))
}

func intKey(dst *int, parse func(string) (int, error)) func(string) error {
	return func(v string) (err error) { *dst, err = parse(v); return }
}

func durKey(dst *des.Time) func(string) error {
	return func(v string) (err error) { *dst, err = parseDur(v); return }
}

func boolKey(dst *bool) func(string) error {
	return func(v string) (err error) { *dst, err = parseBool(v); return }
}

func classifyKey(dst *Classify) func(string) error {
	return func(v string) error {
		c, err := ParseClassify(v)
		if err != nil {
			return fmt.Errorf("valid: %s", strings.Join(classifyNames[:], ", "))
		}
		*dst = c
		return nil
	}
}

func codelKeys(ks *keySet, p *CoDelParams) {
	ks.add("target", durKey(&p.Target))
	ks.add("interval", durKey(&p.Interval))
	ks.add("mtu", intKey(&p.MTU, parseSize(MaxSpecMTU)))
	ks.add("ecn", boolKey(&p.ECN))
	ks.add("ce_threshold", func(v string) (err error) {
		if strings.EqualFold(v, "off") || strings.EqualFold(v, "none") {
			p.CEThreshold = 0
			return nil
		}
		p.CEThreshold, err = parseDur(v)
		return
	})
	ks.add("sqrt", func(v string) error {
		i, err := choice(v, "newton", "float")
		p.FloatSqrt = i == 1
		return err
	})
}

func pieKeys(ks *keySet, p *PIEParams) {
	ks.add("target", durKey(&p.Target))
	ks.add("tupdate", durKey(&p.TUpdate))
	ks.add("alpha", func(v string) (err error) { p.Alpha, err = parseGain(v); return })
	ks.add("beta", func(v string) (err error) { p.Beta, err = parseGain(v); return })
	ks.add("max_burst", durKey(&p.MaxBurst))
	ks.add("ecn", boolKey(&p.ECN))
	ks.add("ecn_prob", func(v string) (err error) { p.ECNProb, err = parseProb(v); return })
	ks.add("bytemode", boolKey(&p.Bytemode))
	ks.add("dq_rate_estimator", boolKey(&p.DqRateEstimator))
	ks.add("burst", func(v string) error {
		i, err := choice(v, "dequeue", "update")
		p.BurstPerUpdate = i == 1
		return err
	})
	ks.add("boost", boolKey(&p.HighDelayBoost))
	ks.add("mtu", intKey(&p.MTU, parseSize(MaxSpecMTU)))
}

var builders = map[string]func([]specOpt, *rand.Rand) (Qdisc, error){
	"fifo": func(opts []specOpt, _ *rand.Rand) (Qdisc, error) {
		var packets, bytes int
		ks := newKeySet("fifo")
		ks.add("packets", intKey(&packets, parseLimit))
		ks.add("bytes", intKey(&bytes, parseSize(des.MaxBytes)))
		if err := ks.apply(opts); err != nil {
			return nil, err
		}
		return built(NewFIFO(packets, bytes))
	},
	"pfifo": func(opts []specOpt, _ *rand.Rand) (Qdisc, error) {
		limit := DefaultPfifoLimit
		ks := newKeySet("pfifo")
		ks.add("limit", intKey(&limit, parseCount(MaxSpecPackets)))
		if err := ks.apply(opts); err != nil {
			return nil, err
		}
		return built(NewPfifo(limit))
	},
	"bfifo": func(opts []specOpt, _ *rand.Rand) (Qdisc, error) {
		limit := DefaultBfifoLimit
		ks := newKeySet("bfifo")
		ks.add("limit", intKey(&limit, parseSize(des.MaxBytes)))
		if err := ks.apply(opts); err != nil {
			return nil, err
		}
		return built(NewBfifo(limit))
	},
	"codel": func(opts []specOpt, _ *rand.Rand) (Qdisc, error) {
		cfg := DefaultCoDelConfig()
		ks := newKeySet("codel")
		ks.add("profile", func(v string) error {
			i, err := choice(v, "linux", "shadow")
			if i == 1 {
				cfg = ShadowCoDelConfig()
			}
			return err
		})
		ks.add("limit", intKey(&cfg.Limit, parseLimit))
		codelKeys(ks, &cfg.CoDelParams)
		if err := ks.apply(opts); err != nil {
			return nil, err
		}
		return built(NewCoDel(cfg))
	},
	"fq_codel": func(opts []specOpt, _ *rand.Rand) (Qdisc, error) {
		cfg := DefaultFQCoDelConfig()
		ks := newKeySet("fq_codel")
		ks.add("profile", func(v string) error {
			i, err := choice(v, "linux", "simnet")
			if i == 1 {
				cfg = SimnetFQCoDelConfig()
			}
			return err
		})
		ks.add("limit", intKey(&cfg.Limit, parseLimit))
		ks.add("flows", intKey(&cfg.Flows, parseCount(MaxFlows)))
		ks.add("quantum", intKey(&cfg.Quantum, parseSize(MaxSpecQuantum)))
		ks.add("memory_limit", intKey(&cfg.MemoryLimit, parseSize(des.MaxBytes)))
		ks.add("drop_batch", intKey(&cfg.DropBatch, parseCount(MaxSpecPackets)))
		ks.add("classify", classifyKey(&cfg.Classify))
		codelKeys(ks, &cfg.CoDelParams)
		if err := ks.apply(opts); err != nil {
			return nil, err
		}
		return built(NewFQCoDel(cfg))
	},
	"pie": func(opts []specOpt, rng *rand.Rand) (Qdisc, error) {
		cfg := DefaultPIEConfig()
		ks := newKeySet("pie")
		ks.add("profile", func(v string) error {
			i, err := choice(v, "linux", "rfc", "legacy")
			switch i {
			case 1:
				cfg.PIEParams = RFCPIEParams()
			case 2:
				cfg.PIEParams = LegacyPIEParams()
			}
			return err
		})
		ks.add("limit", intKey(&cfg.Limit, parseLimit))
		pieKeys(ks, &cfg.PIEParams)
		if err := ks.apply(opts); err != nil {
			return nil, err
		}
		return built(NewPIE(cfg, rng))
	},
	"fq_pie": func(opts []specOpt, rng *rand.Rand) (Qdisc, error) {
		cfg := DefaultFQPIEConfig()
		ks := newKeySet("fq_pie")
		ks.add("limit", intKey(&cfg.Limit, parseLimit))
		ks.add("flows", intKey(&cfg.Flows, parseCount(MaxFlows)))
		ks.add("quantum", intKey(&cfg.Quantum, parseSize(MaxSpecQuantum)))
		ks.add("memory_limit", intKey(&cfg.MemoryLimit, parseSize(des.MaxBytes)))
		ks.add("classify", classifyKey(&cfg.Classify))
		pieKeys(ks, &cfg.PIEParams)
		if err := ks.apply(opts); err != nil {
			return nil, err
		}
		return built(NewFQPIE(cfg, rng))
	},
	"drr": func(opts []specOpt, _ *rand.Rand) (Qdisc, error) {
		cfg := DefaultDRRConfig()
		ks := newKeySet("drr")
		ks.add("limit", intKey(&cfg.Limit, parseLimit))
		ks.add("flows", intKey(&cfg.Flows, parseCount(MaxFlows)))
		ks.add("quantum", intKey(&cfg.Quantum, parseSize(MaxSpecQuantum)))
		ks.add("classify", classifyKey(&cfg.Classify))
		ks.add("sched", func(v string) error {
			i, err := choice(v, drrSchedNames[:]...)
			cfg.Sched = DRRSched(i)
			return err
		})
		if err := ks.apply(opts); err != nil {
			return nil, err
		}
		return built(NewDRR(cfg))
	},
	"shadow-fifo": func(opts []specOpt, _ *rand.Rand) (Qdisc, error) {
		if err := newKeySet("shadow-fifo").apply(opts); err != nil {
			return nil, err
		}
		return NewShadowFIFO(), nil
	},
	"shadow-rr": func(opts []specOpt, _ *rand.Rand) (Qdisc, error) {
		if err := newKeySet("shadow-rr").apply(opts); err != nil {
			return nil, err
		}
		return NewShadowRR(), nil
	},
}
