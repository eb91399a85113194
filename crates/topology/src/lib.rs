//! The one topology model of rtlan (docs/lab.md, docs/analyze.md): hosts, switches, the links
//! between them and the flows that cross them, read from TOML by one reader that reports every
//! mistake at `file:line:column`. The lab, the simulator, `rtlan analyze` and the bandwidth
//! manager all read their files through it.
//!
//! [`Topology`] is the resolved form: names checked, IP addresses assigned, every link end given
//! its interface name (`eth0` on hosts, `p0, p1, …` on switches in file order) and rate in bit/s.
//! Switches may carry the multiplexing delay `t_mux` and buffer memory, and flows their T-SPEC
//! (`r`, `b = r·Ts + M`, `M`), as Löser/Härtig, "Low-latency hard real-time communication over
//! switched Ethernet", §2.2 and §3 define them; [`Topology::network`] turns those into the
//! network calculus's input. Two [`Profile`]s say which file rules apply: the lab's (namespace
//! names, one link per host, no loops) or a network file's (any names, hosts implied by links).

mod events;
mod flows;
mod network;
mod parse;
mod routed;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_events;
#[cfg(test)]
mod tests_rether_bridge;
#[cfg(test)]
mod tests_routed;
#[cfg(test)]
mod tests_segment;
pub mod units;

use std::net::Ipv4Addr;
use std::path::Path;
use std::time::Duration;

pub use network::NetworkError;
use serde::{Deserialize, Serialize};
use units::UnitError;

/// The interface name of a host's single link.
pub const HOST_IFNAME: &str = "eth0";

/// Where in a topology file something is: `origin:line:column` (both 1-based, column in
/// characters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file name (or other origin name) given to [`Topology::from_str`].
    pub origin: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, counted in characters.
    pub column: usize,
}

impl Location {
    /// The location of byte `offset` of `text` (a span start from `toml::Spanned`), named
    /// `origin`.
    pub fn of(text: &str, origin: &str, offset: usize) -> Location {
        parse::locate(text, origin, offset)
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}", self.origin, self.line, self.column)
    }
}

/// A topology file that could not be read or is not valid. All variants but [`Read`] start their
/// message with `file:line:column:`.
///
/// [`Read`]: TopologyError::Read
#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The path as given.
        path: String,
        /// The operating-system error.
        source: std::io::Error,
    },
    /// TOML syntax error, unknown field, missing field or a value of the wrong type.
    #[error("{at}: {message}")]
    Syntax {
        /// Where.
        at: Location,
        /// The TOML parser's message.
        message: String,
    },
    /// A node name does not match `[a-z][a-z0-9]{0,7}`.
    #[error("{at}: bad name `{name}`: node names are a lowercase letter then up to 7 lowercase letters or digits")]
    BadName {
        /// Where.
        at: Location,
        /// The name as written.
        name: String,
    },
    /// Two nodes (hosts, switches or routers) have the same name.
    #[error("{at}: duplicate name `{name}` (first defined at line {first_line})")]
    DuplicateName {
        /// Where the second definition is.
        at: Location,
        /// The name.
        name: String,
        /// Line of the first definition.
        first_line: usize,
    },
    /// The file defines no host, no switch and no router.
    #[error("{at}: the topology defines no hosts, switches or routers")]
    Empty {
        /// Where (the start of the file).
        at: Location,
    },
    /// A switch `kind` that is not `rtlan`, `linux-bridge`, `segment` or `rether-bridge`.
    #[error(
        "{at}: unknown switch kind `{kind}` (expected \"rtlan\", \"linux-bridge\", \"segment\" or \"rether-bridge\")"
    )]
    UnknownKind {
        /// Where.
        at: Location,
        /// The kind as written.
        kind: String,
    },
    /// An option was given to a switch of a kind it does not apply to (an rtlan-only option on
    /// a `linux-bridge` or `segment`, a segment's option on another kind).
    #[error("{at}: `{option}` only applies to switches of kind {kinds}")]
    OptionNotForKind {
        /// Where.
        at: Location,
        /// The option.
        option: &'static str,
        /// The kinds it applies to, quoted (`"rtlan"`, `"segment"`, …).
        kinds: &'static str,
    },
    /// A switch option has a value that is not allowed.
    #[error("{at}: bad `{option}`: {reason}")]
    BadOption {
        /// Where.
        at: Location,
        /// The option.
        option: &'static str,
        /// Why it is refused.
        reason: String,
    },
    /// An IP address (with optional `/prefix`) that cannot be used.
    #[error("{at}: bad IP address `{text}`: {reason}")]
    BadIp {
        /// Where.
        at: Location,
        /// The text as written.
        text: String,
        /// Why it is refused.
        reason: String,
    },
    /// Two nodes were given the same IP address.
    #[error("{at}: IP address {ip} is already used by `{other}`")]
    DuplicateIp {
        /// Where the second use is.
        at: Location,
        /// The address.
        ip: Ipv4Addr,
        /// The node that has it first.
        other: String,
    },
    /// A link rate `parse_rate` does not accept.
    #[error("{at}: bad rate: {source}")]
    BadRate {
        /// Where.
        at: Location,
        /// Why (boxed: the refusal of an ambiguous spelling carries four texts).
        source: Box<UnitError>,
    },
    /// A link's `ends` does not have exactly two names.
    #[error("{at}: a link has exactly two ends, found {count}")]
    EndCount {
        /// Where.
        at: Location,
        /// How many ends were listed.
        count: usize,
    },
    /// A link end names no host or switch.
    #[error("{at}: link end \"{name}\" is not a host or switch")]
    UnknownEnd {
        /// Where.
        at: Location,
        /// The name as written.
        name: String,
    },
    /// A link connects a node to itself.
    #[error("{at}: link connects `{name}` to itself")]
    SelfLink {
        /// Where.
        at: Location,
        /// The node.
        name: String,
    },
    /// A host appears in a second link (a host has exactly one link in this version).
    #[error(
        "{at}: host `{name}` already has a link (line {first_line}); a host has exactly one link"
    )]
    HostHasTwoLinks {
        /// Where the second link is.
        at: Location,
        /// The host.
        name: String,
        /// Line of its first link.
        first_line: usize,
    },
    /// A link joins an rtlan switch that authenticates its control messages to one that does
    /// not: each would drop the other's messages.
    #[error("{at}: link {on}–{off}: `auth = true` on {on} but not on {off}; both rtlan switches of a link authenticate or neither does")]
    AuthMismatch {
        /// Where.
        at: Location,
        /// The end with `auth = true`.
        on: String,
        /// The end without.
        off: String,
    },
    /// A link would close a loop while some switch runs no spanning tree: loops flood forever.
    #[error("{at}: link {a}–{b} closes a loop (they are already connected); loops need `stp = true` on every switch (rtlan switches; the lab's kernel bridges run no spanning tree)")]
    Loop {
        /// Where.
        at: Location,
        /// One end.
        a: String,
        /// The other end.
        b: String,
    },
    /// A network file's node name that is empty or holds white space or control characters.
    #[error("{at}: bad name `{name}`: names are not empty and hold no white space")]
    BadNetworkName {
        /// Where.
        at: Location,
        /// The name as written.
        name: String,
    },
    /// A value a network file needs is missing.
    #[error("{at}: {table} needs `{field}` in a network file (docs/analyze.md)")]
    Missing {
        /// Where the table starts (its name).
        at: Location,
        /// `[[switch]]` or `[[link]]`.
        table: &'static str,
        /// The missing key.
        field: &'static str,
    },
    /// A link of a network file joins two hosts.
    #[error("{at}: link {a}–{b} joins two hosts; one end must be a switch")]
    HostToHost {
        /// Where.
        at: Location,
        /// One end.
        a: String,
        /// The other end.
        b: String,
    },
    /// A second link between the same two nodes.
    #[error("{at}: duplicate link {a}–{b} (first at line {first_line})")]
    DuplicateLink {
        /// Where the second link is.
        at: Location,
        /// One end.
        a: String,
        /// The other end.
        b: String,
        /// Line of the first link.
        first_line: usize,
    },
    /// A `[[flow]]` that is not valid.
    #[error("{at}: flow `{flow}`: {reason}")]
    BadFlow {
        /// Where.
        at: Location,
        /// The flow's name.
        flow: String,
        /// Why it is refused.
        reason: String,
    },
    /// A host has no link.
    #[error("{at}: host `{name}` has no link")]
    HostWithoutLink {
        /// Where the host is defined.
        at: Location,
        /// The host.
        name: String,
    },
    /// A switch has no link.
    #[error("{at}: switch `{name}` has no link")]
    SwitchWithoutLink {
        /// Where the switch is defined.
        at: Location,
        /// The switch.
        name: String,
    },
    /// More hosts need an automatic address than 198.18.0.0/16 (or, with routers, their
    /// segment's subnet) has left.
    #[error("{at}: no free address left in {subnet} for `{name}`")]
    AddressesExhausted {
        /// Where the node is defined.
        at: Location,
        /// The node.
        name: String,
        /// The address range that is full.
        subnet: String,
    },
    /// A router has no link.
    #[error("{at}: router `{name}` has no link")]
    RouterWithoutLink {
        /// Where the router is defined.
        at: Location,
        /// The router.
        name: String,
    },
    /// A network file (`rtlan analyze`, `rtlan bwm`) with `[[router]]` tables.
    #[error("{at}: routers are not analysed yet: `rtlan analyze` and `rtlan bwm` read switched networks only (docs/qsr.md §2.3)")]
    RoutersNotAnalysed {
        /// Where the first router is defined.
        at: Location,
    },
    /// A second port of one router on the same segment (subnet).
    #[error("{at}: router `{router}` already has a port on this segment (line {first_line}); a router has one port per subnet")]
    TwoPortsOnSegment {
        /// Where the second link is.
        at: Location,
        /// The router.
        router: String,
        /// Line of the link of its first port there.
        first_line: usize,
    },
    /// Some routers run OSPF and others do not.
    #[error("{at}: `ospf` is set on router `{on}` but not on `{off}`: either every router runs OSPF or the lab writes static routes for all")]
    OspfMixed {
        /// Where.
        at: Location,
        /// A router with `ospf`.
        on: String,
        /// A router without.
        off: String,
    },
    /// A shared segment (`kind = "segment"`) linked to something other than a host or a
    /// RETHER bridge: its stations are hosts, each behind the bump namespace where its RETHER
    /// agent runs, and `rether-bridge`s, which are RETHER stations themselves.
    #[error("{at}: segment `{segment}` is linked to {what} `{other}`; a segment's stations are hosts (each behind its RETHER bump) and rether-bridges (docs/segment.md)")]
    SegmentStation {
        /// Where the link is.
        at: Location,
        /// The segment.
        segment: String,
        /// `switch`, `router` or `segment`.
        what: &'static str,
        /// The node at the other end.
        other: String,
    },
    /// A network file (`rtlan analyze`, `rtlan bwm`) with a shared segment.
    #[error("{at}: `kind = \"segment\"` is lab-only: `rtlan analyze` and `rtlan bwm` have no model of a shared medium (CSMA/CD has no delay bound; RETHER's is docs/rether.md)")]
    SegmentsNotAnalysed {
        /// Where the segment's `kind` is.
        at: Location,
    },
    /// A network file (`rtlan analyze`, `rtlan bwm`) with a RETHER bridge.
    #[error("{at}: `kind = \"rether-bridge\"` is lab-only: `rtlan analyze` and `rtlan bwm` have no model of the shared segments it joins (RETHER's multi-segment bound is docs/rether.md §9)")]
    RetherBridgesNotAnalysed {
        /// Where the bridge's `kind` is.
        at: Location,
    },
    /// A RETHER bridge (`kind = "rether-bridge"`) linked to something other than a shared
    /// segment: each of its ports is a RETHER station on one segment (RETHER §2.5).
    #[error("{at}: rether-bridge `{bridge}` is linked to {what} `{other}`; a rether-bridge's links go to segments (`kind = \"segment\"`) only")]
    RetherBridgeLink {
        /// Where the link is.
        at: Location,
        /// The bridge.
        bridge: String,
        /// `host`, `switch`, `router` or `rether-bridge`.
        what: &'static str,
        /// The node at the other end.
        other: String,
    },
    /// A second link between one RETHER bridge and one segment: a bridge is one station on
    /// each segment it joins.
    #[error("{at}: rether-bridge `{bridge}` is already linked to segment `{segment}` (line {first_line}); a bridge has one port per segment")]
    RetherBridgeTwoPorts {
        /// Where the second link is.
        at: Location,
        /// The bridge.
        bridge: String,
        /// The segment.
        segment: String,
        /// Line of the first link.
        first_line: usize,
    },
    /// A RETHER bridge with fewer than two links: it joins two segments at least.
    #[error("{at}: rether-bridge `{name}` has one link; a bridge joins two segments at least")]
    RetherBridgeOneSegment {
        /// Where the bridge is defined.
        at: Location,
        /// The bridge.
        name: String,
    },
    /// More segments than the automatic address plan has subnets.
    #[error("{at}: more than 255 segments: the automatic plan gives each a /24 of 198.18.0.0/16; give the hosts explicit `ip`s in other subnets")]
    TooManySegments {
        /// Where the segment's first link is.
        at: Location,
    },
}

impl TopologyError {
    /// Where the problem is, if it is inside the file.
    pub fn location(&self) -> Option<&Location> {
        use TopologyError as E;
        match self {
            E::Read { .. } => None,
            E::Syntax { at, .. }
            | E::BadName { at, .. }
            | E::DuplicateName { at, .. }
            | E::Empty { at }
            | E::UnknownKind { at, .. }
            | E::OptionNotForKind { at, .. }
            | E::BadOption { at, .. }
            | E::BadIp { at, .. }
            | E::DuplicateIp { at, .. }
            | E::BadRate { at, .. }
            | E::EndCount { at, .. }
            | E::UnknownEnd { at, .. }
            | E::SelfLink { at, .. }
            | E::HostHasTwoLinks { at, .. }
            | E::Loop { at, .. }
            | E::AuthMismatch { at, .. }
            | E::HostWithoutLink { at, .. }
            | E::SwitchWithoutLink { at, .. }
            | E::AddressesExhausted { at, .. }
            | E::RouterWithoutLink { at, .. }
            | E::RoutersNotAnalysed { at }
            | E::TwoPortsOnSegment { at, .. }
            | E::OspfMixed { at, .. }
            | E::TooManySegments { at }
            | E::SegmentStation { at, .. }
            | E::SegmentsNotAnalysed { at }
            | E::RetherBridgesNotAnalysed { at }
            | E::RetherBridgeLink { at, .. }
            | E::RetherBridgeTwoPorts { at, .. }
            | E::RetherBridgeOneSegment { at, .. }
            | E::BadNetworkName { at, .. }
            | E::Missing { at, .. }
            | E::HostToHost { at, .. }
            | E::DuplicateLink { at, .. }
            | E::BadFlow { at, .. } => Some(at),
        }
    }
}

/// A validated topology.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Topology {
    /// Name the topology was read from (the file path as given), used in messages.
    pub origin: String,
    /// Leave checksum/segmentation offloads on (`[lab] offloads`, default false).
    pub offloads: bool,
    /// Keep IPv6 enabled in the namespaces (`[lab] ipv6`, default false).
    pub ipv6: bool,
    /// Hosts, in file order.
    pub hosts: Vec<Host>,
    /// Switches, in file order.
    pub switches: Vec<Switch>,
    /// Routers, in file order (`[[router]]`, docs/qsr.md §2.3).
    #[serde(default)]
    pub routers: Vec<Router>,
    /// The IP subnets of a topology with routers: removing the routers splits it into
    /// segments (docs/lab.md "Routers"); empty without routers (one flat 198.18.0.0/16).
    #[serde(default)]
    pub segments: Vec<Segment>,
    /// Links, in file order.
    pub links: Vec<Link>,
    /// Flows, in file order (`[[flow]]`; the lab ignores them).
    #[serde(default)]
    pub flows: Vec<Flow>,
}

/// Which rules a file is read under; the tables and their meaning are the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// A lab topology (docs/lab.md): node names `[a-z][a-z0-9]{0,7}` (they name namespaces),
    /// every host declared with exactly one link, no loops.
    Lab,
    /// A network file for `rtlan analyze` and `rtlan bwm` (docs/analyze.md): any names without
    /// white space, hosts implied by link ends, every switch with `t_mux` and `buffer` (an
    /// off-the-shelf FIFO switch) or with a `scheduler` (an rtlan real-time switch), every link
    /// with `rate` and a switch at one end at least, no two links between the same nodes.
    Network,
}

/// A host: a namespace with one interface `eth0` running the ordinary Linux stack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Host {
    /// Node name.
    pub name: String,
    /// IPv4 address of `eth0`.
    pub ip: Ipv4Addr,
    /// Prefix length of that address (16 unless given; 24 with routers).
    pub prefix_len: u8,
    /// The default route's gateway: the first router port on the host's segment (topologies
    /// with routers only).
    #[serde(default)]
    pub gateway: Option<Ipv4Addr>,
    /// The host daemon's `host_delay`, its term in every bound (`docs/delay.md` § "The host's
    /// term"); `None` = the daemon's default.
    #[serde(default)]
    pub host_delay: Option<Duration>,
}

/// A switch node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Switch {
    /// Node name.
    pub name: String,
    /// What runs in the switch's namespace.
    pub kind: SwitchKind,
    /// Multiplexing delay `t_mux` (Löser/Härtig §2.2): the latency of the switch's service
    /// curve when it is an off-the-shelf FIFO switch. Required in a network file unless the
    /// switch names a `scheduler`; the lab ignores it.
    #[serde(default)]
    pub t_mux: Option<Duration>,
    /// Buffer memory shared by the switch's output ports, bytes (an rtlan switch's memory for
    /// real-time queues). Required in a network file unless the switch names a `scheduler`; the
    /// lab ignores it.
    #[serde(default)]
    pub buffer_bytes: Option<u64>,
}

/// What kind of switch a switch node is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum SwitchKind {
    /// The rtlan user-space switch (`rtlan switch --config …`).
    Rtlan(RtlanSwitch),
    /// A kernel bridge `br0` (STP off, forward delay 0): the baseline.
    LinuxBridge,
    /// A shared Ethernet segment (`rtlan segment --config …`, docs/segment.md): one
    /// transmission at a time, collisions, binary exponential backoff — the medium RETHER runs
    /// on (Venkatramani and Chiueh, RETHER §1–§2). Lab only.
    Segment(SharedSegment),
    /// A RETHER bridge (`rtlan rether-bridge --config …`, docs/segment.md): one RETHER station
    /// on each shared segment it is linked to, forwarding between them (RETHER §2.5,
    /// multi-segment networks; docs/rether.md §9). Linked to segments only, two at least; it
    /// has no options of its own in a topology — every port takes its segment's rate and TRT.
    /// Lab only.
    RetherBridge,
}

/// Options of a `segment`: the shared medium, not an IP [`Segment`] of a routed topology.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedSegment {
    /// The medium's rate, bit/s; every link to the segment runs at it.
    pub rate_bps: u64,
    /// One-way propagation delay across the segment; `None` = the segment's default (a
    /// quarter slot time).
    #[serde(default)]
    pub propagation: Option<Duration>,
    /// Seed of the backoff generator; `None` = the segment's default.
    #[serde(default)]
    pub seed: Option<u64>,
    /// Token rotation time of the hosts' RETHER agents (RETHER §2.2.3); `None` = the agent's
    /// default (33.3 ms).
    #[serde(default)]
    pub trt: Option<Duration>,
}

/// A segment's rate when the topology gives none: 10 Mbit/s, the 802.3 half-duplex medium
/// RETHER was built and measured on (RETHER §4.1).
pub const DEFAULT_SEGMENT_RATE_BPS: u64 = 10_000_000;

/// Options of an `rtlan` switch, written to its config file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RtlanSwitch {
    /// Management IP (answered by the switch's ARP responder).
    pub mgmt_ip: Ipv4Addr,
    /// Prefix length of the management IP.
    pub mgmt_prefix_len: u8,
    /// Unknown-unicast policy; `None` = the switch's default.
    pub unknown_unicast: Option<UnknownUnicast>,
    /// Cycle time; `None` = the switch's default.
    pub cycle_time: Option<Duration>,
    /// Non-real-time queue bound per port; `None` = the switch's default.
    pub nrt_queue_bytes: Option<u64>,
    /// CPU to pin the switch's data plane to; `None` = not pinned.
    pub cpu: Option<u32>,
    /// Real-time scheduler of every output port; `None` = the switch's default (cyclic).
    #[serde(default)]
    pub scheduler: Option<SchedulerKind>,
    /// Wake-up lateness budget in every hop's latency (docs/delay.md §4); `None` = the
    /// switch's default.
    #[serde(default)]
    pub lateness_budget: Option<Duration>,
    /// Runs the IEEE 802.1D spanning tree (docs/stp.md) with the lab's short timers (max age
    /// 6 s, hello 1 s, forward delay 4 s); loops are accepted only when every switch does.
    #[serde(default)]
    pub stp: bool,
    /// Authenticates the control messages on every link of this switch (docs/protocol.md §8):
    /// the lab generates one key per link, shared by the switch and the node at the other end
    /// (a host's daemon or another switch, which must have `auth = true` too). A link to a
    /// kernel bridge carries no keys.
    #[serde(default)]
    pub auth: bool,
}

/// Which real-time scheduler serves a switch's output ports (docs/scheduler.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SchedulerKind {
    /// EtheReal §3.3: cyclic round robin with a quota per cycle.
    #[default]
    Cyclic,
    /// QSR §3.1 Guaranteed Service: per-connection rate control on a timing wheel,
    /// earliest deadline first.
    Wheel,
    /// QSR §3.1 in full: Guaranteed flows on the timing wheel, Controlled-Load flows and
    /// default traffic on work-conserving weighted fair queueing (WF²Q+) behind it.
    Qsr,
}

impl SchedulerKind {
    /// The name used in files and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            SchedulerKind::Cyclic => "cyclic",
            SchedulerKind::Wheel => "wheel",
            SchedulerKind::Qsr => "qsr",
        }
    }
}

/// A router node (QSR, docs/qsr.md §2): `rtlan router` in its own namespace, one port per
/// link (`p0, p1, …` in link order), each port addressed on its segment's subnet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Router {
    /// Node name.
    pub name: String,
    /// What forwards in the router's namespace.
    #[serde(default)]
    pub kind: RouterKind,
    /// Runs RSVP and switches reserved flows (QSR §3; `rtlan router`'s `[rsvp]`): on by
    /// default for `kind = "rtlan"`, never for the kernel's router.
    #[serde(default)]
    pub rsvp: bool,
    /// The routing daemon that feeds the router's kernel table, if any; without one the lab
    /// gives the router [`Router::routes`].
    #[serde(default)]
    pub ospf: Option<Ospf>,
    /// The ports, in port order.
    pub ports: Vec<RouterPort>,
    /// Static routes to every segment the router is not on, from shortest paths over the
    /// routers (fewest router hops; equal costs go to the next router whose name sorts
    /// first); empty when the router runs OSPF.
    pub routes: Vec<Route>,
}

/// What forwards in a router's namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RouterKind {
    /// `rtlan router --config …` with the kernel's forwarding off (docs/router.md).
    #[default]
    Rtlan,
    /// The kernel itself (`ip_forward = 1`): the baseline a router is measured against.
    LinuxRouter,
}

impl RouterKind {
    /// The name used in files.
    pub fn name(self) -> &'static str {
        match self {
            RouterKind::Rtlan => "rtlan",
            RouterKind::LinuxRouter => "linux-router",
        }
    }
}

/// The routing daemon of a router with `ospf`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Ospf {
    /// BIRD 2 (`bird`), OSPFv2 with one area over the router–router links and the hosts'
    /// segments as stub networks.
    Bird,
    /// FRR (`frr`): its `zebra` and `ospfd`, the same OSPFv2 area.
    Frr,
}

impl Ospf {
    /// The name used in files.
    pub fn name(self) -> &'static str {
        match self {
            Ospf::Bird => "bird",
            Ospf::Frr => "frr",
        }
    }
}

/// One router port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouterPort {
    /// Interface name in the router's namespace.
    pub ifname: String,
    /// Its IPv4 address.
    pub ip: Ipv4Addr,
    /// The prefix length of its segment.
    pub prefix_len: u8,
    /// Index of its segment in [`Topology::segments`].
    pub segment: usize,
}

/// A static route of a router.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Route {
    /// The destination network (host bits clear).
    pub prefix: Ipv4Addr,
    /// Its length.
    pub prefix_len: u8,
    /// The next router's address on a segment this router is on.
    pub gateway: Ipv4Addr,
    /// Routers crossed to the destination segment, this one included.
    pub metric: u32,
}

/// An IP subnet of a topology with routers: the hosts and switches that reach each other
/// without a router, or one router–router link.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Segment {
    /// The network address.
    pub prefix: Ipv4Addr,
    /// Its length.
    pub prefix_len: u8,
}

impl Segment {
    /// Whether `ip` is inside this subnet.
    pub fn contains(&self, ip: Ipv4Addr) -> bool {
        let mask = u32::MAX
            .checked_shl(32 - u32::from(self.prefix_len))
            .unwrap_or(0);
        u32::from(ip) & mask == u32::from(self.prefix)
    }
}

impl std::fmt::Display for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.prefix, self.prefix_len)
    }
}

/// A link (veth pair) between two nodes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    /// The two ends, in the order written.
    pub ends: [LinkEnd; 2],
    /// Emulated line rate in bit/s; `None` = unlimited.
    pub rate_bps: Option<u64>,
    /// The rate left after framing overhead, bit/s: the `C` of Löser/Härtig §2.2 that the bounds
    /// use; `None` = `rate_bps`.
    #[serde(default)]
    pub effective_rate_bps: Option<u64>,
    /// Propagation delay (default zero).
    #[serde(default)]
    pub delay: Duration,
}

impl Link {
    /// The rate the bounds use: the effective rate if given, else the line rate.
    pub fn bound_rate_bps(&self) -> Option<u64> {
        self.effective_rate_bps.or(self.rate_bps)
    }
}

/// A flow with its T-SPEC (Löser/Härtig §3: token rate `r`, bucket `b = r·Ts + M`, maximum packet
/// `M`); the peak rate comes from the links it crosses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Flow {
    /// Name, unique among flows.
    pub name: String,
    /// Node names from the sending host through switches to the receiving host.
    pub path: Vec<String>,
    /// Token rate `r`, bit/s.
    pub rate_bps: u64,
    /// Maximum packet `M`, bytes.
    pub max_packet_bytes: u64,
    /// The bucket, given either way.
    pub bucket: Bucket,
    /// Host delay `t_os` added to the end-to-end bound (default zero).
    pub host_delay: Duration,
    /// End-to-end delay the flow requires, if any.
    pub deadline: Option<Duration>,
}

/// How a flow's bucket `b` is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bucket {
    /// Shaping interval `Ts`: `b = r·Ts + M`.
    ShapingInterval(Duration),
    /// `b` itself, bytes (at least `M`).
    Burst(u64),
}

/// One end of a link.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkEnd {
    /// Node name.
    pub node: String,
    /// Interface name in that node's namespace (`eth0` on hosts, `pN` on switches).
    pub ifname: String,
}

impl Topology {
    /// Reads and validates a topology file; error messages start with the path as given.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Topology, TopologyError> {
        let path = path.as_ref();
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| TopologyError::Read {
            path: origin.clone(),
            source,
        })?;
        Topology::from_str(&text, &origin)
    }

    /// Validates topology `text` under the lab's rules; `origin` names it in error messages
    /// (usually the file name).
    #[allow(clippy::should_implement_trait)] // takes an origin name, unlike FromStr
    pub fn from_str(text: &str, origin: &str) -> Result<Topology, TopologyError> {
        parse::parse(text, origin, &[], Profile::Lab)
    }

    /// Reads and validates a network file (`rtlan analyze`, `rtlan bwm`): [`Profile::Network`].
    pub fn network_from_file(path: impl AsRef<Path>) -> Result<Topology, TopologyError> {
        let path = path.as_ref();
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| TopologyError::Read {
            path: origin.clone(),
            source,
        })?;
        Topology::network_from_str(&text, &origin)
    }

    /// Validates network-file `text` ([`Profile::Network`]); `origin` names it in messages.
    pub fn network_from_str(text: &str, origin: &str) -> Result<Topology, TopologyError> {
        parse::parse(text, origin, &[], Profile::Network)
    }

    /// Validates `text` under `profile`, leaving the top-level tables in `extras` to the caller
    /// (see [`Topology::from_str_with`]).
    pub fn read(
        text: &str,
        origin: &str,
        profile: Profile,
        extras: &[&str],
    ) -> Result<Topology, TopologyError> {
        parse::parse(text, origin, extras, profile)
    }

    /// Like [`Topology::from_str`] for a file that also holds other top-level tables (a
    /// simulation scenario's `[sim]`, say): the tables named in `extras` are not read here — the
    /// caller reads them with its own types and reports its errors at [`Location::of`] — and
    /// any other unknown table is still refused.
    pub fn from_str_with(
        text: &str,
        origin: &str,
        extras: &[&str],
    ) -> Result<Topology, TopologyError> {
        parse::parse(text, origin, extras, Profile::Lab)
    }

    /// The host named `name`.
    pub fn host(&self, name: &str) -> Option<&Host> {
        self.hosts.iter().find(|h| h.name == name)
    }

    /// The switch named `name`.
    pub fn switch(&self, name: &str) -> Option<&Switch> {
        self.switches.iter().find(|s| s.name == name)
    }

    /// The shared segment (`kind = "segment"`) named `name`.
    pub fn segment(&self, name: &str) -> Option<&SharedSegment> {
        match &self.switch(name)?.kind {
            SwitchKind::Segment(s) => Some(s),
            _ => None,
        }
    }

    /// Whether `name` is a RETHER bridge (`kind = "rether-bridge"`).
    pub fn is_rether_bridge(&self, name: &str) -> bool {
        self.switch(name)
            .is_some_and(|s| s.kind == SwitchKind::RetherBridge)
    }

    /// The router named `name`.
    pub fn router(&self, name: &str) -> Option<&Router> {
        self.routers.iter().find(|r| r.name == name)
    }

    /// Whether a host, switch or router is called `name` (a declared one: a network file's
    /// hosts implied by link ends are not).
    pub fn has_node(&self, name: &str) -> bool {
        self.host(name).is_some() || self.switch(name).is_some() || self.router(name).is_some()
    }

    /// Whether `name` is a host: a declared one, or a link end that is not a switch or router.
    pub fn is_host(&self, name: &str) -> bool {
        self.switch(name).is_none()
            && self.router(name).is_none()
            && (self.host(name).is_some()
                || self
                    .links
                    .iter()
                    .any(|l| l.ends.iter().any(|e| e.node == name)))
    }

    /// All node names: hosts first, then switches, then routers, each in file order.
    pub fn node_names(&self) -> impl Iterator<Item = &str> {
        self.hosts
            .iter()
            .map(|h| h.name.as_str())
            .chain(self.switches.iter().map(|s| s.name.as_str()))
            .chain(self.routers.iter().map(|r| r.name.as_str()))
    }

    /// The interfaces of `node` with their link: `(own end, peer end, rate)`, in port order.
    pub fn interfaces(&self, node: &str) -> Vec<(&LinkEnd, &LinkEnd, Option<u64>)> {
        let mut out = Vec::new();
        for link in &self.links {
            let [a, b] = &link.ends;
            if a.node == node {
                out.push((a, b, link.rate_bps));
            }
            if b.node == node {
                out.push((b, a, link.rate_bps));
            }
        }
        out
    }

    /// Whether the link between `a` and `b` carries keys: one end is an rtlan switch with
    /// `auth = true` and the other is a host or such a switch (never a kernel bridge or a
    /// router).
    pub fn link_authenticated(&self, a: &str, b: &str) -> bool {
        let auth = |n: &str| {
            if self.router(n).is_some() {
                return Some(None);
            }
            self.switches
                .iter()
                .find(|s| s.name == n)
                .map(|s| match &s.kind {
                    SwitchKind::Rtlan(r) => Some(r.auth),
                    SwitchKind::LinuxBridge | SwitchKind::Segment(_) | SwitchKind::RetherBridge => {
                        None
                    }
                })
        };
        match (auth(a), auth(b)) {
            (Some(Some(x)), Some(Some(y))) => x && y,
            (Some(Some(x)), None) | (None, Some(Some(x))) => x,
            _ => false,
        }
    }

    /// A switch's ports as `(ifname, peer node)`, in port order (`p0, p1, …`).
    pub fn switch_ports(&self, switch: &str) -> Vec<(String, String)> {
        self.interfaces(switch)
            .into_iter()
            .map(|(own, peer, _)| (own.ifname.clone(), peer.node.clone()))
            .collect()
    }
}

/// What a switch does with a unicast frame whose destination it has not learnt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnknownUnicast {
    /// EtheReal §3.4: hold the frame, send an ARP probe (sender IP 0.0.0.0) out of every port,
    /// forward once the destination is learnt.
    #[default]
    ArpProbe,
    /// Classic bridge behaviour: flood to every other port.
    Flood,
}
