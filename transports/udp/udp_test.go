package udp

import (
	"errors"
	"net"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
)

// stack builds a live two-node network inside the bubble.
func stack(t *testing.T, lat des.Time, up netmodel.ShaperConfig) (*Stack, func()) {
	t.Helper()
	sim := des.NewSim()
	live := des.NewLive(sim)
	n, err := netmodel.New(sim, netmodel.Config{Latency: netmodel.FixedLatency(lat)})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := n.AddNode(netmodel.NodeConfig{Up: netmodel.LinkConfig{Shaper: up}}); err != nil {
			t.Fatal(err)
		}
	}
	live.Start()
	return NewStack(live, n), live.Stop
}

func TestRoundTripTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, stop := stack(t, 15*des.Millisecond, netmodel.ShaperConfig{})
		defer stop()
		a, _ := st.Listen(0, 1000, netmodel.NeverBlock)
		b, _ := st.Listen(1, 2000, netmodel.NeverBlock)
		defer a.Close()
		defer b.Close()
		start := time.Now()
		if _, err := a.WriteTo([]byte("ping"), b.LocalAddr()); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 64)
		n, from, err := b.ReadFrom(buf)
		if err != nil || string(buf[:n]) != "ping" {
			t.Fatalf("read %q, %v", buf[:n], err)
		}
		if el := time.Since(start); el != 15*time.Millisecond {
			t.Fatalf("arrived after %v, want 15ms", el)
		}
		if from.String() != "10.0.0.1:1000" {
			t.Fatalf("source %v, want 10.0.0.1:1000", from)
		}
		if _, err := b.WriteTo(buf[:n], from); err != nil {
			t.Fatal(err)
		}
		if _, _, err := a.ReadFrom(buf); err != nil || time.Since(start) != 30*time.Millisecond {
			t.Fatalf("reply after %v (%v), want 30ms", time.Since(start), err)
		}
	})
}

func TestReadDeadlineAndClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, stop := stack(t, des.Millisecond, netmodel.ShaperConfig{})
		defer stop()
		a, _ := st.Listen(0, 1, netmodel.NeverBlock)
		start := time.Now()
		a.SetReadDeadline(start.Add(5 * time.Millisecond))
		buf := make([]byte, 16)
		if _, _, err := a.ReadFrom(buf); !errors.Is(err, os.ErrDeadlineExceeded) || time.Since(start) != 5*time.Millisecond {
			t.Fatalf("read returned %v after %v, want a deadline error after 5ms", err, time.Since(start))
		}
		a.SetReadDeadline(time.Time{})
		errc := make(chan error)
		go func() {
			_, _, err := a.ReadFrom(buf)
			errc <- err
		}()
		time.Sleep(time.Millisecond)
		a.Close()
		if err := <-errc; !errors.Is(err, net.ErrClosed) {
			t.Fatalf("blocked read returned %v after Close, want net.ErrClosed", err)
		}
		if a.Close() == nil {
			t.Fatal("second Close should report net.ErrClosed")
		}
	})
}

// blockingPair returns a blocking sender with a 5 000-byte send buffer
// (2 500 requested) on node 0, behind an 8 Mbit/s uplink (1 byte/µs) and
// 1 ms of latency, and a receiver with a 2 MiB buffer on node 1; both close
// and the core stops when the test ends. Call inside the bubble.
func blockingPair(t *testing.T) (a, b *Conn) {
	t.Helper()
	st, stop := stack(t, des.Millisecond, netmodel.OneMTUBurst(8e6))
	a, _ = st.Listen(0, 1, netmodel.BlockWhenFull)
	b, _ = st.Listen(1, 1, netmodel.NeverBlock)
	t.Cleanup(func() {
		a.Close()
		b.Close()
		stop()
	})
	a.SetWriteBuffer(2500)
	b.SetReadBuffer(1 << 20)
	return a, b
}

// TestBlockingWrites: with a 5 000-byte send buffer (2 500 requested) on an
// 8 Mbit/s uplink (1 byte/µs), the sixth 1 000-byte datagram waits until
// the first has left the shaper at 1 ms; the tenth at 5 ms.
func TestBlockingWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := blockingPair(t)
		start := time.Now()
		payload := make([]byte, 1000-netmodel.IPv4Header-netmodel.UDPHeader)
		var at []time.Duration
		for range 10 {
			if _, err := a.WriteTo(payload, b.LocalAddr()); err != nil {
				t.Fatal(err)
			}
			at = append(at, time.Since(start))
		}
		want := []time.Duration{0, 0, 0, 0, 0, 1, 2, 3, 4, 5}
		for i := range want {
			if at[i] != want[i]*time.Millisecond {
				t.Fatalf("write %d returned at %v, want %v ms (all: %v)", i, at[i], want[i], at)
			}
		}
	})
}

// TestBlockingWritersShareSocket: four writers share one blocking socket
// (as a host's QUIC connections share its UDP socket), each writing ten
// 1 000-byte datagrams into a 5 000-byte buffer on an 8 Mbit/s uplink.
// The uplink sends one datagram a millisecond, so the 40th and last write
// returns at 35 ms and every datagram arrives. Before writers passed the
// wake-up on, the writers that missed it waited forever.
func TestBlockingWritersShareSocket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := blockingPair(t)
		start := time.Now()
		payload := make([]byte, 1000-netmodel.IPv4Header-netmodel.UDPHeader)
		const writers, each = 4, 10
		last := make(chan time.Duration, writers)
		for range writers {
			go func() {
				for range each {
					if _, err := a.WriteTo(payload, b.LocalAddr()); err != nil {
						t.Error(err)
						break
					}
				}
				last <- time.Since(start)
			}()
		}
		var latest time.Duration
		for range writers {
			latest = max(latest, <-last)
		}
		if want := 35 * time.Millisecond; latest != want {
			t.Fatalf("the last write returned at %v, want %v", latest, want)
		}
		buf := make([]byte, 2048)
		for i := range writers * each {
			b.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
			if _, _, err := b.ReadFrom(buf); err != nil {
				t.Fatalf("datagram %d: %v", i, err)
			}
		}
	})
}

func TestBufferSizesDoubled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, stop := stack(t, des.Millisecond, netmodel.ShaperConfig{})
		defer stop()
		a, _ := st.Listen(0, 1, netmodel.NeverBlock)
		defer a.Close()
		a.SetReadBuffer(7 << 20)
		a.SetWriteBuffer(7 << 20)
		if a.Socket().RecvBuffer() != 14<<20 || a.Socket().SendBuffer() != 14<<20 {
			t.Fatalf("buffers %d / %d, want 14 MiB each", a.Socket().RecvBuffer(), a.Socket().SendBuffer())
		}
		if _, err := st.Listen(0, 1, netmodel.NeverBlock); err == nil {
			t.Fatal("binding a bound port should fail")
		}
		if _, err := st.Listen(5, 1, netmodel.NeverBlock); err == nil {
			t.Fatal("listening on a missing node should fail")
		}
	})
}
