//! Start-up calibration of the scheduler's cost per connection per cycle (EtheReal §4.3: the
//! number of connections a switch can schedule is bounded by the CPU time a cycle leaves), used by
//! CPU admission when the configuration says `cpu_cost_per_connection = "calibrate"`.
//!
//! The measurement mirrors `crates/core/benches/sched.rs`: a scratch [`CyclicScheduler`] with
//! many connections, each given one small frame per cycle; a timed cycle queues the frames, starts
//! the cycle and sends everything. The cost is the median over a few cycles of (wall time /
//! connections), rounded up to whole nanoseconds. The core never reads a clock; this shell does.

use std::time::{Duration, Instant as WallClock};

use rtlan_core::egress::{CyclicScheduler, FlowSpec, SchedConfig, Service};
use rtlan_core::Instant;

/// Connections on the scratch scheduler.
const CONNECTIONS: u32 = 2_000;
/// Timed cycles (the median is taken).
const CYCLES: u32 = 7;
const CYCLE: Duration = Duration::from_millis(10);

/// Measures the scheduler's cost per connection per cycle on this machine (takes a few ms in
/// a release build). `None` if the scratch scheduler cannot be built (it always can: the
/// parameters are constants within the scheduler's limits).
pub fn cpu_cost_per_connection() -> Option<Duration> {
    let cfg = SchedConfig {
        cycle: CYCLE,
        max_connections: CONNECTIONS as usize,
        ..SchedConfig::new(10_000_000_000)
    };
    let mut sched = CyclicScheduler::new(cfg, Instant::ZERO).ok()?;
    // 2,000 × 100 kbit/s fits 10 Gbit/s; burst ≥ packet.
    let spec = FlowSpec {
        rate_bps: 100_000,
        max_burst: 200,
        max_packet: 100,
        queue_bytes: 0,
        service: Service::Guaranteed,
    };
    let flows = (0..CONNECTIONS)
        .map(|_| sched.add_flow(spec).ok())
        .collect::<Option<Vec<_>>>()?;
    let frame = [0u8; 64];
    let mut buf = [0u8; 2048];
    let mut samples: Vec<u64> = (0..CYCLES)
        .map(|cycle| {
            let start = Instant::ZERO + CYCLE * cycle;
            let began = WallClock::now();
            for &flow in &flows {
                sched.enqueue_flow(start, flow, &frame);
            }
            let mut now = start;
            loop {
                while let Some(n) = sched.poll_transmit(now, &mut buf) {
                    std::hint::black_box(&buf[..n]);
                }
                match sched.poll_timeout() {
                    Some(t) if t < start + CYCLE => now = t.max(now),
                    _ => break,
                }
            }
            let nanos = u64::try_from(began.elapsed().as_nanos()).unwrap_or(u64::MAX);
            nanos.div_ceil(u64::from(CONNECTIONS)).max(1)
        })
        .collect();
    samples.sort_unstable();
    samples
        .get(samples.len() / 2)
        .map(|&ns| Duration::from_nanos(ns))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_a_plausible_cost() {
        let cost = cpu_cost_per_connection().expect("constant parameters are valid");
        // At least 1 ns by construction; a debug build on a loaded 2-core VM stays far below
        // 1 ms per connection per cycle (a broken loop that sends nothing would be ~0 and
        // one that never ends would hang).
        assert!(cost >= Duration::from_nanos(1));
        assert!(cost < Duration::from_millis(1), "{cost:?}");
    }
}
