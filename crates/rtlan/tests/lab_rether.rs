//! RETHER in the lab (Venkatramani and Chiueh, RETHER §2, §3; docs/rether-agent.md): five
//! unmodified hosts on an emulated 10 Mbit/s CSMA/CD segment (`kind = "segment"`), each behind
//! its `rtlan rether` agent. A 1.6 Mbit/s stream (about an MPEG-I video, the paper's load) from
//! host a to host d shares the segment with two hosts that flood it.
//!
//! - On plain CSMA/CD the stream waits behind collisions and backoff: frames are late by tens of
//!   milliseconds and some are dropped after 16 collisions.
//! - Reserved through a's agent (its 5-tuple, 2 Mbit/s), every frame arrives and none later
//!   than its deadline: one token rotation (TRT 20 ms) plus the lab's allowance for late
//!   wake-ups (below).
//! - SIGKILL the agent of a host that holds a reservation (host c): the survivors declare it
//!   dead and release its reservation, the token keeps circulating — never without a new pass
//!   for longer than two acknowledgement timers plus the allowance ([`recovery_bound`]) — and
//!   a's stream loses nothing.
//! - SIGKILL a's agent, the first real-time sender, which holds the token most of the time: the
//!   token is regenerated (or a found dead) within the same bound, and a's reservation released.
//!
//! The allowance: on this 2-core machine every token pass crosses two user-space daemons (the
//! sender's agent and the segment), and every frame three (a's agent, the segment, d's agent),
//! each of which may wake late under the floods (3.2 ms measured with three switches;
//! DESIGN.md §7). The agents and the segment run under SCHED_FIFO, as RETHER's driver ran
//! above every user process (§3); the applications do not, and their stalls are outside the
//! measured delay (`rtlan send` stamps after its own wait, `rtlan recv` takes the kernel's
//! receive stamp). While the agents still ran under normal scheduling, one CI run saw frames
//! 62 ms late (p99 51 ms) with the token never away from a for more than 8.4 ms: the agents
//! waited for a CPU. With the agents under SCHED_FIFO, six runs under competing load (two
//! SCHED_FIFO processes busy 8 ms of every 20 on both cores, plus CPU-bound loops) stayed
//! within 21.0–23.4 ms, where the same load gave 46.4 ms before. The deadline is TRT + 15 ms:
//! five wake-ups (the frame's three, the token pass's two) late by 3.2 ms each. A broken token
//! (or plain CSMA/CD, measured in the same test: 400–570 ms and lost frames) misses it, and the
//! simulator checks the tight bound (`crates/core/src/rether/agent_tests.rs`: ≤ 10.8 ms at a
//! 10 ms TRT).

mod common;

use std::time::{Duration, Instant};

use common::rether::*;
use common::*;
use rtlan_lab::tools::{self, Iperf3Opts, Iperf3Server};
use serde_json::json;

const TOPOLOGY: &str = r#"
[[host]]
name = "a"
[[host]]
name = "b"
[[host]]
name = "c"
[[host]]
name = "d"
[[host]]
name = "e"
[[switch]]
name = "seg"
kind = "segment"
rate = "10mbit"
trt = "20ms"
[[link]]
ends = ["a", "seg"]
[[link]]
ends = ["b", "seg"]
[[link]]
ends = ["c", "seg"]
[[link]]
ends = ["d", "seg"]
[[link]]
ends = ["e", "seg"]
"#;

const TRT: Duration = Duration::from_millis(20);
/// What the lab's wake-ups may add (module docs).
const ALLOWANCE: Duration = Duration::from_millis(15);

/// Hosts b and c flood host e with 8 Mbit/s of UDP each for `secs`.
fn floods(lab: &rtlan_lab::Lab, secs: u32) -> Vec<std::thread::JoinHandle<()>> {
    ["b", "c"]
        .iter()
        .map(|from| {
            let ns = lab.netns(from).expect("ns").to_string();
            let to = ip(lab, "e");
            std::thread::spawn(move || {
                let opts = Iperf3Opts {
                    length: Some(1400),
                    ..Iperf3Opts::default()
                };
                // The flood's own outcome does not matter; it only has to load the segment.
                let _ = tools::iperf3_udp(&ns, to, 5201, secs, 8_000_000, &opts);
            })
        })
        .collect()
}

/// Every named agent's counters and status, and the segment's counters: what a failed
/// assertion prints, so a lost frame can be placed (host queue, session queue, the bus).
fn counters(lab: &rtlan_lab::Lab, hosts: &[&str]) -> serde_json::Value {
    let mut all = serde_json::Map::new();
    for h in hosts {
        all.insert(format!("{h}.stats"), agent(lab, h, json!({"op": "stats"})));
        all.insert(
            format!("{h}.status"),
            agent(lab, h, json!({"op": "status"})),
        );
    }
    let seg = lab.segment_socket("seg").expect("segment socket");
    all.insert("seg".into(), request(&seg, json!({"op": "stats"})));
    serde_json::Value::Object(all)
}

#[test]
fn a_reserved_stream_keeps_its_deadline_under_floods_and_survives_a_dead_station() {
    if !root_or_skip("rether_lab") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = up_str(TOPOLOGY, "rth");
    let _server = Iperf3Server::start(lab.netns("e").expect("ns"), 5201).expect("iperf3 -s");
    for h in ["a", "b", "c", "d", "e"] {
        ping_ok(&lab, "e", h);
    }

    // 1. Plain CSMA/CD: the stream is late and loses frames.
    let csma = loaded_run(&lab, "a", "d", 4, |secs| floods(&lab, secs));
    let csma_max = max_delay(&csma);

    // 2. A reservation for a's 5-tuple: the segment switches to RETHER.
    let open = agent(
        &lab,
        "a",
        json!({"op": "open", "rate": "2mbit", "max_frame": 1100, "keep": true,
               "flow": {"protocol": "udp", "src": ip(&lab, "a"), "dst": ip(&lab, "d"),
                        "dst_port": STREAM_PORT}}),
    );
    let session = open["session"].as_u64().expect("session");
    let admitted = agent(&lab, "a", json!({"op": "admit", "session": session}));
    assert_eq!(admitted["state"], "admitted", "{admitted}");
    // Host c holds a reservation too (its own small stream, never sent): released when c dies.
    let c_open = agent(
        &lab,
        "c",
        json!({"op": "open", "rate": "500kbit", "keep": true,
               "flow": {"protocol": "udp", "src": ip(&lab, "c"), "dst": ip(&lab, "e"),
                        "dst_port": 6000}}),
    );
    let c_session = c_open["session"].as_u64().expect("session");
    let c_admitted = agent(&lab, "c", json!({"op": "admit", "session": c_session}));
    assert_eq!(c_admitted["state"], "admitted", "{c_admitted}");
    for h in ["a", "b", "c", "d", "e"] {
        let status = agent(&lab, h, json!({"op": "status"}));
        assert_eq!(status["mode"], "rether", "{h}: {status}");
        agent(&lab, h, json!({"op": "reset_token_gap"}));
    }

    let rether = loaded_run(&lab, "a", "d", 4, |secs| floods(&lab, secs));
    let rether_max = max_delay(&rether);
    let a_stats = agent(&lab, "a", json!({"op": "stats"}));
    eprintln!(
        "stream a→d under two 8 Mbit/s floods: CSMA/CD {} of {} lost, delay p50 {:.1} ms max {:.1} ms; \
         RETHER {} of {} lost, delay p50 {:.1} ms max {:.1} ms; agent a {} station a {}",
        csma["lost"],
        csma["packets"].as_u64().unwrap_or(0) + csma["lost"].as_u64().unwrap_or(0),
        csma["delay_us"]["p50"].as_f64().unwrap_or(0.0) / 1e3,
        csma_max.as_secs_f64() * 1e3,
        rether["lost"],
        rether["packets"].as_u64().unwrap_or(0) + rether["lost"].as_u64().unwrap_or(0),
        rether["delay_us"]["p50"].as_f64().unwrap_or(0.0) / 1e3,
        rether_max.as_secs_f64() * 1e3,
        a_stats["agent"],
        a_stats["station"],
    );
    let deadline = TRT + ALLOWANCE;
    assert!(
        csma_max > deadline || csma["lost"].as_u64() > Some(0),
        "plain CSMA/CD under floods should miss the deadline: {csma}"
    );
    assert_eq!(rether["lost"], 0, "reserved stream lost frames: {rether}");
    // 4 s at 1.6 Mbit/s of whole frames (1,000 B of payload: 1,066 B on the wire) is 750.
    assert!(
        rether["packets"].as_u64() >= Some(745),
        "the whole stream (4 s × 188/s): {rether}"
    );
    assert!(
        rether_max <= deadline,
        "reserved stream late: max {rether_max:?} > {deadline:?}: {rether}"
    );
    assert!(
        a_stats["agent"]["host_rt"].as_u64() >= Some(745),
        "the stream rode the session: {a_stats}"
    );
    for h in ["a", "b", "c", "d", "e"] {
        let s = agent(&lab, h, json!({"op": "stats"}));
        let gap = Duration::from_nanos(s["agent"]["token_gap_max_ns"].as_u64().expect("gap"));
        assert!(gap <= TRT + ALLOWANCE, "{h}: token silent for {gap:?}: {s}");
        assert_eq!(s["station"]["deaths"], 0, "{h}: nobody died: {s}");
    }

    // 3. SIGKILL c's agent while a's stream runs: c is declared dead and its reservation
    //    released; the token never falls silent for more than 2 TRT (+ allowance); a's stream
    //    loses nothing.
    for h in ["a", "b", "d", "e"] {
        agent(&lab, h, json!({"op": "reset_token_gap"}));
    }
    let rx = receiver(&lab, "d");
    let tx = stream(&lab, "a", "d", 3);
    std::thread::sleep(Duration::from_secs(1));
    let c_pid = lab.bump_agent_pid("c").expect("c's agent");
    signal(c_pid, libc::SIGKILL);
    let killed = Instant::now();
    let (released, took) = wait_until(Duration::from_secs(2), || {
        let status = agent(&lab, "a", json!({"op": "status"}));
        let rt_set = status["token"]["rt_set"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let c_dead = status["token"]["stations"]
            .as_array()
            .is_some_and(|s| s.iter().any(|m| m["id"] == 3 && m["dead"] == true));
        c_dead && rt_set.iter().all(|e| e["sender"] != 3)
    });
    assert!(
        released,
        "c's reservation still held {:?} after its agent died: {}",
        killed.elapsed(),
        agent(&lab, "a", json!({"op": "status"}))
    );
    let out = tx.wait_with_output().expect("rtlan send ends");
    assert!(out.status.success());
    let during = report(rx);
    let mut deaths = 0;
    let mut regenerations = 0;
    let mut worst_gap = Duration::ZERO;
    for h in ["a", "b", "d", "e"] {
        let s = agent(&lab, h, json!({"op": "stats"}));
        deaths += s["station"]["deaths"].as_u64().unwrap_or(0);
        regenerations += s["station"]["regenerations"].as_u64().unwrap_or(0);
        worst_gap = worst_gap.max(Duration::from_nanos(
            s["agent"]["token_gap_max_ns"].as_u64().unwrap_or(0),
        ));
    }
    eprintln!(
        "c killed: released within {took:?}, {deaths} death declared, {regenerations} token \
         regenerations, longest token silence {:.1} ms; a's stream {} lost, max delay {:.1} ms",
        worst_gap.as_secs_f64() * 1e3,
        during["lost"],
        max_delay(&during).as_secs_f64() * 1e3
    );
    assert!(deaths >= 1, "someone declared c dead");
    assert!(
        worst_gap <= recovery_bound(),
        "the token made no progress for {worst_gap:?} (> {:?})",
        recovery_bound()
    );
    assert_eq!(
        during["lost"],
        0,
        "a's stream lost frames across c's death: {during}; {}",
        counters(&lab, &["a", "b", "d", "e"])
    );
    let a_status = agent(&lab, "a", json!({"op": "sessions"}));
    assert_eq!(
        a_status[0]["state"], "admitted",
        "a keeps its session: {a_status}"
    );

    // 4. SIGKILL a's agent, the first real-time sender, which holds the token for most of each
    //    cycle (it waits out the TRT): the token is most likely lost with it and regenerated
    //    (or, if a had just passed it, a is found dead by its predecessor). Either way the ring
    //    goes on within the bound and a's reservation is released.
    let survivors = ["b", "d", "e"];
    let counts = |lab: &rtlan_lab::Lab| -> (u64, u64) {
        survivors.iter().fold((0, 0), |(d, r), h| {
            let s = agent(lab, h, json!({"op": "stats"}));
            (
                d + s["station"]["deaths"].as_u64().unwrap_or(0),
                r + s["station"]["regenerations"].as_u64().unwrap_or(0),
            )
        })
    };
    let (deaths0, regen0) = counts(&lab);
    for h in survivors {
        agent(&lab, h, json!({"op": "reset_token_gap"}));
    }
    signal(lab.bump_agent_pid("a").expect("a's agent"), libc::SIGKILL);
    let (released, took) = wait_until(Duration::from_secs(2), || {
        let status = agent(&lab, "b", json!({"op": "status"}));
        let rt_set = status["token"]["rt_set"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        // Released: gone from the RT-set — and with no session left the segment returns to
        // CSMA (§2.2.4), where no token is kept at all.
        rt_set.iter().all(|e| e["sender"] != 1)
    });
    assert!(
        released,
        "a's reservation still held after its agent died: {}",
        agent(&lab, "b", json!({"op": "status"}))
    );
    std::thread::sleep(Duration::from_millis(300));
    let (deaths1, regen1) = counts(&lab);
    let worst_gap = survivors
        .iter()
        .map(|h| {
            let s = agent(&lab, h, json!({"op": "stats"}));
            Duration::from_nanos(s["agent"]["token_gap_max_ns"].as_u64().unwrap_or(0))
        })
        .max()
        .unwrap_or_default();
    eprintln!(
        "a killed: released within {took:?}, {} deaths declared, {} regenerations, longest \
         time without a new token pass {:.1} ms",
        deaths1 - deaths0,
        regen1 - regen0,
        worst_gap.as_secs_f64() * 1e3
    );
    assert!(
        deaths1 + regen1 > deaths0 + regen0,
        "nobody noticed a's death"
    );
    assert!(
        worst_gap <= recovery_bound(),
        "the token made no progress for {worst_gap:?} (> {:?})",
        recovery_bound()
    );
    down_clean(lab);
}

/// The longest a ring may make no progress when a station dies: two acknowledgement timers
/// (each at most a TRT plus the lab's 8 ms slack, `LAB_ACK_SLACK`) before the dead station
/// is skipped; a lost token is regenerated sooner (TRT + slack of silence, then one switch).
/// With the engine's default 2 ms slack this is the issue's "within 2 TRT" plus 4 ms
/// (`crates/core/src/rether/tests.rs` checks the engine on virtual time); the lab adds its
/// wake-up allowance.
fn recovery_bound() -> Duration {
    2 * (TRT + Duration::from_millis(8)) + ALLOWANCE
}
