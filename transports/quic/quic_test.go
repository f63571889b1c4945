package quic

import (
	"context"
	"io"
	"net"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
	"github.com/uplinksim/uplink/transports/udp"
)

// TestHandshakeTakesOneRTT: over a 30 ms one-way link, quic-go's 1-RTT
// handshake completes for the client after one round trip (60 ms), and an
// echo on a stream comes back one round trip later.
func TestHandshakeTakesOneRTT(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim := des.NewSim()
		live := des.NewLive(sim)
		n, err := netmodel.New(sim, netmodel.Config{Latency: netmodel.FixedLatency(30 * des.Millisecond)})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, err := n.AddNode(netmodel.NodeConfig{}); err != nil {
				t.Fatal(err)
			}
		}
		live.Start()
		defer live.Stop()
		st := udp.NewStack(live, n)
		stop, done := echoServer(t, st)
		defer stop()
		cc, _ := st.Listen(0, 0, netmodel.NeverBlock)
		defer cc.Close()
		sc := net.UDPAddrFromAddrPort(netip.AddrPortFrom(netmodel.NodeAddr(1), 443))
		start := time.Now()
		ctr, conn, err := Dial(context.Background(), cc, sc, ClientTLS(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ctr.Close()
		if el := time.Since(start); el != 60*time.Millisecond {
			t.Fatalf("handshake took %v, want one RTT (60ms)", el)
		}
		s, err := conn.OpenStreamSync(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		s.Write([]byte("hello"))
		s.Close()
		got, err := io.ReadAll(s)
		if err != nil || string(got) != "hello" {
			t.Fatalf("echo %q, %v", got, err)
		}
		if el := time.Since(t0); el < 60*time.Millisecond || el > 70*time.Millisecond {
			t.Fatalf("echo took %v, want about one RTT", el)
		}
		conn.CloseWithError(0, "")
		<-done
	})
}
