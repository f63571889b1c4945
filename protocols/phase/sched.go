package phase

import (
	"container/heap"
	"context"
	"sync"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
)

// sched runs the router's timed work (FINAL's retries and promise
// deadlines) on pubsub's event loop, where all router state lives.
//
// go-libp2p-pubsub exports no way to run a function on its event loop. The
// one public door is Topic.Publish's readiness check, which the library
// evaluates on the loop: inLoop passes a readiness function that does the
// work, cancels the publish and answers "not ready", so nothing is ever
// published. One library timer per node wakes it at the earliest due task;
// tasks due at the same instant share one pass through the loop.
type sched struct {
	mu    sync.Mutex // guards topic and timer; tasks are touched on the loop only
	topic *pubsub.Topic
	timer *time.Timer
	tasks taskHeap
	seq   uint64
}

type task struct {
	at  time.Time
	seq uint64
	fn  func(now time.Time)
}

type taskHeap []task

func (h taskHeap) Len() int { return len(h) }
func (h taskHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h taskHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *taskHeap) Push(x any)   { *h = append(*h, x.(task)) }
func (h *taskHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	*h = old[:len(old)-1]
	return t
}

// bind gives the scheduler a joined topic handle to reach the loop with.
func (s *sched) bind(t *pubsub.Topic) {
	s.mu.Lock()
	s.topic = t
	s.mu.Unlock()
}

// at schedules fn at instant when; it must be called on the loop.
func (s *sched) at(when time.Time, fn func(now time.Time)) {
	s.seq++
	heap.Push(&s.tasks, task{at: when, seq: s.seq, fn: fn})
	if s.tasks[0].seq == s.seq {
		s.arm(when)
	}
}

// arm sets the wake-up for when.
func (s *sched) arm(when time.Time) {
	d := max(time.Until(when), 0)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer == nil {
		s.timer = time.AfterFunc(d, s.wake)
		return
	}
	s.timer.Reset(d)
}

// wake runs on the timer's goroutine and hands the due tasks to the loop.
func (s *sched) wake() {
	s.mu.Lock()
	t := s.topic
	s.mu.Unlock()
	if t == nil {
		return
	}
	inLoop(t, s.runDue)
}

// runDue runs every task that is due, on the loop, and re-arms.
func (s *sched) runDue() {
	now := time.Now()
	for len(s.tasks) > 0 && !s.tasks[0].at.After(now) {
		t := heap.Pop(&s.tasks).(task)
		t.fn(now)
	}
	if len(s.tasks) > 0 {
		s.arm(s.tasks[0].at)
	}
}

// stop cancels the wake-up; pending tasks are dropped.
func (s *sched) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.topic = nil
	if s.timer != nil {
		s.timer.Stop()
	}
}

// inLoop runs f on t's pubsub event loop and returns when it has run (or
// the pubsub has stopped). See sched for why it goes through Publish.
func inLoop(t *pubsub.Topic, f func()) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_ = t.Publish(ctx, nil, pubsub.WithReadiness(func(pubsub.PubSubRouter, string) (bool, error) {
		f()
		cancel()
		return false, nil
	}))
}
