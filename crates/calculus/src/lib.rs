//! Deterministic network calculus for rtlan: the analysis behind delay-bounded admission
//! (seed 004 §2.2, Löser & Härtig; issue 5 item 1).
//!
//! - [`rational`]: exact rational arithmetic (why: a bound must never come out below the truth).
//! - [`curve`]: concave arrival curves (T-SPECs, token buckets, sums, minima), rate-latency service
//!   curves and their concatenation, min-plus convolution/deconvolution, backlog and delay bounds,
//!   output arrival curves.
//! - [`loser`]: the closed forms (2)–(7) of seed 004 for one switch output port.
//! - [`network`]: multi-hop total flow analysis (TFA) and separated flow analysis (SFA) on
//!   feed-forward networks.
//! - [`rfc2212`]: the Guaranteed-Service end-to-end delay bound.
//! - [`netfile`], [`units`]: the network file of `rtlan analyze` (issue 5 item 2).
//! - [`analysis`]: per-port closed forms over a whole network, with the admission verdict.
//! - [`booking`]: incremental admission for the bandwidth manager (issue 5 item 6).
//!
//! Units everywhere: time in seconds, data in bits, rates in bit/s, all as [`Q`].
//! See `docs/calculus.md` for the formulas, their provenance and the rounding policy.

pub mod analysis;
#[cfg(test)]
mod analysis_tests;
pub mod booking;
pub mod curve;
pub mod loser;
pub mod netfile;
pub mod network;
pub mod rational;
pub mod rfc2212;
pub mod units;

pub use curve::{ArrivalCurve, CurveError, RateLatency, TokenBucket};
pub use network::{Flow, Multiplexing, Network, NetworkError, Node, TfaReport};
pub use rational::{ArithError, Q};
