//! 100,000 RSVP sessions through one router in the simulator, with the refresh cost measured
//! (QSR §2: RSVP's "significant control resources for processing and storage in order to
//! efficiently handle a large number of flows"; RFC 2205 §3.7 soft state). The network is
//! `scenarios/rsvp-sessions.toml`: eight hosts round one rtlan router, 12,500 sessions from each
//! to the next, the Paths spread over 20 s, then five refresh periods of R = 30 s.
//!
//! Not a criterion loop (one run is a minute of CPU): the run is stepped period by period
//! ([`rtlan_sim::Simulation`]) and for each period the benchmark prints the router's RSVP
//! messages (received and sent) per simulated second, the process's CPU time and wall time,
//! and the wall time spent on the router's own events; then the heap the whole simulation
//! holds per session (this binary's counting allocator). Run:
//! `cargo bench -p rtlan-sim --bench rsvp_sessions`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rtlan_core::rsvp::RsvpStats;
use rtlan_sim::{RunOptions, Scenario, Simulation};

/// Counts the bytes currently allocated through it, then hands every call to the system
/// allocator.
struct Counting;

static LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so `System`'s
// guarantees are ours; the counter is only arithmetic on the side.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, which is `System`'s.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            LIVE_BYTES.fetch_add(layout.size(), Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` (through us) with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The process's CPU time (user + system), from `clock_gettime(CLOCK_PROCESS_CPUTIME_ID)`.
fn cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant the kernel knows.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

struct Mark {
    rsvp: RsvpStats,
    events: u64,
    cpu: Duration,
    wall: Instant,
    router: Duration,
    hosts: Duration,
}

fn mark(sim: &Simulation) -> Mark {
    let router = sim.router(0).expect("the scenario has router r1");
    Mark {
        rsvp: router.rsvp_stats().expect("r1 runs RSVP"),
        events: sim.engine_stats().events,
        cpu: cpu_time(),
        wall: Instant::now(),
        router: sim.node_time("r1").unwrap_or_default(),
        hosts: (0..8).filter_map(|i| sim.node_time(&format!("h{i}"))).sum(),
    }
}

fn main() {
    // `cargo bench` passes `--bench`; without it (`cargo test --benches`) the minute-long run
    // is skipped, and so it is under a filter that names another benchmark.
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.iter().any(|a| a == "--bench")
        || args
            .iter()
            .any(|a| !a.starts_with('-') && !"rsvp_sessions".contains(a.as_str()))
    {
        println!(
            "rsvp_sessions: skipped (run it with `cargo bench -p rtlan-sim --bench rsvp_sessions`)"
        );
        return;
    }
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/rsvp-sessions.toml"
    );
    let scenario = Scenario::from_file(path).unwrap_or_else(|e| panic!("{e}"));
    let sessions: u64 = scenario.sessions.iter().map(|s| u64::from(s.count)).sum();
    let spread = scenario
        .sessions
        .iter()
        .map(|s| s.start + s.spread)
        .max()
        .unwrap_or_default();
    let refresh = scenario.sim.rsvp_refresh;
    let duration = scenario.sim.duration;
    let heap_before = LIVE_BYTES.load(Ordering::Relaxed);
    let mut sim = Simulation::new(&scenario, &RunOptions::default()).expect("the scenario builds");
    sim.measure_node_time();
    println!(
        "rsvp_sessions: {sessions} sessions, R = {refresh:?}, Paths over the first {spread:?}"
    );
    let start = mark(&sim);
    // The set-up: every Path and Resv sent once, and the refreshes that start meanwhile.
    sim.run_until(spread, &mut |_, _| {});
    let setup = mark(&sim);
    let heap = LIVE_BYTES
        .load(Ordering::Relaxed)
        .saturating_sub(heap_before);
    let r = &setup.rsvp;
    println!(
        "set-up 0–{:?}: {} path states, {} reservations at r1; CPU {:.2} s, wall {:.2} s, r1's events {:.2} s, the hosts' {:.2} s",
        spread,
        r.paths,
        r.resvs,
        (setup.cpu - start.cpu).as_secs_f64(),
        (setup.wall - start.wall).as_secs_f64(),
        (setup.router - start.router).as_secs_f64(),
        (setup.hosts - start.hosts).as_secs_f64(),
    );
    println!(
        "heap of the whole simulation after set-up: {:.1} MB, {} bytes per session (r1's state, both hosts' engines, the hosts' session tables)",
        heap as f64 / 1e6,
        heap as u64 / sessions.max(1)
    );
    println!(
        "{:<12} {:>10} {:>10} {:>10} {:>12} {:>9} {:>9} {:>8} {:>8} {:>8}",
        "period",
        "Path in",
        "Resv in",
        "sent",
        "msgs/s (r1)",
        "CPU s",
        "wall s",
        "r1 s",
        "hosts s",
        "timeouts"
    );
    let mut from = spread;
    let mut last = setup;
    while from + refresh <= duration {
        let to = from + refresh;
        sim.run_until(to, &mut |_, _| {});
        let now = mark(&sim);
        let (a, b) = (&last.rsvp, &now.rsvp);
        let messages = (b.path_in - a.path_in) + (b.resv_in - a.resv_in) + (b.sent - a.sent);
        println!(
            "{:<12} {:>10} {:>10} {:>10} {:>12.0} {:>9.2} {:>9.2} {:>8.2} {:>8.2} {:>8}",
            format!("{}–{} s", from.as_secs(), to.as_secs()),
            b.path_in - a.path_in,
            b.resv_in - a.resv_in,
            b.sent - a.sent,
            messages as f64 / refresh.as_secs_f64(),
            (now.cpu - last.cpu).as_secs_f64(),
            (now.wall - last.wall).as_secs_f64(),
            (now.router - last.router).as_secs_f64(),
            (now.hosts - last.hosts).as_secs_f64(),
            (b.path_timeouts + b.resv_timeouts) - (a.path_timeouts + a.resv_timeouts),
        );
        assert!(
            now.events > last.events,
            "the simulation advanced through the period"
        );
        from = to;
        last = now;
    }
    let outcome = sim.finish().expect("the run finishes");
    let r = outcome.results.routers[0].stats.rsvp;
    let opened: u64 = outcome.results.sessions.iter().map(|g| g.opened).sum();
    let lost: u64 = outcome.results.sessions.iter().map(|g| g.lost_events).sum();
    println!(
        "end: {opened} of {sessions} sessions reserved, {lost} reservations lost; r1: {} path states, {} reservations, {} path and {} reservation timeouts, {} refused; {} events",
        r.paths,
        r.resvs,
        r.path_timeouts,
        r.resv_timeouts,
        r.admission_refused + r.state_full,
        outcome.results.engine.events
    );
}
