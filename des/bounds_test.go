package des

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/internal/unitcases"
)

func TestParseRate(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"50Mbit", 50_000_000}, {"50Mbit/s", 50_000_000}, {"50Mbitps", 50_000_000}, {"1Gbit", 1e9},
		{"2000000", 2_000_000}, {"8kbit", 8000}, {"10Tbit", 1e13}, {"8.5kbit", 8500}, {" 100 Mbit ", 1e8},
	} {
		got, err := ParseRate(c.in)
		require.NoError(t, err, c.in)
		require.Equal(t, c.want, got, c.in)
	}
	for _, in := range []string{"", "NaN", "nanbit", "Inf", "+Infbit", "0.5bit", "7999", "0", "-1Mbit",
		"10.001Tbit", "1e300", "0x10", "1_000", "fast", "50Mbit/h"} {
		_, err := ParseRate(in)
		require.Error(t, err, in)
	}
}

// TestRateUnits: every spelling of unitcases.Rates reads as its value or
// is refused with its error, by ParseRate and ParseRateUnit alike; an
// ambiguous unit's error wraps ErrAmbiguousUnit.
func TestRateUnits(t *testing.T) {
	for _, c := range unitcases.Rates {
		for _, parse := range []func(string) (int64, error){ParseRate, ParseRateUnit} {
			got, err := parse(c.In)
			if c.Err != "" {
				require.EqualError(t, err, c.Err, c.In)
				require.Equal(t, strings.Contains(c.Err, "ambiguous"), errors.Is(err, ErrAmbiguousUnit), c.In)
				continue
			}
			require.NoError(t, err, c.In)
			require.Equal(t, c.Bps, got, c.In)
		}
	}
}

// TestParseRateUnit: a rate with a unit reads as ParseRate reads it; a
// plain number (also per second) is refused, the error wrapping
// ErrNoRateUnit and naming the rate with its unit when it is in range.
func TestParseRateUnit(t *testing.T) {
	for in, want := range map[string]int64{"50Mbit": 50e6, "2000000bit": 2e6, "1.5Gbit/s": 15e8, " 100 Mbit ": 1e8} {
		got, err := ParseRateUnit(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for in, want := range map[string]string{
		"2000000":   `"2000000": give a unit, such as 2Mbit (bit/s)`,
		"1500000/s": `"1500000/s": give a unit, such as 1500kbit (bit/s)`,
		"8001":      `"8001": give a unit, such as 8001bit (bit/s)`,
		"1e9":       `"1e9": give a unit, such as 1Gbit (bit/s)`,
		"5":         `"5": give a unit, such as 50Mbit or 1Gbit (bit/s; want 8 kbit/s to 10 Tbit/s)`,
	} {
		_, err := ParseRateUnit(in)
		require.ErrorIs(t, err, ErrNoRateUnit, in)
		require.EqualError(t, err, want, in)
	}
	for _, in := range []string{"", "NaN", "Inf", "fast", "7999bit", "-1Mbit"} {
		_, err := ParseRateUnit(in)
		require.Error(t, err, in)
		require.NotErrorIs(t, err, ErrNoRateUnit, in)
	}
}

func TestParseBytes(t *testing.T) {
	v, err := ParseBytes("1MiB", 1, MaxBytes)
	require.NoError(t, err)
	require.Equal(t, int64(1<<20), v)
	v, err = ParseBytes("1TiB", 1, MaxBytes)
	require.NoError(t, err)
	require.Equal(t, int64(1<<40), v)
	for _, in := range []string{"NaN", "1.5", "0.1B", "-1", "2TiB", "1e20", "Inf", "", "NaNkb", "1e3kbit"} {
		_, err := ParseBytes(in, 0, MaxBytes)
		require.Error(t, err, in)
	}
	_, err = ParseBytes("0", 1, 10)
	require.ErrorContains(t, err, "1 byte to 10 bytes")
}

// TestSizeUnits: every spelling of unitcases.Sizes reads as its value or
// is refused with its error; an ambiguous unit's error wraps
// ErrAmbiguousUnit.
func TestSizeUnits(t *testing.T) {
	for _, c := range unitcases.Sizes {
		got, err := ParseBytes(c.In, 1, MaxBytes)
		if c.Err != "" {
			require.EqualError(t, err, c.Err, c.In)
			require.Equal(t, strings.Contains(c.Err, "ambiguous"), errors.Is(err, ErrAmbiguousUnit), c.In)
			continue
		}
		require.NoError(t, err, c.In)
		require.Equal(t, c.Bytes, got, c.In)
	}
}

func TestParseDurationBounds(t *testing.T) {
	v, err := ParseDuration("40ms", 0, MaxVirtual)
	require.NoError(t, err)
	require.Equal(t, 40*Millisecond, v)
	v, err = ParseDuration("1h", 0, MaxVirtual)
	require.NoError(t, err)
	require.Equal(t, Hour, v)
	for _, in := range []string{"1h0m0.000000001s", "2562047h", "-1s", "NaN", "10", "", "99999999999999999999h"} {
		_, err := ParseDuration(in, 0, MaxVirtual)
		require.Error(t, err, in)
	}
	v, err = ParseSeconds("2.5", 0, MaxVirtual)
	require.NoError(t, err)
	require.Equal(t, 2500*Millisecond, v)
	for _, in := range []string{"1e10", "1e9", "3600.001", "-0.1", "NaN", "Inf", "1e400"} {
		_, err := ParseSeconds(in, 0, MaxVirtual)
		require.Error(t, err, in)
	}
}

func TestParseFraction(t *testing.T) {
	for in, want := range map[string]float64{"0.5%": 0.005, "0.005": 0.005, "0": 0, "99%": 0.99} {
		got, err := ParseFraction(in)
		require.NoError(t, err, in)
		require.InDelta(t, want, got, 1e-15, in)
	}
	for _, in := range []string{"NaN", "NaN%", "1", "100%", "-0.1", "Inf", "1e-400x", ""} {
		_, err := ParseFraction(in)
		require.Error(t, err, in)
	}
	v, err := ParseProbability("100%", true)
	require.NoError(t, err)
	require.Equal(t, 1.0, v)
}

func TestParseIntFloat(t *testing.T) {
	v, err := ParseInt("12", 0, 12)
	require.NoError(t, err)
	require.Equal(t, int64(12), v)
	for _, in := range []string{"13", "-1", "1.0", "9223372036854775808", ""} {
		_, err := ParseInt(in, 0, 12)
		require.Error(t, err, in)
	}
	_, err = ParseFloat("NaN", math.Inf(-1), math.Inf(1))
	require.Error(t, err)
	f, err := ParseFloat("0.25", 0, 1)
	require.NoError(t, err)
	require.Equal(t, 0.25, f)
}

// FuzzParse checks that no input makes a parser panic, and that whatever
// a parser accepts lies within its bounds.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"50Mbit", "1MiB", "40ms", "0.5%", "NaN", "1e400", "-0", "2562047h", "0x1p3", "20MBps", "1e400kb", "-2Mb/s", "64k"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if r, err := ParseRate(s); err == nil && (r < MinRate || r > MaxRate) {
			t.Fatalf("ParseRate(%q) = %d outside its bounds", s, r)
		}
		if b, err := ParseBytes(s, 0, MaxBytes); err == nil && (b < 0 || b > MaxBytes) {
			t.Fatalf("ParseBytes(%q) = %d outside its bounds", s, b)
		}
		if d, err := ParseDuration(s, 0, MaxVirtual); err == nil && (d < 0 || d > MaxVirtual) {
			t.Fatalf("ParseDuration(%q) = %v outside its bounds", s, d)
		}
		if d, err := ParseSeconds(s, 0, MaxVirtual); err == nil && (d < 0 || d > MaxVirtual) {
			t.Fatalf("ParseSeconds(%q) = %v outside its bounds", s, d)
		}
		if p, err := ParseFraction(s); err == nil && !(p >= 0 && p < 1) {
			t.Fatalf("ParseFraction(%q) = %v outside [0, 1)", s, p)
		}
	})
}

// TestParseBufferTriple: a tcp_rmem / tcp_wmem triple reads as three byte
// counts in order; each error names the limit it broke.
func TestParseBufferTriple(t *testing.T) {
	v, err := ParseBufferTriple(" 4096  131072\t6291456 ")
	require.NoError(t, err)
	require.Equal(t, [3]int64{4096, 131072, 6291456}, v)
	v, err = ParseBufferTriple("4096,131072,6291456")
	require.NoError(t, err)
	require.Equal(t, [3]int64{4096, 131072, 6291456}, v)
	v, err = ParseBufferTriple("4KiB 128KiB 6MiB")
	require.NoError(t, err)
	require.Equal(t, [3]int64{4096, 131072, 6 << 20}, v)
	for in, want := range map[string]string{
		"4096 131072":         "want three byte counts, min default max",
		"4096 131072 1 2":     "want three byte counts",
		"0 131072 6291456":    "min: size \"0\": want 1 byte to 1 GiB",
		"4096 x 6291456":      "default: size",
		"4096 131072 2GiB":    "max: size \"2GiB\": want 1 byte to 1 GiB",
		"4K 128K 6M":          `min: size "4K": ambiguous unit "K"`,
		"8192 4096 6291456":   "min 8192 above default 4096: want min <= default <= max",
		"4096 131072 65536":   "default 131072 above max 65536",
		"4096 131072.5 65536": "131072.5 bytes is not a whole number of bytes; give 131072 or a smaller unit",
	} {
		_, err := ParseBufferTriple(in)
		require.ErrorContains(t, err, want, in)
	}
}

// TestParseCPU: a host's CPU cost reads per direction as picoseconds per
// packet and per byte, writes back in the same form, and costs a packet
// its time rounded up to whole nanoseconds; bad input names what is
// allowed.
func TestParseCPU(t *testing.T) {
	for in, want := range map[string]CPUSpec{
		"":                              {},
		"off":                           {},
		"rx:3us+0.2ns/B,tx:2us+0.1ns/B": {Rx: CPUCost{3_000_000, 200}, Tx: CPUCost{2_000_000, 100}},
		" tx : 1.5µs ":                  {Tx: CPUCost{Packet: 1_500_000}},
		"rx:0.35ns/B+2ms":               {Rx: CPUCost{2_000_000_000, 350}},
		"rx:10ms+1us/B":                 {Rx: CPUCost{MaxCPUPacketPs, MaxCPUBytePs}},
		"rx:0us":                        {},
	} {
		got, err := ParseCPU(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
		back, err := ParseCPU(got.String())
		require.NoError(t, err, got.String())
		require.Equal(t, got, back, got.String())
	}
	s, err := ParseCPU("rx:3us+0.2ns/B,tx:2us+0.1ns/B")
	require.NoError(t, err)
	require.Equal(t, "rx:3us+0.2ns/B,tx:2us+0.1ns/B", s.String())
	require.Equal(t, Time(3206), s.Rx.Of(1028), "3 µs + ⌈205.6 ns⌉")
	require.Equal(t, Time(2103), s.Tx.Of(1028), "2 µs + ⌈102.8 ns⌉")
	require.Equal(t, "off", CPUSpec{}.String())
	require.Equal(t, "rx:1.9us+0.33ns/B,tx:0.5ns", CPUSpec{Rx: CPUCost{1_900_000, 330}, Tx: CPUCost{Packet: 500}}.String())

	for in, want := range map[string]string{
		"rx:11ms":       `cpu "rx:11ms": rx: per packet "11ms": want 0 to 10ms`,
		"tx:2us/B":      `cpu "tx:2us/B": tx: per byte "2us": want 0 to 1us/B`,
		"rx:-1us":       `cpu "rx:-1us": rx: per packet "-1us": want 0 to 10ms`,
		"rx:3":          `cpu "rx:3": rx: "3": give a unit: ms, us, ns or ps`,
		"rx:0.1ps":      `cpu "rx:0.1ps": rx: "0.1ps": finer than 1 ps`,
		"rx:1us,rx:2us": `cpu "rx:1us,rx:2us": rx given twice`,
		"rx:1us+2us":    `cpu "rx:1us+2us": rx: "1us+2us": a time per packet and a time per byte at most once each`,
		"rx:1us+":       `cpu "rx:1us+": rx: "1us+": empty term: want a time per packet (3us), a time per byte (0.2ns/B) or both joined by +`,
		"rx:NaNus":      `cpu "rx:NaNus": rx: time "NaN": want a finite decimal number, such as 3us`,
		"3us":           `cpu "3us": "3us": want off, or rx:COST and/or tx:COST joined by a comma, each COST a time per packet, a time per byte or both joined by +, such as rx:3us+0.2ns/B,tx:2us+0.1ns/B`,
	} {
		_, err := ParseCPU(in)
		require.EqualError(t, err, want, in)
	}
}
