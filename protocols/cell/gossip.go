package cell

import (
	"context"
	"fmt"
	"strconv"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/host"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/protocols/arms"
	"github.com/uplinksim/uplink/protocols/phase"
)

// Gossip holds gossipsub's parameters for a cell. The study pins D, Dlo,
// Dhi, the heartbeat, the history length, the IDONTWANT threshold and the
// queue sizes (docs/references.md, "Gossipsub settings"); the rest it
// leaves open, and they default to go-libp2p-pubsub v0.19's own values.
// The study's code agrees: its harness takes Prysm's
// GossipSubParams (beacon-chain/p2p/pubsub.go in the study's tree), which
// sets D, Dlo, Dhi, the heartbeat, history length 6 and history gossip 3,
// and leaves Dlazy, the gossip factor and gossip retransmission at the
// library's values. Every field is recorded with every result.
type Gossip struct {
	D, Dlo, Dhi          int
	Heartbeat            time.Duration
	HistoryLength        int
	HistoryGossip        int     // Prysm's 3, the v0.19 default too
	Dlazy                int     // library default 6 (Prysm leaves it)
	GossipFactor         float64 // library default 0.25 (Prysm leaves it)
	GossipRetransmission int     // library default 3 (Prysm leaves it)
	FloodPublish         bool    // not pinned: off in v0.19
	IDontWantThreshold   int     // bytes; library default 1 KiB
	QueueSize            int     // outbound and validation queues
	// MaxIHaveMessages is the IHAVE flood limit per heartbeat: the library's
	// 10, raised to 4 096 for the phase arms (docs/references.md,
	// "Gossipsub settings"); Run sets it from the arm.
	MaxIHaveMessages int
}

// StudyGossip returns the study's gossipsub settings with the library's
// defaults for the knobs the study leaves open.
func StudyGossip() Gossip {
	d := pubsub.DefaultGossipSubParams()
	return Gossip{
		D: 8, Dlo: 6, Dhi: 12,
		Heartbeat:            700 * time.Millisecond,
		HistoryLength:        6,
		HistoryGossip:        d.HistoryGossip,
		Dlazy:                d.Dlazy,
		GossipFactor:         d.GossipFactor,
		GossipRetransmission: d.GossipRetransmission,
		FloodPublish:         false,
		IDontWantThreshold:   d.IDontWantMessageThreshold,
		QueueSize:            600,
		MaxIHaveMessages:     d.MaxIHaveMessages,
	}
}

// Knobs returns the settings as strings, for records.
func (g Gossip) Knobs() map[string]string {
	return map[string]string{
		"D": strconv.Itoa(g.D), "Dlo": strconv.Itoa(g.Dlo), "Dhi": strconv.Itoa(g.Dhi),
		"heartbeat":             g.Heartbeat.String(),
		"history-length":        strconv.Itoa(g.HistoryLength),
		"history-gossip":        strconv.Itoa(g.HistoryGossip),
		"Dlazy":                 strconv.Itoa(g.Dlazy),
		"gossip-factor":         strconv.FormatFloat(g.GossipFactor, 'g', -1, 64),
		"gossip-retransmission": strconv.Itoa(g.GossipRetransmission),
		"flood-publish":         strconv.FormatBool(g.FloodPublish),
		"idontwant-threshold":   strconv.Itoa(g.IDontWantThreshold),
		"queue-size":            strconv.Itoa(g.QueueSize),
		"max-ihave-messages":    strconv.Itoa(g.MaxIHaveMessages),
	}
}

// maxGossipCount bounds the integer gossip knobs (peers to gossip to,
// heartbeats of history, retransmissions).
const maxGossipCount = 10_000

// Set overrides one of the knobs the study leaves open by name.
func (g *Gossip) Set(name, value string) error {
	atoi := func() (int, error) {
		n, err := des.ParseInt(value, 0, maxGossipCount)
		if err != nil {
			return 0, fmt.Errorf("gossip knob %s=%w", name, err)
		}
		return int(n), nil
	}
	var err error
	switch name {
	case "Dlazy":
		g.Dlazy, err = atoi()
	case "history-gossip":
		g.HistoryGossip, err = atoi()
	case "gossip-retransmission":
		g.GossipRetransmission, err = atoi()
	case "gossip-factor":
		var f float64
		if f, err = des.ParseProbability(value, true); err != nil {
			err = fmt.Errorf("gossip knob gossip-factor: %w", err)
		} else {
			g.GossipFactor = f
		}
	case "flood-publish":
		g.FloodPublish, err = strconv.ParseBool(value)
		if err != nil {
			err = fmt.Errorf("gossip knob flood-publish=%q: want true or false", value)
		}
	default:
		return fmt.Errorf("unknown gossip knob %q; valid: Dlazy, gossip-factor, history-gossip, gossip-retransmission, flood-publish", name)
	}
	return err
}

// validate checks what go-libp2p-pubsub would reject, before any router is
// built: its router leaks a goroutine when an option fails (the address
// book of pubsub.DefaultGossipSubRouter runs until the router is attached,
// which a failed option prevents). The library's checks
// (GossipSubParams.validate, applied by WithGossipSubParams) are on the
// parameters params derives: HistoryGossip <= HistoryLength, Dscore <= Dhi,
// Dlo <= D <= Dhi, and Dout < Dlo and Dout < D/2 (which, with params's
// Dout, needs D >= 2); and the outbound queue size must be positive.
func (g Gossip) validate() error {
	p := g.params()
	switch {
	case g.D < 1 || g.Dlo < 1 || g.Dlo > g.D || g.Dhi < g.D:
		return fmt.Errorf("gossip: need 1 <= Dlo <= D <= Dhi, have D %d, Dlo %d, Dhi %d", g.D, g.Dlo, g.Dhi)
	case p.Dhi < p.Dscore:
		return fmt.Errorf("gossip: Dhi %d must be at least gossipsub's Dscore, %d", g.Dhi, p.Dscore)
	case p.Dout >= p.Dlo || p.Dout >= p.D/2:
		return fmt.Errorf("gossip: D %d, Dlo %d: gossipsub needs its outbound quota Dout (%d) below Dlo and below D/2 (D at least 2)", g.D, g.Dlo, p.Dout)
	case g.Heartbeat <= 0:
		return fmt.Errorf("gossip: heartbeat %v must be positive", g.Heartbeat)
	case g.HistoryLength < g.HistoryGossip || g.HistoryGossip < 0:
		return fmt.Errorf("gossip: history gossip %d must be within [0, history length %d]", g.HistoryGossip, g.HistoryLength)
	case g.QueueSize < 1:
		return fmt.Errorf("gossip: queue size %d must be at least 1", g.QueueSize)
	case g.MaxIHaveMessages < 1:
		return fmt.Errorf("gossip: max IHAVE messages %d must be at least 1", g.MaxIHaveMessages)
	}
	return nil
}

// MessageID is the message id of every arm (arms.MessageID): the study's
// 20-byte hash id (a SHA-256 prefix of the data), or a structured id.
func MessageID(data []byte) string { return arms.MessageID(data) }

// params are the library parameters for g.
func (g Gossip) params() pubsub.GossipSubParams {
	p := pubsub.DefaultGossipSubParams()
	p.D, p.Dlo, p.Dhi = g.D, g.Dlo, g.Dhi
	p.Dout = max(0, min(p.Dout, g.Dlo-1, g.D/2-1))
	p.HeartbeatInterval = g.Heartbeat
	p.HistoryLength = g.HistoryLength
	p.HistoryGossip = g.HistoryGossip
	p.Dlazy = g.Dlazy
	p.GossipFactor = g.GossipFactor
	p.GossipRetransmission = g.GossipRetransmission
	p.IDontWantMessageThreshold = g.IDontWantThreshold
	p.MaxIHaveMessages = g.MaxIHaveMessages
	return p
}

// newGossipSub starts gossipsub on h with the cell's settings: the stock
// router when policies is nil, else uplink's phase router (which behaves
// as the stock router on topics without a policy).
func newGossipSub(ctx context.Context, h host.Host, g Gossip, maxMsg int, tr *tracer, policies map[string]phase.Policy, extra ...pubsub.Option) (*pubsub.PubSub, *phase.Router, error) {
	idFn := func(m *pb.Message) string { return MessageID(m.GetData()) }
	opts := []pubsub.Option{
		pubsub.WithPeerOutboundQueueSize(g.QueueSize),
		pubsub.WithValidateQueueSize(g.QueueSize),
		pubsub.WithMessageSignaturePolicy(pubsub.StrictNoSign),
		pubsub.WithNoAuthor(),
		pubsub.WithMaxMessageSize(maxMsg),
		pubsub.WithMessageIdFn(idFn),
		pubsub.WithRawTracer(tr),
	}
	opts = append(opts, extra...)
	if policies == nil {
		opts = append(opts, pubsub.WithGossipSubParams(g.params()), pubsub.WithFloodPublish(g.FloodPublish))
		ps, err := pubsub.NewGossipSub(ctx, h, opts...)
		if err != nil {
			return nil, nil, fmt.Errorf("gossipsub: %w", err)
		}
		return ps, nil, nil
	}
	rt, err := phase.New(h, g.params(), idFn, policies)
	if err != nil {
		return nil, nil, fmt.Errorf("gossipsub: %w", err)
	}
	ps, err := pubsub.NewGossipSubWithRouter(ctx, h, rt, append(opts, rt.Options()...)...)
	if err != nil {
		return nil, nil, fmt.Errorf("gossipsub: %w", err)
	}
	return ps, rt, nil
}
