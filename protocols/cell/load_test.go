package cell

import (
	"testing"
	"testing/synctest"

	"github.com/uplinksim/uplink/des"
)

// TestWarmupPayload: a payload of the same shape diffuses first (every
// receiver holds it), then the measured publish completes everywhere, and
// the record says so.
func TestWarmupPayload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := armCell(t, "atuned_32k", func(c *Config) {
			c.Warmup = Warmup{Kind: "payload", Gap: des.Second}
		})
		if rec.WarmupMissing != 0 || rec.WarmupS <= 0 {
			t.Fatalf("warm-up: %d receivers missing, %.3f s", rec.WarmupMissing, rec.WarmupS)
		}
		if rec.Completed != 29 || rec.Verified != 29 {
			t.Fatalf("after the warm-up %d of 29 completed, %d verified", rec.Completed, rec.Verified)
		}
		if rec.Warmup != "payload" || rec.WarmupGapS != 1 {
			t.Fatalf("record: warmup %q gap %v", rec.Warmup, rec.WarmupGapS)
		}
	})
}

// TestWarmupStreams: both ends of every connection send 64 KiB. Each node
// sends degree × 64 KiB through its 50 Mbit/s uplink, so the warm-up can
// take no less than 12 × 65 536 × 8 / 50e6 = 0.126 s.
func TestWarmupStreams(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := armCell(t, "atuned_32k", func(c *Config) {
			c.Warmup = Warmup{Kind: "streams", Stream: 64 << 10}
		})
		floor := 12 * 65536 * 8 / 50e6
		if rec.WarmupS < floor {
			t.Fatalf("warm-up took %.3f s virtual, less than the uplink's floor %.3f s", rec.WarmupS, floor)
		}
		if rec.Completed != 29 || rec.Verified != 29 {
			t.Fatalf("after the warm-up %d of 29 completed", rec.Completed)
		}
		t.Logf("warm-up %.3f s (floor %.3f s); p50 %.3f", rec.WarmupS, floor, *rec.P50S)
	})
}

// TestWarmupStreamsInTurn: the report's 320 KiB per connection, all at
// once and each node's connections in turn. At once, a node's twelve
// transfers share its uplink and their windows settle near a twelfth of
// its bandwidth-delay product; in turn, each has the uplink nearly to
// itself and its window grows towards the whole of it. So quic-go's median
// window at the publish is larger after the warm-up in turn, and both take
// at least the uplink's floor (12 × 320 KiB at 50 Mbit/s).
func TestWarmupStreamsInTurn(t *testing.T) {
	var cwnd [2]float64
	for i, kind := range []string{"streams", "streams-seq"} {
		synctest.Test(t, func(t *testing.T) {
			rec := armCell(t, "atuned_32k", func(c *Config) {
				c.Warmup = Warmup{Kind: kind, Stream: 320 << 10}
			})
			floor := 12 * 320 * 1024 * 8 / 50e6
			if rec.WarmupS < floor || rec.Completed != 29 || rec.ConnAtPublish == nil {
				t.Fatalf("%s: warm-up %.3f s (floor %.3f s), %d of 29 completed, connection state %v", kind, rec.WarmupS, floor, rec.Completed, rec.ConnAtPublish)
			}
			if want := kind + ":320KiB"; rec.Warmup != want {
				t.Fatalf("record warmup %q, want %q", rec.Warmup, want)
			}
			cwnd[i] = rec.ConnAtPublish.CwndKiBP50
			t.Logf("%s: warm-up %.3f s, median window %.1f KiB, %d packets lost, p50 %.3f s", kind, rec.WarmupS, cwnd[i], rec.ConnAtPublish.PacketsLost, *rec.P50S)
		})
	}
	if cwnd[1] <= cwnd[0] {
		t.Fatalf("median window after the warm-up in turn %.1f KiB, at once %.1f KiB; want it larger in turn", cwnd[1], cwnd[0])
	}
}

// TestBackgroundLoad: 16 KiB every 100 ms for 1 s before and during a 2 s
// window. Every background message reaches every node, so each receiver
// takes in at least 10 such messages more than the cell alone.
func TestBackgroundLoad(t *testing.T) {
	var base float64
	synctest.Test(t, func(t *testing.T) {
		base = armCell(t, "wholend", func(c *Config) { c.Window = 2 * des.Second }).RxNodeBytes
	})
	synctest.Test(t, func(t *testing.T) {
		rec := armCell(t, "wholend", func(c *Config) {
			c.Background = Background{Size: 16 << 10, Interval: 100 * des.Millisecond, Lead: des.Second}
			c.Window = 2 * des.Second
		})
		if rec.Completed != 29 {
			t.Fatalf("with background load %d of 29 completed", rec.Completed)
		}
		if extra := rec.RxNodeBytes - base; extra < 10*16<<10 {
			t.Fatalf("background added %.0f bytes per receiver, want at least %d", extra, 10*16<<10)
		}
		if rec.Background != "16KiB@100ms" || rec.BackgroundLeadS != 1 {
			t.Fatalf("record: background %q lead %v", rec.Background, rec.BackgroundLeadS)
		}
	})
}

func TestLoadModeValidation(t *testing.T) {
	for _, c := range []Config{
		{Warmup: Warmup{Kind: "sparks"}},
		{Warmup: Warmup{Kind: "streams"}},
		{Warmup: Warmup{Kind: "streams-seq"}},
		{Warmup: Warmup{Kind: "payload", Gap: -1}},
		{Background: Background{Size: 10}},
		{Background: Background{Size: 10, Interval: 1, Lead: -1}},
	} {
		c.N, c.Degree, c.Payload = 4, 2, 100
		c.Defaults()
		if err := c.validate(); err == nil {
			t.Errorf("%+v %+v validated", c.Warmup, c.Background)
		}
	}
}
