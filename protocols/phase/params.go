package phase

import (
	"sync"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/host"
)

// libraryDefaults serialises the one place uplink writes go-libp2p-pubsub's
// package-level parameter variables. The library's router options
// (WithGossipSubParams and the like) type-assert *pubsub.GossipSubRouter, so
// they refuse a router that embeds it; the only other way to give the
// embedded router its parameters is to set the variables that
// pubsub.DefaultGossipSubRouter copies, build the router, and put the
// variables back, all under this lock.
var libraryDefaults sync.Mutex

// stockRouter builds the stock router with params.
func stockRouter(h host.Host, params pubsub.GossipSubParams) *pubsub.GossipSubRouter {
	var rt *pubsub.GossipSubRouter
	withParams(params, func() { rt = pubsub.DefaultGossipSubRouter(h) })
	return rt
}

// withParams runs f while pubsub.DefaultGossipSubParams returns p (except
// SlowHeartbeatWarning, which the library fixes), then restores the
// library's values.
func withParams(p pubsub.GossipSubParams, f func()) {
	libraryDefaults.Lock()
	defer libraryDefaults.Unlock()
	saved := pubsub.DefaultGossipSubParams()
	set := func(p pubsub.GossipSubParams) {
		pubsub.GossipSubD = p.D
		pubsub.GossipSubDlo = p.Dlo
		pubsub.GossipSubDhi = p.Dhi
		pubsub.GossipSubDscore = p.Dscore
		pubsub.GossipSubDout = p.Dout
		pubsub.GossipSubHistoryLength = p.HistoryLength
		pubsub.GossipSubHistoryGossip = p.HistoryGossip
		pubsub.GossipSubDlazy = p.Dlazy
		pubsub.GossipSubGossipFactor = p.GossipFactor
		pubsub.GossipSubGossipRetransmission = p.GossipRetransmission
		pubsub.GossipSubHeartbeatInitialDelay = p.HeartbeatInitialDelay
		pubsub.GossipSubHeartbeatInterval = p.HeartbeatInterval
		pubsub.GossipSubFanoutTTL = p.FanoutTTL
		pubsub.GossipSubPrunePeers = p.PrunePeers
		pubsub.GossipSubPruneBackoff = p.PruneBackoff
		pubsub.GossipSubUnsubscribeBackoff = p.UnsubscribeBackoff
		pubsub.GossipSubConnectors = p.Connectors
		pubsub.GossipSubMaxPendingConnections = p.MaxPendingConnections
		pubsub.GossipSubConnectionTimeout = p.ConnectionTimeout
		pubsub.GossipSubDirectConnectTicks = p.DirectConnectTicks
		pubsub.GossipSubDirectConnectInitialDelay = p.DirectConnectInitialDelay
		pubsub.GossipSubOpportunisticGraftTicks = p.OpportunisticGraftTicks
		pubsub.GossipSubOpportunisticGraftPeers = p.OpportunisticGraftPeers
		pubsub.GossipSubGraftFloodThreshold = p.GraftFloodThreshold
		pubsub.GossipSubMaxIHaveLength = p.MaxIHaveLength
		pubsub.GossipSubMaxIHaveMessages = p.MaxIHaveMessages
		pubsub.GossipSubMaxIDontWantLength = p.MaxIDontWantLength
		pubsub.GossipSubMaxIDontWantMessages = p.MaxIDontWantMessages
		pubsub.GossipSubIWantFollowupTime = p.IWantFollowupTime
		pubsub.GossipSubIDontWantMessageThreshold = p.IDontWantMessageThreshold
		pubsub.GossipSubIDontWantMessageTTL = p.IDontWantMessageTTL
	}
	set(p)
	defer set(saved)
	f()
}
