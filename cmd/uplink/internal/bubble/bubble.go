// Package bubble is the one place uplink reaches into the testing
// package's internals, to enter a testing/synctest bubble from a plain
// binary: testing.MainStart is outside the Go 1 compatibility promise and
// may change between Go releases (a compile error here, quick to fix; the
// test beside it runs it). It also swaps os.Stdout while the testing
// framework runs, and with CryptoSeed replaces crypto/rand's reader for the
// run: the process-global state uplink touches, all of it here. Only cmd imports
// it.
package bubble

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"runtime/debug"
	"sync"
	"testing"
	"testing/cryptotest"
	"testing/synctest"
	"time"
)

// Run runs fn inside a testing/synctest bubble from a plain binary
// (it also works under go test, where it runs a nested test framework; use
// synctest.Test there instead). fn runs in the bubble's first goroutine with
// a *testing.T it may hand to testing helpers; every goroutine fn starts must
// have ended when fn returns. An error or panic inside fn comes back as an
// ordinary error. Run must not be called concurrently.
//
// os.Stdout is silenced while the framework runs (it would print "PASS"):
// capture os.Stdout before the call and hand that writer to fn.
func Run(fn func(t *testing.T) error, opts ...Option) error {
	var fnErr error
	ran := false
	err := start(func(t *testing.T) {
		ran = true
		fnErr = inBubble(t, fn)
	}, opts)
	return result(err, fnErr, ran)
}

// Enter runs body(0), ..., body(k-1) at once, each inside a synctest
// bubble of its own, and returns their errors joined once every one has
// returned; a panic inside a body comes back as its error.
type Enter func(k int, body func(part int) error) error

// RunSplit runs fn from a plain binary outside any bubble, with an Enter
// that runs several bubbles at once (the partitions of one simulation):
// fn prepares what the bubbles share (channels made outside every bubble)
// and enters them. Run's rules apply to each bubble and to fn.
func RunSplit(fn func(enter Enter) error, opts ...Option) error {
	var fnErr error
	ran := false
	err := start(func(t *testing.T) {
		ran = true
		defer func() {
			if r := recover(); r != nil {
				fnErr = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
			}
		}()
		fnErr = fn(func(k int, body func(part int) error) error {
			errs := make([]error, k)
			var wg sync.WaitGroup
			for part := range k {
				wg.Go(func() {
					t.Run(fmt.Sprintf("partition-%d", part), func(t *testing.T) {
						errs[part] = inBubble(t, func(*testing.T) error { return body(part) })
					})
				})
			}
			wg.Wait()
			return errors.Join(errs...)
		})
	}, opts)
	return result(err, fnErr, ran)
}

// inBubble runs fn in a synctest bubble of t's and returns its error, or
// its panic as one.
func inBubble(t *testing.T, fn func(t *testing.T) error) (fnErr error) {
	// synctest panics on this goroutine when fn returns while goroutines
	// it started are still blocked; report that as an error instead of
	// crashing (the stuck goroutines stay parked).
	defer func() {
		if r := recover(); r != nil && fnErr == nil {
			fnErr = fmt.Errorf("bubble: %v (something started in the simulation was not closed)", r)
		}
	}()
	synctest.Test(t, func(t *testing.T) {
		defer func() {
			if r := recover(); r != nil {
				fnErr = fmt.Errorf("panic inside the simulation: %v\n%s", r, debug.Stack())
			}
		}()
		fnErr = fn(t)
	})
	return fnErr
}

// result is what Run and RunSplit return: the simulation's error first,
// then the framework's.
func result(err, fnErr error, ran bool) error {
	switch {
	case fnErr != nil:
		return fnErr
	case err != nil:
		return err
	case !ran:
		return errors.New("bubble: the simulation never started (testing framework refused to run it)")
	}
	return nil
}

// start runs f as the one test of a nested testing framework, with the
// options, and returns the framework's own error.
func start(f func(t *testing.T), opts []Option) error {
	var o bubbleOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.cryptoSeed != nil && !testing.Testing() {
		return errors.New("bubble: deterministic crypto/rand needs a binary built with -ldflags=-X=testing.testBinary=1 (testing/cryptotest refuses to run otherwise); see README")
	}
	test := testing.InternalTest{
		Name: "UplinkBubble",
		F: func(t *testing.T) {
			if o.cryptoSeed != nil {
				cryptotest.SetGlobalRandom(t, *o.cryptoSeed)
			}
			f(t)
		},
	}
	// The testing framework parses the process-wide flag set on Run; hand it
	// an empty command line so our own flags never reach it.
	if !flag.Parsed() {
		if perr := flag.CommandLine.Parse(nil); perr != nil {
			return fmt.Errorf("bubble: preparing the testing framework: %w", perr)
		}
	}
	m := testing.MainStart(bubbleDeps{}, []testing.InternalTest{test}, nil, nil, nil)
	restore, ferr := neutralTestFlags()
	defer restore()
	if ferr != nil {
		return fmt.Errorf("bubble: preparing the testing framework: %w", ferr)
	}
	realStdout := os.Stdout
	devnull, derr := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if derr == nil {
		os.Stdout = devnull
		defer func() {
			os.Stdout = realStdout
			devnull.Close()
		}()
	}
	if code := m.Run(); code != 0 {
		return fmt.Errorf("bubble: the simulation failed (exit code %d); see the messages above", code)
	}
	return nil
}

// nestedFlags are the testing framework's flags that would make the run
// Run starts do something besides running its one test: filter it out,
// list instead of running, repeat it, run benchmarks, or open, write and close the
// enclosing test binary's log, profile and coverage files (its
// -test.testlogfile is shared process-wide, and a nested run would close
// it under the outer one). Run sets them so for its run and puts them
// back after; in a plain binary they are all at their defaults.
var nestedFlags = map[string]string{
	"test.run": "", "test.skip": "", "test.list": "", "test.bench": "", "test.count": "1",
	"test.testlogfile": "", "test.cpuprofile": "", "test.memprofile": "",
	"test.blockprofile": "", "test.mutexprofile": "", "test.trace": "",
	"test.coverprofile": "", "test.fuzz": "",
}

// neutralTestFlags sets nestedFlags and returns the function that puts
// the previous values back.
func neutralTestFlags() (restore func(), err error) {
	var undo []func()
	restore = func() {
		for _, u := range undo {
			u()
		}
	}
	for name, v := range nestedFlags {
		f := flag.Lookup(name)
		if f == nil || f.Value.String() == v {
			continue
		}
		old := f.Value.String()
		if err := f.Value.Set(v); err != nil {
			return restore, fmt.Errorf("-%s=%q: %w", name, v, err)
		}
		undo = append(undo, func() { f.Value.Set(old) })
	}
	return restore, nil
}

// Option configures Run.
type Option func(*bubbleOptions)

type bubbleOptions struct {
	cryptoSeed *uint64
}

// CryptoSeed makes crypto/rand (keys, nonces, connection ids) a
// deterministic stream from seed for the run, with
// testing/cryptotest.SetGlobalRandom. Together with GOMAXPROCS=1 this makes
// a quic-go transfer bit-for-bit reproducible. The testing package only
// allows it in a binary built with -ldflags=-X=testing.testBinary=1.
func CryptoSeed(seed uint64) Option {
	return func(o *bubbleOptions) { o.cryptoSeed = &seed }
}

// bubbleDeps implements the testing package's unexported testDeps interface
// with no-op methods: no profiling, fuzzing or coverage.
type bubbleDeps struct{}

func (bubbleDeps) ImportPath() string { return "github.com/uplinksim/uplink" }
func (bubbleDeps) ModulePath() string { return "github.com/uplinksim/uplink" }
func (bubbleDeps) MatchString(pat, str string) (bool, error) {
	return regexp.MatchString(pat, str)
}
func (bubbleDeps) SetPanicOnExit0(bool)                        {}
func (bubbleDeps) StartCPUProfile(io.Writer) error             { return nil }
func (bubbleDeps) StopCPUProfile()                             {}
func (bubbleDeps) StartTestLog(io.Writer)                      {}
func (bubbleDeps) StopTestLog() error                          { return nil }
func (bubbleDeps) WriteProfileTo(string, io.Writer, int) error { return nil }
func (bubbleDeps) CoordinateFuzzing(time.Duration, int64, time.Duration, int64, int, []corpusEntry, []reflect.Type, string, string) error {
	return errors.New("bubble: fuzzing is not supported")
}
func (bubbleDeps) RunFuzzWorker(func(corpusEntry) error) error {
	return errors.New("bubble: fuzzing is not supported")
}
func (bubbleDeps) ReadCorpus(string, []reflect.Type) ([]corpusEntry, error) { return nil, nil }
func (bubbleDeps) CheckCorpus([]any, []reflect.Type) error                  { return nil }
func (bubbleDeps) ResetCoverage()                                           {}
func (bubbleDeps) SnapshotCoverage()                                        {}
func (bubbleDeps) InitRuntimeCoverage() (string, func(string, string) (string, error), func() float64) {
	return "", nil, nil
}

// corpusEntry mirrors the testing package's fuzz corpus entry, an alias of
// an anonymous struct, so the interface can be implemented from outside.
type corpusEntry = struct {
	Parent     string
	Path       string
	Data       []byte
	Values     []any
	Generation int
	IsSeed     bool
}
