package des

import (
	"fmt"
	"time"
)

// Time is a virtual instant in nanoseconds since the start of a simulation.
type Time int64

// Never is later than any instant a simulation reaches.
const Never Time = 1<<63 - 1

// Common durations, in virtual nanoseconds.
const (
	Nanosecond  Time = 1
	Microsecond Time = 1000
	Millisecond Time = 1000 * Microsecond
	Second      Time = 1000 * Millisecond
)

// Duration converts t to a time.Duration.
func (t Time) Duration() time.Duration { return time.Duration(t) }

// Seconds returns t in seconds.
func (t Time) Seconds() float64 { return float64(t) / 1e9 }

// FromDuration converts a time.Duration to virtual time.
func FromDuration(d time.Duration) Time { return Time(d) }

func (t Time) String() string {
	if t == Never {
		return "never"
	}
	return fmt.Sprint(time.Duration(t))
}
