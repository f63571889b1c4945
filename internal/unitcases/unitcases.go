// Package unitcases holds the spellings of rates that every reader of a
// rate is tested against (des.ParseRate, and each flag, profile knob and
// study file that reads one through it), each with the value it reads as
// or the error it is refused with, so that one table proves every entry
// point reads a unit alike.
package unitcases

// A Rate is a rate as written, and either the bit/s it reads as or the
// error it is refused with (Err, as des writes it; the entry point
// prefixes its flag or knob).
type Rate struct {
	In  string
	Bps int64
	Err string
}

// Rates are the spellings of rates with a unit: tc's bit units, in any
// case, read; a unit naming bytes or spelled bps is refused with both of
// its readings.
var Rates = []Rate{
	{In: "20Mbit", Bps: 20_000_000},
	{In: "20mbit", Bps: 20_000_000},
	{In: "20MBIT", Bps: 20_000_000},
	{In: "20Mbit/s", Bps: 20_000_000},
	{In: " 20 Mbit/s ", Bps: 20_000_000},
	{In: "1.5Gbit", Bps: 1_500_000_000},
	{In: "100kbit", Bps: 100_000},
	{In: "2000000bit", Bps: 2_000_000},
	{In: "1Tbit", Bps: 1_000_000_000_000},
	{In: "2Mibit", Bps: 2 << 20},
	{In: "8kibit", Bps: 8 << 10},
	{In: "20MBps", Err: `rate "20MBps": ambiguous unit "MBps": tc reads it as bytes per second, most other writing as bits per second; write 20Mbit for bits per second or 160Mbit for bytes per second`},
	{In: "20mbps", Err: `rate "20mbps": ambiguous unit "mbps": tc reads it as bytes per second, most other writing as bits per second; write 20Mbit for bits per second or 160Mbit for bytes per second`},
	{In: "20Mbps", Err: `rate "20Mbps": ambiguous unit "Mbps": tc reads it as bytes per second, most other writing as bits per second; write 20Mbit for bits per second or 160Mbit for bytes per second`},
	{In: "20MB/s", Err: `rate "20MB/s": ambiguous unit "MB/s": tc reads it as bytes per second, most other writing as bits per second; write 20Mbit for bits per second or 160Mbit for bytes per second`},
	{In: "20Mb/s", Err: `rate "20Mb/s": ambiguous unit "Mb/s": tc reads it as bytes per second, most other writing as bits per second; write 20Mbit for bits per second or 160Mbit for bytes per second`},
	{In: "1.5Gbps", Err: `rate "1.5Gbps": ambiguous unit "Gbps": tc reads it as bytes per second, most other writing as bits per second; write 1.5Gbit for bits per second or 12Gbit for bytes per second`},
	{In: "100kb", Err: `rate "100kb": ambiguous unit "kb": tc reads it as bytes per second, most other writing as bits per second; write 100kbit for bits per second or 800kbit for bytes per second`},
	{In: "2MiB/s", Err: `rate "2MiB/s": ambiguous unit "MiB/s": tc reads it as bytes per second, most other writing as bits per second; write 2Mibit for bits per second or 16Mibit for bytes per second`},
	{In: "2000000bps", Err: `rate "2000000bps": ambiguous unit "bps": tc reads it as bytes per second, most other writing as bits per second; write 2000000bit for bits per second or 16000000bit for bytes per second`},
	{In: "20m", Err: `rate "20m": want bit/s, a number with a unit bit, kbit, Mbit, Gbit or Tbit (Kibit to Tibit: powers of 1 024), optionally /s, such as 50Mbit or 1Gbit`},
	{In: "20Mbit/h", Err: `rate "20Mbit/h": want bit/s, a number with a unit bit, kbit, Mbit, Gbit or Tbit (Kibit to Tibit: powers of 1 024), optionally /s, such as 50Mbit or 1Gbit`},
	{In: "1kbit", Err: `rate "1kbit": want 8 kbit/s to 10 Tbit/s`},
}
