package queues

import (
	"math/rand/v2"
	"testing"

	"github.com/uplinksim/uplink/des"
)

// fuzzCase is a discipline under fuzzing and what it may do.
type fuzzCase struct {
	q                     Qdisc
	maxPackets, maxBytes  int                  // limits to check (0: none)
	enqReasons, deqReason [NumDropReasons]bool // drop reasons allowed in Enqueue / Dequeue
}

// fuzzOps decodes ops into a sequence of operations at non-decreasing
// instants and checks the invariants every discipline owes:
//   - the drop hook only gets a packet that is queued or being offered,
//     once, for an allowed reason, at enqueue or (AQM only) at dequeue;
//   - Enqueue reports true exactly when the packet is left in the backlog;
//   - Dequeue returns only queued packets, each once, in FIFO order within
//     a flow, timestamped at their enqueue, and nil only when empty;
//   - Len and Bytes equal the packets accepted and not yet gone;
//   - the Stats conservation identity, and the limits.
//
// Each operation takes three bytes: op, a, b. The high nibble of op
// advances time by that many units (variant sets the unit, 10 us to
// 1.28 ms); op&3 selects: 0, 1: one packet of flow a%16 and 40+6b bytes,
// ECN-capable if op&4; 2: (a&3)+1 dequeues; 3: a burst of (a&7)+1 packets
// of flow (a>>3)%16 and 40+6b bytes.
func fuzzOps(t *testing.T, c fuzzCase, variant uint8, ops []byte) {
	const (
		pending = iota + 1
		queued
		gone
	)
	q := c.q
	status := map[*Packet]int{}
	enqAt := map[*Packet]des.Time{}
	lastOut := map[FlowKey]uint64{}
	var offering *Packet
	inDequeue := false
	var n, bytes int
	var dequeued, drops uint64
	q.SetDropHook(func(p *Packet, r DropReason, now des.Time) {
		allowed := c.enqReasons[r]
		if inDequeue {
			allowed = c.deqReason[r]
		}
		if !allowed {
			t.Fatalf("drop for reason %v (in dequeue: %v) not allowed", r, inDequeue)
		}
		switch {
		case status[p] == queued:
			n--
			bytes -= p.Len
		case p == offering && status[p] == pending:
		default:
			t.Fatalf("dropped a packet that is neither queued nor offered (status %d)", status[p])
		}
		status[p] = gone
		drops++
		fuzzSeen[r]++
	})
	check := func(now des.Time) {
		t.Helper()
		if q.Len() != n || q.Bytes() != bytes {
			t.Fatalf("at %v: Len %d Bytes %d, model %d %d", now, q.Len(), q.Bytes(), n, bytes)
		}
		if c.maxPackets > 0 && n > c.maxPackets || c.maxBytes > 0 && bytes > c.maxBytes {
			t.Fatalf("at %v: backlog %d packets %d bytes over the limits %d %d", now, n, bytes, c.maxPackets, c.maxBytes)
		}
		s := q.Stats()
		if err := s.CheckConservation(n, bytes); err != nil {
			t.Fatal(err)
		}
		if s.Dequeued != dequeued || s.Dropped() != drops {
			t.Fatalf("stats dequeued %d dropped %d, model %d %d", s.Dequeued, s.Dropped(), dequeued, drops)
		}
	}
	var seq uint64
	enqueue := func(flow, size int, ect bool, now des.Time) {
		seq++
		p := mkpkt(flow, size, seq)
		p.ECT = ect
		status[p] = pending
		offering = p
		ok := q.Enqueue(p, now)
		offering = nil
		switch {
		case ok && status[p] == pending:
			status[p] = queued
			enqAt[p] = now
			n++
			bytes += size
		case ok:
			t.Fatal("Enqueue reported true for a dropped packet")
		case status[p] != gone:
			t.Fatal("Enqueue reported false but the hook did not get the packet")
		}
		if p.CE && !p.ECT {
			t.Fatal("CE on a packet that is not ECN-capable")
		}
	}
	dequeue := func(now des.Time) bool {
		inDequeue = true
		p := q.Dequeue(now)
		inDequeue = false
		if p == nil {
			if n != 0 {
				t.Fatalf("Dequeue returned nil with %d packets queued", n)
			}
			return false
		}
		if status[p] != queued {
			t.Fatalf("dequeued a packet with status %d", status[p])
		}
		if p.Enqueued != enqAt[p] || now < p.Enqueued {
			t.Fatalf("timestamp %v, enqueued at %v, now %v", p.Enqueued, enqAt[p], now)
		}
		if last, ok := lastOut[p.Flow]; ok && p.Seq <= last {
			t.Fatalf("flow %+v: packet %d after %d", p.Flow, p.Seq, last)
		}
		if p.CE && !p.ECT {
			t.Fatal("CE on a packet that is not ECN-capable")
		}
		lastOut[p.Flow] = p.Seq
		status[p] = gone
		n--
		bytes -= p.Len
		dequeued++
		return true
	}

	unit := des.Time(10*des.Microsecond) << (variant & 7)
	var now des.Time
	for i := 0; i+2 < len(ops); i += 3 {
		op, a, b := ops[i], int(ops[i+1]), int(ops[i+2])
		now += des.Time(op>>4) * unit
		switch op & 3 {
		case 0, 1:
			enqueue(a%16, 40+6*b, op&4 != 0, now)
		case 2:
			for k := 0; k <= a&3; k++ {
				dequeue(now)
			}
		case 3:
			for k := 0; k <= a&7; k++ {
				enqueue((a>>3)%16, 40+6*b, op&4 != 0, now)
			}
		}
		check(now)
	}
	// Drain: everything accepted leaves, by dequeue or drop.
	for dequeue(now) {
		now += unit
		check(now)
	}
	check(now)
	for _, s := range status {
		if s != gone {
			t.Fatal("a packet neither dequeued nor dropped after draining")
		}
	}
}

// fuzzSeen counts the drops by reason over fuzzOps runs, so that a test
// can tell that its inputs reached the drop paths.
var fuzzSeen [NumDropReasons]uint64

func reasons(rs ...DropReason) (a [NumDropReasons]bool) {
	for _, r := range rs {
		a[r] = true
	}
	return a
}

// fuzzSeedRand is the rand.Rand for PIE and FQ-PIE, seeded by the variant.
func fuzzSeedRand(variant uint8) *rand.Rand { return rand.New(rand.NewPCG(uint64(variant), 99)) }

func FuzzFIFO(f *testing.F) { f.Fuzz(runFIFO) }

func runFIFO(t *testing.T, variant uint8, ops []byte) {
	var c fuzzCase
	var err error
	limit := int(variant>>3) + 1
	switch variant % 3 {
	case 0:
		c.q, err = NewPfifo(limit)
		c.maxPackets = limit
	case 1:
		c.q, err = NewBfifo(limit * 700)
		c.maxBytes = limit * 700
	default:
		c.q = NewUnlimitedFIFO()
	}
	if err != nil {
		t.Fatal(err)
	}
	c.enqReasons = reasons(DropOverlimit)
	fuzzOps(t, c, variant, ops)
}

func FuzzCoDel(f *testing.F) { f.Fuzz(runCoDel) }

func runCoDel(t *testing.T, variant uint8, ops []byte) {
	cfg := DefaultCoDelConfig()
	cfg.Target = des.Time(1+variant%4) * ms / 2
	cfg.Interval = des.Time(2+variant%8) * ms
	cfg.Limit = []int{0, 4, 32, 1000}[variant>>3&3]
	cfg.ECN = variant&0x20 != 0
	cfg.FloatSqrt = variant&0x40 != 0
	if variant&0x80 != 0 {
		cfg.CEThreshold = ms
	}
	q, err := NewCoDel(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fuzzOps(t, fuzzCase{q: q, maxPackets: cfg.Limit,
		enqReasons: reasons(DropOverlimit), deqReason: reasons(DropAQM)}, variant, ops)
}

func FuzzFQCoDel(f *testing.F) { f.Fuzz(runFQCoDel) }

func runFQCoDel(t *testing.T, variant uint8, ops []byte) {
	cfg := DefaultFQCoDelConfig()
	cfg.Target = des.Time(1+variant%3) * ms / 2
	cfg.Interval = des.Time(3+variant%5) * ms
	cfg.Flows = []int{1, 4, 16, 1024}[variant&3]
	cfg.Limit = []int{0, 6, 24, 10240}[variant>>2&3]
	cfg.MemoryLimit = []int{0, 12000}[variant>>4&1]
	cfg.DropBatch = []int{1, 64}[variant>>5&1]
	cfg.Classify = Classify(variant >> 6 % 3)
	cfg.Quantum = []int{300, 1514}[variant>>7]
	cfg.ECN = variant&1 != 0
	q, err := NewFQCoDel(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// One batch brings the packet count back within the limit; the
	// memory limit may need several arrivals (as in Linux), so only
	// the packet limit is checked.
	fuzzOps(t, fuzzCase{q: q, maxPackets: cfg.Limit,
		enqReasons: reasons(DropBatch), deqReason: reasons(DropAQM)}, variant, ops)
}

func fuzzPIEParams(variant uint8) PIEParams {
	p := DefaultPIEParams()
	p.Target = des.Time(1+variant%3) * ms
	p.TUpdate = des.Time(1+variant%4) * ms
	p.MaxBurst = []des.Time{0, 5 * ms}[variant>>2&1]
	p.ECN = variant&0x08 != 0
	p.Bytemode = variant&0x10 != 0
	p.DqRateEstimator = variant&0x20 != 0
	p.BurstPerUpdate = variant&0x40 != 0
	p.HighDelayBoost = variant&0x80 == 0
	return p
}

func FuzzPIE(f *testing.F) { f.Fuzz(runPIE) }

func runPIE(t *testing.T, variant uint8, ops []byte) {
	cfg := PIEConfig{PIEParams: fuzzPIEParams(variant), Limit: []int{0, 5, 40}[variant%3]}
	q, err := NewPIE(cfg, fuzzSeedRand(variant))
	if err != nil {
		t.Fatal(err)
	}
	fuzzOps(t, fuzzCase{q: q, maxPackets: cfg.Limit,
		enqReasons: reasons(DropOverlimit, DropAQM)}, variant, ops)
}

func FuzzFQPIE(f *testing.F) { f.Fuzz(runFQPIE) }

func runFQPIE(t *testing.T, variant uint8, ops []byte) {
	cfg := DefaultFQPIEConfig()
	cfg.PIEParams = fuzzPIEParams(variant)
	cfg.Flows = []int{1, 4, 16, 1024}[variant&3]
	cfg.Limit = []int{0, 6, 30}[variant%3]
	cfg.MemoryLimit = 8000
	cfg.Classify = Classify(variant >> 5 % 3)
	q, err := NewFQPIE(cfg, fuzzSeedRand(variant))
	if err != nil {
		t.Fatal(err)
	}
	fuzzOps(t, fuzzCase{q: q, maxPackets: cfg.Limit,
		enqReasons: reasons(DropOverlimit, DropAQM)}, variant, ops)
}

func FuzzDRR(f *testing.F) { f.Fuzz(runDRR) }

func runDRR(t *testing.T, variant uint8, ops []byte) {
	cfg := DRRConfig{
		Limit:    []int{0, 3, 20, 10240}[variant&3],
		Flows:    []int{1, 5, 1024}[variant>>2%3],
		Quantum:  []int{1, 200, 1514}[variant>>4%3],
		Classify: Classify(variant >> 6 % 3),
		Sched:    DRRSched(variant >> 7),
	}
	q, err := NewDRR(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fuzzOps(t, fuzzCase{q: q, maxPackets: cfg.Limit, enqReasons: reasons(DropOverlimit)}, variant, ops)
}

func FuzzShadowRR(f *testing.F) { f.Fuzz(runShadowRR) }

func runShadowRR(t *testing.T, variant uint8, ops []byte) {
	q := NewShadowRR()
	fuzzOps(t, fuzzCase{q: q}, variant, ops)
	allSlotsFree(t, q.Sockets(), &q.t)
}

func FuzzShadowFIFO(f *testing.F) { f.Fuzz(runShadowFIFO) }

func runShadowFIFO(t *testing.T, variant uint8, ops []byte) {
	q := NewShadowFIFO()
	fuzzOps(t, fuzzCase{q: q}, variant, ops)
	allSlotsFree(t, q.Sockets(), &q.t)
}

// allSlotsFree checks that a drained socket discipline holds no socket and
// has recycled every slot.
func allSlotsFree(t *testing.T, sockets int, st *sockTable) {
	t.Helper()
	if sockets != 0 || len(st.free) != len(st.socks) {
		t.Fatalf("%d sockets left, %d of %d slots free", sockets, len(st.free), len(st.socks))
	}
}

// fuzzTargets are the fuzz bodies, also run on random inputs by
// TestFuzzBodiesRandom so that plain `go test` checks the invariants on
// more than the seed corpus.
var fuzzTargets = map[string]func(*testing.T, uint8, []byte){
	"FIFO": runFIFO, "CoDel": runCoDel, "FQCoDel": runFQCoDel, "PIE": runPIE,
	"FQPIE": runFQPIE, "DRR": runDRR, "ShadowRR": runShadowRR, "ShadowFIFO": runShadowFIFO,
}

func TestFuzzBodiesRandom(t *testing.T) {
	n := 150
	if testing.Short() {
		n = 20
	}
	want := map[string][]DropReason{
		"FIFO": {DropOverlimit}, "CoDel": {DropOverlimit, DropAQM}, "FQCoDel": {DropBatch, DropAQM},
		"PIE": {DropOverlimit, DropAQM}, "FQPIE": {DropOverlimit, DropAQM}, "DRR": {DropOverlimit},
	}
	for name, run := range fuzzTargets {
		t.Run(name, func(t *testing.T) {
			fuzzSeen = [NumDropReasons]uint64{}
			r := rand.New(rand.NewPCG(uint64(len(name)), 11))
			for i := 0; i < n; i++ {
				ops := make([]byte, 3*(1+r.IntN(400)))
				for k := range ops {
					ops[k] = byte(r.Uint32())
				}
				// Bias toward overload: arrivals twice as often as dequeues.
				for k := 0; k < len(ops); k += 3 {
					if ops[k]&3 == 2 && r.IntN(2) == 0 {
						ops[k] &^= 3
					}
				}
				run(t, uint8(r.Uint32()), ops)
				if t.Failed() {
					t.Fatalf("input %d failed", i)
				}
			}
			for _, r := range want[name] {
				if fuzzSeen[r] == 0 {
					t.Errorf("random inputs never caused a %v drop", r)
				}
			}
			t.Logf("drops by reason: %v", fuzzSeen)
		})
	}
}
