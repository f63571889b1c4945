package queues

import (
	"fmt"
	"strings"

	"github.com/uplinksim/uplink/des"
)

// Classify says how a flow-queueing discipline maps a packet to a flow
// bucket.
type Classify uint8

const (
	// ClassifyFiveTuple hashes the 5-tuple (source and destination node and
	// port, protocol) into the buckets, as Linux's fq_codel and fq_pie do
	// with skb_get_hash and reciprocal_scale. The hash here is a fixed-seed
	// mix, so runs are reproducible; Linux seeds its hash at boot, so which
	// flows collide differs from any given Linux host.
	ClassifyFiveTuple Classify = iota
	// ClassifyPair hashes the (to, from) node pair, ignoring ports: the
	// classifier of simnet's fq_codel.
	ClassifyPair
	// ClassifySock hashes the sending socket (FlowKey.Sock).
	ClassifySock
)

var classifyNames = [...]string{"5tuple", "pair", "sock"}

// String returns the classifier name, as ParseClassify reads it.
func (c Classify) String() string {
	if int(c) < len(classifyNames) {
		return classifyNames[c]
	}
	return fmt.Sprintf("classify(%d)", uint8(c))
}

// ParseClassify reads a classifier name: "5tuple", "pair" or "sock".
func ParseClassify(s string) (Classify, error) {
	for i, n := range classifyNames {
		if strings.EqualFold(s, n) {
			return Classify(i), nil
		}
	}
	return 0, fmt.Errorf("classify %q; valid: %s", s, strings.Join(classifyNames[:], ", "))
}

func (c Classify) valid() bool { return int(c) < len(classifyNames) }

// mix64 is the splitmix64 finaliser: a fixed bijective mix whose output
// bits each depend on all input bits.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// hash returns the deterministic 32-bit flow hash of k under c.
func (c Classify) hash(k *FlowKey) uint32 {
	var h uint64
	switch c {
	case ClassifyPair:
		h = mix64(uint64(k.DstNode)<<32 | uint64(k.SrcNode))
	case ClassifySock:
		h = mix64(uint64(k.Sock) ^ 0x5bd1e9955bd1e995)
	default:
		h = mix64(uint64(k.SrcNode)<<32 | uint64(k.DstNode))
		h = mix64(h ^ (uint64(k.SrcPort)<<40 | uint64(k.DstPort)<<24 | uint64(k.Proto)<<8 | 0x9e))
	}
	return uint32(h >> 32)
}

// bucketOf maps a 32-bit hash to [0, n) like Linux's reciprocal_scale.
func bucketOf(h uint32, n int) int { return int((uint64(h) * uint64(n)) >> 32) }

// MaxFlows is the largest bucket count, as in Linux fq_codel and fq_pie.
const MaxFlows = 65536

// fqFlow is one flow bucket: its packet queue, byte backlog and DRR
// deficit, and its link in the scheduler's lists.
type fqFlow struct {
	q       ring
	bytes   int
	deficit int
	next    int32 // next flow on the same list, -1 at the tail
	listed  bool  // on new_flows or old_flows (Linux: flowchain not empty)
}

// flowList is a FIFO of flow indices linked through fqFlow.next.
type flowList struct{ head, tail int32 }

func (l *flowList) empty() bool { return l.head < 0 }

// fqSched is the flow scheduler shared by FQ-CoDel, FQ-PIE and DRR's fq
// mode: the DRR++ of RFC 8290 section 4 and Linux sch_fq_codel.c /
// sch_fq_pie.c, with new flows served before old ones. The AQM state lives
// in the disciplines, in slices parallel to flows.
type fqSched struct {
	flows              []fqFlow
	newFlows, oldFlows flowList
	quantum            int
	classify           Classify
	newFlowCount       uint64
}

func (s *fqSched) init(flows, quantum int, c Classify) {
	s.flows = make([]fqFlow, flows)
	for i := range s.flows {
		s.flows[i].next = -1
	}
	s.newFlows = flowList{-1, -1}
	s.oldFlows = flowList{-1, -1}
	s.quantum = quantum
	s.classify = c
}

func validateFQ(name string, flows, quantum int, c Classify) error {
	if flows < 1 || flows > MaxFlows {
		return fmt.Errorf("%s: flows %d; the number of flow buckets must be in [1, %d] (Linux default 1024)", name, flows, MaxFlows)
	}
	if quantum < 1 {
		return fmt.Errorf("%s: quantum %d; the quantum must be at least 1 byte (Linux default %d, the device MTU)", name, quantum, DefaultMTU)
	}
	if !c.valid() {
		return fmt.Errorf("%s: classify %v; valid: %s", name, c, strings.Join(classifyNames[:], ", "))
	}
	return nil
}

// validateFQLimits checks the packet and memory limits of a flow-queueing
// discipline: positive, or 0 for none.
func validateFQLimits(name string, limit, memory int) error {
	if limit < 0 {
		return fmt.Errorf("%s: limit %d; use a positive packet limit (default %d), or 0 for no limit", name, limit, DefaultFQLimit)
	}
	if memory < 0 {
		return fmt.Errorf("%s: memory_limit %d; use a positive byte limit (default %d), or 0 for no limit", name, memory, DefaultFQMemoryLimit)
	}
	return nil
}

// index returns the bucket of k.
func (s *fqSched) index(k *FlowKey) int { return bucketOf(s.classify.hash(k), len(s.flows)) }

func (s *fqSched) pushTail(l *flowList, i int32) {
	s.flows[i].next = -1
	if l.tail < 0 {
		l.head = i
	} else {
		s.flows[l.tail].next = i
	}
	l.tail = i
}

func (s *fqSched) popHead(l *flowList) int32 {
	i := l.head
	l.head = s.flows[i].next
	if l.head < 0 {
		l.tail = -1
	}
	s.flows[i].next = -1
	return i
}

// add appends p to flow i; a flow on no list joins the tail of new_flows
// with a deficit of one quantum (RFC 8290 4.1, fq_codel_enqueue).
func (s *fqSched) add(i int, p *Packet) {
	f := &s.flows[i]
	f.q.push(p)
	f.bytes += p.Len
	if !f.listed {
		f.listed = true
		f.deficit = s.quantum
		s.pushTail(&s.newFlows, int32(i))
		s.newFlowCount++
	}
}

// flowDequeuer takes the next packet of one flow, applying the AQM of the
// discipline; nil means the flow ran empty.
type flowDequeuer interface {
	dequeueFlow(i int, now des.Time) *Packet
}

// flowIdler, when a discipline implements it, hears that flow i ran empty
// and left the lists.
type flowIdler interface {
	flowIdle(i int)
}

// dequeue is the DRR++ loop of RFC 8290 4.2 and fq_codel_dequeue: take the
// head of new_flows, else of old_flows; a flow with no deficit left gets a
// quantum more and goes to the tail of old_flows; a flow that yields
// nothing goes from new_flows to the tail of old_flows if old_flows is not
// empty (so a flow cannot stay "new" by emptying and refilling), otherwise
// it leaves the lists; a packet costs its length in deficit.
func (s *fqSched) dequeue(d flowDequeuer, now des.Time) *Packet {
	for {
		l, fromNew := &s.newFlows, true
		if l.empty() {
			l, fromNew = &s.oldFlows, false
			if l.empty() {
				return nil
			}
		}
		i := l.head
		f := &s.flows[i]
		if f.deficit <= 0 {
			f.deficit += s.quantum
			s.pushTail(&s.oldFlows, s.popHead(l))
			continue
		}
		p := d.dequeueFlow(int(i), now)
		if p == nil {
			s.popHead(l)
			if fromNew && !s.oldFlows.empty() {
				s.pushTail(&s.oldFlows, i)
			} else {
				f.listed = false
				if id, ok := d.(flowIdler); ok {
					id.flowIdle(int(i))
				}
			}
			continue
		}
		f.deficit -= p.Len
		return p
	}
}

// fattest returns the flow with the largest byte backlog (the first one on
// a tie, as Linux's linear scan in fq_codel_drop), or -1 if all are empty.
func (s *fqSched) fattest() int {
	best, most := -1, -1
	for i := range s.flows {
		f := &s.flows[i]
		if f.q.len() > 0 && f.bytes > most {
			best, most = i, f.bytes
		}
	}
	return best
}
