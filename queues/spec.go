package queues

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/uplinksim/uplink/des"
)

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
// bytes with an optional binary suffix k, m, g (also kb/kib, ...: 1024^n);
// durations are Go durations ("10ms", "500us"); booleans are on/off,
// true/false, yes/no, 1/0; ce_threshold=off disables it; ecn_prob is a
// fraction ("0.1") or a percentage ("10%"); alpha and beta are the RFC
// values (0.125, 1.25), not tc's sixteenths. A profile applies first,
// wherever it is written; each key may appear once.
//
// PIE and FQ-PIE draw from rng, which must then be non-nil; the other
// disciplines ignore it.
func New(spec string, rng *rand.Rand) (Qdisc, error) {
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
				return fmt.Errorf("%s: %s=%s: %w", ks.name, o.key, o.val, err)
			}
		}
	}
	return nil
}

func parseCount(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("want a decimal integer")
	}
	return n, nil
}

// parseLimit reads a packet limit where none is allowed: none, unlimited
// and 0 all mean no limit.
func parseLimit(v string) (int, error) {
	switch strings.ToLower(v) {
	case "none", "unlimited":
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("want a packet count >= 1, or none (0) for no limit")
	}
	return n, nil
}

func parseSize(v string) (int, error) {
	s := strings.ToLower(v)
	mult := 1
	for _, u := range []struct {
		suffix string
		mult   int
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"b", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("want a byte count such as 1514000 or 32MiB")
	}
	return n * mult, nil
}

func parseDur(v string) (des.Time, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("want a duration such as 10ms or 500us")
	}
	return des.FromDuration(d), nil
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

func parseFloat(v string) (float64, error) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, fmt.Errorf("want a decimal number")
	}
	return f, nil
}

func parseProb(v string) (float64, error) {
	if s, ok := strings.CutSuffix(v, "%"); ok {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, fmt.Errorf("want a percentage such as 10%%")
		}
		return f / 100, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f > 1 {
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
	ks.add("mtu", intKey(&p.MTU, parseSize))
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
	ks.add("alpha", func(v string) (err error) { p.Alpha, err = parseFloat(v); return })
	ks.add("beta", func(v string) (err error) { p.Beta, err = parseFloat(v); return })
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
	ks.add("mtu", intKey(&p.MTU, parseSize))
}

var builders = map[string]func([]specOpt, *rand.Rand) (Qdisc, error){
	"fifo": func(opts []specOpt, _ *rand.Rand) (Qdisc, error) {
		var packets, bytes int
		ks := newKeySet("fifo")
		ks.add("packets", intKey(&packets, parseLimit))
		ks.add("bytes", intKey(&bytes, parseSize))
		if err := ks.apply(opts); err != nil {
			return nil, err
		}
		return built(NewFIFO(packets, bytes))
	},
	"pfifo": func(opts []specOpt, _ *rand.Rand) (Qdisc, error) {
		limit := DefaultPfifoLimit
		ks := newKeySet("pfifo")
		ks.add("limit", intKey(&limit, parseCount))
		if err := ks.apply(opts); err != nil {
			return nil, err
		}
		return built(NewPfifo(limit))
	},
	"bfifo": func(opts []specOpt, _ *rand.Rand) (Qdisc, error) {
		limit := DefaultBfifoLimit
		ks := newKeySet("bfifo")
		ks.add("limit", intKey(&limit, parseSize))
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
		ks.add("flows", intKey(&cfg.Flows, parseCount))
		ks.add("quantum", intKey(&cfg.Quantum, parseSize))
		ks.add("memory_limit", intKey(&cfg.MemoryLimit, parseSize))
		ks.add("drop_batch", intKey(&cfg.DropBatch, parseCount))
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
		ks.add("flows", intKey(&cfg.Flows, parseCount))
		ks.add("quantum", intKey(&cfg.Quantum, parseSize))
		ks.add("memory_limit", intKey(&cfg.MemoryLimit, parseSize))
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
		ks.add("flows", intKey(&cfg.Flows, parseCount))
		ks.add("quantum", intKey(&cfg.Quantum, parseSize))
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
