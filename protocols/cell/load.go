package cell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/uplinksim/uplink/des"
)

// Warmup is the warm-up mode of a cell: traffic before the measured
// publish, which then follows after Gap of quiet.
//
//   - "payload": node 0 first publishes a payload of the same shape (the
//     same arm and size, other bytes) and the cell waits until every
//     receiver holds it (the warm-up: a payload diffused first).
//   - "streams:SIZE": both ends of every connection send SIZE bytes to the
//     other over a dummy stream, and the cell waits until all have
//     arrived (the report, section 9: 320 KiB per connection, the
//     bandwidth-delay product of 50 Mbit/s × 50 ms).
//   - "streams-seq:SIZE": the same bytes, but each node sends to its
//     peers one at a time (in the order its host lists them), all nodes
//     at once: each transfer has its sender's uplink nearly to itself, so
//     its window grows towards the link's bandwidth-delay product instead
//     of converging on a seventieth of it. The report does not say
//     whether its warm-up streams ran at once or in turn; this is the
//     other reading.
//
// The gap is counted from the end of the warm-up, so a gap of 0 still
// separates the warm-up from the publish; the report's warm cells
// published while the warm-up was draining, which is not reproduced.
type Warmup struct {
	Kind   string // "", "payload", "streams" or "streams-seq"
	Stream int    // bytes per direction per connection ("streams", "streams-seq")
	Gap    des.Time
}

// validate checks the mode.
func (w Warmup) validate() error {
	switch {
	case w.Kind != "" && w.Kind != "payload" && w.Kind != "streams" && w.Kind != "streams-seq":
		return fmt.Errorf("warm-up %q: want payload, streams:SIZE or streams-seq:SIZE", w.Kind)
	case (w.Kind == "streams" || w.Kind == "streams-seq") && w.Stream < 1:
		return fmt.Errorf("warm-up %s of %d bytes: want a positive size, such as %s:320KiB", w.Kind, w.Stream, w.Kind)
	case w.Gap < 0:
		return fmt.Errorf("warm-up drain gap %v must not be negative", w.Gap.Duration())
	}
	return nil
}

// String is the mode in a record's words.
func (w Warmup) String() string {
	switch w.Kind {
	case "streams", "streams-seq":
		return w.Kind + ":" + sizeName(w.Stream)
	default:
		return w.Kind
	}
}

// Background is the background-load mode: from Lead before the measured
// publish until the end of the window, every Interval one node drawn from
// the seed (any node but the publisher) publishes Size random bytes on the
// cell's first topic, under the arm's forwarding policy. Their bytes count
// in the nodes' byte totals.
type Background struct {
	Size     int
	Interval des.Time
	Lead     des.Time
}

// validate checks the mode.
func (b Background) validate() error {
	switch {
	case b.Size < 0 || (b.Size > 0 && b.Interval <= 0):
		return fmt.Errorf("background %d bytes every %v: want a positive size and interval, such as 64KiB@100ms", b.Size, b.Interval.Duration())
	case b.Lead < 0:
		return fmt.Errorf("background lead-in %v must not be negative", b.Lead.Duration())
	}
	return nil
}

// String is the mode in a record's words.
func (b Background) String() string {
	if b.Size == 0 {
		return ""
	}
	return sizeName(b.Size) + "@" + b.Interval.Duration().String()
}

// warmupProto is the dummy-stream protocol of the streams warm-up.
const warmupProto = "/uplink/warmup/1"

// warmStreams sends size bytes each way over every connection and returns
// when all have arrived: every connection at once, or with inTurn each
// node's connections one after another (all nodes at once).
func warmStreams(ctx context.Context, hosts []host.Host, size int, inTurn bool) error {
	for _, h := range hosts {
		h.SetStreamHandler(warmupProto, func(s network.Stream) {
			_, _ = io.Copy(io.Discard, s)
			_ = s.Close()
		})
	}
	defer func() {
		for _, h := range hosts {
			h.RemoveStreamHandler(warmupProto)
		}
	}()
	buf := make([]byte, size)
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	fail := func(i int, p peer.ID, err error) {
		select {
		case errs <- fmt.Errorf("node %d to %s: %w", i, p, err):
		default:
		}
	}
	for i, h := range hosts {
		// Each group of peers is sent to in turn by one goroutine: all of
		// the node's peers, or (at once) one group per peer.
		var groups [][]peer.ID
		for _, p := range h.Network().Peers() {
			if inTurn && len(groups) > 0 {
				groups[0] = append(groups[0], p)
			} else {
				groups = append(groups, []peer.ID{p})
			}
		}
		for _, g := range groups {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for _, p := range g {
					if err := sendWarmup(ctx, h, p, buf); err != nil {
						fail(i, p, err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	select {
	case err := <-errs:
		return fmt.Errorf("warm-up streams: %w", err)
	default:
		return nil
	}
}

// sendWarmup writes buf on a new stream to p and waits for the reader to
// close its side, which it does once it has read everything.
func sendWarmup(ctx context.Context, h host.Host, p peer.ID, buf []byte) error {
	s, err := h.NewStream(ctx, p, warmupProto)
	if err != nil {
		return err
	}
	defer s.Close()
	if _, err := s.Write(buf); err != nil {
		return err
	}
	if err := s.CloseWrite(); err != nil {
		return err
	}
	if _, err := io.Copy(io.Discard, s); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// startBackground publishes the background load until stop is called;
// stop waits for the publishing goroutine to end.
func startBackground(ctx context.Context, b Background, seed uint64, topics [][]*pubsub.Topic) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		rng := rand.New(rand.NewPCG(seed, 0x6267))
		n := len(topics)
		for k := uint64(0); ; k++ {
			data := make([]byte, b.Size)
			for i := 0; i+8 <= len(data); i += 8 {
				v := rng.Uint64()
				for j := range 8 {
					data[i+j] = byte(v >> (8 * j))
				}
			}
			copy(data, strconv.FormatUint(k, 10)) // distinct ids
			from := 1 + rng.IntN(n-1)
			if err := topics[from][0].Publish(ctx, data); err != nil {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(b.Interval.Duration()):
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
