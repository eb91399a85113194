//! The network the whole-network analysis takes, in exact units: switches with their multiplexing
//! delay `t_mux` and buffer memory (Löser/Härtig, "Low-latency hard real-time communication over
//! switched Ethernet", §2.2), links with their (effective) rates, and flows with their T-SPECs
//! (§3: `b = r·Ts + M`). Files are read by the one topology reader (`rtlan_topology`, format in
//! `docs/analyze.md`), which converts its model into a [`NetFile`]; this crate parses nothing.

use crate::rational::Q;

/// A switch: name, multiplexing delay `t_mux` (s) and shared buffer memory (bits).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchSpec {
    /// Name, unique among nodes.
    pub name: String,
    /// Multiplexing delay `t_mux`, seconds.
    pub t_mux: Q,
    /// Buffer memory, bits.
    pub buffer: Q,
}

/// A full-duplex link; `effective_rate` defaults to `rate`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkSpec {
    /// The two node names.
    pub ends: [String; 2],
    /// Line rate, bit/s.
    pub rate: Q,
    /// Rate after framing overhead, bit/s: the `C` of seed 004.
    pub effective_rate: Q,
}

/// A flow with its T-SPEC `(C, M, r, b)`; the peak `C` comes from the links it crosses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowSpec {
    /// Name, unique among flows.
    pub name: String,
    /// Node names from sending host through switches to receiving host.
    pub path: Vec<String>,
    /// Token rate `r`, bit/s.
    pub rate: Q,
    /// Maximum packet size `M`, bits.
    pub max_packet: Q,
    /// Bucket size `b`, bits (`r·Ts + M` when given as `shaping_interval`).
    pub burst: Q,
    /// Host delay `t_os` added to the end-to-end bound, seconds (default 0).
    pub host_delay: Q,
    /// Optional end-to-end delay the flow requires, seconds.
    pub deadline: Option<Q>,
}

/// A host's address (`[[host]]`): lets clients of the bandwidth manager name a host by IP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSpec {
    /// The host's name: a link end that is not a switch.
    pub name: String,
    /// Its IPv4 address, unique in the file.
    pub ip: std::net::Ipv4Addr,
}

/// A parsed and checked network file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NetFile {
    /// Host addresses, in file order (optional tables).
    pub hosts: Vec<HostSpec>,
    /// Switches, in file order.
    pub switches: Vec<SwitchSpec>,
    /// Links, in file order.
    pub links: Vec<LinkSpec>,
    /// Flows, in file order.
    pub flows: Vec<FlowSpec>,
}
