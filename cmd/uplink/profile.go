package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
)

// phaseProfiler writes one CPU profile per phase of a cell, and the heap
// when the delivery ends (the teardown phase starts), to prefix-PHASE.*.
//
// The profiler must run outside the synctest bubble: its writer goroutine
// inside it would keep virtual time from advancing. So the hook, called by
// the cell inside the bubble, hands each switch to a goroutine started here
// and waits for it; errors are reported on errw and end profiling.
func phaseProfiler(prefix string, errw io.Writer) (hook func(phase string), stop func()) {
	req := make(chan string)
	ack := make(chan struct{})
	var cur *os.File
	end := func() {
		if cur != nil {
			pprof.StopCPUProfile()
			cur.Close()
			cur = nil
		}
	}
	failed := false
	go func() {
		for phase := range req {
			end()
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
		f, err := os.Create(prefix + "-delivery.heap.prof")
		if err != nil {
			return err
		}
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			f.Close()
			return fmt.Errorf("heap profile: %w", err)
		}
		if err := f.Close(); err != nil {
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
