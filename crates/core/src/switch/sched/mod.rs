//! Output-port scheduling and input metering of an EtheReal switch (EtheReal §3.3, "Real-Time
//! Packet Switching"), as pure state machines on virtual time.
//!
//! - [`CyclicScheduler`]: one output port's cyclic round-robin scheduler — a queue per real-time
//!   connection served up to its per-cycle quota (non-work-conserving), then the port's
//!   non-real-time FIFO, all paced at line rate.
//! - [`NrtMeter`]: the preemptive discard of non-real-time traffic on a peripheral input link once
//!   its rate over a sliding window exceeds the link's residual bandwidth.
//!
//! The algorithm, the deviations from the paper and the bounds are written up in
//! `docs/scheduler.md`.

mod cyclic;
mod discard;
#[cfg(test)]
mod tests;

pub use cyclic::{
    ConnStats, CyclicScheduler, SchedConfig, SchedError, SchedStats, CATCHUP_CYCLES, DEFAULT_CYCLE,
    MAX_CYCLE, MIN_CYCLE,
};
pub use discard::{DiscardError, MeterStats, NrtMeter, DEFAULT_BUCKETS, DEFAULT_WINDOW};
