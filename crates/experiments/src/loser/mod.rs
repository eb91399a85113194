//! Löser/Härtig §4.2–4.3 in the lab: hosts c, d, e send 40, 32 and 20 Mbit/s of
//! 1514-byte frames to b, shaped with bucket b = r·Ts + M released at most once per Ts (§3),
//! while a sends a small probe to b every 1 ms; one switch, once the Linux bridge and once rtlan.
//! For Ts ∈ {10 ms, 1 ms, 100 µs} we record the probe delay (max, p99.9, p99, mean), every
//! stream's loss, the senders' CPU load (Table 5) and the network-calculus bounds (Table 4) for
//! parameters measured first in the same lab (Table 1's host term, §4.2's t_mux against a
//! host–host link). Then the buffer probe of Table 2 (`buffer.rs`).
//!
//! The probe and bulk streams are plain UDP (no reservation), so on the rtlan switch they go
//! through the port's single non-real-time FIFO: the switch acts as an off-the-shelf FIFO switch
//! here and its cyclic real-time scheduler is not involved.

mod buffer;
mod netfile;
mod stats;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use rtlan_lab::{Lab, LabOptions, TbfParams, Topology};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::kit::measure::{loadavg, read_arrivals, realtime_ns};
use crate::kit::run::Run;
use crate::labkit::{self, Guarded, Receiver, Stream};
use netfile::{NetParams, Sender, HOSTS};
use stats::DelayStats;

/// The scenario file (`experiments/loser/lab/scenario.toml`).
#[derive(Debug, Deserialize)]
struct Scenario {
    /// Line rate of every link (tc spelling).
    link_rate: String,
    /// Effective rate for 1514-byte frames in the network file.
    effective_rate: String,
    /// Switch kinds, in order (`linux-bridge`, `rtlan`).
    kinds: Vec<String>,
    /// Shaping intervals Ts of the bulk senders (tc spelling).
    shaping_intervals: Vec<String>,
    /// The bulk senders to b.
    senders: Vec<Sender>,
    /// UDP payload of the bulk streams (1472: 1514-byte frames).
    bulk_size: u16,
    /// UDP payload and rate of the probe stream a → b (plain: its own shaper's wait would count
    /// as network delay).
    probe_size: u16,
    probe_rate: String,
    /// The probe's bucket in the network file: b = r·this + M (the plain pacer's 10 ms bucket).
    probe_bucket_interval: String,
    /// Rate of the 1514-byte frames for the t_mux measurement.
    mux_rate: String,
    /// Seconds per Ts run, and with --quick.
    run_s: f64,
    quick_run_s: f64,
    /// Seconds per calibration (host term, t_mux), and with --quick.
    calib_s: f64,
    quick_calib_s: f64,
    /// rtlan's `nrt_queue_bytes`; `None`: the same as the bridge port's tbf limit.
    rtlan_nrt_queue_bytes: Option<u64>,
    /// Pass `--shaping token --shaping-interval Ts` to the plain senders (false: the plain pacer only).
    shaped: bool,
    /// The buffer probe (Table 2); absent: skipped.
    buffer_probe: Option<buffer::BufferProbe>,
    /// Central admission (Löser/Härtig §3.2): `rtlan bwm` on a with the measured parameters, host
    /// daemons on `admission = "central"`, the bulk senders reserve (`--reserve`) and the probe
    /// is booked with `rtlan reserve`; the manager's bounds are recorded beside ours.
    #[serde(default)]
    central: bool,
}

impl Scenario {
    fn run_len(&self, quick: bool) -> f64 {
        if quick {
            self.quick_run_s
        } else {
            self.run_s
        }
    }

    fn calib_len(&self, quick: bool) -> f64 {
        if quick {
            self.quick_calib_s
        } else {
            self.calib_s
        }
    }

    /// The probe stream a → `to` (plain paced UDP).
    fn probe_send(&self, to: String) -> Send<'_> {
        Send::plain("a", to, &self.probe_rate, self.probe_size)
    }

    /// The t_mux calibration stream a → `to`: full frames at `mux_rate` (plain paced UDP).
    fn mux_send(&self, to: String) -> Send<'_> {
        Send::plain("a", to, &self.mux_rate, self.bulk_size)
    }

    /// The bridge port's queue: the lab's tbf limit for the link rate (docs/lab.md).
    fn bridge_buffer(&self) -> anyhow::Result<u64> {
        Ok(TbfParams::for_rate(rtlan_core::units::parse_rate(&self.link_rate)?).limit_bytes)
    }

    fn buffer_of(&self, kind: &str) -> anyhow::Result<u64> {
        let bridge = self.bridge_buffer()?;
        Ok(if kind == "rtlan" {
            self.rtlan_nrt_queue_bytes.unwrap_or(bridge)
        } else {
            bridge
        })
    }
}

/// Runs the experiment; returns the path of results.json.
pub fn run(run: &Run) -> anyhow::Result<PathBuf> {
    let sc: Scenario = run.load()?;
    let _lock = rtlan_lab::serial_lock()?;
    let load_before = loadavg();
    let started = std::time::Instant::now();
    eprintln!("loser: direct host–host link (t_mux reference)");
    let direct = direct_link(run, &sc)?;
    let mut kinds = Vec::new();
    for kind in &sc.kinds {
        kinds.push(one_kind(run, &sc, kind, &direct)?);
    }
    let results = json!({
        "experiment": "loser", "quick": run.quick, "loadavg_before": load_before,
        "loadavg_after": loadavg(), "elapsed_s": started.elapsed().as_secs_f64(),
        "date": realtime_ns() / 1_000_000_000,
        "link_rate": sc.link_rate, "effective_rate": sc.effective_rate,
        "bulk_size": sc.bulk_size, "probe_size": sc.probe_size, "probe_rate": sc.probe_rate,
        "probe_bucket_interval": sc.probe_bucket_interval, "shaped": sc.shaped, "senders": sc.senders,
        "run_s": sc.run_len(run.quick), "calib_s": sc.calib_len(run.quick),
        "direct": direct, "kinds": kinds, "buffer_probe": sc.buffer_probe,
        "paper": paper(),
    });
    run.finish(&results)
}

/// The paper's Tables 2, 4 and 5, for the plot and the page.
fn paper() -> Value {
    json!({
        "ts_us": [10000, 1000, 100],
        "buffer_bound_kbyte": [111.8, 15.7, 6.1],
        "t_max_us": [9357, 1380, 582], "t_est_us": [9731, 1345, 506],
        "t_obs_us": [8759, 1300, 438],
        "cpu_percent": {"c": [4.1, 11.0, 21.2], "d": [2.9, 9.0, 17.2], "e": [2.3, 7.2, 11.9]},
        "table1_host_us": 80, "t_mux_us": 45,
        "table2_burst_kbyte": {"3com": 20.5, "level-one": 127.4},
    })
}

/// Hosts a..e on switch s1 of `kind` (`None`: a and b joined directly).
fn topology(sc: &Scenario, kind: Option<&str>) -> anyhow::Result<String> {
    let mut t = String::new();
    let hosts: &[(&str, &str)] = if kind.is_some() { &HOSTS } else { &HOSTS[..2] };
    for (name, ip) in hosts {
        t += &format!("[[host]]\nname = \"{name}\"\nip = \"{ip}/16\"\n\n");
    }
    match kind {
        Some(kind) => {
            t += &format!("[[switch]]\nname = \"s1\"\nkind = \"{kind}\"\n");
            if kind == "rtlan" {
                t += &format!("nrt_queue_bytes = {}\n", sc.buffer_of(kind)?);
            }
            for (name, _) in hosts {
                t += &format!(
                    "\n[[link]]\nends = [\"{name}\", \"s1\"]\nrate = \"{}\"\n",
                    sc.link_rate
                );
            }
        }
        None => {
            t += &format!(
                "[[link]]\nends = [\"a\", \"b\"]\nrate = \"{}\"\n",
                sc.link_rate
            );
        }
    }
    Ok(t)
}

fn up(run: &Run, sc: &Scenario, name: &str, kind: Option<&str>) -> anyhow::Result<Lab> {
    let text = topology(sc, kind)?;
    std::fs::write(run.out.join(format!("topology-{name}.toml")), &text)?;
    let topology = Topology::from_str(&text, name)?;
    Ok(Lab::up(&topology, name, &LabOptions::new(&run.exe))?)
}

/// One `rtlan send` to be started on `host`.
pub(super) struct Send<'a> {
    /// Sending lab host.
    pub(super) host: &'a str,
    /// Receiver `IP:PORT`.
    pub(super) to: String,
    /// Rate of whole frames.
    pub(super) rate: &'a str,
    /// UDP payload bytes.
    pub(super) size: u16,
    /// `--shaping token --shaping-interval` this interval (None: the plain pacer).
    pub(super) tick: Option<&'a str>,
    /// Reserve through the host daemon at this socket (`--reserve`; central admission).
    pub(super) socket: Option<&'a std::path::Path>,
}

impl<'a> Send<'a> {
    /// Plain paced UDP (no shaping interval, no reservation).
    pub(super) fn plain(host: &'a str, to: String, rate: &'a str, size: u16) -> Send<'a> {
        Send {
            host,
            to,
            rate,
            size,
            tick: None,
            socket: None,
        }
    }
}

/// Starts `s` for `secs` seconds under a guard (`rtlan send --json`; `--shaping token --shaping-interval` if
/// it has a shaping interval).
pub(super) fn start_send(run: &Run, lab: &Lab, s: &Send<'_>, secs: f64) -> anyhow::Result<Guarded> {
    let stream = Stream {
        to: s.to.clone(),
        rate: s.rate.to_string(),
        size: s.size,
        duration: Duration::from_millis((secs * 1e3).round() as u64),
        reserve: s.socket.map(std::path::Path::to_path_buf),
        shaping: s.tick.map(|_| "token".to_string()),
    };
    let tick: Vec<String> = s
        .tick
        .map(|t| vec!["--shaping-interval".to_string(), t.to_string()])
        .unwrap_or_default();
    Ok(stream.start_with(&run.exe, lab, s.host, &tick)?)
}

/// Sender summary JSON of a finished `rtlan send`.
pub(super) fn send_report(g: Guarded, secs: f64) -> anyhow::Result<Value> {
    Ok(g.finish_json(Duration::from_secs_f64(secs + 10.0))?)
}

/// Probe stream a → b (payload `size` at `rate`) for `secs` while `load` runs; delay statistics
/// of the probes and the run's loss.
fn probe_run(
    run: &Run,
    lab: &Lab,
    probe: &Send<'_>,
    load: &[Send<'_>],
    secs: f64,
) -> anyhow::Result<Value> {
    let arrivals = lab.state_dir().join("probe-arrivals.txt");
    let _ = std::fs::remove_file(&arrivals);
    let arrivals_arg = arrivals.display().to_string();
    let receiver = Receiver::start(
        &run.exe,
        lab,
        "b",
        5000,
        Duration::from_secs_f64(secs + 1.5),
        &["--arrivals", &arrivals_arg],
    )?;
    std::thread::sleep(Duration::from_millis(300));
    let loads = load
        .iter()
        .map(|s| start_send(run, lab, s, secs + 0.5))
        .collect::<anyhow::Result<Vec<_>>>()?;
    std::thread::sleep(Duration::from_millis(200));
    let sent = send_report(start_send(run, lab, probe, secs)?, secs)?;
    for l in loads {
        drop(l.finish(Duration::from_secs(5))?);
    }
    let recv = receiver.report()?;
    let stats = stats::delay_stats(&read_arrivals(&arrivals)?);
    Ok(
        json!({"delay": stats, "sent": sent["sent"], "received": recv["packets"],
        "lost": loss(&sent, &recv)}),
    )
}

/// Datagrams sent but not received.
pub(super) fn loss(sent: &Value, recv: &Value) -> i64 {
    sent["sent"].as_i64().unwrap_or(0) - recv["packets"].as_i64().unwrap_or(0)
}

/// The t_mux reference: 1514-byte frames and small probes over a host–host link.
fn direct_link(run: &Run, sc: &Scenario) -> anyhow::Result<Value> {
    let lab = up(run, sc, "loserd", None)?;
    let secs = sc.calib_len(run.quick);
    let to = format!("{}:5000", HOSTS[1].1);
    let big = sc.mux_send(to.clone());
    let bulk = probe_run(run, &lab, &big, &[], secs)?;
    let small = sc.probe_send(to);
    let probe = probe_run(run, &lab, &small, &[], secs)?;
    Ok(json!({"bulk": bulk, "probe": probe}))
}

/// Field `f` of a `DelayStats` JSON object inside `v["delay"]`, µs.
fn delay_field(v: &Value, f: &str) -> f64 {
    v["delay"][f].as_f64().unwrap_or(0.0)
}

fn one_kind(run: &Run, sc: &Scenario, kind: &str, direct: &Value) -> anyhow::Result<Value> {
    let tag = if kind == "rtlan" { "r" } else { "b" };
    let lab = up(run, sc, &format!("loser{tag}"), Some(kind))?;
    let b_ip = HOSTS[1].1;
    let secs = sc.calib_len(run.quick);
    // Parallel load among c, d, e that never goes to b (no queueing at b's port).
    let names: Vec<&str> = sc.senders.iter().map(|s| s.name.as_str()).collect();
    let side: Vec<Send<'_>> = sc
        .senders
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let peer = names[(i + 1) % names.len()];
            let ip = HOSTS.iter().find(|h| h.0 == peer).map_or("", |h| h.1);
            Send::plain(&s.name, format!("{ip}:5999"), &s.rate, sc.bulk_size)
        })
        .collect();
    eprintln!("loser: {kind}: host term (small probes, no queueing at b)");
    let small = sc.probe_send(format!("{b_ip}:5000"));
    let host_term = probe_run(run, &lab, &small, &side, secs)?;
    eprintln!("loser: {kind}: t_mux (1514-byte frames, no queueing at b)");
    let big = sc.mux_send(format!("{b_ip}:5000"));
    let mux = probe_run(run, &lab, &big, &side, secs)?;
    // Parameters like Table 1 / §4.2. t_mux: the switch's added delay for a 1514-byte frame,
    // from the medians (switch − direct link): maxima and 99.9th percentiles of both runs are
    // dominated by scheduling noise of the shared VM, which the host term already carries.
    // Host term, two readings: the maximum (the paper's method) and the 99.9th percentile.
    let mux_ns = ((delay_field(&mux, "p50_us") - delay_field(&direct["bulk"], "p50_us")).max(0.0)
        * 1e3)
        .ceil() as u64;
    let host_ns = |f: &str| (delay_field(&host_term, f) * 1e3).ceil() as u64;
    let measured = [
        ("max", (host_ns("max_us"), mux_ns)),
        ("p999", (host_ns("p999_us"), mux_ns)),
    ];
    let diff = |f: &str| delay_field(&mux, f) - delay_field(&direct["bulk"], f);
    let buffer_bytes = sc.buffer_of(kind)?;
    let central = if sc.central {
        eprintln!("loser: {kind}: bandwidth manager on a, host daemons on a, c, d, e");
        let (host_ns, mux_ns) = measured[0].1;
        Some(Central::start(
            run,
            sc,
            &lab,
            host_ns,
            mux_ns,
            buffer_bytes,
        )?)
    } else {
        None
    };
    let mut runs = Vec::new();
    for ts in &sc.shaping_intervals {
        eprintln!("loser: {kind}: Ts = {ts}, {} s", sc.run_len(run.quick));
        let mut r = ts_run(run, sc, &lab, ts, central.as_ref())?;
        let mut bounds = serde_json::Map::new();
        for (label, (host_ns, mux_ns)) in measured {
            let text = netfile::network_file(&NetParams {
                link_rate: &sc.link_rate,
                effective_rate: &sc.effective_rate,
                t_mux_ns: mux_ns,
                host_delay_ns: host_ns,
                buffer_bytes,
                ts,
                senders: &sc.senders,
                max_frame: u32::from(sc.bulk_size) + 42,
                probe_rate: &sc.probe_rate,
                probe_frame: u32::from(sc.probe_size) + 42,
                probe_ts: &sc.probe_bucket_interval,
            });
            let file = run.out.join(format!("net-{kind}-{ts}-{label}.toml"));
            std::fs::write(&file, &text).with_context(|| format!("{}", file.display()))?;
            bounds.insert(
                label.to_string(),
                serde_json::to_value(netfile::bounds(&text)?)?,
            );
        }
        r["ts"] = json!(ts);
        r["ts_us"] = json!(rtlan_core::units::parse_duration(ts)?.as_micros() as u64);
        r["bounds"] = Value::Object(bounds);
        runs.push(r);
    }
    drop(central);
    let buffer_probe = match &sc.buffer_probe {
        Some(bp) if sc.shaped => {
            eprintln!("loser: {kind}: buffer probe (Table 2)");
            buffer::probe(run, bp, &lab, sc.bulk_size, kind)?
        }
        _ => Value::Null,
    };
    drop(lab);
    Ok(json!({
        "kind": kind, "buffer_probe": buffer_probe, "buffer_bytes": buffer_bytes, "host_term": host_term, "mux": mux,
        "mux_minus_direct_us": {"p50": diff("p50_us"), "p999": diff("p999_us"),
            "max": diff("max_us")},
        "params": {
            "max": {"host_delay_us": measured[0].1 .0 as f64 / 1e3,
                    "t_mux_us": measured[0].1 .1 as f64 / 1e3},
            "p999": {"host_delay_us": measured[1].1 .0 as f64 / 1e3,
                     "t_mux_us": measured[1].1 .1 as f64 / 1e3},
        },
        "runs": runs,
    }))
}

/// Central admission in the lab: the bandwidth manager on a (network file with the measured
/// parameters, `--host-delay` = the measured host term) and a host daemon on a and every sender.
struct Central {
    _manager: Guarded,
    daemons: Vec<(String, labkit::Rtcd)>,
}

impl Central {
    fn start(
        run: &Run,
        sc: &Scenario,
        lab: &Lab,
        host_ns: u64,
        mux_ns: u64,
        buffer_bytes: u64,
    ) -> anyhow::Result<Central> {
        let first_ts = sc.shaping_intervals.first().map_or("10ms", String::as_str);
        let text = netfile::network_file(&NetParams {
            link_rate: &sc.link_rate,
            effective_rate: &sc.effective_rate,
            t_mux_ns: mux_ns,
            host_delay_ns: host_ns,
            buffer_bytes,
            ts: first_ts,
            senders: &sc.senders,
            max_frame: u32::from(sc.bulk_size) + 42,
            probe_rate: &sc.probe_rate,
            probe_frame: u32::from(sc.probe_size) + 42,
            probe_ts: &sc.probe_bucket_interval,
        });
        let file = lab.state_dir().join("bwm-network.toml");
        std::fs::write(&file, text)?;
        let state = lab.state_dir().join("bwm-state.json");
        let listen = format!("{}:7470", HOSTS[0].1);
        let args: Vec<String> = vec![
            run.exe.display().to_string(),
            "bwm".into(),
            "--network".into(),
            file.display().to_string(),
            "--listen".into(),
            listen.clone(),
            "--state".into(),
            state.display().to_string(),
            "--host-delay".into(),
            format!("{host_ns}ns"),
        ];
        let manager = labkit::spawn(lab, "a", &args, "rtlan bwm on a".into())?;
        std::thread::sleep(Duration::from_millis(500));
        let extra =
            format!("admission = \"central\"\nmanager = \"{listen}\"\nrealtime_cap_percent = 100");
        let mut daemons = Vec::new();
        for host in std::iter::once("a").chain(sc.senders.iter().map(|s| s.name.as_str())) {
            daemons.push((
                host.to_string(),
                labkit::Rtcd::start(&run.exe, lab, host, &extra)?,
            ));
        }
        Ok(Central {
            _manager: manager,
            daemons,
        })
    }

    fn socket(&self, host: &str) -> Option<&std::path::Path> {
        self.daemons
            .iter()
            .find(|(h, _)| h == host)
            .map(|(_, d)| d.socket())
    }

    /// Books the probe a → b (the network file's T-SPEC: b = r·Ts + M) for `secs`; the guard's
    /// output is `rtlan reserve --json`.
    fn book_probe(
        &self,
        run: &Run,
        sc: &Scenario,
        lab: &Lab,
        secs: f64,
    ) -> anyhow::Result<Guarded> {
        let rate = rtlan_core::units::parse_rate(&sc.probe_rate)?;
        let ts = rtlan_core::units::parse_duration(&sc.probe_bucket_interval)?;
        let frame = u64::from(sc.probe_size) + 42;
        let bucket = (u128::from(rate) * ts.as_nanos()).div_ceil(8_000_000_000);
        let burst = u64::try_from(bucket)? + frame;
        let socket = self.socket("a").context("no daemon on a")?;
        let args: Vec<String> = vec![
            run.exe.display().to_string(),
            "reserve".into(),
            "--to".into(),
            format!("{}:5000", HOSTS[1].1),
            "--rate".into(),
            sc.probe_rate.clone(),
            "--burst".into(),
            burst.to_string(),
            "--max-packet".into(),
            frame.to_string(),
            "--duration".into(),
            format!("{}ms", (secs * 1e3).round()),
            "--socket".into(),
            socket.display().to_string(),
            "--json".into(),
        ];
        Ok(labkit::spawn(lab, "a", &args, "rtlan reserve on a".into())?)
    }
}

/// One Ts run: c, d, e shaped to b, probes a → b, CPU load of every sender; under central
/// admission every stream is booked at the manager first.
fn ts_run(
    run: &Run,
    sc: &Scenario,
    lab: &Lab,
    ts: &str,
    central: Option<&Central>,
) -> anyhow::Result<Value> {
    let secs = sc.run_len(run.quick);
    let b_ip = HOSTS[1].1;
    let arrivals = lab.state_dir().join("arrivals.txt");
    let _ = std::fs::remove_file(&arrivals);
    let arrivals_arg = arrivals.display().to_string();
    let rdur = Duration::from_secs_f64(secs + 1.5);
    let probe_rx = Receiver::start(
        &run.exe,
        lab,
        "b",
        5000,
        rdur,
        &["--arrivals", &arrivals_arg],
    )?;
    let mut rx = Vec::new();
    for (i, _) in sc.senders.iter().enumerate() {
        rx.push(Receiver::start(
            &run.exe,
            lab,
            "b",
            5001 + u16::try_from(i)?,
            rdur,
            &[],
        )?);
    }
    std::thread::sleep(Duration::from_millis(300));
    let probe_booking = match central {
        Some(c) => {
            let g = c.book_probe(run, sc, lab, secs + 1.0)?;
            std::thread::sleep(Duration::from_millis(300));
            Some(g)
        }
        None => None,
    };
    let tick = sc.shaped.then_some(ts);
    let mut senders = Vec::new();
    for (i, s) in sc.senders.iter().enumerate() {
        let send = Send {
            host: &s.name,
            to: format!("{b_ip}:{}", 5001 + i),
            rate: &s.rate,
            size: sc.bulk_size,
            tick,
            socket: central.and_then(|c| c.socket(&s.name)),
        };
        senders.push(start_send(run, lab, &send, secs)?);
    }
    let probe = sc.probe_send(format!("{b_ip}:5000"));
    let probe_tx = start_send(run, lab, &probe, secs)?;
    // CPU load over the steady part of the run (after start-up, before the end).
    std::thread::sleep(Duration::from_millis(500));
    let first: Vec<_> = senders
        .iter()
        .map(|g| g.id().and_then(stats::cpu_sample))
        .collect();
    std::thread::sleep(Duration::from_secs_f64((secs - 0.9).max(0.1)));
    let last: Vec<_> = senders
        .iter()
        .map(|g| g.id().and_then(stats::cpu_sample))
        .collect();
    let mut streams = serde_json::Map::new();
    for (i, ((g, r), s)) in senders.into_iter().zip(rx).zip(&sc.senders).enumerate() {
        let sent = send_report(g, secs)?;
        let recv = r.report()?;
        let cpu = match (first[i], last[i]) {
            (Some(a), Some(b)) => stats::cpu_percent(a, b),
            _ => None,
        };
        streams.insert(
            s.name.clone(),
            json!({"rate": s.rate, "sent": sent["sent"], "received": recv["packets"],
                "lost": loss(&sent, &recv), "wire_bps_sent": sent["wire_bps"],
                "wire_bps_received": recv["wire_bps"], "cpu_percent": cpu,
                "manager_bound_us": sent["reservation"]["delay_bound_us"]}),
        );
    }
    let sent = send_report(probe_tx, secs)?;
    let recv = probe_rx.report()?;
    let delay: Option<DelayStats> = stats::delay_stats(&read_arrivals(&arrivals)?);
    streams.insert(
        "a".to_string(),
        json!({"rate": sc.probe_rate, "sent": sent["sent"], "received": recv["packets"],
            "lost": loss(&sent, &recv)}),
    );
    let probe_reservation = match probe_booking {
        Some(g) => g.finish_json(Duration::from_secs(5))?,
        None => Value::Null,
    };
    // The manager's bound at b's port once every stream is booked: that of the last admitted
    // stream (one FIFO port and one host delay: every flow there has the same bound).
    let manager_t_max = streams
        .values()
        .filter_map(|v| v["manager_bound_us"].as_u64())
        .max();
    Ok(
        json!({"probe_delay": delay, "streams": streams, "loadavg": loadavg(),
        "manager": {"t_max_us": manager_t_max, "probe_reservation": probe_reservation}}),
    )
}
