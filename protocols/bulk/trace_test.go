package bulk

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/csv"
	"strconv"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/des"
)

// readCSV parses a trace file into its header and rows.
func readCSV(t *testing.T, b []byte) (map[string]int, [][]string) {
	t.Helper()
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	require.NoError(t, err)
	require.NotEmpty(t, rows)
	cols := map[string]int{}
	for i, c := range rows[0] {
		cols[c] = i
	}
	return cols, rows[1:]
}

func atoi(t *testing.T, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(s, 10, 64)
	require.NoError(t, err, s)
	return v
}

// TestTraceTCP: a 2 MiB TCP transfer at 50 Mbit/s, 20 ms RTT, through a
// 30-packet uplink queue (so it overflows), traced every 10 ms. The trace
// leaves the results as they are without it; its rows fall on multiples of
// 10 ms of virtual time and a last one where the counters are read; the
// per-interval bytes and packets of each node add up to the node's
// counters, the queues' enqueues and drops to their totals; the backlog
// never exceeds the queue's limit; every flow's window is positive.
func TestTraceTCP(t *testing.T) {
	const every = 10 * des.Millisecond
	cfg := Config{Transport: "tcp", Rate: 50e6, RTT: 20 * des.Millisecond, Bytes: 2 << 20, Flows: 2, Seed: 5,
		UpQdisc: "pfifo:limit=30"}
	var plain, traced Result
	var qb, nb, fb bytes.Buffer
	synctest.Test(t, func(t *testing.T) {
		var err error
		plain, err = Run(context.Background(), cfg)
		require.NoError(t, err)
	})
	synctest.Test(t, func(t *testing.T) {
		c := cfg
		c.Trace = &Trace{Every: every, Queues: &qb, Nodes: &nb, Flows: &fb}
		var err error
		traced, err = Run(context.Background(), c)
		require.NoError(t, err)
	})
	require.NotZero(t, plain.QueueDrops, "the queue overflowed")
	// The same figures, the core's wake-ups aside.
	traced.Config.Trace, traced.CoreWakes, plain.CoreWakes = nil, 0, 0
	require.Equal(t, plain, traced)

	cols, rows := readCSV(t, nb.Bytes())
	require.Equal(t, TraceNodesHeader, joinHeader(cols))
	var sent, recv [2]uint64
	var sentPk, recvPk [2]uint64
	var last des.Time
	for i, r := range rows {
		ts, err := strconv.ParseFloat(r[cols["time_s"]], 64)
		require.NoError(t, err)
		at := des.Time(ts*1e9 + 0.5)
		if i < len(rows)-2 {
			require.Zero(t, at%every, "row %d at %v", i, at)
		}
		require.GreaterOrEqual(t, at, last)
		last = at
		nd := atoi(t, r[cols["node"]])
		sent[nd] += atoi(t, r[cols["sent_bytes"]])
		recv[nd] += atoi(t, r[cols["recv_bytes"]])
		sentPk[nd] += atoi(t, r[cols["sent_packets"]])
		recvPk[nd] += atoi(t, r[cols["recv_packets"]])
	}
	require.Greater(t, len(rows), 2*int(traced.Elapsed/every))
	for nd := range 2 {
		c := traced.Nodes[nd]
		require.Equal(t, c.SentBytes, sent[nd], "node %d", nd)
		require.Equal(t, c.RecvBytes, recv[nd], "node %d", nd)
		require.Equal(t, c.SentPackets, sentPk[nd], "node %d", nd)
		require.Equal(t, c.RecvPackets, recvPk[nd], "node %d", nd)
	}
	require.Equal(t, traced.NetBytes, sent[0]+sent[1])

	cols, rows = readCSV(t, qb.Bytes())
	qrows := rows
	require.Equal(t, TraceQueuesHeader, joinHeader(cols))
	enq := map[string]uint64{}
	drops := map[string]uint64{}
	var peak uint64
	for _, r := range rows {
		q := r[cols["queue"]]
		enq[q] += atoi(t, r[cols["enqueued"]])
		drops[q] += atoi(t, r[cols["drops_overlimit"]]) + atoi(t, r[cols["drops_aqm"]]) + atoi(t, r[cols["drops_batch"]])
		if q == "sender uplink" {
			bl := atoi(t, r[cols["backlog_packets"]])
			require.LessOrEqual(t, bl, uint64(30), "backlog within pfifo's limit")
			peak = max(peak, bl)
		}
	}
	require.NotZero(t, peak)
	for _, q := range traced.Queues {
		require.Equal(t, q.Stats.Enqueued, enq[q.Name], q.Name)
		require.Equal(t, q.Stats.Dropped(), drops[q.Name], q.Name)
	}
	require.Equal(t, traced.QueueDrops, drops["sender uplink"]+drops["receiver downlink"])

	cols, rows = readCSV(t, fb.Bytes())
	require.Equal(t, TraceFlowsHeader, joinHeader(cols))
	var retx uint64
	for _, r := range rows {
		require.Contains(t, []string{"0", "1"}, r[cols["flow"]])
		if r[cols["state"]] == "ESTABLISHED" {
			require.NotZero(t, atoi(t, r[cols["cwnd_segments"]]))
		}
		retx += atoi(t, r[cols["retransmits"]])
	}
	require.Equal(t, traced.SegmentsRetrans, retx)
	require.NotZero(t, retx, "the overflow cost retransmissions")
	// A flow has a row in every sample from its connection's dial on.
	require.Equal(t, qrows[len(qrows)-1][0], rows[len(rows)-1][0])
	require.Equal(t, []string{"0", "1"}, []string{rows[len(rows)-2][1], rows[len(rows)-1][1]})
}

// joinHeader is the header line of the columns cols.
func joinHeader(cols map[string]int) string {
	names := make([]string, len(cols))
	for c, i := range cols {
		names[i] = c
	}
	b := []byte{}
	for i, n := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, n...)
	}
	return string(b)
}

// pcapPacket is one packet read back from a capture.
type pcapPacket struct {
	ts   des.Time
	out  bool
	data []byte
	orig int
}

// readPcapng parses a one-interface pcapng capture independently of the
// writer: the section header, the interface (raw IPv4, nanosecond
// timestamps) and each Enhanced Packet Block, with both block lengths.
func readPcapng(t *testing.T, b []byte) []pcapPacket {
	t.Helper()
	le := binary.LittleEndian
	var out []pcapPacket
	for i := 0; len(b) > 0; i++ {
		typ, n := le.Uint32(b), int(le.Uint32(b[4:]))
		require.Zero(t, n%4)
		require.LessOrEqual(t, n, len(b))
		require.Equal(t, uint32(n), le.Uint32(b[n-4:]))
		body := b[8 : n-4]
		switch {
		case i == 0:
			require.Equal(t, uint32(0x0A0D0D0A), typ)
			require.Equal(t, uint32(0x1A2B3C4D), le.Uint32(body))
		case i == 1:
			require.Equal(t, uint32(1), typ)
			require.Equal(t, uint16(101), le.Uint16(body))
		default:
			require.Equal(t, uint32(6), typ)
			capLen := int(le.Uint32(body[12:]))
			flags := le.Uint32(body[20+(capLen+3)&^3+4:])
			out = append(out, pcapPacket{
				ts:   des.Time(uint64(le.Uint32(body[4:]))<<32 | uint64(le.Uint32(body[8:]))),
				out:  flags == 2,
				data: body[20 : 20+capLen],
				orig: int(le.Uint32(body[16:])),
			})
		}
		b = b[n:]
	}
	return out
}

// inetSum is the folded Internet checksum of b added to s.
func inetSum(b []byte, s uint32) uint16 {
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

// requirePackets checks a node's capture against its counters: as many
// packets sent and received, timestamps in order, whole IPv4 packets of
// the wire length with valid IPv4 and transport checksums, and (TCP) a
// header length that leaves the payload.
func requirePackets(t *testing.T, pkts []pcapPacket, proto byte, sent, recv uint64) {
	t.Helper()
	var outs, ins uint64
	for i, p := range pkts {
		if i > 0 {
			require.LessOrEqual(t, pkts[i-1].ts, p.ts)
		}
		if p.out {
			outs++
		} else {
			ins++
		}
		d := p.data
		require.Len(t, d, p.orig)
		require.Equal(t, p.orig, int(binary.BigEndian.Uint16(d[2:])))
		require.Equal(t, uint16(0xffff), inetSum(d[:20], 0))
		require.Equal(t, proto, d[9])
		seg := d[20:]
		ps := uint32(inetSum(d[12:20], 0)) + uint32(proto) + uint32(len(seg))
		require.Equal(t, uint16(0xffff), inetSum(seg, ps), "packet %d", i)
		if proto == 6 {
			require.GreaterOrEqual(t, int(seg[12]>>4)*4, 20)
			require.LessOrEqual(t, int(seg[12]>>4)*4, len(seg))
		}
	}
	require.NotZero(t, outs)
	require.NotZero(t, ins)
	require.Equal(t, sent, outs)
	require.Equal(t, recv, ins)
}

// TestCaptureBulk: captures of both nodes of a TCP and of a QUIC transfer
// hold as many packets as the nodes' counters, sent and received, in
// order, with valid headers; a capture leaves the TCP run's results as
// they are.
func TestCaptureBulk(t *testing.T) {
	for _, tr := range []string{"tcp", "quic"} {
		t.Run(tr, func(t *testing.T) {
			cfg := Config{Transport: tr, Rate: 50e6, RTT: 20 * des.Millisecond, Bytes: 256 << 10, Seed: 2}
			var res, plain Result
			var caps [2]bytes.Buffer
			synctest.Test(t, func(t *testing.T) {
				c := cfg
				c.Captures = []Capture{{0, &caps[0]}, {1, &caps[1]}}
				var err error
				res, err = Run(context.Background(), c)
				require.NoError(t, err)
			})
			for nd := range 2 {
				proto := byte(17)
				if tr == "tcp" {
					proto = 6
				}
				c := res.Nodes[nd]
				requirePackets(t, readPcapng(t, caps[nd].Bytes()), proto, c.SentPackets, c.RecvPackets)
			}
			if tr != "tcp" {
				return // quic-go's handshake draws from crypto/rand
			}
			synctest.Test(t, func(t *testing.T) {
				var err error
				plain, err = Run(context.Background(), cfg)
				require.NoError(t, err)
			})
			res.Config.Captures, res.CoreWakes, plain.CoreWakes = nil, 0, 0
			require.Equal(t, plain, res)
		})
	}
}
