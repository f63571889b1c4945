// Command bubbleprog exercises bubble.Run from a plain binary for the
// tests of package bubble: it runs one of a few tiny simulations named by its
// argument and prints what came back.
package main

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/uplinksim/uplink/cmd/uplink/internal/bubble"
	"github.com/uplinksim/uplink/des"
)

func main() {
	out := os.Stdout
	var err error
	switch os.Args[1] {
	case "sleep":
		// Virtual time passes in the bubble and not outside it.
		start := time.Now()
		var virt time.Duration
		err = bubble.Run(func(*testing.T) error {
			t0 := time.Now()
			time.Sleep(time.Hour)
			virt = time.Since(t0)
			return nil
		})
		fmt.Fprintf(out, "virtual %v, wall under a minute %v\n", virt, time.Since(start) < time.Minute)
	case "error":
		err = bubble.Run(func(*testing.T) error { return errors.New("boom inside") })
	case "panic":
		err = bubble.Run(func(*testing.T) error { panic("kaboom inside") })
	case "leak":
		err = bubble.Run(func(*testing.T) error {
			ch := make(chan int)
			go func() { <-ch }()
			return nil
		})
	case "live":
		// A model event and a real timer on one clock.
		err = bubble.Run(func(*testing.T) error {
			sim := des.NewSim()
			l := des.NewLive(sim)
			l.Start()
			defer l.Stop()
			fired := make(chan des.Time, 1)
			l.Lock()
			sim.Schedule(sim.NewTimer(func(now des.Time) { fired <- l.Now() }), 250*des.Millisecond)
			l.Unlock()
			fmt.Fprintf(out, "model event seen at %v\n", <-fired)
			return nil
		})
	}
	fmt.Fprintf(out, "err: %v\n", err)
}
