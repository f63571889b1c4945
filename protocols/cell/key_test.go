package cell

import (
	"maps"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/protocols/partial"
)

// runSmall makes c a 12-node, degree-6, 16 KiB cell and runs it.
func runSmall(t *testing.T, c *Config) *Record {
	t.Helper()
	c.Seed, c.N, c.Degree, c.Payload = 7, 12, 6, 16<<10
	c.Gossip = StudyGossip()
	c.Gossip.D, c.Gossip.Dlo, c.Gossip.Dhi = 4, 3, 6
	var rec *Record
	synctest.Test(t, func(t *testing.T) {
		run := *c
		run.Wait = synctest.Wait
		var err error
		rec, err = Run(run)
		require.NoError(t, err)
	})
	return rec
}

// TestMigrateRekeys: a record of schema 1, whose key was of the first
// form, gets from Migrate the key today's Config of its cell has, from
// its own fields: for cells under each profile and transport, a phase arm
// with the prose rules, after-dial routers, a queue mix, a warm-up, a
// setup quantum and a repeat; Shadow's Reno over TCP, which changed since,
// gets the key of its revision before the change. A record that lacks a knob added since reads
// it at its value then; one that lacks router-start ran after the dial,
// the only order before the knob; one whose queues were assigned per node
// (which its knobs do not give) keeps its key.
func TestMigrateRekeys(t *testing.T) {
	harness, _ := LookupProfile("harness")
	shadow, _ := LookupProfile("shadow")
	kernel, _ := LookupProfile("kernel")
	prose := kernel
	require.NoError(t, prose.Set("phase-rules", PhaseRulesProse))
	after := kernel
	require.NoError(t, after.Set("router-start", RouterAfterDial))
	require.NoError(t, after.Set("uplink-qdisc", "pie@50%"))
	cells := []Config{
		{Profile: harness, Encoding: "snappy"},
		{Arm: "atuned_32k", Profile: prose, Transport: "tcp"},
		{Profile: after, SetupQuantum: des.Millisecond, Replicate: 1},
		{Arm: "whole", Profile: harness, Warmup: Warmup{Kind: "payload", Gap: des.Second}},
	}
	for i, c := range cells {
		rec := runSmall(t, &cells[i])
		c = cells[i]
		require.Equal(t, c.Key(), rec.Key, "cell %d: the record's key", i)
		old := *rec
		old.Schema, old.Key = 1, "a key of the first form"
		old.Knobs = maps.Clone(rec.Knobs)
		delete(old.Knobs, "gso") // written before the knob
		require.NoError(t, old.Migrate())
		require.Equal(t, RecordSchema, old.Schema)
		require.Equal(t, c.Key(), old.Key, "cell %d: re-keyed", i)
	}

	// Shadow's Reno over TCP changed since: a schema-1 record of it is
	// the cell without that revision.
	sh := Config{Profile: shadow, Transport: "tcp"}
	rec := runSmall(t, &sh)
	old := *rec
	old.Schema, old.Key = 1, "k"
	require.NoError(t, old.Migrate())
	k := sh.KeyFields()
	require.Contains(t, k.Revisions, "shadow-reno-recovery")
	delete(k.Revisions, "shadow-reno-recovery")
	require.Equal(t, k.hash(), old.Key, "shadow TCP: the revision before the recovery's")
	require.NotEqual(t, sh.Key(), old.Key)

	rec = runSmall(t, &cells[0])
	old = *rec
	old.Schema, old.Key = 1, "k"
	old.Knobs = maps.Clone(rec.Knobs)
	delete(old.Knobs, "router-start")
	require.NoError(t, old.Migrate())
	afterDial := cells[0]
	require.NoError(t, afterDial.Profile.Set("router-start", RouterAfterDial))
	require.Equal(t, afterDial.Key(), old.Key, "a record without router-start ran after the dial")

	perNode := Config{Profile: kernel, Qdiscs: &NodeQdiscs{Uplink: &QdiscMap{Default: "pfifo", Nodes: map[string]string{"3": "pie"}}}}
	rec = runSmall(t, &perNode)
	require.Equal(t, perNode.Key(), rec.Key)
	old = *rec
	old.Schema, old.Key = 1, "kept"
	require.NoError(t, old.Migrate())
	require.Equal(t, "kept", old.Key, "per-node queues: nothing in the record gives them")

	bare := Record{Schema: 1, Key: "bare", N: 5}
	require.NoError(t, bare.Migrate())
	require.Equal(t, "bare", bare.Key, "a record without its settings keeps its key")
}

// TestVariantBLedgerKey: a variant B cell's key carries the claim
// ledger's revision (protocols/partial), under its catalogue and its
// published name, and the revision alone changes the key; a
// whole-message cell's key does not carry it.
func TestVariantBLedgerKey(t *testing.T) {
	p, _ := LookupProfile("harness")
	for _, arm := range []string{"bfixed_32k", "bcodedfc1", "B tuned 32k"} {
		c := Config{Arm: arm, Seed: 7, N: 30, Degree: 12, Payload: 1 << 20, Profile: p}
		k := c.KeyFields()
		require.Equal(t, variantBLedger, k.Revisions["variant-b-ledger"], arm)
		before := k
		before.Revisions = maps.Clone(k.Revisions)
		delete(before.Revisions, "variant-b-ledger")
		require.NotEqual(t, k.hash(), before.hash(), arm)
		require.Equal(t, k.hash(), c.Key(), arm)
		off := c
		off.BRulesOff = partial.RulesOff{ClaimBudget: true}
		require.NotEqual(t, c.Key(), off.Key(), "%s: a rule switched off is another cell", arm)
	}
	for _, arm := range []string{"wholend", "atuned_32k"} {
		c := Config{Arm: arm, Seed: 7, N: 30, Degree: 12, Payload: 1 << 20, Profile: p}
		require.NotContains(t, c.KeyFields().Revisions, "variant-b-ledger", arm)
	}
}

// TestBRulesOffRecord: a coded B cell with two ledger rules off runs, and
// its record names them and carries the cell's key.
func TestBRulesOffRecord(t *testing.T) {
	harness, _ := LookupProfile("harness")
	c := Config{Arm: "bcodedfc1", Profile: harness, BRulesOff: partial.RulesOff{AnyArrival: true, PerPeerTimeout: true}}
	rec := runSmall(t, &c)
	require.Equal(t, "any-arrival,per-peer-timeout", rec.BRulesOff)
	require.Equal(t, c.Key(), rec.Key)
	require.Positive(t, rec.BClaims)
}
