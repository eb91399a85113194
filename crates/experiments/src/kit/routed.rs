//! Routed topologies for the QSR runners (QSR §6, Fig. 5): the paper's testbed of three
//! routers in a row for the lab, and a chain of many routers for the simulator, each with the
//! hosts a runner attaches where it needs them; restarting a lab router with an edited
//! configuration (`[rsvp]` keys the topology format does not set); and frame loss counted from
//! `rtlan recv --arrivals` (a video frame is lost if any of its packets is, QSR §6.2).

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::Context;
use rtlan_lab::Lab;
use rtlan_sim::{FrameLoss, SeqSet};

use crate::labkit::Guarded;

/// A host and the router it hangs off, with its link's rate.
#[derive(Debug, Clone)]
pub struct Attach {
    /// Host name.
    pub host: String,
    /// Router name.
    pub router: String,
    /// Link rate (`"100mbit"`).
    pub rate: String,
}

impl Attach {
    /// `host` on `router` at `rate`.
    pub fn new(host: &str, router: &str, rate: &str) -> Attach {
        Attach {
            host: host.to_string(),
            router: router.to_string(),
            rate: rate.to_string(),
        }
    }
}

/// Routers `names` in a row (each linked to the next at `router_rate`) and the hosts of
/// `attach`, as a topology file (hosts first, in `attach` order; then routers; then links:
/// the hosts' in `attach` order, then the row).
pub fn chain(names: &[String], router_rate: &str, attach: &[Attach]) -> String {
    let mut s = String::new();
    for a in attach {
        s += &format!("[[host]]\nname = \"{}\"\n", a.host);
    }
    for r in names {
        s += &format!("[[router]]\nname = \"{r}\"\n");
    }
    for a in attach {
        s += &format!(
            "[[link]]\nends = [\"{}\", \"{}\"]\nrate = \"{}\"\n",
            a.host, a.router, a.rate
        );
    }
    for pair in names.windows(2) {
        s += &format!(
            "[[link]]\nends = [\"{}\", \"{}\"]\nrate = \"{router_rate}\"\n",
            pair[0], pair[1]
        );
    }
    s
}

/// Routers `names` in a ring: [`chain`] and a link from the last back to the first. Hosts send
/// with TTL 64, so a path may cross at most 63 routers: a chain of 100 is too long end to end,
/// a ring of 100 is not (no shortest path crosses more than 51).
pub fn ring(names: &[String], router_rate: &str, attach: &[Attach]) -> String {
    let mut s = chain(names, router_rate, attach);
    if let (Some(last), Some(first)) = (names.last(), names.first()) {
        if names.len() > 2 {
            s += &format!("[[link]]\nends = [\"{last}\", \"{first}\"]\nrate = \"{router_rate}\"\n");
        }
    }
    s
}

/// `r1 … rN`.
pub fn router_names(n: usize) -> Vec<String> {
    (1..=n).map(|i| format!("r{i}")).collect()
}

/// Loss of a stream of `sent` packets of which `received` arrived, and of its frames, as the
/// QSR experiments report it (percentages of 0 when nothing was sent).
pub fn stream_loss(sent: u64, received: u64, frames: FrameLoss) -> serde_json::Value {
    let pct = |a: u64, b: u64| {
        if b == 0 {
            0.0
        } else {
            a as f64 * 100.0 / b as f64
        }
    };
    let lost = sent.saturating_sub(received);
    serde_json::json!({
        "sent": sent, "received": received, "lost": lost, "loss_pct": pct(lost, sent),
        "frames": frames.frames, "frames_lost": frames.lost,
        "frame_loss_pct": pct(frames.lost, frames.frames),
    })
}

/// The counters (`router_counters`) of each of `routers`, read from their control sockets.
pub fn router_snapshot(
    lab: &Lab,
    routers: &[&str],
) -> anyhow::Result<Vec<serde_json::Map<String, serde_json::Value>>> {
    routers
        .iter()
        .map(|r| {
            let socket = lab.router_socket(r).context("an rtlan router")?;
            let stats = rtlan_linux::ctl::request(&socket, "stats")?;
            Ok(router_counters(&stats["router"]))
        })
        .collect()
}

/// Builds the lab of topology `text` for `experiment` (its name `<tag><pid>`) under the lab
/// lock, records the topology in `results`, runs `cases` on it and takes it down.
pub fn with_lab<T>(
    exe: &Path,
    experiment: &str,
    tag: &str,
    text: &str,
    results: &mut serde_json::Value,
    cases: impl FnOnce(&Lab) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let topology = rtlan_lab::Topology::from_str(text, experiment).context("the testbed")?;
    results["topology"] = text.into();
    eprintln!("{experiment}: waiting for the lab lock");
    let _serial = rtlan_lab::serial_lock()?;
    let name = format!("{tag}{}", std::process::id() % 1_000_000);
    let lab = Lab::up(&topology, &name, &rtlan_lab::LabOptions::new(exe))
        .with_context(|| format!("building lab `{name}`"))?;
    let out = cases(&lab);
    lab.down()?;
    out
}

/// The paper's testbed (QSR Fig. 5) with our names: the video source `a` (clash) on `r3`, the
/// sink `b` (elvis) on `r1`, the row r3 — r2 — r1 (given in the file as r1, r2, r3), and the
/// runner's other hosts.
pub fn testbed(router_rate: &str, host_rate: &str, others: &[Attach]) -> String {
    let mut attach = vec![
        Attach::new("a", "r3", host_rate),
        Attach::new("b", "r1", host_rate),
    ];
    attach.extend_from_slice(others);
    chain(&router_names(3), router_rate, &attach)
}

/// Frames of `per_frame` consecutive sequence numbers among the first `sent`, and how many lost
/// one or more, from the `seq recv_ns sent_ns` lines `rtlan recv --arrivals` wrote.
pub fn frame_loss_from_arrivals(
    arrivals: &Path,
    per_frame: u64,
    sent: u64,
) -> anyhow::Result<FrameLoss> {
    let mut seqs = SeqSet::default();
    for (seq, _, _) in crate::kit::measure::read_arrivals(arrivals)? {
        if seq < sent {
            seqs.insert(seq);
        }
    }
    Ok(seqs.frame_loss(per_frame, sent))
}

/// Restarts the lab's rtlan router `router` on its configuration file as `edit` changes it:
/// reads `<state>/<router>.toml` (what the lab wrote), writes `<state>/<router>-<tag>.toml`,
/// stops the router the lab started and starts `rtlan router --config` on the new file in the
/// router's namespace. Returns once the new router answers on its control socket; the guard
/// stops it (lab teardown would too).
pub fn restart_router(
    exe: &Path,
    lab: &Lab,
    router: &str,
    tag: &str,
    edit: impl FnOnce(&str) -> anyhow::Result<String>,
) -> anyhow::Result<Guarded> {
    let socket = lab
        .router_socket(router)
        .with_context(|| format!("{router} is an rtlan router"))?;
    let old = lab.state_dir().join(format!("{router}.toml"));
    let text = std::fs::read_to_string(&old).with_context(|| format!("{}", old.display()))?;
    let path = lab.state_dir().join(format!("{router}-{tag}.toml"));
    std::fs::write(&path, edit(&text)?).with_context(|| format!("{}", path.display()))?;
    if let Some(pid) = lab.router_pid(router) {
        // SAFETY: kill(2) has no memory-safety preconditions; the lab started this router
        // and recorded its PID, and its socket answers, so it still runs.
        unsafe { libc::kill(libc::pid_t::try_from(pid)?, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(5);
        while Path::new(&format!("/proc/{pid}")).exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let _ = std::fs::remove_file(&socket);
    let log = std::fs::File::create(lab.state_dir().join(format!("{router}-{tag}.log")))?;
    let args = [
        exe.display().to_string(),
        "router".to_string(),
        "--config".to_string(),
        path.display().to_string(),
    ];
    let child = lab
        .exec(router, &args)?
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .with_context(|| format!("starting {router}"))?;
    let process = Guarded::from_child(child, format!("rtlan router {router} ({tag})"));
    let deadline = Instant::now() + Duration::from_secs(30);
    while !(socket.exists() && rtlan_linux::ctl::request(&socket, "ping").is_ok()) {
        anyhow::ensure!(Instant::now() < deadline, "{router} did not come back");
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(process)
}

/// The `[rsvp]` table of a router configuration the lab wrote, with `lines` added to it (the
/// lab writes `[rsvp]` last, empty: the router's defaults).
pub fn with_rsvp_lines(config: &str, lines: &str) -> anyhow::Result<String> {
    let at = config
        .find("[rsvp]")
        .context("the router runs RSVP: its configuration has an [rsvp] table")?;
    let end = at + "[rsvp]".len();
    Ok(format!("{}\n{lines}{}", &config[..end], &config[end..]))
}

/// The counters of a router's `RouterStats` (the control socket's `stats.router`, or the
/// simulator's) that the QSR runners report: forwarding, the switched path (classified at the
/// first router, switched by label, excess demoted) and RSVP's state and timeouts.
pub fn router_counters(stats: &serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    let mut out = serde_json::Map::new();
    let n = |p: &str| {
        stats
            .pointer(p)
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0)
    };
    for key in [
        "forwarded",
        "reserved_in",
        "labelled_switched",
        "demoted_excess",
        "drop_reserved_queue",
        "drop_unknown_label",
        "trapped_rsvp",
    ] {
        out.insert(key.to_string(), n(&format!("/{key}")).into());
    }
    let queue_drops: u64 = stats["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["drop_queue_full"].as_u64())
        .sum();
    out.insert("drop_queue_full".to_string(), queue_drops.into());
    for key in [
        "path_in",
        "resv_in",
        "sent",
        "path_timeouts",
        "resv_timeouts",
        "admission_refused",
    ] {
        out.insert(format!("rsvp_{key}"), n(&format!("/rsvp/{key}")).into());
    }
    out
}

/// `after − before` field by field (counters that only grow).
pub fn counters_since(
    after: &serde_json::Map<String, serde_json::Value>,
    before: &serde_json::Map<String, serde_json::Value>,
) -> serde_json::Map<String, serde_json::Value> {
    after
        .iter()
        .map(|(k, v)| {
            let a = v.as_u64().unwrap_or(0);
            let b = before
                .get(k)
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0);
            (k.clone(), a.saturating_sub(b).into())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtlan_topology::Topology;

    #[test]
    fn the_testbed_is_three_routers_in_a_row_with_the_video_across_all_three() {
        let text = testbed(
            "100mbit",
            "100mbit",
            &[
                Attach::new("c", "r2", "100mbit"),
                Attach::new("d", "r2", "100mbit"),
            ],
        );
        let t = Topology::from_str(&text, "testbed").expect("parses");
        assert_eq!(t.routers.len(), 3);
        assert_eq!(t.hosts.len(), 4);
        // a's gateway is r3, b's is r1; r3 reaches b's segment through r2.
        let r3 = t.router("r3").expect("r3");
        let b = t.host("b").expect("b").ip;
        let route = r3
            .routes
            .iter()
            .find(|r| {
                let mask = u32::MAX << (32 - u32::from(r.prefix_len));
                u32::from(b) & mask == u32::from(r.prefix)
            })
            .expect("r3 routes b's segment");
        let r2 = t.router("r2").expect("r2");
        assert!(r2.ports.iter().any(|p| p.ip == route.gateway));
    }

    #[test]
    fn a_ring_closes_the_chain() {
        let names = router_names(4);
        let text = ring(&names, "10mbit", &[Attach::new("h", "r1", "100mbit")]);
        let t = Topology::from_str(&text, "ring").expect("parses");
        assert_eq!(t.links.len(), 1 + 4);
        assert!(text.ends_with("ends = [\"r4\", \"r1\"]\nrate = \"10mbit\"\n"));
    }

    #[test]
    fn router_counters_sum_ports_and_subtract() {
        let before = serde_json::json!({"forwarded": 5, "ports": [{"drop_queue_full": 1}],
            "rsvp": {"path_timeouts": 1}});
        let after = serde_json::json!({"forwarded": 9, "reserved_in": 3,
            "ports": [{"drop_queue_full": 2}, {"drop_queue_full": 4}],
            "rsvp": {"path_timeouts": 2, "resvs": 1}});
        let (b, a) = (router_counters(&before), router_counters(&after));
        assert_eq!(a["drop_queue_full"], 6);
        let d = counters_since(&a, &b);
        assert_eq!(d["forwarded"], 4);
        assert_eq!(d["drop_queue_full"], 5);
        assert_eq!(d["rsvp_path_timeouts"], 1);
        assert_eq!(d["reserved_in"], 3);
    }

    #[test]
    fn rsvp_lines_go_into_the_rsvp_table() {
        let text = "name = \"r1\"\n[[port]]\nifname = \"p0\"\n\n[rsvp]\n";
        let edited = with_rsvp_lines(text, "protected = false\n").expect("has [rsvp]");
        let v: toml::Value = toml::from_str(&edited).expect("TOML");
        assert_eq!(v["rsvp"]["protected"].as_bool(), Some(false));
        assert!(with_rsvp_lines("name = \"r1\"\n", "x = 1\n").is_err());
    }
}
