//! `rtlan demo`: the main job — rtlan carrying real traffic between unmodified Linux hosts.
//!
//! Builds the embedded default topology (three hosts on one rtlan switch, 100 Mbit/s links — the
//! same file as `topologies/default.toml`), then walks through what the switch does (EtheReal
//! §3.3/§3.4): an unknown destination is probed with ARP from 0.0.0.0 while its first frame is
//! held, ARP and ping work between every pair, UDP and TCP run at line rate, and the learning
//! table points every host at its port. Every step checks its result; the demo fails (exit 1) if a
//! step does not do what it should. The lab is always removed afterwards.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use rtlan_lab::tools::{self, Iperf3Opts, Iperf3Server};
use rtlan_lab::{Lab, LabOptions, Topology};
use serde_json::{json, Value};

/// The demo topology, embedded so `rtlan demo` needs no files.
const DEFAULT_TOPOLOGY: &str = include_str!("../../../../topologies/default.toml");

/// Line rate of the demo links, bits per second.
const LINE_RATE: f64 = 100e6;

/// Arguments of `rtlan demo`.
#[derive(Debug, Args)]
#[command(after_help = "\
The demo needs root (it creates network namespaces rtl-demo<pid>-*) and iperf3 and socat
(scripts/install-deps installs them). It removes everything it created, also on Ctrl-C.
To explore by hand instead: rtlan lab up topologies/default.toml --name mylab")]
pub(crate) struct DemoArgs {
    /// Print the summary as JSON (progress still goes to stderr).
    #[arg(long)]
    json: bool,
    /// Seconds per throughput measurement.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=60))]
    seconds: u32,
}

/// One step of the demo and whether it did what it should.
struct Step {
    name: String,
    detail: String,
    ok: bool,
    data: Value,
}

pub(crate) fn run(args: DemoArgs) -> anyhow::Result<ExitCode> {
    rtlan_lab::install_signal_cleanup()?;
    let topology = Topology::from_str(DEFAULT_TOPOLOGY, "default topology")?;
    let name = format!("demo{}", std::process::id() % 100_000);
    let exe = std::env::current_exe().context("locating the rtlan executable")?;

    let progress = ProgressBar::new(7);
    progress.set_style(
        ProgressStyle::with_template("{spinner} [{pos}/{len}] {msg}")
            .expect("the template is a valid literal"),
    );
    progress.enable_steady_tick(Duration::from_millis(120));
    // Measurements on a 2-core machine must not overlap with other labs' (tests, benchmarks).
    progress.set_message("waiting for other lab measurements to finish");
    let _serial = rtlan_lab::serial_lock()?;
    progress.set_message("building lab: 3 hosts, 1 rtlan switch, 100 Mbit/s links");
    let started = Instant::now();
    let lab = Lab::up(&topology, &name, &LabOptions::new(exe))?;
    progress.inc(1);

    let result = steps(&lab, &args, &progress);
    progress.finish_and_clear();
    let steps = result?;

    let fdb = switch_table(&lab)?;
    let stats = rtlan_linux::ctl::request(&socket(&lab)?, "stats")?;
    let lab_info = super::lab::describe(&lab)?;
    let report = lab.down()?;
    let ok = steps.iter().all(|s| s.ok);

    if args.json {
        let doc = json!({
            "lab": lab_info,
            "ok": ok,
            "seconds": started.elapsed().as_secs_f64(),
            "steps": steps.iter().map(|s| json!({
                "name": s.name, "ok": s.ok, "detail": s.detail, "data": s.data,
            })).collect::<Vec<_>>(),
            "fdb": fdb,
            "switch_stats": stats,
            "removed": report,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print_summary(&lab_info, &steps, &fdb, &stats);
        println!(
            "\nlab `{name}` removed ({} namespaces). {}",
            report.namespaces.len(),
            if ok {
                "All steps did what they should."
            } else {
                "SOME STEPS FAILED (marked ✗ above)."
            }
        );
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn socket(lab: &Lab) -> anyhow::Result<std::path::PathBuf> {
    lab.switch_socket("s1")
        .context("the demo switch s1 is an rtlan switch")
}

fn switch_stats(lab: &Lab) -> anyhow::Result<Value> {
    Ok(rtlan_linux::ctl::request(&socket(lab)?, "stats")?)
}

fn counter(stats: &Value, name: &str) -> u64 {
    stats["switch"][name].as_u64().unwrap_or(0)
}

fn steps(lab: &Lab, args: &DemoArgs, progress: &ProgressBar) -> anyhow::Result<Vec<Step>> {
    let ns = |n: &str| lab.netns(n).map(str::to_string);
    let ip = |n: &str| lab.host_ip(n);
    let mut steps = Vec::new();

    // 1. An unknown destination: a already knows c's MAC (a static neighbour entry), so its first
    //    frame reaches s1 before c has ever sent anything.
    progress.set_message("unknown destination: ARP probe from 0.0.0.0, frame held and released");
    let c_mac = super::lab::fmt_mac(lab.mac("c", "eth0")?);
    let c_ip = ip("c")?.to_string();
    let neigh = lab
        .exec(
            "a",
            &[
                "ip",
                "neigh",
                "replace",
                &c_ip,
                "lladdr",
                &c_mac,
                "dev",
                "eth0",
                "nud",
                "permanent",
            ],
        )?
        .status()?;
    anyhow::ensure!(neigh.success(), "could not add a static neighbour on a");
    let before = switch_stats(lab)?;
    let intact = tools::socat_udp_transfer(&ns("c")?, &ns("a")?, ip("c")?, 6000, 8 << 10)?;
    let after = switch_stats(lab)?;
    let probes = counter(&after, "arp_probes_sent") - counter(&before, "arp_probes_sent");
    let released = counter(&after, "released") - counter(&before, "released");
    steps.push(Step {
        name: "unknown destination a→c".into(),
        detail: format!(
            "{probes} ARP probe(s) `who-has {c_ip} tell 0.0.0.0`, {released} held frame(s) \
             released, 8 KiB UDP {}",
            if intact { "intact" } else { "NOT intact" }
        ),
        ok: intact && probes >= 1 && released >= 1,
        data: json!({"probes": probes, "released": released, "intact": intact}),
    });
    progress.inc(1);

    // 2. ARP + ping between every pair.
    progress.set_message("ping between every pair of hosts");
    let mut replies = 0;
    let mut sent = 0;
    let mut rtts = Vec::new();
    for (from, to) in [("a", "b"), ("b", "c"), ("c", "a")] {
        let r = tools::ping(&ns(from)?, ip(to)?, 3, Duration::from_millis(200))?;
        sent += r.transmitted;
        replies += r.received;
        if let Some(rtt) = r.rtt {
            rtts.push(rtt.avg_ms);
        }
    }
    let avg_rtt = rtts.iter().sum::<f64>() / rtts.len().max(1) as f64;
    steps.push(Step {
        name: "ping a↔b↔c".into(),
        detail: format!("{replies}/{sent} replies, mean RTT {:.3} ms", avg_rtt),
        ok: replies == sent,
        data: json!({"sent": sent, "received": replies, "rtt_avg_ms": avg_rtt}),
    });
    progress.inc(1);

    // 3. TCP integrity and UDP at a fixed rate.
    progress.set_message("socat: 1 MiB over TCP b→a, checked byte for byte");
    let tcp_ok = tools::socat_tcp_transfer(&ns("a")?, &ns("b")?, ip("a")?, 6001, 1 << 20)?;
    steps.push(Step {
        name: "TCP transfer b→a (socat)".into(),
        detail: format!("1 MiB {}", if tcp_ok { "intact" } else { "CORRUPTED" }),
        ok: tcp_ok,
        data: json!({"bytes": 1 << 20, "intact": tcp_ok}),
    });
    progress.inc(1);

    progress.set_message(format!(
        "iperf3 UDP b→c at 50 Mbit/s for {} s",
        args.seconds
    ));
    let server_c = Iperf3Server::start(&ns("c")?, 5201)?;
    let udp = tools::iperf3_udp(
        &ns("b")?,
        ip("c")?,
        server_c.port(),
        args.seconds,
        50_000_000,
        &Iperf3Opts::default(),
    )?;
    steps.push(Step {
        name: "UDP b→c 50 Mbit/s (iperf3)".into(),
        detail: format!(
            "received {:.1} Mbit/s, loss {:.2}%, jitter {:.3} ms",
            udp.receiver_bps / 1e6,
            udp.loss_percent,
            udp.jitter_ms
        ),
        ok: udp.loss_percent < 1.0 && udp.receiver_bps > 45e6,
        data: serde_json::to_value(&udp)?,
    });
    progress.inc(1);

    // 4. TCP at line rate.
    progress.set_message(format!("iperf3 TCP a→c for {} s", args.seconds));
    let tcp = tools::iperf3_tcp(
        &ns("a")?,
        ip("c")?,
        server_c.port(),
        args.seconds,
        &Iperf3Opts::default(),
    )?;
    drop(server_c);
    steps.push(Step {
        name: "TCP a→c (iperf3)".into(),
        detail: format!(
            "{:.1} Mbit/s = {:.0}% of the 100 Mbit/s line (max ≈ 94% after headers)",
            tcp.receiver_bps / 1e6,
            100.0 * tcp.receiver_bps / LINE_RATE
        ),
        ok: tcp.receiver_bps >= 0.9 * LINE_RATE,
        data: serde_json::to_value(&tcp)?,
    });
    progress.inc(1);

    // 5. The learning table points at the right ports.
    progress.set_message("checking the learning table");
    let table = switch_table(lab)?;
    let mut wrong = Vec::new();
    for host in ["a", "b", "c"] {
        let mac = super::lab::fmt_mac(lab.mac(host, "eth0")?);
        let entry = table.iter().find(|e| e["mac"] == mac.as_str());
        if entry.map(|e| e["towards"].as_str()) != Some(Some(host)) {
            wrong.push(host);
        }
    }
    steps.push(Step {
        name: "learning table".into(),
        detail: if wrong.is_empty() {
            "every host on the port that leads to it".into()
        } else {
            format!("wrong or missing entries for {wrong:?}")
        },
        ok: wrong.is_empty(),
        data: json!({"wrong": wrong}),
    });
    progress.inc(1);
    Ok(steps)
}

/// The switch's learning table with the neighbour behind each port.
fn switch_table(lab: &Lab) -> anyhow::Result<Vec<Value>> {
    let ports = lab.switch_ports("s1")?;
    let fdb = rtlan_linux::ctl::request(&socket(lab)?, "fdb")?;
    Ok(fdb
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            let port = e["port"].as_u64().unwrap_or(u64::MAX);
            let (ifname, towards) = usize::try_from(port)
                .ok()
                .and_then(|p| ports.get(p))
                .map_or(("?", "?"), |(i, p)| (i.as_str(), p.as_str()));
            json!({"mac": e["mac"], "port": ifname, "towards": towards, "age_ns": e["age_ns"]})
        })
        .collect())
}

fn print_summary(lab: &Value, steps: &[Step], fdb: &[Value], stats: &Value) {
    println!("rtlan demo — three Linux hosts on one rtlan switch, 100 Mbit/s links\n");
    for h in lab["hosts"].as_array().into_iter().flatten() {
        println!(
            "  host {}  {:<12} {}",
            h["name"].as_str().unwrap_or("?"),
            h["ip"].as_str().unwrap_or("?"),
            h["mac"].as_str().unwrap_or("?")
        );
    }
    println!();
    for s in steps {
        println!(
            "  {} {:<28} {}",
            if s.ok { "✓" } else { "✗" },
            s.name,
            s.detail
        );
    }
    println!("\n  learning table of s1");
    for e in fdb {
        println!(
            "    {}  {:<3} → {}",
            e["mac"].as_str().unwrap_or("?"),
            e["port"].as_str().unwrap_or("?"),
            e["towards"].as_str().unwrap_or("?")
        );
    }
    println!("\n  switch counters (port: rx frames / tx frames / queue drops)");
    let ports = stats["switch"]["ports"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for (i, p) in ports.iter().enumerate() {
        println!(
            "    p{i}: {} / {} / {}",
            p["rx_frames"], p["tx_frames"], p["drop_queue_full"]
        );
    }
    let sw = &stats["switch"];
    println!(
        "    flooded {}, ARP probes {}, held {}, released {}, malformed {}",
        sw["flooded"], sw["arp_probes_sent"], sw["held"], sw["released"], sw["drop_malformed"]
    );
    let t = &stats["timer"];
    println!(
        "    timer wake-ups {}, late > 50 µs: {}, max lateness {:.1} µs",
        t["wakeups"],
        t["over_50us"],
        t["max_ns"].as_f64().unwrap_or(0.0) / 1e3
    );
}
