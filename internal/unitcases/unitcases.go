// Package unitcases holds the spellings of rates and byte counts that
// every reader of one is tested against (des.ParseRate and des.ParseBytes,
// and each flag, profile knob, queue spec and study file that reads one
// through them), each with the value it reads as or the error it is
// refused with, so that one table proves every entry point reads a unit
// alike.
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

// A Size is a byte count as written, and either the bytes it reads as or
// the error it is refused with (Err, as des writes it).
type Size struct {
	In    string
	Bytes int64
	Err   string
}

// Sizes are the spellings of byte counts from 1 byte to 1 GiB, within the
// bounds of every entry point: b and KiB to GiB, in any case, read; k, kb,
// m, mb, g, gb, t, tb are refused with both of their readings.
var Sizes = []Size{
	{In: "1000", Bytes: 1000},
	{In: "100b", Bytes: 100},
	{In: "100B", Bytes: 100},
	{In: "64KiB", Bytes: 64 << 10},
	{In: "64kib", Bytes: 64 << 10},
	{In: "1.5KiB", Bytes: 1536},
	{In: " 2 MiB ", Bytes: 2 << 20},
	{In: "1GiB", Bytes: 1 << 30},
	{In: "64KB", Err: `size "64KB": ambiguous unit "KB": tc reads it as a power of 1 024, SI as a power of 1 000; write 64KiB (65536 bytes) or 64000`},
	{In: "64kb", Err: `size "64kb": ambiguous unit "kb": tc reads it as a power of 1 024, SI as a power of 1 000; write 64KiB (65536 bytes) or 64000`},
	{In: "64k", Err: `size "64k": ambiguous unit "k": tc reads it as a power of 1 024, SI as a power of 1 000; write 64KiB (65536 bytes) or 64000`},
	{In: "1.5M", Err: `size "1.5M": ambiguous unit "M": tc reads it as a power of 1 024, SI as a power of 1 000; write 1.5MiB (1572864 bytes) or 1500000`},
	{In: "1MB", Err: `size "1MB": ambiguous unit "MB": tc reads it as a power of 1 024, SI as a power of 1 000; write 1MiB (1048576 bytes) or 1000000`},
	{In: "1gb", Err: `size "1gb": ambiguous unit "gb": tc reads it as a power of 1 024, SI as a power of 1 000; write 1GiB (1073741824 bytes) or 1000000000`},
	{In: "2t", Err: `size "2t": ambiguous unit "t": tc reads it as a power of 1 024, SI as a power of 1 000; write 2TiB (2199023255552 bytes) or 2000000000000`},
	{In: "1kbit", Err: `size "1kbit": want bytes, a number with a unit b, KiB, MiB, GiB or TiB (powers of 1 024), such as 1MiB`},
	{In: "1.5b", Err: `size "1.5b": 1.5 bytes is not a whole number of bytes; give 1 or a smaller unit`},
}
