//! The `rtlan` library: the client side of real-time connections for applications — the RTTR
//! library of EtheReal §3.2 ([`rttr`]): reserve through the host daemon, get a UDP socket aimed
//! at the proxy IP, and send through a shaper that keeps the traffic inside the reservation.
//!
//! The `rtlan` binary (subcommands `reserve`, `send`, `recv`, …) is a thin shell over this
//! library and the `rtlan-*` crates; this library does not depend on the command-line parser.

/// Guarded lab processes for scenarios and tests; they live in `rtlan-experiments`.
pub use rtlan_experiments::labkit;
pub mod rttr;
