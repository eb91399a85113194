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
//!
//! Units everywhere: time in seconds, data in bits, rates in bit/s, all as [`Q`].
//! See `docs/calculus.md` for the formulas, their provenance and the rounding policy.

pub mod curve;
pub mod loser;
pub mod network;
pub mod rational;
pub mod rfc2212;

pub use curve::{ArrivalCurve, CurveError, RateLatency, TokenBucket};
pub use network::{Flow, Multiplexing, Network, NetworkError, Node, TfaReport};
pub use rational::{ArithError, Q};
