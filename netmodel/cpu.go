package netmodel

import "github.com/uplinksim/uplink/des"

// cpu is a host's processor (NodeConfig.CPU): one core that handles the
// host's packets one at a time, in the order they reach it, each for its
// cost. Real code runs in zero virtual time; the cpu is what makes a host
// take time per packet.
//
// A datagram that reaches a socket's receive buffer is processed from
// there: it stays in the buffer, counted against it, and becomes readable
// when its processing ends, so while the host is busy arriving datagrams
// queue in the buffer and, once it is full, are dropped (DropSockBuf). A
// packet for an event-driven transport (Socket.OnPacket) is handed over
// when its processing ends. A packet sent is handed to the uplink when
// its processing ends; until then it holds its send-buffer space. A
// direction whose cost is zero bypasses the cpu.
//
// busy is the instant the packet in process is done: jobs[head] is in
// process while the timer is pending, and the jobs after it wait.
type cpu struct {
	nd    *Node
	spec  des.CPUSpec
	jobs  []cpuJob
	head  int
	busy  des.Time
	timer *des.Timer
}

// cpuJob is one packet's processing: a send (tx: p to the uplink), a
// delivery to an event-driven transport (p to s.OnPacket), or a datagram
// of s's receive buffer (p nil: the oldest of s's not yet processed).
type cpuJob struct {
	s    *Socket
	p    *Packet
	cost des.Time
	tx   bool
}

func newCPU(nd *Node, spec des.CPUSpec) *cpu {
	c := &cpu{nd: nd, spec: spec}
	c.timer = nd.net.sim.NewTimer(c.done)
	c.timer.SetOrder(nd.id + 1)
	return c
}

// Busy is the instant the node's cpu finishes the packet it is processing
// and the packets waiting behind it; a past instant when idle. It is the
// model's per-node busy-until time. A node without a cpu is never busy.
func (nd *Node) Busy() des.Time {
	c := nd.cpu
	if c == nil {
		return 0
	}
	t := c.busy
	for _, j := range c.jobs[min(c.head+1, len(c.jobs)):] {
		t += j.cost
	}
	return t
}

// send hands p, sent at now, to the node's first egress stage: at once,
// or once the cpu has processed it.
func (nd *Node) send(p *Packet, now des.Time) {
	if nd.cpu == nil || nd.cpu.spec.Tx.Zero() {
		nd.first.enqueue(p, now)
		return
	}
	nd.cpu.add(cpuJob{p: p, cost: nd.cpu.spec.Tx.Of(p.Len), tx: true}, now)
}

// received queues the processing of p, which has just reached s: a
// datagram now in s's receive buffer (buffered), or a packet for
// s.OnPacket. With a zero receive cost it is done at once.
func (c *cpu) received(s *Socket, p *Packet, buffered bool, now des.Time) {
	j := cpuJob{s: s, cost: c.spec.Rx.Of(p.Len)}
	if !buffered {
		j.p = p
	}
	if c.spec.Rx.Zero() {
		c.finish(j, now)
		return
	}
	c.add(j, now)
}

// add queues j and starts it if the cpu is idle.
func (c *cpu) add(j cpuJob, now des.Time) {
	c.jobs = append(c.jobs, j)
	if len(c.jobs)-c.head == 1 {
		c.start(now)
	}
}

// start begins the job at the head.
func (c *cpu) start(now des.Time) {
	c.busy = now + c.jobs[c.head].cost
	c.nd.net.sim.Schedule(c.timer, c.busy)
}

// done runs when the job in process ends: its effect takes place and the
// next job starts.
func (c *cpu) done(now des.Time) {
	j := c.jobs[c.head]
	c.jobs[c.head] = cpuJob{}
	c.head++
	if c.head == len(c.jobs) {
		c.jobs, c.head = c.jobs[:0], 0
	} else {
		c.start(now)
	}
	c.finish(j, now)
}

// finish makes j's processing take effect at now.
func (c *cpu) finish(j cpuJob, now des.Time) {
	switch {
	case j.tx:
		c.nd.first.enqueue(j.p, now)
	case j.p != nil:
		if j.s.closed || j.s.OnPacket == nil {
			c.nd.net.putPacket(j.p)
			return
		}
		j.s.OnPacket(j.p, now)
	default:
		s := j.s
		if s.closed {
			return // Close dropped the buffer
		}
		s.rqReady++
		if s.rqReady == 1 && s.OnReadable != nil {
			s.OnReadable()
		}
	}
}

// checkCPU checks a CPU spec built without des.ParseCPU against its bounds.
func checkCPU(s des.CPUSpec) error {
	_, err := des.ParseCPU(s.String())
	return err
}
