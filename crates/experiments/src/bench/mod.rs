//! Lab benchmarks against the Linux bridge, built in the same run (DESIGN.md §6: "speed is
//! measured by benchmarks … against the Linux bridge in the same run, reported as ratios"):
//! forwarding rate, TCP throughput and UDP latency ([`forward`]; EtheReal §4.3, "Prototype
//! Implementation Efficiency"), connection-setup time ([`setup`]; EtheReal §4.3, "Connection
//! setup overhead") and admission through the bandwidth manager ([`bwm`]; Löser/Härtig §3.2).
//! Each returns a report that renders as a table or a JSON document; docs/benchmarks.md has
//! the method and the figures.

pub mod bwm;
pub mod forward;
pub(crate) mod measure;
pub use measure::Generator;
pub(crate) mod report;
pub mod setup;
mod sink;
