//! The RSVP soft-state engine of the QoS switch-router and of the host daemon (QSR paper §3.2;
//! RFC 2205 §3; `docs/rsvp.md` §7), sans IO.
//!
//! Path messages leave path state (a PSB per session and sender) in every node from the sender
//! to the receiver; in a router whose next hop is another router the Path also carries the label
//! this router chose for the path on the link (in the LIH of its RSVP_HOP: the paper's VC,
//! §3.2). Resv messages travel back hop by hop: each node admits the reservation on the path's
//! output port ([`Resources`]), *splices* the path — input label (or, at the first router, the
//! sender's 5-tuple) to output label (or, at the last router, plain IP) — and passes the Resv
//! upstream. Both kinds of state are soft: refreshed every R, dropped after
//! L = (K + 0.5) × 1.5 × R without a refresh (RFC 2205 §3.7), torn down at once by PathTear and
//! ResvTear, and re-routed when routing changes (QSR §3.2).
//!
//! The engine never reads a clock or a socket. Drive it with [`Rsvp::handle_message`],
//! [`Rsvp::handle_timeout`] (when [`Rsvp::poll_timeout`] is due), [`Rsvp::route_changed`] and,
//! on a host, the application calls ([`Rsvp::open_sender`], [`Rsvp::reserve`], …); then take
//! [`Rsvp::poll_output`] until `None`: messages to send, splices for the data path, events for
//! applications.
//!
//! Written here: RSVP engines exist in C (the ISI rsvpd, Linux's long-gone one, router OSs);
//! none is a library, none is sans-IO, and none carries the QSR's labels.

mod deadlines;
mod engine;
mod labels;
#[cfg(test)]
mod tests;

use std::net::Ipv4Addr;
use std::time::Duration;

pub use engine::Rsvp;
pub use labels::FIRST_LABEL;
use rtlan_wire::rsvp::{ErrorSpec, FilterSpec, Flowspec, Message, SenderDescriptor, Session};

use crate::PortId;

/// A reservation's handle: the flow the data path puts the reservation's frames on.
pub type ResvId = u32;

/// Which side of the network the engine runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A QSR router: forwards Path and Resv, allocates labels towards other routers, splices.
    Router,
    /// A host: originates Path for its senders and Resv for its receivers, never labels.
    Host,
}

/// Everything an engine is built from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RsvpConfig {
    /// Router or host.
    pub role: Role,
    /// The node's IPv4 address on each port, port `i` first.
    pub addresses: Vec<Ipv4Addr>,
    /// The refresh period R this node sends its own state with (RFC 2205 default 30 s).
    pub refresh: Duration,
    /// K: refreshes that may be lost before state expires (RFC 2205 default 3).
    pub keep: u32,
    /// Most path states held; beyond, a new Path is answered with PathErr (23).
    pub max_paths: usize,
    /// Most reservations held; beyond, a new Resv is answered with ResvErr (23).
    pub max_resvs: usize,
    /// Seed of the refresh jitter, so that runs repeat.
    pub seed: u64,
}

impl RsvpConfig {
    /// A configuration with RFC 2205's timers (R = 30 s, K = 3) and 100,000 states of each
    /// kind.
    pub fn new(role: Role, addresses: Vec<Ipv4Addr>) -> RsvpConfig {
        RsvpConfig {
            role,
            addresses,
            refresh: Duration::from_secs(30),
            keep: 3,
            max_paths: 100_000,
            max_resvs: 100_000,
            seed: 1,
        }
    }
}

/// Where routing sends a destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteTo {
    /// The output port.
    pub port: PortId,
    /// The next router, or `None` when the destination is on the port's subnet.
    pub gateway: Option<Ipv4Addr>,
}

/// The node's routing, as the engine sees it.
pub trait Routing {
    /// The route to `dst`, `None` if there is none.
    fn route(&self, dst: Ipv4Addr) -> Option<RouteTo>;

    /// Whether this router ends `session` as a *receiver proxy* although the destination is
    /// not one of its addresses (RFC 5945 §4; the QSR's provisioned pipes, §5, whose sessions
    /// end at the egress router in front of the destination subnets). Routers only; none by
    /// default.
    fn proxies(&self, _session: &Session) -> bool {
        false
    }
}

/// What an output port adds to the path's ADSPEC (RFC 2210 §3.3, RFC 2212 C and D).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HopTerms {
    /// The port's rate available to reservations, bytes/s (the path bandwidth estimate).
    pub bandwidth: f32,
    /// The port's minimum latency, µs (propagation and fixed processing).
    pub latency_us: u32,
    /// The port's MTU, bytes.
    pub mtu: u32,
    /// Guaranteed service on this port: its rate-dependent error term C (bytes) and its
    /// rate-independent term D (µs); `None` if the port has no Guaranteed service.
    pub guaranteed: Option<(u32, u32)>,
    /// Whether the port offers Controlled-Load service.
    pub controlled_load: bool,
}

/// A reservation to admit on an output port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResvRequest<'a> {
    /// The session.
    pub session: &'a Session,
    /// The service and its parameters.
    pub flowspec: &'a Flowspec,
    /// The senders it covers (one for Fixed-Filter, several for Shared-Explicit).
    pub senders: &'a [FilterSpec],
}

/// Why a reservation was refused: the ERROR_SPEC code and value sent back in ResvErr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    /// RFC 2205 Appendix B error code.
    pub code: rtlan_wire::rsvp::ErrorCode,
    /// Its value (for admission failures, RFC 2205 B: 1 delay, 2 bandwidth, 3 buffer, …).
    pub value: u16,
}

/// The node's resources, as the engine sees them.
pub trait Resources {
    /// Admits reservation `id` on output `port`, or changes it if `id` is already admitted
    /// there (a refused change leaves the old reservation in place).
    fn reserve(
        &mut self,
        port: PortId,
        id: ResvId,
        request: &ResvRequest<'_>,
    ) -> Result<(), Refusal>;
    /// Releases reservation `id` on `port`.
    fn release(&mut self, port: PortId, id: ResvId);
    /// This hop's ADSPEC terms on `port`; `None` leaves the ADSPEC as it is.
    fn hop_terms(&self, port: PortId) -> Option<HopTerms>;
}

/// The resources of a node that books nothing with RSVP — a host, whose own admission and
/// shaping already happened: every reservation is accepted, nothing is added to the ADSPEC.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoResources;

impl Resources for NoResources {
    fn reserve(&mut self, _: PortId, _: ResvId, _: &ResvRequest<'_>) -> Result<(), Refusal> {
        Ok(())
    }

    fn release(&mut self, _: PortId, _: ResvId) {}

    fn hop_terms(&self, _: PortId) -> Option<HopTerms> {
        None
    }
}

/// A message to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    /// The output port.
    pub port: PortId,
    /// IP source: the node's address on that port.
    pub src: Ipv4Addr,
    /// IP destination.
    pub dst: Ipv4Addr,
    /// Whose MAC address the frame goes to (the next hop, or `dst` on the port's subnet).
    pub next_hop: Ipv4Addr,
    /// IP TTL (and the message's Send_TTL).
    pub ttl: u8,
    /// Whether the IP header carries the Router Alert option (Path, PathTear, ResvConf).
    pub router_alert: bool,
    /// The message.
    pub message: Message,
}

/// A sender's path, now reserved: how the data path switches its frames. A splice for a
/// (reservation, sender) already spliced replaces it (the FLOWSPEC changed); whenever the input
/// side moves, an [`Unsplice`] of the old one comes first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Splice {
    /// The reservation (the flow the frames go on).
    pub resv: ResvId,
    /// The session.
    pub session: Session,
    /// The sender.
    pub sender: FilterSpec,
    /// Where the sender's frames arrive; `None` for a local sender.
    pub in_port: Option<PortId>,
    /// The label they arrive with; `None`: unlabelled IP, classified by 5-tuple (first router).
    pub in_label: Option<u32>,
    /// Where they leave.
    pub out_port: PortId,
    /// Whose MAC they go to.
    pub next_hop: Ipv4Addr,
    /// The label they leave with; `None`: plain IP (last router, or a host).
    pub out_label: Option<u32>,
    /// The reserved service.
    pub flowspec: Flowspec,
}

/// A splice to undo: the sender's frames go back to default forwarding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unsplice {
    /// The reservation it belonged to.
    pub resv: ResvId,
    /// The session.
    pub session: Session,
    /// The sender.
    pub sender: FilterSpec,
    /// Where the sender's frames arrive.
    pub in_port: Option<PortId>,
    /// The label they arrived with.
    pub in_label: Option<u32>,
    /// Where they left.
    pub out_port: PortId,
}

/// Something an application (or the operator) is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// At a receiver: a sender's Path arrived or changed.
    PathArrived {
        /// The session.
        session: Session,
        /// The sender with its TSpec and the composed ADSPEC.
        sender: SenderDescriptor,
    },
    /// At a receiver: a sender's path state is gone (PathTear or timeout).
    PathGone {
        /// The session.
        session: Session,
        /// The sender.
        sender: FilterSpec,
    },
    /// At a sender: the reservation for it reached the sender.
    Reserved {
        /// The session.
        session: Session,
        /// The sender.
        sender: FilterSpec,
        /// What was reserved.
        flowspec: Flowspec,
    },
    /// At a sender: the reservation for it is gone.
    ReservationGone {
        /// The session.
        session: Session,
        /// The sender.
        sender: FilterSpec,
    },
    /// At a sender: a PathErr arrived.
    PathError {
        /// The session.
        session: Session,
        /// The sender it concerns.
        sender: FilterSpec,
        /// The error.
        error: ErrorSpec,
    },
    /// At a receiver: a ResvErr arrived, or the local reservation was refused.
    ResvError {
        /// The session.
        session: Session,
        /// The senders in error (none for a refused wildcard style).
        senders: Vec<FilterSpec>,
        /// The error.
        error: ErrorSpec,
    },
    /// At a receiver: a ResvConf arrived.
    Confirmed {
        /// The session.
        session: Session,
        /// The node that confirmed.
        node: Ipv4Addr,
    },
}

/// What the engine asks its driver to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Send a message.
    Send(Outgoing),
    /// Switch a sender's frames on its reservation.
    Splice(Splice),
    /// Return a sender's frames to default forwarding.
    Unsplice(Unsplice),
    /// Tell an application.
    Event(Event),
}

/// The IP header fields of a received message the engine needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    /// The port it arrived on.
    pub port: PortId,
    /// IP source.
    pub src: Ipv4Addr,
    /// IP TTL on arrival.
    pub ttl: u8,
}

/// Counters of an engine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct RsvpStats {
    /// Messages handled, by type.
    pub path_in: u64,
    /// Resv messages handled.
    pub resv_in: u64,
    /// PathTear messages handled.
    pub path_tear_in: u64,
    /// ResvTear messages handled.
    pub resv_tear_in: u64,
    /// PathErr, ResvErr and ResvConf messages handled.
    pub errors_and_confirmations_in: u64,
    /// Messages sent.
    pub sent: u64,
    /// Path states now.
    pub paths: u64,
    /// Reservations now.
    pub resvs: u64,
    /// Path states that expired without a refresh.
    pub path_timeouts: u64,
    /// Reservations that expired without a refresh.
    pub resv_timeouts: u64,
    /// Reservations refused by admission control.
    pub admission_refused: u64,
    /// Resv messages for senders without path state.
    pub no_path: u64,
    /// Paths dropped: no route, TTL expired, or they would leave by the port they came in on.
    pub path_dropped: u64,
    /// Paths refused because their announced label is used by another path on the port.
    pub label_conflicts: u64,
    /// Paths or reservations refused at `max_paths` / `max_resvs`.
    pub state_full: u64,
    /// Paths re-routed after a route change (a held path sent on again counts too).
    pub rerouted: u64,
    /// Paths whose route went away: held without one until routing offers another (local
    /// repair, RFC 2205 §3.6).
    pub path_unrouted: u64,
    /// Messages ignored: from a hop that does not own the state, or of an unsupported style.
    pub ignored: u64,
}
