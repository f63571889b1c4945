package tcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
)

// bubble builds a network of the given nodes inside the current synctest
// bubble, starts the event core and returns a stack on it; the core stops
// when the test ends.
func bubble(t *testing.T, cfg Config, ncfg netmodel.Config, nodes ...link) *Stack {
	t.Helper()
	sim, n := buildNet(t, ncfg, nodes...)
	live := des.NewLive(sim)
	live.Start()
	t.Cleanup(live.Stop)
	st, err := NewStack(live, n, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func tcpAddr(node int, port uint16) *net.TCPAddr {
	return &net.TCPAddr{IP: netmodel.NodeAddr(node).AsSlice(), Port: int(port)}
}

// TestDialRefused: a SYN to a port nobody listens on is answered with a
// reset one round trip (20 ms) later, and Dial fails with ECONNREFUSED.
func TestDialRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := bubble(t, LinuxConfig(), netmodel.Config{}, link{}, link{})
		start := time.Now()
		_, err := st.Dial(context.Background(), 0, tcpAddr(1, 81))
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("dial: %v; want connection refused", err)
		}
		if d := time.Since(start); d != 20*time.Millisecond {
			t.Fatalf("refused after %v; want one round trip, 20ms", d)
		}
		// A listener closed before the dial refuses too.
		l, err := st.Listen(1, 82)
		if err != nil {
			t.Fatal(err)
		}
		l.Close()
		if _, err := st.Dial(context.Background(), 0, tcpAddr(1, 82)); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("dial to a closed listener: %v; want connection refused", err)
		}
	})
}

// TestCloseWriteEOF: after CloseWrite the peer reads the data, then EOF,
// and can still answer on the other direction, which the first side reads
// to EOF in turn. Every goroutine ends.
func TestCloseWriteEOF(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := bubble(t, LinuxConfig(), netmodel.Config{}, link{up: 10e6, down: 10e6}, link{up: 10e6, down: 10e6})
		l, err := st.Listen(1, 80)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		srvErr := make(chan error, 1)
		go func() {
			srvErr <- func() error {
				c, err := l.Accept()
				if err != nil {
					return err
				}
				defer c.Close()
				got, err := io.ReadAll(c)
				if err != nil {
					return err
				}
				if string(got) != "request" {
					return errors.New("server read " + string(got))
				}
				if _, err := c.Write([]byte("response")); err != nil {
					return err
				}
				return c.(*Conn).CloseWrite()
			}()
		}()
		c, err := st.Dial(context.Background(), 0, l.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if c.RemoteAddr().String() != "10.0.0.2:80" || c.LocalAddr().(*net.TCPAddr).IP.String() != "10.0.0.1" {
			t.Fatalf("addresses %v -> %v", c.LocalAddr(), c.RemoteAddr())
		}
		if _, err := c.Write([]byte("request")); err != nil {
			t.Fatal(err)
		}
		if err := c.CloseWrite(); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte("more")); !errors.Is(err, syscall.EPIPE) {
			t.Fatalf("write after CloseWrite: %v; want EPIPE", err)
		}
		got, err := io.ReadAll(c)
		if err != nil || string(got) != "response" {
			t.Fatalf("client read %q, %v", got, err)
		}
		if err := <-srvErr; err != nil {
			t.Fatal(err)
		}
	})
}

// TestConcurrentWriters: four goroutines write 300 KB each into one
// connection at 10 Mbit/s, so the send buffer fills again and again while
// several writers wait. Every write completes and the peer reads all
// 1.2 MB. (The case that needs Endpoint.AwaitWritable, a writer finishing
// on an exactly full buffer, is rare here; the next test pins it.)
func TestConcurrentWriters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := bubble(t, LinuxConfig(), netmodel.Config{}, link{up: 10e6, down: 10e6}, link{up: 10e6, down: 10e6})
		l, err := st.Listen(1, 80)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		const writers, writes, size = 4, 100, 3000
		got := make(chan int64, 1)
		go func() {
			c, err := l.Accept()
			if err != nil {
				t.Error(err)
				got <- 0
				return
			}
			defer c.Close()
			n, _ := io.Copy(io.Discard, c)
			got <- n
		}()
		c, err := st.Dial(context.Background(), 0, l.Addr())
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range writers {
			wg.Go(func() {
				buf := make([]byte, size)
				for range writes {
					if _, err := c.Write(buf); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		if err := c.CloseWrite(); err != nil {
			t.Fatal(err)
		}
		if n := <-got; n != writers*writes*size {
			t.Fatalf("the peer read %d bytes, want %d", n, writers*writes*size)
		}
		c.Close()
	})
}

// TestConnIntactUnderLossAndReordering: 8 MiB through net.Conn, goroutine
// to goroutine, over a path with 1 % loss each way and per-packet latency
// between 10 and 15 ms (reordering), arrive with the SHA-256 they left
// with, for both profiles.
func TestConnIntactUnderLossAndReordering(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{{"linux", LinuxConfig()}, {"shadow", ShadowConfig()}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const size = 8 << 20
				lat := &jitterLatency{base: 10 * des.Millisecond, spread: 5 * des.Millisecond, rng: rand.New(rand.NewPCG(1, 2))}
				st := bubble(t, tc.cfg, netmodel.Config{Latency: lat, Loss: 0.01, Seed: 4},
					link{up: 50e6, down: 50e6}, link{up: 50e6, down: 50e6})
				l, err := st.Listen(1, 443)
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
				type result struct {
					sum [32]byte
					n   int64
					err error
				}
				res := make(chan result, 1)
				go func() {
					var r result
					defer func() { res <- r }()
					c, err := l.Accept()
					if err != nil {
						r.err = err
						return
					}
					defer c.Close()
					h := sha256.New()
					r.n, r.err = io.Copy(h, c)
					copy(r.sum[:], h.Sum(nil))
				}()
				c, err := st.Dial(context.Background(), 0, l.Addr())
				if err != nil {
					t.Fatal(err)
				}
				rng := rand.New(rand.NewPCG(7, 8))
				h := sha256.New()
				buf := make([]byte, 100000) // not a multiple of the MSS
				for sent := 0; sent < size; {
					k := min(len(buf), size-sent)
					for i := range buf[:k] {
						buf[i] = byte(rng.Uint32())
					}
					h.Write(buf[:k])
					if _, err := c.Write(buf[:k]); err != nil {
						t.Fatal(err)
					}
					sent += k
				}
				stats := c.Stats()
				c.Close()
				r := <-res
				if r.err != nil || r.n != size || !bytes.Equal(r.sum[:], h.Sum(nil)) {
					t.Fatalf("server read %d bytes, err %v, hash match %v", r.n, r.err, bytes.Equal(r.sum[:], h.Sum(nil)))
				}
				if stats.Retransmits == 0 {
					t.Fatal("no retransmissions at 1 % loss")
				}
				t.Logf("retransmits %d, fast recoveries %d, RTOs %d", stats.Retransmits, stats.FastRecoveries, stats.RTOs)
			})
		})
	}
}

// TestDeadlinesAndClose: a Read with a deadline 300 ms ahead fails with
// os.ErrDeadlineExceeded exactly then; a blocked Read returns
// net.ErrClosed when its Conn is closed; the peer then reads EOF.
func TestDeadlinesAndClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := bubble(t, LinuxConfig(), netmodel.Config{}, link{}, link{})
		l, err := st.Listen(1, 80)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		accepted := make(chan net.Conn, 1)
		go func() {
			c, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}()
		c, err := st.Dial(context.Background(), 0, l.Addr())
		if err != nil {
			t.Fatal(err)
		}
		s := <-accepted
		if s == nil {
			t.Fatal("accept failed")
		}
		start := time.Now()
		c.SetReadDeadline(start.Add(300 * time.Millisecond))
		buf := make([]byte, 10)
		if _, err := c.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) || time.Since(start) != 300*time.Millisecond {
			t.Fatalf("read: %v after %v; want a deadline error after 300ms", err, time.Since(start))
		}
		c.SetReadDeadline(time.Time{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Read(buf); !errors.Is(err, net.ErrClosed) {
				t.Errorf("blocked read after Close: %v; want net.ErrClosed", err)
			}
		}()
		time.Sleep(time.Second)
		c.Close()
		wg.Wait()
		if n, err := s.Read(buf); n != 0 || err != io.EOF {
			t.Fatalf("peer read %d, %v; want EOF", n, err)
		}
		s.Close()
	})
}

// TestSharedListenPort: five clients, two of them on the same node, talk
// to one listener at once; the server tells the connections apart by the
// remote (node, port) on the shared port, and each client gets its own
// bytes echoed back.
func TestSharedListenPort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := bubble(t, LinuxConfig(), netmodel.Config{Loss: 0.01, Seed: 2},
			link{up: 20e6, down: 20e6}, link{up: 20e6, down: 20e6}, link{up: 20e6, down: 20e6}, link{up: 20e6, down: 20e6})
		l, err := st.Listen(3, 7)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer c.Close()
					io.Copy(c, c)
				}()
			}
		}()
		const size = 300 << 10
		errs := make(chan error, 5)
		for i := range 5 {
			go func() {
				errs <- func() error {
					c, err := st.Dial(context.Background(), i%3, l.Addr())
					if err != nil {
						return err
					}
					defer c.Close()
					msg := bytes.Repeat([]byte{byte('a' + i)}, size)
					go func() {
						c.Write(msg)
						c.CloseWrite()
					}()
					got, err := io.ReadAll(c)
					if err != nil {
						return err
					}
					if !bytes.Equal(got, msg) {
						return errors.New("echo mismatch")
					}
					return nil
				}()
			}()
		}
		for range 5 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		l.Close()
		wg.Wait()
	})
}

// TestDialContext: a dial into a black hole returns the context's error
// when the context ends (after 3 s here: the SYN was sent at 0 and 1 s),
// and leaves nothing behind.
func TestDialContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := bubble(t, LinuxConfig(), netmodel.Config{Loss: 0.999999}, link{}, link{})
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		start := time.Now()
		_, err := st.Dial(ctx, 0, tcpAddr(1, 80))
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 3*time.Second {
			t.Fatalf("dial: %v after %v; want the context's deadline after 3s", err, time.Since(start))
		}
	})
}

// TestAwaitWritableRearmsTheWakeUp: the Writable callback fires once per
// blocked Write. A writer woken by it that takes exactly the free space
// finishes without blocking, so a second waiting writer would never hear
// of the next free space; AwaitWritable re-arms the callback for it.
func TestAwaitWritableRearmsTheWakeUp(t *testing.T) {
	tn := newTestNet(t, LinuxConfig(), netmodel.Config{}, link{up: 10e6, down: 10e6}, link{up: 10e6, down: 10e6})
	rbuf := make([]byte, 64<<10)
	if _, err := tn.eng.Listen(1, 80, func(ep *Endpoint, _ des.Time) bool {
		ep.SetCallbacks(Callbacks{Readable: func(now des.Time) {
			for {
				if n, err := ep.Read(rbuf, now); n == 0 || err != nil {
					return
				}
			}
		}})
		return true
	}); err != nil {
		t.Fatal(err)
	}
	cli, err := tn.eng.Connect(0, 1, 80, tn.sim.Now())
	if err != nil {
		t.Fatal(err)
	}
	wakes := 0
	cli.SetCallbacks(Callbacks{Writable: func(des.Time) { wakes++ }})
	tn.sim.RunUntil(100 * des.Millisecond)
	buf := make([]byte, 4<<20)
	runUntilWoken := func(want int) {
		t.Helper()
		for wakes < want && tn.sim.Step() {
		}
		if wakes != want {
			t.Fatalf("%d wake-ups, want %d", wakes, want)
		}
	}
	fillExactly := func() {
		t.Helper()
		k := cli.Writable()
		if n, err := cli.Write(buf[:k], tn.sim.Now()); n != k || err != nil || cli.Writable() != 0 {
			t.Fatalf("wrote %d of %d (%v), %d free after", n, k, err, cli.Writable())
		}
	}
	if n, _ := cli.Write(buf, tn.sim.Now()); n == len(buf) {
		t.Fatal("a 4 MiB write fitted the send buffer")
	}
	runUntilWoken(1)
	fillExactly()
	if cli.AwaitWritable() {
		t.Fatal("AwaitWritable reported space in a full buffer")
	}
	runUntilWoken(2)
	fillExactly() // and no AwaitWritable: no further wake-up comes
	tn.sim.RunUntil(tn.sim.Now() + des.Second)
	if wakes != 2 || cli.Buffered() != 0 {
		t.Fatalf("after a second: %d wake-ups, %d bytes unacknowledged; want 2 and 0", wakes, cli.Buffered())
	}
}

// TestReceiveRingFollowsData: the receive ring holds what arrives, not
// the window the receiver offers. Shadow's autotuning offers a window of
// hundreds of KiB from the start; a 20 000-byte transfer that the reader
// does not drain needs a ring of 32 KiB (the power of two above it), and
// every byte still arrives intact once the reader reads.
func TestReceiveRingFollowsData(t *testing.T) {
	tn := newTestNet(t, ShadowConfig(), netmodel.Config{}, link{up: 50e6, down: 100e6}, link{up: 50e6, down: 100e6})
	f := tn.startFlow(0, 1, 80, 20000, 1)
	f.paused = true
	tn.sim.RunUntil(des.Second)
	r := &f.srv.rcv
	if r.unread() != 20000 {
		t.Fatalf("%d bytes unread, want 20000", r.unread())
	}
	if r.win < 128<<10 || r.buf.cap() != 32<<10 {
		t.Fatalf("window %d, ring %d bytes: want a window of at least 128 KiB and a 32 KiB ring", r.win, r.buf.cap())
	}
	f.paused = false
	f.readable(tn.sim.Now())
	tn.sim.RunUntil(2 * des.Second)
	if !f.intact() {
		t.Fatalf("read %d of %d bytes, intact %v", f.read, f.written, f.intact())
	}
}

// TestRingsShedWhenEmpty: a ring that grew past ringKeep during a burst
// is released once it holds nothing, on both ends: mid-transfer of 1 MiB
// to a reader that has stopped reading, both rings hold well over 64 KiB;
// once the reader drains and every byte is acknowledged, neither keeps
// one (the last few segments may regrow a small one), and the bytes
// arrived intact.
func TestRingsShedWhenEmpty(t *testing.T) {
	tn := newTestNet(t, ShadowConfig(), netmodel.Config{}, link{up: 50e6, down: 100e6}, link{up: 50e6, down: 100e6})
	f := tn.startFlow(0, 1, 80, 1<<20, 1)
	f.noClose = true // keep the connection open: an idle one must not keep its rings
	tn.sim.RunUntil(50 * des.Millisecond)
	f.paused = true
	tn.sim.RunUntil(150 * des.Millisecond)
	snd, rcv := &f.cli.snd, &f.srv.rcv
	if snd.buf.cap() <= ringKeep || rcv.buf.cap() <= ringKeep {
		t.Fatalf("mid-transfer rings %d and %d bytes; want both above %d", snd.buf.cap(), rcv.buf.cap(), ringKeep)
	}
	f.paused = false
	f.readable(tn.sim.Now())
	tn.sim.RunUntil(3 * des.Second)
	if f.read != 1<<20 || snd.bufLen != 0 {
		t.Fatalf("read %d of %d bytes, %d unacknowledged", f.read, 1<<20, snd.bufLen)
	}
	if snd.buf.cap() > ringKeep || rcv.buf.cap() > ringKeep {
		t.Fatalf("idle rings %d and %d bytes; want both released (at most %d, regrown by the last segments)", snd.buf.cap(), rcv.buf.cap(), ringKeep)
	}
	if string(f.wh.Sum(nil)) != string(f.rh.Sum(nil)) {
		t.Fatal("the bytes read differ from those written")
	}
}
