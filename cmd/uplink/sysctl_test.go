package main

import "testing"

// TestBulkSysctlErrors: --mtu, --tcp-rmem, --tcp-wmem, --rmem-max and
// --wmem-max refuse what they cannot take, naming the limit.
func TestBulkSysctlErrors(t *testing.T) {
	checkUsageErrors(t, []usageCase{
		{[]string{"bulk", "--mtu", "65536"}, `--mtu: "65536": want a whole number from 576 to 65535`},
		{[]string{"bulk", "--mtu", "500"}, "from 576 to 65535"},
		{[]string{"bulk", "--transport", "tcp", "--tcp-rmem", "4096 131072"}, `--tcp-rmem: "4096 131072": want three byte counts, min default max`},
		{[]string{"bulk", "--transport", "tcp", "--tcp-wmem", "4096 65536 16384"}, "--tcp-wmem: \"4096 65536 16384\": default 65536 above max 16384"},
		{[]string{"bulk", "--transport", "tcp", "--tcp-rmem", "4096 131072 2GiB"}, "max: size \"2GiB\": want 1 byte to 1 GiB"},
		{[]string{"bulk", "--transport", "tcp", "--mtu", "65535", "--tcp-rmem", "4096 16384 32768"}, "max 32768 below the MSS 65495"},
		{[]string{"bulk", "--tcp-rmem", "4096 131072 6291456"}, "--tcp-rmem applies to TCP"},
		{[]string{"bulk", "--rmem-max", "0"}, `--rmem-max: size "0": want 1 byte to 1 GiB`},
		{[]string{"bulk", "--rmem-max", "212992", "--wmem-max", "425984"}, "--wmem-max 425984 above --rmem-max 212992"},
	})
}
