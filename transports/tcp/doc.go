// Package tcp is uplink's TCP model: a packet-level TCP whose protocol runs
// as model events on a netmodel.Network, with the congestion control, loss
// recovery, pacing, delayed ACKs and buffer autotuning of either Linux or
// Shadow, chosen by a profile (Config, with the presets LinuxConfig and
// ShadowConfig).
//
// # Layers
//
//   - Engine and Endpoint are the model: no goroutines, no locks. Segments
//     arrive through netmodel.Socket.OnPacket, timers are des.Timers, and
//     an application at model level writes and reads through Endpoint
//     methods and callbacks (the benchmark's always-backlogged sender).
//   - Stack, Conn and Listener give real goroutine code in a
//     testing/synctest bubble a net.Conn and a net.Listener over the
//     Engine, under des.Live's lock. Read and Write block on one-slot
//     channels the model signals; Close lets every goroutine end.
//
// # Structure (after gVisor's pkg/tcpip/transport/tcp)
//
//   - endpoint.go: states, handshake (SYN, SYN-ACK, ACK; SYN retries with
//     backoff), teardown (FIN both ways, TIME-WAIT, FIN-WAIT-2 timeout),
//     resets (RST on a refused port through netmodel.Node.HandleUnbound,
//     RST on data for a closed socket), the protocol timer.
//   - sender.go: the send buffer, the retransmission queue with Linux's
//     counters (packets out, SACKed, lost, retransmitted), the SACK
//     scoreboard, the retransmission timer (RFC 6298, Karn's rule,
//     exponential backoff), zero-window probes, pacing, the restart
//     after idle (Linux's tcp_slow_start_after_idle, RFC 2861); with
//     Shadow's Reno and no SACK, Shadow's window test on sequence space
//     from the cumulative ACK (_tcp_flush) in place of the flight; with
//     Shadow's Reno, the handshake counted in the window as Shadow's
//     stack counts it (countHandshake).
//   - recovery.go: loss detection (three duplicate ACKs or three SACKed
//     segments) and the fast-recovery state machine, with one strategy
//     per file: recovery_sack.go (RFC 6675), recovery_newreno.go (RFC
//     6582 partial ACKs, without SACK), recovery_reno.go (classic Reno,
//     Shadow's).
//   - receiver.go: reassembly in one ring, the advertised window (never
//     shrinking its right edge), SACK blocks (RFC 2018), delayed ACKs
//     (Linux's or Shadow's), receive-buffer autotuning (Linux's DRS or
//     Shadow's rule).
//   - cc.go (interface), cc_shadowreno.go, cc_newreno.go, cc_cubic.go:
//     congestion controllers, in segments; prr.go: PRR (RFC 6937), CUBIC's
//     window in fast recovery.
//   - prio.go: the packet priorities Shadow's TCP gives data when the
//     application writes it, which Shadow's fifo interface sends by
//     (queues.ShadowFIFO); every write is numbered, and only that
//     discipline reads the numbers.
//   - rtt.go: the RTO estimator. seq.go: modulo-2^32 sequence arithmetic
//     and range sets. ring.go: the byte and segment rings. header.go: the
//     header carried in netmodel.Packet.Hdr (pooled per Engine).
//
// # What is modelled exactly, and what approximately
//
// Wire sizes: 20 bytes of TCP header plus 20 of IPv4; MSS 1 460 fills an
// MTU of 1 500. The timestamp option (RFC 7323) is not carried (Linux
// would carry 12 bytes per segment and send 1 448-byte segments); SACK
// blocks cost 4 + 8n bytes, and a data segment carries only as many as fit
// the MTU; SYNs carry 12 bytes of options. Window scaling is implicit:
// windows travel in bytes.
//
// Approximations, each documented where it lives: RTT samples come from
// per-segment send times (Karn's rule) since there are no timestamps;
// Linux's RTO variance term (mdev_max) is RFC 6298's RTTVAR floored at the
// minimum RTO; the receiver's DRS clock is tcp_rcv_rtt_measure's estimate;
// buffers are counted in payload bytes where Linux counts skb truesize;
// Linux's adaptive delayed-ACK timeout (ato) is its 40 ms floor; pacing
// has no credit for idle time; no TSO/GSO, so HyStart's ack-delay cushion
// is zero; the duplicate threshold is fixed at 3 (Linux adapts
// tp->reordering to the reordering it sees). Lost retransmissions are detected by Linux's pre-RACK rule
// (SACKed data sent after them); not modelled: RACK-TLP itself (a tail
// loss waits for the retransmission timer), F-RTO and undo of spurious reductions, D-SACK,
// ECN, Nagle (Go sets TCP_NODELAY), urgent data, simultaneous open,
// Linux's rcv_ssthresh window clamping and receive-side silly-window
// rounding beyond whole-segment windows.
package tcp
