//! The router's configuration and counters (`docs/qsr.md` §2).

use std::net::Ipv4Addr;
use std::time::Duration;

use rtlan_wire::ethernet::Address;

use super::neighbours::NeighbourConfig;
use super::Ipv4Prefix;
use crate::switch::Rate;
use crate::Medium;

/// One router interface: a port on one IPv4 subnet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouterPort {
    /// Its name (the interface name on Linux), for messages and reports.
    pub name: String,
    /// Its MAC address: the source of every frame it sends, the destination it accepts.
    pub mac: Address,
    /// Its IPv4 address.
    pub addr: Ipv4Addr,
    /// The length of its subnet's prefix (the connected route).
    pub prefix_len: u8,
    /// What it transmits on (a paced line rate, or unpaced).
    pub medium: Medium,
}

/// A route from the configuration: `prefix` via `gateway`, which must be on a connected subnet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StaticRoute {
    /// The destinations.
    pub prefix: Ipv4Prefix,
    /// The next router.
    pub gateway: Ipv4Addr,
    /// Its metric (lower preferred; kept for reports).
    pub metric: u32,
}

/// Everything a [`super::Router`] is built from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouterConfig {
    /// The interfaces, port `i` first.
    pub ports: Vec<RouterPort>,
    /// Static routes.
    pub routes: Vec<StaticRoute>,
    /// ARP for next hops.
    pub neighbours: NeighbourConfig,
    /// ICMP errors (time exceeded, unreachable) each input port may cause (RFC 1812 §4.3.2.8:
    /// a router limits the rate of the ICMP errors it sends).
    pub icmp_errors: Rate,
    /// Whether the router itself answers ARP for its addresses and ICMP echo to them. In the
    /// simulator and tests it must; on Linux the kernel of the router's namespace, which holds
    /// the same addresses, answers them, and two answers would go out.
    pub answer_local: bool,
    /// Bound of each port's default (best-effort) queue, bytes; `None` = the scheduler's
    /// default (2 × line rate × cycle time).
    pub default_queue_bytes: Option<usize>,
    /// Cycle of the ports' schedulers (the unit of their bookkeeping).
    pub cycle_time: Duration,
    /// Frames trapped for the control plane (RSVP, IP options, packets to the router) kept
    /// until [`super::Router::poll_trapped`] takes them; beyond, dropped and counted. 0: there
    /// is no control plane to hand them to (on Linux the kernel of the router's namespace gets
    /// its own copy of every frame): they are only counted.
    pub trap_queue: usize,
    /// RSVP in the router (QSR §3): the engine handles the RSVP messages itself and splices
    /// reserved flows; `None`: RSVP messages are trapped like other control traffic.
    pub rsvp: Option<RsvpSettings>,
}

/// RSVP and the switched paths of a router (`docs/rsvp.md` §7, `docs/qsr.md` §4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RsvpSettings {
    /// Refresh period R of the router's own state (RFC 2205 default 30 s).
    pub refresh: Duration,
    /// Share of every port's line rate that reservations never take (the default-IP floor,
    /// QSR §3.1's "nominal rate"), percent, 0–99.
    pub default_floor_percent: u8,
    /// Guaranteed-Service buffer of each port, bytes: every Guaranteed flow takes 2M of it
    /// (QSR §3.1).
    pub gs_buffer_bytes: usize,
    /// Controlled-Load buffer of each port, bytes, shared statistically: a Controlled-Load
    /// flow is admitted while the Gaussian estimate of overflowing it stays below
    /// 10^−`cl_overflow_exponent` (QSR §3.1, `egress::admission`).
    pub cl_buffer_bytes: usize,
    /// ε = 10^−k of the Controlled-Load buffer test.
    pub cl_overflow_exponent: u8,
    /// Most path states and most reservations.
    pub max_states: usize,
    /// Seed of the refresh jitter.
    pub seed: u64,
    /// RSVP leaves by each port's control queue, ahead of data (QSR §6.2's protected channel);
    /// `false` puts it in the default queue with the data, as before the paper's fix — for
    /// experiments that show the failure.
    pub protected: bool,
    /// Ingress routers whose provisioned pipes may end here (QSR §5), by prefix; empty: any
    /// rtlan router's (a labelled path).
    pub psip_peers: Vec<crate::prefix::Ipv4Prefix>,
    /// How late the router's driver may wake (receive or send) without a reserved flow losing
    /// a packet: every reserved flow's queue gets room for two such delays at its rate (one
    /// late receive, one late send: what arrives meanwhile comes in one batch), and each hop's
    /// D in the ADSPEC grows by two (docs/qsr.md §4). The paper's hardware needed none; a
    /// software router on a loaded machine does (docs/delay.md §4). Default 400 µs, as the
    /// switch's.
    pub lateness_budget: Duration,
}

impl Default for RsvpSettings {
    /// R = 30 s, a 10 % default floor, 256 KiB of Guaranteed buffer per port (87 flows of
    /// 1,500-byte packets), 256 KiB of Controlled-Load buffer with ε = 10⁻⁶, 100,000 states,
    /// RSVP on the protected control queue.
    fn default() -> Self {
        RsvpSettings {
            refresh: Duration::from_secs(30),
            default_floor_percent: 10,
            gs_buffer_bytes: 256 * 1024,
            cl_buffer_bytes: 256 * 1024,
            cl_overflow_exponent: 6,
            max_states: 100_000,
            seed: 1,
            protected: true,
            psip_peers: Vec::new(),
            lateness_budget: crate::switch::DEFAULT_LATENESS_BUDGET,
        }
    }
}

impl RouterConfig {
    /// A configuration of `ports` with the defaults: no static routes, Linux's ARP timers, 100
    /// ICMP errors per second per port (burst 50), answering locally, 10 ms cycles, 256 trapped
    /// frames.
    pub fn new(ports: Vec<RouterPort>) -> RouterConfig {
        RouterConfig {
            ports,
            routes: Vec::new(),
            neighbours: NeighbourConfig::default(),
            icmp_errors: Rate {
                per_second: 100,
                burst: 50,
            },
            answer_local: true,
            default_queue_bytes: None,
            cycle_time: Duration::from_millis(10),
            trap_queue: 256,
            rsvp: None,
        }
    }
}

/// Why a router configuration was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouterConfigError {
    /// No ports.
    #[error("a router needs at least one port")]
    NoPorts,
    /// A prefix length above 32 (or a port address that does not fit its prefix).
    #[error("port {port}: {source}")]
    BadPrefix {
        /// The port.
        port: String,
        /// The prefix error.
        source: super::PrefixError,
    },
    /// Two ports on one subnet.
    #[error("ports {a} and {b} are on the same subnet {prefix}")]
    SameSubnet {
        /// One port.
        a: String,
        /// The other.
        b: String,
        /// The subnet.
        prefix: Ipv4Prefix,
    },
    /// A static route's gateway is on no connected subnet.
    #[error("route {prefix} via {gateway}: the gateway is on none of the router's subnets")]
    GatewayNotConnected {
        /// The route.
        prefix: Ipv4Prefix,
        /// Its gateway.
        gateway: Ipv4Addr,
    },
    /// A port's scheduler refused its configuration.
    #[error("port {port}: {error}")]
    Scheduler {
        /// The port.
        port: String,
        /// The scheduler's error.
        error: crate::egress::SchedError,
    },
}

/// Counters of one port.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct RouterPortStats {
    /// Frames received.
    pub rx_frames: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Frames sent.
    pub tx_frames: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Frames the port's default queue had no room for.
    pub drop_queue_full: u64,
}

/// ICMP messages the router sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct IcmpStats {
    /// Time exceeded (TTL ran out).
    pub time_exceeded: u64,
    /// Destination unreachable, no route.
    pub net_unreachable: u64,
    /// Destination unreachable, the neighbour did not answer ARP.
    pub host_unreachable: u64,
    /// Destination unreachable, fragmentation needed and DF set.
    pub frag_needed: u64,
    /// Echo replies (with `answer_local`).
    pub echo_reply: u64,
    /// Errors not sent: over the input port's ICMP rate.
    pub rate_limited: u64,
    /// Errors not sent because RFC 1812 §4.3.2.7 forbids them (about an ICMP error, a
    /// broadcast or multicast, a non-first fragment, or an invalid source).
    pub suppressed: u64,
}

/// Counters of a router. Every received frame is counted once in `forwarded`, `trapped_*`,
/// `arp_in`, `held` (then once more when it leaves the neighbour queue: `released` or one of
/// the ARP drops) or one of the `drop_*`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct RouterStats {
    /// Per port, indexed by port.
    pub ports: Vec<RouterPortStats>,
    /// IPv4 packets forwarded (queued on an output port).
    pub forwarded: u64,
    /// Packets held while their next hop is resolved.
    pub held: u64,
    /// Held packets that left once the next hop answered.
    pub released: u64,
    /// RSVP messages trapped for the control plane.
    pub trapped_rsvp: u64,
    /// Packets with the Router Alert option trapped.
    pub trapped_router_alert: u64,
    /// Packets with other IP options trapped.
    pub trapped_options: u64,
    /// Packets to the router's own addresses (answered, or left to the control plane).
    pub trapped_local: u64,
    /// ARP packets handled.
    pub arp_in: u64,
    /// ARP requests sent for next hops.
    pub arp_requests_sent: u64,
    /// ARP replies sent for the router's addresses.
    pub arp_replies_sent: u64,
    /// Frames not addressed to the router (another unicast MAC).
    pub drop_not_for_us: u64,
    /// Frames too short or malformed (Ethernet, ARP or IPv4 header).
    pub drop_malformed: u64,
    /// IPv4 headers with a wrong checksum.
    pub drop_bad_checksum: u64,
    /// EtherTypes the router does not route (MPLS until switched paths exist, IPv6, …).
    pub drop_unsupported: u64,
    /// Destinations never forwarded (RFC 1812 §5.3.7: 0/8, 127/8, class E, limited broadcast,
    /// multicast without multicast routing) and sources never accepted (own, multicast).
    pub drop_martian: u64,
    /// TTL ran out.
    pub drop_ttl: u64,
    /// No route.
    pub drop_no_route: u64,
    /// Larger than the output port's frame limit (no fragmentation in this version).
    pub drop_too_big: u64,
    /// Held packets dropped: the next hop never answered.
    pub drop_arp_failed: u64,
    /// Packets dropped: the next hop's queue or the table of unresolved neighbours was full.
    pub drop_arp_full: u64,
    /// Out of a port whose carrier is down.
    pub drop_link_down: u64,
    /// Trapped frames dropped because the control plane's queue was full.
    pub drop_trap_full: u64,
    /// ICMP sent.
    pub icmp: IcmpStats,
    /// Route changes applied (`install_route`, `remove_route`).
    pub route_changes: u64,
    /// Labelled (MPLS) frames received.
    pub labelled_in: u64,
    /// Labelled frames switched on (swapped) or popped to plain IP.
    pub labelled_switched: u64,
    /// Labelled frames with a label no splice installed.
    pub drop_unknown_label: u64,
    /// Labelled frames whose MPLS TTL ran out.
    pub drop_label_ttl: u64,
    /// Packets the RSVP classifier put on a reservation at this (first) router.
    pub reserved_in: u64,
    /// Packets of a reserved sender beyond its TSpec, forwarded as default IP instead.
    pub demoted_excess: u64,
    /// Reserved frames the flow's queue refused (the flow sent faster than reserved).
    pub drop_reserved_queue: u64,
    /// Reserved frames whose next hop's MAC was not known (an ARP request went out).
    pub drop_switched_unresolved: u64,
    /// RSVP messages that did not parse or decode.
    pub drop_bad_rsvp: u64,
    /// Paths of provisioned pipes that came unlabelled — from a host, which may not start a
    /// pipe (QSR §5) — dropped.
    pub drop_psip_unlabelled: u64,
    /// The RSVP engine's counters (zero without RSVP).
    pub rsvp: crate::rsvp::RsvpStats,
}
