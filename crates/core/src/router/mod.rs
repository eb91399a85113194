//! The QoS switch-router's look-up structures (QSR paper §4 and §5): the forwarding table
//! ([`fib`], longest prefix match on the destination), the RSVP classifier ([`classify`], exact
//! 5-tuple with a wildcard source port, RFC 2205), the PSIP classifier ([`psip`], CIDR filters on
//! source and destination) and the order an ingress port consults them in ([`decide`]: traps,
//! RSVP, PSIP, default forwarding).
//!
//! The tables are sans-IO and without time: pure look-ups. Whoever owns them (the router node,
//! RSVP, the provisioning of pipes) changes them; a packet's path only reads them. The router
//! node ([`node`], with its [`neighbours`] table and [`config`]) drives them on the shared node
//! contract: default IP forwarding (§4.1) with ARP, TTL and ICMP; [`fastpath`] is what it tells
//! a best-effort fast path below it.
//! Why the tries are `prefix_trie`'s and not our own: docs/router.md, "Lookup structures".

pub mod classify;
pub mod config;
pub mod decide;
pub mod fastpath;
pub mod fib;
pub mod neighbours;
pub mod node;
pub mod pipes;
pub mod psip;
pub mod switched;

#[cfg(test)]
mod tests;

pub use crate::prefix::{Ipv4Prefix, PrefixError};
pub use classify::{ClassifyError, FlowKey, RsvpClassifier};
pub use decide::{Decision, PacketFields, Tables, TrapReason};
pub use fastpath::{FastHop, FastRoute};
pub use fib::{Fib, FibError, NextHop, Route, RouteSource};
pub use pipes::{
    PipeCounters, PipeError, PipeRefusal, PipeService, PipeSpec, PipeState, PipeStatus,
    PSIP_PORT_CONTROLLED_LOAD, PSIP_PORT_GUARANTEED,
};
pub use psip::{CidrFilter, PsipClassifier, PsipError};

pub use config::{
    RouterConfig, RouterConfigError, RouterPort, RouterStats, RsvpSettings, StaticRoute,
};
pub use node::{Router, Trapped};
