package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/uplinksim/uplink/des"
)

// The readers of numeric flags. Each reads one flag's value with the
// bounds of des/bounds.go (the one place every number is checked) and
// returns a usage error that names the flag, the value and what is
// allowed.

// Bounds of the command line's own numbers.
const (
	maxPayload  = 1 << 30 // --payload, --warmup streams:SIZE, --background SIZE
	maxJobs     = 256     // --jobs
	maxProcs    = 1024    // --gomaxprocs, --setup-procs
	maxGOGC     = 1_000_000
	maxSeeds    = 10_000 // seeds in one --seeds
	minInterval = des.Millisecond
)

// flagErr wraps err as a usage error of flag.
func flagErr(flag string, err error) error {
	return usageError{fmt.Errorf("--%s: %w", flag, err)}
}

// flagRate reads a rate flag in bit/s, which must carry its unit
// (des.ParseRateUnit): --rate 2000000 is refused, naming 2Mbit, and
// --rate 20MBps, whose unit tc reads as bytes per second, with both of
// its readings (des.ErrAmbiguousUnit).
func flagRate(flag, v string) (int64, error) {
	r, err := des.ParseRateUnit(v)
	switch {
	case errors.Is(err, des.ErrNoRateUnit):
		return 0, usageError{fmt.Errorf("--%s %w", flag, err)}
	case err != nil:
		return 0, flagErr(flag, err)
	}
	return r, nil
}

// flagSize reads a byte-count flag (des.ParseBytes: b, KiB, MiB, GiB,
// TiB; KB, MB, GB, which tc reads as powers of 1 024 and SI as powers of
// 1 000, refused with both readings) within [lo, hi].
func flagSize(flag, v string, lo, hi int64) (int64, error) {
	b, err := des.ParseBytes(v, lo, hi)
	if err != nil {
		return 0, flagErr(flag, err)
	}
	return b, nil
}

// flagDuration reads a duration flag (a Go duration) within [lo, hi] as
// virtual time.
func flagDuration(flag, v string, lo, hi des.Time) (des.Time, error) {
	d, err := des.ParseDuration(v, lo, hi)
	if err != nil {
		return 0, flagErr(flag, err)
	}
	return d, nil
}

// flagFraction reads a probability flag in [0, 1): 0.5% or 0.005.
func flagFraction(flag, v string) (float64, error) {
	p, err := des.ParseFraction(v)
	if err != nil {
		return 0, flagErr(flag, err)
	}
	return p, nil
}

// flagCount checks an integer flag against [lo, hi].
func flagCount(flag string, v, lo, hi int) error {
	if _, err := des.CheckInt(strconv.Itoa(v), int64(v), int64(lo), int64(hi)); err != nil {
		return flagErr(flag, err)
	}
	return nil
}

// parseSeeds reads "7", "7-16" or "7,9,11": at most maxSeeds seeds, each
// once.
func parseSeeds(s string) ([]uint64, error) {
	var out []uint64
	seen := map[uint64]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.ParseUint(strings.TrimSpace(lo), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q: want seeds from 0 to %d such as 7, 7-16 or 7,9,11", s, uint64(1<<64-1))
		}
		b := a
		if isRange {
			if b, err = strconv.ParseUint(strings.TrimSpace(hi), 10, 64); err != nil || b < a {
				return nil, fmt.Errorf("%q: a range must read lo-hi with lo <= hi, both from 0 to %d", part, uint64(1<<64-1))
			}
		}
		if b-a >= maxSeeds || len(out)+int(b-a)+1 > maxSeeds {
			return nil, fmt.Errorf("%q: at most %d seeds at once", s, maxSeeds)
		}
		for x := a; ; x++ {
			if seen[x] {
				return nil, fmt.Errorf("%q: seed %d is given twice; a seed's cells would run twice under one key", s, x)
			}
			seen[x] = true
			out = append(out, x)
			if x == b { // not x <= b: b may be the largest uint64
				break
			}
		}
	}
	return out, nil
}
