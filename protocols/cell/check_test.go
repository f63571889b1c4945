package cell

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/protocols/partial"
	"github.com/uplinksim/uplink/transports/tcp"
)

// smallConfig is a valid 12-node cell of the harness profile.
func smallConfig(t *testing.T) Config {
	t.Helper()
	p, err := LookupProfile("harness")
	require.NoError(t, err)
	return Config{N: 12, Degree: 4, Payload: 64 << 10, Seed: 7, Profile: p}
}

// TestCheck: Check refuses, before any host is built, every setting Run
// would refuse later or silently ignore, each with its reason.
func TestCheck(t *testing.T) {
	require.NoError(t, smallConfig(t).Check())
	cases := []struct {
		name string
		edit func(c *Config)
		want string
	}{
		{"transport", func(c *Config) { c.Transport = "sctp" }, `transport "sctp"`},
		{"tcp knob on quic", func(c *Config) { c.Profile.CC = "newreno" }, "knob [cc=newreno] applies to --transport tcp"},
		{"tcp preset on quic", func(c *Config) { c.Profile.TCP = "shadow" }, "knob [tcp=shadow]"},
		{"withheld unit", func(c *Config) { c.Arm, c.Withhold = "atuned", []int{99} }, "withheld unit 99"},
		{"B withheld", func(c *Config) { c.Arm, c.Withhold = "bfixed", []int{0} }, "withholding parts of variant B"},
		{"B rules off on C", func(c *Config) { c.Arm, c.BRulesOff = "c32", partial.RulesOff{ClaimBudget: true} }, "variant B's rules switched off (claim-budget) on an arm without its claim ledger"},
		{"B timeout on A", func(c *Config) { c.Arm, c.BTimeout = "atuned", 800*des.Millisecond }, "variant B's request timeout (800ms, fixed false) on an arm without one"},
		{"B payload warm-up", func(c *Config) { c.Arm, c.Warmup = "bfixed", Warmup{Kind: "payload"} }, "a payload warm-up needs"},
		{"node outside", func(c *Config) {
			c.Qdiscs = &NodeQdiscs{Uplink: &QdiscMap{Default: "fifo", Nodes: map[string]string{"12": "pie"}}}
		}, `node "12" is not an index in [0, 12)`},
		{"node spec", func(c *Config) {
			c.Qdiscs = &NodeQdiscs{Downlink: &QdiscMap{Default: "fifo", Nodes: map[string]string{"3": "wred"}}}
		}, `downlink-qdisc: queues: spec "wred"`},
		{"host qdisc", func(c *Config) { c.Profile.HostQdisc = "pie:target=x" }, "host-qdisc"},
		{"window", func(c *Config) { c.Window = des.MaxVirtual + 1 }, "each at most 1h0m0s"},
		{"settle NaN", func(c *Config) { c.Profile.Settle = math.NaN() }, "knob settle=NaN"},
		{"settle", func(c *Config) { c.Profile.Settle = 1e10 }, "knob settle=1e+10: want 0 to 3600 seconds"},
		{"nodes", func(c *Config) { c.N = des.MaxNodes + 1 }, "100001 nodes: at most 100000"},
		{"payload", func(c *Config) { c.Payload = MaxPayload + 1 }, "at most 1 GiB"},
		{"background", func(c *Config) { c.Background = Background{Size: 100, Interval: des.Microsecond} }, "an interval from 1ms"},
		{"degree", func(c *Config) { c.Degree = 12 }, "topology"},
		{"recv slots", func(c *Config) { c.Profile.RecvSlots = -1 }, "knob recv-slots=-1"},
		{"sndbuf over sockbuf", func(c *Config) { c.Profile.SockBufMax, c.Profile.SndBufMax = 212992, 212993 },
			"knob sndbuf-max=212993 is above sockbuf-max=212992, which caps send buffer requests first: give sndbuf-max at most 212992, or sockbuf-max=0 (no cap)"},
	}
	for _, c := range cases {
		cfg := smallConfig(t)
		c.edit(&cfg)
		require.ErrorContains(t, cfg.Check(), c.want, c.name)
	}
	// A send buffer cap at or under the socket buffer cap, or with no
	// socket buffer cap, is a cap that binds.
	for _, b := range [][2]int{{212992, 212992}, {212992, 32768}, {0, 8000000}} {
		cfg := smallConfig(t)
		cfg.Profile.SockBufMax, cfg.Profile.SndBufMax = b[0], b[1]
		require.NoError(t, cfg.Check(), "sockbuf-max %d, sndbuf-max %d", b[0], b[1])
	}
}

// TestSockBufKnobs: SetKnobs refuses sndbuf-max above sockbuf-max in
// either order of the two, and over a profile's own sockbuf-max.
func TestSockBufKnobs(t *testing.T) {
	for _, kvs := range [][]string{
		{"sndbuf-max=8000000", "sockbuf-max=4000000"},
		{"sockbuf-max=4000000", "sndbuf-max=8000000"},
	} {
		p, err := LookupProfile("harness")
		require.NoError(t, err)
		require.EqualError(t, p.SetKnobs(kvs), "knob sndbuf-max=8000000 is above sockbuf-max=4000000, which caps send buffer requests first: give sndbuf-max at most 4000000, or sockbuf-max=0 (no cap)")
	}
	k, err := LookupProfile("kernel")
	require.NoError(t, err)
	require.ErrorContains(t, k.SetKnobs([]string{"sndbuf-max=300000"}), "knob sndbuf-max=300000 is above sockbuf-max=212992")
	require.NoError(t, k.SetKnobs([]string{"sndbuf-max=300000", "sockbuf-max=0"}))
	require.NoError(t, k.SetKnobs([]string{"sockbuf-max=212992", "sndbuf-max=32768"}))
}

// TestEstimateMemory: the estimate is within 25 % of the peak RSS
// measured for whole-message cells at degree 70 (BENCHMARKS.md: 100, 250
// and 500 nodes, 2.32, 5.73 and 13.13 GiB), and within 5 % at 500.
func TestEstimateMemory(t *testing.T) {
	for _, m := range []struct {
		n   int
		gib float64
	}{{100, 2.32}, {250, 5.73}, {500, 13.13}} {
		c := Config{N: m.n, Degree: 70, Payload: 1 << 20}
		got := float64(c.EstimateMemory()) / (1 << 30)
		require.InEpsilon(t, m.gib, got, 0.25, "%d nodes: estimate %.2f GiB, measured %.2f", m.n, got, m.gib)
	}
	c := Config{N: 500, Degree: 70, Payload: 1 << 20}
	require.InEpsilon(t, 13.13, float64(c.EstimateMemory())/(1<<30), 0.05)
}

// TestTCPSysctlKnobs: mtu, tcp-rmem and tcp-wmem reach the TCP model (MSS
// = MTU − 40, the buffer triples) and the network; a TCP knob on QUIC, a
// buffer below the MSS and an MTU outside [576, 65535] are refused
// before any host is built.
func TestTCPSysctlKnobs(t *testing.T) {
	p, err := LookupProfile("kernel")
	require.NoError(t, err)
	require.NoError(t, p.SetKnobs([]string{"mtu=65535", "tcp-rmem=4096 131072 8388608", "tcp-wmem=8192,16384,4194304"}))
	c, err := p.tcpConfig(1)
	require.NoError(t, err)
	require.Equal(t, 65495, c.MSS)
	require.Equal(t, tcp.BufferSizes{Min: 4096, Default: 131072, Max: 8388608}, c.RecvBuffer)
	require.Equal(t, tcp.BufferSizes{Min: 8192, Default: 16384, Max: 4194304}, c.SendBuffer)
	require.Equal(t, "4096,131072,8388608", p.Knobs()["tcp-rmem"])
	def, err := LookupProfile("kernel")
	require.NoError(t, err)
	require.Equal(t, "4096,131072,6291456", def.Knobs()["tcp-rmem"], "Linux's default tcp_rmem")
	require.ErrorContains(t, p.SetKnobs([]string{"mtu=500"}), "want 576 to 65535")

	cfg := smallConfig(t)
	cfg.Profile.TCPRmem = "4096,131072,6291456"
	require.ErrorContains(t, cfg.Check(), "knob [tcp-rmem=4096,131072,6291456] applies to --transport tcp")
	cfg.Transport = "tcp"
	require.NoError(t, cfg.Check())
	cfg.Profile.MTU, cfg.Profile.TCPRmem = 65535, "4096,16384,32768"
	require.ErrorContains(t, cfg.Check(), "Max >= MSS 65495")
}
