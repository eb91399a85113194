//! QSR paper §6.2, signalling under overload: "severe congestion on the link … can result in a
//! loss of the RSVP reservation state. The fundamental problem here is that the RSVP Path and
//! Resv messages are sent in-band and, therefore, are likely to be lost at times of severe
//! congestion"; after the network control VCs were put in place "the RSVP signaling was
//! reliable and could not be subverted by any amount of load on the trunk FEs or the links".
//!
//! Every router–router link is flooded in both directions with small datagrams at several
//! times its rate, RSVP refreshes every 500 ms (state lives L = (3 + ½) × 1.5 × R = 2.6 s
//! without them), and two reservations are made from a to b: one *before* the flood (is it
//! refreshed?) and one *during* it (can it be set up?). Each case is run with RSVP on the
//! routers' protected control queue (`[rsvp] protected = true`, the default; the paper's
//! network control VC) and in the default queue with the data (`protected = false`, the
//! paper's set-up before its fix). We report the routers' state timeouts, the hosts' lost and
//! recovered reservations, and the reserved stream's packet and frame loss.
//!
//! - **Lab**: a — r3 — r2 — r1 — b with 10 Mbit/s router links; c on r3 and e on r2 flood b,
//!   d on r1 and f on r2 flood a (every router port towards another router overflows); the
//!   routers are restarted with the case's `[rsvp]` keys; the hosts' rtcd speak
//!   RSVP with the same refresh period.
//! - **Simulator**: a ring of routers (100 in the full run) with a flooding host on each,
//!   flooding its neighbours' hosts both ways round, so every router link carries a flood in
//!   each direction; two pairs of reserved streams, each across half the ring
//!   (`[sim] rsvp_protected`).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use rtlan_core::units::parse_rate;
use rtlan_lab::Lab;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::kit::measure::{loadavg, now_utc};
use crate::kit::routed::{
    counters_since, frame_loss_from_arrivals, restart_router, ring, router_counters, router_names,
    router_snapshot, stream_loss, testbed, with_lab, with_rsvp_lines, Attach,
};
use crate::kit::rtcd::{OpenRequest, Session};
use crate::kit::run::Run;
use crate::labkit::{Receiver, Rtcd, Stream};
use crate::Backend;

/// The scenario file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Scenario {
    /// RSVP's refresh period R in routers and hosts.
    refresh: String,
    stream: StreamSpec,
    lab: LabScenario,
    sim: SimScenario,
    quick: Quick,
}

/// The reserved stream.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StreamSpec {
    rate: String,
    size: u16,
    packets_per_frame: u64,
    reserve_rate: String,
    reserve_burst: u32,
    /// The service the receiver reserves: `controlled-load` (the paper's) or `guaranteed`.
    service: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LabScenario {
    router_rate: String,
    host_rate: String,
    flood_rate: String,
    flood_size: u16,
    /// How long the stream runs; the flood starts 1 s into it.
    seconds: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SimScenario {
    /// Routers in the ring.
    routers: usize,
    /// Each pair of reserved streams' first and last router (1-based).
    streams: Vec<[usize; 2]>,
    router_rate: String,
    host_rate: String,
    flood_rate: String,
    flood_size: u16,
    duration: String,
    warmup: String,
    flood_start: String,
    /// When the second reservation is asked for (during the flood).
    late_start: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Quick {
    lab_seconds: u64,
    sim_routers: usize,
    sim_streams: Vec<[usize; 2]>,
    sim_duration: String,
}

/// Runs the experiment on the run's backend; returns the path of its results file.
pub fn run(run: &Run) -> anyhow::Result<PathBuf> {
    let sc: Scenario = run.load()?;
    let mut results = json!({
        "experiment": "qsr-signalling",
        "paper": "QSR §6.2",
        "backend": run.backend.name(),
        "quick": run.quick,
        "date": now_utc(),
        "load_before": loadavg(),
        "refresh": sc.refresh,
        "stream": {"rate": sc.stream.rate, "size": sc.stream.size, "service": sc.stream.service,
            "packets_per_frame": sc.stream.packets_per_frame,
            "reserve_rate": sc.stream.reserve_rate, "reserve_burst": sc.stream.reserve_burst},
        "paper": {"without": "RSVP state lost under severe congestion",
            "with": "signalling reliable under any load"},
    });
    let cases = match run.backend {
        Backend::Lab => lab(run, &sc, &mut results)?,
        Backend::Sim => sim(run, &sc, &mut results)?,
    };
    results["cases"] = Value::Array(cases);
    results["load_after"] = loadavg().into();
    run.finish_per_backend(&results)
}

/// The lab's floods: (from, to, port). Towards b, c (on r3) overloads r3's port to r2 and e
/// (on r2) r2's port to r1; towards a, d (on r1) overloads r1's port to r2 and f (on r2)
/// r2's port to r3 — every router–router direction is offered several times its rate, while
/// no router receives more than it can read (an overloaded input would lose RSVP before any
/// queue could protect it).
const FLOODS: [(&str, &str, u16); 4] = [
    ("c", "b", 5201),
    ("e", "b", 5202),
    ("d", "a", 5203),
    ("f", "a", 5204),
];

fn lab(run: &Run, sc: &Scenario, results: &mut Value) -> anyhow::Result<Vec<Value>> {
    let l = &sc.lab;
    let seconds = if run.quick {
        sc.quick.lab_seconds
    } else {
        l.seconds
    };
    let text = testbed(
        &l.router_rate,
        &l.host_rate,
        &[
            Attach::new("c", "r3", &l.host_rate),
            Attach::new("e", "r2", &l.host_rate),
            Attach::new("f", "r2", &l.host_rate),
            Attach::new("d", "r1", &l.host_rate),
        ],
    );
    results["seconds"] = seconds.into();
    with_lab(&run.exe, "qsr-signalling", "qs", &text, results, |lab| {
        lab_cases(run, sc, lab, seconds)
    })
}

fn lab_cases(run: &Run, sc: &Scenario, lab: &Lab, seconds: u64) -> anyhow::Result<Vec<Value>> {
    let extra = format!(
        "signalling = \"rsvp\"\nrsvp_refresh = \"{}\"\nrsvp_service = \"{}\"\n",
        sc.refresh, sc.stream.service
    );
    let rtcd_a = Rtcd::start(&run.exe, lab, "a", &extra)?;
    let _rtcd_b = Rtcd::start(&run.exe, lab, "b", &extra)?;
    let mut cases = Vec::new();
    for protected in [true, false] {
        let case = lab_case(run, sc, lab, &rtcd_a, protected, seconds)?;
        eprintln!("qsr-signalling lab: {case}");
        cases.push(case);
    }
    Ok(cases)
}

fn lab_case(
    run: &Run,
    sc: &Scenario,
    lab: &Lab,
    rtcd_a: &Rtcd,
    protected: bool,
    seconds: u64,
) -> anyhow::Result<Value> {
    let (st, l) = (&sc.stream, &sc.lab);
    let tag = if protected { "protected" } else { "exposed" };
    let lines = format!("refresh = \"{}\"\nprotected = {protected}\n", sc.refresh);
    let mut routers = Vec::new();
    for r in ["r1", "r2", "r3"] {
        routers.push(restart_router(&run.exe, lab, r, tag, |t| {
            with_rsvp_lines(t, &lines)
        })?);
    }
    for r in ["r1", "r2", "r3"] {
        lab.router_wait_routes(r, Duration::from_secs(10))?;
    }
    let (a, b) = (lab.host_ip("a")?, lab.host_ip("b")?);
    let ip = |host: &str| if host == "a" { a } else { b };
    let pings = std::iter::once(("a", b)).chain(FLOODS.iter().map(|&(f, t, _)| (f, ip(t))));
    for (from, to) in pings {
        let ping = rtlan_lab::tools::ping(lab.netns(from)?, to, 3, Duration::from_millis(100))?;
        anyhow::ensure!(ping.received > 0, "{from} cannot reach {to}");
    }
    let before = router_snapshot(lab, &["r1", "r2", "r3"])?;
    let request = |port: u16| -> anyhow::Result<OpenRequest> {
        Ok(OpenRequest {
            dst_ip: b,
            dst_port: port,
            src_port: 0,
            rate_bps: parse_rate(&st.reserve_rate)?,
            max_burst: st.reserve_burst,
            max_packet: st.size + 42,
        })
    };
    let early = Session::open(rtcd_a.socket(), &request(5004)?, Duration::from_secs(10))?;
    anyhow::ensure!(
        early.opened(),
        "the reservation before the flood was refused: {}",
        early.reply
    );
    let arrivals = lab.state_dir().join(format!("stream-{tag}.arrivals"));
    let arrivals_arg = arrivals.display().to_string();
    let listen = Duration::from_secs(seconds + 3);
    let stream_rx = Receiver::start(
        &run.exe,
        lab,
        "b",
        5004,
        listen,
        &["--arrivals", &arrivals_arg],
    )?;
    let flood_rx = FLOODS
        .iter()
        .map(|&(_, to, port)| Receiver::start(&run.exe, lab, to, port, listen, &[]))
        .collect::<Result<Vec<_>, _>>()?;
    std::thread::sleep(Duration::from_millis(300));
    let stream = Stream {
        to: format!("{b}:5004"),
        rate: st.rate.clone(),
        size: st.size,
        duration: Duration::from_secs(seconds),
        reserve: None,
        shaping: None,
    }
    .start(&run.exe, lab, "a")?;
    std::thread::sleep(Duration::from_secs(1));
    let floods = FLOODS
        .iter()
        .map(|&(host, to, port)| {
            Stream {
                to: format!("{}:{port}", ip(to)),
                rate: l.flood_rate.clone(),
                size: l.flood_size,
                duration: Duration::from_secs(seconds.saturating_sub(1)),
                reserve: None,
                shaping: None,
            }
            .start(&run.exe, lab, host)
        })
        .collect::<Result<Vec<_>, _>>()?;
    // The second reservation, asked for 2 s into the flood; rtcd gives up after 5 s.
    std::thread::sleep(Duration::from_secs(2));
    let late = Session::open(rtcd_a.socket(), &request(5006)?, Duration::from_secs(10))?;
    let late_result = json!({"opened": late.opened(), "open_s": late.open_s,
        "reply": late.reply});
    drop(late);
    let sent = stream.finish_json(Duration::from_secs(seconds + 10))?;
    let mut flood_sent = Vec::new();
    for f in floods {
        flood_sent.push(f.finish_json(Duration::from_secs(10))?);
    }
    let got = stream_rx.report()?;
    let mut flood_got = Vec::new();
    for r in flood_rx {
        flood_got.push(r.report()?);
    }
    let after = router_snapshot(lab, &["r1", "r2", "r3"])?;
    let events = early.close();
    drop(routers);
    let n = sent["sent"].as_u64().context("rtlan send's summary")?;
    let frames = frame_loss_from_arrivals(&arrivals, st.packets_per_frame, n)?;
    let counters: Map<String, Value> = ["r1", "r2", "r3"]
        .iter()
        .zip(after.iter().zip(&before))
        .map(|(r, (a, b))| (r.to_string(), Value::Object(counters_since(a, b))))
        .collect();
    let timeouts: u64 = counters
        .values()
        .map(|c| {
            c["rsvp_path_timeouts"].as_u64().unwrap_or(0)
                + c["rsvp_resv_timeouts"].as_u64().unwrap_or(0)
        })
        .sum();
    let floods: Vec<Value> = flood_sent
        .iter()
        .zip(&flood_got)
        .zip(FLOODS)
        .map(|((s, r), (from, to, _))| {
            json!({"flood": format!("{from}→{to}"), "sent": s["sent"], "offered_bps": s["wire_bps"],
                "received": r["packets"], "delivered_bps": r["wire_bps"]})
        })
        .collect();
    let interrupted = events
        .iter()
        .filter(|e| e.event["event"] == "interrupted")
        .count();
    Ok(json!({
        "protected": protected,
        "stream": stream_loss(n, got["packets"].as_u64().unwrap_or(0), frames),
        "state_timeouts": timeouts,
        "interrupted": interrupted,
        "events": events,
        "late_reservation": late_result,
        "floods": floods,
        "routers": counters,
    }))
}

/// The simulator's flooded ring as a scenario file: a flooding host `f<k>` on every router
/// `k` floods its neighbours' flooding hosts both ways round, so every router link carries one
/// flood in each direction; reserved streams `early<i>` (before the floods) and `late<i>`
/// (asked for during them) from `a<i>` to `b<i>`.
fn sim_scenario(
    sc: &Scenario,
    routers: usize,
    streams: &[[usize; 2]],
    duration: &str,
    protected: bool,
) -> anyhow::Result<String> {
    let (st, s) = (&sc.stream, &sc.sim);
    let names = router_names(routers);
    let router = |k: usize| -> anyhow::Result<&String> {
        names
            .get(k.wrapping_sub(1))
            .with_context(|| format!("router {k} is not in 1 … {routers}"))
    };
    let mut attach = Vec::new();
    for (i, &[from, to]) in streams.iter().enumerate() {
        attach.push(Attach::new(
            &format!("a{}", i + 1),
            router(from)?,
            &s.host_rate,
        ));
        attach.push(Attach::new(
            &format!("b{}", i + 1),
            router(to)?,
            &s.host_rate,
        ));
    }
    for (i, r) in names.iter().enumerate() {
        attach.push(Attach::new(&format!("f{}", i + 1), r, &s.host_rate));
    }
    let mut text = ring(&names, &s.router_rate, &attach);
    text += &format!(
        "[sim]\nduration = \"{duration}\"\nwarmup = \"{}\"\nrsvp_refresh = \"{}\"\n\
         rsvp_protected = {protected}\nrsvp_service = \"{}\"\n",
        s.warmup, sc.refresh, st.service
    );
    let reserve = format!(
        "reserve = {{ rate = \"{}\", burst = {} }}\n",
        st.reserve_rate, st.reserve_burst
    );
    for i in 1..=streams.len() {
        for (name, port, start) in [
            ("early", 5004, "100ms"),
            ("late", 5006, s.late_start.as_str()),
        ] {
            text += &format!(
                "[[traffic]]\nname = \"{name}{i}\"\nsrc = \"a{i}\"\ndst = \"b{i}\"\n\
                 kind = \"constant\"\nrate = \"{}\"\nsize = {}\nport = {port}\nstart = \"{start}\"\n\
                 {reserve}",
                st.rate, st.size
            );
        }
    }
    for k in 1..=routers {
        let next = k % routers + 1;
        let prev = (k + routers - 2) % routers + 1;
        for to in [next, prev] {
            text += &format!(
                "[[traffic]]\nname = \"flood f{k}→f{to}\"\nsrc = \"f{k}\"\ndst = \"f{to}\"\n\
                 kind = \"constant\"\nrate = \"{}\"\nsize = {}\nstart = \"{}\"\n",
                s.flood_rate, s.flood_size, s.flood_start
            );
        }
    }
    Ok(text)
}

fn sim(run: &Run, sc: &Scenario, results: &mut Value) -> anyhow::Result<Vec<Value>> {
    let (routers, streams, duration) = if run.quick {
        let q = &sc.quick;
        (q.sim_routers, &q.sim_streams, q.sim_duration.as_str())
    } else {
        (sc.sim.routers, &sc.sim.streams, sc.sim.duration.as_str())
    };
    anyhow::ensure!(routers >= 3, "a ring of at least three routers");
    results["routers"] = routers.into();
    results["streams"] = json!(streams);
    results["duration"] = duration.into();
    results["flood_start"] = sc.sim.flood_start.clone().into();
    results["late_start"] = sc.sim.late_start.clone().into();
    let mut cases = Vec::new();
    for protected in [true, false] {
        let text = sim_scenario(sc, routers, streams, duration, protected)?;
        let scenario = rtlan_sim::Scenario::from_str(&text, "qsr-signalling")
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let started = std::time::Instant::now();
        let outcome = rtlan_sim::run(&scenario, &rtlan_sim::RunOptions::default(), &mut |_, _| {})
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let wall = started.elapsed().as_secs_f64();
        let r = &outcome.results;
        let mut per_stream = Vec::new();
        let mut totals_by_kind = Map::new();
        for kind in ["early", "late"] {
            let (mut sent, mut received) = (0, 0);
            let mut frames = rtlan_sim::FrameLoss { frames: 0, lost: 0 };
            let mut opened = 0;
            for f in r.flows.iter().filter(|f| f.name.starts_with(kind)) {
                let fl = f
                    .received
                    .frame_loss(sc.stream.packets_per_frame, f.sent_frames);
                sent += f.sent_frames;
                received += f.received_frames;
                frames.frames += fl.frames;
                frames.lost += fl.lost;
                opened += usize::from(f.reservation == "opened");
                let mut v = stream_loss(f.sent_frames, f.received_frames, fl);
                v["name"] = f.name.clone().into();
                v["reservation"] = f.reservation.clone().into();
                v["outages"] = serde_json::to_value(&f.outages)?;
                per_stream.push(v);
            }
            let mut v = stream_loss(sent, received, frames);
            v["opened"] = opened.into();
            v["streams"] = streams.len().into();
            totals_by_kind.insert(kind.to_string(), v);
        }
        let mut totals = Map::new();
        for router in &r.routers {
            for (k, v) in router_counters(&serde_json::to_value(&router.stats)?) {
                let sum =
                    totals.get(&k).and_then(Value::as_u64).unwrap_or(0) + v.as_u64().unwrap_or(0);
                totals.insert(k, sum.into());
            }
        }
        let floods: Vec<&rtlan_sim::FlowResult> = r
            .flows
            .iter()
            .filter(|f| f.name.starts_with("flood"))
            .collect();
        let case = json!({
            "protected": protected,
            "early": totals_by_kind["early"],
            "late": totals_by_kind["late"],
            "streams": per_stream,
            "state_timeouts": totals["rsvp_path_timeouts"].as_u64().unwrap_or(0)
                + totals["rsvp_resv_timeouts"].as_u64().unwrap_or(0),
            "floods": {"flows": floods.len(),
                "offered_bps": floods.iter().map(|f| f.offered_bps).sum::<f64>(),
                "delivered_bps": floods.iter().map(|f| f.delivered_bps).sum::<f64>()},
            "routers_total": totals,
            "events": r.engine.events,
            "wall_s": wall,
        });
        eprintln!("qsr-signalling sim: {case}");
        cases.push(case);
    }
    Ok(cases)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_simulated_ring_floods_every_router_link_both_ways() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../experiments/qsr/signalling/scenario.toml"
        ))
        .expect("the scenario file");
        let sc: Scenario = toml::from_str(&text).expect("it parses");
        let text = sim_scenario(&sc, 5, &[[1, 3]], "4s", false).expect("valid");
        let s = rtlan_sim::Scenario::from_str(&text, "t").expect("reads");
        assert_eq!(s.topology.routers.len(), 5);
        assert_eq!(
            s.traffic.len(),
            2 + 2 * 5,
            "two streams and two floods per router"
        );
        assert!(
            text.contains("src = \"f1\"\ndst = \"f5\""),
            "round the ring"
        );
        assert!(!s.sim.rsvp_protected);
        let on = sim_scenario(&sc, 5, &[[1, 3]], "4s", true).expect("valid");
        assert!(on.contains("rsvp_protected = true"));
        assert!(sim_scenario(&sc, 5, &[[1, 6]], "4s", true).is_err());
    }
}
