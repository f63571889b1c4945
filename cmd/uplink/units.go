package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/uplinksim/uplink/des"
)

// parseRate reads a rate in bit/s: a plain number, or a number with a
// decimal suffix kbit, Mbit, Gbit (also kbps, Mbps, Gbps). Rates are
// decimal, as in the study (50 Mbit/s = 50 000 000 bit/s).
func parseRate(s string) (int64, error) {
	t := strings.TrimSpace(s)
	lower := strings.ToLower(strings.TrimSuffix(strings.TrimSuffix(t, "/s"), "ps"))
	mult := 1.0
	for _, u := range []struct {
		suffix string
		m      float64
	}{{"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}, {"bit", 1}, {"gb", 1e9}, {"mb", 1e6}, {"kb", 1e3}} {
		if strings.HasSuffix(lower, u.suffix) {
			lower, mult = strings.TrimSuffix(lower, u.suffix), u.m
			break
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(lower), 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("rate %q: want a number of bit/s such as 50Mbit, 1Gbit or 2000000", s)
	}
	return int64(v * mult), nil
}

// parseFraction reads a probability: "0.5%" or "0.005".
func parseFraction(s string) (float64, error) {
	t := strings.TrimSpace(s)
	pct := strings.HasSuffix(t, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(t, "%"), 64)
	if err != nil {
		return 0, fmt.Errorf("fraction %q: want a probability such as 0.5%% or 0.005", s)
	}
	if pct {
		v /= 100
	}
	if v < 0 || v >= 1 {
		return 0, fmt.Errorf("fraction %q: must be in [0, 1) (0%% to below 100%%)", s)
	}
	return v, nil
}

// parseSize reads a byte count: a plain number or one with a suffix
// KiB, MiB, GiB (binary) or KB, MB, GB (decimal).
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSuffix(t, u.suffix), u.m
			break
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("size %q: want a byte count such as 1MiB, 512KiB or 1048576", s)
	}
	return int64(v * float64(mult)), nil
}

// parseDuration reads a Go duration (40ms, 1.5s) as virtual time.
func parseDuration(s string) (des.Time, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || d < 0 {
		return 0, fmt.Errorf("duration %q: want a non-negative duration such as 40ms or 30s", s)
	}
	return des.FromDuration(d), nil
}
