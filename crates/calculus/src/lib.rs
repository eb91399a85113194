//! Deterministic network calculus for rtlan: the analysis behind delay-bounded admission
//! (Löser/Härtig, "Low-latency hard real-time communication over switched Ethernet", §2.2).
//!
//! - [`rational`]: exact rational arithmetic (why: a bound must never come out below the truth).
//! - [`curve`]: concave arrival curves (T-SPECs, token buckets, sums, minima), rate-latency service
//!   curves and their concatenation, min-plus convolution/deconvolution, backlog and delay bounds,
//!   output arrival curves.
//! - [`loser`]: the closed forms (2)–(7) of Löser/Härtig §2.2 for one switch output port.
//! - [`network`]: multi-hop total flow analysis (TFA) and separated flow analysis (SFA) on
//!   feed-forward networks.
//! - [`methods`]: per-flow bounds beyond TFA on that model — FIFO-aware output bursts, SFA and
//!   PMOO — and the choice of the tightest.
//! - [`lp`]: the tightest of them where it fits, a linear program over the flow's tandem with an
//!   exactly checked dual certificate.
//! - [`rfc2212`]: the Guaranteed-Service end-to-end delay bound.
//! - [`netfile`]: the network the analysis takes (read from files by `rtlan_topology`).
//! - [`analysis`]: per-port closed forms over a whole network, with the admission verdict.
//! - [`booking`]: incremental admission for the bandwidth manager (Löser/Härtig §3.2).
//! - [`servers`]: the rate-latency service curve of each rtlan real-time scheduler (EtheReal §3.3's
//!   cyclic round robin, QSR §3.1's rate-controlled timing wheel) and the per-hop arithmetic of
//!   delay-bounded signalling (burst growth, backlog, queue size, end-to-end bound).
//!
//! Units everywhere: time in seconds, data in bits, rates in bit/s, all as [`Q`].
//! See `docs/calculus.md` for the formulas, their provenance and the rounding policy.

pub mod analysis;
#[cfg(test)]
mod analysis_tests;
pub mod booking;
pub mod curve;
#[cfg(test)]
mod fluid;
pub mod loser;
pub mod lp;
pub mod methods;
pub mod netfile;
pub mod network;
pub mod rational;
pub mod rfc2212;
pub mod servers;
#[cfg(test)]
mod servers_tests;

pub use curve::{ArrivalCurve, CurveError, RateLatency, TokenBucket};
pub use network::{Flow, Multiplexing, Network, NetworkError, Node, TfaReport};
pub use rational::{ArithError, Q};
pub use servers::{HopTspec, PortParams, Server, ServerError};
