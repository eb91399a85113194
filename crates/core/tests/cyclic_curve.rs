//! The cyclic scheduler against its service curve from the calculus (`rtlan_calculus::servers`,
//! EtheReal §3.3; Le Boudec & Thiran §1.4 rate-latency servers): a `CyclicScheduler` at 100 Mbit/s
//! with fourteen connections admitted by cycle work at EtheReal's cap (U = 60 %: Σ (Q_j + L_j) ≤
//! U·C·T, `cyclic_cycle_work_bits` against `cyclic_work_budget_bits`), driven on exact virtual
//! time (λ = 0) by adversarial arrivals (eight seeded runs of 2 s), must give each tagged
//! connection `departures(t) ≥ r·(t − s − θ)` over every backlogged period starting at `s`, every
//! frame a delay within `b/r + θ`, and no connection more than its cycle work `Q_j + L_j` between
//! two boundaries; θ = T + Δ + L_i/r_i (+ λ = 0), Δ = (U·C·T + L_max + σ_c)/(C − ρ_c).
//!
//! The adversary: the twelve untagged connections alternate a "saving" cycle (one small frame at
//! the start, then a burst of full-size frames queued just before the next boundary, so they
//! carry their unspent quota to it) and a "spending" cycle, in which each of them holds the most
//! the scheduler allows, `min(carry, L) + Q = Q + L`: the cycle work the calculus charges. Control
//! frames arrive at their token bucket (σ_c = two full frames, ρ_c = 1 Mbit/s) just after every
//! boundary, and the non-real-time FIFO is always backlogged with full-size frames (blocking).
//! Tagged connection A sends minimum-size frames greedily within its token bucket: a quota just
//! after a boundary, then a few frames that find the quota spent and wait for the next boundary,
//! behind a cycle's work of full-size frames from every untagged connection. Tagged connection B
//! sends frames of random sizes, on and off, greedily within its token bucket.

use std::time::Duration;

use rtlan_calculus::servers::{
    cyclic_cycle_work_bits, cyclic_drain_ns, cyclic_work_budget_bits, end_to_end_ns, CyclicParams,
    HopTspec, PortParams, Server,
};
use rtlan_core::egress::{CyclicScheduler, FlowHandle, FlowSpec, SchedConfig, Service};
use rtlan_core::Instant;
use rtlan_wire::cost::wire_bits;

const LINE: u64 = 100_000_000;
const CYCLE_NS: u64 = 10_000_000;
const RATE: u64 = 3_000_000;
const FLOWS: usize = 15;
/// Tagged connections: A, B, C.
const TAGGED: usize = 3;
/// Full-size frames each untagged connection queues just before a spending cycle.
const SAVED_FRAMES: usize = 5;
const CYCLES: u64 = 200;
const CONTROL_RATE: u64 = 1_000_000;
const TAG_CONTROL: u32 = u32::MAX;
const TAG_NRT: u32 = u32::MAX - 1;

/// A small deterministic generator (xorshift64*), so the run is the same every time.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Flow(usize),
    Control,
    Nrt,
}

struct Arrival {
    at_ns: u64,
    kind: Kind,
    len: usize,
}

fn port() -> PortParams {
    PortParams {
        line_rate_bps: LINE,
        max_frame_bits: wire_bits(1514),
        control_burst_bits: 2 * wire_bits(1514),
        control_rate_bps: CONTROL_RATE,
        lateness_ns: 0,
        link_delay_ns: 0,
    }
}

fn params() -> CyclicParams {
    CyclicParams {
        port: port(),
        cycle_ns: CYCLE_NS,
        rt_share_percent: 60,
    }
}

fn server() -> Server {
    Server::Cyclic(params())
}

/// Tagged connection A: minimum-size frames, bucket of 44 of them (29 568 wire bits ≤ one quota
/// of 30 000).
const A_FRAMES: u64 = 44;
/// Tagged connection B: token bucket depth, wire bits.
const B_BURST: u64 = 40_000;
/// Tagged connection C: 500 kbit/s of full-size frames, a quota of 5000 bits per cycle below its
/// 12 304-bit frame, so each frame waits for credit over several cycles; bucket of two frames.
const C_RATE: u64 = 500_000;
const C_BURST: u64 = 2 * 12_304;

fn tspec(flow: usize) -> HopTspec {
    match flow {
        0 => HopTspec {
            rate_bps: RATE,
            burst_bits: A_FRAMES * wire_bits(60),
            max_frame_bits: wire_bits(60),
        },
        1 => HopTspec {
            rate_bps: RATE,
            burst_bits: B_BURST,
            max_frame_bits: wire_bits(1514),
        },
        2 => HopTspec {
            rate_bps: C_RATE,
            burst_bits: C_BURST,
            max_frame_bits: wire_bits(1514),
        },
        _ => HopTspec {
            rate_bps: RATE,
            burst_bits: 5 * wire_bits(1514),
            max_frame_bits: wire_bits(1514),
        },
    }
}

fn arrivals(rng: &mut Rng) -> Vec<Arrival> {
    let end = CYCLES * CYCLE_NS;
    let mut out = Vec::new();
    // A: greedy within (3 Mbit/s, 44 × 672 bits), in step with the untagged connections' saving
    // cycles: a burst of up to one quota just after the boundary (served at once, the line is
    // quiet), then what the bucket holds a few ms later — frames that find the quota spent and
    // wait for the next boundary, where the untagged connections spend two quotas each.
    let (mut tokens, mut last) = (A_FRAMES * wire_bits(60), 0u64);
    for k in (0..CYCLES).step_by(2) {
        let first = k * CYCLE_NS + 1_000;
        let second = first + 1_000_000 + rng.below(3_000_000);
        for at in [first, second] {
            tokens = (tokens + RATE * (at - last) / 1_000_000_000).min(A_FRAMES * wire_bits(60));
            last = at;
            while tokens >= wire_bits(60) {
                tokens -= wire_bits(60);
                out.push(Arrival {
                    at_ns: at,
                    kind: Kind::Flow(0),
                    len: 60,
                });
            }
        }
    }
    // B: on/off, greedy within (3 Mbit/s, 40 000 bits) while on; random frame sizes.
    let (mut tokens, mut last, mut t) = (B_BURST, 0u64, 0u64);
    while t < end {
        let on_until = t + 1_000_000 + rng.below(20_000_000);
        while t < on_until && t < end {
            let len = 60 + rng.below(1455) as usize;
            let cost = wire_bits(len);
            tokens = (tokens + RATE * (t - last) / 1_000_000_000).min(B_BURST);
            last = t;
            if tokens >= cost {
                tokens -= cost;
                out.push(Arrival {
                    at_ns: t,
                    kind: Kind::Flow(1),
                    len,
                });
            } else {
                // Wait until the bucket holds this frame (rounded up).
                t += ((cost - tokens) * 1_000_000_000).div_ceil(RATE);
                tokens = (tokens + RATE * (t - last) / 1_000_000_000).min(B_BURST);
                last = t;
                tokens -= cost;
                out.push(Arrival {
                    at_ns: t,
                    kind: Kind::Flow(1),
                    len,
                });
            }
        }
        t = t.max(on_until) + rng.below(30_000_000);
    }
    // C: greedy within (500 kbit/s, two full frames), with random pauses.
    let (mut tokens, mut last, mut t) = (C_BURST, 0u64, rng.below(CYCLE_NS));
    while t < end {
        let cost = wire_bits(1514);
        tokens = (tokens + C_RATE * (t - last) / 1_000_000_000).min(C_BURST);
        last = t;
        if tokens < cost {
            t += ((cost - tokens) * 1_000_000_000).div_ceil(C_RATE);
            continue;
        }
        tokens -= cost;
        out.push(Arrival {
            at_ns: t,
            kind: Kind::Flow(2),
            len: 1514,
        });
        t += rng.below(2 * CYCLE_NS);
    }
    // Untagged connections: save in even cycles, spend Q + L in odd ones.
    for flow in TAGGED..FLOWS {
        for k in (0..CYCLES).step_by(2) {
            let start = k * CYCLE_NS;
            out.push(Arrival {
                at_ns: start + 1_000 + flow as u64,
                kind: Kind::Flow(flow),
                len: 60,
            });
            for _ in 0..SAVED_FRAMES {
                out.push(Arrival {
                    at_ns: start + CYCLE_NS - 2_000,
                    kind: Kind::Flow(flow),
                    len: 900 + rng.below(615) as usize,
                });
            }
        }
    }
    // Control: two full frames, then one per 12.304 ms of tokens, just after each boundary.
    let (mut tokens, mut last) = (2 * wire_bits(1514), 0u64);
    for k in 0..CYCLES {
        let at = k * CYCLE_NS + 500;
        tokens = (tokens + CONTROL_RATE * (at - last) / 1_000_000_000).min(2 * wire_bits(1514));
        last = at;
        while tokens >= wire_bits(1514) {
            tokens -= wire_bits(1514);
            out.push(Arrival {
                at_ns: at,
                kind: Kind::Control,
                len: 1514,
            });
        }
    }
    // Non-real-time: more than the line can carry, always backlogged.
    let mut t = 0;
    while t < end {
        out.push(Arrival {
            at_ns: t,
            kind: Kind::Nrt,
            len: 1514,
        });
        t += 100_000;
    }
    out.sort_by_key(|a| a.at_ns);
    out
}

fn frame(tag: u32, arrival_ns: u64, len: usize) -> Vec<u8> {
    let mut f = vec![0u8; len];
    f[0..4].copy_from_slice(&tag.to_be_bytes());
    f[4..12].copy_from_slice(&arrival_ns.to_be_bytes());
    f
}

/// One tagged connection's record: backlogged periods and the worst cases seen.
#[derive(Default)]
struct Tagged {
    /// Frames queued in the scheduler (arrived, not yet handed out).
    queued: usize,
    /// Start of the current backlogged period and the bits of its frames completed so far.
    period_start: u64,
    period_done: u64,
    /// Period start of each queued frame, in order.
    frame_periods: std::collections::VecDeque<u64>,
    /// max over departures of t − s − D/r (ns): the smallest latency the observed run allows.
    theta_observed: i128,
    delay_max: u64,
    frames: u64,
}

/// What one run observed for a tagged connection.
struct Observed {
    frames: u64,
    theta_observed: i128,
    delay_max: u64,
}

/// Admission by cycle work: the fourteen connections' work fits the budget `U·C·T`.
#[test]
fn the_connections_fit_the_cycle_work_budget() {
    let work: u64 = (0..FLOWS)
        .map(|i| cyclic_cycle_work_bits(&tspec(i), CYCLE_NS).expect("valid"))
        .sum();
    let budget = cyclic_work_budget_bits(&params()).expect("valid");
    // 30 672 (A) + 13 × 42 304 (B, twelve untagged) + 17 304 (C) = 597 928 ≤ 600 000; another
    // full-frame connection would not fit.
    assert_eq!((work, budget), (597_928, 600_000));
    assert!(work + cyclic_cycle_work_bits(&tspec(1), CYCLE_NS).expect("valid") > budget);
}

#[test]
fn cyclic_scheduler_meets_its_service_curve() {
    let runs: Vec<Vec<Observed>> = (0..8u64)
        .map(|seed| run(0x5eed_cafe_f00d_1234 ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15)))
        .collect();
    for i in 0..TAGGED {
        let theta = server().latency_ns(&tspec(i)).expect("analysable");
        let bound = end_to_end_ns(&tspec(i), theta).expect("finite");
        let worst = runs
            .iter()
            .map(|r| r[i].theta_observed)
            .max()
            .expect("runs");
        let delay = runs.iter().map(|r| r[i].delay_max).max().expect("runs");
        println!(
            "connection {i}: θ = {theta} ns, observed θ {worst} ns ({:.2}), max delay {delay} ns \
             of bound {bound} ns ({:.2})",
            worst as f64 / theta as f64,
            delay as f64 / bound as f64
        );
        let rate = i128::from(tspec(i).rate_bps);
        let l_over_r = i128::from(tspec(i).max_frame_bits) * 1_000_000_000 / rate;
        // C sends one 1514-byte frame per 24.6 ms at most: ≈ 50 frames a run.
        let enough = if i == 2 { 30 } else { 500 };
        assert!(runs.iter().all(|r| r[i].frames > enough));
        // Not vacuous: the runs needed more than a cycle of latency…
        assert!(worst > i128::from(CYCLE_NS));
        if i == 0 {
            // …A more than T + L/r, so a θ without the drain term Δ would have been violated
            // (checked by hand: with θ = T + L/r the service-curve assertion fails), and A's θ
            // is within a factor 2 of what the runs show. Observed (U = 60 %): A needs
            // 12.57 ms of its θ = 16.66 ms (0.75), max delay 0.53 of its bound; B 11.30 of
            // 20.53 ms (0.55), max delay 0.44; C 24.98 of 41.04 ms (0.61), max delay 0.55.
            assert!(
                worst > i128::from(CYCLE_NS) + l_over_r,
                "connection {i}: the adversary never pushed past T + L/r"
            );
            assert!(2 * worst >= i128::from(theta));
        }
        if i == 2 {
            // …C, whose quota (5000 bits) is below its frame (12 304 bits) and so gathers credit
            // over three cycles, more than T + Δ (16.44 ms): a θ without the L_i/r_i term would
            // have been violated.
            let drain = cyclic_drain_ns(&params()).expect("analysable");
            assert!(
                worst > i128::from(CYCLE_NS + drain),
                "connection {i}: the run never needed the L/r term"
            );
        }
    }
    // A wrong θ for the scheduler as it was: Δ from U·C·T (this θ) while the scheduler still
    // capped credit at 2·Q + L (carrying a saved quota across a boundary). Tried by hand: the
    // untagged connections then send up to 49 424 wire bits in one cycle (53 880 with seven saved
    // frames), above the cycle work Q + L = 42 304 the drain Δ is computed from, and the
    // per-cycle assertion in `run` fails.
}

/// One run of 2 s with the arrivals of `seed`: asserts the service curve and the delay bound of
/// the tagged connections at every departure and returns what it saw.
fn run(seed: u64) -> Vec<Observed> {
    let mut rng = Rng(seed);
    let arrivals = arrivals(&mut rng);
    let mut sched = CyclicScheduler::new(
        SchedConfig {
            cycle: Duration::from_nanos(CYCLE_NS),
            ..SchedConfig::new(LINE)
        },
        Instant::ZERO,
    )
    .expect("valid config")
    .with_control_queue(1 << 20);
    let handles: Vec<FlowHandle> = (0..FLOWS)
        .map(|i| {
            let max_packet = if i == 0 { 60 } else { 1514 };
            sched
                .add_flow(FlowSpec {
                    rate_bps: tspec(i).rate_bps,
                    max_burst: 1514 * 8,
                    max_packet,
                    queue_bytes: 1 << 20,
                    service: Service::Guaranteed,
                })
                .expect("within the line rate")
        })
        .collect();
    let theta: Vec<u64> = (0..TAGGED)
        .map(|i| server().latency_ns(&tspec(i)).expect("analysable"))
        .collect();
    let bound: Vec<u64> = (0..TAGGED)
        .map(|i| end_to_end_ns(&tspec(i), theta[i]).expect("finite"))
        .collect();
    let mut tagged: Vec<Tagged> = (0..TAGGED).map(|_| Tagged::default()).collect();
    // Wire bits each connection was handed out per cycle.
    let mut per_cycle: std::collections::HashMap<(usize, u64), u64> = Default::default();

    let end = CYCLES * CYCLE_NS;
    let mut buf = vec![0u8; 2048];
    let mut next = 0;
    let mut now = 0u64;
    let mut steps = 0u64;
    loop {
        steps += 1;
        assert!(steps < 10_000_000, "driver loop does not progress");
        let due = [
            arrivals.get(next).map(|a| a.at_ns),
            sched.poll_timeout().map(Instant::as_nanos),
        ]
        .into_iter()
        .flatten()
        .min();
        let Some(due) = due else { break };
        if due > end {
            break;
        }
        now = now.max(due);
        let at = Instant::from_nanos(now);
        while let Some(a) = arrivals.get(next).filter(|a| a.at_ns <= now) {
            next += 1;
            match a.kind {
                Kind::Flow(i) => {
                    let ok = sched.enqueue_flow(at, handles[i], &frame(i as u32, a.at_ns, a.len));
                    assert!(ok, "queues are sized not to drop");
                    if let Some(t) = tagged.get_mut(i) {
                        if t.queued == 0 {
                            t.period_start = now;
                            t.period_done = 0;
                        }
                        t.queued += 1;
                        t.frame_periods.push_back(t.period_start);
                    }
                }
                Kind::Control => {
                    assert!(sched.enqueue_control(at, &frame(TAG_CONTROL, now, a.len)));
                }
                Kind::Nrt => {
                    sched.enqueue_nrt(at, &frame(TAG_NRT, now, a.len));
                }
            }
        }
        while let Some(len) = sched.poll_transmit(at, &mut buf) {
            let tag = u32::from_be_bytes(buf[0..4].try_into().expect("4 bytes"));
            let arrived = u64::from_be_bytes(buf[4..12].try_into().expect("8 bytes"));
            // The last bit leaves when the pacer's booking ends (it keeps sub-ns remainders, so
            // add 1 ns to stay at or after the true instant).
            let done = sched.busy_until().as_nanos() + 1;
            if (tag as usize) < FLOWS {
                *per_cycle.entry((tag as usize, now / CYCLE_NS)).or_default() += wire_bits(len);
            }
            let Some(t) = tagged.get_mut(tag as usize) else {
                continue;
            };
            let i = tag as usize;
            t.queued -= 1;
            let start = t.frame_periods.pop_front().expect("a queued frame");
            // Frames complete in order, so the one completing belongs to the current period
            // (a new period starts only once every earlier frame was handed out).
            assert_eq!(start, t.period_start);
            // Service curve: the bits of this period already out must cover r·(t − s − θ) up to
            // the instant this frame's last bit leaves.
            let elapsed = i128::from(done) - i128::from(start);
            let rate = i128::from(tspec(i).rate_bps);
            let served_ns = i128::from(t.period_done) * 1_000_000_000 / rate;
            let need = rate * (elapsed - i128::from(theta[i]));
            assert!(
                i128::from(t.period_done) * 1_000_000_000 >= need,
                "connection {i}: {} bits out {} ns into a backlogged period, below β = r(t − {} ns)",
                t.period_done,
                elapsed,
                theta[i]
            );
            t.theta_observed = t.theta_observed.max(elapsed - served_ns);
            t.period_done += wire_bits(len);
            let delay = done - arrived;
            assert!(
                delay <= bound[i],
                "connection {i}: frame delayed {delay} ns, bound {}",
                bound[i]
            );
            t.delay_max = t.delay_max.max(delay);
            t.frames += 1;
        }
    }
    assert!(
        next >= arrivals.len() * 9 / 10,
        "the run covered the arrivals"
    );
    // No connection sent more than its cycle work Q + L between two boundaries.
    for (&(i, cycle), &bits) in &per_cycle {
        let work = cyclic_cycle_work_bits(&tspec(i), CYCLE_NS).expect("valid");
        assert!(
            bits <= work,
            "connection {i} cycle {cycle}: {bits} > Q + L = {work}"
        );
    }
    // The adversary did carry unspent quota to the boundaries: every untagged connection held
    // the most the scheduler allows, one quota plus one frame (the old cap was two quotas plus a
    // frame), and never more.
    for &h in &handles[TAGGED..] {
        let held = sched.connection_stats(h).expect("live").max_credit_bits;
        assert_eq!(held, 30_000 + wire_bits(1514), "max credit");
    }
    tagged
        .into_iter()
        .map(|t| Observed {
            frames: t.frames,
            theta_observed: t.theta_observed,
            delay_max: t.delay_max,
        })
        .collect()
}
