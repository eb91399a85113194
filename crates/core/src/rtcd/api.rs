//! The daemon's client API and its output actions (EtheReal §2.2: the application asks the local
//! RTCD for a connection and gets back a proxy IP to send to).
//!
//! The Unix-socket shell reads one JSON object per line and maps it onto [`Request`] (serde,
//! internally tagged by `"op"`: `{"op":"register","pid":42}`,
//! `{"op":"open","dst_ip":"198.18.0.2","dst_port":5004,"src_port":0,"rate_bps":1000000,
//! "burst_bytes":3028,"max_packet":1514}` with an optional `"shaping":"kernel"`,
//! `{"op":"close","conn":7}`, `{"op":"list"}`); every reply is delivered as [`Action::Reply`]
//! carrying the tag the shell passed with the request.

use std::net::Ipv4Addr;

use rtlan_wire::control::{Repr, TeardownReason};
use rtlan_wire::ethernet::Address;
use serde::{Deserialize, Serialize};

use super::{ProxyPrefix, RtcdError};

/// Opaque identity of one client (one Unix-socket connection), chosen by the shell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClientId(pub u64);

/// Daemon-wide handle of a connection; never reused during the daemon's lifetime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ConnHandle(pub u64);

/// A client request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// Register the client's process id; required before any other request. Registering again
    /// replaces the PID. Replied with [`Reply::Registered`].
    Register {
        /// The client's PID, checked for liveness every reclaim period.
        pid: u32,
    },
    /// Reserve a real-time connection to `dst_ip:dst_port`. Replied, once the path answered, with
    /// [`Reply::Opened`] or [`Reply::Failed`].
    Open {
        /// Receiver's IPv4 address.
        dst_ip: Ipv4Addr,
        /// Receiver's UDP port (non-zero).
        dst_port: u16,
        /// Sender's UDP port; 0 = any.
        src_port: u16,
        /// Reserved rate, bit/s of whole Ethernet frames (non-zero).
        rate_bps: u64,
        /// Largest back-to-back burst, bytes (at least `max_packet`); `burst_bytes` on the wire,
        /// `max_burst` accepted too (its earlier name).
        #[serde(rename = "burst_bytes", alias = "max_burst")]
        max_burst: u32,
        /// Largest frame, bytes, Ethernet header included (non-zero).
        max_packet: u16,
        /// Whether the daemon shapes the connection in the kernel (`"shaping"`, default none).
        #[serde(default)]
        shaping: DaemonShaping,
        /// End-to-end delay the connection requires, µs: the switches refuse (SETUP_FAIL DELAY,
        /// naming the hop) and, under central admission, the bandwidth manager refuses if its
        /// bound is larger.
        #[serde(default)]
        delay_us: Option<u64>,
    },
    /// Release a connection of this client. Replied with [`Reply::Closed`].
    Close {
        /// The handle from [`Reply::Opened`].
        conn: ConnHandle,
    },
    /// List this client's connections — or, with `all` (an operator's request; the shell lets
    /// only root ask), every connection on the host. Replied with [`Reply::List`].
    List {
        /// Every client's connections, not only the caller's.
        #[serde(default)]
        all: bool,
    },
}

/// Who shapes a connection's traffic on the sending host (the `"shaping"` field of `open`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DaemonShaping {
    /// The application (the RTTR library) shapes, or nobody does; the daemon installs nothing.
    #[default]
    None,
    /// The daemon installs a kernel shaper for the connection ([`Action::InstallShaper`]).
    Kernel,
}

/// Where a connection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConnPhase {
    /// Asked the bandwidth manager, no answer yet (central admission).
    Admitting,
    /// SETUP sent, no answer yet.
    Opening,
    /// Admitted on the whole path.
    Open,
    /// TEARDOWN sent, not yet acknowledged.
    Closing,
}

/// One connection as reported by [`Reply::List`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnInfo {
    /// Daemon-wide handle.
    pub conn: ConnHandle,
    /// Connection id on the host's link.
    pub id: u16,
    /// Proxy IP the application sends to.
    pub proxy_ip: Ipv4Addr,
    /// Receiver's address.
    pub dst_ip: Ipv4Addr,
    /// Receiver's UDP port.
    pub dst_port: u16,
    /// Sender's UDP port (0 = any).
    pub src_port: u16,
    /// Reserved rate, bit/s.
    pub rate_bps: u64,
    /// Where the connection stands.
    pub phase: ConnPhase,
    /// The end-to-end delay bound, µs, once admitted: the switches' (SETUP_OK's BOUND), else
    /// the bandwidth manager's; under both admissions the larger.
    pub delay_bound_us: Option<u64>,
    /// The PID its client registered (its owner), if any.
    pub owner_pid: Option<u32>,
}

/// A reply to a client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// Registration accepted.
    Registered {
        /// The PID now on record.
        pid: u32,
    },
    /// The reservation is in place; send UDP to `proxy_ip`.
    Opened {
        /// Handle for [`Request::Close`].
        conn: ConnHandle,
        /// Address the application sends to: the proxy IP (the ARP entry maps it to
        /// `proxy_mac`), or the receiver's own address under central-only admission.
        proxy_ip: Ipv4Addr,
        /// Proxy MAC the frames carry; `None` under central-only admission (plain frames).
        proxy_mac: Option<Address>,
        /// Connection id on the host's link (names the connection's kernel shaper).
        id: u16,
        /// Switches on the admitted path.
        hops: u8,
        /// The end-to-end delay bound, µs: the switches' (SETUP_OK's BOUND TLV), else the
        /// bandwidth manager's; under both admissions the larger.
        delay_bound_us: Option<u64>,
    },
    /// The request failed.
    Failed {
        /// The connection concerned, if one had been created.
        conn: Option<ConnHandle>,
        /// Why.
        error: RtcdError,
    },
    /// The connection is released on this host (the TEARDOWN continues in the background).
    Closed {
        /// The released connection.
        conn: ConnHandle,
    },
    /// The path released the connection on its own and it could not be signalled again; sent
    /// unprompted. The connection is gone on this host (its proxy IP no longer routes).
    Revoked {
        /// The lost connection.
        conn: ConnHandle,
        /// What the path said (the TEARDOWN's reason).
        reason: TeardownReason,
        /// Why signalling it again failed, when it was tried.
        error: Option<RtcdError>,
    },
    /// The path lost the connection (a switch restarted, soft state expired, the spanning tree
    /// moved it) and the daemon is signalling it again under the same proxy IP; sent
    /// unprompted. Until [`Reply::Recovered`] the stream has no guarantee.
    Interrupted {
        /// The connection.
        conn: ConnHandle,
        /// What the path said.
        reason: TeardownReason,
    },
    /// The connection is admitted again after [`Reply::Interrupted`], same proxy IP; sent
    /// unprompted.
    Recovered {
        /// The connection.
        conn: ConnHandle,
        /// Switches on the (possibly new) path.
        hops: u8,
        /// The end-to-end delay bound, µs, on that path.
        delay_bound_us: Option<u64>,
    },
    /// The client's connections.
    List(Vec<ConnInfo>),
}

/// What the daemon asks its shell to do, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Send an RSVP message (`signalling = "rsvp"`, `docs/rsvp.md` §7) as a raw IP packet
    /// (protocol 46) to `dst` through the host's own routing, with IP TTL `ttl` and, if
    /// `router_alert`, the Router Alert option.
    SendRsvp {
        /// IP destination.
        dst: std::net::Ipv4Addr,
        /// IP TTL.
        ttl: u8,
        /// Whether the IP header carries the Router Alert option.
        router_alert: bool,
        /// The RSVP message (common header and objects).
        message: Vec<u8>,
    },
    /// Send `repr` in a control frame (EtherType 0x88B5) from the host MAC to `dst`
    /// (`Repr::emit_frame(config.host_mac, dst, buf)`).
    SendControl {
        /// Destination MAC (the plan's control MAC).
        dst: Address,
        /// The message.
        repr: Repr,
    },
    /// Install a permanent neighbour (ARP) entry `proxy_ip` → `proxy_mac` on the real-time link.
    InstallNeighbour {
        /// The proxy IP.
        proxy_ip: Ipv4Addr,
        /// The proxy MAC.
        proxy_mac: Address,
    },
    /// Remove the neighbour entry of `proxy_ip`.
    RemoveNeighbour {
        /// The proxy IP.
        proxy_ip: Ipv4Addr,
    },
    /// Install an on-link route for the proxy prefix on the real-time link.
    InstallRoute {
        /// The proxy prefix.
        prefix: ProxyPrefix,
    },
    /// Remove the on-link route for the proxy prefix.
    RemoveRoute {
        /// The proxy prefix.
        prefix: ProxyPrefix,
    },
    /// Deliver `reply` to `client`, echoing the `tag` it came with (0 for unprompted replies).
    Reply {
        /// Recipient.
        client: ClientId,
        /// The tag passed with the request.
        tag: u64,
        /// The reply.
        reply: Reply,
    },
    /// Shape traffic to `proxy_ip` in the kernel at `rate_bps` (whole frames, as the
    /// reservation counts them) with bucket depth `max_burst` bytes. Emitted once the path
    /// admitted a connection opened with [`DaemonShaping::Kernel`], before its neighbour entry.
    InstallShaper {
        /// Connection id on the host's link (names the shaper).
        id: u16,
        /// The proxy IP whose traffic is shaped (the receiver's own address under central-only
        /// admission).
        proxy_ip: Ipv4Addr,
        /// Also match this UDP destination port (central-only admission: several connections
        /// may go to one receiver's address); `None` = every packet to `proxy_ip`.
        dst_port: Option<u16>,
        /// Reserved rate, bit/s of whole frames.
        rate_bps: u64,
        /// Largest burst, bytes.
        max_burst: u32,
        /// Largest frame, bytes.
        max_packet: u16,
    },
    /// Remove the kernel shaper of connection `id` (emitted on release of a kernel-shaped
    /// connection that had been admitted).
    RemoveShaper {
        /// Connection id on the host's link.
        id: u16,
        /// The proxy IP whose traffic was shaped.
        proxy_ip: Ipv4Addr,
    },
    /// Report which of these PIDs are dead through [`super::Rtcd::handle_dead_pids`].
    CheckPids(Vec<u32>),
    /// Ask the bandwidth manager to admit `request` (central admission) and report its answer
    /// through [`super::Rtcd::handle_manager_answer`] with `conn` — always, also when the
    /// manager cannot be reached.
    ManagerAdmit {
        /// The connection the answer is for.
        conn: ConnHandle,
        /// What to book.
        request: ManagerRequest,
    },
    /// Release booking `manager_conn` at the bandwidth manager (no answer expected).
    ManagerRelease {
        /// The manager's connection id.
        manager_conn: u64,
    },
    /// Renew the leases of these bookings at the bandwidth manager (soft state, once per
    /// refresh period); report the ones it no longer holds through
    /// [`super::Rtcd::handle_manager_lost`].
    ManagerRefresh {
        /// The manager's connection ids.
        manager_conns: Vec<u64>,
    },
}

/// A guaranteed connection as the bandwidth manager books it (`docs/bwm.md`, op `admit`): hosts
/// by address, T-SPEC `(r, M, b)`, optional delay requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ManagerRequest {
    /// This host's address.
    pub src_ip: Ipv4Addr,
    /// The receiver's address.
    pub dst_ip: Ipv4Addr,
    /// Token rate, bit/s of whole frames.
    pub rate_bps: u64,
    /// Largest frame, bytes.
    pub max_packet: u16,
    /// Bucket size, bytes.
    pub burst_bytes: u32,
    /// Required end-to-end delay, µs.
    pub delay_us: Option<u64>,
    /// The host's term in the bound, µs (`both`: the same `host_delay` the SETUP starts its
    /// latency with); `None` = the manager's default `t_os`.
    pub host_delay_us: Option<u64>,
    /// Whether the connection is also set up per hop through rtlan switches (`both`): the
    /// manager then books it with the switches' own service curves (`admit_per_hop`).
    pub per_hop: bool,
}

/// The bandwidth manager's answer to [`Action::ManagerAdmit`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ManagerAnswer {
    /// Booked.
    Admitted {
        /// The manager's connection id (for the release).
        manager_conn: u64,
        /// End-to-end delay bound, µs.
        delay_bound_us: u64,
        /// Switches on the manager's path.
        hops: u8,
    },
    /// The manager refused; the text carries its code, message and violations.
    Refused(String),
    /// The manager could not be asked (connection, timeout, protocol error).
    Unreachable(String),
}
