package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/uplinksim/uplink/netmodel"
	"github.com/uplinksim/uplink/protocols/bulk"
	"github.com/uplinksim/uplink/queues"
	"github.com/uplinksim/uplink/transports/tcp"
)

// bulkSchema is the version of BulkRecord's layout.
const bulkSchema = 1

// BulkRecord is what `uplink bulk --out` writes: the configuration, every
// figure bulk prints, the data direction's queues with their queue-delay
// histograms, and the flows (docs/records.md, "Bulk records").
type BulkRecord struct {
	Schema  int              `json:"schema"`
	Version string           `json:"version"`
	Config  BulkConfigRecord `json:"config"`

	ElapsedS      float64 `json:"elapsed_s"`
	BytesReceived int64   `json:"bytes_received"`
	GoodputBps    float64 `json:"goodput_bps"`
	SHA256        string  `json:"sha256,omitempty"`

	BulkCounters

	NetPackets uint64 `json:"net_packets"`
	NetBytes   uint64 `json:"net_bytes"`
	// Drops and model counters; absent on simnet, which counts none.
	LossDrops  *uint64 `json:"loss_drops,omitempty"`
	QueueDrops *uint64 `json:"queue_drops,omitempty"`
	SockDrops  *uint64 `json:"sockbuf_drops,omitempty"`
	NetemDrops *uint64 `json:"netem_drops,omitempty"`
	Events     *uint64 `json:"model_events,omitempty"`
	CoreWakes  *uint64 `json:"core_wakes,omitempty"`

	WallS              float64           `json:"wall_s"`
	SimMiBPerWallS     *float64          `json:"sim_mib_per_wall_s,omitempty"`
	WallUsPerSimPacket *float64          `json:"wall_us_per_sim_packet,omitempty"`
	Queues             []BulkQueueRecord `json:"queues"`
	Flows              []BulkFlowRecord  `json:"flows"`
}

// BulkConfigRecord is the configuration the transfer ran with, defaults
// filled in.
type BulkConfigRecord struct {
	Transport  string  `json:"transport"`
	Backend    string  `json:"backend"`
	RateBps    int64   `json:"rate_bps"`
	RTTMs      float64 `json:"rtt_ms"`
	Loss       float64 `json:"loss"`
	Bytes      int64   `json:"bytes,omitempty"`
	DurationS  float64 `json:"duration_s,omitempty"`
	Flows      int     `json:"flows"`
	Seed       uint64  `json:"seed"`
	UpQdisc    string  `json:"up_qdisc,omitempty"`
	DownQdisc  string  `json:"down_qdisc,omitempty"`
	HostQdisc  string  `json:"host_qdisc,omitempty"`
	HostRate   int64   `json:"host_rate_bps,omitempty"`
	BlockSends bool    `json:"block_sends"`
	GSO        bool    `json:"gso"`
	NetemLimit int     `json:"netem_limit"`
	// NetemShared: both directions share the one netem queue.
	NetemShared bool           `json:"netem_shared,omitempty"`
	CPU         string         `json:"cpu,omitempty"`
	TCP         *BulkTCPRecord `json:"tcp,omitempty"`
}

// BulkTCPRecord is the TCP model's settings.
type BulkTCPRecord struct {
	Model              string  `json:"model"`
	CongestionControl  string  `json:"congestion_control"`
	Pacing             bool    `json:"pacing"`
	SACK               bool    `json:"sack"`
	HyStart            bool    `json:"hystart"`
	SlowStartAfterIdle bool    `json:"slow_start_after_idle"`
	InitialCwnd        int     `json:"initial_cwnd"`
	MSS                int     `json:"mss"`
	DelayedAck         string  `json:"delayed_ack"`
	Autotune           string  `json:"autotune"`
	SendBuffer         [3]int  `json:"send_buffer"`
	RecvBuffer         [3]int  `json:"recv_buffer"`
	RTOInitialMs       float64 `json:"rto_initial_ms"`
	RTOMinMs           float64 `json:"rto_min_ms"`
	RTOMaxMs           float64 `json:"rto_max_ms"`
}

// BulkQueueRecord is one queue of the data direction.
type BulkQueueRecord struct {
	Name           string  `json:"name"`
	Spec           string  `json:"spec"`
	Enqueued       uint64  `json:"enqueued"`
	Dequeued       uint64  `json:"dequeued"`
	DropsOverlimit uint64  `json:"drops_overlimit"`
	DropsAQM       uint64  `json:"drops_aqm"`
	DropsBatch     uint64  `json:"drops_batch"`
	CEMarks        uint64  `json:"ce_marks"`
	PeakBacklog    int     `json:"peak_backlog_packets"`
	DelayP50Ms     float64 `json:"delay_p50_ms"`
	DelayP90Ms     float64 `json:"delay_p90_ms"`
	DelayP99Ms     float64 `json:"delay_p99_ms"`
	DelayMaxMs     float64 `json:"delay_max_ms"`
	DelayMeanMs    float64 `json:"delay_mean_ms"`
	DelayPackets   uint64  `json:"delay_packets"`
	// Histogram is the queue delay of the dequeued packets, non-empty
	// buckets only, shortest first.
	Histogram []BulkBucketRecord `json:"histogram"`
}

// BulkBucketRecord is one histogram bucket: Count delays d with
// LowerNs < d <= UpperNs (the first bucket includes 0).
type BulkBucketRecord struct {
	LowerNs int64  `json:"lower_ns"`
	UpperNs int64  `json:"upper_ns"`
	Count   uint64 `json:"count"`
}

// BulkFlowRecord is one flow's figures; the TCP or QUIC counters are those
// of the run's transport.
type BulkFlowRecord struct {
	Bytes      int64   `json:"bytes"`
	ElapsedS   float64 `json:"elapsed_s"`
	GoodputBps float64 `json:"goodput_bps"`
	BulkCounters
}

// BulkCounters are the senders' transport counters, of a run or of one
// flow; only those of the run's transport are present.
type BulkCounters struct {
	// QUIC: the senders' packets and those declared lost.
	PacketsSent *uint64 `json:"quic_packets_sent,omitempty"`
	PacketsLost *uint64 `json:"quic_packets_lost,omitempty"`
	// TCP: the senders' segments, retransmissions, fast recoveries and
	// retransmission timeouts.
	SegmentsSent    *uint64 `json:"tcp_segments_sent,omitempty"`
	SegmentsRetrans *uint64 `json:"tcp_segments_retransmitted,omitempty"`
	FastRecoveries  *uint64 `json:"tcp_fast_recoveries,omitempty"`
	RTOs            *uint64 `json:"tcp_rtos,omitempty"`
}

// newBulkCounters keeps the counters of the run's transport.
func newBulkCounters(tcpRun bool, packetsSent, packetsLost, segsSent, segsRetrans, fastRec, rtos uint64) BulkCounters {
	if tcpRun {
		return BulkCounters{SegmentsSent: ptr(segsSent), SegmentsRetrans: ptr(segsRetrans), FastRecoveries: ptr(fastRec), RTOs: ptr(rtos)}
	}
	return BulkCounters{PacketsSent: ptr(packetsSent), PacketsLost: ptr(packetsLost)}
}

func ptr[T any](v T) *T { return &v }

// newBulkRecord builds the record of a transfer; preset names the --tcp
// model.
func newBulkRecord(r bulk.Result, preset string, wall time.Duration) BulkRecord {
	cfg := r.Config
	rec := BulkRecord{
		Schema:  bulkSchema,
		Version: buildVersion(),
		Config: BulkConfigRecord{
			Transport:   cfg.Transport,
			Backend:     "uplink",
			RateBps:     cfg.Rate,
			RTTMs:       ms(cfg.RTT),
			Loss:        cfg.Loss,
			Bytes:       cfg.Bytes,
			Flows:       cfg.Flows,
			Seed:        cfg.Seed,
			UpQdisc:     cfg.UpQdisc,
			DownQdisc:   cfg.DownQdisc,
			HostQdisc:   cfg.HostQdisc,
			BlockSends:  cfg.SendMode == netmodel.BlockWhenFull,
			GSO:         cfg.GSO,
			NetemLimit:  cfg.NetemLimit,
			NetemShared: cfg.NetemShared,
		},
		ElapsedS:      r.Elapsed.Seconds(),
		BytesReceived: r.BytesReceived,
		GoodputBps:    r.GoodputBps,
		NetPackets:    r.NetPackets,
		NetBytes:      r.NetBytes,
		WallS:         wall.Seconds(),
		Queues:        []BulkQueueRecord{},
	}
	if cfg.Bytes == 0 {
		rec.Config.DurationS = cfg.Duration.Seconds()
	} else {
		rec.SHA256 = hex.EncodeToString(r.SHA256[:])
	}
	if cfg.HostQdisc != "" {
		rec.Config.HostRate = cfg.HostRate
	}
	if !cfg.CPU.Off() {
		rec.Config.CPU = cfg.CPU.String()
	}
	if cfg.Backend != "" {
		rec.Config.Backend = cfg.Backend
	}
	tcpRun := cfg.TCP != nil
	if tcpRun {
		rec.Config.TCP = newBulkTCPRecord(*cfg.TCP, preset)
	}
	rec.BulkCounters = newBulkCounters(tcpRun, r.PacketsSent, r.PacketsLost, r.SegmentsSent, r.SegmentsRetrans, r.FastRecoveries, r.RTOs)
	if cfg.Backend != bulk.BackendSimnet {
		rec.LossDrops, rec.QueueDrops, rec.SockDrops = ptr(r.LossDrops), ptr(r.QueueDrops), ptr(r.SockDrops)
		rec.NetemDrops = ptr(r.NetemDrops)
		rec.Events, rec.CoreWakes = ptr(r.Events), ptr(r.CoreWakes)
		rec.SimMiBPerWallS = ptr(float64(r.NetBytes) / (1 << 20) / wall.Seconds())
		if r.NetPackets > 0 {
			rec.WallUsPerSimPacket = ptr(float64(wall.Microseconds()) / float64(r.NetPackets))
		}
	}
	for _, q := range r.Queues {
		rec.Queues = append(rec.Queues, newBulkQueueRecord(q))
	}
	for _, f := range r.Flows {
		rec.Flows = append(rec.Flows, BulkFlowRecord{Bytes: f.Bytes, ElapsedS: f.Elapsed.Seconds(), GoodputBps: f.GoodputBps,
			BulkCounters: newBulkCounters(tcpRun, f.PacketsSent, f.PacketsLost, f.SegmentsSent, f.SegmentsRetrans, f.FastRecoveries, f.RTOs)})
	}
	return rec
}

func newBulkQueueRecord(q bulk.QueueReport) BulkQueueRecord {
	st := &q.Stats
	h := &st.Sojourn
	qr := BulkQueueRecord{
		Name:           q.Name,
		Spec:           q.Spec,
		Enqueued:       st.Enqueued,
		Dequeued:       st.Dequeued,
		DropsOverlimit: st.Drops[queues.DropOverlimit],
		DropsAQM:       st.Drops[queues.DropAQM],
		DropsBatch:     st.Drops[queues.DropBatch],
		CEMarks:        st.CEMarks,
		PeakBacklog:    st.MaxLen,
		DelayP50Ms:     ms(h.Quantile(0.5)),
		DelayP90Ms:     ms(h.Quantile(0.9)),
		DelayP99Ms:     ms(h.Quantile(0.99)),
		DelayMaxMs:     ms(h.Max()),
		DelayMeanMs:    ms(h.Mean()),
		DelayPackets:   h.Count(),
		Histogram:      []BulkBucketRecord{},
	}
	for _, b := range h.Buckets() {
		qr.Histogram = append(qr.Histogram, BulkBucketRecord{LowerNs: int64(b.Lower), UpperNs: int64(b.Upper), Count: b.Count})
	}
	return qr
}

func newBulkTCPRecord(c tcp.Config, preset string) *BulkTCPRecord {
	return &BulkTCPRecord{
		Model:              preset,
		CongestionControl:  c.CongestionControl,
		Pacing:             c.Pacing,
		SACK:               c.SACK,
		HyStart:            c.HyStart,
		SlowStartAfterIdle: c.SlowStartAfterIdle,
		InitialCwnd:        c.InitialCwnd,
		MSS:                c.MSS,
		DelayedAck:         delayedAckName(c.DelayedAck),
		Autotune:           autotuneName(c.Autotune),
		SendBuffer:         [3]int{c.SendBuffer.Min, c.SendBuffer.Default, c.SendBuffer.Max},
		RecvBuffer:         [3]int{c.RecvBuffer.Min, c.RecvBuffer.Default, c.RecvBuffer.Max},
		RTOInitialMs:       ms(c.RTOInitial),
		RTOMinMs:           ms(c.RTOMin),
		RTOMaxMs:           ms(c.RTOMax),
	}
}

func delayedAckName(d tcp.DelayedAck) string {
	switch d {
	case tcp.DelAckOff:
		return "off"
	case tcp.DelAckLinux:
		return "linux"
	case tcp.DelAckShadow:
		return "shadow"
	}
	return fmt.Sprint(int(d))
}

func autotuneName(a tcp.Autotune) string {
	switch a {
	case tcp.AutotuneOff:
		return "off"
	case tcp.AutotuneLinux:
		return "linux"
	case tcp.AutotuneShadow:
		return "shadow"
	}
	return fmt.Sprint(int(a))
}

// writeBulkRecord writes rec as indented JSON to path, in place only once
// complete.
func writeBulkRecord(path string, rec BulkRecord) error {
	return writeFileAtomic(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rec)
	})
}
