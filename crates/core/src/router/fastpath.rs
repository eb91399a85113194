//! What the router tells a best-effort fast path below it (`docs/fastpath.md`, "The router"):
//! the prefixes of a longest-prefix-match map that says, per destination, whether a plain IPv4
//! packet may be forwarded without this core and to which next hop ([`Router::fast_table`]),
//! and which ports are **open** — ports whose plain IPv4 forwarding may bypass the core at all
//! ([`Router::fast_path_closed`]).
//!
//! # The table: the core's default forwarding, precomputed
//!
//! QSR §4.1's forwarding loop, for a packet that no trap or classifier took, is a longest
//! prefix match on the destination that yields a next hop, and a hand-over to that next hop's
//! link-layer address; RFC 1812 §5.2.1 and §5.3 add what a router does to the packet on the
//! way (TTL, checksum, martian filters). In this core that is [`Router::handle_frame`] →
//! `on_ipv4` → [`super::Tables::decide`] → `forward` → `send_to_neighbour`. For a packet whose
//! header passes the per-packet checks below, what it does depends on the destination alone,
//! so it can be written down per prefix, and the fast path's LPM map answers as the FIB does:
//!
//! - **Addresses the core never forwards** are [`FastRoute::ToCore`], so that no route around
//!   them can catch them: the martian destinations of RFC 1812 §5.3.7 (and multicast, which
//!   this router does not route) — 0/8, 127/8, 224/4, 240/4 — and any route inside them, which
//!   `on_ipv4` drops; each port's own address and its subnet's directed broadcast (/32), which
//!   `on_ipv4` traps to the control plane or answers (§4.1's "packets addressed to the router").
//! - **Every FIB route** (the default route is the FIB's 0.0.0.0/0, so it is one of them) is
//!   [`FastRoute::Forward`] when the core would send at once: its port is up, and its next hop
//!   — the gateway, or for a gateway-less /32 the address itself (`NextHop::neighbour`) — is
//!   resolved *on the route's port* (`Neighbours::lookup` answers only there). The hop is
//!   that neighbour's MAC as destination and the port's MAC as source, which is what
//!   `send_frame` writes. Otherwise it is [`FastRoute::ToCore`]: a down port drops, and an
//!   unresolved next hop (or a connected subnet, whose next hop is each destination itself)
//!   needs ARP, a held packet and perhaps an ICMP host unreachable (RFC 1812 §3.3.2, §4.3).
//! - **Every resolved neighbour on a connected subnet** adds its /32 as
//!   [`FastRoute::Forward`] when its own longest match is a gateway-less route out of the port
//!   it was resolved on (that port up) and the FIB has no /32 of its own for it: a packet to it
//!   takes that route, and `send_to_neighbour` resolves the destination itself on that port.
//!   A neighbour resolved on another port than its route's is not one the core would send to,
//!   and a neighbour that is one of the addresses above is not added.
//!
//! Frames whose destination matches [`FastRoute::ToCore`], or nothing (no route: the core
//! answers ICMP net unreachable), go to the core, which does what it always did.
//!
//! The fast path must itself hand to the core what depends on more than the destination: a
//! frame not addressed to the ingress port's MAC, or not untagged IPv4; an IPv4 header with
//! options (IHL above 5: the traps for IP options and Router Alert), a bad checksum, a TTL of
//! one or less (ICMP time exceeded), a packet that would make a frame above 1,514 bytes; RSVP
//! (protocol 46, trapped); a martian source or one of the router's own addresses as source.
//! What it forwards it must change as `forward` does: TTL minus one, the checksum updated
//! incrementally (RFC 1624), and the hop's MACs.
//!
//! [`Router::fast_version`] changes whenever the table could: a FIB change from any source
//! (`Fib::version`), a neighbour made, moved, re-addressed or flushed (`Neighbours::version`),
//! a carrier change. The shell rebuilds its map when it changes.
//!
//! # Open ports
//!
//! The classifiers run before default forwarding in the paper's order (QSR §4.1 and §5: traps,
//! RSVP, PSIP, forwarder), and the fast path cannot run them: while either holds any entry,
//! every port is closed, so no reserved sender's packet can be forwarded as default IP. A port
//! is open only where the core has nothing to protect: an unpaced port (a paced port's rate,
//! or a shared segment's turn, is the core's to keep), its carrier up, and no reservation
//! booked out of it (QSR §3.1: Guaranteed and Controlled-Load flows on its scheduler, with the
//! default-IP floor beside them). A reservation is booked when its Resv reaches this router,
//! before the Resv goes on upstream, so the port closes before any reserved packet can come.
//! A packet may take the fast path only if both its input and its output port are open.
//!
//! # Neighbour refresh
//!
//! A resolved neighbour is asked again (one ARP request) when a look-up finds it past its
//! lifetime; packets on the fast path never look it up. After [`Router::track_fast_path`] the
//! core asks itself, on its timer: every resolved neighbour past its lifetime is sent a
//! request and its expiry moved on by one retry interval, as `Neighbours::lookup` does; one
//! still silent after `attempts` requests is forgotten (Linux's FAILED), which sends its
//! prefixes to the core, where the next packet resolves it afresh.

use std::collections::BTreeMap;

use rtlan_wire::ethernet::Address;

use super::fib::Route;
use super::node::{martian_dst, Router};
use super::Ipv4Prefix;
use crate::{Medium, PortId};

/// A resolved next hop the fast path may send to without the core.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FastHop {
    /// The output port.
    pub port: PortId,
    /// The next hop's MAC: the frame's destination.
    pub dst_mac: Address,
    /// The output port's MAC: the frame's source.
    pub src_mac: Address,
}

/// What the fast path does with packets whose destination's longest match is this prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FastRoute {
    /// Forward to this hop (TTL and checksum updated as the core does).
    Forward(FastHop),
    /// Hand the packet to the core (ARP, ICMP, traps, drops: module doc).
    ToCore,
}

/// The destinations `on_ipv4` drops as martian (RFC 1812 §5.3.7, and multicast): exactly the
/// addresses for which `martian_dst` holds.
const MARTIAN_DST: [Ipv4Prefix; 4] = [
    Ipv4Prefix::from_parts(std::net::Ipv4Addr::new(0, 0, 0, 0), 8),
    Ipv4Prefix::from_parts(std::net::Ipv4Addr::new(127, 0, 0, 0), 8),
    Ipv4Prefix::from_parts(std::net::Ipv4Addr::new(224, 0, 0, 0), 4),
    Ipv4Prefix::from_parts(std::net::Ipv4Addr::new(240, 0, 0, 0), 4),
];

impl Router {
    /// Starts fast-path tracking: from now on the core refreshes resolved neighbours past
    /// their lifetime on its timer (module doc, "Neighbour refresh").
    pub fn track_fast_path(&mut self) {
        self.neighbours.track_expiry();
    }

    /// A number that changes whenever [`Router::fast_table`] could give a different answer:
    /// a FIB change (connected, static, kernel, default route), a neighbour learnt, changed or
    /// flushed, a port going up or down. A sum of counters that only grow.
    pub fn fast_version(&self) -> u64 {
        self.tables.fib.version() + self.neighbours.version() + self.link_changes
    }

    /// The prefixes for the fast path's LPM map, sorted by prefix, one entry per prefix
    /// (module doc, "The table").
    pub fn fast_table(&self) -> Vec<(Ipv4Prefix, FastRoute)> {
        let mut table: BTreeMap<Ipv4Prefix, FastRoute> = BTreeMap::new();
        for prefix in MARTIAN_DST {
            table.insert(prefix, FastRoute::ToCore);
        }
        for p in &self.config.ports {
            table.insert(Ipv4Prefix::host(p.addr), FastRoute::ToCore);
            if p.prefix_len < 31 {
                let host_bits = u32::MAX >> p.prefix_len;
                let broadcast = std::net::Ipv4Addr::from_bits(p.addr.to_bits() | host_bits);
                table.insert(Ipv4Prefix::host(broadcast), FastRoute::ToCore);
            }
        }
        for (prefix, route) in self.tables.fib.iter() {
            if table.contains_key(&prefix) {
                continue;
            }
            let fast = if MARTIAN_DST.iter().any(|m| m.covers(&prefix)) {
                FastRoute::ToCore
            } else {
                self.fast_route(prefix, route)
            };
            table.insert(prefix, fast);
        }
        for (ip, port, mac) in self.neighbours.resolved() {
            let host = Ipv4Prefix::host(ip);
            // Taken already: a FIB /32, the router's own address or a directed broadcast.
            if table.contains_key(&host) || martian_dst(ip) || !self.port_up(port) {
                continue;
            }
            let connected_here = self
                .tables
                .fib
                .lookup(ip)
                .is_some_and(|(_, r)| r.next_hop.gateway.is_none() && r.next_hop.port == port);
            if let (true, Some(hop)) = (connected_here, self.fast_hop(port, mac)) {
                table.insert(host, FastRoute::Forward(hop));
            }
        }
        table.into_iter().collect()
    }

    /// What the core does with a plain packet whose longest match is `prefix`'s `route`.
    fn fast_route(&self, prefix: Ipv4Prefix, route: &Route) -> FastRoute {
        let hop = route.next_hop;
        if !self.port_up(hop.port) {
            return FastRoute::ToCore;
        }
        // The address `send_to_neighbour` resolves: the gateway, or the destination itself —
        // one address only for a /32.
        let neighbour = hop
            .gateway
            .or((prefix.prefix_len() == 32).then(|| prefix.network()));
        match neighbour.and_then(|ip| self.neighbours.get(ip)) {
            Some((port, mac)) if port == hop.port => self
                .fast_hop(port, mac)
                .map_or(FastRoute::ToCore, FastRoute::Forward),
            _ => FastRoute::ToCore,
        }
    }

    /// The hop to `mac` out of `port`, with the port's MAC as source.
    fn fast_hop(&self, port: PortId, mac: Address) -> Option<FastHop> {
        let src_mac = self.config.ports.get(usize::from(port.0))?.mac;
        Some(FastHop {
            port,
            dst_mac: mac,
            src_mac,
        })
    }

    fn port_up(&self, port: PortId) -> bool {
        self.ports.get(usize::from(port.0)).is_some_and(|p| p.up)
    }

    /// Why plain IPv4 forwarding may not bypass the core on `port`, or `None` if it is open
    /// (module doc, "Open ports"). The first reason that holds: "no such port", "paced",
    /// "link down", "reservations leave", "reservations classified".
    pub fn fast_path_closed(&self, port: PortId) -> Option<&'static str> {
        let index = usize::from(port.0);
        let (Some(config), Some(state)) = (self.config.ports.get(index), self.ports.get(index))
        else {
            return Some("no such port");
        };
        if !matches!(config.medium, Medium::Unpaced) {
            return Some("paced");
        }
        if !state.up {
            return Some("link down");
        }
        // Every booking has a positive wire rate (`switched::wire_rate_bps`), so a port with
        // any booking out of it has reserved bit/s.
        let reserved = self.switched.reserved_bps.get(index).copied().unwrap_or(0);
        let gs_buffer = self
            .switched
            .gs_buffer_used
            .get(index)
            .copied()
            .unwrap_or(0);
        if reserved > 0 || gs_buffer > 0 {
            return Some("reservations leave");
        }
        if !self.tables.rsvp.is_empty() || !self.tables.psip.is_empty() {
            return Some("reservations classified");
        }
        None
    }

    /// Whether control frames (RSVP, QSR §6.2's channel) wait in `port`'s control queue: the
    /// shell samples it after transmitting and keeps the port closed to the fast path while
    /// signalling waits (docs/fastpath.md "The protected control channel").
    pub fn control_waiting(&self, port: PortId) -> bool {
        self.ports
            .get(usize::from(port.0))
            .is_some_and(|p| p.sched.control_queued() > 0)
    }

    /// Control frames handed out of `port` so far (0 for an unknown port or one without a
    /// control queue): the shell holds the port closed until the driver has taken the last
    /// one.
    pub fn control_sent(&self, port: PortId) -> u64 {
        self.ports
            .get(usize::from(port.0))
            .map_or(0, |p| p.sched.stats().control_frames_sent)
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;

    #[test]
    fn the_martian_prefixes_are_exactly_the_martian_destinations() {
        for first in 0..=255u8 {
            for addr in [
                Ipv4Addr::new(first, 0, 0, 0),
                Ipv4Addr::new(first, 1, 2, 3),
                Ipv4Addr::new(first, 255, 255, 255),
            ] {
                assert_eq!(
                    MARTIAN_DST.iter().any(|m| m.contains(addr)),
                    martian_dst(addr),
                    "{addr}"
                );
            }
        }
    }
}
