//! Routers in the simulator (docs/qsr.md §2.3, docs/sim.md "Routers"): the real QSR router core
//! (default IP forwarding, QSR paper §4.1) with the address plan's static routes, hosts that
//! send off-subnet traffic to their gateway, a link fault that static routes do not route
//! around, determinism, and a switched segment behind a router.

mod common;

use std::time::Duration;

use rtlan_sim::results::RouterResult;
use rtlan_sim::{run, FlowResult, Results, RunOptions, SimError};

const MBIT: f64 = 1e6;

/// 100 Mbit/s on every link, as the scenarios below write it.
const RATE_BPS: f64 = 100e6;

/// `[sim] link_delay` default: each link's propagation delay.
const LINK_DELAY_US: f64 = 1.0;

/// Bits one frame of a UDP datagram with `payload` bytes costs on a line: Ethernet + IPv4 + UDP
/// headers (42 bytes), padded to 60, + FCS (4) + preamble/SFD (8) + inter-frame gap (12).
fn wire_bits(payload: usize) -> f64 {
    (((payload + 42).max(60) + 24) * 8) as f64
}

fn flow<'r>(results: &'r Results, name: &str) -> &'r FlowResult {
    results
        .flows
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no flow {name}"))
}

fn router<'r>(results: &'r Results, name: &str) -> &'r RouterResult {
    results
        .routers
        .iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no router {name}"))
}

fn simulate(text: &str) -> Results {
    common::simulate(&common::parse(text), &RunOptions::default()).results
}

/// a — r1 — r2 — b.
const CHAIN: &str = r#"
[[host]]
name = "a"
[[host]]
name = "b"
[[router]]
name = "r1"
[[router]]
name = "r2"
[[link]]
ends = ["a", "r1"]
rate = "100mbit"
[[link]]
ends = ["r1", "r2"]
rate = "100mbit"
[[link]]
ends = ["r2", "b"]
rate = "100mbit"
"#;

#[test]
fn two_routers_deliver_a_cbr_flow_completely_at_the_store_and_forward_delay() {
    let text = format!(
        "{CHAIN}
[sim]
duration = \"1s\"
warmup = \"100ms\"

[[traffic]]
name = \"a→b\"
src = \"a\"
dst = \"b\"
kind = \"constant\"
rate = \"20mbit\"
size = 1472
"
    );
    let results = simulate(&text);
    assert_eq!(results.engine.contract_wakeups, 0);
    let f = flow(&results, "a→b");
    // Complete delivery over the whole run, the first datagrams included: they wait on ARP
    // (a for its gateway r1, r1 for r2, r2 for b) in the neighbour queues — a host holds 100
    // datagrams per address, a router 16 per neighbour — and one 20 Mbit/s datagram comes
    // every 615 µs, far longer than an ARP exchange on these links, so nothing overflows.
    assert!(f.sent_frames > 1500, "{}", f.sent_frames);
    assert_eq!(f.loss_frames, Some(0), "{f:?}");
    assert_eq!(f.received_frames, f.sent_frames);
    for r in ["r1", "r2"] {
        let st = &router(&results, r).stats;
        assert!(
            st.held >= 1,
            "{r} held nothing while it resolved its next hop"
        );
        assert_eq!(st.held, st.released, "{r}");
        assert_eq!(st.forwarded, f.sent_frames, "{r}");
    }
    // The window [100 ms, 1 s) starts long after the ARP exchanges (well under 1 ms), so its
    // delay samples are the steady state: the first datagrams' ARP waits are counted in the
    // delivery above and kept out of the delay figures by the warm-up.
    let window_s = 0.9;
    let frame_bits = wire_bits(1472);
    assert!(
        (f.delivered_bps - 20.0 * MBIT).abs() <= frame_bits / window_s,
        "delivered {} bit/s",
        f.delivered_bps
    );
    // Prediction: store and forward at a's NIC and at both routers, so each of the three lines
    // carries the whole frame before the next one starts it: 3 × (serialisation + propagation).
    // At 20 of 100 Mbit/s nothing queues. Tolerance 3 ns: the engine keeps time in whole
    // nanoseconds and rounds each line's serialisation time once (123.04 µs here is exact, but
    // other sizes are not); a router that added any queueing or processing delay — a cycle
    // boundary of its scheduler, one frame behind another — fails by microseconds.
    let predicted_us = 3.0 * (frame_bits / RATE_BPS * 1e6 + LINK_DELAY_US);
    let d = f.delay.expect("delay samples in the window");
    assert!(d.samples > 1400, "{}", d.samples);
    for (what, us) in [("min", d.min_us), ("max", d.max_us)] {
        assert!(
            (us - predicted_us).abs() <= 0.003,
            "{what} delay {us} µs, predicted {predicted_us} µs"
        );
    }
}

/// a on r1, b on r2, c on r3; r1, r2, r3 in a triangle.
const TRIANGLE: &str = r#"
[[host]]
name = "a"
[[host]]
name = "b"
[[host]]
name = "c"
[[router]]
name = "r1"
[[router]]
name = "r2"
[[router]]
name = "r3"
[[link]]
ends = ["a", "r1"]
rate = "100mbit"
[[link]]
ends = ["b", "r2"]
rate = "100mbit"
[[link]]
ends = ["c", "r3"]
rate = "100mbit"
[[link]]
ends = ["r1", "r2"]
rate = "100mbit"
[[link]]
ends = ["r2", "r3"]
rate = "100mbit"
[[link]]
ends = ["r1", "r3"]
rate = "100mbit"

[sim]
duration = "2s"
warmup = "100ms"

[[traffic]]
name = "a→b"
src = "a"
dst = "b"
kind = "constant"
rate = "10mbit"
size = 1000

# Half an interval after a→b, so the two never meet in a's NIC queue.
[[traffic]]
name = "a→c"
src = "a"
dst = "c"
kind = "constant"
rate = "10mbit"
size = 1000
start = "400us"
"#;

#[test]
fn static_routes_do_not_move_when_a_router_link_goes_down() {
    let text = format!(
        "{TRIANGLE}
[[fault]]
at = \"1s\"
kind = \"link_down\"
ends = [\"r1\", \"r2\"]
"
    );
    let results = simulate(&text);
    assert_eq!(results.engine.contract_wakeups, 0);
    // One datagram every 852.8 µs from t = 0: those sent before the fault at 1 s.
    let interval_s = wire_bits(1000) / 10e6;
    let before = (1.0 / interval_s).ceil() as u64;
    let ab = flow(&results, "a→b");
    let ac = flow(&results, "a→c");
    // a→b's static route at r1 is the direct link to r2. It goes down for good; r1 still
    // sends b's datagrams to it (no routing protocol moves the route to r1 → r3 → r2, which
    // OSPF would), so everything after the fault is lost. At most one datagram is on the
    // r1–r2 line at the instant of the fault (each takes 87 µs of 853).
    assert!(
        ab.received_frames <= before && ab.received_frames + 1 >= before,
        "a→b received {} of the {before} sent before the fault",
        ab.received_frames
    );
    assert!(ab.loss_frames.unwrap_or(0) + 1 >= ab.sent_frames - before);
    // Every datagram lost was routed by r1 to the dead port, as the static route says, and
    // dropped there (the engine delivers what was already on the line).
    let r1 = &router(&results, "r1").stats;
    assert_eq!(
        Some(r1.drop_link_down),
        ab.loss_frames,
        "r1 did not drop a→b's datagrams at the dead port: {r1:?}"
    );
    // Nothing took the detour through r3: r3 forwarded a→c's datagrams and nothing else.
    let r3 = &router(&results, "r3").stats;
    assert_eq!(r3.forwarded, ac.received_frames);
    // a→c does not use the link: delivered completely, at its undisturbed delay throughout.
    assert_eq!(ac.loss_frames, Some(0), "{ac:?}");
    let d = ac.delay.expect("a→c delay");
    let predicted_us = 3.0 * (wire_bits(1000) / RATE_BPS * 1e6 + LINK_DELAY_US);
    assert!(
        (d.min_us - predicted_us).abs() <= 0.003 && (d.max_us - predicted_us).abs() <= 0.003,
        "a→c delay {d:?}, predicted {predicted_us} µs"
    );
}

#[test]
fn the_same_seed_gives_identical_results_and_pcaps_with_routers() {
    let text = format!(
        "{TRIANGLE}
[[traffic]]
name = \"b→c poisson\"
src = \"b\"
dst = \"c\"
kind = \"poisson\"
rate = \"30mbit\"
size = 500

[[fault]]
at = \"1500ms\"
kind = \"link_down\"
ends = [\"r2\", \"r3\"]
down_for = \"100ms\"
"
    );
    let mut scenario = common::parse(&text);
    scenario.sim.duration = Duration::from_millis(1800);
    let dirs = [common::temp_dir("routers-1"), common::temp_dir("routers-2")];
    let runs: Vec<_> = dirs
        .iter()
        .map(|d| {
            let options = RunOptions {
                seed: None,
                pcap_dir: Some(d.clone()),
            };
            common::simulate(&scenario, &options)
        })
        .collect();
    assert_eq!(runs[0].results.to_json(), runs[1].results.to_json());
    assert_eq!(runs[0].pcaps.len(), 6);
    for (p, q) in runs[0].pcaps.iter().zip(&runs[1].pcaps) {
        assert!(p.frames > 0, "{} is empty", p.path.display());
        let a = std::fs::read(&p.path).expect("first pcap");
        let b = std::fs::read(&q.path).expect("second pcap");
        assert!(
            a == b,
            "{} and {} differ",
            p.path.display(),
            q.path.display()
        );
    }
    // The routers are in the envelope, in topology order.
    let names: Vec<&str> = runs[0]
        .results
        .routers
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(names, ["r1", "r2", "r3"]);
    assert!(runs[0].results.to_json().contains("\"routers\""));
    // The seed is used: another one draws other Poisson gaps.
    let other = common::simulate(
        &scenario,
        &RunOptions {
            seed: Some(2),
            pcap_dir: None,
        },
    );
    assert_ne!(
        flow(&runs[0].results, "b→c poisson").sent_frames,
        flow(&other.results, "b→c poisson").sent_frames
    );
}

#[test]
fn hosts_on_a_switched_segment_reach_a_host_behind_the_router_and_back() {
    let text = r#"
[[host]]
name = "a"
[[host]]
name = "b"
[[host]]
name = "c"
[[switch]]
name = "s1"
kind = "rtlan"
[[router]]
name = "r1"
[[link]]
ends = ["a", "s1"]
rate = "100mbit"
[[link]]
ends = ["b", "s1"]
rate = "100mbit"
[[link]]
ends = ["s1", "r1"]
rate = "100mbit"
[[link]]
ends = ["r1", "c"]
rate = "100mbit"

[sim]
duration = "1s"
warmup = "100ms"

[[traffic]]
name = "a→c"
src = "a"
dst = "c"
kind = "constant"
rate = "20mbit"
size = 1000

[[traffic]]
name = "b→c"
src = "b"
dst = "c"
kind = "constant"
rate = "30mbit"
size = 1472

[[traffic]]
name = "c→a"
src = "c"
dst = "a"
kind = "constant"
rate = "5mbit"
size = 200
"#;
    let results = simulate(text);
    assert_eq!(results.engine.contract_wakeups, 0);
    for (name, rate) in [("a→c", 20.0), ("b→c", 30.0), ("c→a", 5.0)] {
        let f = flow(&results, name);
        assert!(f.sent_frames > 100, "{name}: {f:?}");
        assert_eq!(f.loss_frames, Some(0), "{name}: {f:?}");
        // Within 1 % of the offered rate in the window (one frame is far less).
        assert!(
            (f.delivered_bps - rate * MBIT).abs() < rate * MBIT / 100.0,
            "{name}: delivered {}",
            f.delivered_bps
        );
    }
    let r1 = &router(&results, "r1").stats;
    let through: u64 = results.flows.iter().map(|f| f.received_frames).sum();
    assert_eq!(r1.forwarded, through);
    // The switch carried the routed traffic as ordinary unicast between hosts and r1.
    assert!(results.switches[0].stats.forwarded >= through);
}

#[test]
fn a_restarted_router_relearns_its_neighbours_and_loses_only_what_came_while_it_was_down() {
    let text = format!(
        "{CHAIN}
[sim]
duration = \"1s\"

[[traffic]]
name = \"a→b\"
src = \"a\"
dst = \"b\"
kind = \"constant\"
rate = \"10mbit\"
size = 1000

[[fault]]
at = \"500ms\"
kind = \"restart\"
router = \"r2\"
down_for = \"50ms\"
"
    );
    let results = simulate(&text);
    let f = flow(&results, "a→b");
    // 50 ms down at one datagram per 852.8 µs: 58 or 59 arrive at r2 while it is down.
    let interval_s = wire_bits(1000) / 10e6;
    let down = 0.050 / interval_s;
    let lost = f.loss_frames.expect("loss");
    assert!(
        lost as f64 >= down.floor() && lost as f64 <= down.ceil(),
        "lost {lost}, {down:.1} datagrams came while r2 was down"
    );
    assert_eq!(results.engine.fault_drops, lost);
    // Its counters start again at the restart (a new process): it forwarded what came after
    // 550 ms, and resolved b again first, holding the datagrams that waited for it.
    let r2 = &router(&results, "r2").stats;
    assert!(r2.held >= 1 && r2.held == r2.released, "{r2:?}");
    let after = (1.0 - 0.550) / interval_s;
    assert!(
        (r2.forwarded as f64 - after).abs() <= 1.0,
        "r2 forwarded {} since its restart, {after:.1} datagrams were sent",
        r2.forwarded
    );
}

/// Runs `text` and returns the simulator's refusal.
fn refusal(text: &str) -> String {
    let scenario = common::parse(text);
    match run(&scenario, &RunOptions::default(), &mut |_, _| {}) {
        Ok(_) => panic!("the simulator ran a scenario it should refuse"),
        Err(e @ SimError::Unsupported(_)) => e.to_string(),
        Err(e) => panic!("unexpected error: {e}"),
    }
}

#[test]
fn linux_routers_and_ospf_are_refused_by_name() {
    let sim = "[sim]\nduration = \"100ms\"\n";
    let linux = CHAIN.replace(
        "name = \"r2\"\n",
        "name = \"r2\"\nkind = \"linux-router\"\n",
    );
    let e = refusal(&format!("{linux}{sim}"));
    assert!(
        e.contains("router `r2`") && e.contains("linux-router"),
        "{e}"
    );
    // Every router runs OSPF or none does (the topology model's rule).
    let ospf = CHAIN
        .replace("name = \"r1\"\n", "name = \"r1\"\nospf = \"bird\"\n")
        .replace("name = \"r2\"\n", "name = \"r2\"\nospf = \"bird\"\n");
    let e = refusal(&format!("{ospf}{sim}"));
    assert!(e.contains("router `r1`") && e.contains("ospf"), "{e}");
    // A restart names a router with `router`, not `switch`.
    let wrong =
        format!("{CHAIN}{sim}\n[[fault]]\nat = \"10ms\"\nkind = \"restart\"\nswitch = \"r1\"\n");
    let e = rtlan_sim::Scenario::from_str(&wrong, "t.toml")
        .expect_err("a router named as a switch")
        .to_string();
    assert!(e.contains("no switch `r1`") && e.contains("router"), "{e}");
}

#[test]
fn the_routed_example_scenario_runs() {
    let scenario = common::load("routed.toml");
    // The plan its comment writes out.
    let topo = &scenario.topology;
    let ip = |h: &str| {
        topo.host(h)
            .map(|h| (h.ip.to_string(), h.gateway.map(|g| g.to_string())))
    };
    let gw = |g: &str| Some(g.to_string());
    assert_eq!(ip("a"), Some(("198.18.0.101".into(), gw("198.18.0.1"))));
    assert_eq!(ip("d"), Some(("198.18.2.102".into(), gw("198.18.2.1"))));
    let r2: Vec<String> = topo.routers[1]
        .ports
        .iter()
        .map(|p| p.ip.to_string())
        .collect();
    assert_eq!(r2, ["198.18.1.2", "198.18.2.1"]);
    let results = common::simulate(&scenario, &RunOptions::default()).results;
    assert_eq!(results.engine.contract_wakeups, 0);
    assert!(!results.routers.is_empty());
    for f in &results.flows {
        assert_eq!(f.loss_frames, Some(0), "{}: {f:?}", f.name);
        assert!(f.delivered_bps > 0.0, "{}", f.name);
    }
    // The reservation inside s1's segment is granted: the hosts' gateway does not capture the
    // proxy IP (outside the host's /24), which the daemon's on-link route keeps on s1.
    assert_eq!(flow(&results, "a→b reserved 10M").reservation, "opened");
    assert!(results.table().contains("router r1:"));
}

#[test]
fn every_shipped_scenario_reads() {
    let dir = common::scenario_path("");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("scenarios/ of the repository") {
        // Listing a directory of the repository: entries are readable.
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "toml") {
            rtlan_sim::Scenario::from_file(&path).unwrap_or_else(|e| panic!("{e}"));
            seen += 1;
        }
    }
    assert!(seen >= 7, "only {seen} scenarios");
}

/// a and c on r1, b on r2, r1–r2 one 100 Mbit/s link: c floods b at 150 Mbit/s of 1472-byte
/// datagrams while a sends b a 10 Mbit/s stream — reserved with RSVP across both routers, or
/// not. QSR §6's "video under blast", in the simulator.
fn blast(reserved: bool) -> Results {
    let reserve = if reserved {
        "reserve = { rate = \"10mbit\" }\n"
    } else {
        ""
    };
    simulate(&format!(
        r#"
[[host]]
name = "a"
[[host]]
name = "c"
[[host]]
name = "b"
[[switch]]
name = "s1"
[[router]]
name = "r1"
[[router]]
name = "r2"
[[link]]
ends = ["a", "s1"]
rate = "100mbit"
[[link]]
ends = ["c", "s1"]
rate = "1gbit"
[[link]]
ends = ["s1", "r1"]
rate = "1gbit"
[[link]]
ends = ["r1", "r2"]
rate = "100mbit"
[[link]]
ends = ["r2", "b"]
rate = "100mbit"
[sim]
duration = "2s"
warmup = "500ms"
[[traffic]]
name = "video"
src = "a"
dst = "b"
kind = "constant"
rate = "10mbit"
size = 1000
start = "100ms"
{reserve}
[[traffic]]
name = "blast"
src = "c"
dst = "b"
kind = "constant"
rate = "150mbit"
size = 1472
"#
    ))
}

#[test]
fn a_reservation_across_routers_keeps_its_stream_whole_under_a_blast() {
    let plain = blast(false);
    let video = flow(&plain, "video");
    let lost = video.loss_frames.expect("counted");
    // Unreserved, the stream shares r1's default queue with a 150 Mbit/s blast into a
    // 100 Mbit/s link: it loses about a third of its datagrams.
    assert!(
        lost > 100,
        "the blast should hurt an unreserved stream: {video:?}"
    );

    let reserved = blast(true);
    let video = flow(&reserved, "video");
    assert_eq!(video.reservation, "opened", "{video:?}");
    assert_eq!(
        video.loss_frames,
        Some(0),
        "{video:?}\nr1 {:?}\nr2 {:?}",
        router(&reserved, "r1").stats,
        router(&reserved, "r2").stats
    );
    assert!(
        (video.delivered_bps - 10.0 * MBIT).abs() < 0.2 * MBIT,
        "{video:?}"
    );
    // The blast still got the rest of the link and lost the excess at r1.
    let blast = flow(&reserved, "blast");
    assert!(blast.delivered_bps > 70.0 * MBIT, "{blast:?}");
    let r1 = router(&reserved, "r1");
    assert!(
        r1.stats.reserved_in > 0,
        "r1 classified the stream: {:?}",
        r1.stats
    );
    let r2 = router(&reserved, "r2");
    assert!(
        r2.stats.labelled_switched > 0,
        "r2 switched it by label: {:?}",
        r2.stats
    );
    assert_eq!(r1.stats.demoted_excess, 0);
}

/// QSR §6.2, signalling under overload: a 2 Mbit/s stream reserved with RSVP (0.5 s
/// refreshes, so state lives L = 2.6 s without them) crosses a 10 Mbit/s r1–r2 link that c
/// floods at 100 Mbit/s of small datagrams (214-byte frames: a byte-bounded queue full of them
/// has no room left for a Path either) from 2 s to the end. With RSVP on the routers'
/// protected control queue the refreshes always get through and the reservation holds; with
/// RSVP in the default queue — the paper's set-up before its fix — most refreshes are lost in
/// r1's full queue, r2's path state times out, and the stream loses its reservation.
fn overload(protected: bool) -> Results {
    simulate(&format!(
        r#"
[[host]]
name = "a"
[[host]]
name = "c"
[[host]]
name = "b"
[[switch]]
name = "s1"
[[router]]
name = "r1"
[[router]]
name = "r2"
[[link]]
ends = ["a", "s1"]
rate = "100mbit"
[[link]]
ends = ["c", "s1"]
rate = "1gbit"
[[link]]
ends = ["s1", "r1"]
rate = "1gbit"
[[link]]
ends = ["r1", "r2"]
rate = "10mbit"
[[link]]
ends = ["r2", "b"]
rate = "100mbit"
[sim]
duration = "12s"
warmup = "1s"
rsvp_refresh = "500ms"
rsvp_protected = {protected}
[[traffic]]
name = "video"
src = "a"
dst = "b"
kind = "constant"
rate = "2mbit"
size = 1000
start = "100ms"
reserve = {{ rate = "2mbit" }}
[[traffic]]
name = "flood"
src = "c"
dst = "b"
kind = "constant"
rate = "100mbit"
size = 172
start = "2s"
"#
    ))
}

#[test]
fn the_protected_control_channel_keeps_reservations_under_a_flood_and_without_it_they_are_lost() {
    let protected = overload(true);
    let video = flow(&protected, "video");
    let r2 = router(&protected, "r2");
    assert_eq!(video.reservation, "opened", "{video:?}");
    assert_eq!(r2.stats.rsvp.path_timeouts, 0, "{:?}", r2.stats.rsvp);
    assert_eq!(video.loss_frames, Some(0), "{video:?}");
    assert!(video.outages.is_empty(), "{:?}", video.outages);

    let exposed = overload(false);
    let video = flow(&exposed, "video");
    let r2 = router(&exposed, "r2");
    let r1 = router(&exposed, "r1");
    eprintln!(
        "unprotected: r2 path timeouts {}, r1 resv timeouts {}, video lost {:?} of {}, outages {}",
        r2.stats.rsvp.path_timeouts,
        r1.stats.rsvp.resv_timeouts,
        video.loss_frames,
        video.sent_frames,
        video.outages.len()
    );
    assert!(
        r2.stats.rsvp.path_timeouts > 0,
        "refreshes lost in the data queue time the state out: {:?}",
        r2.stats.rsvp
    );
    assert!(
        video.loss_frames.unwrap_or(0) > 0,
        "and the stream loses what its reservation protected: {video:?}"
    );
}
