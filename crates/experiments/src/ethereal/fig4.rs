//! EtheReal §4.1, Fig. 4: the delivered rate of a 50 Mbit/s test connection (a → b, reserved,
//! RTTR leaky bucket) while 1–8 interfering connections totalling 100 Mbit/s run between other
//! hosts (c → d, e → f) through the same switch. Run on the rtlan switch (all connections
//! reserved), on the Linux bridge (plain paced UDP) and on the bridge with an HTB class for the
//! test flow on its egress port towards b.
//!
//! Deviation from the paper: the paper ran all interference between one host pair; here each
//! host link may carry at most 60 % of its rate in reservations, so the interferers alternate over
//! two pairs and one interferer alone carries only `per_link_max_bps`.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use rtlan_lab::Lab;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::kit::lab::{addr, exec_ok, up_file};
use crate::kit::measure::{loadavg, now_utc};
use crate::kit::run::Run;
use crate::labkit::{Receiver, Rtcd, Stream};

/// The scenario file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Scenario {
    topology_rtlan: PathBuf,
    topology_bridge: PathBuf,
    test_rate_bps: u64,
    interference_total_bps: u64,
    per_link_max_bps: u64,
    payload: u16,
    interferers: Vec<u32>,
    quick_interferers: Vec<u32>,
    seconds: f64,
    quick_seconds: f64,
    variants: Vec<String>,
}

/// UDP port of the test connection at b.
const TEST_PORT: u16 = 5000;
/// First UDP port of the interferers at d and f.
const INTERFERER_PORT: u16 = 6000;

/// Runs the experiment; returns the path of results.json.
pub fn run(run: &Run) -> anyhow::Result<PathBuf> {
    let sc: Scenario = run.load()?;
    let (points, seconds) = if run.quick {
        (&sc.quick_interferers, sc.quick_seconds)
    } else {
        (&sc.interferers, sc.seconds)
    };
    let duration = Duration::from_secs_f64(seconds);
    eprintln!("fig4: waiting for the lab lock");
    let _serial = rtlan_lab::serial_lock()?;
    let mut variants = Vec::new();
    for variant in &sc.variants {
        let topology = match variant.as_str() {
            "rtlan" => &sc.topology_rtlan,
            "bridge" | "bridge-htb" => &sc.topology_bridge,
            other => anyhow::bail!("unknown variant {other:?} (rtlan, bridge, bridge-htb)"),
        };
        let lab = up_file(&run.exe, topology, "fig4")?;
        let result = run_variant(run, &sc, &lab, variant, points, duration);
        lab.down()?;
        variants.push(json!({"variant": variant, "points": result?}));
    }
    let results = json!({
        "experiment": "fig4",
        "quick": run.quick,
        "seconds_per_point": seconds,
        "test_rate_bps": sc.test_rate_bps,
        "interference_total_bps": sc.interference_total_bps,
        "per_link_max_bps": sc.per_link_max_bps,
        "payload": sc.payload,
        "date": now_utc(),
        "load_before": loadavg(),
        "variants": variants,
    });
    run.finish(&results)
}

/// The interferers' rates: `n` connections sharing the total, at most `per_link_max_bps` on each
/// of the two pairs.
fn interferer_rates(total: u64, per_link_max: u64, n: u32) -> Vec<u64> {
    let n = u64::from(n.max(1));
    let pairs_used = n.min(2);
    let total = total.min(per_link_max * pairs_used);
    vec![total / n; usize::try_from(n).unwrap_or(1)]
}

fn run_variant(
    run: &Run,
    sc: &Scenario,
    lab: &Lab,
    variant: &str,
    points: &[u32],
    duration: Duration,
) -> anyhow::Result<Vec<Value>> {
    let reserved = variant == "rtlan";
    let daemons = if reserved {
        vec![
            Rtcd::start(&run.exe, lab, "a", "")?,
            Rtcd::start(&run.exe, lab, "c", "")?,
            Rtcd::start(&run.exe, lab, "e", "")?,
        ]
    } else {
        Vec::new()
    };
    if variant == "bridge-htb" {
        install_htb(lab, sc.test_rate_bps)?;
    }
    let socket = |host: &str| {
        daemons
            .iter()
            .find(|d| {
                d.socket()
                    .to_string_lossy()
                    .contains(&format!("rtcd-{host}."))
            })
            .map(|d| d.socket().to_path_buf())
    };
    let mut out = Vec::new();
    for &n in points {
        eprintln!("fig4: {variant}, {n} interferer(s)");
        let rates = interferer_rates(sc.interference_total_bps, sc.per_link_max_bps, n);
        let lead = Duration::from_millis(800);
        let total = duration + lead + Duration::from_secs(1);
        let mut receivers = Vec::new();
        let mut senders = Vec::new();
        for (i, _) in rates.iter().enumerate() {
            let dst = if i % 2 == 0 { "d" } else { "f" };
            let port = INTERFERER_PORT + u16::try_from(i)?;
            receivers.push(Receiver::start(
                &run.exe,
                lab,
                dst,
                port,
                total + Duration::from_secs(1),
                &[],
            )?);
        }
        let test_rx = Receiver::start(
            &run.exe,
            lab,
            "b",
            TEST_PORT,
            duration + lead + Duration::from_secs(1),
            &[],
        )?;
        std::thread::sleep(Duration::from_millis(300));
        for (i, rate) in rates.iter().enumerate() {
            let (src, dst) = if i % 2 == 0 { ("c", "d") } else { ("e", "f") };
            let stream = Stream {
                to: addr(lab, dst, INTERFERER_PORT + u16::try_from(i)?)?,
                rate: format!("{rate}bit"),
                size: sc.payload,
                duration: total,
                reserve: socket(src),
                shaping: reserved.then(|| "leaky".to_string()),
            };
            senders.push(stream.start(&run.exe, lab, src)?);
        }
        std::thread::sleep(lead);
        let test = Stream {
            to: addr(lab, "b", TEST_PORT)?,
            rate: format!("{}bit", sc.test_rate_bps),
            size: sc.payload,
            duration,
            reserve: socket("a"),
            shaping: reserved.then(|| "leaky".to_string()),
        };
        let sent = test.run(&run.exe, lab, "a")?;
        let report = test_rx.report()?;
        let mut delivered_interference = 0.0;
        for s in senders {
            let _ = s.finish(total + Duration::from_secs(10))?;
        }
        for r in receivers {
            let rep = r.report()?;
            delivered_interference += rep["wire_bps"].as_f64().unwrap_or(0.0);
        }
        let switch = match lab.switch_socket("s1") {
            Some(sock) => port_counters(&rtlan_linux::ctl::request(&sock, "stats")?),
            None => Value::Null,
        };
        let wire = report["wire_bps"].as_f64().unwrap_or(0.0);
        let target = sc.test_rate_bps as f64;
        let deviation_pct = (wire - target) / target * 100.0;
        eprintln!(
            "fig4: {variant} n={n}: test {:.3} Mbit/s ({deviation_pct:+.3} %), interference {:.1} Mbit/s",
            wire / 1e6,
            delivered_interference / 1e6
        );
        out.push(json!({
            "interferers": n,
            "interferer_rates_bps": rates,
            "test_wire_bps": wire,
            "deviation_pct": deviation_pct,
            "test_loss_pct": report["loss_pct"],
            "test_delay_us": report["delay_us"],
            "test_sender": sent,
            "interference_delivered_bps": delivered_interference,
            "switch_ports_cumulative": switch,
        }));
    }
    if let Some(sock) = lab.switch_socket("s1") {
        let stats = rtlan_linux::ctl::request(&sock, "stats")?;
        out.push(json!({"switch_stats_at_end": stats["admission"]}));
    }
    drop(daemons);
    Ok(out)
}

/// The rtlan switch's per-port scheduler and socket counters (cumulative since it started).
fn port_counters(stats: &Value) -> Value {
    let sched = stats["sched_ports"].as_array().cloned().unwrap_or_default();
    let shell = stats["shell"]["ports"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    Value::Array(
        sched
            .iter()
            .map(|p| {
                let i = p["port"].as_u64().and_then(|i| usize::try_from(i).ok());
                let sh = i.and_then(|i| shell.get(i)).cloned().unwrap_or(Value::Null);
                json!({"port": p["port"], "sched": p["sched"],
                    "rx_kernel_drops": sh["rx_kernel_drops"], "tx_frames": sh["tx_frames"]})
            })
            .collect(),
    )
}

/// Replaces the bridge's link-rate qdisc on its port towards b by HTB: 100 Mbit/s in all (same
/// size table as the lab's tbf), the test flow (UDP destination port [`TEST_PORT`]) guaranteed
/// `test_rate` in its own class, everything else in a default class with the rest; both may
/// borrow up to the line rate.
fn install_htb(lab: &Lab, test_rate: u64) -> anyhow::Result<()> {
    let port = lab
        .switch_ports("s1")?
        .into_iter()
        .find(|(_, neighbour)| neighbour == "b")
        .map(|(ifname, _)| ifname)
        .context("s1 has a port towards b")?;
    let line = "100000000bit".to_string();
    let test = format!("{test_rate}bit");
    let rest = format!("{}bit", 100_000_000u64.saturating_sub(test_rate).max(1));
    let dport = TEST_PORT.to_string();
    let commands: Vec<Vec<&str>> = vec![
        vec!["tc", "qdisc", "del", "dev", &port, "root"],
        vec![
            "tc", "qdisc", "add", "dev", &port, "root", "handle", "1:", "stab", "overhead", "24",
            "mpu", "84", "mtu", "2047", "tsize", "2048", "htb", "default", "20",
        ],
        vec![
            "tc", "class", "add", "dev", &port, "parent", "1:", "classid", "1:1", "htb", "rate",
            &line, "ceil", &line,
        ],
        vec![
            "tc", "class", "add", "dev", &port, "parent", "1:1", "classid", "1:10", "htb", "rate",
            &test, "ceil", &line,
        ],
        vec![
            "tc", "class", "add", "dev", &port, "parent", "1:1", "classid", "1:20", "htb", "rate",
            &rest, "ceil", &line,
        ],
        vec![
            "tc", "filter", "add", "dev", &port, "parent", "1:", "protocol", "ip", "prio", "1",
            "u32", "match", "ip", "protocol", "17", "0xff", "match", "ip", "dport", &dport,
            "0xffff", "flowid", "1:10",
        ],
    ];
    for c in &commands {
        exec_ok(lab, "s1", c)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::interferer_rates;

    #[test]
    fn interferers_share_the_total_within_the_per_link_cap() {
        assert_eq!(interferer_rates(100, 50, 1), vec![50]);
        assert_eq!(interferer_rates(100, 50, 2), vec![50, 50]);
        assert_eq!(interferer_rates(100, 50, 8), vec![12; 8]);
        assert_eq!(interferer_rates(100, 60, 4), vec![25; 4]);
    }
}
