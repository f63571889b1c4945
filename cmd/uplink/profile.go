package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"time"
)

// phaseProfiler writes one CPU profile per phase of a cell, and the heap
// when the delivery ends (the teardown phase starts), to prefix-PHASE.*.
// During the delivery it also keeps the heap profile of the largest live
// heap seen (prefix-delivery-peak.heap.prof): a cell that ends at its last
// completion has let most copies go by then, so the end shows little of
// what set the peak RSS.
//
// The profiler must run outside the synctest bubble: its writer goroutine
// inside it would keep virtual time from advancing. So the hook, called by
// the cell inside the bubble, hands each switch to a goroutine started here
// and waits for it; errors are reported on errw and end profiling.
func phaseProfiler(prefix string, errw io.Writer) (hook func(phase string), stop func()) {
	req := make(chan string)
	ack := make(chan struct{})
	var cur *os.File
	var stopPeak func()
	end := func() {
		if cur != nil {
			pprof.StopCPUProfile()
			cur.Close()
			cur = nil
		}
		if stopPeak != nil {
			stopPeak()
			stopPeak = nil
		}
	}
	failed := false
	go func() {
		for phase := range req {
			end()
			if phase == "delivery" && !failed {
				stopPeak = peakHeap(prefix+"-delivery-peak.heap.prof", 500*time.Millisecond, errw)
			}
			if !failed {
				if err := switchProfile(prefix, phase, &cur); err != nil {
					fmt.Fprintf(errw, "profiling stopped: %v\n", err)
					failed = true
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
	stop = func() {
		close(req)
		<-ack
	}
	return hook, stop
}

// switchProfile writes the heap when the teardown starts, then starts the
// CPU profile of phase.
func switchProfile(prefix, phase string, cur **os.File) error {
	if phase == "teardown" {
		runtime.GC() // the heap profile shows the live heap as of the last GC
		if err := writeHeap(prefix + "-delivery.heap.prof"); err != nil {
			return err
		}
	}
	f, err := os.Create(prefix + "-" + phase + ".cpu.prof")
	if err != nil {
		return err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("cpu profile: %w", err)
	}
	*cur = f
	return nil
}

// peakHeap polls the live heap (as of the last GC) every poll of wall
// time and writes the heap profile to path whenever the live heap has grown
// by a twentieth over the last one written. It runs outside the bubble;
// stop ends it and waits.
func peakHeap(path string, poll time.Duration, errw io.Writer) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
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
				fmt.Fprintf(errw, "peak heap profile: metric %s unsupported\n", sample[0].Name)
				return
			}
			live := sample[0].Value.Uint64()
			if live < written+written/20 {
				continue
			}
			if err := writeHeap(path); err != nil {
				fmt.Fprintf(errw, "peak heap profile stopped: %v\n", err)
				return
			}
			written = live
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// writeHeap writes the heap profile (the live heap as of the last GC) to
// path.
func writeHeap(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("heap profile: %w", err)
	}
	return f.Close()
}
