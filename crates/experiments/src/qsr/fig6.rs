//! QSR paper §6.1, Fig. 6: the forwarding rate of the router against the packet size and the
//! depth of the longest-prefix look-up, the rtlan router beside the Linux kernel's forwarding
//! (`kind = "linux-router"`) measured in the same run, reported in kpps and as ratios.
//!
//! The paper measured its trunk forwarding engine (a PowerPC 603e with a DP-trie, §4.1) at
//! 126 Kpps for small packets with a 1-deep look-up and about 96 Kpps 32 deep, and about
//! 150 Mbit/s (ATM overheads included) above 1 KB, where the link is the limit. The *depth*
//! of a DP-trie look-up is the number of trie nodes the walk visits, one per prefix on the way
//! to the longest match; here depth *d* is the number of routes in the table that contain the
//! destination: the connected /24 of the receiver's subnet alone (d = 1), plus d − 1 nested
//! prefixes of the destination spread evenly over the other lengths /1 … /32 (d = 32: every
//! length). The routes are added to the router namespace's kernel table, which the rtlan
//! router mirrors into its FIB (`docs/router.md`) and the kernel router forwards with itself.
//!
//! The measurement is `rtlan bench forward --router`'s (`bench::measure::forwarding_rate`):
//! trafgen floods from host a (pinned to CPU 0) at the router's MAC, host b's interface counts
//! what arrives. Both labs are up at once and measured interleaved: every round visits every
//! point on both, and each figure is the median over the rounds.

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use rtlan_lab::{Lab, LabOptions, Topology};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::bench::forward::topology_text;
use crate::bench::measure::{self, PpsRun, Settings, HOST_A, HOST_B, ROUTER};
use crate::bench::report::{Machine, Variant};
use crate::kit::lab::exec_ok;
use crate::kit::measure::{loadavg, now_utc};
use crate::kit::run::Run;

/// The scenario file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Scenario {
    /// Ethernet frame lengths (FCS included) of the size sweep.
    frame_lens: Vec<u16>,
    /// Look-up depths of the size sweep (the paper's two extremes: 1 and 32).
    size_depths: Vec<u8>,
    /// Look-up depths of the depth sweep, at `depth_frame_len`.
    depths: Vec<u8>,
    /// Frame length of the depth sweep (64: the forwarding loop is the bottleneck).
    depth_frame_len: u16,
    /// Runs per point and router; each figure is the median.
    runs: u32,
    /// Measuring window of one run, seconds.
    seconds: u32,
    /// `--quick`: replaces the sweeps and the run count.
    quick: Quick,
}

/// The smoke test's settings.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Quick {
    frame_lens: Vec<u16>,
    size_depths: Vec<u8>,
    depths: Vec<u8>,
    runs: u32,
    seconds: u32,
}

/// One (frame length, depth) point for one router.
#[derive(Debug, Serialize)]
struct Point {
    variant: Variant,
    frame_len: u16,
    depth: u8,
    /// The prefix lengths of the routes containing the destination.
    prefix_lens: Vec<u8>,
    /// Median over the runs.
    forwarded_kpps: f64,
    /// The median rate in Mbit/s of whole frames (FCS included, no preamble or gap).
    forwarded_mbps: f64,
    /// Median offered rate.
    offered_kpps: f64,
    /// Median frames forwarded per busy CPU-second, thousands.
    kpps_per_busy_cpu: f64,
    runs: Vec<PpsRun>,
}

/// The prefix lengths of the routes containing the destination at look-up depth `depth`: the
/// connected /24 and `depth − 1` of the other 31 lengths, evenly spread, the longest always
/// among them (so every depth above 1 ends the walk at the /32).
pub(crate) fn prefix_lens(depth: u8) -> Vec<u8> {
    let others: Vec<u8> = (1..=32).filter(|&l| l != 24).collect();
    let extra = usize::from(depth.clamp(1, 32)) - 1;
    let mut lens: Vec<u8> = (1..=extra)
        .map(|i| others[(i * others.len()).div_ceil(extra) - 1])
        .collect();
    lens.push(24);
    lens.sort_unstable();
    lens.dedup();
    lens
}

/// `prefix` of `dst` with `len` bits, as `a.b.c.d/len`.
fn prefix_of(dst: Ipv4Addr, len: u8) -> String {
    let mask = if len == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(len))
    };
    format!("{}/{len}", Ipv4Addr::from(u32::from(dst) & mask))
}

/// One router's lab.
struct RouterLab {
    variant: Variant,
    lab: Lab,
    /// The extra prefix lengths installed now.
    installed: Vec<u8>,
}

impl RouterLab {
    fn up(run: &Run, variant: Variant) -> anyhow::Result<RouterLab> {
        let tag = if variant == Variant::RtlanRouter {
            "qf6r"
        } else {
            "qf6k"
        };
        let name = format!("{tag}{}", std::process::id() % 1_000_000);
        let topology = Topology::from_str(&topology_text(variant, None), "qsr-fig6")
            .context("the Fig. 6 topology")?;
        let lab = Lab::up(&topology, &name, &LabOptions::new(&run.exe))
            .with_context(|| format!("building lab `{name}`"))?;
        let ping = rtlan_lab::tools::ping(
            lab.netns(HOST_A)?,
            lab.host_ip(HOST_B)?,
            3,
            Duration::from_millis(100),
        )?;
        anyhow::ensure!(ping.received > 0, "lab `{name}`: a cannot reach b");
        Ok(RouterLab {
            variant,
            lab,
            installed: Vec::new(),
        })
    }

    /// Installs the routes of `depth` in the router's kernel table (removing the others) and,
    /// for the rtlan router, waits until its FIB mirrors them.
    fn set_depth(&mut self, depth: u8) -> anyhow::Result<Vec<u8>> {
        let lens = prefix_lens(depth);
        let want: Vec<u8> = lens.iter().copied().filter(|&l| l != 24).collect();
        let dst = self.lab.host_ip(HOST_B)?;
        let gw = dst.to_string();
        for &len in self.installed.iter().filter(|l| !want.contains(l)) {
            exec_ok(
                &self.lab,
                ROUTER,
                &["ip", "route", "del", &prefix_of(dst, len)],
            )?;
        }
        for &len in want.iter().filter(|l| !self.installed.contains(l)) {
            exec_ok(
                &self.lab,
                ROUTER,
                &["ip", "route", "add", &prefix_of(dst, len), "via", &gw],
            )?;
        }
        self.installed = want;
        if let Some(socket) = self.lab.router_socket(ROUTER) {
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                let routes = rtlan_linux::ctl::request(&socket, "routes")?;
                // The routes that contain the destination, by prefix length.
                let mut covering: Vec<u8> = routes
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|r| r["prefix"].as_str())
                    .filter_map(|p| {
                        let (_, len) = p.split_once('/')?;
                        let len: u8 = len.parse().ok()?;
                        (prefix_of(dst, len) == p).then_some(len)
                    })
                    .collect();
                covering.sort_unstable();
                if covering == lens {
                    break;
                }
                anyhow::ensure!(
                    Instant::now() < deadline,
                    "the rtlan router did not mirror depth {depth}: {covering:?}"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Ok(lens)
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Measures every point on both labs, interleaved: each round visits every point once (the
/// labs one after the other at each), so that a burst of load from elsewhere on the shared
/// machine lands in one run of many points rather than in every run of one. A discarded
/// warm-up flood on each lab comes first.
fn measure_points(
    labs: &mut [RouterLab],
    points: &[(u16, u8)],
    runs: u32,
    seconds: u32,
    trafgen_cpu: Option<usize>,
) -> anyhow::Result<Vec<Point>> {
    let settings = |frame_len: u16| Settings {
        seconds,
        frame_len: usize::from(frame_len),
        trafgen_cpu,
        mps: 0,
        msg_size: 0,
        generator: measure::Generator::Trafgen,
        napi_threads: false,
        napi_threads_baseline: false,
    };
    for l in labs.iter() {
        measure::forwarding_rate(&l.lab, &settings(64))?;
    }
    // runs[point][lab]
    let mut measured: Vec<Vec<Vec<PpsRun>>> = points
        .iter()
        .map(|_| labs.iter().map(|_| Vec::new()).collect())
        .collect();
    let mut lens_of: Vec<Vec<u8>> = vec![Vec::new(); points.len()];
    for round in 1..=runs {
        for (i, &(frame_len, depth)) in points.iter().enumerate() {
            for (k, l) in labs.iter_mut().enumerate() {
                lens_of[i] = l.set_depth(depth)?;
                let r = measure::forwarding_rate(&l.lab, &settings(frame_len))?;
                eprintln!(
                    "qsr-fig6: round {round}: {} {frame_len} B depth {depth}: {:.1} kpps",
                    l.variant.heading(),
                    r.forwarded_pps / 1e3
                );
                measured[i][k].push(r);
            }
        }
    }
    let mut out = Vec::new();
    for (i, &(frame_len, depth)) in points.iter().enumerate() {
        for (k, l) in labs.iter().enumerate() {
            let runs = std::mem::take(&mut measured[i][k]);
            let kpps = median(runs.iter().map(|r| r.forwarded_pps / 1e3).collect());
            out.push(Point {
                variant: l.variant,
                frame_len,
                depth,
                prefix_lens: lens_of[i].clone(),
                forwarded_kpps: kpps,
                forwarded_mbps: kpps * 1e3 * f64::from(frame_len) * 8.0 / 1e6,
                offered_kpps: median(runs.iter().map(|r| r.offered_pps / 1e3).collect()),
                kpps_per_busy_cpu: median(
                    runs.iter()
                        .map(|r| r.forwarded_per_busy_cpu / 1e3)
                        .collect(),
                ),
                runs,
            });
        }
    }
    Ok(out)
}

/// rtlan ÷ kernel per point, on the median rates.
fn ratios(points: &[Point]) -> Vec<serde_json::Value> {
    points
        .iter()
        .filter(|p| p.variant == Variant::RtlanRouter)
        .filter_map(|ours| {
            let base = points.iter().find(|p| {
                p.variant == Variant::KernelRouter
                    && p.frame_len == ours.frame_len
                    && p.depth == ours.depth
            })?;
            Some(json!({
                "frame_len": ours.frame_len,
                "depth": ours.depth,
                "rtlan_kpps": ours.forwarded_kpps,
                "kernel_kpps": base.forwarded_kpps,
                "ratio": ours.forwarded_kpps / base.forwarded_kpps.max(1e-9),
                "ratio_per_busy_cpu": ours.kpps_per_busy_cpu / base.kpps_per_busy_cpu.max(1e-9),
            }))
        })
        .collect()
}

/// Runs the experiment; returns the path of results.json.
pub fn run(run: &Run) -> anyhow::Result<PathBuf> {
    let sc: Scenario = run.load()?;
    let (frame_lens, size_depths, depths, runs, seconds) = if run.quick {
        let q = &sc.quick;
        (&q.frame_lens, &q.size_depths, &q.depths, q.runs, q.seconds)
    } else {
        (
            &sc.frame_lens,
            &sc.size_depths,
            &sc.depths,
            sc.runs,
            sc.seconds,
        )
    };
    // Points grouped by depth, so that routes change once per depth.
    let mut points: Vec<(u16, u8)> = Vec::new();
    for &d in size_depths {
        points.extend(frame_lens.iter().map(|&f| (f, d)));
    }
    for &d in depths {
        if !points.contains(&(sc.depth_frame_len, d)) {
            points.push((sc.depth_frame_len, d));
        }
    }
    points.sort_by_key(|&(f, d)| (d, f));
    points.dedup();
    let machine = Machine::this();
    let trafgen_cpu = (machine.nproc >= 2).then_some(0);
    eprintln!("qsr-fig6: waiting for the lab lock");
    let _serial = rtlan_lab::serial_lock()?;
    let load_before = loadavg();
    let date = now_utc();
    let mut labs = vec![
        RouterLab::up(run, Variant::RtlanRouter)?,
        RouterLab::up(run, Variant::KernelRouter)?,
    ];
    let measured = measure_points(&mut labs, &points, runs, seconds, trafgen_cpu);
    let names: Vec<String> = labs.iter().map(|l| l.lab.name().to_string()).collect();
    for l in labs {
        l.lab.down()?;
    }
    let measured = measured?;
    let results = json!({
        "experiment": "qsr-fig6",
        "paper": "QSR §6.1, Fig. 6",
        "quick": run.quick,
        "date": date,
        "load_before": load_before,
        "load_after": loadavg(),
        "machine": machine,
        "labs": names,
        "runs": runs,
        "seconds": seconds,
        "trafgen_cpu": trafgen_cpu,
        "depth_frame_len": sc.depth_frame_len,
        "paper_kpps": {"depth_1": 126, "depth_32": 96,
            "large_packets_mbps": 150, "note": "trunk FE, OC-3 ATM; read off §6.1's text"},
        "points": measured,
        "ratios": ratios(&measured),
    });
    run.finish(&results)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_counts_the_routes_containing_the_destination() {
        assert_eq!(prefix_lens(1), vec![24]);
        assert_eq!(prefix_lens(2), vec![24, 32]);
        let all = prefix_lens(32);
        assert_eq!(all, (1..=32).collect::<Vec<u8>>());
        for d in [1u8, 2, 4, 8, 16, 24, 32] {
            let lens = prefix_lens(d);
            assert_eq!(lens.len(), usize::from(d), "{d}: {lens:?}");
            assert!(lens.contains(&24));
            assert!(d == 1 || lens.contains(&32), "{d}: {lens:?}");
        }
    }

    #[test]
    fn prefixes_clear_the_host_bits() {
        let b = Ipv4Addr::new(198, 18, 1, 101);
        assert_eq!(prefix_of(b, 32), "198.18.1.101/32");
        assert_eq!(prefix_of(b, 24), "198.18.1.0/24");
        assert_eq!(prefix_of(b, 1), "128.0.0.0/1");
        assert_eq!(prefix_of(b, 0), "0.0.0.0/0");
    }
}
