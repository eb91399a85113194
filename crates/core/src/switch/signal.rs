//! The real-time state a switch keeps for EtheReal §2.2/§2.3 signalling (`docs/protocol.md` §5):
//! the connection table, admission budgets, per-link id allocators, the resources each installed
//! connection holds, SETUPs in progress (waiting for a route or for the downstream answer), the
//! stored answers that make duplicate SETUPs idempotent, and which ports hear switch HELLOs.
//!
//! The procedures that change this state are in `control`; this module holds the data and the
//! small bookkeeping helpers (timers, HELLO freshness, answer expiry).

use std::collections::{BTreeMap, HashMap};
use std::net::Ipv4Addr;
use std::time::Duration;

use rtlan_wire::control::{DelayTlv, Repr, SetupRepr, TeardownReason};
use rtlan_wire::ethernet::Address;

use super::introspect::SetupTimes;
use super::rt::{Admission, Booking, ConnectionTable, IdAllocator, RequestKey, SwitchLimits};
use super::{PortId, SwitchConfig, MAX_FRAME_LEN};
use crate::time::Instant;

/// How long an answer to a SETUP is kept for duplicates (`docs/protocol.md` §5: a request id is
/// not reused by one sender within 10 minutes).
pub(super) const ANSWER_LIFETIME: Duration = Duration::from_secs(600);

/// A HELLO heard more than this many periods ago no longer makes a port switch-facing.
pub(super) const HELLO_MISSES: u32 = 3;

/// Most neighbours (source MACs of control messages) tracked per port for restart detection: a
/// port is one link, so a handful is plenty; a host forging source MACs cannot grow the table.
pub(super) const MAX_NEIGHBOURS_PER_PORT: usize = 16;

/// A stored answer to a SETUP, with the request it answered: a duplicate must carry the same
/// request to get it (`docs/protocol.md` §5).
#[derive(Debug, Clone)]
pub(super) struct Answer {
    /// The reply sent upstream.
    pub(super) reply: Repr,
    /// When it was sent.
    pub(super) sent: Instant,
    /// The SETUP it answered.
    pub(super) setup: SetupRepr,
    /// The SETUP's delay terms.
    pub(super) delay: DelayTlv,
}

/// What an installed connection holds on this switch besides its table entry.
#[derive(Debug)]
pub(super) struct Held {
    /// The bandwidth booked on the output port.
    pub(super) booking: Booking,
    /// Real-time FIFO bytes (the connection's backlog bound at this hop) admitted on the
    /// output port.
    pub(super) rt_bytes: usize,
    /// This hop's latency θ in the connection's bound, ns.
    pub(super) latency_ns: u64,
    /// *b*/*r* + host delay + Σθ up to and including this hop, ns: at the last switch the
    /// connection's end-to-end bound (what SETUP_OK's BOUND carries).
    pub(super) bound_ns: u64,
    /// The receiver's IP address (from the SETUP).
    pub(super) dst_ip: Ipv4Addr,
    /// The receiver's UDP port (from the SETUP).
    pub(super) dst_port: u16,
    /// This switch's hop index on the connection's path.
    pub(super) hop: u8,
    /// When the connection was installed or last refreshed (soft state, `docs/protocol.md` §5).
    pub(super) last_refresh: Instant,
}

/// A TEARDOWN this switch sent and retransmits until TEARDOWN_ACK (`docs/protocol.md` §5).
#[derive(Debug, Clone, Copy)]
pub(super) struct TeardownOut {
    /// The link it went out on.
    pub(super) port: PortId,
    /// The connection id on that link.
    pub(super) connection_id: u16,
    /// Request id (chosen by this switch; the ACK echoes it).
    pub(super) request_id: u32,
    /// Header hop it carries.
    pub(super) hop: u8,
    /// Why the connection went (the REASON TLV).
    pub(super) reason: TeardownReason,
    /// Transmissions so far.
    pub(super) attempts: u8,
    /// When to retransmit (or give up after the last attempt).
    pub(super) next_retransmit: Instant,
}

/// A connection its sender closed while frames of it were still queued here (`docs/protocol.md`
/// §5, graceful close): out of the table, so its input id is free, but still holding its booking,
/// output id and queue until the queue is empty or `deadline` passes.
#[derive(Debug)]
pub(super) struct Draining {
    /// (input port, input id) it had.
    pub(super) key: (PortId, u16),
    /// Its table entry.
    pub(super) entry: super::rt::RtEntry,
    /// What it holds.
    pub(super) held: Held,
    /// When what is still queued is dropped.
    pub(super) deadline: Instant,
}

/// What a SETUP in progress waits for.
#[derive(Debug)]
pub(super) enum Wait {
    /// The destination's MAC and port are being found by ARP probing.
    Route {
        /// When the SETUP is refused with NO_ROUTE.
        deadline: Instant,
    },
    /// The SETUP went downstream; SETUP_OK or SETUP_FAIL is awaited.
    Downstream {
        /// Output port (the link the SETUP went out on).
        out_port: PortId,
        /// Connection id allocated on that link.
        out_id: u16,
        /// Bandwidth booked on `out_port`.
        booking: Booking,
        /// Real-time FIFO bytes admitted on `out_port`.
        rt_bytes: usize,
        /// Request id of the downstream SETUP (chosen by this switch).
        request_id: u32,
        /// Transmissions so far.
        attempts: u8,
        /// When to retransmit (or give up after the last attempt).
        next_retransmit: Instant,
    },
}

/// A SETUP this switch is working on.
#[derive(Debug)]
pub(super) struct InProgress {
    /// The upstream request (input port, source MAC, request id).
    pub(super) key: RequestKey,
    /// The connection id the upstream node chose for the input link.
    pub(super) in_id: u16,
    /// This switch's hop index (the SETUP's header hop + 1).
    pub(super) hop: u8,
    /// Whether the SETUP came from the sending host's daemon (this is the first switch).
    pub(super) first: bool,
    /// The request.
    pub(super) setup: SetupRepr,
    /// The request's delay terms (required bound, latency accumulated upstream; zero when the
    /// SETUP carried none).
    pub(super) delay: DelayTlv,
    /// This hop's terms, once routed and admitted.
    pub(super) terms: Option<super::bound::HopTerms>,
    /// What it waits for.
    pub(super) wait: Wait,
    /// When the SETUP arrived (per-hop setup latency).
    pub(super) arrived: Instant,
    /// Whether routing it needed an ARP query (the receiver was not in the ARP cache).
    pub(super) probed: bool,
}

/// All real-time state of one switch.
#[derive(Debug)]
pub(super) struct RtState {
    /// Installed connections, keyed by (input port, input id).
    pub(super) table: ConnectionTable,
    /// Bandwidth budgets per output port.
    pub(super) admission: Admission,
    /// Connection-id allocators, one per output link (port).
    pub(super) ids: Vec<IdAllocator>,
    /// What each installed connection holds, keyed like the table. Ordered: REFRESH expiry
    /// releases (and tears down) connections in (input port, input id) order.
    pub(super) held: BTreeMap<(PortId, u16), Held>,
    /// Real-time queue bytes admitted per output port (sum of backlog bounds).
    pub(super) rt_budget: Vec<usize>,
    /// Per input port: wire bit/s of the reservations entering there (preemptive discard's
    /// residual is the line rate minus this).
    pub(super) ingress_reserved: Vec<u64>,
    /// Answers sent upstream, for duplicate SETUPs, with the time they were sent.
    pub(super) answers: HashMap<RequestKey, Answer>,
    /// Per port: the boot epoch last heard from each neighbour (source MAC), at most
    /// [`MAX_NEIGHBOURS_PER_PORT`].
    pub(super) neighbours: Vec<HashMap<Address, u64>>,
    /// Per port: whether its carrier is down (`handle_link`).
    pub(super) link_down: Vec<bool>,
    /// SETUPs in progress, indexed (`setups`).
    pub(super) in_progress: super::setups::SetupTable,
    /// Per port: when a switch HELLO was last heard.
    pub(super) switch_heard: Vec<Option<Instant>>,
    /// Sequence number of the next HELLO.
    pub(super) hello_seq: u32,
    /// Request id of the next message this switch originates downstream.
    pub(super) next_request_id: u32,
    /// Scratch buffer for rewriting a real-time data frame.
    pub(super) scratch: Vec<u8>,
    /// First-hop frames held until they conform (`reshape_allowance`).
    pub(super) reshaper: super::rt::Reshaper,
    /// TEARDOWNs sent and not yet acknowledged, oldest first (bounded).
    pub(super) teardowns: Vec<TeardownOut>,
    /// Closed connections whose queued frames are still going out. Bounded: each keeps its
    /// booking, so admission counts it, and leaves by its deadline.
    pub(super) draining: Vec<Draining>,
    /// Per-hop SETUP handling times.
    pub(super) setup_times: SetupTimes,
}

impl RtState {
    /// Empty state for `config`.
    pub(super) fn new(config: &SwitchConfig) -> RtState {
        let rates: Vec<u64> = config
            .ports
            .iter()
            .map(|p| super::line_rate(config, p))
            .collect();
        let count = config.ports.len();
        RtState {
            table: ConnectionTable::new(config.rt.max_connections),
            admission: Admission::with_limits(
                &rates,
                config.rt.cap_percent,
                SwitchLimits {
                    backplane_bps: config.rt.backplane_bps,
                    cycle: config.cycle_time,
                    cpu_cost_per_connection: config.rt.cpu_cost_per_connection,
                    cpu_budget_percent: config.rt.cpu_budget_percent,
                    rt_buffer_bytes: config.rt.rt_buffer_bytes,
                },
            ),
            ids: (0..count)
                .map(|_| IdAllocator::new(&config.rt.plan))
                .collect(),
            held: BTreeMap::new(),
            rt_budget: vec![0; count],
            ingress_reserved: vec![0; count],
            answers: HashMap::new(),
            neighbours: vec![HashMap::new(); count],
            link_down: vec![false; count],
            in_progress: super::setups::SetupTable::new(count),
            switch_heard: vec![None; count],
            hello_seq: 0,
            // Request ids start where the epoch says, so a reply to the previous start's
            // request finds nothing to match here.
            next_request_id: (config.rt.epoch as u32).max(1),
            scratch: vec![0; MAX_FRAME_LEN],
            reshaper: super::rt::Reshaper::new(config.rt.reshape_buffer_bytes),
            teardowns: Vec::new(),
            draining: Vec::new(),
            setup_times: SetupTimes::new(count),
        }
    }

    /// The earliest per-request signalling deadline: route timeout, retransmission (of a SETUP
    /// or a TEARDOWN) or the end of a closed connection's drain. HELLOs and the ageing sweep (which carries refresh expiry) are in the
    /// switch's timer table.
    pub(super) fn next_timeout(&self) -> Option<Instant> {
        let teardowns = self.teardowns.iter().map(|t| t.next_retransmit);
        let draining = self.draining.iter().map(|d| d.deadline);
        teardowns
            .chain(draining)
            .chain(self.in_progress.next_deadline())
            .min()
    }

    /// A fresh request id for a message this switch originates.
    pub(super) fn request_id(&mut self) -> u32 {
        let id = self.next_request_id;
        self.next_request_id = self.next_request_id.wrapping_add(1).max(1);
        id
    }

    /// Whether `port` heard a switch HELLO recently enough to count as switch-facing.
    pub(super) fn is_switch_facing(
        &self,
        port: PortId,
        now: Instant,
        interval: Option<Duration>,
    ) -> bool {
        match self
            .switch_heard
            .get(usize::from(port.0))
            .copied()
            .flatten()
        {
            None => false,
            Some(heard) => match interval {
                None => true,
                Some(period) => now.saturating_duration_since(heard) <= period * HELLO_MISSES,
            },
        }
    }

    /// Whether a SETUP waits for a route (then received ARP traffic may let it go on).
    pub(super) fn waits_for_route(&self) -> bool {
        self.in_progress.waits_for_route()
    }

    /// Drops stored answers older than [`ANSWER_LIFETIME`].
    pub(super) fn forget_old_answers(&mut self, now: Instant) {
        self.answers
            .retain(|_, answer| now.saturating_duration_since(answer.sent) < ANSWER_LIFETIME);
    }
}
