package cell

import (
	"testing"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/stretchr/testify/require"
)

// libraryAccepts reports whether go-libp2p-pubsub's WithGossipSubParams
// accepts p: applied to a PubSub without a router, it fails on the
// parameters' validation first, else on the missing router.
func libraryAccepts(t *testing.T, p pubsub.GossipSubParams) bool {
	t.Helper()
	err := pubsub.WithGossipSubParams(p)(&pubsub.PubSub{})
	require.Error(t, err)
	return err.Error() == "pubsub router is not gossipsub"
}

// TestGossipValidateCoversLibrary: every setting Gossip.validate accepts,
// go-libp2p-pubsub accepts too (its router would leak a goroutine on a
// refused option), over a grid of D, Dlo and Dhi, of the history lengths
// and of the queue size; D 2, Dlo 1, Dhi 3 (Dhi below the library's
// Dscore) and D 1 (no room for Dout below D/2) are refused by both.
func TestGossipValidateCoversLibrary(t *testing.T) {
	refusedByBoth := 0
	check := func(g Gossip) {
		if g.validate() == nil {
			require.Truef(t, libraryAccepts(t, g.params()), "validate accepts %+v, the library refuses it", g)
		} else if !libraryAccepts(t, g.params()) {
			refusedByBoth++
		}
	}
	for d := range 14 {
		for dlo := range 14 {
			for dhi := range 14 {
				g := StudyGossip()
				g.D, g.Dlo, g.Dhi = d, dlo, dhi
				check(g)
			}
		}
	}
	for length := range 5 {
		for gossip := -1; gossip < 6; gossip++ {
			g := StudyGossip()
			g.HistoryLength, g.HistoryGossip = length, gossip
			check(g)
		}
	}
	require.Positive(t, refusedByBoth)

	for _, c := range []struct {
		d, dlo, dhi int
		want        string
	}{
		{2, 1, 3, "Dscore"},
		{1, 1, 4, "Dout"},
	} {
		g := StudyGossip()
		g.D, g.Dlo, g.Dhi = c.d, c.dlo, c.dhi
		require.False(t, libraryAccepts(t, g.params()), "the library accepts D %d, Dlo %d, Dhi %d", c.d, c.dlo, c.dhi)
		require.ErrorContains(t, g.validate(), c.want)
	}
	g := StudyGossip()
	g.D, g.Dlo, g.Dhi = 2, 1, 4
	require.NoError(t, g.validate(), "the smallest mesh the library accepts")

	for size := -1; size < 2; size++ {
		g := StudyGossip()
		g.QueueSize = size
		libErr := pubsub.WithPeerOutboundQueueSize(size)(&pubsub.PubSub{})
		if g.validate() == nil {
			require.NoError(t, libErr, "queue size %d", size)
		} else {
			require.Error(t, libErr, "queue size %d", size)
		}
	}
}
