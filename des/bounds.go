package des

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Every number a user gives uplink (a flag, a profile knob, a queue spec's
// option, a gossipsub setting, a value in an imported topology draw) is
// read and checked by the functions of this file, against the bounds
// below: no NaN or infinity, no overflow, nothing outside a documented
// range. Each error names the value, what is wrong and what is allowed;
// callers prefix the flag or knob.

// The bounds.
const (
	// MinRate and MaxRate bound a link or shaper rate in bit/s: below
	// 8 kbit/s Shadow's bucket, refilled every millisecond, would gain
	// less than a byte per refill (and a full-size packet takes 1.5 s to
	// serialise); 10 Tbit/s is far beyond any access link.
	MinRate int64 = 8_000
	MaxRate int64 = 10_000_000_000_000

	// MaxVirtual bounds every virtual duration an input asks for (an
	// observation window, a settle time, a bulk run's length, a queue
	// target): a simulation of more virtual time than an hour of a
	// network runs for days of wall time.
	MaxVirtual = Hour

	// MaxLatency bounds a one-way latency (a latency model's parameter or
	// an entry of an imported draw): ten times the longest path on Earth.
	MaxLatency = 10 * Second

	// MaxBytes bounds a byte count (a buffer, a queue limit, a transfer).
	MaxBytes int64 = 1 << 40

	// MaxSockBuf bounds a socket buffer size or cap (a tcp_rmem or
	// tcp_wmem entry, rmem_max, wmem_max): Linux takes up to INT_MAX; the
	// TCP model keeps buffers within 1 GiB.
	MaxSockBuf int64 = 1 << 30

	// MaxNodes bounds the nodes of a cell; the memory check of a cell
	// (cell.EstimateMemory) is usually the tighter bound.
	MaxNodes = 100_000
)

// Hour is an hour of virtual time.
const Hour = 3600 * Second

// A Unit is a suffix of a quantity and the factor it stands for.
type Unit struct {
	Suffix string
	Factor float64
}

// The units of rates and byte counts, one table each, read without
// regard to case by every flag, knob, queue spec and study file.
//
// A rate is in bit/s: a plain number, or one with a unit of RateUnits,
// tc's bit units (kbit, mbit, gbit, tbit decimal; kibit to tibit powers
// of 1 024), optionally followed by "/s". A unit that names bytes or
// "bps" (b, kb, mb, mib, bps, kbps, mbps, MB/s, Mb/s, ...) is refused
// (ErrAmbiguousUnit): tc reads mbps as megabytes per second, most other
// writing as megabits, and read without regard to case MBps and Mbps are
// one spelling, so either reading would be wrong for someone.
//
// A byte count is a plain number, or one with a unit of ByteUnits: b, and
// KiB to TiB (powers of 1 024). k, m, g, t and kb, mb, gb, tb are refused
// (ErrAmbiguousUnit): tc reads them as powers of 1 024, SI as powers of
// 1 000.
var (
	RateUnits = []Unit{{"tibit", 1 << 40}, {"gibit", 1 << 30}, {"mibit", 1 << 20}, {"kibit", 1 << 10},
		{"tbit", 1e12}, {"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}, {"bit", 1}}
	ByteUnits = []Unit{{"tib", 1 << 40}, {"gib", 1 << 30}, {"mib", 1 << 20}, {"kib", 1 << 10}, {"b", 1}}
)

// ErrAmbiguousUnit is the error of a rate or a byte count whose unit
// reads differently in tc and elsewhere; the message gives both readings
// in unambiguous units.
var ErrAmbiguousUnit = errors.New("ambiguous unit")

// A prefix is the multiple a unit of a rate or a size starts with.
type prefix struct {
	lower, name string  // as matched (lower case) and as written
	factor      float64 // its multiple
	iec         string  // for a decimal prefix, its binary twin (k: Ki)
}

// prefixes are the prefixes of units, the decimal ones last.
var prefixes = []prefix{{"ti", "Ti", 1 << 40, ""}, {"gi", "Gi", 1 << 30, ""}, {"mi", "Mi", 1 << 20, ""}, {"ki", "Ki", 1 << 10, ""},
	{"t", "T", 1e12, "ti"}, {"g", "G", 1e9, "gi"}, {"m", "M", 1e6, "mi"}, {"k", "k", 1e3, "ki"}, {"", "", 1, ""}}

// lookupPrefix returns the prefix matched by lower.
func lookupPrefix(lower string) (prefix, bool) {
	i := slices.IndexFunc(prefixes, func(p prefix) bool { return p.lower == lower })
	if i < 0 {
		return prefix{}, false
	}
	return prefixes[i], true
}

// splitUnit cuts s into its number and the suffix that follows it, the
// trailing run of anything but digits and "." ("20MB/s": "20", "MB/s";
// "1e6bit": "1e6", "bit").
func splitUnit(s string) (num, unit string) {
	t := strings.TrimSpace(s)
	i := strings.LastIndexAny(t, "0123456789.") + 1
	return strings.TrimSpace(t[:i]), t[i:]
}

// ambiguousRate returns, for a rate whose unit names bytes or is spelled
// bps (20MBps, 20mbps, 20MB/s, 20Mb/s, 100kb, 2MiB/s), an error wrapping
// ErrAmbiguousUnit that writes the number as bits per second and as bytes
// per second, in bit units; nil for any other spelling.
func ambiguousRate(s string) error {
	num, unit := splitUnit(s)
	u := strings.ToLower(strings.ReplaceAll(unit, " ", ""))
	u = strings.TrimSuffix(u, "/s")
	if strings.HasSuffix(u, "bps") {
		u = strings.TrimSuffix(u, "ps")
	}
	if !strings.HasSuffix(u, "b") {
		return nil
	}
	p, ok := lookupPrefix(strings.TrimSuffix(u, "b"))
	v, err := ParseFinite(num)
	if !ok || err != nil {
		return nil
	}
	return fmt.Errorf("rate %q: %w %q: tc reads it as bytes per second, most other writing as bits per second; write %s for bits per second or %s for bytes per second",
		s, ErrAmbiguousUnit, strings.TrimSpace(unit), formatFloat(v)+p.name+"bit", formatFloat(v*8)+p.name+"bit")
}

// ambiguousSize returns, for a byte count whose unit reads as a power of
// 1 024 in tc and of 1 000 in SI (64kb, 1.5M, 2g), an error wrapping
// ErrAmbiguousUnit that writes both readings; nil for any other spelling.
func ambiguousSize(s string) error {
	num, unit := splitUnit(s)
	p, ok := lookupPrefix(strings.TrimSuffix(strings.ToLower(strings.TrimSpace(unit)), "b"))
	v, err := ParseFinite(num)
	if !ok || p.iec == "" || err != nil {
		return nil
	}
	bin, _ := lookupPrefix(p.iec)
	return fmt.Errorf("size %q: %w %q: tc reads it as a power of 1 024, SI as a power of 1 000; write %s (%s bytes) or %s",
		s, ErrAmbiguousUnit, strings.TrimSpace(unit), formatFloat(v)+bin.name+"B", formatFloat(v*bin.factor), formatFloat(v*p.factor))
}

// formatFloat writes v in decimal, as short as reads back.
func formatFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// ParseFinite reads a decimal number that is neither NaN nor infinite
// (strconv.ParseFloat accepts both, and hexadecimal floats, which no
// input of uplink means).
func ParseFinite(s string) (float64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, errors.New("empty: want a number")
	}
	if strings.ContainsAny(t, "xXpP_") {
		return 0, fmt.Errorf("%q: want a decimal number", s)
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q: want a finite decimal number", s)
	}
	return v, nil
}

// ParseQuantity reads a finite number with an optional suffix of units
// (matched without regard to case) and returns it times the suffix's
// factor.
func ParseQuantity(s string, units []Unit) (float64, error) {
	t := strings.TrimSpace(s)
	lower := strings.ToLower(t)
	factor := 1.0
	for _, u := range units {
		if strings.HasSuffix(lower, u.Suffix) {
			t, factor = strings.TrimSpace(t[:len(t)-len(u.Suffix)]), u.Factor
			break
		}
	}
	v, err := ParseFinite(t)
	if err != nil {
		return 0, err
	}
	return v * factor, nil
}

// ParseRate reads a rate in bit/s: a plain number, or one with a unit of
// RateUnits, optionally followed by "/s" (50Mbit, 50Mbit/s, 2Mibit),
// within [MinRate, MaxRate]; a unit naming bytes or spelled bps is
// refused with an error wrapping ErrAmbiguousUnit. A fraction of a bit/s
// is rounded to the nearest.
func ParseRate(s string) (int64, error) {
	if err := ambiguousRate(s); err != nil {
		return 0, err
	}
	v, err := ParseQuantity(trimPerSecond(s), RateUnits)
	if err != nil {
		return 0, fmt.Errorf("rate %q: want bit/s, a number with a unit bit, kbit, Mbit, Gbit or Tbit (Kibit to Tibit: powers of 1 024), optionally /s, such as 50Mbit or 1Gbit", s)
	}
	return CheckRate(s, v)
}

// trimPerSecond strips a rate's "ps" or "/s" and the spaces around it.
func trimPerSecond(s string) string {
	t := strings.TrimSpace(s)
	lower := strings.ToLower(t)
	for _, suf := range []string{"/s", "ps"} {
		if strings.HasSuffix(lower, suf) {
			return t[:len(t)-len(suf)]
		}
	}
	return t
}

// ErrNoRateUnit is the error of ParseRateUnit for a rate without a unit.
var ErrNoRateUnit = errors.New("give a unit")

// ParseRateUnit reads a rate as ParseRate does, but refuses a plain
// number (2000000, 2000000/s) with an error that wraps ErrNoRateUnit and
// writes the same rate with its unit: on a command line a bare number is
// as likely meant in Mbit/s as in bit/s. (Records and profile knobs write
// rates as plain bit/s, and ParseRate reads them back.)
func ParseRateUnit(s string) (int64, error) {
	v, err := ParseFinite(trimPerSecond(s))
	if err != nil {
		return ParseRate(s)
	}
	if r, err := CheckRate(s, v); err == nil {
		return 0, fmt.Errorf("%q: %w, such as %s (bit/s)", s, ErrNoRateUnit, compactRate(r))
	}
	return 0, fmt.Errorf("%q: %w, such as 50Mbit or 1Gbit (bit/s; want %s to %s)", s, ErrNoRateUnit, FormatRate(MinRate), FormatRate(MaxRate))
}

// compactRate writes a rate as a flag takes it, with the largest decimal
// unit that keeps it whole: 2Mbit, 1500kbit.
func compactRate(r int64) string {
	for _, u := range []struct {
		name string
		f    int64
	}{{"Tbit", 1e12}, {"Gbit", 1e9}, {"Mbit", 1e6}, {"kbit", 1e3}} {
		if r >= u.f && r%u.f == 0 {
			return fmt.Sprintf("%d%s", r/u.f, u.name)
		}
	}
	return fmt.Sprintf("%dbit", r)
}

// CheckRate checks a rate of v bit/s read from s.
func CheckRate(s string, v float64) (int64, error) {
	if math.IsNaN(v) || v < float64(MinRate) || v > float64(MaxRate) {
		return 0, fmt.Errorf("rate %q: want %s to %s", s, FormatRate(MinRate), FormatRate(MaxRate))
	}
	return int64(math.Round(v)), nil
}

// FormatRate writes a rate in bit/s with the largest decimal unit that
// keeps it whole.
func FormatRate(r int64) string {
	for _, u := range []struct {
		name string
		f    int64
	}{{"Tbit/s", 1e12}, {"Gbit/s", 1e9}, {"Mbit/s", 1e6}, {"kbit/s", 1e3}} {
		if r >= u.f && r%u.f == 0 {
			return fmt.Sprintf("%d %s", r/u.f, u.name)
		}
	}
	return fmt.Sprintf("%d bit/s", r)
}

// ParseBytes reads a byte count, a plain number or one with a unit of
// ByteUnits (1MiB, 64KiB, 100b), within [lo, hi]; k, kb, m, mb, ... are
// refused with an error wrapping ErrAmbiguousUnit. A byte count must come
// out whole.
func ParseBytes(s string, lo, hi int64) (int64, error) {
	if err := ambiguousSize(s); err != nil {
		return 0, err
	}
	v, err := ParseQuantity(s, ByteUnits)
	if err != nil {
		return 0, fmt.Errorf("size %q: want bytes, a number with a unit b, KiB, MiB, GiB or TiB (powers of 1 024), such as 1MiB", s)
	}
	if v != math.Trunc(v) {
		return 0, fmt.Errorf("size %q: %s bytes is not a whole number of bytes; give %.0f or a smaller unit", s, strconv.FormatFloat(v, 'f', -1, 64), math.Floor(v))
	}
	if v < float64(lo) || v > float64(hi) {
		return 0, fmt.Errorf("size %q: want %s to %s", s, FormatBytes(lo), FormatBytes(hi))
	}
	return int64(v), nil
}

// FormatBytes writes a byte count with the largest binary unit that keeps
// it whole.
func FormatBytes(b int64) string {
	for _, u := range []struct {
		name string
		f    int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if b >= u.f && b%u.f == 0 {
			return fmt.Sprintf("%d %s", b/u.f, u.name)
		}
	}
	if b == 1 {
		return "1 byte"
	}
	return fmt.Sprintf("%d bytes", b)
}

// ParseDuration reads a Go duration (40ms, 1.5s, 2m) as virtual time
// within [lo, hi].
func ParseDuration(s string, lo, hi Time) (Time, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("duration %q: want a duration such as 40ms or 30s, from %v to %v", s, lo, hi)
	}
	return CheckDuration(s, Time(d), lo, hi)
}

// ParseSeconds reads a duration given as a finite number of seconds
// (a knob such as settle=10) within [lo, hi].
func ParseSeconds(s string, lo, hi Time) (Time, error) {
	v, err := ParseFinite(s)
	if err != nil {
		return 0, fmt.Errorf("seconds %w", err)
	}
	if v < lo.Seconds() || v > hi.Seconds() {
		return 0, fmt.Errorf("seconds %q: want %g to %g", s, lo.Seconds(), hi.Seconds())
	}
	return Time(math.Round(v * 1e9)), nil
}

// CheckDuration checks a duration d read from s against [lo, hi].
func CheckDuration(s string, d, lo, hi Time) (Time, error) {
	if d < lo || d > hi {
		return 0, fmt.Errorf("duration %q: want %v to %v", s, lo, hi)
	}
	return d, nil
}

// ParseFraction reads a probability in [0, 1): 0.005 or 0.5%.
func ParseFraction(s string) (float64, error) {
	return ParseProbability(s, false)
}

// ParseProbability reads a probability, 0.005 or 0.5%, in [0, 1], or in
// [0, 1) when one is not allowed (a loss rate of 1 delivers nothing).
func ParseProbability(s string, oneAllowed bool) (float64, error) {
	t := strings.TrimSpace(s)
	pct := strings.HasSuffix(t, "%")
	v, err := ParseFinite(strings.TrimSuffix(t, "%"))
	if err != nil {
		return 0, fmt.Errorf("fraction %q: want a finite decimal number, such as 0.5%% or 0.005", s)
	}
	if pct {
		v /= 100
	}
	if v < 0 || v > 1 || (v == 1 && !oneAllowed) {
		if oneAllowed {
			return 0, fmt.Errorf("fraction %q: want 0 to 1 (0%% to 100%%)", s)
		}
		return 0, fmt.Errorf("fraction %q: want 0 to below 1 (0%% to below 100%%)", s)
	}
	return v, nil
}

// ParseInt reads a decimal integer within [lo, hi].
func ParseInt(s string, lo, hi int64) (int64, error) {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: want a whole number from %d to %d", s, lo, hi)
	}
	return CheckInt(s, v, lo, hi)
}

// CheckInt checks an integer v read from s against [lo, hi].
func CheckInt(s string, v, lo, hi int64) (int64, error) {
	if v < lo || v > hi {
		return 0, fmt.Errorf("%q: want a whole number from %d to %d", s, lo, hi)
	}
	return v, nil
}

// ParseFloat reads a finite decimal number within [lo, hi].
func ParseFloat(s string, lo, hi float64) (float64, error) {
	v, err := ParseFinite(s)
	if err != nil {
		return 0, err
	}
	return CheckFloat(s, v, lo, hi)
}

// CheckFloat checks a number v read from s against [lo, hi]; NaN is
// outside every range.
func CheckFloat(s string, v, lo, hi float64) (float64, error) {
	if math.IsNaN(v) || v < lo || v > hi {
		return 0, fmt.Errorf("%q: want a number from %g to %g", s, lo, hi)
	}
	return v, nil
}

// ParseBufferTriple reads a socket buffer sysctl's triple "min default
// max" (Linux's tcp_rmem and tcp_wmem, such as "4096 131072 6291456", or
// with commas, "4096,131072,6291456", as a knob's value is written):
// three byte counts, each read as ParseBytes reads it within
// [1, MaxSockBuf], with min <= default <= max.
func ParseBufferTriple(s string) ([3]int64, error) {
	var v [3]int64
	f := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
	if len(f) != 3 {
		return v, fmt.Errorf("%q: want three byte counts, min default max, such as \"4096 131072 6291456\"", s)
	}
	names := [3]string{"min", "default", "max"}
	for i, x := range f {
		n, err := ParseBytes(x, 1, MaxSockBuf)
		if err != nil {
			return v, fmt.Errorf("%q: %s: %w", s, names[i], err)
		}
		v[i] = n
	}
	for i := range 2 {
		if v[i] > v[i+1] {
			return v, fmt.Errorf("%q: %s %d above %s %d: want min <= default <= max", s, names[i], v[i], names[i+1], v[i+1])
		}
	}
	return v, nil
}

// Bounds of a host's CPU cost (ParseCPU): at most 10 ms per packet and
// 1 µs per byte (1.5 ms for a full-size packet), far above any real
// stack's cost; picosecond resolution.
const (
	MaxCPUPacketPs int64 = 10_000_000_000
	MaxCPUBytePs   int64 = 1_000_000
)

// CPUCost is a CPU time per packet and per byte, in picoseconds.
type CPUCost struct {
	Packet, Byte int64
}

// Zero reports whether c costs nothing.
func (c CPUCost) Zero() bool { return c.Packet == 0 && c.Byte == 0 }

// Of is the cost of a packet of n bytes, rounded up to whole nanoseconds.
func (c CPUCost) Of(n int) Time {
	ps := c.Packet + int64(n)*c.Byte
	return Time((ps + 999) / 1000)
}

// CPUSpec is a host's CPU cost to receive (Rx) and to send (Tx) a packet;
// the zero value is off.
type CPUSpec struct {
	Rx, Tx CPUCost
}

// Off reports whether s costs nothing in either direction.
func (s CPUSpec) Off() bool { return s.Rx.Zero() && s.Tx.Zero() }

// String writes s as ParseCPU reads it: "off", or the directions that
// cost something, such as "rx:3us+0.2ns/B,tx:2us".
func (s CPUSpec) String() string {
	if s.Off() {
		return "off"
	}
	var parts []string
	for _, d := range []struct {
		name string
		c    CPUCost
	}{{"rx", s.Rx}, {"tx", s.Tx}} {
		if d.c.Zero() {
			continue
		}
		var terms []string
		if d.c.Packet != 0 {
			terms = append(terms, formatPs(d.c.Packet))
		}
		if d.c.Byte != 0 {
			terms = append(terms, formatPs(d.c.Byte)+"/B")
		}
		parts = append(parts, d.name+":"+strings.Join(terms, "+"))
	}
	return strings.Join(parts, ",")
}

// formatPs writes a time in picoseconds: in whole milliseconds, else in
// microseconds from 1 µs, else in nanoseconds (2.2us, 0.35ns).
func formatPs(ps int64) string {
	switch {
	case ps%1_000_000_000 == 0:
		return fmt.Sprintf("%dms", ps/1_000_000_000)
	case ps >= 1_000_000 || ps <= -1_000_000:
		return strconv.FormatFloat(float64(ps)/1e6, 'f', -1, 64) + "us"
	}
	return strconv.FormatFloat(float64(ps)/1000, 'f', -1, 64) + "ns"
}

// cpuUnits are the suffixes of a CPU time, in picoseconds.
var cpuUnits = []Unit{{"ms", 1e9}, {"us", 1e6}, {"µs", 1e6}, {"ns", 1e3}, {"ps", 1}}

// ParseCPU reads a host's CPU cost per packet: "off" (or empty), or one
// or both directions, "rx:COST,tx:COST", each COST a time per packet
// (3us), a time per byte (0.2ns/B), or both joined by "+" (3us+0.2ns/B).
// Times take a unit, ms, us (µs), ns or ps, and resolve to 1 ps; a time
// per packet is within [0, MaxCPUPacketPs] ps, a time per byte within
// [0, MaxCPUBytePs] ps. Bytes are wire bytes (headers included).
func ParseCPU(s string) (CPUSpec, error) {
	var spec CPUSpec
	t := strings.TrimSpace(s)
	if t == "" || t == "off" {
		return spec, nil
	}
	const want = "want off, or rx:COST and/or tx:COST joined by a comma, each COST a time per packet, a time per byte or both joined by +, such as rx:3us+0.2ns/B,tx:2us+0.1ns/B"
	seen := map[string]bool{}
	for _, part := range strings.Split(t, ",") {
		dir, cost, ok := strings.Cut(strings.TrimSpace(part), ":")
		dir = strings.ToLower(strings.TrimSpace(dir))
		if !ok || (dir != "rx" && dir != "tx") {
			return CPUSpec{}, fmt.Errorf("cpu %q: %q: %s", s, part, want)
		}
		if seen[dir] {
			return CPUSpec{}, fmt.Errorf("cpu %q: %s given twice", s, dir)
		}
		seen[dir] = true
		c, err := parseCPUCost(cost)
		if err != nil {
			return CPUSpec{}, fmt.Errorf("cpu %q: %s: %w", s, dir, err)
		}
		if dir == "rx" {
			spec.Rx = c
		} else {
			spec.Tx = c
		}
	}
	return spec, nil
}

// parseCPUCost reads one direction's COST of ParseCPU.
func parseCPUCost(s string) (CPUCost, error) {
	var c CPUCost
	var havePacket, haveByte bool
	for _, term := range strings.Split(s, "+") {
		term = strings.TrimSpace(term)
		if term == "" {
			return c, fmt.Errorf("%q: empty term: want a time per packet (3us), a time per byte (0.2ns/B) or both joined by +", s)
		}
		perByte := strings.HasSuffix(term, "/B") || strings.HasSuffix(term, "/b")
		if perByte {
			term = strings.TrimSpace(term[:len(term)-2])
		}
		lower := strings.ToLower(term)
		if !slices.ContainsFunc(cpuUnits, func(u Unit) bool { return strings.HasSuffix(lower, u.Suffix) }) {
			return c, fmt.Errorf("%q: give a unit: ms, us, ns or ps", term)
		}
		v, err := ParseQuantity(term, cpuUnits)
		if err != nil {
			return c, fmt.Errorf("time %w, such as 3us", err)
		}
		ps := math.Round(v)
		if math.Abs(v-ps) > 1e-3 {
			return c, fmt.Errorf("%q: finer than 1 ps", term)
		}
		switch {
		case perByte && haveByte, !perByte && havePacket:
			return c, fmt.Errorf("%q: a time per packet and a time per byte at most once each", s)
		case perByte:
			if ps < 0 || ps > float64(MaxCPUBytePs) {
				return c, fmt.Errorf("per byte %q: want 0 to %s/B", term, formatPs(MaxCPUBytePs))
			}
			c.Byte, haveByte = int64(ps), true
		default:
			if ps < 0 || ps > float64(MaxCPUPacketPs) {
				return c, fmt.Errorf("per packet %q: want 0 to %s", term, formatPs(MaxCPUPacketPs))
			}
			c.Packet, havePacket = int64(ps), true
		}
	}
	return c, nil
}
