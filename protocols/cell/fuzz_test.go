package cell

import (
	"math"
	"strings"
	"testing"

	"github.com/uplinksim/uplink/des"
)

// FuzzKnobs: no knob override makes SetKnobs panic, and a profile it
// accepts holds values within their bounds, and reads back (Knobs) as a
// value the same knob accepts again.
func FuzzKnobs(f *testing.F) {
	for _, s := range []string{"settle=10", "settle=1e10", "settle=NaN", "recv-slots=32", "host-rate=1Gbit",
		"first-heartbeat=50ms", "cc=cubic", "uplink-qdisc=pie@30%;fq_codel", "shaper=serial", "sockbuf-max=-1", "=", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, kv string) {
		p, err := LookupProfile("harness")
		if err != nil {
			t.Fatal(err)
		}
		if p.SetKnobs([]string{kv}) != nil {
			return
		}
		if math.IsNaN(p.Settle) || p.Settle < 0 || p.Settle > des.MaxVirtual.Seconds() {
			t.Fatalf("%q: settle %g", kv, p.Settle)
		}
		if p.RecvSlots < 0 || p.RecvSlots > maxRecvSlots || p.SockBufMax < 0 || p.SndBufMax < 0 {
			t.Fatalf("%q: recv-slots %d, sockbuf-max %d, sndbuf-max %d", kv, p.RecvSlots, p.SockBufMax, p.SndBufMax)
		}
		if p.HostRate < des.MinRate || p.HostRate > des.MaxRate {
			t.Fatalf("%q: host-rate %d", kv, p.HostRate)
		}
		name, _, _ := strings.Cut(kv, "=")
		again, err := LookupProfile("harness")
		if err != nil {
			t.Fatal(err)
		}
		if err := again.Set(name, p.Knobs()[name]); err != nil {
			t.Fatalf("%q reads back as %q, which is refused: %v", kv, p.Knobs()[name], err)
		}
	})
}

// FuzzQdiscFile: no per-node queue file makes ReadNodeQdiscs or its
// resolution panic, and an accepted file assigns a direction and
// resolves to one spec per node.
func FuzzQdiscFile(f *testing.F) {
	for _, s := range []string{
		`{"uplink": {"default": "fq_codel", "nodes": {"0": "pie"}}}`,
		`{"downlink": {"default": "pie@30%;fifo", "nodes": {"5": "pfifo:limit=100"}}}`,
		`{"uplink": {"default": "fq_codel"}} garbage`,
		`{"uplink": {"nodes": {"-1": "pie"}}}`,
		`{"uplink": {"default": "pie@NaN%;fifo"}}`,
		"null", "{}", `{"downlink": {}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		nq, err := ReadNodeQdiscs(strings.NewReader(s))
		if err != nil {
			return
		}
		if nq.Uplink == nil && nq.Downlink == nil {
			t.Fatalf("%q: read as a file that assigns nothing", s)
		}
		const n = 10
		for _, m := range []*QdiscMap{nq.Uplink, nq.Downlink} {
			specs, err := m.resolve("fifo", n, 7)
			if err != nil {
				continue
			}
			if len(specs) != n {
				t.Fatalf("%q: %d specs for %d nodes", s, len(specs), n)
			}
		}
	})
}
