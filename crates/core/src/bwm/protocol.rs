//! The bandwidth manager's requests, replies and persisted state (seed 004 §3.2 "Admission
//! process", seed 001 §3.2–3.4). The wire encoding is one JSON object per line; the shell does the
//! (de)serialisation with `serde_json`, these types fix the field names. Spec: `docs/bwm.md`.

use serde::{Deserialize, Serialize};

use super::topology::Topology;

/// A connection's identifier, unique for the manager's lifetime (persisted across restarts).
pub type ConnId = u64;

/// One request line: a request id chosen by the client (echoed in the reply) and the operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// Echoed in the reply so a client can match replies to requests.
    pub id: u64,
    /// What to do.
    #[serde(flatten)]
    pub op: Op,
}

/// The operations (the manager's one action enum).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// Book a guaranteed connection from `src` to `dst` that only the manager admits
    /// (`admission = "central"`): its frames are not signalled to the switches.
    Admit(ConnSpec),
    /// Book a guaranteed connection from `src` to `dst` that the client also signals hop by
    /// hop through the rtlan switches (`admission = "both"`). Only such connections can be booked
    /// across rtlan real-time switches: there a connection without a per-hop SETUP is
    /// non-real-time traffic. Spelled `admit_per_hop`; the fields are those of `admit`.
    #[serde(rename = "admit_per_hop")]
    AdmitPerHop(ConnSpec),
    /// Tear a connection down and free what it booked.
    Release {
        /// The connection to release.
        conn: ConnId,
    },
    /// A one-shot best-effort reservation (seed 001 §3.3), booked on every switch output port and
    /// valid for the manager's best-effort lifetime. Spelled `besteffort` (`best_effort` is
    /// accepted too).
    #[serde(rename = "besteffort", alias = "best_effort")]
    BestEffort(BestEffortSpec),
    /// All current bookings.
    List,
    /// The topology and the per-port and per-switch bookings.
    Topology,
    /// Renews the leases of these connections (soft state: a booking not refreshed within the
    /// manager's lease is released).
    Refresh {
        /// The connections to renew.
        conns: Vec<ConnId>,
    },
}

/// What a guaranteed connection asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnSpec {
    /// Sending host (a host name of the topology).
    pub src: String,
    /// Receiving host.
    pub dst: String,
    /// Token rate `r`, bit/s.
    pub rate_bps: u64,
    /// Maximum packet size `M`, bytes (whole Ethernet frame).
    pub max_packet: u64,
    /// Shaping interval `Ts` in µs: bucket `b = r·Ts + M` (seed 004 §3). Exactly one of this and
    /// `burst_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shaping_interval_us: Option<u64>,
    /// Bucket size `b` in bytes, `≥ max_packet`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_bytes: Option<u64>,
    /// Required end-to-end delay bound in µs; none = no delay requirement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_us: Option<u64>,
    /// Host delay `t_os` in µs added to the network bound; none = the manager's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_delay_us: Option<u64>,
}

/// What a one-shot best-effort reservation asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BestEffortSpec {
    /// Sending host.
    pub src: String,
    /// Token rate, bit/s.
    pub rate_bps: u64,
    /// Maximum packet size, bytes.
    pub max_packet: u64,
    /// Shaping interval in µs (or give `burst_bytes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shaping_interval_us: Option<u64>,
    /// Bucket size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_bytes: Option<u64>,
}

/// One reply line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Response {
    /// The request's id; `null` when the request could not be parsed far enough to read it.
    pub id: Option<u64>,
    /// True for every reply but [`Reply::Error`].
    pub ok: bool,
    /// The result.
    #[serde(flatten)]
    pub reply: Reply,
}

impl Response {
    /// A reply to request `id`.
    pub fn new(id: Option<u64>, reply: Reply) -> Response {
        Response {
            id,
            ok: !matches!(reply, Reply::Error { .. }),
            reply,
        }
    }

    /// An error reply without violations.
    pub fn error(id: Option<u64>, code: ErrorCode, message: impl Into<String>) -> Response {
        Response::new(
            id,
            Reply::Error {
                code,
                message: message.into(),
                violations: Vec::new(),
            },
        )
    }
}

/// The result of a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Reply {
    /// The connection is booked.
    Admitted {
        /// Its id (for `release`).
        conn: ConnId,
        /// Node names from source to destination.
        path: Vec<String>,
        /// Its end-to-end delay bound (Σ eq. (6) over the ports on the path + host delay), µs
        /// rounded up.
        delay_bound_us: u64,
        /// The booking is released unless refreshed within this many µs (none: no lease).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lease_us: Option<u64>,
    },
    /// Leases renewed.
    Refreshed {
        /// The connections whose lease was renewed (standing reservations need none).
        renewed: Vec<ConnId>,
        /// The ones the manager does not hold (released, expired, or one-shot best-effort).
        unknown: Vec<ConnId>,
    },
    /// The connection is released.
    Released {
        /// Its id.
        conn: ConnId,
    },
    /// The one-shot reservation is booked until `expires_in_us` from now.
    #[serde(rename = "besteffort")]
    BestEffort {
        /// Its id (it may also be released early).
        conn: ConnId,
        /// Lifetime, µs.
        expires_in_us: u64,
    },
    /// The current bookings.
    List {
        /// One entry per booking, by id.
        connections: Vec<ConnInfo>,
    },
    /// The topology and what is booked on it.
    Topology {
        /// Switches and links as loaded.
        topology: Topology,
        /// Every switch output port.
        ports: Vec<PortInfo>,
        /// Buffer memory per switch.
        switches: Vec<SwitchInfo>,
    },
    /// The request failed; nothing was booked or released.
    Error {
        /// Machine-readable reason.
        code: ErrorCode,
        /// Human-readable reason.
        message: String,
        /// For `refused`: every constraint the request would violate.
        violations: Vec<Violation>,
    },
}

/// Error codes (`docs/bwm.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The line is not a valid request (bad JSON, unknown op, missing or inconsistent fields).
    BadRequest,
    /// A host name is not in the topology.
    UnknownHost,
    /// No path through switches joins source and destination.
    NoPath,
    /// No connection with that id.
    UnknownConnection,
    /// Admission refused: see `violations`.
    Refused,
    /// The exact arithmetic overflowed; nothing was booked.
    Internal,
    /// Tokens are configured and the request carried none, or an unknown one.
    Unauthenticated,
    /// The caller is a `client` and the booking belongs to another principal.
    Forbidden,
    /// The manager already serves as many clients as it may; the connection is closed.
    TooManyClients,
    /// A request line was longer than the manager accepts; the connection is closed.
    LineTooLong,
    /// The connection sent nothing for the manager's idle time-out and is closed.
    IdleTimeout,
}

/// A constraint a request would violate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "constraint", rename_all = "snake_case")]
pub enum Violation {
    /// Σ r on an output port would exceed (or one r would reach) the port rate (seed 004 eq. (1)).
    Capacity {
        /// The switch.
        switch: String,
        /// The neighbour the port leads to.
        to: String,
        /// Σ r with the new connection, bit/s.
        rate_bps: u64,
        /// The port rate `C`, bit/s.
        capacity_bps: u64,
    },
    /// Σ over a switch's ports of the backlog bounds (eq. (4)) would exceed its buffer memory.
    Buffer {
        /// The switch.
        switch: String,
        /// Σ backlog bounds with the new connection, bytes.
        backlog_bytes: u64,
        /// The switch's buffer memory, bytes.
        buffer_bytes: u64,
    },
    /// A connection's delay bound would exceed its requirement.
    Delay {
        /// The existing connection that would suffer; `null` for the new one.
        conn: Option<ConnId>,
        /// Its bound with the new connection, µs (rounded up).
        delay_bound_us: u64,
        /// Its requirement, µs.
        delay_us: u64,
    },
    /// The output ports would depend on each other in a cycle, so no bound can be derived
    /// (total flow analysis needs a feed-forward network).
    Cyclic {
        /// The connection whose path closes the cycle; `null` for the new one.
        conn: Option<ConnId>,
    },
    /// On an rtlan switch's cyclic port, Σ cycle work (quota + one frame per connection) would
    /// exceed the port's budget `U·C·T` (EtheReal §3.3; the cyclic service curve assumes it).
    CycleWork {
        /// The switch.
        switch: String,
        /// The neighbour the port leads to.
        to: String,
        /// Σ cycle work with the new connection, wire bits.
        work_bits: u64,
        /// The budget `U·C·T`, wire bits.
        budget_bits: u64,
    },
    /// An rtlan switch's scheduler could not serve one more connection per cycle within its CPU
    /// budget (EtheReal §4.3).
    Cpu {
        /// The switch.
        switch: String,
        /// Connections it already holds.
        connections: u64,
    },
}

/// Kind of booking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// An admitted connection (persisted).
    Guaranteed,
    /// A one-shot best-effort reservation (expires; not persisted).
    BestEffort,
    /// The standing reservation between a node and the manager (seed 001 §3.4; booked at start).
    Standing,
}

/// One booking, as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnInfo {
    /// Id.
    pub conn: ConnId,
    /// Kind.
    pub kind: Kind,
    /// Sending host.
    pub src: String,
    /// Receiving host (`null` for best-effort: every port is booked).
    pub dst: Option<String>,
    /// Token rate, bit/s.
    pub rate_bps: u64,
    /// Maximum packet, bytes.
    pub max_packet: u64,
    /// Bucket, bytes (rounded up): `burst_bytes`, the name of the request's field.
    #[serde(rename = "burst_bytes", alias = "bucket_bytes")]
    pub bucket_bytes: u64,
    /// Requirement, µs.
    pub delay_us: Option<u64>,
    /// Current end-to-end bound, µs (`null` for best-effort).
    pub delay_bound_us: Option<u64>,
    /// Node names on the path (empty for best-effort).
    pub path: Vec<String>,
    /// The principal that booked it (`anonymous` without tokens, `manager` for standing ones).
    #[serde(default = "anonymous")]
    pub owner: String,
}

/// One switch output port, as reported by `topology`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortInfo {
    /// The switch.
    pub switch: String,
    /// The neighbour.
    pub to: String,
    /// Port rate `C`, bit/s.
    pub rate_bps: u64,
    /// Bookings crossing it.
    pub connections: usize,
    /// Σ r, bit/s.
    pub booked_bps: u64,
    /// Backlog bound (eq. (4)), bytes.
    pub backlog_bound_bytes: u64,
    /// Delay bound (eq. (6)), µs.
    pub delay_bound_us: u64,
}

/// Buffer memory of one switch, as reported by `topology`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwitchInfo {
    /// The switch.
    pub name: String,
    /// Its buffer memory, bytes.
    pub buffer_bytes: u64,
    /// Σ backlog bounds of its ports, bytes.
    pub booked_bytes: u64,
}

/// One change of the persisted bookings, as the manager's journal records it (one JSON line
/// each: `{"booked":{"conn":1,"spec":{…}}}` or `{"released":1}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// A guaranteed connection was booked.
    Booked(Booking),
    /// A guaranteed connection was released (by request or by an expired lease).
    Released(ConnId),
}

impl State {
    /// Applies a journalled change: a booking is added (ids never reused, so `next_conn`
    /// passes it) or removed.
    pub fn apply(&mut self, change: Change) {
        match change {
            Change::Booked(b) => {
                self.next_conn = self.next_conn.max(b.conn.saturating_add(1));
                self.bookings.retain(|x| x.conn != b.conn);
                self.bookings.push(b);
            }
            Change::Released(conn) => self.bookings.retain(|b| b.conn != conn),
        }
    }
}

/// The persisted state: the guaranteed bookings (best-effort ones are short-lived and standing
/// ones follow from the configuration, so neither is stored).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct State {
    /// Format version, currently 1.
    pub version: u32,
    /// The next id to hand out.
    pub next_conn: ConnId,
    /// The guaranteed bookings in admission order.
    pub bookings: Vec<Booking>,
}

/// One persisted booking.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Booking {
    /// Its id.
    pub conn: ConnId,
    /// What it asked for.
    pub spec: ConnSpec,
    /// The principal that booked it; bookings persisted before owners existed load as
    /// `anonymous`.
    #[serde(default = "anonymous")]
    pub owner: String,
}

/// The owner of bookings that name none.
fn anonymous() -> String {
    super::auth::ANONYMOUS.to_string()
}
