//go:build linux

package cell

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/netmodel"
)

// TestCellStaysOffTheRealMachine: a 20-node cell over QUIC and one over
// TCP leave the process's sockets as they found them, read before the
// cell, as each phase starts (from inside the cell, through PhaseHook) and
// after it; and at the delivery every host advertises its node's listen
// address only, and holds for each peer only addresses on that peer's
// virtual IP, in its address book and in the peer's signed record.
//
// A reading cannot see a socket opened and closed between two readings:
// go-libp2p's interface listings (see virtualOnly) open a netlink socket
// for the time of one request, and the test asserts only that no socket
// stays open.
func TestCellStaysOffTheRealMachine(t *testing.T) {
	if _, err := os.ReadDir("/proc/self/fd"); err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	for _, c := range []struct{ transport, profile string }{
		{"quic", "harness"},
		{"tcp", "shadow"},
	} {
		t.Run(c.transport, func(t *testing.T) {
			before, err := sockets()
			require.NoError(t, err)
			var (
				hosts    []host.Host
				phases   []string
				readings = map[string]int{}
				left     = map[string][]string{}
				checked  int
				bad      []string
				readErr  error
			)
			synctest.Test(t, func(t *testing.T) {
				p, err := LookupProfile(c.profile)
				require.NoError(t, err)
				g := StudyGossip()
				g.D, g.Dlo, g.Dhi = 4, 3, 6
				cfg := Config{
					Seed: 7, N: 20, Degree: 10, Payload: 64 << 10,
					Transport: c.transport, Profile: p, Gossip: g, Wait: synctest.Wait,
					onHosts: func(hs []host.Host) { hosts = hs },
					// It runs on the cell's goroutine inside the bubble:
					// it reads /proc and the hosts, and starts nothing.
					PhaseHook: func(phase string) {
						phases = append(phases, phase)
						n, open, err := settledSockets(len(before))
						if err != nil && readErr == nil {
							readErr = err
						}
						readings[phase], left[phase] = n, open
						if phase == "delivery" {
							checked, bad = addrProblems(hosts, c.transport)
						}
					},
				}
				rec, err := Run(cfg)
				require.NoError(t, err)
				require.Equal(t, 19, rec.Completed, "receivers completed")
			})
			after, afterOpen, err := settledSockets(len(before))
			require.NoError(t, err)
			require.NoError(t, readErr)
			t.Logf("socket descriptors: %d before the cell, %v as the phases started, %d after", len(before), readings, after)

			require.Equal(t, []string{"hosts", "dial", "mesh", "delivery", "teardown"}, phases)
			for _, ph := range phases {
				require.LessOrEqualf(t, readings[ph], len(before),
					"sockets open as phase %s started: %d, %d before the cell; new: %v", ph, readings[ph], len(before), left[ph])
			}
			require.LessOrEqualf(t, after, len(before), "sockets open after the cell: %d, %d before; new: %v", after, len(before), afterOpen)

			require.Len(t, hosts, 20)
			require.Empty(t, bad, "addresses off the virtual network")
			// Every node has its ten neighbours in its address book, at
			// least; the check above saw their addresses.
			require.GreaterOrEqual(t, checked, 20*10, "peer addresses checked")
		})
	}
}

// addrProblems reads every host's own addresses and the addresses it
// holds for its peers, and describes each one that is not the node's
// virtual address: a host's own must be exactly its listen address
// (hostAddr), a peer's must be on that node's IP (netmodel.NodeAddr). It
// also returns how many peer addresses it read.
func addrProblems(hosts []host.Host, transport string) (checked int, bad []string) {
	node := map[peer.ID]int{}
	for i, h := range hosts {
		node[h.ID()] = i
	}
	onNode := func(a ma.Multiaddr, j int) bool {
		ip, err := manet.ToIP(a)
		return err == nil && ip.Equal(netmodel.NodeAddr(j).AsSlice())
	}
	for i, h := range hosts {
		own := h.Addrs()
		if len(own) != 1 || !own[0].Equal(hostAddr(transport, i)) {
			bad = append(bad, fmt.Sprintf("node %d advertises %v; want %v", i, own, hostAddr(transport, i)))
		}
		ps := h.Peerstore()
		cab, _ := peerstore.GetCertifiedAddrBook(ps)
		for _, p := range ps.PeersWithAddrs() {
			j, ok := node[p]
			if !ok {
				bad = append(bad, fmt.Sprintf("node %d holds addresses %v for %s, no node of the cell", i, ps.Addrs(p), p))
				continue
			}
			for _, a := range ps.Addrs(p) {
				checked++
				if !onNode(a, j) {
					bad = append(bad, fmt.Sprintf("node %d holds %v for node %d (%v)", i, a, j, netmodel.NodeAddr(j)))
				}
			}
			if cab == nil {
				continue
			}
			env := cab.GetPeerRecord(p)
			if env == nil {
				continue
			}
			r, err := env.Record()
			if err != nil {
				bad = append(bad, fmt.Sprintf("node %d: node %d's signed record: %v", i, j, err))
				continue
			}
			if pr, ok := r.(*peer.PeerRecord); ok {
				for _, a := range pr.Addrs {
					if !onNode(a, j) {
						bad = append(bad, fmt.Sprintf("node %d holds %v in node %d's signed record", i, a, j))
					}
				}
			}
		}
	}
	return checked, bad
}

// sockets lists the process's open sockets: the entries of /proc/self/fd
// that link to "socket:[inode]", by descriptor. A descriptor closed
// between the listing and its readlink is left out.
func sockets() (map[string]string, error) {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, e := range ents {
		l, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err == nil && strings.HasPrefix(l, "socket:") {
			out[e.Name()] = l
		}
	}
	return out, nil
}

// settledSockets counts the open sockets. While the count is above limit
// it reads again, up to 100 times 1 ms apart in real time, so that a
// socket another goroutine opens and closes at once (the netlink socket
// of an interface listing) is not counted as one that stays; a count
// still above limit comes with the sockets open, and what kind each is.
func settledSockets(limit int) (int, []string, error) {
	var s map[string]string
	for try := 0; ; try++ {
		var err error
		if s, err = sockets(); err != nil {
			return 0, nil, err
		}
		if len(s) <= limit || try == 100 {
			break
		}
		// Real time: time.Sleep inside the bubble would wait on its fake
		// clock.
		ts := syscall.NsecToTimespec(1e6)
		syscall.Nanosleep(&ts, nil)
	}
	if len(s) <= limit {
		return len(s), nil, nil
	}
	open := make([]string, 0, len(s))
	for fd, l := range s {
		open = append(open, fmt.Sprintf("fd %s %s %s", fd, l, socketKind(l)))
	}
	slices.Sort(open)
	return len(s), open, nil
}

// socketKind names the /proc/self/net table that lists the socket link
// ("socket:[inode]"), or "unknown".
func socketKind(link string) string {
	inode := strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")
	for _, table := range []string{"tcp", "tcp6", "udp", "udp6", "raw", "raw6", "unix", "netlink", "packet"} {
		b, err := os.ReadFile("/proc/self/net/" + table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			if slices.Contains(strings.Fields(line), inode) {
				return table
			}
		}
	}
	return "unknown"
}
