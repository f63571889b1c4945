package simnet

import (
	"encoding/binary"
	"net"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/des"
)

// countReads reads c until it is closed, counting the datagrams.
func countReads(c net.PacketConn, n *atomic.Uint64) {
	buf := make([]byte, 2048)
	for {
		if _, _, err := c.ReadFrom(buf); err != nil {
			return
		}
		n.Add(1)
	}
}

// burst writes count datagrams of size bytes from node i to node j at
// once, each with distinct bytes (as quic-go's encrypted packets are).
func burst(t *testing.T, nw *Network, i, j, count, size int, tag byte) {
	for k := range count {
		b := make([]byte, size)
		b[0] = tag
		binary.BigEndian.PutUint32(b[1:], uint32(k))
		_, err := nw.Conn(i).WriteTo(b, nw.Addr(j))
		require.NoError(t, err)
	}
}

// TestCoDelDropsCounted: bursts far larger than a link drains within
// CoDel's 100 ms interval make simnet's fq_codel drop; the counted drops
// of every link equal the packets that went into it minus those that came
// out, and in all the packets written minus the packets read. Three
// flows: node 0 to node 1 through a slow uplink (node 0's), nodes 2 and 3
// to node 1 through a slow downlink (node 1's, shared by two flows).
// Once the bursts have drained, one more packet per flow lets the last
// drops be seen (a drop is counted when a later packet of its flow
// passes).
func TestCoDelDropsCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const fast, slow = 1e9, 8e6
		nw, err := New(Config{
			Up:     []int64{slow, fast, fast, fast},
			Down:   []int64{fast, slow, fast, fast},
			OneWay: func(int, int) des.Time { return 10 * des.Millisecond },
			Port:   9000,
		})
		require.NoError(t, err)
		var reads [4]atomic.Uint64
		for j := range 4 {
			go countReads(nw.Conn(j), &reads[j])
		}
		// 0 → 1: 800 packets of 1 000 bytes, 0.8 s at 8 Mbit/s.
		burst(t, nw, 0, 1, 800, 1000, 0)
		time.Sleep(3 * time.Second)
		synctest.Wait()
		// 2 → 1 and 3 → 1 at once: 1 600 packets through node 1's
		// downlink.
		burst(t, nw, 2, 1, 800, 1000, 2)
		burst(t, nw, 3, 1, 800, 1000, 3)
		// Mid-burst: what is neither out nor counted dropped is in the
		// link (or dropped and not yet seen).
		time.Sleep(500 * time.Millisecond)
		synctest.Wait()
		_, down, _ := nw.Counts(1)
		require.Greater(t, down.In, down.Out+down.Dropped, "node 1's downlink holds a backlog mid-burst")
		time.Sleep(5 * time.Second)
		for _, i := range []int{0, 2, 3} {
			_, err := nw.Conn(i).WriteTo([]byte{9, byte(i)}, nw.Addr(1))
			require.NoError(t, err)
		}
		time.Sleep(time.Second)
		synctest.Wait()

		var written, read, dropped uint64
		for i := range 4 {
			up, down, noport := nw.Counts(i)
			t.Logf("node %d: uplink %+v, downlink %+v", i, up, down)
			require.Equal(t, up.In, up.Out+up.Dropped, "node %d's uplink: in = out + dropped", i)
			require.Equal(t, down.In, down.Out+down.Dropped, "node %d's downlink: in = out + dropped", i)
			require.Zero(t, noport)
			require.Equal(t, uint64(nw.Stats(i).PacketsSent), up.In)
			require.Equal(t, reads[i].Load(), down.Out)
			written += up.In
			read += reads[i].Load()
			dropped += up.Dropped + down.Dropped
		}
		up0, _, _ := nw.Counts(0)
		_, down1, _ := nw.Counts(1)
		require.Positive(t, up0.Dropped, "CoDel dropped on node 0's uplink")
		require.Positive(t, down1.Dropped, "CoDel dropped on node 1's downlink")
		require.Equal(t, uint64(2403), written)
		require.Equal(t, written-read, dropped, "every packet not read was counted as dropped")
		require.Zero(t, nw.Unmatched())
		require.Zero(t, nw.Dropped())
		nw.Close()
	})
}

// TestNoPortCounted: a packet to an address with no endpoint (another
// port, or the 4-byte IP form) leaves the sender's uplink and is dropped
// by simnet's router: it is counted as the sender's NoPort, not as a
// queue drop, and its flow is not tracked.
func TestNoPortCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rates := []int64{10e6, 10e6}
		nw, err := New(Config{Up: rates, Down: rates, OneWay: func(int, int) des.Time { return des.Millisecond }, Port: 8000})
		require.NoError(t, err)
		defer nw.Close()
		for _, a := range []*net.UDPAddr{Addr(1, 8001), {IP: nw.Addr(1).IP.To4(), Port: 8000}} {
			_, err := nw.Conn(0).WriteTo([]byte("x"), a)
			require.NoError(t, err)
		}
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		up, _, noport := nw.Counts(0)
		require.Equal(t, LinkCounts{In: 2, Out: 2}, up)
		require.Equal(t, uint64(2), noport)
		require.Equal(t, uint64(2), nw.Dropped())
		_, down, _ := nw.Counts(1)
		require.Equal(t, LinkCounts{}, down)
	})
}
