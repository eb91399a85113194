//! Provisioned pipes: the QSR paper's "Provisioned IP Service" (PSIP, §5), `docs/qsr.md` §5.
//!
//! An operator asks the *ingress* router for a pipe from source subnets to a destination
//! subnet, with a service (Controlled-Load, as the paper ran it, or Guaranteed) and a TSpec.
//! The ingress router is the pipe's RSVP sender: it sends a Path for a session whose
//! destination is the destination subnet's network address and whose port is a PSIP port
//! ([`PSIP_PORT_CONTROLLED_LOAD`], [`PSIP_PORT_GUARANTEED`]: the service asked for), its sender
//! template its own first address and the pipe's number. The Path follows the routed path like
//! any other; the router to which the destination subnet is attached ends it as a *receiver
//! proxy* (RFC 5945 §4: the paper's "different local end-points", so that the switched pipe ends
//! at the port of the destination subnets instead of at the control engine), books the pipe on
//! that port and answers with a Resv. The Resv books and splices every hop back to the ingress,
//! whose splice puts the pipe's CIDR filters into the PSIP classifier (§5: "inserted into the
//! forwarding code at the ingress port", after the RSVP classifier). From then on packets that
//! match a filter are policed at the pipe's TSpec (excess goes out as default IP, §3.1), pushed
//! onto the pipe's label, switched by label, popped at the egress router and sent by a route
//! lookup on the pipe's flow of the destination subnet's port.
//!
//! This module keeps the pipes' records and checks the operator's requests; the router node
//! (`node.rs`) drives the RSVP engine and the data path with them.
//!
//! Differences from the paper, on purpose:
//! - The egress router is found by routing, hop by hop, rather than by querying routing
//!   information at the ingress: the session's destination *is* the destination subnet, and the
//!   router that has the subnet attached is where it ends. No operator has to know the egress.
//! - A pipe has one destination subnet and any number of source prefixes; a pipe to several
//!   destination subnets is several pipes (each is one RSVP session, with one egress).
//! - Pipes to a subnet attached to the ingress router itself are refused: there is no switched
//!   path to set up.
//! - An egress accepts a pipe only from a path that arrives labelled (an rtlan router's path,
//!   not a host's) and, if `psip_peers` is set, only from the ingress routers listed there: an
//!   egress books its port for whoever asks, so who may ask is the operator's to say.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use rtlan_wire::rsvp::{
    Adspec, ErrorSpec, F32Bits, FilterSpec, Flowspec, Rspec, SenderDescriptor, Session,
    TokenBucket as Tspec,
};

use super::psip::CidrFilter;
use super::Ipv4Prefix;
use crate::rsvp::ResvId;
use crate::time::Instant;
use crate::PortId;

/// The session port of a Controlled-Load pipe.
pub const PSIP_PORT_CONTROLLED_LOAD: u16 = 65_001;
/// The session port of a Guaranteed pipe.
pub const PSIP_PORT_GUARANTEED: u16 = 65_002;
/// The session protocol of pipes (UDP: the session names no data protocol — filters do).
pub const PSIP_PROTOCOL: u8 = 17;
/// Most pipes one router starts.
pub const MAX_PIPES: usize = 1024;
/// Most source prefixes of one pipe.
pub const MAX_SOURCES: usize = 64;
/// Longest pipe name, bytes.
pub const MAX_NAME: usize = 64;
/// Bookings of pipes ending here use reservation ids from here up; the RSVP engine's own ids
/// count up from 1 and never get near.
pub(crate) const EGRESS_BOOKING_BASE: ResvId = 0x8000_0000;

/// The service of a pipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PipeService {
    /// Controlled-Load (RFC 2211) on WF²Q+ at the TSpec rate: what the paper's pipes used.
    ControlledLoad,
    /// Guaranteed (RFC 2212) on the timing wheel at R = the TSpec rate.
    Guaranteed,
}

impl PipeService {
    /// The session port that asks for this service.
    pub fn port(self) -> u16 {
        match self {
            PipeService::ControlledLoad => PSIP_PORT_CONTROLLED_LOAD,
            PipeService::Guaranteed => PSIP_PORT_GUARANTEED,
        }
    }

    /// The service a session port asks for, if it is a PSIP port.
    pub fn of_port(port: u16) -> Option<PipeService> {
        match port {
            PSIP_PORT_CONTROLLED_LOAD => Some(PipeService::ControlledLoad),
            PSIP_PORT_GUARANTEED => Some(PipeService::Guaranteed),
            _ => None,
        }
    }

    /// The reservation the egress asks for a sender's TSpec.
    pub(crate) fn flowspec(self, tspec: Tspec) -> Flowspec {
        match self {
            PipeService::ControlledLoad => Flowspec::ControlledLoad { tspec },
            PipeService::Guaranteed => Flowspec::Guaranteed {
                tspec,
                rspec: Rspec {
                    rate: tspec.rate,
                    slack: 0,
                },
            },
        }
    }
}

/// Whether a session is a pipe's.
pub fn is_pipe_session(session: &Session) -> bool {
    session.protocol_id == PSIP_PROTOCOL && PipeService::of_port(session.dst_port).is_some()
}

/// What an operator asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipeSpec {
    /// A name, unique on this router: letters, digits, `.`, `_`, `-`.
    pub name: String,
    /// Source prefixes whose packets enter the pipe (0.0.0.0/0: any source).
    pub from: Vec<Ipv4Prefix>,
    /// The destination subnet: attached to the egress router.
    pub to: Ipv4Prefix,
    /// The service.
    pub service: PipeService,
    /// Token rate r, IP bits per second.
    pub rate_bps: u64,
    /// Bucket depth b, bytes.
    pub burst_bytes: u64,
    /// Largest IP packet M, bytes; larger packets go as default IP.
    pub max_packet: u32,
}

/// Why a pipe request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PipeError {
    /// The router runs without RSVP.
    #[error("this router runs without RSVP: pipes are set up with it")]
    NoRsvp,
    /// The name is empty, too long or has characters other than letters, digits, `.`, `_`, `-`.
    #[error("pipe name {0:?} must be 1 to 64 letters, digits, '.', '_' or '-'")]
    BadName(String),
    /// A pipe of that name exists.
    #[error("a pipe named {0:?} exists already")]
    NameExists(String),
    /// The rate is outside 1 kbit/s ..= 100 Gbit/s.
    #[error("rate {0} bit/s is outside 1 kbit/s to 100 Gbit/s")]
    BadRate(u64),
    /// The largest packet is outside 64 ..= 1500 bytes.
    #[error("max_packet {0} bytes is outside 64 to 1500")]
    BadMaxPacket(u32),
    /// The bucket is smaller than one largest packet or above 1 GiB.
    #[error("burst {burst} bytes must be at least max_packet ({max_packet}) and at most 1 GiB")]
    BadBurst {
        /// The bucket asked for.
        burst: u64,
        /// The largest packet.
        max_packet: u32,
    },
    /// No source prefix, or more than [`MAX_SOURCES`].
    #[error("a pipe needs 1 to 64 source prefixes, got {0}")]
    BadSources(usize),
    /// The destination is shorter than /8 (0.0.0.0/0 is no subnet).
    #[error("destination {0} is not a subnet (it must be /8 or longer)")]
    BadDestination(Ipv4Prefix),
    /// The destination subnet is attached to this router: there is no path to switch.
    #[error(
        "destination {0} is attached to this router: a pipe starts where its destination is not"
    )]
    DestinationAttached(Ipv4Prefix),
    /// The router has no route to the destination.
    #[error("no route to {0}")]
    NoRoute(Ipv4Prefix),
    /// Another pipe has a filter of the same pair of prefixes.
    #[error("filter {src} → {dst} belongs to pipe {pipe:?} already")]
    FilterTaken {
        /// The source prefix.
        src: Ipv4Prefix,
        /// The destination prefix.
        dst: Ipv4Prefix,
        /// The pipe that has it.
        pipe: String,
    },
    /// [`MAX_PIPES`] pipes start here already.
    #[error("this router starts {MAX_PIPES} pipes already")]
    Full,
    /// No pipe of that id or name starts here.
    #[error("no pipe {0:?} starts here")]
    NotFound(String),
}

impl PipeError {
    /// The management API's error code.
    pub fn code(&self) -> &'static str {
        match self {
            PipeError::NoRsvp => "no_rsvp",
            PipeError::BadName(_)
            | PipeError::BadRate(_)
            | PipeError::BadMaxPacket(_)
            | PipeError::BadBurst { .. }
            | PipeError::BadSources(_)
            | PipeError::BadDestination(_) => "bad_request",
            PipeError::NameExists(_) => "name_exists",
            PipeError::DestinationAttached(_) => "destination_attached",
            PipeError::NoRoute(_) => "no_route",
            PipeError::FilterTaken { .. } => "filter_taken",
            PipeError::Full => "too_many_pipes",
            PipeError::NotFound(_) => "not_found",
        }
    }
}

impl PipeSpec {
    /// Checks what can be checked without the router's state.
    pub fn validate(&self) -> Result<(), PipeError> {
        let name_ok = !self.name.is_empty()
            && self.name.len() <= MAX_NAME
            && self
                .name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
        if !name_ok {
            return Err(PipeError::BadName(self.name.clone()));
        }
        if !(1_000..=100_000_000_000).contains(&self.rate_bps) {
            return Err(PipeError::BadRate(self.rate_bps));
        }
        if !(64..=1500).contains(&self.max_packet) {
            return Err(PipeError::BadMaxPacket(self.max_packet));
        }
        if self.burst_bytes < u64::from(self.max_packet) || self.burst_bytes > 1 << 30 {
            return Err(PipeError::BadBurst {
                burst: self.burst_bytes,
                max_packet: self.max_packet,
            });
        }
        if self.from.is_empty() || self.from.len() > MAX_SOURCES {
            return Err(PipeError::BadSources(self.from.len()));
        }
        if self.to.prefix_len() < 8 {
            return Err(PipeError::BadDestination(self.to));
        }
        Ok(())
    }

    /// The pipe's filters: each source prefix to the destination subnet, without repeats.
    pub fn filters(&self) -> Vec<CidrFilter> {
        let mut v: Vec<CidrFilter> = self
            .from
            .iter()
            .map(|src| CidrFilter {
                src: *src,
                dst: self.to,
            })
            .collect();
        v.sort();
        v.dedup();
        v
    }

    /// The pipe's TSpec: r and b as asked, peak unknown (the line rate), m = 64.
    pub fn tspec(&self) -> Tspec {
        Tspec {
            rate: F32Bits::from_f32(self.rate_bps as f32 / 8.0),
            size: F32Bits::from_f32(self.burst_bytes as f32),
            peak: F32Bits::from_f32(f32::INFINITY),
            min_policed_unit: 64,
            max_packet_size: self.max_packet,
        }
    }

    /// The pipe's RSVP session.
    pub fn session(&self) -> Session {
        Session {
            dst_addr: self.to.network(),
            protocol_id: PSIP_PROTOCOL,
            flags: 0,
            dst_port: self.service.port(),
        }
    }

    /// The sender descriptor of pipe `id` from router address `router`.
    pub(crate) fn sender(&self, router: Ipv4Addr, id: u16) -> SenderDescriptor {
        SenderDescriptor {
            sender_template: FilterSpec {
                src_addr: router,
                src_port: id,
            },
            sender_tspec: self.tspec(),
            adspec: Some(Adspec::sender_initial(self.max_packet)),
        }
    }
}

/// Where a pipe stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PipeState {
    /// Path sent, no reservation yet.
    Signalling,
    /// Reserved and switched: the filters are in the classifier.
    Up,
    /// A hop refused it (the error says which and why); refreshes keep asking.
    Refused,
    /// No route towards the destination at the moment.
    NoRoute,
}

/// Packets a pipe carried.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PipeCounters {
    /// Packets that entered the pipe (ingress) or left it (egress).
    pub packets: u64,
    /// Their IP bytes.
    pub bytes: u64,
    /// Packets beyond the TSpec, sent as default IP instead (ingress).
    pub demoted: u64,
}

impl PipeCounters {
    pub(crate) fn add(&mut self, other: PipeCounters) {
        self.packets += other.packets;
        self.bytes += other.bytes;
        self.demoted += other.demoted;
    }
}

/// A hop's refusal, as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PipeRefusal {
    /// The node that refused.
    pub node: Ipv4Addr,
    /// RFC 2205 error code and value.
    pub code: u8,
    /// The value.
    pub value: u16,
    /// In words.
    pub reason: String,
}

impl PipeRefusal {
    pub(crate) fn of(error: &ErrorSpec) -> PipeRefusal {
        let code = u8::from(error.code);
        let reason = match (code, error.value) {
            (1, 1) => "admission control: delay bound cannot be met",
            (1, 2) => "admission control: bandwidth unavailable",
            (1, 3) => "admission control: buffer unavailable",
            (1, _) => "admission control failure",
            (2, _) => "policy: not accepted from this ingress",
            (3, _) => "no path state",
            (13, _) => "RSVP system error",
            (21, _) => "traffic control error",
            (22, _) => "traffic control system error",
            (23, _) => "RSVP state limit reached",
            _ => "refused",
        };
        PipeRefusal {
            node: error.node,
            code,
            value: error.value,
            reason: reason.to_string(),
        }
    }
}

/// A pipe as the API lists it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PipeStatus {
    /// `ingress` (started here, by name) or `egress` (ends here, started by `ingress_router`).
    pub role: &'static str,
    /// The pipe's number at its ingress router (the sender port of its session).
    pub id: u16,
    /// Its name (at the ingress; empty at the egress, which is not told).
    pub name: String,
    /// The ingress router (the session's sender).
    pub ingress_router: Ipv4Addr,
    /// Source prefixes (at the ingress).
    pub from: Vec<String>,
    /// The destination subnet.
    pub to: String,
    /// The service.
    pub service: PipeService,
    /// Token rate r, IP bit/s.
    pub rate_bps: u64,
    /// Bucket depth b, bytes.
    pub burst_bytes: u64,
    /// Largest packet M, bytes.
    pub max_packet: u32,
    /// Where it stands.
    pub state: PipeState,
    /// The last refusal, while it is refused.
    pub refusal: Option<PipeRefusal>,
    /// The port its packets leave by here, and the label they carry (none: plain IP).
    pub port: Option<String>,
    /// The label on that port.
    pub label: Option<u32>,
    /// What it carried here.
    pub counters: PipeCounters,
    /// Seconds since it was created (ingress) or first reached here (egress).
    pub age_s: f64,
    /// Seconds it has been up, if it is.
    pub up_s: Option<f64>,
}

/// A pipe started here.
#[derive(Debug, Clone)]
pub(crate) struct IngressPipe {
    pub(crate) spec: PipeSpec,
    pub(crate) session: Session,
    pub(crate) sender: FilterSpec,
    /// While spliced: the ingress entry its filters point at.
    pub(crate) entry: Option<u32>,
    /// While spliced: output port and label.
    pub(crate) out: Option<(PortId, Option<u32>)>,
    pub(crate) refusal: Option<ErrorSpec>,
    /// Counters of the entries it had before (each splice gets a fresh entry).
    pub(crate) counted: PipeCounters,
    pub(crate) created: Instant,
    pub(crate) up_since: Option<Instant>,
}

/// A pipe that ends here.
#[derive(Debug, Clone)]
pub(crate) struct EgressPipe {
    pub(crate) session: Session,
    pub(crate) sender: SenderDescriptor,
    /// Where its labelled frames arrive.
    pub(crate) in_port: PortId,
    pub(crate) in_label: u32,
    /// The destination subnet's port, where it is booked; `None` while refused.
    pub(crate) port: Option<PortId>,
    pub(crate) refusal: Option<ErrorSpec>,
    pub(crate) counters: PipeCounters,
    pub(crate) since: Instant,
}

impl EgressPipe {
    /// The service its session's port asks for.
    pub(crate) fn service(&self) -> PipeService {
        PipeService::of_port(self.session.dst_port).unwrap_or(PipeService::ControlledLoad)
    }
}

/// The router's pipes.
#[derive(Debug, Default)]
pub(crate) struct Pipes {
    /// Started here, by pipe number (the sender port).
    pub(crate) ingress: BTreeMap<u16, IngressPipe>,
    /// Ending here, by booking id.
    pub(crate) egress: BTreeMap<ResvId, EgressPipe>,
    pub(crate) next_booking: ResvId,
}

impl Pipes {
    /// The smallest free pipe number.
    pub(crate) fn free_id(&self) -> Option<u16> {
        (1..=u16::MAX).find(|id| !self.ingress.contains_key(id))
    }

    /// The pipe started here whose name is `name`, or whose number `name` is.
    pub(crate) fn find(&self, name: &str) -> Option<u16> {
        self.ingress
            .iter()
            .find(|(_, p)| p.spec.name == name)
            .map(|(id, _)| *id)
            .or_else(|| {
                name.parse::<u16>()
                    .ok()
                    .filter(|id| self.ingress.contains_key(id))
            })
    }

    /// Checks a new pipe against the others.
    pub(crate) fn check_new(&self, spec: &PipeSpec) -> Result<(), PipeError> {
        spec.validate()?;
        if self.ingress.len() >= MAX_PIPES {
            return Err(PipeError::Full);
        }
        if self.ingress.values().any(|p| p.spec.name == spec.name) {
            return Err(PipeError::NameExists(spec.name.clone()));
        }
        for f in spec.filters() {
            if let Some(other) = self
                .ingress
                .values()
                .find(|p| p.spec.filters().contains(&f))
            {
                return Err(PipeError::FilterTaken {
                    src: f.src,
                    dst: f.dst,
                    pipe: other.spec.name.clone(),
                });
            }
        }
        Ok(())
    }

    /// The egress record of a session's sender.
    pub(crate) fn egress_of(&self, session: &Session, sender: &FilterSpec) -> Option<ResvId> {
        self.egress
            .iter()
            .find(|(_, e)| e.session == *session && e.sender.sender_template == *sender)
            .map(|(id, _)| *id)
    }

    /// A fresh booking id for a pipe ending here.
    pub(crate) fn booking_id(&mut self) -> ResvId {
        loop {
            let id = EGRESS_BOOKING_BASE | (self.next_booking & !EGRESS_BOOKING_BASE);
            self.next_booking = self.next_booking.wrapping_add(1);
            if !self.egress.contains_key(&id) {
                return id;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> PipeSpec {
        PipeSpec {
            name: "video-1".into(),
            from: vec!["198.18.1.0/24".parse().unwrap()],
            to: "198.18.2.0/24".parse().unwrap(),
            service: PipeService::ControlledLoad,
            rate_bps: 3_000_000,
            burst_bytes: 3_000,
            max_packet: 1500,
        }
    }

    #[test]
    fn requests_are_checked() {
        assert_eq!(spec().validate(), Ok(()));
        let bad = |f: fn(&mut PipeSpec)| {
            let mut s = spec();
            f(&mut s);
            s.validate().unwrap_err().code()
        };
        assert_eq!(bad(|s| s.name = String::new()), "bad_request");
        assert_eq!(bad(|s| s.name = "a b".into()), "bad_request");
        assert_eq!(bad(|s| s.name = "x".repeat(65)), "bad_request");
        assert_eq!(bad(|s| s.rate_bps = 10), "bad_request");
        assert_eq!(bad(|s| s.burst_bytes = 100), "bad_request");
        assert_eq!(bad(|s| s.max_packet = 9000), "bad_request");
        assert_eq!(bad(|s| s.from.clear()), "bad_request");
        assert_eq!(bad(|s| s.to = Ipv4Prefix::DEFAULT), "bad_request");
    }

    #[test]
    fn a_second_pipe_may_not_take_a_filter_or_a_name() {
        let mut pipes = Pipes::default();
        let s = spec();
        pipes.ingress.insert(
            1,
            IngressPipe {
                session: s.session(),
                sender: s.sender(Ipv4Addr::new(198, 18, 1, 1), 1).sender_template,
                spec: s.clone(),
                entry: None,
                out: None,
                refusal: None,
                counted: PipeCounters::default(),
                created: Instant::ZERO,
                up_since: None,
            },
        );
        let mut other = spec();
        other.name = "other".into();
        other.from.push("198.18.9.0/24".parse().unwrap());
        assert_eq!(pipes.check_new(&other).unwrap_err().code(), "filter_taken");
        let mut same_name = spec();
        same_name.to = "198.18.3.0/24".parse().unwrap();
        assert_eq!(
            pipes.check_new(&same_name).unwrap_err().code(),
            "name_exists"
        );
        assert_eq!(pipes.find("video-1"), Some(1));
        assert_eq!(pipes.find("1"), Some(1));
        assert_eq!(pipes.find("2"), None);
        assert_eq!(pipes.free_id(), Some(2));
    }

    #[test]
    fn the_service_is_the_session_port() {
        for service in [PipeService::ControlledLoad, PipeService::Guaranteed] {
            let mut s = spec();
            s.service = service;
            assert!(is_pipe_session(&s.session()));
            assert_eq!(PipeService::of_port(s.session().dst_port), Some(service));
        }
        assert_eq!(spec().session().dst_addr, Ipv4Addr::new(198, 18, 2, 0));
        let booking = Pipes::default().booking_id();
        assert!(booking >= EGRESS_BOOKING_BASE);
    }
}
