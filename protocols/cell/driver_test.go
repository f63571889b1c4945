package cell

import (
	"fmt"
	"io"
	"testing"
	"testing/synctest"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/des"
)

// TestRunNeedsWait: without the bubble's wait Run refuses to start, before
// it builds anything.
func TestRunNeedsWait(t *testing.T) {
	rec, err := Run(Config{N: 4, Degree: 2, Payload: 1})
	require.ErrorIs(t, err, ErrNoWait)
	require.ErrorContains(t, err, "synctest.Wait")
	require.Nil(t, rec)
}

// TestKeyIgnoresHowACellRuns: the keys of two cells are pinned (a change
// to them is a new KeyVersion, or a revision in KeyFields, and re-keys
// every record), and setting how a cell runs (its wait, phase
// hook, progress writer, progress interval and watch, cores,
// verification) leaves them unchanged.
func TestKeyIgnoresHowACellRuns(t *testing.T) {
	h, err := LookupProfile("harness")
	require.NoError(t, err)
	s, err := LookupProfile("shadow")
	require.NoError(t, err)
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Seed: 7, N: 20, Degree: 10, Payload: 256 << 10, Profile: h}, "36a7107981077685890b1519"},
		{Config{Arm: "atuned_32k", Seed: 3, N: 50, Degree: 12, Payload: 1 << 20, Profile: s, Transport: "tcp",
			Warmup: Warmup{Kind: "payload", Gap: des.Second}, Encoding: "snappy"}, "3ee8be1a51e7755581bfd455"},
	} {
		require.Equal(t, c.want, c.cfg.Key())
		run := c.cfg
		run.Wait = func() {}
		run.PhaseHook = func(string) {}
		run.Progress = io.Discard
		run.SetupProcs, run.Verify, run.PerNode = 2, true, true
		run.ProgressEvery, run.Watch = DefaultProgressEvery, &Watch{}
		require.Equal(t, c.want, run.Key())
	}
}

// leakCell is a small cell (ten nodes, the whole message, 64 KiB) whose
// goroutines TestNoGoroutineLeft checks on every way out of Run.
func leakCell(t *testing.T) Config {
	t.Helper()
	p, err := LookupProfile("harness")
	require.NoError(t, err)
	g := StudyGossip()
	g.D, g.Dlo, g.Dhi = 4, 3, 6
	return Config{Seed: 5, N: 10, Degree: 6, Payload: 64 << 10, Profile: p, Gossip: g, Wait: synctest.Wait}
}

// failAt is a fault hook that fails the cell as phase starts.
func failAt(phase string) func(string) error {
	return func(p string) error {
		if p == phase {
			return fmt.Errorf("injected failure at %s", p)
		}
		return nil
	}
}

// TestNoGoroutineLeft: a cell leaves no goroutine behind, whichever way
// Run returns. Each case runs in a synctest bubble, which fails the test
// when goroutines remain blocked after the bubble's function returns:
// on success; on an error as each phase starts (the hosts, the dial
// with the routers started before it, the mesh wait, a warm-up, the
// delivery once the meshes formed, the teardown); on a real dial error
// (one host closed before the dial); and on a panic in a phase, which
// Run returns as an error after tearing the cell down. A gossipsub setting the library
// refuses (D 2, Dlo 1, Dhi 3) never reaches the routers: Run refuses it
// first.
func TestNoGoroutineLeft(t *testing.T) {
	for _, c := range []struct {
		name   string
		mutate func(*Config)
		want   string // a part of Run's error; "": none
	}{
		{"success", nil, ""},
		{"error-after-routers-start", func(c *Config) {
			require.Equal(t, RouterBeforeDial, c.Profile.RouterStart)
			c.fault = failAt("dial")
		}, "injected failure at dial"},
		{"error-at-hosts", func(c *Config) { c.fault = failAt("hosts") }, "injected failure at hosts"},
		{"error-at-mesh", func(c *Config) { c.fault = failAt("mesh") }, "injected failure at mesh"},
		{"error-in-warmup", func(c *Config) {
			c.Warmup = Warmup{Kind: "streams", Stream: 16 << 10}
			c.fault = failAt("warmup")
		}, "injected failure at warmup"},
		{"error-once-meshes-formed", func(c *Config) { c.fault = failAt("delivery") }, "injected failure at delivery"},
		{"error-in-teardown-phase-start", func(c *Config) { c.fault = failAt("teardown") }, "injected failure at teardown"},
		{"dial-error", func(c *Config) {
			c.onHosts = func(hs []host.Host) { require.NoError(t, hs[len(hs)-1].Close()) }
		}, "cell: dial: "},
		{"panic-in-phase", func(c *Config) {
			c.PhaseHook = func(p string) {
				if p == "mesh" {
					panic("hook exploded")
				}
			}
		}, "cell: panic: hook exploded"},
		{"gossip-refused", func(c *Config) { c.Gossip.D, c.Gossip.Dlo, c.Gossip.Dhi = 2, 1, 3 }, "Dscore"},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := leakCell(t)
				if c.mutate != nil {
					c.mutate(&cfg)
				}
				rec, err := Run(cfg)
				if c.want == "" {
					require.NoError(t, err)
					require.Equal(t, 9, rec.Completed)
					return
				}
				require.ErrorContains(t, err, c.want)
				require.Nil(t, rec)
			})
		})
	}
}

// TestTeardownTwice: the teardown undoes the phases run so far (here up
// to the dial: hosts, routers, connections) and does it once: a second
// call returns nil and touches nothing (the model's clock is stopped
// once), and the bubble ends without a goroutine left.
func TestTeardownTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := leakCell(t)
		cfg.Defaults()
		d := newDriver(cfg)
		for _, step := range []func() error{d.content, d.network, d.hosts, d.dial} {
			require.NoError(t, step())
		}
		require.NotEmpty(t, d.nodes[0].host.Network().Conns())
		require.NoError(t, d.teardown())
		require.NoError(t, d.teardown())
		for i, nd := range d.nodes {
			require.Emptyf(t, nd.host.Network().Conns(), "node %d's connections after the teardown", i)
		}
	})
}
