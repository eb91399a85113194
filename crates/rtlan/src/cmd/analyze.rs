//! `rtlan analyze FILE [--json]`: worst-case backlog and delay at every switch output port of a
//! network file, end-to-end delay bounds per flow, and the admission verdict — Löser/Härtig,
//! "Low-latency hard real-time communication over switched Ethernet", §2.2 equations (4)–(7)
//! chained over multi-hop paths (`docs/analyze.md`). The file is read by the one topology reader
//! (`rtlan_topology`, network-file rules).
//!
//! Output rounding: bounds are rounded **up** to whole bytes / µs (never below the exact value),
//! estimates to the nearest.
//!
//! `--export-dnc OUT` writes the model it analyses — each switch output port a rate-latency
//! server, each flow its arrival curve and its ports — as plain text for the DiscoDNC driver
//! `tools/dnc/RtlanDnc.java` (format in `docs/analyze.md` § Export for DiscoDNC);
//! `--token-buckets` analyses (and exports) every flow as its token bucket γ_{r,b}.
//!
//! `--lp WHEN` chooses the flows that also get the LP bound (Bouillard & Stea's FIFO tandem
//! program, `rtlan_calculus::lp`): by default those with a deadline every other method misses,
//! as admission does; `all` for every flow whose path fits, `never` for none.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Args, ValueEnum};
use rtlan_calculus::analysis::{self, analyze_file_with, PortKey, Report};
use rtlan_calculus::methods::{LpUse, Method, MethodBounds};
use rtlan_calculus::netfile::NetFile;
use rtlan_calculus::Q;
use rtlan_topology::Topology;
#[cfg(test)]
use serde_json::Value;

/// Arguments of `rtlan analyze`.
#[derive(Debug, Args)]
#[command(after_help = "\
Example:
  rtlan analyze experiments/loser/table4-ts1ms.toml
  rtlan analyze net.toml --json

Exit status: 0 if the flows are admissible, 1 if a constraint is violated or the file is bad.")]
pub(crate) struct AnalyzeArgs {
    /// Network file: [[switch]] name/t_mux/buffer, [[link]] ends/rate/effective_rate,
    /// [[flow]] name/path/rate/max_packet/shaping_interval or burst/host_delay/deadline.
    file: String,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Analyse every flow as its token bucket γ_{r,b} (no peak rate: `max_packet` taken as the
    /// burst), as DiscoDNC's FIFO analyses assume.
    #[arg(long)]
    token_buckets: bool,
    /// Also write the analysed model for the DiscoDNC driver (tools/dnc) to this file.
    #[arg(long, value_name = "OUT")]
    export_dnc: Option<String>,
    /// Print to stderr, as one JSON line, how long reading the file took and the minimum and
    /// median of 20 repetitions of the analysis step.
    #[arg(long)]
    timings: bool,
    /// Which flows also get the LP bound, the tightest and costliest method (1–10 ms per flow,
    /// paths of at most 4 switch ports): those with a deadline every other method misses (as
    /// admission does), all, or never.
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = LpWhen::Deadlines)]
    lp: LpWhen,
}

/// `--lp`: which flows get the LP bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum LpWhen {
    /// Flows with a deadline that every other method misses.
    Deadlines,
    /// Every flow whose path fits.
    All,
    /// None.
    Never,
}

impl From<LpWhen> for LpUse {
    fn from(w: LpWhen) -> LpUse {
        match w {
            LpWhen::Deadlines => LpUse::Deadlines,
            LpWhen::All => LpUse::All,
            LpWhen::Never => LpUse::Never,
        }
    }
}

/// Repetitions of the analysis step behind `--timings`.
const TIMING_REPEATS: usize = 20;

/// Runs the command.
pub(crate) fn run(args: AnalyzeArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let text =
        std::fs::read_to_string(&args.file).with_context(|| format!("reading {}", args.file))?;
    let mut file = read_named(&text, &args.file)?;
    let read = started.elapsed();
    if args.token_buckets {
        as_token_buckets(&mut file);
    }
    if let Some(out) = &args.export_dnc {
        std::fs::write(out, dnc_export(&file)?).with_context(|| format!("writing {out}"))?;
    }
    let lp = LpUse::from(args.lp);
    let report = analyze_file_with(&file, lp)?;
    if args.timings {
        eprintln!("{}", timings_line(read, &file, lp)?);
    }
    if args.json {
        println!("{}", to_json_text(&report)?);
    } else {
        print!("{}", to_table(&report)?);
    }
    Ok(if report.admitted() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Reads network-file `text` with the one topology reader (errors start `origin:line:col:`)
/// into the model the analysis takes.
pub(crate) fn read_named(text: &str, origin: &str) -> anyhow::Result<NetFile> {
    Ok(Topology::network_from_str(text, origin)?.network()?)
}

/// Replaces each flow's T-SPEC by its token bucket: with `M = b` the curve
/// `min(p·t + M, r·t + b)` is `r·t + b` for all `t ≥ 0`.
pub(crate) fn as_token_buckets(file: &mut NetFile) {
    for f in &mut file.flows {
        f.max_packet = f.burst;
    }
}

/// `{"read_us":…,"analysis_us_min":…,"analysis_us_median":…,"repeats":20}`: the read (file to
/// calculus model) as timed by [`run`], and [`TIMING_REPEATS`] runs of the analysis step.
fn timings_line(read: Duration, file: &NetFile, lp: LpUse) -> anyhow::Result<String> {
    let mut runs = Vec::with_capacity(TIMING_REPEATS);
    for _ in 0..TIMING_REPEATS {
        let t = Instant::now();
        std::hint::black_box(analyze_file_with(std::hint::black_box(file), lp)?);
        runs.push(t.elapsed());
    }
    runs.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    Ok(serde_json::json!({
        "read_us": us(read),
        "analysis_us_min": us(runs[0]),
        "analysis_us_median": us(runs[TIMING_REPEATS / 2]),
        "repeats": TIMING_REPEATS,
    })
    .to_string())
}

/// The model [`analyze_file_with`] analyses, as text for DiscoDNC (`tools/dnc/RtlanDnc.java`):
///
/// ```text
/// rtlan-dnc 1
/// server <id> <rate bit/s> <latency s> <name>
/// flow <rate bit/s> <burst bit> <max_packet bit> <peak bit/s> <host_delay s> <id>,<id>,… <name>
/// ```
///
/// One server per switch output port that a flow crosses (id = index in port order, name
/// `switch->next`), rate = the effective rate `C` of its link and latency = the switch's
/// `t_mux`; flows in file order with the T-SPEC `min(peak·t + max_packet, rate·t + burst)` at
/// their first port, the host delay the analysis adds to their bound, and their ports. Numbers
/// are exact: an integer or `numerator/denominator`. A name is the rest of its line.
pub(crate) fn dnc_export(file: &NetFile) -> anyhow::Result<String> {
    let topo = analysis::Topology::from_netfile(file);
    let flows = file
        .flows
        .iter()
        .map(|f| topo.resolve(f))
        .collect::<Result<Vec<_>, _>>()?;
    let mut ids: BTreeMap<PortKey, usize> = BTreeMap::new();
    for h in flows.iter().flat_map(|f| &f.hops) {
        ids.insert(h.port, 0);
    }
    let mut s = String::from("rtlan-dnc 1\n");
    for (id, (key, slot)) in ids.iter_mut().enumerate() {
        *slot = id;
        // resolve() checked that every hop's port exists.
        let (c, t_mux, _) = topo
            .port(*key)
            .context("a resolved flow crosses a port that does not exist")?;
        let name = format!("{}->{}", topo.name(key.switch), topo.name(key.to));
        writeln!(s, "server {id} {c} {t_mux} {name}")?;
    }
    for f in &flows {
        let path: Vec<String> = f.hops.iter().map(|h| ids[&h.port].to_string()).collect();
        let peak = f.hops.first().map_or(Q::ZERO, |h| h.peak);
        writeln!(
            s,
            "flow {} {} {} {} {} {} {}",
            f.rate,
            f.burst,
            f.max_packet,
            peak,
            f.host_delay,
            path.join(","),
            f.name
        )?;
    }
    Ok(s)
}

/// Reads and analyses text without a file name (errors start `network file:line:col:`).
#[cfg(test)]
fn analyze_text(text: &str) -> anyhow::Result<Report> {
    Ok(analysis::analyze_file(&read_named(text, "network file")?)?)
}

fn ceil_us(q: Option<Q>) -> anyhow::Result<Option<i128>> {
    Ok(q.map(|q| q.ceil_micros()).transpose()?)
}

fn ceil_bytes(q: Option<Q>) -> anyhow::Result<Option<i128>> {
    Ok(q.map(|q| q.ceil_bytes()).transpose()?)
}

/// Nearest integer of `q · scale` (halves away from zero; values here are non-negative).
fn nearest(q: Option<Q>, scale: Q) -> anyhow::Result<Option<i128>> {
    Ok(match q {
        Some(q) => Some(q.mul(scale)?.add(Q::new(1, 2)?)?.floor()),
        None => None,
    })
}

fn utilization(q: Q) -> f64 {
    (q.to_f64() * 10_000.0).round() / 10_000.0
}

#[derive(serde::Serialize)]
struct JsonPort<'a> {
    switch: &'a str,
    to: &'a str,
    backlog_bound_bytes: Option<i128>,
    backlog_estimate_bytes: Option<i128>,
    delay_bound_us: Option<i128>,
    delay_estimate_us: Option<i128>,
    utilization: f64,
}

#[derive(serde::Serialize)]
struct JsonFlow<'a> {
    name: &'a str,
    delay_bound_us: Option<i128>,
    /// The analysis that gave the bound: `tfa`, `fifo-tfa`, `sfa`, `pmoo` or `lp`.
    method: Option<&'static str>,
    /// Every method's bound (µs, rounded up) where it gave one, by method name.
    bounds_us: BTreeMap<&'static str, i128>,
}

/// Every finite bound of `b` in whole µs, rounded up, by method name.
fn bounds_us(b: &MethodBounds) -> anyhow::Result<BTreeMap<&'static str, i128>> {
    let mut out = BTreeMap::new();
    for m in Method::ALL {
        if let Some(v) = b.get(m) {
            out.insert(m.name(), v.ceil_micros()?);
        }
    }
    Ok(out)
}

/// Keys in the documented order: ports, flows, admitted, violations.
#[derive(serde::Serialize)]
struct JsonReport<'a> {
    ports: Vec<JsonPort<'a>>,
    flows: Vec<JsonFlow<'a>>,
    admitted: bool,
    violations: Vec<String>,
}

/// The `--json` document, as a struct so that printing keeps the documented key order.
fn json_report(r: &Report) -> anyhow::Result<JsonReport<'_>> {
    let mut ports = Vec::new();
    for p in &r.ports {
        ports.push(JsonPort {
            switch: &p.switch,
            to: &p.to,
            backlog_bound_bytes: ceil_bytes(p.backlog_bound)?,
            backlog_estimate_bytes: nearest(p.backlog_estimate, Q::new(1, 8)?)?,
            delay_bound_us: ceil_us(p.delay_bound)?,
            delay_estimate_us: nearest(p.delay_estimate, Q::int(1_000_000))?,
            utilization: utilization(p.utilization),
        });
    }
    let mut flows = Vec::new();
    for f in &r.flows {
        flows.push(JsonFlow {
            name: &f.name,
            delay_bound_us: ceil_us(f.delay_bound)?,
            method: f.method.map(|m| m.name()),
            bounds_us: bounds_us(&f.bounds)?,
        });
    }
    Ok(JsonReport {
        ports,
        flows,
        admitted: r.admitted(),
        violations: r.violations.iter().map(ToString::to_string).collect(),
    })
}

/// The `--json` document as a value (tests).
#[cfg(test)]
pub(crate) fn to_json(r: &Report) -> anyhow::Result<Value> {
    Ok(serde_json::to_value(json_report(r)?)?)
}

/// The `--json` text: `{"ports":[…],"flows":[…],"admitted":…,"violations":[…]}`.
pub(crate) fn to_json_text(r: &Report) -> anyhow::Result<String> {
    Ok(serde_json::to_string(&json_report(r)?)?)
}

fn cell(v: Option<i128>) -> String {
    v.map_or_else(|| "inf".to_string(), |v| v.to_string())
}

/// The human-readable table.
pub(crate) fn to_table(r: &Report) -> anyhow::Result<String> {
    let mut s = String::new();
    writeln!(
        s,
        "{:<20} {:>14} {:>14} {:>11} {:>11} {:>6}",
        "port", "backlog_B", "backlog_est_B", "delay_us", "delay_est", "util"
    )?;
    for p in &r.ports {
        writeln!(
            s,
            "{:<20} {:>14} {:>14} {:>11} {:>11} {:>6.3}",
            format!("{}->{}", p.switch, p.to),
            cell(ceil_bytes(p.backlog_bound)?),
            cell(nearest(p.backlog_estimate, Q::new(1, 8)?)?),
            cell(ceil_us(p.delay_bound)?),
            cell(nearest(p.delay_estimate, Q::int(1_000_000))?),
            utilization(p.utilization),
        )?;
    }
    writeln!(s)?;
    writeln!(s, "{:<20} {:>14}", "flow", "end-to-end_us")?;
    for f in &r.flows {
        writeln!(s, "{:<20} {:>14}", f.name, cell(ceil_us(f.delay_bound)?))?;
    }
    writeln!(s)?;
    if r.admitted() {
        writeln!(s, "admitted: all constraints hold")?;
    } else {
        writeln!(s, "NOT admitted:")?;
        for v in &r.violations {
            writeln!(s, "  - {v}")?;
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(name: &str) -> String {
        let path = format!(
            "{}/../../experiments/loser/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[test]
    fn table4_in_json_within_2_percent() {
        // Seed 004 Table 4: buffer bound (KByte), t_max, t_est (µs).
        for (file, kb, tmax, test) in [
            ("table4-ts10ms.toml", 111.8, 9357.0, 9731.0),
            ("table4-ts1ms.toml", 15.7, 1380.0, 1345.0),
            ("table4-ts100us.toml", 6.1, 582.0, 506.0),
        ] {
            let j = to_json(&analyze_text(&load(file)).unwrap()).unwrap();
            assert_eq!(j["admitted"], true);
            let port = &j["ports"][0];
            assert_eq!(port["switch"], "s1");
            assert_eq!(port["to"], "B");
            let buf = port["backlog_bound_bytes"].as_f64().unwrap() / 1024.0;
            let est = port["delay_estimate_us"].as_f64().unwrap();
            let flows = j["flows"].as_array().unwrap();
            let a = flows.iter().find(|f| f["name"] == "A-B").unwrap();
            let t = a["delay_bound_us"].as_f64().unwrap();
            for (ours, paper) in [(buf, kb), (t, tmax), (est, test)] {
                assert!(
                    (ours - paper).abs() / paper <= 0.02,
                    "{file}: {ours} vs {paper}"
                );
            }
        }
    }

    #[test]
    fn json_shape_and_rounding() {
        let j = to_json(&analyze_text(&load("table4-ts1ms.toml")).unwrap()).unwrap();
        let text = to_json_text(&analyze_text(&load("table4-ts1ms.toml")).unwrap()).unwrap();
        assert!(
            text.starts_with(
                "{\"ports\":[{\"switch\":\"s1\",\"to\":\"B\",\"backlog_bound_bytes\":"
            ),
            "{text}"
        );
        let tail = text
            .find("],\"flows\":[{\"name\":\"C-B\",\"delay_bound_us\":")
            .unwrap();
        assert!(
            text[tail..].contains("],\"admitted\":true,\"violations\":[]}"),
            "{text}"
        );
        let p = j["ports"][0].as_object().unwrap();
        for k in [
            "switch",
            "to",
            "backlog_bound_bytes",
            "backlog_estimate_bytes",
            "delay_bound_us",
            "delay_estimate_us",
            "utilization",
        ] {
            assert!(p.contains_key(k), "{k}");
        }
        assert_eq!(p.len(), 7);
        // Σb = 6514+5514+4014+64 bytes; eq. (5) adds C·t_mux = 98.6e6·45e-6/8 = 554.625 bytes.
        assert_eq!(p["backlog_estimate_bytes"], 16_106 + 555);
        assert_eq!(j["violations"].as_array().unwrap().len(), 0);
    }

    #[test]
    fn violations_and_bad_files() {
        let over = load("table4-ts10ms.toml").replace("\"40mbit\"", "\"70mbit\"");
        let r = analyze_text(&over).unwrap();
        let j = to_json(&r).unwrap();
        assert_eq!(j["admitted"], false);
        assert!(j["violations"][0]
            .as_str()
            .unwrap()
            .starts_with("rate over capacity at s1->B"));
        assert!(j["ports"][0]["delay_bound_us"].is_null());
        assert!(to_table(&r).unwrap().contains("NOT admitted"));
        let err =
            analyze_text("[[switch]]\nname = \"s\"\nt_mux = \"1us\"\nbuffer = \"1KiB\"\nx = 1\n")
                .unwrap_err();
        assert!(err.to_string().starts_with("network file:5:1:"), "{err}");
    }

    #[test]
    fn dnc_export_writes_the_analysed_ports_and_curves_exactly() {
        let file = read_named(&load("table4-ts1ms.toml"), "t4").unwrap();
        let text = dnc_export(&file).unwrap();
        // C = 98.6 Mbit/s, t_mux = 45 µs = 9/200000 s; b = r·1 ms + 1514 B (in bits); peak = C
        // (every link is Fast Ethernet); host delay 80 µs = 1/12500 s; A-B's burst is 64 B.
        assert_eq!(
            text,
            "rtlan-dnc 1\n\
             server 0 98600000 9/200000 s1->B\n\
             flow 40000000 52112 12112 98600000 1/12500 0 C-B\n\
             flow 32000000 44112 12112 98600000 1/12500 0 D-B\n\
             flow 20000000 32112 12112 98600000 1/12500 0 E-B\n\
             flow 512000 512 512 98600000 1/12500 0 A-B\n"
        );
    }

    #[test]
    fn dnc_export_numbers_ports_in_port_order_along_multi_hop_paths() {
        let text = "[[switch]]\nname = \"a\"\nt_mux = \"10us\"\nbuffer = \"1MiB\"\n\
                    [[switch]]\nname = \"b\"\nt_mux = \"20us\"\nbuffer = \"1MiB\"\n\
                    [[link]]\nends = [\"x\", \"a\"]\nrate = \"1gbit\"\n\
                    [[link]]\nends = [\"a\", \"b\"]\nrate = \"100mbit\"\n\
                    [[link]]\nends = [\"b\", \"y\"]\nrate = \"100mbit\"\n\
                    [[flow]]\nname = \"long one\"\npath = [\"x\", \"a\", \"b\", \"y\"]\n\
                    rate = \"1mbit\"\nmax_packet = 100\nburst = \"1000B\"\n\
                    [[flow]]\nname = \"short\"\npath = [\"y\", \"b\", \"a\", \"x\"]\n\
                    rate = \"2mbit\"\nmax_packet = 100\nburst = \"200B\"\n";
        let mut file = read_named(text, "t").unwrap();
        let lines: Vec<String> = dnc_export(&file)
            .unwrap()
            .lines()
            .map(String::from)
            .collect();
        // Switches are nodes 0 (a) and 1 (b), hosts x = 2, y = 3: ports in (switch, to) order.
        assert_eq!(
            lines[1..5],
            [
                "server 0 100000000 1/100000 a->b",
                "server 1 1000000000 1/100000 a->x",
                "server 2 100000000 1/50000 b->a",
                "server 3 100000000 1/50000 b->y",
            ]
        );
        // The first port's peak is max(C, inbound): 1 Gbit/s in from x, 100 Mbit/s in from y.
        assert_eq!(lines[5], "flow 1000000 8000 800 1000000000 0 0,3 long one");
        assert_eq!(lines[6], "flow 2000000 1600 800 100000000 0 2,1 short");
        as_token_buckets(&mut file);
        let tb = dnc_export(&file).unwrap();
        assert!(
            tb.contains("flow 1000000 8000 8000 1000000000 0 0,3 long one\n"),
            "{tb}"
        );
    }

    #[test]
    fn token_buckets_drop_the_peak_from_the_bound() {
        // Token buckets at one port: eq. (6) with g_max = 0 is Σb/C + t_mux, here
        // (52112+44112+32112+512) bit / 98.6 Mbit/s + 45 µs = 1351.76… µs (+ 80 µs host delay);
        // with the T-SPECs' peaks it is 1310 µs.
        let mut file = read_named(&load("table4-ts1ms.toml"), "t4").unwrap();
        let tspec = to_json(&analysis::analyze_file(&file).unwrap()).unwrap();
        as_token_buckets(&mut file);
        let tb = to_json(&analysis::analyze_file(&file).unwrap()).unwrap();
        assert_eq!(tspec["ports"][0]["delay_bound_us"], 1310);
        assert_eq!(tb["ports"][0]["delay_bound_us"], 1352);
        assert_eq!(tb["flows"][0]["delay_bound_us"], 1432);
    }
}
