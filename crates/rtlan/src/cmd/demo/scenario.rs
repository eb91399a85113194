//! One run of the guarantee demo on one switch kind: a 50 Mbit/s stream a → d (reserved through
//! the host daemon and shaped by RTTR's leaky bucket on rtlan, EtheReal §3.2/§3.3; plain paced
//! UDP on the Linux bridge, which cannot reserve) while b and c flood d at their full link rate
//! and c also sends TCP to d.
//!
//! Timeline (t = 0 when the receivers start): competitors start at 0.3 s and run `seconds + 1`
//! s; the 50 Mbit/s stream starts at 0.8 s and runs `seconds` s, so it lies entirely inside the
//! congestion; the receivers on d stop at `seconds + 3` s, after everything has drained.
//!
//! The TCP flow comes from c, not from a: from a it would share a's host egress (one FIFO behind
//! the 100 Mbit/s link emulation, which the daemon does not manage for leaky-bucket streams) with
//! the reserved stream and keep that FIFO full, so the demo would measure a's host stack (the
//! paper's Fig. 5 question, `rtlan experiment fig5`) instead of the switch. From c it adds
//! competing traffic at the switch's output port towards d, where the guarantee is made. It also
//! shares c's own link with c's flood, so it gets little on either switch (measured: 0–2 Mbit/s
//! on rtlan, 0–15 on the bridge) — it is a competitor here, not a measured subject.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use indicatif::ProgressBar;
use rtlan::labkit::{Receiver, Rtcd, Stream};
use rtlan_lab::tools::{self, Iperf3Opts, Iperf3Server};
use rtlan_lab::{Lab, LabOptions, Topology};
use serde_json::Value;

/// The guarantee topology, embedded so `rtlan demo` needs no files.
pub(super) const TOPOLOGY: &str = include_str!("../../../../../topologies/guarantee.toml");

/// The reserved (on the bridge: offered) rate of the a → d stream, bits per second of whole
/// frames.
pub(super) const RESERVED_BPS: f64 = 50e6;
/// Payload bytes of the a → d stream (1066 bytes on the wire).
const RT_PAYLOAD: u16 = 1000;
/// Payload bytes of the floods (full frames).
const FLOOD_PAYLOAD: u16 = 1472;
/// The floods' offered rate: each host's full link rate.
const FLOOD_RATE: &str = "100mbit";
/// Wire bytes per TCP segment over its payload: a 1448-byte MSS (timestamps on) is a 1538-byte
/// frame on the wire (IP 20 + TCP 32 + Ethernet 14 + FCS, preamble and gap 24).
const TCP_WIRE_FACTOR: f64 = 1538.0 / 1448.0;

/// Which switch a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SwitchKind {
    /// The rtlan switch with the host daemon on a.
    Rtlan,
    /// The Linux bridge (the baseline).
    Bridge,
}

impl SwitchKind {
    /// The name in the JSON output and in topology files.
    pub(super) fn name(self) -> &'static str {
        match self {
            SwitchKind::Rtlan => "rtlan",
            SwitchKind::Bridge => "linux-bridge",
        }
    }
}

/// What one flow got at d.
#[derive(Debug, Clone)]
pub(super) struct Flow {
    /// Its name (sender → d, kind).
    pub(super) name: String,
    /// The reserved rate (only the a → d stream on rtlan).
    pub(super) reserved_bps: Option<f64>,
    /// What the sender offered (whole frames; TCP: what its window allowed, on the wire).
    pub(super) offered_bps: f64,
    /// What arrived at d (whole frames, first → last arrival).
    pub(super) delivered_bps: f64,
    /// Datagrams sent but not received, percent (`None` for TCP).
    pub(super) loss_pct: Option<f64>,
    /// Largest one-way delay of a probe (`None` for TCP).
    pub(super) max_delay_us: Option<f64>,
    /// 99th percentile of the one-way delay (`None` for TCP; shown in the table, not the JSON).
    pub(super) p99_delay_us: Option<f64>,
}

/// The topology text for `kind`: the embedded file, with the switch kind replaced for the bridge.
pub(super) fn topology_text(kind: SwitchKind) -> anyhow::Result<String> {
    let rtlan = "kind = \"rtlan\"";
    anyhow::ensure!(
        TOPOLOGY.matches(rtlan).count() == 1,
        "the embedded topology names its switch kind exactly once"
    );
    Ok(TOPOLOGY.replace(rtlan, &format!("kind = \"{}\"", kind.name())))
}

/// Builds the lab for `kind`, runs the traffic for `seconds`, tears the lab down.
pub(super) fn run(
    exe: &Path,
    kind: SwitchKind,
    seconds: u32,
    progress: &ProgressBar,
) -> anyhow::Result<Vec<Flow>> {
    let topology = Topology::from_str(&topology_text(kind)?, "guarantee topology")?;
    let suffix = if kind == SwitchKind::Rtlan { 'r' } else { 'b' };
    let name = format!("gd{}{suffix}", std::process::id() % 100_000);
    // A crashed earlier run with the same pid may have left it behind.
    let _ = rtlan_lab::down(&name);
    progress.set_message(format!("{}: building the lab", kind.name()));
    let lab = Lab::up(&topology, &name, &LabOptions::new(exe))?;
    let flows = traffic(exe, &lab, kind, seconds, progress);
    lab.down()?;
    flows
}

fn traffic(
    exe: &Path,
    lab: &Lab,
    kind: SwitchKind,
    seconds: u32,
    progress: &ProgressBar,
) -> anyhow::Result<Vec<Flow>> {
    let d = lab.host_ip("d")?;
    // Warm up: every host's ARP entry for d and the switch's learning table, before d's port is
    // congested.
    for host in ["a", "b", "c"] {
        tools::ping(lab.netns(host)?, d, 1, Duration::from_millis(100))?;
    }
    let daemon = match kind {
        SwitchKind::Rtlan => Some(Rtcd::start(exe, lab, "a", "")?),
        SwitchKind::Bridge => None,
    };
    let secs = Duration::from_secs(u64::from(seconds));
    let competitors = secs + Duration::from_secs(1);
    let listen = secs + Duration::from_secs(3);
    let recv_a = Receiver::start(exe, lab, "d", 5001, listen, &[])?;
    let recv_b = Receiver::start(exe, lab, "d", 5002, listen, &[])?;
    let recv_c = Receiver::start(exe, lab, "d", 5003, listen, &[])?;
    let iperf = Iperf3Server::start(lab.netns("d")?, 5201)?;
    let start = Instant::now();
    std::thread::sleep(Duration::from_millis(300));

    let flood = |port: u16| Stream {
        to: format!("{d}:{port}"),
        rate: FLOOD_RATE.to_string(),
        size: FLOOD_PAYLOAD,
        duration: competitors,
        reserve: None,
        shaping: None,
    };
    let flood_b = flood(5002).start(exe, lab, "b")?;
    let flood_c = flood(5003).start(exe, lab, "c")?;
    let ns_c = lab.netns("c")?.to_string();
    let tcp_port = iperf.port();
    let tcp = std::thread::spawn(move || {
        tools::iperf3_tcp(&ns_c, d, tcp_port, seconds + 1, &Iperf3Opts::default())
    });
    std::thread::sleep(Duration::from_millis(500));
    let stream = Stream {
        to: format!("{d}:5001"),
        rate: format!("{}mbit", RESERVED_BPS / 1e6),
        size: RT_PAYLOAD,
        duration: secs,
        reserve: daemon.as_ref().map(|r| r.socket().to_path_buf()),
        shaping: daemon.as_ref().map(|_| "leaky".to_string()),
    };
    let sender_a = stream.start(exe, lab, "a")?;

    progress.set_message(format!(
        "{}: a → d 50 Mbit/s{}, b and c flood d, TCP c → d",
        kind.name(),
        if daemon.is_some() {
            " reserved"
        } else {
            " (plain UDP)"
        }
    ));
    let total = listen.as_millis();
    while start.elapsed() < listen {
        let done = start.elapsed().as_millis().min(total);
        progress.set_position(u64::try_from(done * 1000 / total).unwrap_or(1000));
        std::thread::sleep(Duration::from_millis(100));
    }
    progress.set_position(1000);

    let grace = Duration::from_secs(5);
    let sent_a = summary(sender_a.finish(grace)?, "rtlan send on a")?;
    let sent_b = summary(flood_b.finish(grace)?, "rtlan send on b")?;
    let sent_c = summary(flood_c.finish(grace)?, "rtlan send on c")?;
    let got_a = recv_a.report()?;
    let got_b = recv_b.report()?;
    let got_c = recv_c.report()?;
    let tcp = tcp
        .join()
        .map_err(|_| anyhow::anyhow!("the iperf3 thread panicked"))?
        .context("iperf3 TCP c → d")?;
    drop(iperf);
    drop(daemon);

    let reserved = (kind == SwitchKind::Rtlan).then_some(RESERVED_BPS);
    Ok(vec![
        probe_flow("a→d 50M", reserved, &sent_a, &got_a),
        probe_flow("b→d flood", None, &sent_b, &got_b),
        probe_flow("c→d flood", None, &sent_c, &got_c),
        Flow {
            name: "c→d tcp".to_string(),
            reserved_bps: None,
            offered_bps: tcp.sender_bps * TCP_WIRE_FACTOR,
            delivered_bps: tcp.receiver_bps * TCP_WIRE_FACTOR,
            loss_pct: None,
            max_delay_us: None,
            p99_delay_us: None,
        },
    ])
}

/// Parses a sender's `--json` summary from `Guarded::finish`'s output.
fn summary((out, ok): (String, bool), what: &str) -> anyhow::Result<Value> {
    match serde_json::from_str(out.trim()) {
        Ok(value) if ok => Ok(value),
        _ => anyhow::bail!("{what} failed (exited ok = {ok}): {out:?}"),
    }
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bridge_topology_differs_only_in_the_switch_kind() {
        let rtlan = topology_text(SwitchKind::Rtlan).expect("rtlan text");
        let bridge = topology_text(SwitchKind::Bridge).expect("bridge text");
        assert_eq!(rtlan, TOPOLOGY);
        assert!(bridge.contains("kind = \"linux-bridge\""));
        assert!(!bridge.contains("kind = \"rtlan\""));
        assert_eq!(rtlan.lines().count(), bridge.lines().count());
        let t = Topology::from_str(&bridge, "bridge").expect("the bridge topology parses");
        drop(t);
    }

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
