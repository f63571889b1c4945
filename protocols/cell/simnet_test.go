package cell

import (
	"encoding/json"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
)

// simnetCell is a 20-node whole-message cell of 256 KiB at degree 10 on
// the harness profile, the small gossipsub settings of TestProfiles.
func simnetCell(backend string) Config {
	p, _ := LookupProfile("harness")
	g := StudyGossip()
	g.D, g.Dlo, g.Dhi = 4, 3, 6
	return Config{Seed: 7, N: 20, Degree: 10, Payload: 256 << 10, Transport: "quic",
		Profile: p, Gossip: g, Backend: backend, Wait: synctest.Wait}
}

// TestCellOnSimnet: a 20-node cell on simnet (github.com/marcopolo/simnet
// v0.0.7, the study's harness network) completes at every receiver; its
// record names the backend and what simnet does not model, and carries
// simnet's endpoint counts and its links' packet and drop counts. The
// same cell on uplink's model, the harness profile, is logged beside it.
func TestCellOnSimnet(t *testing.T) {
	recs := map[string]*Record{}
	for _, backend := range []string{BackendSimnet, ""} {
		synctest.Test(t, func(t *testing.T) {
			rec, err := Run(simnetCell(backend))
			require.NoError(t, err)
			recs[backend] = rec
		})
	}
	sn, up := recs[BackendSimnet], recs[""]
	require.Equal(t, 19, sn.Total)
	require.Equal(t, 19, sn.Completed, "receivers complete on simnet")
	require.Equal(t, 19, up.Completed, "receivers complete on uplink's model")
	require.Equal(t, BackendSimnet, sn.Backend)
	require.Equal(t, SimnetNotModelled, sn.NotModelled)
	require.Empty(t, up.Backend)
	require.Empty(t, up.NotModelled)
	require.Equal(t, CountsAtLastCompletion, sn.CountsAt)
	require.Positive(t, sn.SimPackets)
	require.GreaterOrEqual(t, sn.PubBytes, uint64(256<<10))
	require.GreaterOrEqual(t, sn.PubWireBytes, uint64(256<<10), "the publisher's endpoint wrote one payload at least")
	for _, dir := range []string{"uplink", "downlink"} {
		q := sn.Queues[dir]
		require.Positive(t, q.Dequeued, "simnet's %s counts", dir)
		require.GreaterOrEqual(t, q.Enqueued, q.Dequeued+q.Drops["aqm"], "simnet's %s: in ≥ out + dropped", dir)
		t.Logf("simnet %s: %d enqueued, %d dequeued, %d CoDel drops", dir, q.Enqueued, q.Dequeued, q.Drops["aqm"])
	}
	require.LessOrEqual(t, sn.Drops["queue"], sn.Queues["uplink"].Drops["aqm"]+sn.Queues["downlink"].Drops["aqm"], "drops from the publish, queue drops from the network's start")
	require.Zero(t, sn.Drops["noport"])
	require.NotEqual(t, up.Key, sn.Key)
	for _, r := range []struct {
		name string
		rec  *Record
	}{{"simnet", sn}, {"uplink harness", up}} {
		rec := r.rec
		t.Logf("%-14s p50 %.3f p90 %.3f last %.3f s, dups %d, publisher %d bytes queued / %d on the wire, %d packets, mesh stable %v, published at %.2f s, wall %.1f s",
			r.name, *rec.P50S, *rec.P90S, *rec.LastS, rec.Dups, rec.PubBytes, rec.PubWireBytes, rec.SimPackets, rec.MeshStable, rec.PublishAtS, rec.WallS)
	}
}

// TestSimnetBackendCheck: Check refuses a simnet cell whose transport,
// queue assignment, setup quantum or network knobs simnet does not model,
// and accepts the harness profile's other knobs; an empty Backend leaves
// the key as it was.
func TestSimnetBackendCheck(t *testing.T) {
	require.NoError(t, simnetCell(BackendSimnet).Check())
	for name, edit := range map[string]func(*Config){
		"backend":  func(c *Config) { c.Backend = "ns3" },
		"tcp":      func(c *Config) { c.Transport = "tcp" },
		"quantum":  func(c *Config) { c.SetupQuantum = 1e6 },
		"qdiscs":   func(c *Config) { c.Qdiscs = &NodeQdiscs{} },
		"up qdisc": func(c *Config) { c.Profile.UpQdisc = "pie" },
		"shaper":   func(c *Config) { c.Profile.Shaper = "shadow" },
		"sends":    func(c *Config) { c.Profile.SendMode = "block" },
		"slots":    func(c *Config) { c.Profile.RecvSlots = 0 },
	} {
		c := simnetCell(BackendSimnet)
		edit(&c)
		require.Error(t, c.Check(), name)
	}
	ok := simnetCell(BackendSimnet)
	require.NoError(t, ok.Profile.Set("mesh-wait", "fixed"))
	require.NoError(t, ok.Check(), "a driver knob is not a network knob")

	// Key hashes Config's JSON, which holds Backend only when it is set.
	plain, err := json.Marshal(simnetCell(""))
	require.NoError(t, err)
	require.NotContains(t, string(plain), "Backend")
	withSimnet, err := json.Marshal(simnetCell(BackendSimnet))
	require.NoError(t, err)
	require.Contains(t, string(withSimnet), `"Backend":"simnet"`)
	require.NotEqual(t, simnetCell("").Key(), simnetCell(BackendSimnet).Key())
}
