package simnet

import (
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
)

// arrival is one datagram as a reader saw it.
type arrival struct {
	at   time.Time
	from int
	size int
}

// readAll reads c until it is closed, sending every datagram on out.
func readAll(c net.PacketConn, out chan<- arrival) {
	buf := make([]byte, 2048)
	for {
		n, from, err := c.ReadFrom(buf)
		if err != nil {
			close(out)
			return
		}
		out <- arrival{time.Now(), NodeOf(from), n}
	}
}

// TestPairLatencyExact: every ordered pair of three nodes gets its own
// one-way latency, exactly, for a datagram sent on idle links (simnet's
// token buckets start full, so an idle link adds no time).
func TestPairLatencyExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		oneWay := func(i, j int) des.Time { return des.Time(1+i+3*j) * des.Millisecond }
		rates := []int64{10e6, 20e6, 30e6}
		nw, err := New(Config{Up: rates, Down: rates, OneWay: oneWay, Port: 8000})
		require.NoError(t, err)
		defer nw.Close()
		ins := make([]chan arrival, 3)
		for j := range 3 {
			ins[j] = make(chan arrival, 8)
			go readAll(nw.Conn(j), ins[j])
		}
		for i := range 3 {
			for j := range 3 {
				if i == j {
					continue
				}
				sent := time.Now()
				_, err := nw.Conn(i).WriteTo(make([]byte, 100), nw.Addr(j))
				require.NoError(t, err)
				a := <-ins[j]
				require.Equal(t, i, a.from)
				require.Equal(t, 100, a.size)
				require.Equal(t, oneWay(i, j).Duration(), a.at.Sub(sent), "pair (%d, %d)", i, j)
				time.Sleep(time.Second) // the buckets refill
			}
		}
		require.Zero(t, nw.Dropped())
		require.Equal(t, netmodel.NodeAddr(2).String(), nw.Addr(2).IP.String())
		require.Equal(t, 8000, nw.Addr(2).Port)
	})
}

// TestLinkRates: 30 datagrams of 1 000 bytes written at once from node 0
// to node 1 leave at the slower of node 0's uplink and node 1's downlink:
// the last arrives the one-way latency plus (30 000 − 1 500) bytes' line
// time after the write (the bucket's one-MTU burst lets the first 1 500
// bytes through at once; sizes are the UDP payload), within 1 %.
func TestLinkRates(t *testing.T) {
	for _, tc := range []struct {
		name     string
		up, down int64 // node 0's uplink, node 1's downlink
	}{
		{"uplink-bound", 8e6, 16e6},
		{"downlink-bound", 16e6, 8e6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const lat = 10 * des.Millisecond
				nw, err := New(Config{
					Up: []int64{tc.up, 100e6}, Down: []int64{100e6, tc.down},
					OneWay: func(int, int) des.Time { return lat }, Port: 1,
				})
				require.NoError(t, err)
				in := make(chan arrival, 64)
				go readAll(nw.Conn(1), in)
				start := time.Now()
				for range 30 {
					_, err := nw.Conn(0).WriteTo(make([]byte, 1000), nw.Addr(1))
					require.NoError(t, err)
				}
				var last time.Time
				for range 30 {
					last = (<-in).at
				}
				nw.Close()
				for range in {
				}
				bottleneck := float64(min(tc.up, tc.down))
				want := lat.Duration() + time.Duration((30000-1500)*8/bottleneck*1e9)
				got := last.Sub(start)
				require.InEpsilon(t, want.Seconds(), got.Seconds(), 0.01, "last arrival %v, want %v", got, want)
				t.Logf("last arrival %v, analytic %v", got, want)
				s := nw.Stats(0)
				require.Equal(t, 30, s.PacketsSent)
				require.Equal(t, 30000, s.BytesSent)
				require.Equal(t, 30000, nw.Stats(1).BytesRcvd)
			})
		})
	}
}

// TestDropUnknownDestination: a destination written in the 4-byte IPv4
// form matches no endpoint (they are registered in the 16-byte form):
// simnet's router drops it, and Dropped counts it.
func TestDropUnknownDestination(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rates := []int64{10e6, 10e6}
		nw, err := New(Config{Up: rates, Down: rates, OneWay: func(int, int) des.Time { return des.Millisecond }, Port: 8000})
		require.NoError(t, err)
		defer nw.Close()
		short := &net.UDPAddr{IP: nw.Addr(1).IP.To4(), Port: 8000}
		require.Equal(t, 1, NodeOf(short))
		_, err = nw.Conn(0).WriteTo([]byte("x"), short)
		require.NoError(t, err)
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		require.Equal(t, uint64(1), nw.Dropped())
		require.Zero(t, nw.Stats(1).PacketsRcvd)
	})
}

// TestNewRefuses: New refuses a zero rate (simnet's bucket would never
// refill), rate lists of different lengths, one node and no latency.
func TestNewRefuses(t *testing.T) {
	lat := func(int, int) des.Time { return 0 }
	for _, c := range []Config{
		{Up: []int64{10e6, 0}, Down: []int64{10e6, 10e6}, OneWay: lat},
		{Up: []int64{10e6, 10e6}, Down: []int64{10e6}, OneWay: lat},
		{Up: []int64{10e6}, Down: []int64{10e6}, OneWay: lat},
		{Up: []int64{10e6, 10e6}, Down: []int64{10e6, 10e6}},
	} {
		_, err := New(c)
		require.Error(t, err)
	}
	require.Equal(t, -1, NodeOf(&net.UDPAddr{IP: net.IPv4(192, 168, 0, 1)}))
	require.Equal(t, -1, NodeOf(&net.TCPAddr{IP: net.IPv4(10, 0, 0, 1)}))
	require.Equal(t, 0, NodeOf(Addr(0, 1)))
}
