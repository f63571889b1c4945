package netmodel

import (
	"testing"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/queues"
)

// BenchmarkModelPackets measures the network model alone: packets per
// second through socket, uplink pfifo, shaper, latency pipe, downlink
// shaper and receive buffer, with no real code. Eight flows between eight
// node pairs at 1 Gbit/s and 20 ms one way, each keeping 2 000 packets in
// flight (a window that overflows the queue now and then); every delivery
// is read out and answered by a new send. Goal: at least 2 M packets/s.
func BenchmarkModelPackets(b *testing.B) {
	sim := des.NewSim()
	n, err := New(sim, Config{Latency: FixedLatency(20 * des.Millisecond)})
	if err != nil {
		b.Fatal(err)
	}
	const pairs, window = 8, 2000
	for range 2 * pairs {
		q, _ := queues.NewFIFO(queues.DefaultPfifoLimit, 0)
		if _, err := n.AddNode(NodeConfig{
			Up:   LinkConfig{Qdisc: q, Shaper: OneMTUBurst(1e9)},
			Down: LinkConfig{Shaper: OneMTUBurst(1e9)},
		}); err != nil {
			b.Fatal(err)
		}
	}
	payload := make([]byte, 1452)
	buf := make([]byte, 2048)
	delivered := 0
	for i := range pairs {
		tx, _ := n.Node(i).Bind(ProtoUDP, 1, NeverBlock)
		rx, _ := n.Node(pairs+i).Bind(ProtoUDP, 1, NeverBlock)
		rx.SetRecvBuffer(64 << 20)
		dst := pairs + i
		rx.OnReadable = func() {
			for {
				if _, _, _, ok := rx.Recv(buf); !ok {
					return
				}
				delivered++
				tx.Send(dst, 1, payload, sim.Now())
			}
		}
		for range window {
			tx.Send(dst, 1, payload, 0)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for delivered < b.N {
		if !sim.Step() {
			b.Fatal("simulation went idle")
		}
	}
	b.ReportMetric(float64(delivered)/b.Elapsed().Seconds()/1e6, "Mpackets/s")
	b.ReportMetric(float64(sim.Fired())/float64(delivered), "events/packet")
}
