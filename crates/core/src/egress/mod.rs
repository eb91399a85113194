//! The egress side of every node kind (switch today; QSR switch-router and RETHER agent next):
//! what happens to a frame between "it goes out of port P" and "it is on the wire".
//!
//! - `queue`: the preallocated frame FIFO every egress queue is made of (EtheReal §3.3's output
//!   buffers);
//! - [`pool`]: buffer pools per traffic class — control, Guaranteed flows, Controlled-Load flows,
//!   default — with one shared excess pool that all but default traffic may borrow (QSR §3.1);
//! - [`pacer`]: line-rate pacing on virtual time for a [`crate::Medium::FullDuplex`] port;
//! - [`sched`]: the [`Scheduler`] contract every output-port scheduler implements, and the
//!   [`FlowHandle`]s that address reserved flows without a hash lookup per frame;
//! - [`config`]: the schedulers' shared configuration ([`SchedConfig`]) and errors;
//! - `bucket`: the exact token bucket behind the timing wheel's regulators and every port's
//!   control bucket;
//! - [`cyclic`]: EtheReal's cyclic round-robin scheduler (EtheReal §3.3);
//! - [`wheel`]: rate-controlled earliest-deadline-first service on a timing wheel, QSR's
//!   Guaranteed Service (QSR §3.1);
//! - [`port_core`]: what a port's scheduler keeps whatever its real-time discipline — control
//!   FIFO and bucket, non-real-time FIFO, pools, pacer, counters — once ([`PortCore`]), and the
//!   [`Port`] that joins it to a [`Discipline`] (the cyclic, wheel and QSR schedulers are
//!   `Port<CyclicDiscipline>`, `Port<WheelDiscipline>` and `Port<QsrDiscipline>`);
//! - [`wfq`]: work-conserving weighted fair queueing (WF²Q+) for Controlled-Load flows and
//!   default traffic (QSR §3.1's work-conserving wheel);
//! - [`qsr`]: the QSR port — Guaranteed flows on the timing wheel, Controlled Load and default
//!   on the fair queue behind it ([`QsrScheduler`]);
//! - [`admission`]: QSR §3.1's Gaussian buffer test for Controlled-Load flows;
//! - [`port`]: the per-port choice between the three ([`PortScheduler`], [`SchedulerKind`]).
//!
//! The algorithm, the deviations from the paper and the bounds are written up in
//! `docs/scheduler.md`.

pub mod admission;
pub(crate) mod bucket;
pub mod config;
pub mod cyclic;
pub mod pacer;
pub mod pool;
pub mod port;
pub mod port_core;
pub mod qsr;
pub(crate) mod queue;
pub mod sched;
pub mod wfq;
pub mod wheel;

pub use admission::{cl_buffer_admits, cl_overflow_probability, normal_quantile};
pub use config::{
    SchedConfig, SchedError, CONTROL_RATE_DIVISOR, DEFAULT_CONTROL_BURST_BYTES,
    DEFAULT_GRANULARITY, DEFAULT_MAX_FRAME, DEFAULT_WHEEL_SLOTS, MAX_GRANULARITY, MIN_GRANULARITY,
};
pub use cyclic::{
    CyclicDiscipline, CyclicScheduler, CATCHUP_CYCLES, DEFAULT_CYCLE, MAX_CYCLE, MIN_CYCLE,
};
pub use pacer::{PACING_CATCHUP, PACING_LATE_THRESHOLD};
pub use pool::{BufferPools, PoolConfig, PoolStats, TrafficClass};
pub use port::{PortDiscipline, PortScheduler, SchedulerKind};
pub use port_core::{Discipline, FlowQueue, Port, PortCore};
pub use qsr::{QsrDiscipline, QsrScheduler};
pub use sched::{ConnStats, FlowHandle, FlowSpec, SchedStats, Scheduler, Service};
pub use wfq::WfqDiscipline;
pub use wheel::{wheel_deadline_ns, WheelDiscipline, WheelScheduler};
