//! Cost of EtheReal's cyclic scheduler (§3.3) per connection per cycle, the figure §4.3 measures:
//! one output port with 10,000 real-time connections, each with one frame queued; one iteration
//! runs one full cycle (cycle start, every connection visited and its frame sent, line-rate pacing
//! included) and re-queues the frames. Criterion's time per element is the cost per connection per
//! cycle (target: ≤ 1 µs); the benchmark also prints it.
//!
//! The same port under QSR's timing wheel (`wheel_scheduler/period_10k_flows`): 10,000 flows,
//! one 64-byte frame each per 10 ms period, all eligible at the period's start (so all 10,000 are
//! released in one slot and compete in the EDF heap); one iteration enqueues and sends them all.
//! The time per element is the cost of one frame's enqueue and transmit.
//!
//! The QSR port the same way (`qsr_scheduler/period_10k_cl_flows`): 10,000 Controlled-Load flows
//! of 100 kbit/s, one 64-byte frame each per period, all backlogged at once, so WF²Q+'s two
//! heaps hold 10,000 flows; and `qsr_scheduler/period_10k_gs_flows`, the wheel's case through
//! the QSR port (its handle indirection and the fair queue's empty check added).

use std::hint::black_box;
use std::time::{Duration, Instant as WallClock};

use criterion::{criterion_main, Criterion, Throughput};
use rtlan_core::egress::{
    CyclicScheduler, FlowHandle, FlowSpec, QsrScheduler, SchedConfig, Scheduler, Service,
    WheelScheduler,
};
use rtlan_core::Instant;

const CONNECTIONS: u32 = 10_000;
const CYCLE: Duration = Duration::from_millis(10);

/// One port at 10 Gbit/s with `CONNECTIONS` connections of 100 kbit/s (one 64-byte frame each per
/// cycle), and the connections' handles.
fn port() -> (CyclicScheduler, Vec<FlowHandle>) {
    let cfg = SchedConfig {
        cycle: CYCLE,
        max_connections: CONNECTIONS as usize,
        ..SchedConfig::new(10_000_000_000)
    };
    let mut s = CyclicScheduler::new(cfg, Instant::ZERO).expect("benchmark configuration is valid");
    let spec = FlowSpec {
        rate_bps: 100_000,
        max_burst: 200,
        max_packet: 100,
        queue_bytes: 0,
        service: Service::Guaranteed,
    };
    let flows = (0..CONNECTIONS)
        .map(|_| {
            s.add_flow(spec)
                .expect("10,000 × 100 kbit/s fits 10 Gbit/s")
        })
        .collect();
    (s, flows)
}

/// One port at 10 Gbit/s under the timing wheel with `CONNECTIONS` flows of 100 kbit/s (one
/// 64-byte frame each per 10 ms), and the flows' handles.
fn wheel_port() -> (WheelScheduler, Vec<FlowHandle>) {
    let cfg = SchedConfig {
        max_connections: CONNECTIONS as usize,
        ..SchedConfig::new(10_000_000_000)
    };
    let mut s = WheelScheduler::new(cfg, Instant::ZERO).expect("benchmark configuration is valid");
    let spec = FlowSpec {
        rate_bps: 100_000,
        max_burst: 200,
        max_packet: 100,
        queue_bytes: 0,
        service: Service::Guaranteed,
    };
    let flows = (0..CONNECTIONS)
        .map(|_| {
            s.add_flow(spec)
                .expect("10,000 × 100 kbit/s fits 10 Gbit/s")
        })
        .collect();
    (s, flows)
}

/// One QSR port at 10 Gbit/s with `CONNECTIONS` flows of `service` at 100 kbit/s, and the
/// flows' handles.
fn qsr_port(service: Service) -> (QsrScheduler, Vec<FlowHandle>) {
    let cfg = SchedConfig {
        max_connections: CONNECTIONS as usize,
        default_floor_bps: 100_000_000,
        ..SchedConfig::new(10_000_000_000)
    };
    let mut s = QsrScheduler::new(cfg, Instant::ZERO).expect("benchmark configuration is valid");
    let spec = FlowSpec {
        rate_bps: 100_000,
        max_burst: 200,
        max_packet: 100,
        queue_bytes: 0,
        service,
    };
    let flows = (0..CONNECTIONS)
        .map(|_| {
            s.add_flow(spec)
                .expect("10,000 × 100 kbit/s fits 10 Gbit/s")
        })
        .collect();
    (s, flows)
}

fn qsr_cost(c: &mut Criterion) {
    let frame = [0u8; 64];
    let mut buf = [0u8; 2048];
    let mut group = c.benchmark_group("qsr_scheduler");
    group.throughput(Throughput::Elements(u64::from(CONNECTIONS)));
    for (name, service) in [
        ("period_10k_cl_flows", Service::ControlledLoad),
        ("period_10k_gs_flows", Service::Guaranteed),
    ] {
        let (mut s, flows) = qsr_port(service);
        let mut period = 0u64;
        let runs = 20;
        let t0 = WallClock::now();
        for _ in 0..runs {
            let sent = one_period(&mut s, &flows, period, &frame, &mut buf);
            assert_eq!(sent, CONNECTIONS, "every flow sends its frame each period");
            period += 1;
        }
        let per = t0.elapsed().as_nanos() / u128::from(runs * CONNECTIONS);
        println!("qsr {service:?}: {per} ns per frame, enqueue and transmit ({CONNECTIONS} flows)");
        group.bench_function(name, |b| {
            b.iter(|| {
                let sent = one_period(&mut s, &flows, period, &frame, &mut buf);
                period += 1;
                sent
            })
        });
    }
    group.finish();
}

/// Queues one frame per flow at the start of period `period` and sends until the scheduler has
/// nothing more this period. Returns the frames sent.
fn one_period<S: Scheduler>(
    s: &mut S,
    flows: &[FlowHandle],
    period: u64,
    frame: &[u8],
    buf: &mut [u8],
) -> u32 {
    let start = Instant::ZERO + CYCLE * u32::try_from(period).unwrap_or(u32::MAX);
    let end = start + CYCLE;
    for &flow in flows {
        s.enqueue_flow(start, flow, frame);
    }
    let mut now = start;
    let mut sent = 0;
    loop {
        while let Some(n) = s.poll_transmit(now, buf) {
            black_box(&buf[..n]);
            sent += 1;
        }
        match s.poll_timeout() {
            Some(t) if t < end => now = t.max(now),
            _ => return sent,
        }
    }
}

fn wheel_cost(c: &mut Criterion) {
    let (mut s, flows) = wheel_port();
    let frame = [0u8; 64];
    let mut buf = [0u8; 2048];
    let mut period = 0u64;
    let runs = 20;
    let t0 = WallClock::now();
    for _ in 0..runs {
        let sent = one_period(&mut s, &flows, period, &frame, &mut buf);
        assert_eq!(sent, CONNECTIONS, "every flow sends its frame each period");
        period += 1;
    }
    let per = t0.elapsed().as_nanos() / u128::from(runs * CONNECTIONS);
    println!("wheel: {per} ns per frame, enqueue and transmit ({CONNECTIONS} flows)");
    assert_eq!(s.stats().deadline_misses, 0);

    let mut group = c.benchmark_group("wheel_scheduler");
    group.throughput(Throughput::Elements(u64::from(CONNECTIONS)));
    group.bench_function("period_10k_flows", |b| {
        b.iter(|| {
            let sent = one_period(&mut s, &flows, period, &frame, &mut buf);
            period += 1;
            sent
        })
    });
    group.finish();
}

/// Queues one frame per connection at the start of `cycle`, then sends until the scheduler has
/// nothing more this cycle. Returns the frames sent.
fn one_cycle(
    s: &mut CyclicScheduler,
    flows: &[FlowHandle],
    cycle: u64,
    frame: &[u8],
    buf: &mut [u8],
) -> u32 {
    let start = Instant::ZERO + CYCLE * u32::try_from(cycle).unwrap_or(u32::MAX);
    let end = start + CYCLE;
    for &flow in flows {
        s.enqueue_flow(start, flow, frame);
    }
    let mut now = start;
    let mut sent = 0;
    loop {
        while let Some(n) = s.poll_transmit(now, buf) {
            black_box(&buf[..n]);
            sent += 1;
        }
        match s.poll_timeout() {
            Some(t) if t < end => now = t.max(now),
            _ => return sent,
        }
    }
}

fn cycle_cost(c: &mut Criterion) {
    let (mut s, flows) = port();
    let frame = [0u8; 64];
    let mut buf = [0u8; 2048];
    let mut cycle = 0u64;

    // One plain measurement, printed, so the figure is visible without criterion's report.
    let runs = 20;
    let t0 = WallClock::now();
    for _ in 0..runs {
        let sent = one_cycle(&mut s, &flows, cycle, &frame, &mut buf);
        assert_eq!(
            sent, CONNECTIONS,
            "every connection sends its frame each cycle"
        );
        cycle += 1;
    }
    let per = t0.elapsed().as_nanos() / u128::from(runs * CONNECTIONS);
    println!("sched: {per} ns per connection per cycle ({CONNECTIONS} connections)");

    let mut group = c.benchmark_group("cyclic_scheduler");
    group.throughput(Throughput::Elements(u64::from(CONNECTIONS)));
    group.bench_function("cycle_10k_connections", |b| {
        b.iter(|| {
            let sent = one_cycle(&mut s, &flows, cycle, &frame, &mut buf);
            cycle += 1;
            sent
        })
    });
    group.finish();
}

/// The benchmark group (in its own module because `criterion_group!` writes an undocumented
/// `pub fn`).
pub mod group {
    #![allow(missing_docs)]
    criterion::criterion_group!(
        benches,
        super::cycle_cost,
        super::wheel_cost,
        super::qsr_cost
    );
}

criterion_main!(group::benches);
