//! The host daemon (RTCD) as a sans-IO core: EtheReal §2.2 (host-transparent connection setup),
//! §2.3 (local admission before signalling), §3.2 (proxy IP / proxy MAC and the ARP entry that
//! makes an unmodified host send to the first switch) and §3.4 (setup messages sent to the first
//! switch on the reserved control address).
//!
//! The daemon takes client requests ([`Request`], from the Unix-socket shell), control messages
//! from the first switch, timer ticks and PID liveness answers, and returns [`Action`]s: control
//! frames to send, neighbour/route changes for netlink, and replies to clients. See [`Rtcd`] for
//! the order in which a driver calls it. The control protocol is `docs/protocol.md`.

mod alloc;
mod api;
mod daemon;
mod host;
pub mod policy;
#[cfg(test)]
mod tests;

use std::net::Ipv4Addr;
use std::time::Duration;

use rtlan_wire::control::{FailReason, ProxyMacPlan};
use rtlan_wire::ethernet::Address;

pub use api::{
    Action, ClientId, ConnHandle, ConnInfo, ConnPhase, DaemonShaping, ManagerAnswer,
    ManagerRequest, Reply, Request,
};
pub use daemon::Rtcd;

/// Everything the daemon refuses or reports as failed. Client-facing errors travel back in
/// [`Reply::Failed`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RtcdError {
    /// The configuration is inconsistent (the text says which part).
    #[error("invalid configuration: {0}")]
    Config(&'static str),
    /// The client has not sent `Register` first.
    #[error("client is not registered (send Register first)")]
    NotRegistered,
    /// The host's reservation policy refuses the client this reservation.
    #[error("reservation policy: {0}")]
    Policy(#[from] policy::PolicyRefusal),
    /// The request's values are absurd (the text says which one).
    #[error("malformed request: {0}")]
    Malformed(&'static str),
    /// The host's own link cannot carry the reservation (sum of reservations above the cap).
    #[error("local admission refused: {requested} bit/s requested, {available} bit/s left")]
    LocalAdmission {
        /// Rate asked for, bit/s.
        requested: u64,
        /// Real-time rate still free on the host's link, bit/s.
        available: u64,
    },
    /// The host's own reserved queue would exceed its declared delay term `host_delay` with this
    /// connection (`docs/delay.md` § "The host's term").
    #[error(
        "local admission refused: the host's reserved queue would take {needed_us} µs \
         (lateness included), above its host_delay of {budget_us} µs"
    )]
    HostDelay {
        /// What the host's term would be with this connection, µs (`u64::MAX`: unbounded, the
        /// reserved wire rates would fill the link).
        needed_us: u64,
        /// The configured `host_delay`, µs.
        budget_us: u64,
    },
    /// Every connection id / proxy IP of the host's link is in use.
    #[error("no free connection id on the host's link")]
    IdsExhausted,
    /// A switch on the path refused (SETUP_FAIL).
    #[error("refused by switch {switch_ip} (hop {hop}): {reason}")]
    Refused {
        /// Hop index of the refusing switch (1 = first switch).
        hop: u8,
        /// The switch's reason.
        reason: FailReason,
        /// Management IP of the refusing switch.
        switch_ip: Ipv4Addr,
    },
    /// No answer to SETUP after the last retransmission.
    #[error("no answer from the first switch")]
    Timeout,
    /// RSVP signalling (`signalling = "rsvp"`): a router refused (PathErr), or no reservation
    /// came back in time.
    #[error("RSVP: {0}")]
    Rsvp(String),
    /// The bandwidth manager refused the connection (central admission).
    #[error("refused by the bandwidth manager: {0}")]
    ManagerRefused(String),
    /// The bandwidth manager could not be asked (central admission).
    #[error("bandwidth manager unreachable: {0}")]
    ManagerUnreachable(String),
    /// The client closed the connection while it was being set up.
    #[error("closed while being set up")]
    Cancelled,
    /// No connection with that handle exists.
    #[error("unknown connection")]
    UnknownConnection,
    /// The connection belongs to another client.
    #[error("connection belongs to another client")]
    NotOwner,
}

/// The IPv4 prefix (network address and length) from which proxy IPs are drawn: an
/// [`Ipv4Prefix`](crate::prefix::Ipv4Prefix) of 8 to 30 bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProxyPrefix(crate::prefix::Ipv4Prefix);

impl ProxyPrefix {
    /// The default proxy prefix, 198.19.0.0/16 (DESIGN.md §4).
    pub const DEFAULT: ProxyPrefix = ProxyPrefix(crate::prefix::Ipv4Prefix::from_parts(
        Ipv4Addr::new(198, 19, 0, 0),
        16,
    ));
    /// The paper-compatible proxy prefix, 1.1.0.0/16 (EtheReal §3.2, proxy IP 1.1.X.Y).
    pub const PAPER: ProxyPrefix = ProxyPrefix(crate::prefix::Ipv4Prefix::from_parts(
        Ipv4Addr::new(1, 1, 0, 0),
        16,
    ));

    /// `addr/len` with the host bits cleared; [`RtcdError::Config`] if `len` is above 30 (too
    /// few addresses to be useful) or below 8.
    pub fn new(addr: Ipv4Addr, len: u8) -> Result<ProxyPrefix, RtcdError> {
        if !(8..=30).contains(&len) {
            return Err(RtcdError::Config("proxy prefix length must be 8..=30"));
        }
        crate::prefix::Ipv4Prefix::new(addr, len)
            .map(ProxyPrefix)
            .map_err(|_| RtcdError::Config("proxy prefix length must be 8..=30"))
    }

    /// The network address.
    pub const fn network(&self) -> Ipv4Addr {
        self.0.network()
    }

    /// The prefix length.
    pub const fn prefix_len(&self) -> u8 {
        self.0.prefix_len()
    }

    /// The proxy IP of connection id `id`: the network address plus `id`.
    pub fn ip_for(&self, id: u16) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.network()).wrapping_add(u32::from(id)))
    }

    /// Whether `ip` lies inside the prefix.
    pub fn contains(&self, ip: Ipv4Addr) -> bool {
        self.0.contains(ip)
    }

    /// The prefix itself.
    pub const fn prefix(&self) -> crate::prefix::Ipv4Prefix {
        self.0
    }
}

impl std::fmt::Display for ProxyPrefix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// How the daemon admits a connection (`admission` in the configuration, `docs/rtcd.md`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Admission {
    /// EtheReal per-hop admission: SETUP through the rtlan switches, proxy IP/MAC (§2.2–2.3).
    #[default]
    Local,
    /// Löser/Härtig central admission only: the bandwidth manager books the path with
    /// network-calculus bounds (seed 004 §3.2); frames go plainly to the receiver's address
    /// through off-the-shelf switches, shaped at the sender.
    Central,
    /// Both: the manager's delay-bounded booking first, then per-hop SETUP through rtlan switches.
    Both,
}

/// Default [`Config::host_delay`]: room for about a dozen full-frame bursts at 100 Mbit/s
/// beside the lateness budget.
pub const DEFAULT_HOST_DELAY: Duration = Duration::from_millis(2);

/// Default [`Config::lateness_budget`], the switch's default too.
pub const DEFAULT_LATENESS_BUDGET: Duration = Duration::from_micros(400);

/// Default [`Config::topology_resignal`]: max age + 2 × forward delay with the 802.1D-1998
/// default timers (docs/stp.md §4), the longest a spanning tree takes to forward a new path.
pub const DEFAULT_TOPOLOGY_RESIGNAL: Duration = Duration::from_secs(50);

/// Longest wait between two SETUPs of a connection re-signalled after a topology change.
pub const TOPOLOGY_RESIGNAL_GAP: Duration = Duration::from_secs(1);

/// Default [`Config::refresh_period`].
pub const DEFAULT_REFRESH_PERIOD: Duration = Duration::from_secs(10);

/// How the daemon signals a connection (`signalling` in the configuration, `docs/rtcd.md`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Signalling {
    /// EtheReal's SETUP through rtlan switches (with the admission above).
    #[default]
    Ethereal,
    /// RSVP across QSR routers (QSR §3.2, RFC 2205): Path from the sender's daemon, Resv from
    /// the receiver's; frames go plainly to the receiver's address and the first router
    /// classifies them by 5-tuple.
    Rsvp,
}

/// The service a receiving daemon reserves for every Path under RSVP signalling
/// (`rsvp_service`, `docs/rtcd.md`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum RsvpService {
    /// Guaranteed Service (RFC 2212) at the sender's token rate, no slack.
    #[default]
    Guaranteed,
    /// Controlled Load (RFC 2211) for the sender's TSpec: what the QSR paper's video reserved
    /// (QSR §6.2).
    ControlledLoad,
}

impl RsvpService {
    /// The receiver's flowspec for a sender's TSpec.
    pub fn flowspec(self, tspec: rtlan_wire::rsvp::TokenBucket) -> rtlan_wire::rsvp::Flowspec {
        match self {
            RsvpService::Guaranteed => rtlan_wire::rsvp::Flowspec::Guaranteed {
                tspec,
                rspec: rtlan_wire::rsvp::Rspec {
                    rate: tspec.rate,
                    slack: 0,
                },
            },
            RsvpService::ControlledLoad => rtlan_wire::rsvp::Flowspec::ControlledLoad { tspec },
        }
    }
}

/// How long an RSVP open waits for the receiver's reservation before it fails.
pub const RSVP_OPEN_TIMEOUT: Duration = Duration::from_secs(5);

/// Daemon configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The host's MAC on the real-time link (source of control frames).
    pub host_mac: Address,
    /// The host's IPv4 address (source IP of SETUP).
    pub host_ip: Ipv4Addr,
    /// Prefix proxy IPs are drawn from; proxy IP = network + connection id.
    pub proxy_prefix: ProxyPrefix,
    /// Proxy-MAC plan (prefix, reserved ids, control MAC).
    pub plan: ProxyMacPlan,
    /// Wait before the first retransmission; doubles after each try.
    pub retransmit_initial: Duration,
    /// Transmissions of a request in all (first one included).
    pub max_attempts: u8,
    /// Period of the orphan check (EtheReal: 60 s).
    pub reclaim_period: Duration,
    /// Rate of the host's link, bit/s.
    pub link_rate_bps: u64,
    /// Share of the link rate real-time reservations may take, percent (EtheReal: 60).
    pub realtime_cap_percent: u8,
    /// Hop limit written into SETUP.
    pub hop_limit: u8,
    /// Every open connection gets a REFRESH at least this often (soft state,
    /// `docs/protocol.md` §5; switches release a connection after 3 periods without one by
    /// default); zero = send none.
    pub refresh_period: Duration,
    /// Per-hop, central or both (default per-hop).
    pub admission: Admission,
    /// The host's term `D_h` in every per-hop bound: the longest a reserved frame may wait in
    /// the host's own queue, lateness included. Every connection's bound starts with it, and a
    /// connection that would make the host's queue longer is refused locally
    /// (`docs/delay.md` § "The host's term"; unused under `central`, where the manager's `t_os`
    /// stands for the host).
    pub host_delay: Duration,
    /// The host's wake-up lateness budget `λ_h`, part of [`Config::host_delay`] (0 in the
    /// simulator, whose hosts never wake late).
    pub lateness_budget: Duration,
    /// This start's boot epoch, carried in every control message (`docs/protocol.md` §5
    /// "Restarts"): the shell picks a new one at every start, so the first switch releases what
    /// the previous start held and request ids never alias.
    pub epoch: u64,
    /// Keys of the host's link to its switch: with any, every control message is signed and
    /// every one received must verify (`docs/protocol.md` "Authentication"); empty = off.
    pub keys: crate::auth::KeyChain,
    /// Sequence number of the first signed message: the shell's boot value (wall-clock ns at
    /// start), so numbers keep growing across restarts (RFC 2747 §3).
    pub auth_seq_base: u64,
    /// How long a connection torn down for a topology change is signalled again while the path
    /// refuses it (SETUP_FAIL, NO_ROUTE: the spanning tree's new path is not forwarding yet):
    /// at least max age + 2 × forward delay of the network's spanning tree (802.1D-1998
    /// defaults: 20 s + 2 × 15 s).
    pub topology_resignal: Duration,
    /// EtheReal or RSVP signalling.
    pub signalling: Signalling,
    /// RSVP's refresh period R (RFC 2205 default 30 s).
    pub rsvp_refresh: Duration,
    /// Under RSVP, whether this host, as a receiver, reserves for every sender whose Path
    /// reaches it (Guaranteed at the sender's token rate), as the receiving daemon of an
    /// unmodified application must.
    pub rsvp_accept: bool,
    /// Under RSVP, the service this host reserves as a receiver.
    pub rsvp_service: RsvpService,
    /// Who may reserve what ([`policy`]); empty = every client, up to the link's share.
    pub policy: policy::Policy,
}

impl Config {
    /// Defaults of DESIGN.md §4 and docs/protocol.md: proxy prefix 198.19.0.0/16, default MAC
    /// plan, 100 ms initial retransmission timeout doubling over 5 attempts, 60 s reclaim period,
    /// 60 % real-time cap, hop limit 16, REFRESH every 10 s, host term 2 ms with a 400 µs
    /// lateness budget.
    pub fn new(host_mac: Address, host_ip: Ipv4Addr, link_rate_bps: u64) -> Config {
        Config {
            host_mac,
            host_ip,
            proxy_prefix: ProxyPrefix::DEFAULT,
            plan: ProxyMacPlan::DEFAULT,
            retransmit_initial: Duration::from_millis(100),
            max_attempts: 5,
            reclaim_period: Duration::from_secs(60),
            link_rate_bps,
            realtime_cap_percent: 60,
            hop_limit: 16,
            refresh_period: DEFAULT_REFRESH_PERIOD,
            admission: Admission::Local,
            host_delay: DEFAULT_HOST_DELAY,
            lateness_budget: DEFAULT_LATENESS_BUDGET,
            epoch: 1,
            keys: crate::auth::KeyChain::default(),
            auth_seq_base: 0,
            topology_resignal: DEFAULT_TOPOLOGY_RESIGNAL,
            signalling: Signalling::Ethereal,
            rsvp_refresh: Duration::from_secs(30),
            rsvp_accept: true,
            rsvp_service: RsvpService::Guaranteed,
            policy: policy::Policy::default(),
        }
    }

    /// As [`Config::new`] but paper-compatible: proxy IPs 1.1.X.Y, proxy MACs FF:FF:FF:FF:X:Y.
    pub fn paper(host_mac: Address, host_ip: Ipv4Addr, link_rate_bps: u64) -> Config {
        Config {
            proxy_prefix: ProxyPrefix::PAPER,
            plan: ProxyMacPlan::paper(),
            ..Config::new(host_mac, host_ip, link_rate_bps)
        }
    }

    /// [`Config::host_delay`] in ns, rounded up to whole µs so that the switches' bound (ns) and
    /// the manager's (µs) start from the same value.
    pub fn host_delay_ns(&self) -> u64 {
        let us = self.host_delay.as_nanos().div_ceil(1000);
        u64::try_from(us.saturating_mul(1000)).unwrap_or(u64::MAX)
    }

    /// The real-time rate the host's link may carry in all, bit/s.
    pub fn realtime_capacity(&self) -> u64 {
        let cap = u128::from(self.link_rate_bps) * u128::from(self.realtime_cap_percent) / 100;
        u64::try_from(cap).unwrap_or(u64::MAX)
    }
}
