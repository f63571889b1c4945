package bulk

import (
	"context"
	"crypto/sha256"
	"math"
	"math/rand/v2"
	"testing"
	"testing/synctest"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
	"github.com/uplinksim/uplink/transports/tcp"
)

// expectedSum is the SHA-256 of the bytes Run writes for seed and n.
func expectedSum(seed uint64, n int64) [32]byte {
	rng := rand.New(rand.NewPCG(seed, 0x6b756c62))
	h := sha256.New()
	chunk := make([]byte, 64<<10)
	for sent := int64(0); sent < n; {
		k := min(int64(len(chunk)), n-sent)
		fillRandom(rng, chunk[:k])
		h.Write(chunk[:k])
		sent += k
	}
	var s [32]byte
	copy(s[:], h.Sum(nil))
	return s
}

// TestQUICIntactOverLoss: 16 MiB over real quic-go, 100 Mbit/s, 40 ms RTT,
// 1 % loss each way, arrives intact; the sender lost and retransmitted
// packets; goodput is near the Mathis et al. rate for loss-limited Reno
// (MSS / RTT × sqrt(3 / (2p)), 3.4 Mbit/s here): quic-go's controller is
// NewReno-like, so within a factor of two either way.
func TestQUICIntactOverLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("16 MiB transfer")
	}
	const size = 16 << 20
	synctest.Test(t, func(t *testing.T) {
		res, err := Run(context.Background(), Config{
			Transport: "quic", Rate: 100e6, RTT: 40 * des.Millisecond, Loss: 0.01,
			Bytes: size, Seed: 3,
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.BytesReceived != size || res.SHA256 != expectedSum(3, size) {
			t.Fatalf("received %d bytes, hash match %v", res.BytesReceived, res.SHA256 == expectedSum(3, size))
		}
		if res.LossDrops == 0 || res.PacketsLost == 0 {
			t.Fatalf("no loss happened: network drops %d, quic lost %d", res.LossDrops, res.PacketsLost)
		}
		mathis := 1400 * 8 / 0.040 * math.Sqrt(3/(2*0.01))
		if res.GoodputBps > 2*mathis || res.GoodputBps < mathis/2 {
			t.Fatalf("goodput %.2f Mbit/s, Mathis %.2f Mbit/s: not within a factor of two", res.GoodputBps/1e6, mathis/1e6)
		}
		t.Logf("elapsed %v goodput %.1f Mbit/s sent %d lost %d netdrops %d events %d wakes %d",
			res.Elapsed, res.GoodputBps/1e6, res.PacketsSent, res.PacketsLost, res.LossDrops, res.Events, res.CoreWakes)
	})
}

// TestQUICLossless: without loss, a 4 MiB transfer at 50 Mbit/s takes at
// least the serialisation time and not much more than it plus slow start.
func TestQUICLossless(t *testing.T) {
	const size = 4 << 20
	synctest.Test(t, func(t *testing.T) {
		res, err := Run(context.Background(), Config{
			Transport: "quic", Rate: 50e6, RTT: 20 * des.Millisecond, Bytes: size, Seed: 1,
		})
		if err != nil {
			t.Fatal(err)
		}
		floor := des.Time(float64(size) * 8 / 50e6 * 1e9)
		if res.SHA256 != expectedSum(1, size) || res.Elapsed < floor || res.Elapsed > 3*floor {
			t.Fatalf("elapsed %v (floor %v), hash ok %v", res.Elapsed, floor, res.SHA256 == expectedSum(1, size))
		}
		if res.LossDrops != 0 {
			t.Fatalf("loss drops %d on a lossless link", res.LossDrops)
		}
		t.Logf("elapsed %v goodput %.1f Mbit/s sent %d lost %d qdrops %d", res.Elapsed, res.GoodputBps/1e6, res.PacketsSent, res.PacketsLost, res.QueueDrops)
	})
}

// TestPIESettlesNearTarget: four flows through one 20 Mbit/s PIE
// bottleneck for 30 s: PIE holds the mean queue delay near its 15 ms
// target (RFC 8033's control goal), while a 1 000-packet pfifo on the same
// load holds ten times more.
func TestPIESettlesNearTarget(t *testing.T) {
	run := func(spec string) des.Time {
		var mean des.Time
		synctest.Test(t, func(t *testing.T) {
			res, err := Run(context.Background(), Config{
				Transport: "quic", Rate: 20e6, RTT: 40 * des.Millisecond, Duration: 30 * des.Second,
				Flows: 4, Seed: 1, UpQdisc: spec,
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.GoodputBps < 0.85*20e6 {
				t.Errorf("%s: goodput %.1f Mbit/s, the bottleneck is not used", spec, res.GoodputBps/1e6)
			}
			mean = res.Queues[0].Stats.Sojourn.Mean()
		})
		return mean
	}
	pie, fifo := run("pie"), run("pfifo:limit=1000")
	if pie < 10*des.Millisecond || pie > 20*des.Millisecond {
		t.Fatalf("PIE mean queue delay %v, want within [10ms, 20ms] of the 15 ms target", pie)
	}
	if fifo < 10*pie {
		t.Fatalf("pfifo mean queue delay %v, not ten times PIE's %v", fifo, pie)
	}
}

// TestTCPIntactEachCC: 4 MiB over the TCP model with each congestion
// control arrives intact (SHA-256), lossless at 50 Mbit/s and 20 ms RTT
// within [serialisation time, three times it], and through 0.5 % loss
// each way with retransmissions the sender counted.
func TestTCPIntactEachCC(t *testing.T) {
	const size = 4 << 20
	for _, cc := range []string{tcp.CUBIC, tcp.NewReno, tcp.ShadowReno} {
		t.Run(cc, func(t *testing.T) {
			for _, loss := range []float64{0, 0.005} {
				synctest.Test(t, func(t *testing.T) {
					tc := tcp.LinuxConfig()
					tc.CongestionControl = cc
					res, err := Run(context.Background(), Config{
						Transport: "tcp", TCP: &tc, Rate: 50e6, RTT: 20 * des.Millisecond, Loss: loss,
						Bytes: size, Seed: 4,
					})
					if err != nil {
						t.Fatal(err)
					}
					if res.BytesReceived != size || res.SHA256 != expectedSum(4, size) {
						t.Fatalf("loss %g: received %d bytes, hash match %v", loss, res.BytesReceived, res.SHA256 == expectedSum(4, size))
					}
					if res.SegmentsSent < size/1460 || res.PacketsSent != 0 {
						t.Fatalf("loss %g: %d TCP segments, %d QUIC packets counted", loss, res.SegmentsSent, res.PacketsSent)
					}
					floor := des.Time(float64(size) * 8 / 50e6 * 1e9)
					if loss == 0 && (res.Elapsed < floor || res.Elapsed > 3*floor || res.LossDrops != 0) {
						t.Fatalf("lossless: elapsed %v (floor %v), loss drops %d", res.Elapsed, floor, res.LossDrops)
					}
					if loss > 0 && (res.LossDrops == 0 || res.SegmentsRetrans == 0) {
						t.Fatalf("loss %g: network loss drops %d, retransmitted segments %d", loss, res.LossDrops, res.SegmentsRetrans)
					}
					t.Logf("%s loss %g: elapsed %v goodput %.1f Mbit/s segments %d retrans %d fast recoveries %d RTOs %d",
						cc, loss, res.Elapsed, res.GoodputBps/1e6, res.SegmentsSent, res.SegmentsRetrans, res.FastRecoveries, res.RTOs)
				})
			}
		})
	}
}

// TestTCPTimed: a timed transfer of two TCP flows (Shadow's stack) fills a
// 20 Mbit/s bottleneck for 3 s and tears down with data still in flight.
func TestTCPTimed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := tcp.ShadowConfig()
		res, err := Run(context.Background(), Config{
			Transport: "tcp", TCP: &tc, Rate: 20e6, RTT: 20 * des.Millisecond, Duration: 3 * des.Second,
			Flows: 2, Seed: 2,
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Elapsed != 3*des.Second || res.GoodputBps < 0.8*20e6 || res.GoodputBps > 20e6 || len(res.FlowGoodput) != 2 {
			t.Fatalf("elapsed %v, goodput %.2f Mbit/s, %d flows", res.Elapsed, res.GoodputBps/1e6, len(res.FlowGoodput))
		}
	})
}

// TestConfigErrors: a TCP configuration or blocking sends with the wrong
// transport, and an unknown transport, are refused.
func TestConfigErrors(t *testing.T) {
	tc := tcp.LinuxConfig()
	for _, c := range []Config{
		{Transport: "quic", TCP: &tc, Bytes: 1},
		{Transport: "tcp", SendMode: netmodel.BlockWhenFull, Bytes: 1},
		{Transport: "sctp", Bytes: 1},
	} {
		if err := c.defaults(); err == nil {
			t.Errorf("%+v: accepted", c)
		}
	}
}

// TestQUICReceiverCPUBound: 4 MiB over quic-go at 1 Gbit/s, 10 ms RTT,
// receive buffers capped at Linux's rmem_max (212 992). A receiver that
// spends 20 µs on every datagram (--cpu rx:20us) reads at most one
// 1 252-byte packet per 20 µs, below the link's 1 Gbit/s: its socket
// buffer overflows (sockbuf drops, which quic-go retransmits) and the
// goodput stays under 1 252 × 8 / 20 µs = 500.8 Mbit/s. Without the cpu
// the buffer never overflows.
func TestQUICReceiverCPUBound(t *testing.T) {
	const size = 4 << 20
	for _, spec := range []string{"off", "rx:20us"} {
		cpu, err := des.ParseCPU(spec)
		if err != nil {
			t.Fatal(err)
		}
		synctest.Test(t, func(t *testing.T) {
			res, err := Run(context.Background(), Config{
				Transport: "quic", Rate: 1e9, RTT: 10 * des.Millisecond, Bytes: size, Seed: 1,
				SockBufMax: 212992, CPU: cpu,
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.BytesReceived != size || res.SHA256 != expectedSum(1, size) {
				t.Fatalf("%s: received %d bytes, hash match %v", spec, res.BytesReceived, res.SHA256 == expectedSum(1, size))
			}
			t.Logf("%s: goodput %.1f Mbit/s, sockbuf drops %d", spec, res.GoodputBps/1e6, res.SockDrops)
			if spec == "off" {
				if res.SockDrops != 0 {
					t.Fatalf("off: %d sockbuf drops, want 0", res.SockDrops)
				}
				return
			}
			if res.SockDrops == 0 || res.GoodputBps >= 500.8e6 {
				t.Fatalf("rx:20us: %d sockbuf drops, goodput %.1f Mbit/s; want drops and under 500.8 Mbit/s", res.SockDrops, res.GoodputBps/1e6)
			}
		})
	}
}
