//! `rtlan bench bwm`: admission through a running bandwidth manager (Löser/Härtig §3.2
//! "Admission process"; the criterion benchmark of the admission engine measures the engine
//! alone, this measures what a host daemon waits for). A leaf–spine network of 100 switches (the criterion benchmark's) with
//! `--flows` booked connections is written as a state file; the manager restarts from it
//! (re-admitting every booking with all checks), serves on loopback TCP, and a client admits and
//! releases one more flow `--samples` times. Each answer comes after the change was journalled
//! and fdatasync'd (the manager acknowledges only what is durable); the append and the periodic
//! full snapshot write are timed on their own too.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use rtlan_core::bwm::{
    Booking, ConnSpec, LinkSpec, Manager, ManagerConfig, Op, Reply, Request, State, SwitchSpec,
    Topology,
};
use rtlan_linux::bwmd::{save_state, BwmClient, Journal, Server};
use serde::Serialize;

use super::report::Machine;
use crate::kit::progress::{Progress, Step};

const LEAVES: usize = 90;
const SPINES: usize = 10;
const HOSTS_PER_LEAF: usize = 8;

/// What `bench bwm` runs.
#[derive(Debug, Clone)]
pub struct BwmSettings {
    /// Connections booked before measuring.
    pub flows: u32,
    /// Admit/release pairs measured.
    pub samples: u32,
    /// Directory for the state file; `None`: a fresh directory under the system temp dir,
    /// removed afterwards.
    pub dir: Option<PathBuf>,
}

/// Percentiles of one measured quantity, ms.
#[derive(Debug, Serialize)]
struct Summary {
    samples: usize,
    p50_ms: f64,
    p99_ms: f64,
    max_ms: f64,
}

fn summarize(mut v: Vec<f64>) -> Summary {
    v.sort_by(f64::total_cmp);
    let at = |q: f64| {
        v.get(((v.len() as f64 - 1.0) * q).round() as usize)
            .copied()
    };
    Summary {
        samples: v.len(),
        p50_ms: at(0.5).unwrap_or(f64::NAN),
        p99_ms: at(0.99).unwrap_or(f64::NAN),
        max_ms: v.last().copied().unwrap_or(f64::NAN),
    }
}

/// What `bench bwm` measured: its JSON document.
#[derive(Debug, Serialize)]
pub struct BwmReport {
    flows: u32,
    switches: usize,
    restart_s: f64,
    state_file_bytes: u64,
    admit: Summary,
    release: Summary,
    admit_in_process: Summary,
    snapshot: Summary,
    journal_append: Summary,
    state_write: Summary,
    machine: Machine,
}

/// The leaf–spine topology: 90 leaves and 10 spines (1 Gbit/s, t_mux 10 µs, 64 MiB each), 8
/// hosts per leaf.
fn topology() -> Topology {
    let sw = |name: String| SwitchSpec {
        name,
        t_mux_ns: 10_000,
        buffer_bytes: 64 << 20,
    };
    let link = |a: String, b: String| LinkSpec {
        ends: [a, b],
        rate_bps: 1_000_000_000,
    };
    let mut t = Topology::default();
    for l in 0..LEAVES {
        t.switches.push(sw(format!("l{l}")));
        for h in 0..HOSTS_PER_LEAF {
            t.links.push(link(format!("h{l}x{h}"), format!("l{l}")));
        }
        for s in 0..SPINES {
            t.links.push(link(format!("l{l}"), format!("s{s}")));
        }
    }
    for s in 0..SPINES {
        t.switches.push(sw(format!("s{s}")));
    }
    t
}

/// Deterministic host pairs (an LCG), never a host to itself: 100 kbit/s, full frames.
struct Flows(u64);

impl Flows {
    fn next(&mut self, m: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) as usize % m
    }

    fn spec(&mut self) -> ConnSpec {
        loop {
            let (a, ha) = (self.next(LEAVES), self.next(HOSTS_PER_LEAF));
            let (b, hb) = (self.next(LEAVES), self.next(HOSTS_PER_LEAF));
            if (a, ha) != (b, hb) {
                return ConnSpec {
                    src: format!("h{a}x{ha}"),
                    dst: format!("h{b}x{hb}"),
                    rate_bps: 100_000,
                    max_packet: 1514,
                    shaping_interval_us: None,
                    burst_bytes: Some(3028),
                    delay_us: None,
                    host_delay_us: None,
                };
            }
        }
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Books `flows` connections, restarts a manager from them and measures admission.
pub fn run(args: &BwmSettings, progress: Progress<'_>) -> anyhow::Result<BwmReport> {
    let (dir, remove_dir) = match &args.dir {
        Some(d) => (d.clone(), false),
        None => (
            std::env::temp_dir().join(format!("rtlan-bench-bwm-{}", std::process::id())),
            true,
        ),
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let result = measure(args, &dir, progress);
    if remove_dir {
        let _ = std::fs::remove_dir_all(&dir);
    }
    result
}

impl BwmReport {
    /// The JSON document, pretty.
    pub fn json(&self) -> anyhow::Result<String> {
        Ok(serde_json::to_string_pretty(self)?)
    }

    /// The human-readable table.
    pub fn table(&self) -> String {
        let doc = self;
        let mut out = format!(
            "bandwidth manager with {} booked flows on a {}-switch leaf–spine network\n",
            doc.flows, doc.switches
        );
        out += &format!(
            "  restart (re-admit every persisted booking): {:.2} s; state file {:.1} MB\n",
            doc.restart_s,
            doc.state_file_bytes as f64 / 1e6
        );
        for (what, s) in [
            ("admit one more flow (TCP round trip)", &doc.admit),
            ("release it", &doc.release),
            (
                "  in process: the manager's admission",
                &doc.admit_in_process,
            ),
            ("  in process: snapshot of the bookings", &doc.snapshot),
            (
                "  in process: journal append + fdatasync",
                &doc.journal_append,
            ),
            ("  in process: snapshot write + fsync", &doc.state_write),
        ] {
            out += &format!(
                "  {what:<40} p50 {:>7.2} ms  p99 {:>7.2} ms  max {:>7.2} ms  ({} samples)\n",
                s.p50_ms, s.p99_ms, s.max_ms, s.samples
            );
        }
        out
    }
}

fn measure(
    args: &BwmSettings,
    dir: &std::path::Path,
    progress: Progress<'_>,
) -> anyhow::Result<BwmReport> {
    let topo = topology();
    let switches = topo.switches.len();
    let mut flows = Flows(0x2545_f491_4f6c_dd1d);
    let bookings: Vec<Booking> = (1..=u64::from(args.flows))
        .map(|conn| Booking {
            conn,
            spec: flows.spec(),
            owner: rtlan_core::bwm::ANONYMOUS.into(),
        })
        .collect();
    let state_path = dir.join("bwm-state.json");
    let state = State {
        version: 1,
        next_conn: u64::from(args.flows) + 1,
        bookings,
    };
    save_state(&state_path, &state)?;
    let state_file_bytes = std::fs::metadata(&state_path)?.len();

    progress(Step::Message(format!(
        "restarting the manager with {} bookings",
        args.flows
    )));
    let manager = Manager::new(topo, ManagerConfig::default())?;
    let start = Instant::now();
    let server = Server::bind(manager, "127.0.0.1:0", state_path.clone())?;
    let restart_s = start.elapsed().as_secs_f64();
    let addr = server.local_addr()?;
    let stop = Arc::new(AtomicBool::new(false));
    let stop_server = Arc::clone(&stop);
    let thread = std::thread::spawn(move || server.run(&stop_server));
    let outcome = client(args, addr, &mut flows, progress);
    stop.store(true, Ordering::Relaxed);
    match thread.join() {
        Ok(r) => r?,
        Err(_) => bail!("the manager thread panicked"),
    }
    let (admit, release) = outcome?;

    // The parts in process: the manager's own admission (no TCP, no state file), the journal
    // append the server makes per change, and — what it does every COMPACT_EVERY changes and at
    // start — taking a snapshot and writing it durably.
    let mut m = Manager::new(topology(), ManagerConfig::default())?;
    if !m.restore(state.clone()).is_empty() {
        bail!("the manager refused persisted bookings");
    }
    let (mut engine, mut snaps, mut writes) = (Vec::new(), Vec::new(), Vec::new());
    let mut appends = Vec::new();
    let probe = dir.join("probe.json");
    let mut journal = Journal::create(&dir.join("journal-probe.json"), &State::default())?;
    for i in 0..args.samples.min(50) {
        let req = Request {
            id: u64::from(i),
            op: Op::Admit(flows.spec()),
        };
        let t = Instant::now();
        let resp = m.handle_request(rtlan_core::Instant::ZERO, req);
        engine.push(ms(t.elapsed()));
        let Reply::Admitted { conn, .. } = resp.reply else {
            bail!("the manager refused a 100 kbit/s flow: {:?}", resp.reply);
        };
        let changes = m.take_changes();
        let t = Instant::now();
        journal.append(&changes, State::default)?;
        appends.push(ms(t.elapsed()));
        let t = Instant::now();
        let snap = m.snapshot();
        snaps.push(ms(t.elapsed()));
        let t = Instant::now();
        save_state(&probe, &snap)?;
        writes.push(ms(t.elapsed()));
        let release = Request {
            id: u64::from(i),
            op: Op::Release { conn },
        };
        m.handle_request(rtlan_core::Instant::ZERO, release);
    }
    Ok(BwmReport {
        flows: args.flows,
        switches,
        restart_s,
        state_file_bytes,
        admit: summarize(admit),
        release: summarize(release),
        admit_in_process: summarize(engine),
        snapshot: summarize(snaps),
        journal_append: summarize(appends),
        state_write: summarize(writes),
        machine: Machine::this(),
    })
}

type Timings = (Vec<f64>, Vec<f64>);

fn client(
    args: &BwmSettings,
    addr: std::net::SocketAddr,
    flows: &mut Flows,
    progress: Progress<'_>,
) -> anyhow::Result<Timings> {
    let mut c = BwmClient::connect_timeout(addr, Duration::from_secs(30))?;
    progress(Step::Message("admit+release".to_string()));
    progress(Step::Length(u64::from(args.samples)));
    let (mut admit, mut release) = (Vec::new(), Vec::new());
    for _ in 0..args.samples {
        let spec = flows.spec();
        let t = Instant::now();
        let resp = c.admit(spec)?;
        let took = t.elapsed();
        let Reply::Admitted { conn, .. } = resp.reply else {
            bail!("the manager refused a 100 kbit/s flow: {:?}", resp.reply);
        };
        admit.push(ms(took));
        let t = Instant::now();
        let resp = c.release(conn)?;
        release.push(ms(t.elapsed()));
        if !resp.ok {
            bail!("release failed: {:?}", resp.reply);
        }
        progress(Step::Advance(1));
    }
    Ok((admit, release))
}
