//! `rtlan bench setup`: how long opening a real-time connection takes, end to end and per hop,
//! with the receiver in the switches' internal ARP caches and without (EtheReal §4.3, "Connection
//! setup overhead": 0.1 ms per hop on an ARP-cache hit, 0.6 ms on a miss, about 8–10 ms end to
//! end).
//!
//! For one switch (`topologies/default.toml`) and three (`topologies/chain3.toml`) it builds the
//! lab, starts the real host daemon `rtlan rtcd` on host `a`, lets the switches exchange HELLOs,
//! then opens and closes connections a → c one after another. The end-to-end time is taken by
//! the client: from writing the `open` request to reading `opened` (what an application waits).
//! The per-hop time is what each switch measured itself (`{"op":"setup-latency"}`, from a
//! SETUP's arrival to forwarding or answering it), the samples added during the case.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context};
use rtlan_core::latency::Histogram;
use rtlan_core::switch::SETUP_LATENCY_SAMPLES;
use rtlan_lab::{Lab, LabOptions, Topology};
use rtlan_linux::rtcd::{OpenParams, RtcdClient};
use serde::Serialize;

use super::report::{rfc3339_utc, Machine};
use crate::kit::progress::{Progress, Step};
use crate::labkit::Rtcd;

/// One switch: hosts a, b, c on s1.
const ONE_SWITCH: &str = include_str!("../../../../topologies/default.toml");
/// Three switches: a on s1, s1–s2–s3, c on s3.
const THREE_SWITCHES: &str = include_str!("../../../../topologies/chain3.toml");
/// The sending host (runs rtcd) and the receiving host.
const SENDER: &str = "a";
/// The receiving host.
const RECEIVER: &str = "c";
/// The receiver's UDP port (nothing needs to listen: a reservation sends no data).
const RECEIVER_PORT: u16 = 7000;
/// Switches send HELLOs every second; wait for one round before the first SETUP.
const HELLO_WAIT: Duration = Duration::from_millis(1500);
/// Least time between two opens of the ARP-miss case. Every miss costs each switch an ARP probe
/// and the receiver's port an ARP reply, and the switch polices both at 100/s per host port
/// (burst 50; `rtlan_core::switch::protect`'s host limits, issue 12): back to back, the misses
/// would exhaust that after about 60 connections and be refused NO_ROUTE — the defence working,
/// not a setup cost. 20 ms keeps the case at 50 opens a second. Not part of any timing.
const MISS_SPACING: Duration = Duration::from_millis(20);

/// The paper's per-hop setup time on an ARP-cache hit, µs (EtheReal §4.3).
const PAPER_HOP_HIT_US: f64 = 100.0;
/// The paper's per-hop setup time on an ARP-cache miss, µs.
const PAPER_HOP_MISS_US: f64 = 600.0;
/// The paper's end-to-end setup time, µs (a range).
const PAPER_E2E_US: (f64, f64) = (8_000.0, 10_000.0);
/// Target: median per-hop setup time on an ARP-cache hit, µs.
pub(super) const TARGET_HOP_US: f64 = 100.0;
/// Target: median end-to-end setup time over three switches, µs.
pub(super) const TARGET_E2E_US: f64 = 2_000.0;

/// What `bench setup` runs.
#[derive(Debug, Clone)]
pub struct SetupSettings {
    /// Connections opened (and closed) per topology and case.
    pub runs: u32,
    /// The rtlan executable (switches and host daemon).
    pub exe: PathBuf,
}

/// Whether the receiver was in the switches' internal ARP caches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Arp {
    /// Caches warm: every switch knows the receiver.
    Hit,
    /// Every switch's cache flushed (`flush-arp`) before each open.
    Miss,
}

impl Arp {
    fn paper_hop_us(self) -> f64 {
        match self {
            Arp::Hit => PAPER_HOP_HIT_US,
            Arp::Miss => PAPER_HOP_MISS_US,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Arp::Hit => "hit",
            Arp::Miss => "miss",
        }
    }
}

/// Median, p99 and largest of a set of samples, µs, from a [`Histogram`]: the largest exact,
/// the percentiles nearest rank rounded up by at most 0.1 % (its module doc).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(super) struct EndToEnd {
    /// Median (nearest rank, to 0.1 %).
    pub(super) median: f64,
    /// 99th percentile (nearest rank, to 0.1 %).
    pub(super) p99: f64,
    /// Largest sample.
    pub(super) max: f64,
}

/// Per-hop figures over every switch of the path, µs (`None` when no switch reported any).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(super) struct PerHop {
    /// Median (nearest rank, to 0.1 %).
    pub(super) median: Option<f64>,
    /// 99th percentile (nearest rank, to 0.1 %).
    pub(super) p99: Option<f64>,
    /// Samples (one per switch per SETUP of this case's kind).
    pub(super) samples: usize,
}

/// One topology and case.
#[derive(Debug, Clone, Serialize)]
pub(super) struct Case {
    /// Switches on the path.
    pub(super) switches: u8,
    /// ARP-cache hit or miss.
    pub(super) arp: Arp,
    /// Client-side open time.
    pub(super) e2e_us: EndToEnd,
    /// Switch-measured SETUP handling time.
    pub(super) per_hop_us: PerHop,
    /// SETUPs of the other kind the switches recorded meanwhile (a miss case expects 0 hits).
    pub(super) per_hop_other_kind: usize,
    /// Connections opened.
    pub(super) runs: usize,
}

/// The targets and whether they are met.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(super) struct Targets {
    /// Largest acceptable median per-hop time on an ARP-cache hit, µs.
    pub(super) hop_hit_median_max_us: f64,
    /// Largest acceptable median end-to-end time over three switches, µs (hit and miss).
    pub(super) e2e_3_switches_median_max_us: f64,
    /// Whether every hit case's median per-hop time is within the target (`None`: not measured).
    pub(super) hop_met: Option<bool>,
    /// Whether every three-switch case's median end-to-end time is within the target.
    pub(super) e2e_met: Option<bool>,
}

/// Whether every item is true; `None` when there is none.
fn all_of(items: impl Iterator<Item = bool>) -> Option<bool> {
    items.fold(None, |acc, ok| Some(acc.unwrap_or(true) && ok))
}

/// Judges the cases against the targets.
pub(super) fn judge(cases: &[Case]) -> Targets {
    let hop_met = all_of(
        cases
            .iter()
            .filter(|c| c.arp == Arp::Hit)
            .map(|c| c.per_hop_us.median.is_some_and(|m| m <= TARGET_HOP_US)),
    );
    let e2e_met = all_of(
        cases
            .iter()
            .filter(|c| c.switches == 3)
            .map(|c| c.e2e_us.median <= TARGET_E2E_US),
    );
    Targets {
        hop_hit_median_max_us: TARGET_HOP_US,
        e2e_3_switches_median_max_us: TARGET_E2E_US,
        hop_met,
        e2e_met,
    }
}

/// The `--json` document.
#[derive(Debug, Serialize)]
struct Document {
    command: Vec<String>,
    date_utc: String,
    machine: Machine,
    cases: Vec<Case>,
    marginal_hop_us: Marginal,
    paper: Paper,
    targets: Targets,
    targets_met: bool,
}

/// [`marginal_hop_us`] for both cases.
#[derive(Debug, Serialize)]
struct Marginal {
    hit: Option<f64>,
    miss: Option<f64>,
}

/// The paper's figures, for the JSON document.
#[derive(Debug, Serialize)]
struct Paper {
    per_hop_hit_us: f64,
    per_hop_miss_us: f64,
    e2e_us: (f64, f64),
}

/// The samples a switch added to one latency ring between two reads (`expected`: how many the
/// case should have added). While the ring is not full, new samples are appended, so they are
/// the tail after the first read's length; once full it rotates, and the last `expected` are the
/// best available.
pub(super) fn added<'a>(before: &[u64], after: &'a [u64], expected: usize) -> &'a [u64] {
    if after.len() < SETUP_LATENCY_SAMPLES {
        &after[before.len().min(after.len())..]
    } else {
        &after[after.len() - expected.min(after.len())..]
    }
}

/// Nanoseconds as microseconds.
fn ns_to_us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

/// The client-side open times; `None` without runs.
fn summarise(e2e: &Histogram) -> Option<EndToEnd> {
    Some(EndToEnd {
        median: ns_to_us(e2e.quantile_ns(0.5)?),
        p99: ns_to_us(e2e.quantile_ns(0.99)?),
        max: ns_to_us(e2e.max_ns()?),
    })
}

/// The switches' SETUP handling times.
fn per_hop(samples: &Histogram) -> PerHop {
    PerHop {
        median: samples.quantile_ns(0.5).map(ns_to_us),
        p99: samples.quantile_ns(0.99).map(ns_to_us),
        // Samples are bounded by the runs of one case times the switches of its path.
        samples: samples.len() as usize,
    }
}

/// `bs1<pid>` / `bs3<pid>`: unique per process, at most 10 characters.
fn lab_name(switches: u8) -> String {
    format!("bs{switches}{}", std::process::id() % 10_000_000)
}

/// A client of the daemon at `socket`, registered with this process's PID.
fn client(socket: &Path) -> anyhow::Result<RtcdClient> {
    let mut client = RtcdClient::connect(socket).context("connecting to rtcd")?;
    client
        .register(std::process::id())
        .context("registering with rtcd")?;
    Ok(client)
}

/// Both setup-latency rings of one switch, ns.
struct Rings {
    hit: Vec<u64>,
    miss: Vec<u64>,
}

fn read_rings(socket: &Path) -> anyhow::Result<Rings> {
    let data = rtlan_linux::ctl::request(socket, "setup-latency").context("setup-latency")?;
    let ring = |key: &str| -> anyhow::Result<Vec<u64>> {
        data[key]
            .as_array()
            .with_context(|| format!("setup-latency reply without `{key}`: {data}"))?
            .iter()
            .map(|v| v.as_u64().with_context(|| format!("bad sample {v}")))
            .collect()
    };
    Ok(Rings {
        hit: ring("hit_ns")?,
        miss: ring("miss_ns")?,
    })
}

/// One lab with rtcd on the sender, ready to open connections.
struct Bench {
    switches: u8,
    sockets: Vec<PathBuf>,
    params: OpenParams,
    client: RtcdClient,
    // Field order is drop order: the client, then the daemon, then the lab.
    _rtcd: Rtcd,
    _lab: Lab,
}

impl Bench {
    fn build(exe: &Path, switches: u8) -> anyhow::Result<Bench> {
        let (text, what) = match switches {
            1 => (ONE_SWITCH, "topologies/default.toml"),
            _ => (THREE_SWITCHES, "topologies/chain3.toml"),
        };
        let topology = Topology::from_str(text, what).context("the benchmark topology")?;
        let name = lab_name(switches);
        let lab = Lab::up(&topology, &name, &LabOptions::new(exe))
            .with_context(|| format!("building lab `{name}`"))?;
        let sockets = lab
            .switches()
            .into_iter()
            .filter_map(|s| lab.switch_socket(s))
            .collect::<Vec<_>>();
        if sockets.len() != usize::from(switches) {
            bail!("lab `{name}`: expected {switches} rtlan switches");
        }
        std::thread::sleep(HELLO_WAIT);
        let rtcd = Rtcd::start(exe, &lab, SENDER, "")?;
        let client = client(rtcd.socket())?;
        let dst_ip: Ipv4Addr = lab.host_ip(RECEIVER)?;
        Ok(Bench {
            switches,
            sockets,
            params: OpenParams {
                dst_ip,
                dst_port: RECEIVER_PORT,
                src_port: 0,
                rate_bps: 1_000_000,
                max_burst: 3000,
                max_packet: 1500,
                delay_us: None,
            },
            client,
            _rtcd: rtcd,
            _lab: lab,
        })
    }

    /// Opens one connection and closes it; returns the open time.
    fn open_close(&mut self) -> anyhow::Result<Duration> {
        let start = Instant::now();
        let opened = self
            .client
            .open(&self.params)
            .context("opening a connection a -> c")?;
        let took = start.elapsed();
        if opened.hops != self.switches {
            bail!(
                "the connection crossed {} switches, expected {}",
                opened.hops,
                self.switches
            );
        }
        self.client.close(opened.conn).context("closing")?;
        Ok(took)
    }

    fn flush_arp(&self) -> anyhow::Result<()> {
        for s in &self.sockets {
            rtlan_linux::ctl::request(s, "flush-arp").context("flush-arp")?;
        }
        Ok(())
    }

    fn rings(&self) -> anyhow::Result<Vec<Rings>> {
        self.sockets.iter().map(|s| read_rings(s)).collect()
    }

    /// Runs one case: `runs` connections opened and closed one after another.
    fn case(&mut self, arp: Arp, runs: u32, progress: Progress<'_>) -> anyhow::Result<Case> {
        let before = self.rings()?;
        let mut e2e = Histogram::new();
        for run in 1..=runs {
            if arp == Arp::Miss {
                std::thread::sleep(MISS_SPACING);
                self.flush_arp()?;
            }
            let took = self.open_close().with_context(|| {
                format!(
                    "{} switch(es), ARP {}, connection {run}",
                    self.switches,
                    arp.name()
                )
            })?;
            e2e.record(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX));
            progress(Step::Advance(1));
        }
        let after = self.rings()?;
        let expected = runs as usize;
        let (mut same, mut other) = (Histogram::new(), 0);
        for (b, a) in before.iter().zip(&after) {
            let (mine, theirs) = match arp {
                Arp::Hit => (added(&b.hit, &a.hit, expected), added(&b.miss, &a.miss, 0)),
                Arp::Miss => (added(&b.miss, &a.miss, expected), added(&b.hit, &a.hit, 0)),
            };
            same.extend(mine.iter().copied());
            other += theirs.len();
        }
        Ok(Case {
            switches: self.switches,
            arp,
            e2e_us: summarise(&e2e).context("no runs")?,
            per_hop_us: per_hop(&same),
            per_hop_other_kind: other,
            runs: expected,
        })
    }
}

/// What `bench setup` measured.
#[derive(Debug)]
pub struct SetupReport {
    started: SystemTime,
    runs: u32,
    cases: Vec<Case>,
    targets: Targets,
}

impl SetupReport {
    /// Whether both targets were met.
    pub fn targets_met(&self) -> bool {
        self.targets.hop_met == Some(true) && self.targets.e2e_met == Some(true)
    }

    /// The JSON document (cases, targets, machine, `command` line), pretty.
    pub fn json(self, command: Vec<String>) -> anyhow::Result<String> {
        let date = rfc3339_utc(
            self.started
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        );
        let targets_met = self.targets_met();
        let doc = Document {
            command,
            date_utc: date,
            machine: Machine::this(),
            marginal_hop_us: Marginal {
                hit: marginal_hop_us(&self.cases, Arp::Hit),
                miss: marginal_hop_us(&self.cases, Arp::Miss),
            },
            cases: self.cases,
            paper: Paper {
                per_hop_hit_us: PAPER_HOP_HIT_US,
                per_hop_miss_us: PAPER_HOP_MISS_US,
                e2e_us: PAPER_E2E_US,
            },
            targets: self.targets,
            targets_met,
        };
        Ok(serde_json::to_string_pretty(&doc)?)
    }

    /// The human-readable report.
    pub fn table(&self) -> String {
        table(&self.cases, &self.targets, self.runs)
    }
}

/// Builds the one- and the three-switch lab in turn and measures both ARP cases on each.
pub fn run(args: &SetupSettings, progress: Progress<'_>) -> anyhow::Result<SetupReport> {
    // Signals must be blocked before any thread exists so the cleanup thread receives them.
    rtlan_lab::install_signal_cleanup()?;
    let started = SystemTime::now();
    // Timing-sensitive: never share the machine with lab tests (DESIGN.md §7).
    let _lock = rtlan_lab::serial_lock()?;
    progress(Step::Length(2 * (1 + 2 * u64::from(args.runs))));
    let mut cases = Vec::new();
    for switches in [1u8, 3] {
        progress(Step::Message(format!("building the {switches}-switch lab")));
        let mut bench = Bench::build(&args.exe, switches)?;
        // Warm the caches: the switches learn c's address and their ARP caches hold it.
        bench.open_close()?;
        progress(Step::Advance(1));
        for arp in [Arp::Hit, Arp::Miss] {
            progress(Step::Message(format!(
                "{switches} switch(es), ARP {}",
                arp.name()
            )));
            cases.push(bench.case(arp, args.runs, progress)?);
        }
        // The lab is removed as `bench` drops (after rtcd is stopped).
    }
    let targets = judge(&cases);
    Ok(SetupReport {
        started,
        runs: args.runs,
        cases,
        targets,
    })
}

fn us(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{v:.1}"))
}

/// What each of the two extra hops of the three-switch path adds to the median end-to-end time,
/// µs: `(median(3 switches) - median(1 switch)) / 2`, for one ARP case (`None` if either is
/// missing). Everything a hop costs is in it (SETUP handling, the links, the switch's wake-ups),
/// so it bounds the per-hop time from above even where a switch's own clock cannot resolve it.
pub(super) fn marginal_hop_us(cases: &[Case], arp: Arp) -> Option<f64> {
    let find = |n: u8| {
        cases
            .iter()
            .find(|c| c.switches == n && c.arp == arp)
            .map(|c| c.e2e_us.median)
    };
    Some((find(3)? - find(1)?) / 2.0)
}

fn verdict(met: Option<bool>) -> &'static str {
    match met {
        Some(true) => "met",
        Some(false) => "NOT met",
        None => "not measured",
    }
}

/// The human-readable report.
pub(super) fn table(cases: &[Case], targets: &Targets, runs: u32) -> String {
    let mut out = format!(
        "Connection setup a -> c, {runs} connections per case opened and closed one after \
         another\n(end to end: client request -> `opened`; per hop: measured inside each \
         switch; µs)\n\n"
    );
    out.push_str(&format!(
        "{:<9}{:<6}{:>20}{:>10}{:>20}{:>9}  {}\n",
        "switches", "ARP", "e2e med/p99/max", "paper", "per hop med/p99", "paper", "n(hop)"
    ));
    for c in cases {
        out.push_str(&format!(
            "{:<9}{:<6}{:>20}{:>10}{:>20}{:>9}  {}\n",
            c.switches,
            c.arp.name(),
            format!(
                "{:.0} / {:.0} / {:.0}",
                c.e2e_us.median, c.e2e_us.p99, c.e2e_us.max
            ),
            format!("{:.0}-{:.0}k", PAPER_E2E_US.0 / 1e3, PAPER_E2E_US.1 / 1e3),
            format!("{} / {}", us(c.per_hop_us.median), us(c.per_hop_us.p99)),
            format!("{:.0}", c.arp.paper_hop_us()),
            c.per_hop_us.samples,
        ));
        if c.per_hop_other_kind > 0 {
            out.push_str(&format!(
                "{:>74} (+{} of the other kind: switches that already knew c)\n",
                "", c.per_hop_other_kind
            ));
        }
    }
    out.push_str(&format!(
        "\nper extra hop, (e2e median over 3 switches - over 1) / 2: hit {} µs, miss {} µs\n",
        us(marginal_hop_us(cases, Arp::Hit)),
        us(marginal_hop_us(cases, Arp::Miss)),
    ));
    out.push_str(&format!(
        "targets: per hop (ARP hit, median) <= {:.0} µs: {}; end to end over 3 switches \
         (median) <= {:.0} µs: {}\n",
        targets.hop_hit_median_max_us,
        verdict(targets.hop_met),
        targets.e2e_3_switches_median_max_us,
        verdict(targets.e2e_met),
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(switches: u8, arp: Arp, e2e_median: f64, hop_median: Option<f64>) -> Case {
        Case {
            switches,
            arp,
            e2e_us: EndToEnd {
                median: e2e_median,
                p99: e2e_median * 2.0,
                max: e2e_median * 3.0,
            },
            per_hop_us: PerHop {
                median: hop_median,
                p99: hop_median,
                samples: 10,
            },
            per_hop_other_kind: 0,
            runs: 10,
        }
    }

    /// A histogram of `us` microseconds.
    fn hist(us: &[u64]) -> Histogram {
        us.iter().map(|&v| v * 1000).collect()
    }

    /// Whether `got` is `exact` or at most 0.1 % above it (the histogram's rounding rule).
    fn near(got: f64, exact: f64) -> bool {
        (exact..=exact * 1.001).contains(&got)
    }

    #[test]
    fn percentile_is_nearest_rank() {
        let v: Vec<u64> = (1..=200).collect();
        let e = summarise(&hist(&v)).expect("samples");
        assert!(near(e.p99, 198.0), "{}", e.p99);
        assert!(near(e.median, 100.0), "{}", e.median);
        assert_eq!(e.max, 200.0);
        let one = summarise(&hist(&[7])).expect("one sample");
        assert_eq!((one.median, one.p99, one.max), (7.0, 7.0, 7.0));
        assert!(summarise(&Histogram::new()).is_none());
    }

    #[test]
    fn added_takes_the_new_tail_or_the_last_expected_when_full() {
        assert_eq!(added(&[1, 2], &[1, 2, 3, 4], 2), &[3, 4]);
        assert_eq!(added(&[1, 2], &[1, 2], 5), &[] as &[u64]);
        assert_eq!(added(&[1, 2, 3], &[], 1), &[] as &[u64], "ring shrank");
        let full: Vec<u64> = (0..SETUP_LATENCY_SAMPLES as u64).collect();
        let last = added(&full, &full, 3);
        assert_eq!(last.len(), 3);
        assert_eq!(last[2], SETUP_LATENCY_SAMPLES as u64 - 1);
    }

    #[test]
    fn summaries_sort_first() {
        let e = summarise(&hist(&[300, 100, 200])).expect("three samples");
        assert!(near(e.median, 200.0), "{}", e.median);
        assert_eq!((e.p99, e.max), (300.0, 300.0));
        // The median is the nearest rank (the second of four), not the mean of the middle two.
        let h = per_hop(&hist(&[5, 1, 3, 2]));
        assert_eq!((h.median, h.p99, h.samples), (Some(2.0), Some(5.0), 4));
        let none = per_hop(&Histogram::new());
        assert_eq!((none.median, none.p99, none.samples), (None, None, 0));
    }

    #[test]
    fn judge_applies_hop_target_to_hits_and_e2e_target_to_three_switches() {
        let good = [
            case(1, Arp::Hit, 5_000.0, Some(50.0)),
            case(1, Arp::Miss, 5_000.0, Some(900.0)),
            case(3, Arp::Hit, 1_000.0, Some(60.0)),
            case(3, Arp::Miss, 1_900.0, Some(400.0)),
        ];
        let t = judge(&good);
        assert_eq!((t.hop_met, t.e2e_met), (Some(true), Some(true)));
        let mut slow_hop = good.clone();
        slow_hop[2].per_hop_us.median = Some(101.0);
        assert_eq!(judge(&slow_hop).hop_met, Some(false));
        let mut slow_e2e = good.clone();
        slow_e2e[3].e2e_us.median = 2_001.0;
        assert_eq!(judge(&slow_e2e).e2e_met, Some(false));
        let mut no_samples = good.clone();
        no_samples[0].per_hop_us.median = None;
        assert_eq!(
            judge(&no_samples).hop_met,
            Some(false),
            "no samples is not a pass"
        );
        assert_eq!(judge(&good[..2]).e2e_met, None, "no three-switch case");
    }

    #[test]
    fn table_shows_every_case_and_the_verdicts() {
        let cases = [
            case(1, Arp::Hit, 900.0, Some(40.0)),
            case(3, Arp::Miss, 2_500.0, None),
        ];
        let text = table(&cases, &judge(&cases), 10);
        assert!(text.contains("900 / 1800 / 2700"), "{text}");
        assert!(text.contains("40.0 / 40.0"), "{text}");
        assert!(text.contains("- / -"), "{text}");
        assert!(text.contains("600"), "the paper's miss figure: {text}");
        assert!(text.contains("<= 2000 µs: NOT met"), "{text}");
        assert!(text.contains("<= 100 µs: met"), "{text}");
    }

    #[test]
    fn marginal_hop_is_half_the_difference_of_medians() {
        let cases = [
            case(1, Arp::Hit, 100.0, None),
            case(3, Arp::Hit, 160.0, None),
            case(3, Arp::Miss, 500.0, None),
        ];
        assert_eq!(marginal_hop_us(&cases, Arp::Hit), Some(30.0));
        assert_eq!(
            marginal_hop_us(&cases, Arp::Miss),
            None,
            "no 1-switch miss case"
        );
    }

    #[test]
    fn topologies_parse_and_lab_names_are_valid() {
        let one = Topology::from_str(ONE_SWITCH, "one").expect("default.toml parses");
        let three = Topology::from_str(THREE_SWITCHES, "three").expect("chain3.toml parses");
        assert_eq!(one.switch_ports("s1").len(), 3);
        assert_eq!(three.switch_ports("s3").len(), 2);
        assert!(three.switch_ports("s2").len() == 3);
        for n in [lab_name(1), lab_name(3)] {
            assert!(rtlan_lab::valid_lab_name(&n), "{n}");
        }
        assert_ne!(lab_name(1), lab_name(3));
    }
}
