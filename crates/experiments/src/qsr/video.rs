//! QSR paper §6.2, "QoS Support": a ~3 Mbit/s video stream whose frames are several packets
//! crosses three routers while two hosts blast the receiver's network and congest the link in
//! the middle; first as default IP, then on a switched path reserved with RSVP. The paper saw
//! "severe packet losses … resulting in poor video quality" without the reservation — "the
//! qualitative degradation of the video is quite significant even when only around 10% of the
//! packets are lost … because each video frame is composed of several packets and the loss of a
//! single packet invalidates the entire frame" — and "losses returning to zero" the moment the
//! pipe was set up. We report both losses: packets, and frames (lost if any packet is).
//!
//! - **Lab** (the paper's Fig. 5 with our names): a (clash) — r3 — r2 — r1 — b (elvis), the
//!   blasting hosts c and d (who, what) on r2, each sending b line rate over its own link, so
//!   r2's port towards r1 is offered twice its rate. The hosts' rtcd speak RSVP
//!   (`signalling = "rsvp"`); the reservation is opened through a's daemon for b's video port
//!   with any source port, and the video itself is an ordinary `rtlan send` paced at its rate:
//!   an unmodified application, as `vic` was.
//! - **Simulator**: the same at scale — a ring of routers (100 in the full run), two videos
//!   each across half of it (50 routers: hosts send with TTL 64, so no path may cross more than
//!   63), and at every congested router two blasting hosts sending line rate to a host a few
//!   routers further on; the hosts signal RSVP.
//!
//! The reservation is the one the hosts' daemons make: the receiver answers every Path with a
//! Guaranteed-Service Resv at the sender's token rate (docs/rtcd.md "RSVP signalling"). The
//! paper requested Controlled Load; our hosts cannot ask for it yet (the routers admit and
//! serve both), so this is the same switched path with the stricter service.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use rtlan_core::units::{parse_duration, parse_rate};
use rtlan_lab::Lab;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::kit::measure::{loadavg, now_utc};
use crate::kit::routed::{
    counters_since, frame_loss_from_arrivals, ring, router_counters, router_names, router_snapshot,
    stream_loss, testbed, with_lab, Attach,
};
use crate::kit::rtcd::{OpenRequest, Session};
use crate::kit::run::Run;
use crate::labkit::{Receiver, Rtcd, Stream};
use crate::Backend;

/// The scenario file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Scenario {
    video: Video,
    lab: LabScenario,
    sim: SimScenario,
    quick: Quick,
}

/// The video stream.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Video {
    /// Rate of whole frames on the wire.
    rate: String,
    /// UDP payload bytes per packet.
    size: u16,
    /// Packets per video frame (consecutive sequence numbers).
    packets_per_frame: u64,
    /// The reservation's token rate (whole frames) and bucket depth (bytes).
    reserve_rate: String,
    reserve_burst: u32,
    /// Receiver's UDP port.
    port: u16,
    /// The service the receiver reserves: `controlled-load` (the paper's) or `guaranteed`.
    service: String,
}

/// The lab's testbed.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LabScenario {
    router_rate: String,
    host_rate: String,
    /// Each blasting host's rate and payload size.
    blast_rate: String,
    blast_size: u16,
    /// How long the video runs in each case.
    seconds: u64,
}

/// The simulator's chain.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SimScenario {
    /// Routers in the ring.
    routers: usize,
    link_rate: String,
    /// Each video's first and last router (1-based; the shorter way round).
    videos: Vec<[usize; 2]>,
    /// The routers whose port towards the next one two blasting hosts congest.
    congested: Vec<usize>,
    /// Blasts go to a host this many routers further on.
    blast_hops: usize,
    /// `constant` or `poisson` (two constant blasts at exactly line rate arrive in lockstep
    /// and leave the video a free slot after every departure: an artefact of exact timing).
    blast_kind: String,
    blast_rate: String,
    blast_size: u16,
    duration: String,
    warmup: String,
    /// When the video starts (the blasts start at 0).
    video_start: String,
}

/// `--quick`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Quick {
    lab_seconds: u64,
    sim_routers: usize,
    sim_videos: Vec<[usize; 2]>,
    sim_congested: Vec<usize>,
    sim_duration: String,
}

/// Runs the experiment on the run's backend; returns the path of its results file.
pub fn run(run: &Run) -> anyhow::Result<PathBuf> {
    let sc: Scenario = run.load()?;
    let mut results = json!({
        "experiment": "qsr-video",
        "paper": "QSR §6.2",
        "backend": run.backend.name(),
        "quick": run.quick,
        "date": now_utc(),
        "load_before": loadavg(),
        "video": {"rate": sc.video.rate, "size": sc.video.size, "service": sc.video.service,
            "packets_per_frame": sc.video.packets_per_frame,
            "reserve_rate": sc.video.reserve_rate, "reserve_burst": sc.video.reserve_burst},
        "paper_loss": {"without": "severe (≈10 % of packets already ruins the video)",
            "with": "zero"},
    });
    let cases = match run.backend {
        Backend::Lab => lab(run, &sc, &mut results)?,
        Backend::Sim => sim(run, &sc, &mut results)?,
    };
    results["cases"] = Value::Array(cases);
    results["load_after"] = loadavg().into();
    run.finish_per_backend(&results)
}

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
            Attach::new("c", "r2", &l.host_rate),
            Attach::new("d", "r2", &l.host_rate),
        ],
    );
    results["seconds"] = seconds.into();
    with_lab(&run.exe, "qsr-video", "qv", &text, results, |lab| {
        lab_cases(run, sc, lab, seconds)
    })
}

fn lab_cases(run: &Run, sc: &Scenario, lab: &Lab, seconds: u64) -> anyhow::Result<Vec<Value>> {
    for r in ["r1", "r2", "r3"] {
        lab.router_wait_routes(r, Duration::from_secs(10))?;
    }
    let b = lab.host_ip("b")?;
    for host in ["a", "c", "d"] {
        let ping = rtlan_lab::tools::ping(lab.netns(host)?, b, 3, Duration::from_millis(100))?;
        anyhow::ensure!(ping.received > 0, "{host} cannot reach b");
    }
    let rsvp = format!(
        "signalling = \"rsvp\"\nrsvp_service = \"{}\"\n",
        sc.video.service
    );
    let rtcd_a = Rtcd::start(&run.exe, lab, "a", &rsvp)?;
    let _rtcd_b = Rtcd::start(&run.exe, lab, "b", &rsvp)?;
    let mut cases = Vec::new();
    for reserved in [false, true] {
        let case = lab_case(run, sc, lab, &rtcd_a, reserved, seconds)?;
        eprintln!("qsr-video lab: {case}");
        cases.push(case);
    }
    Ok(cases)
}

fn lab_case(
    run: &Run,
    sc: &Scenario,
    lab: &Lab,
    rtcd_a: &Rtcd,
    reserved: bool,
    seconds: u64,
) -> anyhow::Result<Value> {
    let (v, l) = (&sc.video, &sc.lab);
    let b = lab.host_ip("b")?;
    let before = router_snapshot(lab, &["r1", "r2", "r3"])?;
    let session = if reserved {
        let req = OpenRequest {
            dst_ip: b,
            dst_port: v.port,
            src_port: 0,
            rate_bps: parse_rate(&v.reserve_rate)?,
            max_burst: v.reserve_burst,
            max_packet: v.size + 42,
        };
        let s = Session::open(rtcd_a.socket(), &req, Duration::from_secs(10))?;
        anyhow::ensure!(s.opened(), "the reservation was refused: {}", s.reply);
        Some(s)
    } else {
        None
    };
    let tag = if reserved { "reserved" } else { "default" };
    let arrivals = lab.state_dir().join(format!("video-{tag}.arrivals"));
    let listen = Duration::from_secs(seconds + 3);
    let arrivals_arg = arrivals.display().to_string();
    let video_rx = Receiver::start(
        &run.exe,
        lab,
        "b",
        v.port,
        listen,
        &["--arrivals", &arrivals_arg],
    )?;
    let blast_rx = [
        Receiver::start(&run.exe, lab, "b", 5201, listen, &[])?,
        Receiver::start(&run.exe, lab, "b", 5202, listen, &[])?,
    ];
    std::thread::sleep(Duration::from_millis(300));
    let blasts = ["c", "d"]
        .iter()
        .zip([5201u16, 5202])
        .map(|(host, port)| {
            Stream {
                to: format!("{b}:{port}"),
                rate: l.blast_rate.clone(),
                size: l.blast_size,
                duration: Duration::from_secs(seconds + 1),
                reserve: None,
                shaping: None,
            }
            .start(&run.exe, lab, host)
        })
        .collect::<Result<Vec<_>, _>>()?;
    std::thread::sleep(Duration::from_millis(500));
    let video = Stream {
        to: format!("{b}:{}", v.port),
        rate: v.rate.clone(),
        size: v.size,
        duration: Duration::from_secs(seconds),
        reserve: None,
        shaping: None,
    }
    .run(&run.exe, lab, "a")?;
    let mut blast_sent = Vec::new();
    for s in blasts {
        blast_sent.push(s.finish_json(Duration::from_secs(10))?);
    }
    let video_report = video_rx.report()?;
    let mut blast_got = Vec::new();
    for r in blast_rx {
        blast_got.push(r.report()?);
    }
    let after = router_snapshot(lab, &["r1", "r2", "r3"])?;
    let events = session.map(Session::close).unwrap_or_default();
    let sent = video["sent"].as_u64().context("rtlan send's summary")?;
    let received = video_report["packets"].as_u64().unwrap_or(0);
    let frames = frame_loss_from_arrivals(&arrivals, v.packets_per_frame, sent)?;
    let blasts: Vec<Value> = blast_sent
        .iter()
        .zip(&blast_got)
        .zip(["c", "d"])
        .map(|((s, r), host)| {
            json!({"host": host, "sent": s["sent"], "offered_bps": s["wire_bps"],
                "received": r["packets"], "delivered_bps": r["wire_bps"]})
        })
        .collect();
    let routers: Map<String, Value> = ["r1", "r2", "r3"]
        .iter()
        .zip(after.iter().zip(&before))
        .map(|(r, (a, b))| (r.to_string(), Value::Object(counters_since(a, b))))
        .collect();
    Ok(json!({
        "reserved": reserved,
        "video": stream_loss(sent, received, frames),
        "video_delivered_bps": video_report["wire_bps"],
        "video_delay_us": video_report["delay_us"],
        "blasts": blasts,
        "routers": routers,
        "events": events,
    }))
}

/// The simulator's ring as a scenario file, with or without the reservations: video `i` from
/// host `a<i>` to host `b<i>`, two blasting hosts `x<k>`, `y<k>` on each congested router `k`
/// sending to `z<k>`, `blast_hops` routers further on.
fn sim_scenario(
    sc: &Scenario,
    shape: &SimShape<'_>,
    duration: &str,
    reserved: bool,
) -> anyhow::Result<String> {
    let (v, s) = (&sc.video, &sc.sim);
    let n = shape.routers;
    let names = router_names(n);
    let router = |k: usize| -> anyhow::Result<&String> {
        names
            .get(k.wrapping_sub(1))
            .with_context(|| format!("router {k} is not in 1 … {n}"))
    };
    let mut attach = Vec::new();
    for (i, &[from, to]) in shape.videos.iter().enumerate() {
        attach.push(Attach::new(
            &format!("a{}", i + 1),
            router(from)?,
            &s.link_rate,
        ));
        attach.push(Attach::new(
            &format!("b{}", i + 1),
            router(to)?,
            &s.link_rate,
        ));
    }
    for &k in shape.congested {
        let sink = (k - 1 + s.blast_hops) % n + 1;
        for h in ["x", "y"] {
            attach.push(Attach::new(&format!("{h}{k}"), router(k)?, &s.link_rate));
        }
        attach.push(Attach::new(&format!("z{k}"), router(sink)?, &s.link_rate));
    }
    let mut text = ring(&names, &s.link_rate, &attach);
    text += &format!(
        "[sim]\nduration = \"{duration}\"\nwarmup = \"{}\"\nrsvp_service = \"{}\"\n",
        s.warmup, v.service
    );
    let reserve = if reserved {
        format!(
            "reserve = {{ rate = \"{}\", burst = {} }}\n",
            v.reserve_rate, v.reserve_burst
        )
    } else {
        String::new()
    };
    for i in 1..=shape.videos.len() {
        text += &format!(
            "[[traffic]]\nname = \"video{i}\"\nsrc = \"a{i}\"\ndst = \"b{i}\"\n\
             kind = \"constant\"\nrate = \"{}\"\nsize = {}\nport = {}\nstart = \"{}\"\n{reserve}",
            v.rate, v.size, v.port, s.video_start
        );
    }
    for &k in shape.congested {
        for h in ["x", "y"] {
            text += &format!(
                "[[traffic]]\nname = \"blast {h}{k}\"\nsrc = \"{h}{k}\"\ndst = \"z{k}\"\n\
                 kind = \"{}\"\nrate = \"{}\"\nsize = {}\n",
                s.blast_kind, s.blast_rate, s.blast_size
            );
        }
    }
    Ok(text)
}

/// The simulated network's size: routers in the ring, the videos' end routers, the
/// congested routers.
struct SimShape<'a> {
    routers: usize,
    videos: &'a [[usize; 2]],
    congested: &'a [usize],
}

fn sim(run: &Run, sc: &Scenario, results: &mut Value) -> anyhow::Result<Vec<Value>> {
    let s = &sc.sim;
    let (shape, duration) = if run.quick {
        let q = &sc.quick;
        let shape = SimShape {
            routers: q.sim_routers,
            videos: &q.sim_videos,
            congested: &q.sim_congested,
        };
        (shape, q.sim_duration.as_str())
    } else {
        let shape = SimShape {
            routers: s.routers,
            videos: &s.videos,
            congested: &s.congested,
        };
        (shape, s.duration.as_str())
    };
    parse_duration(duration).context("sim duration")?;
    results["routers"] = shape.routers.into();
    results["videos"] = json!(shape.videos);
    results["congested"] = json!(shape.congested);
    results["blast_hops"] = s.blast_hops.into();
    results["blast_kind"] = s.blast_kind.clone().into();
    results["duration"] = duration.into();
    let mut cases = Vec::new();
    for reserved in [false, true] {
        let text = sim_scenario(sc, &shape, duration, reserved)?;
        let scenario = rtlan_sim::Scenario::from_str(&text, "qsr-video")
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let started = std::time::Instant::now();
        let outcome = rtlan_sim::run(&scenario, &rtlan_sim::RunOptions::default(), &mut |_, _| {})
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let wall = started.elapsed().as_secs_f64();
        let r = &outcome.results;
        let mut videos = Vec::new();
        let (mut sent, mut received) = (0, 0);
        let mut all_frames = rtlan_sim::FrameLoss { frames: 0, lost: 0 };
        for f in r.flows.iter().filter(|f| f.name.starts_with("video")) {
            let frames = f
                .received
                .frame_loss(sc.video.packets_per_frame, f.sent_frames);
            sent += f.sent_frames;
            received += f.received_frames;
            all_frames.frames += frames.frames;
            all_frames.lost += frames.lost;
            let mut v = stream_loss(f.sent_frames, f.received_frames, frames);
            v["name"] = f.name.clone().into();
            v["reservation"] = f.reservation.clone().into();
            v["delivered_bps"] = f.delivered_bps.into();
            v["delay"] = serde_json::to_value(f.delay)?;
            v["outages"] = serde_json::to_value(&f.outages)?;
            videos.push(v);
        }
        let blasts: Vec<&rtlan_sim::FlowResult> = r
            .flows
            .iter()
            .filter(|f| f.name.starts_with("blast"))
            .collect();
        let mut totals = Map::new();
        for router in &r.routers {
            for (k, v) in router_counters(&serde_json::to_value(&router.stats)?) {
                let sum =
                    totals.get(&k).and_then(Value::as_u64).unwrap_or(0) + v.as_u64().unwrap_or(0);
                totals.insert(k, sum.into());
            }
        }
        let case = json!({
            "reserved": reserved,
            "video": stream_loss(sent, received, all_frames),
            "videos": videos,
            "blasts": {"flows": blasts.len(),
                "offered_bps": blasts.iter().map(|f| f.offered_bps).sum::<f64>(),
                "delivered_bps": blasts.iter().map(|f| f.delivered_bps).sum::<f64>()},
            "routers_total": totals,
            "events": r.engine.events,
            "wall_s": wall,
        });
        eprintln!("qsr-video sim: {case}");
        cases.push(case);
    }
    Ok(cases)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario() -> Scenario {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../experiments/qsr/video/scenario.toml"
        ))
        .expect("the scenario file");
        toml::from_str(&text).expect("it parses")
    }

    #[test]
    fn the_simulated_ring_reads_with_two_blasters_per_congested_router() {
        let sc = scenario();
        let shape = SimShape {
            routers: 8,
            videos: &[[1, 4], [5, 8]],
            congested: &[2, 7],
        };
        let text = sim_scenario(&sc, &shape, "2s", true).expect("valid shape");
        let s = rtlan_sim::Scenario::from_str(&text, "t").expect("reads");
        assert_eq!(s.topology.routers.len(), 8);
        assert_eq!(
            s.traffic.len(),
            2 + 4,
            "two videos, two blasts per congested router"
        );
        assert!(s.traffic[0].reserve.is_some() && s.traffic[1].reserve.is_some());
        // z7 sits blast_hops further on, round the ring.
        assert!(text.contains(&format!(
            "ends = [\"z7\", \"r{}\"]",
            (7 - 1 + sc.sim.blast_hops) % 8 + 1
        )));
        let plain = sim_scenario(&sc, &shape, "2s", false).expect("valid");
        assert!(!plain.contains("reserve ="));
        let bad = SimShape {
            routers: 8,
            videos: &[[1, 9]],
            congested: &[],
        };
        assert!(sim_scenario(&sc, &bad, "2s", false).is_err());
    }
}
