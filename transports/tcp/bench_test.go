package tcp

import (
	"syscall"
	"testing"
	"time"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
	"github.com/uplinksim/uplink/queues"
)

// BenchmarkBulkCubic1G is the model's cost per simulated data segment: a
// CUBIC bulk transfer (LinuxConfig: paced, SACK, delayed ACKs, autotuned
// buffers) at 1 Gbit/s over 40 ms of RTT, with a 1 000-packet pfifo at the
// sender's uplink, driven at model level: an always-backlogged writer and
// an instant reader inside model events, no goroutines. One iteration is
// one data segment delivered to the reader, after a warm-up of 3 s of
// simulated time (slow start, the first losses, the buffers' growth).
//
// The buffer maxima are raised to 64 MiB: Linux's stock tcp_rmem[2]
// (6 MiB, a 3 MiB window) and tcp_wmem[2] (4 MiB) hold less than the
// 5 MB bandwidth-delay product, which would make the flow window-limited
// rather than CUBIC-limited.
//
// Besides wall time it reports CPU time per segment (getrusage, all of the
// process's threads): on a shared machine the wall figure includes time
// spent waiting for a core.
func BenchmarkBulkCubic1G(b *testing.B) {
	cfg := LinuxConfig()
	cfg.RecvBuffer.Max = 64 << 20
	cfg.SendBuffer.Max = 64 << 20
	q, err := queues.NewPfifo(queues.DefaultPfifoLimit)
	if err != nil {
		b.Fatal(err)
	}
	tn := newTestNet(b, cfg, netmodel.Config{Latency: netmodel.FixedLatency(20 * des.Millisecond)},
		link{up: 1e9, down: 1e9, upQ: q}, link{up: 1e9, down: 1e9})
	f := tn.startFlow(0, 1, 5001, 0, 1)
	f.noHash = true
	// Warm up past slow start and the buffers' growth: the figure is the
	// steady state's.
	tn.sim.RunUntil(3 * des.Second)
	mss := int64(f.cli.mss)
	target := f.read + int64(b.N)*mss
	events := tn.sim.Fired()
	simStart := tn.sim.Now()
	b.ResetTimer()
	cpu0 := cpuTime()
	start := time.Now()
	for f.read < target && tn.sim.Step() {
	}
	wall := time.Since(start)
	cpu := cpuTime() - cpu0
	b.StopTimer()
	segs := float64(b.N)
	b.ReportMetric(wall.Seconds()*1e6/segs, "µs/segment")
	b.ReportMetric(segs/wall.Seconds(), "segments/s")
	b.ReportMetric(cpu.Seconds()*1e6/segs, "cpu-µs/segment")
	b.ReportMetric(float64(tn.sim.Fired()-events)/segs, "events/segment")
	b.ReportMetric((tn.sim.Now()-simStart).Seconds()/wall.Seconds(), "sim-s/wall-s")
	if f.read < target {
		b.Fatalf("simulation ran dry at %v: read %d of %d", tn.sim.Now(), f.read, target)
	}
	st := f.cli.Stats()
	b.Logf("N=%d sim %v cwnd %d ssthresh %d srtt %v retrans %d RTOs %d recov %d", b.N, tn.sim.Now(), st.Cwnd, st.Ssthresh, st.SRTT, st.Retransmits, st.RTOs, st.FastRecoveries)
}

// cpuTime is the process's user plus system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
