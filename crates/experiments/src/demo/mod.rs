//! The guarantee demo: a reserved real-time connection keeps its rate, with no loss, while the
//! rest of the network is flooded (EtheReal §1–§3: the bandwidth guarantee that a plain switch
//! cannot give).
//!
//! The scenario is data ([`Guarantee`]): the embedded topology (`topologies/guarantee.toml`:
//! hosts a, b, c, d on one switch, 100 Mbit/s links), the flows with their start times and
//! lengths, what is measured at the receiver, and the pass criterion. [`run`] hands it to the
//! chosen backend's runner — the lab's in [`lab`] — once with the rtlan switch and once with the
//! Linux bridge; the results ([`Flow`] per flow and switch), their JSON ([`results_json`]), the
//! verdict ([`Criterion::held`]) and the plot ([`plot`], `plot.py`) do not depend on the backend.

pub mod lab;
pub mod sim;

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use serde_json::{json, Value};

use crate::backend::Backend;
use crate::kit::progress::Progress;

/// The guarantee topology, embedded so `rtlan demo` needs no files.
pub const TOPOLOGY: &str = include_str!("../../../../topologies/guarantee.toml");
/// The plot script, run with `/usr/bin/python3 plot.py RESULTS.json OUT.png`.
const PLOT_PY: &str = include_str!("plot.py");

/// Which switch a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SwitchKind {
    /// The rtlan switch, with the host daemon on every host that sends a reserved flow.
    Rtlan,
    /// The Linux bridge (the baseline; it cannot reserve).
    Bridge,
}

impl SwitchKind {
    /// Both, in the order the demo runs them.
    pub const BOTH: [SwitchKind; 2] = [SwitchKind::Rtlan, SwitchKind::Bridge];

    /// The name in the JSON output and in topology files.
    pub fn name(self) -> &'static str {
        match self {
            SwitchKind::Rtlan => "rtlan",
            SwitchKind::Bridge => "linux-bridge",
        }
    }

    /// Whether reservations are made on this switch.
    pub fn reserves(self) -> bool {
        self == SwitchKind::Rtlan
    }
}

/// What a flow sends.
#[derive(Debug, Clone, PartialEq)]
pub enum Traffic {
    /// A UDP probe stream (sequence numbers and send stamps, so loss and one-way delay are
    /// measured) at `rate_bps` of whole frames with `payload`-byte datagrams. With `reserve`, on
    /// a switch that reserves it is reserved through the host daemon and shaped by RTTR's leaky
    /// bucket (EtheReal §3.2, §3.3); elsewhere it is plain paced UDP.
    Udp {
        /// Rate of whole frames on the wire, bits per second.
        rate_bps: f64,
        /// UDP payload bytes.
        payload: u16,
        /// Reserved where the switch can reserve.
        reserve: bool,
    },
    /// One TCP connection, as fast as its window allows; throughput is measured, not loss or
    /// delay.
    Tcp,
}

/// One flow of the scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowSpec {
    /// Its name in tables and JSON (sender → receiver, kind).
    pub name: String,
    /// Sending host.
    pub from: String,
    /// Receiving host.
    pub to: String,
    /// Destination port at the receiver.
    pub port: u16,
    /// What it sends.
    pub traffic: Traffic,
    /// When it starts, from the moment the receivers listen.
    pub start: Duration,
    /// How long it sends.
    pub length: Duration,
}

/// When the demo passes: on `switch`, the flow reserved there arrived within `tolerance` (a
/// fraction) of `rate_bps` with no more than `max_loss_pct` loss.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Criterion {
    /// The switch whose run is judged.
    pub switch: SwitchKind,
    /// The reserved rate, bits per second of whole frames.
    pub rate_bps: f64,
    /// How far the delivered rate may be from it, as a fraction.
    pub tolerance: f64,
    /// Largest acceptable loss, percent.
    pub max_loss_pct: f64,
}

impl Criterion {
    /// Whether the reserved flow of the judged switch's run met the criterion.
    pub fn held(&self, runs: &[Run]) -> bool {
        runs.iter()
            .filter(|r| r.switch == self.switch)
            .flat_map(|r| r.flows.iter())
            .find(|f| f.reserved_bps.is_some())
            .is_some_and(|f| {
                (f.delivered_bps - self.rate_bps).abs() <= self.tolerance * self.rate_bps
                    && f.loss_pct.is_some_and(|l| l <= self.max_loss_pct)
            })
    }
}

/// The guarantee scenario: where it runs does not appear here.
#[derive(Debug, Clone, PartialEq)]
pub struct Guarantee {
    /// Topology text (rtlan switch); the bridge run replaces the switch kind.
    pub topology: String,
    /// The flows, in the order of the results.
    pub flows: Vec<FlowSpec>,
    /// How long the receivers listen, from when they start (everything has drained by then).
    pub listen: Duration,
    /// The pass criterion.
    pub criterion: Criterion,
    /// The rtlan switch's port sockets in the lab (docs/afxdp.md); the simulator has none.
    pub data_plane: rtlan_linux::xdp::DataPlane,
    /// Veth offloads on at every end in the lab (`[lab] offloads`, docs/offload.md): hosts
    /// send TCP super-frames and leave checksums partial, for both switch kinds.
    pub offloads: bool,
    /// The rtlan switch kicks its ports' TX rings from threads of their own (`tx_threads`,
    /// docs/threads.md).
    pub tx_threads: bool,
}

/// The reserved (on the bridge: offered) rate of the a → d stream, bits per second of whole
/// frames.
pub const RESERVED_BPS: f64 = 50e6;
/// How far the reserved flow's delivered rate may be from its reservation, as a fraction.
pub const RATE_TOLERANCE: f64 = 0.03;
/// Payload bytes of the a → d stream (1066 bytes on the wire).
const RT_PAYLOAD: u16 = 1000;
/// Payload bytes of the floods (full frames).
const FLOOD_PAYLOAD: u16 = 1472;
/// The floods' offered rate: each host's full link rate.
const FLOOD_BPS: f64 = 100e6;

impl Guarantee {
    /// The demo with `seconds` of reserved traffic: a 50 Mbit/s stream a → d while b and c flood
    /// d at their full link rate and c also sends TCP to d.
    ///
    /// Timeline (t = 0 when the receivers start): the competitors start at 0.3 s and run
    /// `seconds + 1` s; the 50 Mbit/s stream starts at 0.8 s and runs `seconds` s, so it lies
    /// entirely inside the congestion; the receivers on d stop at `seconds + 3` s, after
    /// everything has drained.
    ///
    /// The TCP flow comes from c, not from a: from a it would share a's host egress (one FIFO
    /// behind the 100 Mbit/s link emulation, which the daemon does not manage for leaky-bucket
    /// streams) with the reserved stream and keep that FIFO full, so the demo would measure a's
    /// host stack (the paper's Fig. 5 question, `rtlan experiment fig5`) instead of the switch.
    /// From c it adds competing traffic at the switch's output port towards d, where the
    /// guarantee is made. It also shares c's own link with c's flood, so it gets little on either
    /// switch (measured: 0–2 Mbit/s on rtlan, 0–15 on the bridge) — it is a competitor here, not
    /// a measured subject.
    pub fn new(seconds: u32) -> Guarantee {
        let secs = Duration::from_secs(u64::from(seconds));
        let competitors = secs + Duration::from_secs(1);
        let early = Duration::from_millis(300);
        let flow = |name: &str, from: &str, port: u16, traffic: Traffic, start, length| FlowSpec {
            name: name.to_string(),
            from: from.to_string(),
            to: "d".to_string(),
            port,
            traffic,
            start,
            length,
        };
        let flood = Traffic::Udp {
            rate_bps: FLOOD_BPS,
            payload: FLOOD_PAYLOAD,
            reserve: false,
        };
        let reserved = Traffic::Udp {
            rate_bps: RESERVED_BPS,
            payload: RT_PAYLOAD,
            reserve: true,
        };
        Guarantee {
            topology: TOPOLOGY.to_string(),
            flows: vec![
                flow(
                    "a→d 50M",
                    "a",
                    5001,
                    reserved,
                    Duration::from_millis(800),
                    secs,
                ),
                flow("b→d flood", "b", 5002, flood.clone(), early, competitors),
                flow("c→d flood", "c", 5003, flood, early, competitors),
                flow("c→d tcp", "c", 5201, Traffic::Tcp, early, competitors),
            ],
            listen: secs + Duration::from_secs(3),
            criterion: Criterion {
                switch: SwitchKind::Rtlan,
                rate_bps: RESERVED_BPS,
                tolerance: RATE_TOLERANCE,
                max_loss_pct: 0.0,
            },
            data_plane: rtlan_linux::xdp::DataPlane::AfPacket,
            offloads: false,
            tx_threads: false,
        }
    }

    /// The topology text for `kind`: the scenario's, with the switch kind replaced for the
    /// bridge.
    pub fn topology_text(&self, kind: SwitchKind) -> anyhow::Result<String> {
        let rtlan = "kind = \"rtlan\"";
        anyhow::ensure!(
            self.topology.matches(rtlan).count() == 1,
            "the scenario's topology names its switch kind exactly once"
        );
        Ok(self
            .topology
            .replace(rtlan, &format!("kind = \"{}\"", kind.name())))
    }

    /// One line saying what runs on `kind` (for progress messages).
    pub fn headline(&self, kind: SwitchKind) -> String {
        let flows: Vec<String> = self
            .flows
            .iter()
            .map(|f| match f.traffic {
                Traffic::Udp { reserve: true, .. } if kind.reserves() => {
                    format!("{} reserved", f.name)
                }
                Traffic::Udp { reserve: true, .. } => format!("{} (plain UDP)", f.name),
                _ => f.name.clone(),
            })
            .collect();
        format!("{}: {}", kind.name(), flows.join(", "))
    }
}

/// What one flow got at its receiver.
#[derive(Debug, Clone, PartialEq)]
pub struct Flow {
    /// Its name (sender → receiver, kind).
    pub name: String,
    /// The reserved rate (only a reserved flow on a switch that reserves).
    pub reserved_bps: Option<f64>,
    /// What the sender offered (whole frames; TCP: what its window allowed, on the wire).
    pub offered_bps: f64,
    /// What arrived (whole frames, first → last arrival).
    pub delivered_bps: f64,
    /// Datagrams sent but not received, percent (`None` for TCP).
    pub loss_pct: Option<f64>,
    /// Largest one-way delay of a probe (`None` for TCP).
    pub max_delay_us: Option<f64>,
    /// 99th percentile of the one-way delay (`None` for TCP; shown in the table, not the JSON).
    pub p99_delay_us: Option<f64>,
    /// The end-to-end delay bound the reservation was granted with (docs/delay.md; `None`
    /// without a reservation).
    pub bound_us: Option<f64>,
}

/// One switch kind's run: what every flow got, and (rtlan in the lab) the switch's own account
/// of each port.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// The switch.
    pub switch: SwitchKind,
    /// The flows, in the scenario's order.
    pub flows: Vec<Flow>,
    /// Per switch port, after the traffic: [`port_counters`] of the switch's `stats` (rtlan in
    /// the lab; `None` for the bridge and the simulator).
    pub ports: Option<Value>,
}

/// The counters of each port of an rtlan switch's `stats` reply that say why a guarantee held
/// or not: what its scheduler sent and dropped of reserved and best-effort traffic, what the
/// policer dropped, and how late the pacer woke. Names are those of `stats` (docs/switch.md).
/// Read after the traffic, when the reservations are already released (so no booked rates).
pub fn port_counters(stats: &Value) -> Value {
    let shell = stats["shell"]["ports"].as_array();
    let ports: Vec<Value> = stats["sched_ports"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|p| {
            let i = p["port"].as_u64().unwrap_or(u64::MAX);
            let ifname = shell
                .and_then(|s| s.get(usize::try_from(i).ok()?))
                .map_or(Value::Null, |s| s["ifname"].clone());
            let sched = &p["sched"];
            json!({
                "port": p["port"],
                "ifname": ifname,
                "rt_frames_sent": sched["rt_frames_sent"],
                "rt_frames_dropped": sched["rt_frames_dropped"],
                "nrt_frames_sent": sched["nrt_frames_sent"],
                "nrt_frames_dropped": sched["nrt_frames_dropped"],
                "policer_dropped_frames": p["meter"]["dropped_frames"],
                "deadline_misses": sched["deadline_misses"],
                "late_sends": sched["late_sends"],
                "late_max_ns": sched["late_max_ns"],
            })
        })
        .collect();
    Value::Array(ports)
}

/// Runs `scenario` on `backend`, once per switch kind (rtlan first, then the bridge). The lab
/// runner needs root and the rtlan executable `exe`; the simulator runs only the rtlan switch
/// (the Linux bridge is not modelled), with seed 1.
pub fn run(
    backend: Backend,
    scenario: &Guarantee,
    exe: &Path,
    progress: Progress<'_>,
) -> anyhow::Result<Vec<Run>> {
    if backend == Backend::Sim {
        return sim::run(scenario, 1);
    }
    rtlan_lab::install_signal_cleanup()?;
    lab::run_both(scenario, exe, progress)
}

/// `{"runs":[{"switch":…,"flows":[{"name","reserved_bps","delivered_bps","loss_pct",
/// "max_delay_us","bound_us"}],"ports":[…] or null}]}` (`ports`: [`port_counters`]).
pub fn results_json(runs: &[Run]) -> Value {
    let runs: Vec<Value> = runs
        .iter()
        .map(|run| {
            let flows: Vec<Value> = run
                .flows
                .iter()
                .map(|f| {
                    json!({
                        "name": f.name,
                        "reserved_bps": f.reserved_bps,
                        "delivered_bps": f.delivered_bps,
                        "loss_pct": f.loss_pct,
                        "max_delay_us": f.max_delay_us,
                        "bound_us": f.bound_us,
                    })
                })
                .collect();
            json!({
                "switch": run.switch.name(),
                "flows": flows,
                "ports": run.ports.clone().unwrap_or(Value::Null),
            })
        })
        .collect();
    json!({ "runs": runs })
}

/// Runs the embedded plot script on `doc` (the [`results_json`] document), writing `out`.
pub fn plot(doc: &Value, out: &Path) -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("rtlan-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let result = (|| {
        let script = dir.join("plot.py");
        let results = dir.join("results.json");
        std::fs::write(&script, PLOT_PY)?;
        std::fs::write(&results, serde_json::to_string(doc)?)?;
        let output = std::process::Command::new("/usr/bin/python3")
            .arg(&script)
            .arg(&results)
            .arg(out)
            .output()
            .context("running /usr/bin/python3")?;
        anyhow::ensure!(
            output.status.success(),
            "plot.py failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(reserved: Option<f64>, delivered: f64, loss: f64) -> Flow {
        Flow {
            name: "a→d 50M".to_string(),
            reserved_bps: reserved,
            offered_bps: 50e6,
            delivered_bps: delivered,
            loss_pct: Some(loss),
            max_delay_us: Some(100.0),
            p99_delay_us: Some(90.0),
            bound_us: Some(400.0),
        }
    }

    #[test]
    fn the_guarantee_needs_the_rate_within_3_percent_and_no_loss() {
        let criterion = Guarantee::new(10).criterion;
        let run = |switch, f: Flow| Run {
            switch,
            flows: vec![f],
            ports: None,
        };
        let held = |f: Flow| criterion.held(&[run(SwitchKind::Rtlan, f)]);
        assert!(held(flow(Some(50e6), 49.0e6, 0.0)));
        assert!(!held(flow(Some(50e6), 48.0e6, 0.0)));
        assert!(!held(flow(Some(50e6), 52.0e6, 0.0)));
        assert!(!held(flow(Some(50e6), 50.0e6, 0.01)));
        // Only the rtlan run counts, and only its reserved flow.
        assert!(!held(flow(None, 50e6, 0.0)));
        assert!(!criterion.held(&[run(SwitchKind::Bridge, flow(Some(50e6), 50e6, 0.0))]));
    }

    #[test]
    fn json_has_exactly_the_documented_shape() {
        let mut tcp = flow(None, 20e6, 0.0);
        tcp.loss_pct = None;
        tcp.max_delay_us = None;
        let doc = results_json(&[Run {
            switch: SwitchKind::Bridge,
            flows: vec![flow(None, 20e6, 60.0), tcp],
            ports: None,
        }]);
        let keys: Vec<&String> = doc.as_object().expect("an object").keys().collect();
        assert_eq!(keys, ["runs"]);
        let run = &doc["runs"][0];
        assert_eq!(run["switch"], "linux-bridge");
        assert!(run["ports"].is_null(), "the bridge has no counters of ours");
        let f = run["flows"][1].as_object().expect("a flow object");
        let mut keys: Vec<&str> = f.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "bound_us",
                "delivered_bps",
                "loss_pct",
                "max_delay_us",
                "name",
                "reserved_bps"
            ]
        );
        assert!(f["loss_pct"].is_null() && f["reserved_bps"].is_null());
        assert_eq!(run["flows"][0]["loss_pct"], 60.0);
    }

    #[test]
    fn the_bridge_topology_differs_only_in_the_switch_kind() {
        let sc = Guarantee::new(10);
        let rtlan = sc.topology_text(SwitchKind::Rtlan).expect("rtlan text");
        let bridge = sc.topology_text(SwitchKind::Bridge).expect("bridge text");
        assert_eq!(rtlan, TOPOLOGY);
        assert!(bridge.contains("kind = \"linux-bridge\""));
        assert!(!bridge.contains("kind = \"rtlan\""));
        assert_eq!(rtlan.lines().count(), bridge.lines().count());
        let t =
            rtlan_lab::Topology::from_str(&bridge, "bridge").expect("the bridge topology parses");
        drop(t);
    }

    #[test]
    fn the_scenario_keeps_the_reserved_stream_inside_the_congestion() {
        let sc = Guarantee::new(4);
        let reserved: Vec<&FlowSpec> = sc
            .flows
            .iter()
            .filter(|f| matches!(f.traffic, Traffic::Udp { reserve: true, .. }))
            .collect();
        assert_eq!(reserved.len(), 1, "one reserved flow");
        let rt = reserved[0];
        assert_eq!((rt.from.as_str(), rt.to.as_str()), ("a", "d"));
        for other in sc.flows.iter().filter(|f| f.name != rt.name) {
            assert!(other.start < rt.start, "{} starts first", other.name);
            assert!(
                other.start + other.length >= rt.start + rt.length,
                "{} outlasts the reserved stream",
                other.name
            );
            assert!(other.start + other.length < sc.listen);
        }
        // Receivers are told apart by port.
        let mut ports: Vec<u16> = sc.flows.iter().map(|f| f.port).collect();
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), sc.flows.len());
        assert_eq!(sc.criterion.rate_bps, RESERVED_BPS);
        assert!(sc.headline(SwitchKind::Rtlan).contains("a→d 50M reserved"));
        assert!(sc
            .headline(SwitchKind::Bridge)
            .contains("a→d 50M (plain UDP)"));
    }
}
