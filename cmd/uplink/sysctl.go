package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/protocols/bulk"
	"github.com/uplinksim/uplink/transports/tcp"
)

// Linux's MTU bounds as the network model carries them: the IPv4 minimum
// (576) and the largest IPv4 datagram (65 535; loopback's MTU of 65 536
// cannot be filled by IPv4).
const (
	minMTU = 576
	maxMTU = 65535
)

// linkFlags are the segment size and socket buffer sysctls of uplink bulk.
type linkFlags struct {
	mtu                int
	tcpRmem, tcpWmem   string
	rmemMax, wmemMax   string
	rmemMaxN, wmemMaxN int
}

func addLinkFlags(fs *pflag.FlagSet) *linkFlags {
	f := &linkFlags{}
	fs.IntVar(&f.mtu, "mtu", 1500, "MTU of every link in bytes (576 to 65535; Linux loopback: 65536, carried as 65535): TCP's MSS is MTU − 40; QUIC keeps quic-go's packet sizes")
	fs.StringVar(&f.tcpRmem, "tcp-rmem", "", `TCP receive buffer sysctl net.ipv4.tcp_rmem, "min default max" in bytes (default: the --tcp model's; Linux's "4096 131072 6291456")`)
	fs.StringVar(&f.tcpWmem, "tcp-wmem", "", `TCP send buffer sysctl net.ipv4.tcp_wmem, "min default max" in bytes (default: the --tcp model's; Linux's "4096 16384 4194304")`)
	fs.StringVar(&f.rmemMax, "rmem-max", "", "net.core.rmem_max in bytes: caps UDP receive (and send) buffer requests, and sets TCP's window scale with tcp_rmem's max (default: no UDP cap, TCP 212992, Linux's)")
	fs.StringVar(&f.wmemMax, "wmem-max", "", "net.core.wmem_max in bytes: caps UDP send buffer requests, at most --rmem-max (default: no cap; Linux's is 212992)")
	return f
}

// apply checks the flags and sets them in cfg, whose TCP model (if any) is
// already chosen.
func (f *linkFlags) apply(fs *pflag.FlagSet, cfg *bulk.Config) error {
	if _, err := des.CheckInt(fmt.Sprint(f.mtu), int64(f.mtu), minMTU, maxMTU); err != nil {
		return flagErr("mtu", err)
	}
	if f.mtu != 1500 {
		cfg.MTU = f.mtu
	}
	for _, c := range []struct {
		name string
		v    string
		n    *int
	}{{"rmem-max", f.rmemMax, &f.rmemMaxN}, {"wmem-max", f.wmemMax, &f.wmemMaxN}} {
		if c.v == "" {
			continue
		}
		b, err := des.ParseBytes(c.v, 1, des.MaxSockBuf)
		if err != nil {
			return flagErr(c.name, err)
		}
		*c.n = int(b)
	}
	if f.wmemMaxN > 0 && f.rmemMaxN > 0 && f.wmemMaxN > f.rmemMaxN {
		return usageError{fmt.Errorf("--wmem-max %d above --rmem-max %d: the network model caps UDP send requests by both, so wmem_max above rmem_max cannot be modelled", f.wmemMaxN, f.rmemMaxN)}
	}
	cfg.SockBufMax = f.rmemMaxN
	if f.wmemMaxN > 0 && f.wmemMaxN != f.rmemMaxN {
		cfg.SndBufMax = f.wmemMaxN
	}
	if cfg.TCP == nil {
		for _, name := range []string{"tcp-rmem", "tcp-wmem"} {
			if fs.Changed(name) {
				return usageError{fmt.Errorf("--%s applies to TCP: add --transport tcp, or drop --%s for QUIC", name, name)}
			}
		}
		return nil
	}
	tc := cfg.TCP
	tc.MSS = f.mtu - 40
	if f.rmemMaxN > 0 {
		tc.RmemMax = f.rmemMaxN
	}
	for _, c := range []struct {
		name string
		v    string
		b    *tcp.BufferSizes
	}{{"tcp-rmem", f.tcpRmem, &tc.RecvBuffer}, {"tcp-wmem", f.tcpWmem, &tc.SendBuffer}} {
		if c.v == "" {
			continue
		}
		t, err := des.ParseBufferTriple(c.v)
		if err != nil {
			return flagErr(c.name, err)
		}
		if t[2] < int64(tc.MSS) {
			return usageError{fmt.Errorf("--%s %q: max %d below the MSS %d (--mtu %d − 40): a buffer must hold a segment", c.name, c.v, t[2], tc.MSS, f.mtu)}
		}
		*c.b = tcp.BufferSizes{Min: int(t[0]), Default: int(t[1]), Max: int(t[2])}
	}
	return nil
}
