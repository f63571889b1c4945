package cell

// What the measured publish starts from: quic-go's connection state and
// the meshes' latency, both recorded at the publish.

import (
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/quic-go/quic-go"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
)

// ConnState is quic-go's view of the connections at the publish: what the
// transfers of the measured message start from. Quantiles are over every
// connection end (each connection counts once per host); the publisher's
// own ends are summarised apart, since its uplink carries the first hop.
// Nil in records of TCP cells.
type ConnState struct {
	Ends int `json:"ends"`
	// SRTTOverMin is the smoothed RTT over the minimum RTT (1: no queueing
	// left in the estimate), p50 and p90.
	SRTTOverMinP50 float64 `json:"srtt_over_min_p50"`
	SRTTOverMinP90 float64 `json:"srtt_over_min_p90"`
	// CwndKiB is the congestion window, p50 and p10.
	CwndKiBP50 float64 `json:"cwnd_kib_p50"`
	CwndKiBP10 float64 `json:"cwnd_kib_p10"`
	// PacketsLost sums quic-go's lost packets over every end so far.
	PacketsLost uint64 `json:"packets_lost"`
	// Publisher's ends: median SRTT over minimum, median window.
	PublisherSRTTOverMin float64 `json:"publisher_srtt_over_min_p50"`
	PublisherCwndKiB     float64 `json:"publisher_cwnd_kib_p50"`
}

// connSamples is what connState summarises: per connection end, the
// smoothed RTT over the minimum and the window (KiB), the publisher's
// apart, and the packets lost.
type connSamples struct {
	ratio, cwnd, pubRatio, pubCwnd []float64
	lost                           uint64
}

// readConns reads every QUIC connection of hosts (host 0 is the
// publisher; a nil host, another partition's, is skipped).
func readConns(hosts []host.Host) connSamples {
	var s connSamples
	for i, h := range hosts {
		if h == nil {
			continue
		}
		for _, c := range h.Network().Conns() {
			var qc *quic.Conn
			if !c.As(&qc) || qc == nil {
				continue
			}
			st := qc.ConnectionStats()
			if st.MinRTT <= 0 {
				continue
			}
			r := float64(st.SmoothedRTT) / float64(st.MinRTT)
			w := float64(st.CongestionWindow) / 1024
			s.ratio, s.cwnd = append(s.ratio, r), append(s.cwnd, w)
			s.lost += st.PacketsLost
			if i == 0 {
				s.pubRatio, s.pubCwnd = append(s.pubRatio, r), append(s.pubCwnd, w)
			}
		}
	}
	return s
}

// add joins another partition's samples.
func (s *connSamples) add(o connSamples) {
	s.ratio, s.cwnd = append(s.ratio, o.ratio...), append(s.cwnd, o.cwnd...)
	s.pubRatio, s.pubCwnd = append(s.pubRatio, o.pubRatio...), append(s.pubCwnd, o.pubCwnd...)
	s.lost += o.lost
}

// state summarises the samples; nil when no connection is QUIC.
func (s connSamples) state() *ConnState {
	if len(s.ratio) == 0 {
		return nil
	}
	return &ConnState{
		Ends:           len(s.ratio),
		SRTTOverMinP50: quantileOf(s.ratio, 0.5), SRTTOverMinP90: quantileOf(s.ratio, 0.9),
		CwndKiBP50: quantileOf(s.cwnd, 0.5), CwndKiBP10: quantileOf(s.cwnd, 0.1),
		PacketsLost:          s.lost,
		PublisherSRTTOverMin: quantileOf(s.pubRatio, 0.5),
		PublisherCwndKiB:     quantileOf(s.pubCwnd, 0.5),
	}
}

// quantileOf is Quantile's rule on v; 0 for an empty slice.
func quantileOf(v []float64, q float64) float64 {
	x, _ := Quantile(v, q)
	return x
}

// meshLatency is the mean one-way latency (ms) of the mesh links on the
// first topic at the publish, over every node's mesh (nodes in index
// order), and of the dial
// graph's edges for comparison: a mesh formed from whichever peers were
// heard from first leans to near peers. ids are the nodes' peer ids in
// index order.
func meshLatency[M interface{ meshPeers() []peer.ID }](nodes []M, ids []peer.ID, draw *netmodel.Draw, g *netmodel.Graph) (mesh, graph float64) {
	idx := make(map[peer.ID]int, len(ids))
	for i, id := range ids {
		idx[id] = i
	}
	var sum des.Time
	links := 0
	for i, nd := range nodes {
		for _, p := range nd.meshPeers() {
			if j, ok := idx[p]; ok {
				sum += draw.OneWay(i, j)
				links++
			}
		}
	}
	if links > 0 {
		mesh = (sum / des.Time(links)).Seconds() * 1000
	}
	sum = 0
	for _, e := range g.Edges {
		sum += draw.OneWay(e[0], e[1])
	}
	if len(g.Edges) > 0 {
		graph = (sum / des.Time(len(g.Edges))).Seconds() * 1000
	}
	return mesh, graph
}
