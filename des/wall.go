//go:build unix

package des

import (
	"runtime/metrics"
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

// BusyCPU is the CPU time the process's Go code and runtime have used so
// far (the runtime's estimate: its total CPU time under GOMAXPROCS less
// the idle time, runtime/metrics), for the cores a phase kept busy: its
// difference over a span over the span's wall time.
func BusyCPU() time.Duration {
	s := []metrics.Sample{{Name: "/cpu/classes/total:cpu-seconds"}, {Name: "/cpu/classes/idle:cpu-seconds"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64 || s[1].Value.Kind() != metrics.KindFloat64 {
		return 0
	}
	return time.Duration((s[0].Value.Float64() - s[1].Value.Float64()) * float64(time.Second))
}
