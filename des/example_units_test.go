package des_test

import (
	"errors"
	"fmt"

	"github.com/uplinksim/uplink/des"
)

// A rate is in bit/s with tc's bit units; a unit that tc reads as bytes
// per second and others as bits per second is refused with both readings.
func ExampleParseRate() {
	r, err := des.ParseRate("20Mbit/s")
	fmt.Println(r, err)
	_, err = des.ParseRate("20MBps")
	fmt.Println(errors.Is(err, des.ErrAmbiguousUnit))
	fmt.Println(err)
	// Output:
	// 20000000 <nil>
	// true
	// rate "20MBps": ambiguous unit "MBps": tc reads it as bytes per second, most other writing as bits per second; write 20Mbit for bits per second or 160Mbit for bytes per second
}
