package tcp

import "sort"

// Packet priorities as Shadow's TCP assigns them. Shadow cuts each
// application write into segments at once, numbers them from a per-host
// counter and holds them until the congestion window lets them go; its
// fifo interface discipline then sends, among the sockets with packets
// ready, the one whose next packet has the lowest number
// (queues.ShadowFIFO). The order on the wire is therefore the order of the
// writes, not the order in which the windows released the data. Our
// sender segments at transmission, so it keeps each write's numbers by
// sequence range and gives a segment the number of its first byte's
// write-time segment: exact when segments start where Shadow's would (each
// write cut at the MSS), approximate when a segment spans two writes.
// Only the Shadow fifo reads the numbers; other disciplines ignore them.

// prioRun is one application write: bytes [seq, seq+n) numbered first,
// first+1, ... per mss bytes.
type prioRun struct {
	seq   SeqNum
	n     int32
	mss   int32
	first uint64
}

// prioRuns are the runs of the data from snd.una on, in sequence order.
type prioRuns struct {
	runs []prioRun
	head int
}

// add numbers a write of n bytes at seq: one priority per mss bytes,
// taken from the node by take.
func (r *prioRuns) add(seq SeqNum, n, mss int, take func(int) uint64) {
	if n <= 0 {
		return
	}
	mss = max(mss, 1)
	r.runs = append(r.runs, prioRun{seq: seq, n: int32(n), mss: int32(mss), first: take((n + mss - 1) / mss)})
}

// of returns the priority of the segment that starts at seq (0 when no
// run holds it).
func (r *prioRuns) of(seq SeqNum) uint64 {
	runs := r.runs[r.head:]
	i := sort.Search(len(runs), func(i int) bool { return seq.Before(runs[i].seq.Add(int(runs[i].n))) })
	if i == len(runs) || seq.Before(runs[i].seq) {
		return 0
	}
	run := runs[i]
	return run.first + uint64(seq.Sub(run.seq)/int(run.mss))
}

// trim forgets the runs wholly below una.
func (r *prioRuns) trim(una SeqNum) {
	for r.head < len(r.runs) && !una.Before(r.runs[r.head].seq.Add(int(r.runs[r.head].n))) {
		r.head++
	}
	if r.head == len(r.runs) {
		r.runs, r.head = r.runs[:0], 0
	} else if r.head > 64 && r.head*2 > len(r.runs) {
		r.runs = append(r.runs[:0], r.runs[r.head:]...)
		r.head = 0
	}
}
