//go:build unix

package des

import (
	"time"

	"golang.org/x/sys/unix"
)

// WallNow reads the real monotonic clock, which code inside a synctest
// bubble cannot get from package time (the bubble's clock is fake). Use it
// for progress lines and wall-time figures measured inside the bubble.
func WallNow() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// BusyCPU is the CPU time the process has used so far, user and system
// (getrusage), for the cores a phase kept busy: its difference over a
// span over the span's wall time. 0 where the system does not report it.
func BusyCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
