package cell

import (
	"github.com/stretchr/testify/require"
	"math"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/protocols/arms"
)

// armCell runs a 30-node, degree-12, 256 KiB cell of arm under the
// harness profile with the study's gossipsub settings, verifying every
// receiver's payload.
func armCell(t *testing.T, arm string, mutate func(*Config)) *Record {
	t.Helper()
	p, _ := LookupProfile("harness")
	c := Config{Arm: arm, Seed: 7, N: 30, Degree: 12, Payload: 256 << 10, Profile: p, Verify: true, Wait: synctest.Wait}
	if mutate != nil {
		mutate(&c)
	}
	rec, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestArmsEveryReceiverCompletes: every arm of the catalogue at 30 nodes:
// every receiver completes, rebuilds the payload (decoding the coded arms),
// and the record carries the arm's wire form.
func TestArmsEveryReceiverCompletes(t *testing.T) {
	for _, a := range arms.Catalogue {
		t.Run(a.Name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := armCell(t, a.Name, nil)
				if rec.Completed != 29 || rec.Verified != 29 {
					t.Fatalf("%d of 29 receivers completed, %d rebuilt the payload", rec.Completed, rec.Verified)
				}
				payload := arms.MainnetLikePayload(7, 256<<10)
				if a.Variant == arms.VariantWhole {
					payload = makePayload(7, 256<<10)
				}
				wf, err := a.WireForm(payload)
				if err != nil {
					t.Fatal(err)
				}
				if got := (WireRecord{Messages: wf.MessageCount, Unit: wf.Unit, IDWidth: wf.IDWidth}); rec.Wire != got {
					t.Fatalf("wire form %+v, want %+v", rec.Wire, got)
				}
				if rec.Arm != a.Published || rec.ArmName != a.Name {
					t.Fatalf("record names the arm %q (%q)", rec.Arm, rec.ArmName)
				}
				wantTopics := 1
				if a.Variant == arms.VariantC {
					wantTopics = wf.MessageCount
				}
				if rec.Topics != wantTopics {
					t.Fatalf("%d topics, want %d", rec.Topics, wantTopics)
				}
				require.Equal(t, wantTopics > 1, rec.PublisherMeshes != nil, "publisher_meshes only for arms on several topics")
				require.Equal(t, wantTopics > 1, rec.EmptyMeshNodes != nil, "empty_mesh_nodes only for arms on several topics")
				// Each unit's first delivery: one per unit for the arms of
				// several gossip messages; a receiver completes only once
				// it holds every unit of an uncoded arm, so no unit first
				// reaches anyone after the first completion.
				if a.Variant == arms.VariantB || wf.MessageCount == 1 {
					require.Nil(t, rec.UnitFirstMS)
					require.Nil(t, rec.CompletingUnits)
				} else {
					require.Len(t, rec.UnitFirstMS, wf.MessageCount)
					completed := 0
					for _, n := range rec.CompletingUnits {
						completed += n
					}
					require.Equal(t, rec.Completed, completed, "every receiver completed by one unit")
					if !a.Coded {
						for u, ms := range rec.UnitFirstMS {
							require.NotNil(t, ms, "unit %d reached no one", u)
							require.Positive(t, *ms)
							require.LessOrEqual(t, *ms, float64(rec.CompletionUS[0])/1000+1e-3, "unit %d first reached a receiver after the first completion", u)
						}
					}
				}
				t.Logf("%s (%s): p50 %.3f p99 %.3f dups %d rx/node %.0f ctrl/node %.0f pub %d",
					a.Name, rec.Policy, *rec.P50S, *rec.P99S, rec.Dups, rec.RxNodeBytes, rec.CtrlRxNode, rec.PubBytes)
			})
		})
	}
}

// TestCodedArmsAnyK: the publisher withholds shards. With K shards of the
// 2K withheld, every receiver completes from the other K and decodes the
// payload; with K+1 withheld, nobody can complete.
func TestCodedArmsAnyK(t *testing.T) {
	for _, name := range []string{"acoded_32k", "crs_32k"} {
		a, _ := arms.LookupArm(name)
		k := 8 // 256 KiB at 32 KiB
		t.Run(name+"/data-withheld", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := armCell(t, a.Name, func(c *Config) {
					for i := range k {
						c.Withhold = append(c.Withhold, i) // every data shard
					}
				})
				if rec.Completed != 29 || rec.Verified != 29 {
					t.Fatalf("from the K parity shards: %d of 29 completed, %d decoded", rec.Completed, rec.Verified)
				}
			})
		})
		t.Run(name+"/too-few", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := armCell(t, a.Name, func(c *Config) {
					for i := range k + 1 {
						c.Withhold = append(c.Withhold, i) // every data shard and one parity shard
					}
					c.Window = 3e9
				})
				if rec.Completed != 0 || rec.P50S != nil {
					t.Fatalf("with K-1 shards published, %d receivers completed", rec.Completed)
				}
			})
		})
	}
}

// TestPhaseRouterPolicyOff: uplink's router with no policy behaves as the
// stock router. The whole message at seeds 7 to 12, with every node on the
// phase router and with half the nodes on the stock router, completes at
// every receiver, and the median p50 lies within the stock router's own
// seed-to-seed range (widened by 10 % for run-to-run noise: runs of one
// seed differ by up to about 10 % at this size). Six seeds, not three:
// with three, one run in a few dozen put two seeds of the mixed network
// at the low end of their own run-to-run spread (0.536 and 0.515 s against
// 0.55 to 0.63 s in five other runs) while the stock seeds sat at the high
// end, and the median fell outside. A mixed network runs a phase arm too.
func TestPhaseRouterPolicyOff(t *testing.T) {
	seeds := []uint64{7, 8, 9, 10, 11, 12}
	modes := []int{routerByArm, routerPhase, routerMixed}
	p50 := make([][]float64, len(modes))
	for i, mode := range modes {
		for _, seed := range seeds {
			synctest.Test(t, func(t *testing.T) {
				rec := armCell(t, "wholend", func(c *Config) { c.routers, c.Seed = mode, seed })
				if rec.Completed != 29 || rec.Verified != 29 {
					t.Fatalf("router mode %d seed %d: %d of 29 completed", mode, seed, rec.Completed)
				}
				p50[i] = append(p50[i], *rec.P50S)
			})
		}
	}
	lo, hi := slices.Min(p50[0]), slices.Max(p50[0])
	for i, name := range []string{"phase router", "mixed"} {
		m := median(p50[i+1])
		if m < 0.9*lo || m > 1.1*hi {
			t.Errorf("%s: median p50 %.3f s outside the stock router's seeds %.3f to %.3f s", name, m, lo, hi)
		}
	}
	t.Logf("whole message p50 by seed: stock %.3f, phase router %.3f, mixed %.3f", p50[0], p50[1], p50[2])
	synctest.Test(t, func(t *testing.T) {
		rec := armCell(t, "atuned_32k", func(c *Config) { c.routers = routerMixed })
		if rec.Completed != 29 || rec.Verified != 29 {
			t.Fatalf("A-tuned with half the nodes stock: %d of 29 completed", rec.Completed)
		}
	})
}

func median(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// TestVariantBStrike: a third of the nodes never answer a claim. Claims
// to them time out and strike them (B tuned), the claimers turn to other
// holders, and every receiver still completes with the whole payload. The timeout
// follows the response times (16 × their mean), so a claim to a silent
// peer can wait seconds: the window is 20 s.
func TestVariantBStrike(t *testing.T) {
	for _, name := range []string{"bfixed_32k", "bcodedfc1_32k"} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := armCell(t, name, func(c *Config) {
					for i := 1; i < 30; i += 3 {
						c.bMute = append(c.bMute, i)
					}
					c.Window = 20 * des.Second
				})
				if rec.Completed != 29 || rec.Verified != 29 {
					t.Fatalf("with silent peers %d of 29 completed, %d verified", rec.Completed, rec.Verified)
				}
				// Coded B completes from any K parts and may finish before it
				// claims from a silent peer (seen once in about twenty runs),
				// so the strike is required of B tuned only, which needs
				// every part.
				if name == "bfixed_32k" && (rec.BTimeouts == 0 || rec.BStrikes == 0) {
					t.Fatalf("no claim timed out (%d claims, %d timeouts, %d strikes): the silent peers were never claimed from", rec.BClaims, rec.BTimeouts, rec.BStrikes)
				}
				// A silent peer answers no claim, so its lapses are unheard.
				require.NotNil(t, rec.BTimeoutsUnheard)
				require.NotNil(t, rec.BLateAnswers)
				if name == "bfixed_32k" && (*rec.BTimeoutsUnheard == 0 || *rec.BTimeoutsUnheard > rec.BTimeouts) {
					t.Fatalf("%d of %d timeouts unheard: want at least one (the silent peers') and at most all", *rec.BTimeoutsUnheard, rec.BTimeouts)
				}
				t.Logf("%s: p50 %.3f p99 %.3f claims %d timeouts %d (unheard %d, answered late %d) strikes %d", name, *rec.P50S, *rec.P99S, rec.BClaims, rec.BTimeouts, *rec.BTimeoutsUnheard, *rec.BLateAnswers, rec.BStrikes)
			})
		})
	}
}

// TestSnappyWireEncoding: with the study's gossip encoding the whole
// message and A-tuned's segments go out snappy-compressed: every receiver
// still rebuilds the payload (decompressing what it was delivered), the
// record names the encoding, and each copy a receiver takes in carries at
// least 15 % fewer data bytes than with raw units of the same arm. The
// comparison is per copy (first deliveries and duplicates), not per
// receiver: how many duplicates arrive varies from run to run by more than
// the compression saves on the whole message.
func TestSnappyWireEncoding(t *testing.T) {
	for _, arm := range []string{"whole", "atuned_32k"} {
		t.Run(arm, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				raw := armCell(t, arm, func(c *Config) { c.PerNode = true })
				enc := armCell(t, arm, func(c *Config) { c.Encoding = arms.EncodingSnappy; c.PerNode = true })
				if enc.Completed != 29 || enc.Verified != 29 {
					t.Fatalf("snappy: %d of 29 receivers completed, %d rebuilt the payload", enc.Completed, enc.Verified)
				}
				if enc.Wire.Encoding != "snappy" || raw.Wire.Encoding != "" {
					t.Fatalf("wire encodings %q and %q", raw.Wire.Encoding, enc.Wire.Encoding)
				}
				rawCopy, encCopy := bytesPerCopy(raw), bytesPerCopy(enc)
				if encCopy > 0.85*rawCopy {
					t.Fatalf("snappy: %.0f data bytes per received copy against %.0f raw", encCopy, rawCopy)
				}
				t.Logf("%s: data bytes per received copy %.0f raw, %.0f snappy; p50 %.3f raw, %.3f snappy", arm, rawCopy, encCopy, *raw.P50S, *enc.P50S)
			})
		})
	}
}

// bytesPerCopy is the data bytes the receivers took in per message copy
// delivered to them, first deliveries and duplicates together (the record
// must carry its per-node rows, and every receiver must have completed).
func bytesPerCopy(rec *Record) float64 {
	var bytes, copies float64
	for _, row := range rec.Nodes {
		if row.Index == 0 {
			continue
		}
		bytes += float64(row.DataRx)
		copies += float64(rec.Wire.Messages + row.Dups)
	}
	return bytes / copies
}

// TestCountsAtWindowEnd: a cell whose window closes before every receiver
// has the payload reads its counts at the window's end, and says so.
func TestCountsAtWindowEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := armCell(t, "atuned_32k", func(c *Config) { c.Window = 150 * des.Millisecond })
		if rec.Completed == 29 {
			t.Fatalf("every receiver completed within 150 ms (p50 %v); the window does not censor", *rec.P50S)
		}
		if rec.CountsAt != CountsAtWindowEnd || math.Abs(rec.CountsAtS-0.15) > 1e-9 {
			t.Fatalf("counts read at %q, %v s; want at the window's end, 0.15 s", rec.CountsAt, rec.CountsAtS)
		}
	})
}

// TestCountsHeldToWindowEnd: with CountsWindowEnd a cell whose receivers
// all complete well within the window still reads its counts at the
// window's end: every receiver complete before 2 s, the counts at 2 s,
// each receiver's whole copy among the bytes counted (raw payload: at
// least the payload per receiver), and the setting is part of the key
// (last-completion, the default, is not). An unknown setting is refused.
func TestCountsHeldToWindowEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var cfg Config
		rec := armCell(t, "wholend", func(c *Config) { c.Window, c.CountsAt = 2*des.Second, CountsWindowEnd; cfg = *c })
		require.Equal(t, 29, rec.Completed)
		require.Equal(t, CountsAtWindowEnd, rec.CountsAt)
		require.InDelta(t, 2.0, rec.CountsAtS, 1e-9)
		require.Less(t, *rec.LastS, 2.0)
		require.GreaterOrEqual(t, rec.RxNodeBytes, float64(rec.PayloadBytes), "every receiver's copy counted")
		def := cfg
		def.CountsAt = ""
		require.NotEqual(t, def.Key(), cfg.Key())
		def.CountsAt = CountsLastCompletion
		require.Equal(t, def.Key(), func() string { d := def; d.CountsAt = ""; return d.Key() }())
	})
	bad := Config{N: 4, Degree: 2, Payload: 1, CountsAt: "noon"}
	bad.Defaults()
	require.ErrorContains(t, bad.validate(), `counts at "noon"`)
}

// TestVariantCMeshWait: under the harness profile variant C publishes as
// soon as all but a few nodes hold their mesh slots over its topics (8
// here: 256 KiB in 32 KiB segments), with no settle time (the study's
// harness), so before the 2.5 s that the per-topic wait sleeps first;
// every receiver still completes.
//
// The per-topic wait publishes once every node's mesh on every topic is
// within [Dlo, Dhi], or at the mesh timeout (60 s after subscribing) if
// it never sees that, and the record says which (mesh_stable). Under the
// study's gossip settings it often never does (about two runs in three
// of this one cell: gossipsub picks its peers from math/rand's global
// source, which the cell's seed does not set): Dhi is the degree, 12, so
// a node holding every peer in a topic's mesh answers an inbound graft
// with a prune, and the pruned peer backs off for gossipsub's minute, as
// long as the timeout. One or two nodes then sit at 3 to 5 on some topic
// when the timeout publishes, the publisher in about one run in twenty.
// Only a stable wait vouches for the meshes at the publish (the publish
// reads them at the wait's last instant). With Dhi above the degree no
// graft is refused and no mesh shrinks, so that wait always ends stable,
// at its first look, and the publisher's meshes are always checked.
func TestVariantCMeshWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := StudyGossip()
		slots := armCell(t, "c_32k", nil)
		each := armCell(t, "c_32k", func(c *Config) { c.Profile.TopicMeshWait = ""; c.PerNode = true })
		if !slots.MeshStable || slots.Completed != 29 {
			t.Fatalf("slots wait: mesh stable %v, %d of 29 completed", slots.MeshStable, slots.Completed)
		}
		if slots.PublishAtS >= each.PublishAtS {
			t.Fatalf("the slots wait published at %.2f s, not before the per-topic wait (%.2f s)", slots.PublishAtS, each.PublishAtS)
		}
		if each.MeshStable {
			requireMeshesInRange(t, each, g)
		} else {
			require.GreaterOrEqual(t, each.PublishAtS, defaultMeshTimeout.Seconds(), "a wait that never saw every mesh in range publishes at its timeout")
			requireMeshesRecorded(t, each, g)
		}
		wide := armCell(t, "c_32k", func(c *Config) {
			c.Profile.TopicMeshWait, c.PerNode = "", true
			c.Gossip = StudyGossip()
			c.Gossip.Dhi = c.Degree + 1
		})
		require.True(t, wide.MeshStable, "with Dhi %s above the degree the per-topic wait ends stable (published at %.2f s)", wide.Gossip["Dhi"], wide.PublishAtS)
		require.Less(t, wide.PublishAtS, defaultMeshTimeout.Seconds())
		requireMeshesInRange(t, wide, g)
		t.Logf("published at %.2f s (slots), %.2f s (each, mesh stable %v, publisher's meshes %v) and %.2f s (Dhi %s); p50 %.3f and %.3f",
			slots.PublishAtS, each.PublishAtS, each.MeshStable, each.PublisherMeshes, wide.PublishAtS, wide.Gossip["Dhi"], *slots.P50S, *each.P50S)
	})
}

// requireMeshesRecorded checks what a variant C record of a per-node
// cell says of the meshes at the publish, however the mesh wait ended:
// one publisher mesh per topic, each at most Dhi; the publisher's row
// carries the one on the first topic; and the nodes counted with an empty
// mesh include those whose row shows one on the first topic, and the
// publisher when one of its meshes is empty.
func requireMeshesRecorded(t *testing.T, rec *Record, g Gossip) {
	t.Helper()
	require.Len(t, rec.PublisherMeshes, rec.Wire.Messages, "one publisher mesh per topic")
	for i, m := range rec.PublisherMeshes {
		require.LessOrEqual(t, m, g.Dhi, "topic %d", i)
	}
	require.Equal(t, rec.PublisherMeshes[0], rec.Nodes[0].MeshPublish, "the publisher's mesh on the first topic")
	require.NotNil(t, rec.EmptyMeshNodes)
	empty := 0
	for _, row := range rec.Nodes {
		if row.MeshPublish == 0 || row.Index == 0 && slices.Contains(rec.PublisherMeshes, 0) {
			empty++
		}
	}
	require.GreaterOrEqual(t, *rec.EmptyMeshNodes, empty, "nodes with an empty mesh at the publish")
}

// requireMeshesInRange checks a variant C record whose per-topic wait
// ended stable: the publisher's meshes, one per topic, are within [Dlo,
// Dhi] and no node has an empty one.
func requireMeshesInRange(t *testing.T, rec *Record, g Gossip) {
	t.Helper()
	require.True(t, rec.MeshStable)
	requireMeshesRecorded(t, rec, g)
	for i, m := range rec.PublisherMeshes {
		require.GreaterOrEqual(t, m, g.Dlo, "topic %d", i)
	}
	require.Zero(t, *rec.EmptyMeshNodes)
}

// TestPhaseRulesFork: under the fork's rules a relay's source counts
// against r (one push per relay at r = 2, not two), so A-tuned's receivers
// get far fewer duplicates, and the heartbeat gossips held segments, so
// they hear more IHAVEs. Two seeds summed (single runs measured:
// duplicates 0.45 to 0.81 of prose's, IHAVE ids 1.46 to 1.72 times).
func TestPhaseRulesFork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ihave := func(r *Record) (n int) {
			for _, row := range r.Nodes {
				n += row.IHaveRx
			}
			return n
		}
		var dups, ihaves [2]int // fork, prose
		for _, seed := range []uint64{7, 8} {
			fork := armCell(t, "atuned_32k", func(c *Config) { c.Seed = seed; c.PerNode = true })
			prose := armCell(t, "atuned_32k", func(c *Config) { c.Seed = seed; c.Profile.PhaseRules = PhaseRulesProse; c.PerNode = true })
			if fork.Completed != 29 || prose.Completed != 29 {
				t.Fatalf("seed %d: completed %d (fork), %d (prose) of 29", seed, fork.Completed, prose.Completed)
			}
			dups[0], dups[1] = dups[0]+fork.Dups, dups[1]+prose.Dups
			ihaves[0], ihaves[1] = ihaves[0]+ihave(fork), ihaves[1]+ihave(prose)
		}
		if float64(dups[0]) > 0.85*float64(dups[1]) {
			t.Errorf("duplicates %d under the fork's rules against %d under prose; want at most 0.85 times", dups[0], dups[1])
		}
		if float64(ihaves[0]) < 1.3*float64(ihaves[1]) {
			t.Errorf("IHAVE ids heard %d under the fork's rules against %d under prose; want at least 1.3 times", ihaves[0], ihaves[1])
		}
		t.Logf("duplicates %d against %d; IHAVE ids %d against %d", dups[0], dups[1], ihaves[0], ihaves[1])
	})
}
