//! Löser/Härtig Table 2 (§4.2, "Measuring switch buffer capacities"): hosts c and d each send an
//! on-off stream at just under half the line rate to b, shaped with bucket b = r·Ts + M released
//! once per Ts (so each Ts starts with a burst of b bytes at line rate); the burst grows with Ts
//! until packets are lost. When both bursts meet at b's port, the switch must queue about b bytes
//! (the paper's "maximum switch backlog required by these two streams is b"). The two senders'
//! Ts clocks are not synchronised, so a run shows loss only once the bursts overlapped: the
//! largest loss-free burst is a lower bound of the buffer, read beside the configured one.

use std::time::Duration;

use rtlan_lab::Lab;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::kit::run::Run;
use crate::labkit::Receiver;

use super::netfile::HOSTS;
use super::{loss, send_report, start_send, Send};

/// The buffer probe's parameters (scenario `[buffer_probe]`).
#[derive(Debug, Clone, Deserialize, Serialize)]
pub(super) struct BufferProbe {
    /// Senders (two hosts) and their rate, just under half the line rate.
    pub(super) senders: Vec<String>,
    /// Rate of each sender (tc spelling).
    pub(super) rate: String,
    /// Shaping intervals to sweep, ascending (tc spelling).
    pub(super) intervals: Vec<String>,
    /// Seconds per step.
    pub(super) step_s: f64,
    /// Intervals and seconds per step with --quick.
    pub(super) quick_intervals: Vec<String>,
    pub(super) quick_step_s: f64,
}

/// `Udp: … RcvbufErrors` of `/proc/net/snmp` in `host`'s namespace (datagrams dropped at full
/// receive buffers); `None` if unreadable.
fn rcvbuf_errors(lab: &Lab, host: &str) -> Option<u64> {
    let out = lab
        .exec(host, &["cat", "/proc/net/snmp"])
        .ok()?
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut udp = text.lines().filter(|l| l.starts_with("Udp:"));
    let (names, values) = (udp.next()?, udp.next()?);
    let i = names.split_whitespace().position(|n| n == "RcvbufErrors")?;
    values.split_whitespace().nth(i)?.parse().ok()
}

/// Drops of the Linux bridge's egress qdisc towards b (`tc -s qdisc show dev p1` in s1: b is the
/// switch's second link).
fn bridge_drops(lab: &Lab) -> Option<u64> {
    let out = lab
        .exec("s1", &["tc", "-s", "qdisc", "show", "dev", "p1"])
        .ok()?
        .output()
        .ok()?;
    parse_dropped(&String::from_utf8_lossy(&out.stdout))
}

/// Sum of the rtlan switch's `drop_queue_full` counters over all ports (`stats` on its control
/// socket); only b's port can fill in this experiment.
fn switch_drops(lab: &Lab) -> Option<u64> {
    let socket = lab.switch_socket("s1")?;
    let stats = rtlan_linux::ctl::request(&socket, "stats").ok()?;
    Some(sum_key(&stats, "drop_queue_full"))
}

/// Sum of every number under `key` anywhere in `v`.
fn sum_key(v: &Value, key: &str) -> u64 {
    match v {
        Value::Object(map) => map
            .iter()
            .map(|(k, x)| {
                if k == key {
                    x.as_u64().unwrap_or(0)
                } else {
                    sum_key(x, key)
                }
            })
            .sum(),
        Value::Array(items) => items.iter().map(|x| sum_key(x, key)).sum(),
        _ => 0,
    }
}

/// Drops at the switch's queue towards b, by kind.
fn queue_drops(lab: &Lab, kind: &str) -> Option<u64> {
    if kind == "rtlan" {
        switch_drops(lab)
    } else {
        bridge_drops(lab)
    }
}

/// The first `dropped N` of `tc -s qdisc` output.
fn parse_dropped(text: &str) -> Option<u64> {
    let mut words = text.split(|c: char| c.is_whitespace() || c == ',' || c == '(');
    words.find(|w| *w == "dropped")?;
    words.find(|w| !w.is_empty())?.parse().ok()
}

/// The bucket b = r·Ts + M of one sender in wire bytes (M = one full frame on the wire).
pub(super) fn burst_wire_bytes(rate_bps: u64, ts: Duration, frame_wire: u64) -> u64 {
    (u128::from(rate_bps) * ts.as_nanos() / 8_000_000_000) as u64 + frame_wire
}

/// Largest burst of the loss-free steps before the first lossy one; `None` if the first step
/// already lost.
pub(super) fn largest_loss_free(steps: &[(u64, i64)]) -> Option<u64> {
    steps
        .iter()
        .take_while(|(_, lost)| *lost <= 0)
        .map(|(burst, _)| *burst)
        .max()
}

/// Sweeps Ts in `lab` (hosts as in the main experiment); returns the steps and the verdict.
pub(super) fn probe(
    run: &Run,
    bp: &BufferProbe,
    lab: &Lab,
    size: u16,
    kind: &str,
) -> anyhow::Result<Value> {
    let (intervals, step_s) = if run.quick {
        (&bp.quick_intervals, bp.quick_step_s)
    } else {
        (&bp.intervals, bp.step_s)
    };
    let rate_bps = rtlan_core::units::parse_rate(&bp.rate)?;
    let frame_wire = rtlan_core::shaper::wire_bytes(usize::from(size));
    let b_ip = HOSTS[1].1;
    let mut steps = Vec::new();
    let mut table = Vec::new();
    for ts in intervals {
        let ts_d = rtlan_core::units::parse_duration(ts)?;
        let burst = burst_wire_bytes(rate_bps, ts_d, frame_wire);
        let rdur = Duration::from_secs_f64(step_s + 1.5);
        let mut rx = Vec::new();
        for (i, _) in bp.senders.iter().enumerate() {
            rx.push(Receiver::start(
                &run.exe,
                lab,
                "b",
                5101 + u16::try_from(i)?,
                rdur,
                &[],
            )?);
        }
        std::thread::sleep(Duration::from_millis(300));
        let rcvbuf_before = rcvbuf_errors(lab, "b");
        let qdisc_before = queue_drops(lab, kind);
        let mut tx = Vec::new();
        for (i, host) in bp.senders.iter().enumerate() {
            let send = Send {
                host,
                to: format!("{b_ip}:{}", 5101 + i),
                rate: &bp.rate,
                size,
                tick: Some(ts),
                socket: None,
            };
            tx.push(start_send(run, lab, &send, step_s)?);
        }
        let mut lost = 0;
        let mut streams = Vec::new();
        for (g, r) in tx.into_iter().zip(rx) {
            let sent = send_report(g, step_s)?;
            let recv = r.report()?;
            let l = loss(&sent, &recv);
            lost += l;
            streams.push(json!({"sent": sent["sent"], "received": recv["packets"], "lost": l}));
        }
        let at_receiver = rcvbuf_errors(lab, "b")
            .zip(rcvbuf_before)
            .map(|(a, b)| a.saturating_sub(b));
        let at_switch = queue_drops(lab, kind)
            .zip(qdisc_before)
            .map(|(a, b)| a.saturating_sub(b));
        eprintln!(
            "loser: buffer probe Ts = {ts}: burst {burst} B per sender, lost {lost} \
             (at b's socket {at_receiver:?}, in the switch queue {at_switch:?})"
        );
        table.push((burst, lost));
        let bound = pair_backlog_bound(&bp.rate, &bp.senders, burst, frame_wire)?;
        steps.push(
            json!({"ts": ts, "burst_wire_bytes": burst, "backlog_bound_bytes": bound,
            "burst_frames": burst / frame_wire, "lost": lost, "streams": streams,
            "dropped_at_receiver_socket": at_receiver, "dropped_in_switch_queue": at_switch}),
        );
    }
    let best = largest_loss_free(&table);
    Ok(json!({
        "rate": bp.rate, "steps": steps,
        "largest_loss_free_burst_bytes": best,
        "largest_loss_free_burst_frames": best.map(|b| b / frame_wire),
    }))
}

/// Eq. (4) at b's port for the probe's senders, each a T-SPEC (C, M, r, b) in wire bytes
/// against a port of the line rate counted the same way (the lab's tbf counts wire bytes):
/// what a buffer must hold so that no burst pattern the senders' token buckets allow loses
/// anything. Two senders with 2r ≈ C need about 2b, not the b of perfectly aligned on-off bursts.
fn pair_backlog_bound(
    rate: &str,
    senders: &[String],
    burst: u64,
    frame_wire: u64,
) -> anyhow::Result<i64> {
    let mut text =
        String::from("[[switch]]\nname = \"s1\"\nt_mux = \"0us\"\nbuffer = \"1024MiB\"\n");
    text += "[[link]]\nends = [\"b\", \"s1\"]\nrate = \"100mbit\"\n";
    for s in senders {
        text += &format!(
            "[[link]]\nends = [\"{s}\", \"s1\"]\nrate = \"100mbit\"\n\
             [[flow]]\nname = \"{s}\"\npath = [\"{s}\", \"s1\", \"b\"]\nrate = \"{rate}\"\n\
             max_packet = {frame_wire}\nburst = \"{burst}B\"\n"
        );
    }
    let report = super::netfile::analyze(&text)?;
    let bound = report
        .ports
        .iter()
        .find(|p| p.to == "b")
        .and_then(|p| p.backlog_bound)
        .ok_or_else(|| anyhow::anyhow!("no bounded port towards b in {report:?}"))?;
    Ok(i64::try_from(bound.ceil_bytes()?)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_is_rate_times_interval_plus_a_frame() {
        // 49 Mbit/s × 10 ms = 61 250 bytes, plus one 1538-byte wire frame.
        assert_eq!(
            burst_wire_bytes(49_000_000, Duration::from_millis(10), 1538),
            62_788
        );
        assert_eq!(burst_wire_bytes(49_000_000, Duration::ZERO, 1538), 1538);
    }

    #[test]
    fn two_conforming_senders_need_about_twice_their_burst() {
        let senders = ["c".to_string(), "d".to_string()];
        // Seen in the lab: 75 038 B per sender lost nothing on a 166 300 B queue, 87 288 B did.
        let b = pair_backlog_bound("49mbit", &senders, 75_038, 1538).expect("analysable");
        assert_eq!(b, 147_194);
        let b = pair_backlog_bound("49mbit", &senders, 87_288, 1538).expect("analysable");
        assert!(b > 166_300 && b < 2 * 87_288, "{b}");
    }

    #[test]
    fn tc_dropped_is_parsed() {
        let text = "qdisc tbf 8001: root refcnt 2 rate 100Mbit burst 12500b lat 13.3ms\n \
                    Sent 6170 bytes 35 pkt (dropped 17, overlimits 3 requeues 0)\n";
        assert_eq!(parse_dropped(text), Some(17));
        assert_eq!(parse_dropped("qdisc noqueue 0: root"), None);
    }

    #[test]
    fn drop_counters_are_summed_over_ports() {
        let stats = serde_json::json!({"ports": [{"drop_queue_full": 3, "rx_frames": 9},
            {"drop_queue_full": 4}], "other": {"drop_queue_full": 1}});
        assert_eq!(sum_key(&stats, "drop_queue_full"), 8);
        assert_eq!(sum_key(&stats, "missing"), 0);
    }

    #[test]
    fn largest_loss_free_stops_at_the_first_loss() {
        let steps = [(10, 0), (20, 0), (30, 5), (40, 0)];
        assert_eq!(largest_loss_free(&steps), Some(20));
        assert_eq!(largest_loss_free(&[(10, 3)]), None);
        assert_eq!(largest_loss_free(&[(10, 0), (20, 0)]), Some(20));
    }
}
