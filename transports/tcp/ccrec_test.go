package tcp

import (
	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/queues"
)

// ccRecorder wraps a controller and records the windows around each
// event: the tests' window on the sender's decisions.
type ccRecorder struct {
	CongestionControl
	enter, exit, rto []ccEvent
}

type ccEvent struct {
	at                    des.Time
	cwndBefore, cwndAfter int
	ssthresh              int
}

func (r *ccRecorder) record(list *[]ccEvent, now des.Time, before int) {
	*list = append(*list, ccEvent{now, before, r.Cwnd(), r.Ssthresh()})
}

func (r *ccRecorder) EnterRecovery(ev *AckEvent) {
	b := r.Cwnd()
	r.CongestionControl.EnterRecovery(ev)
	r.record(&r.enter, ev.Now, b)
}

func (r *ccRecorder) ExitRecovery(ev *AckEvent) {
	b := r.Cwnd()
	r.CongestionControl.ExitRecovery(ev)
	r.record(&r.exit, ev.Now, b)
}

func (r *ccRecorder) OnRTO(ev *AckEvent, reduce bool) {
	b := r.Cwnd()
	r.CongestionControl.OnRTO(ev, reduce)
	r.record(&r.rto, ev.Now, b)
}

// dropQueue is an unlimited FIFO that drops chosen packets carrying TCP
// data (counted from 1 among data packets): losses at known places.
type dropQueue struct {
	*queues.FIFO
	drop map[int]bool
	n    int
	hook queues.DropFunc
	// again drops the retransmission of each dropped segment too.
	again   bool
	dropSeq map[SeqNum]bool
}

func (d *dropQueue) SetDropHook(f queues.DropFunc) {
	d.hook = f
	d.FIFO.SetDropHook(f)
}

func newDropQueue(nth ...int) *dropQueue {
	d := &dropQueue{FIFO: queues.NewUnlimitedFIFO(), drop: map[int]bool{}}
	for _, k := range nth {
		d.drop[k] = true
	}
	return d
}

func (d *dropQueue) Enqueue(p *queues.Packet, now des.Time) bool {
	if len(p.Payload) > 0 {
		d.n++
		seq := p.Hdr.(*Header).Seq
		if d.dropSeq[seq] {
			delete(d.dropSeq, seq)
			if d.hook != nil {
				d.hook(p, queues.DropOverlimit, now)
			}
			return false
		}
		if d.drop[d.n] {
			delete(d.drop, d.n)
			if d.again {
				if d.dropSeq == nil {
					d.dropSeq = map[SeqNum]bool{}
				}
				d.dropSeq[seq] = true
			}
			if d.hook != nil {
				d.hook(p, queues.DropOverlimit, now) // the network reclaims it
			}
			return false
		}
	}
	return d.FIFO.Enqueue(p, now)
}
