//! The guarantee demo's lab runner: turns a [`Guarantee`] into a lab (the scenario's topology with
//! the rtlan switch or the Linux bridge), `rtlan recv` on every UDP flow's receiver, an `iperf3`
//! server for every TCP flow, the host daemon on every host that sends a reserved flow (rtlan
//! only), and `rtlan send` / `iperf3` started at each flow's start time; then reads what every
//! receiver got. Every process is guarded and the lab is removed on every exit path.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use rtlan_lab::tools::{self, Iperf3Opts, Iperf3Result, Iperf3Server};
use rtlan_lab::{Lab, LabOptions, Topology};
use serde_json::Value;

use super::{Flow, Guarantee, Run, SwitchKind, Traffic};
use crate::kit::progress::{Progress, Step};
use crate::labkit::{Guarded, Receiver, Rtcd, Stream};

/// Wire bytes per TCP segment over its payload: a 1448-byte MSS (timestamps on) is a 1538-byte
/// frame on the wire (IP 20 + TCP 32 + Ethernet 14 + FCS, preamble and gap 24).
const TCP_WIRE_FACTOR: f64 = 1538.0 / 1448.0;
/// Progress positions per run (a bar of 1000 steps).
const PROGRESS_STEPS: u64 = 1000;

/// Runs `scenario` on rtlan, then on the bridge, holding the lab serial lock throughout.
pub fn run_both(
    scenario: &Guarantee,
    exe: &Path,
    progress: Progress<'_>,
) -> anyhow::Result<Vec<Run>> {
    progress(Step::Length(PROGRESS_STEPS));
    // Measurements on a 2-core machine must not overlap with other labs' (tests, experiments).
    progress(Step::Message(
        "waiting for other lab measurements to finish".to_string(),
    ));
    let _serial = rtlan_lab::serial_lock()?;
    let mut runs = Vec::new();
    for kind in SwitchKind::BOTH {
        progress(Step::Position(0));
        runs.push(run_one(scenario, exe, kind, progress)?);
    }
    Ok(runs)
}

/// Builds the lab for `kind`, runs the traffic, reads an rtlan switch's port counters, tears the
/// lab down.
pub fn run_one(
    scenario: &Guarantee,
    exe: &Path,
    kind: SwitchKind,
    progress: Progress<'_>,
) -> anyhow::Result<Run> {
    let mut topology = Topology::from_str(&scenario.topology_text(kind)?, "guarantee topology")?;
    topology.offloads |= scenario.offloads;
    let suffix = if kind == SwitchKind::Rtlan { 'r' } else { 'b' };
    let name = format!("gd{}{suffix}", std::process::id() % 100_000);
    // A crashed earlier run with the same pid may have left it behind.
    let _ = rtlan_lab::down(&name);
    progress(Step::Message(format!("{}: building the lab", kind.name())));
    let mut options = LabOptions::new(exe);
    options.data_plane = scenario.data_plane;
    options.tx_threads = scenario.tx_threads;
    let lab = Lab::up(&topology, &name, &options)?;
    let flows = traffic(scenario, exe, &lab, kind, progress);
    // The switch's own account of its ports (rtlan only): a failure to read it is reported
    // and leaves the counters out; it does not lose the measurement.
    let ports = lab.switch_socket("s1").and_then(|socket| {
        match rtlan_linux::ctl::request(&socket, "stats") {
            Ok(stats) => Some(super::port_counters(&stats)),
            Err(e) => {
                tracing::warn!("reading s1's counters: {e}");
                None
            }
        }
    });
    lab.down()?;
    Ok(Run {
        switch: kind,
        flows: flows?,
        ports,
    })
}

/// A started flow and what it needs to be read.
enum Running {
    /// A UDP probe stream: its sender (once started) and its receiver.
    Udp {
        sender: Option<Guarded>,
        receiver: Receiver,
    },
    /// A TCP flow: the iperf3 server and, once started, the client thread.
    Tcp {
        server: Iperf3Server,
        client: Option<std::thread::JoinHandle<rtlan_lab::tools::Result<Iperf3Result>>>,
    },
}

fn traffic(
    scenario: &Guarantee,
    exe: &Path,
    lab: &Lab,
    kind: SwitchKind,
    progress: Progress<'_>,
) -> anyhow::Result<Vec<Flow>> {
    // Warm up: every sender's ARP entry for its receiver and the switch's learning table, before
    // any port is congested.
    let mut pairs: Vec<(&str, &str)> = scenario
        .flows
        .iter()
        .map(|f| (f.from.as_str(), f.to.as_str()))
        .collect();
    pairs.sort_unstable();
    pairs.dedup();
    for (from, to) in pairs {
        tools::ping(
            lab.netns(from)?,
            lab.host_ip(to)?,
            1,
            Duration::from_millis(100),
        )?;
    }
    // The host daemon on every host that sends a reserved flow, where the switch reserves.
    let mut daemons: Vec<(String, Rtcd)> = Vec::new();
    if kind.reserves() {
        for f in &scenario.flows {
            if matches!(f.traffic, Traffic::Udp { reserve: true, .. })
                && !daemons.iter().any(|(h, _)| *h == f.from)
            {
                daemons.push((f.from.clone(), Rtcd::start(exe, lab, &f.from, "")?));
            }
        }
    }
    let mut running = Vec::new();
    for f in &scenario.flows {
        running.push(match f.traffic {
            Traffic::Udp { .. } => Running::Udp {
                sender: None,
                receiver: Receiver::start(exe, lab, &f.to, f.port, scenario.listen, &[])?,
            },
            Traffic::Tcp => Running::Tcp {
                server: Iperf3Server::start(lab.netns(&f.to)?, f.port)?,
                client: None,
            },
        });
    }
    let start = Instant::now();
    let mut order: Vec<usize> = (0..scenario.flows.len()).collect();
    order.sort_by_key(|&i| scenario.flows[i].start);
    for i in order {
        let f = &scenario.flows[i];
        if let Some(wait) = f.start.checked_sub(start.elapsed()) {
            std::thread::sleep(wait);
        }
        let socket = daemons
            .iter()
            .find(|(h, _)| *h == f.from)
            .map(|(_, d)| d.socket().to_path_buf());
        match (&f.traffic, &mut running[i]) {
            (
                Traffic::Udp {
                    rate_bps,
                    payload,
                    reserve,
                },
                Running::Udp { sender, .. },
            ) => {
                let reserve = socket.filter(|_| *reserve);
                let stream = Stream {
                    to: format!("{}:{}", lab.host_ip(&f.to)?, f.port),
                    rate: format!("{}mbit", rate_bps / 1e6),
                    size: *payload,
                    duration: f.length,
                    shaping: reserve.as_ref().map(|_| "leaky".to_string()),
                    reserve,
                };
                *sender = Some(stream.start(exe, lab, &f.from)?);
            }
            (Traffic::Tcp, Running::Tcp { server, client }) => {
                let ns = lab.netns(&f.from)?.to_string();
                let (to, port) = (lab.host_ip(&f.to)?, server.port());
                let secs = u32::try_from(f.length.as_secs())?;
                *client = Some(std::thread::spawn(move || {
                    tools::iperf3_tcp(&ns, to, port, secs, &Iperf3Opts::default())
                }));
            }
            _ => anyhow::bail!("flow {}: traffic and process disagree", f.name),
        }
    }

    progress(Step::Message(scenario.headline(kind)));
    let total = scenario.listen.as_millis();
    while start.elapsed() < scenario.listen {
        let done = start.elapsed().as_millis().min(total);
        progress(Step::Position(
            u64::try_from(done * u128::from(PROGRESS_STEPS) / total).unwrap_or(PROGRESS_STEPS),
        ));
        std::thread::sleep(Duration::from_millis(100));
    }
    progress(Step::Position(PROGRESS_STEPS));

    let grace = Duration::from_secs(5);
    let mut finished = Vec::new();
    for (f, r) in scenario.flows.iter().zip(running) {
        finished.push(match r {
            Running::Udp { sender, receiver } => {
                let sender = sender.context("every flow was started")?;
                let sent = sender.finish_json(grace)?;
                (f, Some((sent, receiver)), None)
            }
            Running::Tcp { server, client } => {
                let client = client.context("every flow was started")?;
                (f, None, Some((server, client)))
            }
        });
    }
    let mut flows = Vec::new();
    for (f, udp, tcp) in finished {
        if let Some((sent, receiver)) = udp {
            let got = receiver.report()?;
            let reserved = match f.traffic {
                Traffic::Udp {
                    rate_bps,
                    reserve: true,
                    ..
                } if kind.reserves() => Some(rate_bps),
                _ => None,
            };
            flows.push(probe_flow(&f.name, reserved, &sent, &got));
        }
        if let Some((server, client)) = tcp {
            let tcp = client
                .join()
                .map_err(|_| anyhow::anyhow!("the iperf3 thread panicked"))?
                .with_context(|| format!("iperf3 TCP {}", f.name))?;
            drop(server);
            flows.push(Flow {
                name: f.name.clone(),
                reserved_bps: None,
                offered_bps: tcp.sender_bps * TCP_WIRE_FACTOR,
                delivered_bps: tcp.receiver_bps * TCP_WIRE_FACTOR,
                loss_pct: None,
                max_delay_us: None,
                p99_delay_us: None,
                bound_us: None,
            });
        }
    }
    drop(daemons);
    Ok(flows)
}

/// A probe stream's flow from its sender's summary and `rtlan recv`'s report. Loss counts every
/// datagram sent and not received (also at the end of the stream, which `recv`'s own count over
/// the sequence numbers it saw would miss).
fn probe_flow(name: &str, reserved: Option<f64>, sent: &Value, got: &Value) -> Flow {
    let sent_n = sent["sent"].as_u64().unwrap_or(0);
    let got_n = got["packets"].as_u64().unwrap_or(0);
    let loss_pct = if sent_n == 0 {
        100.0
    } else {
        100.0 * sent_n.saturating_sub(got_n) as f64 / sent_n as f64
    };
    Flow {
        name: name.to_string(),
        reserved_bps: reserved,
        offered_bps: sent["wire_bps"].as_f64().unwrap_or(0.0),
        delivered_bps: got["wire_bps"].as_f64().unwrap_or(0.0),
        loss_pct: Some(loss_pct),
        max_delay_us: got["delay_us"]["max"].as_f64(),
        p99_delay_us: got["delay_us"]["p99"].as_f64(),
        bound_us: sent["reservation"]["delay_bound_us"].as_f64(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_counts_datagrams_missing_at_the_end() {
        let sent = serde_json::json!({"sent": 1000, "wire_bps": 5e7});
        // recv saw 0..=899 without gaps: its own loss is 0, but 100 never arrived.
        let got = serde_json::json!({"packets": 900, "wire_bps": 4.9e7, "lost": 0,
                                     "delay_us": {"max": 120.5}});
        let f = probe_flow("x", None, &sent, &got);
        assert!((f.loss_pct.expect("a probe flow has a loss") - 10.0).abs() < 1e-9);
        assert_eq!(f.max_delay_us, Some(120.5));
        assert_eq!(f.delivered_bps, 4.9e7);
    }
}
