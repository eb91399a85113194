//! The ingress port's decision for one IPv4 packet, in the QSR paper's order (§4.1 and §5):
//! "(1) traps for special (control) packets, (2) the RSVP classifier, (3) the PSIP classifier,
//! and (4) the standard IP forwarder".
//!
//! The traps are §4.1's packets that "require special processing" and go to the control engine:
//! RSVP messages (protocol 46, RFC 2205 §3.1), packets with IP options — among them the Router
//! Alert option (RFC 2113) that RSVP PATH messages carry — and packets addressed to the router
//! itself. Classifiers then steer packets onto reserved flows and provisioned pipes, and what
//! neither selects is forwarded by longest prefix match. The paper's trunk adapters skip the
//! classifiers; a trunk is a [`Tables`] whose classifiers are empty.
//!
//! Pure functions of the packet's header fields and the tables: nothing here changes state.

use std::net::Ipv4Addr;

use super::classify::{FlowKey, RsvpClassifier};
use super::fib::{Fib, NextHop};
use super::psip::PsipClassifier;

/// IP protocol number of RSVP (RFC 2205 §3.1).
pub const PROTO_RSVP: u8 = 46;

/// The header fields the decision reads, as the packet parser extracts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PacketFields {
    /// Source address.
    pub src: Ipv4Addr,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// IP protocol number.
    pub protocol: u8,
    /// (source port, destination port) for TCP or UDP when the packet is not a fragment;
    /// `None` otherwise (the classifier then looks the packet up with zero ports).
    pub ports: Option<(u16, u16)>,
    /// The header carries IP options (IHL above 5).
    pub has_options: bool,
    /// One of the options is Router Alert (RFC 2113).
    pub router_alert: bool,
    /// The destination is one of the router's own addresses.
    pub to_router: bool,
}

impl PacketFields {
    /// The 5-tuple the RSVP classifier is looked up with (zero ports when there are none).
    pub fn flow_key(&self) -> FlowKey {
        let (src_port, dst_port) = self.ports.unwrap_or((0, 0));
        FlowKey {
            src: self.src,
            dst: self.dst,
            protocol: self.protocol,
            src_port,
            dst_port,
        }
    }
}

/// Why a packet goes to the control plane instead of being forwarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TrapReason {
    /// An RSVP message (protocol 46).
    Rsvp,
    /// The Router Alert option is present.
    RouterAlert,
    /// Other IP options are present.
    IpOptions,
    /// Addressed to the router itself.
    Local,
}

/// What to do with a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Decision<F, P> {
    /// Hand it to the control plane.
    Trap(TrapReason),
    /// It belongs to a reserved flow (RSVP classifier).
    Reserved(F),
    /// It enters a provisioned pipe (PSIP classifier).
    Pipe(P),
    /// Forward it, best effort, to this next hop (default forwarding).
    Forward(NextHop),
    /// No route to its destination.
    Unreachable,
}

/// The trap, if any, for a packet: checked in the order of [`TrapReason`]'s variants, so an
/// RSVP message with Router Alert is reported as RSVP, and a packet with options to the router
/// as options.
pub fn trap(packet: &PacketFields) -> Option<TrapReason> {
    if packet.protocol == PROTO_RSVP {
        Some(TrapReason::Rsvp)
    } else if packet.router_alert {
        Some(TrapReason::RouterAlert)
    } else if packet.has_options {
        Some(TrapReason::IpOptions)
    } else if packet.to_router {
        Some(TrapReason::Local)
    } else {
        None
    }
}

/// The look-up structures of one ingress port: the RSVP classifier, the PSIP classifier and the
/// forwarding table, with flow values `F` and pipe values `P`.
#[derive(Debug, Clone)]
pub struct Tables<F, P> {
    /// The RSVP 5-tuple classifier (§4.2).
    pub rsvp: RsvpClassifier<F>,
    /// The PSIP CIDR classifier (§5).
    pub psip: PsipClassifier<P>,
    /// The forwarding table (§4.1).
    pub fib: Fib,
}

impl<F, P> Default for Tables<F, P> {
    fn default() -> Self {
        Self {
            rsvp: RsvpClassifier::new(),
            psip: PsipClassifier::new(),
            fib: Fib::new(),
        }
    }
}

impl<F: Copy, P: Copy> Tables<F, P> {
    /// Empty tables.
    pub fn new() -> Self {
        Self::default()
    }

    /// The decision for `packet`: traps, then the RSVP classifier, then the PSIP classifier,
    /// then the forwarding table (module doc).
    pub fn decide(&self, packet: &PacketFields) -> Decision<F, P> {
        if let Some(reason) = trap(packet) {
            return Decision::Trap(reason);
        }
        if let Some(&flow) = self.rsvp.classify(&packet.flow_key()) {
            return Decision::Reserved(flow);
        }
        if let Some((_, &pipe)) = self.psip.classify(packet.src, packet.dst) {
            return Decision::Pipe(pipe);
        }
        match self.fib.next_hop(packet.dst) {
            Some(hop) => Decision::Forward(hop),
            None => Decision::Unreachable,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::router::fib::{Route, RouteSource};
    use crate::router::psip::CidrFilter;
    use crate::router::Ipv4Prefix;
    use crate::PortId;

    const UDP: u8 = 17;
    const HOP: NextHop = NextHop {
        gateway: Some(Ipv4Addr::new(192, 0, 2, 1)),
        port: PortId(1),
    };

    /// A UDP packet 10.0.0.1:5000 → 10.1.0.1:6000 without options.
    fn packet() -> PacketFields {
        PacketFields {
            src: Ipv4Addr::new(10, 0, 0, 1),
            dst: Ipv4Addr::new(10, 1, 0, 1),
            protocol: UDP,
            ports: Some((5000, 6000)),
            has_options: false,
            router_alert: false,
            to_router: false,
        }
    }

    /// Tables in which `packet()` matches a reservation (flow 7), a pipe (8) and a route.
    fn everything_matches() -> Tables<u32, u32> {
        let mut t = Tables::new();
        t.rsvp.insert(packet().flow_key(), 7).unwrap();
        t.psip
            .insert(
                CidrFilter {
                    src: "10.0.0.0/8".parse().unwrap(),
                    dst: "10.1.0.0/16".parse().unwrap(),
                },
                8,
            )
            .unwrap();
        t.fib
            .insert(
                "10.0.0.0/8".parse().unwrap(),
                Route {
                    next_hop: HOP,
                    source: RouteSource::Static,
                    metric: 1,
                },
            )
            .unwrap();
        t
    }

    #[test]
    fn each_stage_in_turn_takes_what_the_earlier_ones_leave() {
        let mut t = everything_matches();
        assert_eq!(t.decide(&packet()), Decision::Reserved(7));
        t.rsvp.remove(&packet().flow_key());
        assert_eq!(t.decide(&packet()), Decision::Pipe(8));
        t.psip.retain(|_, _| false);
        assert_eq!(t.decide(&packet()), Decision::Forward(HOP));
        t.fib.remove(&"10.0.0.0/8".parse().unwrap());
        assert_eq!(t.decide(&packet()), Decision::Unreachable);
    }

    #[test]
    fn traps_come_before_every_classifier_and_route() {
        let t = everything_matches();
        let cases = [
            (
                PacketFields {
                    has_options: true,
                    ..packet()
                },
                TrapReason::IpOptions,
            ),
            (
                PacketFields {
                    has_options: true,
                    router_alert: true,
                    ..packet()
                },
                TrapReason::RouterAlert,
            ),
            (
                PacketFields {
                    to_router: true,
                    ..packet()
                },
                TrapReason::Local,
            ),
            (
                PacketFields {
                    protocol: PROTO_RSVP,
                    ports: None,
                    has_options: true,
                    router_alert: true,
                    ..packet()
                },
                TrapReason::Rsvp,
            ),
            (
                PacketFields {
                    has_options: true,
                    to_router: true,
                    ..packet()
                },
                TrapReason::IpOptions,
            ),
        ];
        for (packet, reason) in cases {
            assert_eq!(t.decide(&packet), Decision::Trap(reason), "{packet:?}");
        }
    }

    #[test]
    fn an_rsvp_message_is_trapped_even_with_a_reservation_for_its_5_tuple() {
        let mut t: Tables<u32, u32> = Tables::new();
        let rsvp = PacketFields {
            protocol: PROTO_RSVP,
            ports: None,
            ..packet()
        };
        t.rsvp.insert(rsvp.flow_key(), 1).unwrap();
        assert_eq!(t.decide(&rsvp), Decision::Trap(TrapReason::Rsvp));
    }

    #[test]
    fn a_fragment_misses_its_flows_reservation_and_falls_to_the_pipe() {
        let t = everything_matches();
        let fragment = PacketFields {
            ports: None,
            ..packet()
        };
        assert_eq!(t.decide(&fragment), Decision::Pipe(8));
    }

    #[test]
    fn a_wildcard_sender_filter_reserves_every_source_port() {
        let mut t = everything_matches();
        t.rsvp.remove(&packet().flow_key());
        t.rsvp
            .insert(packet().flow_key().any_src_port(), 9)
            .unwrap();
        let other_port = PacketFields {
            ports: Some((5555, 6000)),
            ..packet()
        };
        assert_eq!(t.decide(&other_port), Decision::Reserved(9));
        let other_dst_port = PacketFields {
            ports: Some((5555, 6001)),
            ..packet()
        };
        assert_eq!(t.decide(&other_dst_port), Decision::Pipe(8));
    }

    #[test]
    fn a_default_route_catches_what_no_prefix_covers() {
        let mut t = everything_matches();
        let far = PacketFields {
            dst: Ipv4Addr::new(198, 51, 100, 1),
            ..packet()
        };
        assert_eq!(t.decide(&far), Decision::Unreachable);
        let default = Route {
            next_hop: NextHop {
                gateway: Some(Ipv4Addr::new(192, 0, 2, 254)),
                port: PortId(0),
            },
            source: RouteSource::Kernel,
            metric: 100,
        };
        t.fib.set_default_route(default);
        assert_eq!(t.decide(&far), Decision::Forward(default.next_hop));
        assert_eq!(t.fib.lookup(far.dst).unwrap().0, Ipv4Prefix::DEFAULT);
    }
}
