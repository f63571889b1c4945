package netmodel

import "github.com/uplinksim/uplink/des"

// Tap sees a node's packets at the two steps its counters count them: as
// a packet leaves the node's uplink shaper (Counters.SentPackets; out is
// true; a packet lost on its way afterwards is still seen) and as one is
// put in a socket's receive buffer or handed to a socket's OnPacket
// (Counters.RecvPackets; out is false). It runs inside the model event, at
// the packet's virtual instant now; it must not keep p, change it or
// touch the model.
type Tap func(p *Packet, now des.Time, out bool)

// SetTap installs fn on the node (nil removes it). A node without a tap
// pays one nil check per packet.
func (nd *Node) SetTap(fn Tap) { nd.tap = fn }
