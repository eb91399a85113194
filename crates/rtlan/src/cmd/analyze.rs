//! `rtlan analyze FILE [--json]`: worst-case backlog and delay at every switch output port of a
//! network file, end-to-end delay bounds per flow, and the admission verdict — Löser/Härtig,
//! "Low-latency hard real-time communication over switched Ethernet", §2.2 equations (4)–(7)
//! chained over multi-hop paths (`docs/analyze.md`). The file is read by the one topology reader
//! (`rtlan_topology`, network-file rules).
//!
//! Output rounding: bounds are rounded **up** to whole bytes / µs (never below the exact value),
//! estimates to the nearest.

use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use rtlan_calculus::analysis::{analyze_file, Report};
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
}

/// Runs the command.
pub(crate) fn run(args: AnalyzeArgs) -> anyhow::Result<ExitCode> {
    let text =
        std::fs::read_to_string(&args.file).with_context(|| format!("reading {}", args.file))?;
    let report = analyze_named(&text, &args.file)?;
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

/// Reads network-file `text` with the one topology reader (errors start `origin:line:col:`) and
/// analyses it.
pub(crate) fn analyze_named(text: &str, origin: &str) -> anyhow::Result<Report> {
    let file = Topology::network_from_str(text, origin)?.network()?;
    Ok(analyze_file(&file)?)
}

/// [`analyze_named`] for text without a file name (errors start `network file:line:col:`).
#[cfg(test)]
fn analyze_text(text: &str) -> anyhow::Result<Report> {
    analyze_named(text, "network file")
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
    /// The analysis that gave the bound: `tfa`, `fifo-tfa`, `sfa` or `pmoo`.
    method: Option<&'static str>,
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
    use std::fmt::Write;
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
}
