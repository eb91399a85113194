//! Output-port scheduling and input metering of an EtheReal switch (EtheReal §3.3, "Real-Time
//! Packet Switching"), as pure state machines on virtual time.
//!
//! - [`CyclicScheduler`]: one output port's cyclic round-robin scheduler, shared by every node
//!   kind and living in [`crate::egress`]; re-exported here, where the switch uses it.
//! - [`NrtMeter`]: the preemptive discard of non-real-time traffic on a peripheral input link once
//!   its rate over a sliding window exceeds the link's residual bandwidth.
//!
//! The algorithm, the deviations from the paper and the bounds are written up in
//! `docs/scheduler.md`.

mod discard;

pub use crate::egress::{
    ConnStats, CyclicScheduler, FlowHandle, FlowSpec, SchedConfig, SchedError, SchedStats,
    CATCHUP_CYCLES, DEFAULT_CYCLE, MAX_CYCLE, MIN_CYCLE,
};
pub use discard::{DiscardError, MeterStats, NrtMeter, DEFAULT_BUCKETS, DEFAULT_WINDOW};
