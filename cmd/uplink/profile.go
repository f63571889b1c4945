package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/uplinksim/uplink/internal/outfile"
)

// phaseProfiler writes one CPU profile per phase of a cell, and the heap
// when the delivery ends (the teardown phase starts), to prefix-PHASE.*.
// During the delivery it also keeps the heap profile of the largest live
// heap seen (prefix-delivery-peak.heap.prof): a cell that ends at its last
// completion has let most copies go by then, so the end shows little of
// what set the peak RSS.
//
// It fails at once when no file can be created beside prefix. Each file is
// written under a temporary name and renamed into place when complete. The
// first error ends profiling and is returned by stop, which ends the last
// profile; stop may be called more than once.
//
// The profiler must run outside the synctest bubble: its writer goroutine
// inside it would keep virtual time from advancing. So the hook, called by
// the cell inside the bubble, hands each switch to a goroutine started here
// and waits for it.
func phaseProfiler(prefix string) (hook func(phase string), stop func() error, err error) {
	probe, err := createOutput(prefix + "-hosts.cpu.prof")
	if err != nil {
		return nil, nil, err
	}
	probe.Discard()
	req := make(chan string)
	ack := make(chan struct{})
	var cur *outfile.File
	var stopPeak func() error
	var firstErr error // written by the goroutine only; read after ack closes
	fail := func(err error) {
		if firstErr == nil {
			firstErr = err
		}
	}
	end := func() {
		if cur != nil {
			pprof.StopCPUProfile()
			if err := cur.Commit(); err != nil {
				fail(fmt.Errorf("cpu profile: %w", err))
			}
			cur = nil
		}
		if stopPeak != nil {
			if err := stopPeak(); err != nil {
				fail(err)
			}
			stopPeak = nil
		}
	}
	go func() {
		for phase := range req {
			end()
			if phase == "delivery" && firstErr == nil {
				stopPeak = peakHeap(prefix+"-delivery-peak.heap.prof", 500*time.Millisecond)
			}
			if firstErr == nil {
				if err := switchProfile(prefix, phase, &cur); err != nil {
					fail(err)
				}
			}
			ack <- struct{}{}
		}
		end()
		close(ack)
	}()
	hook = func(phase string) {
		req <- phase
		<-ack
	}
	var once sync.Once
	stop = func() error {
		once.Do(func() {
			close(req)
			<-ack
		})
		return firstErr
	}
	return hook, stop, nil
}

// switchProfile writes the heap when the teardown starts, then starts the
// CPU profile of phase.
func switchProfile(prefix, phase string, cur **outfile.File) error {
	if phase == "teardown" {
		runtime.GC() // the heap profile shows the live heap as of the last GC
		if err := writeHeap(prefix + "-delivery.heap.prof"); err != nil {
			return err
		}
	}
	f, err := createOutput(prefix + "-" + phase + ".cpu.prof")
	if err != nil {
		return fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Discard()
		return fmt.Errorf("cpu profile: %w", err)
	}
	*cur = f
	return nil
}

// peakHeap polls the live heap (as of the last GC) every poll of wall
// time and writes the heap profile to path whenever the live heap has grown
// by a twentieth over the last one written. It runs outside the bubble;
// stop ends it, waits, and returns the error that ended it early, if any.
func peakHeap(path string, poll time.Duration) (stop func() error) {
	done := make(chan struct{})
	finished := make(chan struct{})
	var err error
	go func() {
		defer close(finished)
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		var written uint64
		tick := time.NewTicker(poll)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			metrics.Read(sample)
			if sample[0].Value.Kind() != metrics.KindUint64 {
				err = fmt.Errorf("peak heap profile: metric %s unsupported", sample[0].Name)
				return
			}
			live := sample[0].Value.Uint64()
			if live < written+written/20 {
				continue
			}
			if err = writeHeap(path); err != nil {
				err = fmt.Errorf("peak %w", err)
				return
			}
			written = live
		}
	}()
	return func() error {
		close(done)
		<-finished
		return err
	}
}

// writeHeap writes the heap profile (the live heap as of the last GC) to
// path.
func writeHeap(path string) error {
	err := writeFileAtomic(path, func(w io.Writer) error { return pprof.Lookup("heap").WriteTo(w, 0) })
	if err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	return nil
}
