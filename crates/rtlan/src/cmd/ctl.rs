//! `rtlan ctl`: the operator's client for every daemon's management socket — switch, router,
//! segment, RETHER agent and bridge, rtcd (Unix sockets) and the bandwidth manager (TCP) — in
//! the one envelope (`docs/mgmt.md`). It sends one operation with its arguments and prints the
//! reply's data as tables (an array of objects is a table; an object's scalar fields are
//! `key: value` lines and each of its arrays of objects a table under its key; columns and fields
//! in key order), or as JSON with
//! `--json`. A refused request prints the daemon's `code: message` and exits 1.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use serde_json::{Map, Value};

/// Arguments of `rtlan ctl`.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
    rtlan ctl --socket /run/rtlan/labs/L/s1.sock stats
    rtlan ctl --socket /run/rtlan/labs/L/s1.sock fdb
    rtlan ctl --socket /run/rtlan/rtcd.sock list
    rtlan ctl --tcp 127.0.0.1:7470 list --json
    rtlan ctl --socket /run/rtlan/br.sock open port=p1 rate=2mbit \\
        'flow={\"protocol\":\"udp\",\"src\":\"198.18.0.1\",\"dst\":\"198.18.1.4\"}'

Each daemon's page lists its operations (docs/switch.md, docs/rtcd.md, docs/bwm.md,
docs/router.md, docs/segment.md, docs/rether-agent.md, docs/rether-bridge.md).")]
pub(crate) struct CtlArgs {
    /// The daemon's Unix control socket.
    #[arg(
        long,
        value_name = "PATH",
        conflicts_with = "tcp",
        required_unless_present = "tcp"
    )]
    socket: Option<PathBuf>,
    /// The daemon's TCP address (`rtlan bwm`), `host:port`.
    #[arg(long, value_name = "ADDR")]
    tcp: Option<String>,
    /// The operation (`stats`, `fdb`, `list`, …).
    op: String,
    /// Arguments as `key=value`; a value that reads as JSON (a number, `true`, an object) is
    /// sent as such, any other as a string.
    #[arg(value_name = "KEY=VALUE")]
    args: Vec<String>,
    /// Print the reply's data as JSON.
    #[arg(long)]
    json: bool,
    /// How long to wait for the daemon (connect, send, reply), in the one unit grammar.
    #[arg(long, default_value = "5s", value_parser = parse_timeout)]
    timeout: Duration,
}

fn parse_timeout(s: &str) -> Result<Duration, String> {
    rtlan_core::units::parse_duration(s).map_err(|e| e.to_string())
}

/// The request object: `op` and the `key=value` arguments.
fn request(op: &str, args: &[String]) -> anyhow::Result<Value> {
    let mut map = Map::new();
    map.insert("op".into(), Value::String(op.to_string()));
    for arg in args {
        let (key, value) = arg
            .split_once('=')
            .with_context(|| format!("argument `{arg}`: expected KEY=VALUE"))?;
        if key.is_empty() || key == "op" || key == "id" {
            anyhow::bail!("argument `{arg}`: the key must be an argument name other than op or id");
        }
        let value = serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.into()));
        map.insert(key.to_string(), value);
    }
    Ok(Value::Object(map))
}

pub(crate) fn run(args: CtlArgs) -> anyhow::Result<ExitCode> {
    let request = request(&args.op, &args.args)?;
    let data = match (&args.socket, &args.tcp) {
        (Some(path), _) => rtlan_linux::ctl::request_json(path, request, args.timeout)?,
        (None, Some(addr)) => rtlan_linux::ctl::request_json_tcp(addr, request, args.timeout)?,
        (None, None) => anyhow::bail!("give --socket PATH or --tcp HOST:PORT"),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&data)?);
    } else {
        print!("{}", render(&data));
    }
    Ok(ExitCode::SUCCESS)
}

/// A value in a table cell: strings bare, everything else as compact JSON.
fn cell(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    }
}

fn is_table(v: &Value) -> bool {
    v.as_array()
        .is_some_and(|a| !a.is_empty() && a.iter().all(Value::is_object))
}

/// An array of objects as a table: one column per key, in first-seen order.
fn table(rows: &[Value]) -> String {
    let mut columns: Vec<&str> = Vec::new();
    for row in rows.iter().filter_map(Value::as_object) {
        for key in row.keys() {
            if !columns.contains(&key.as_str()) {
                columns.push(key);
            }
        }
    }
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            columns
                .iter()
                .map(|c| row.get(*c).map_or_else(String::new, cell))
                .collect()
        })
        .collect();
    let widths: Vec<usize> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            cells
                .iter()
                .map(|r| r[i].chars().count())
                .chain([c.chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |values: Vec<&str>| -> String {
        let mut out: Vec<String> = values
            .iter()
            .zip(&widths)
            .map(|(v, w)| format!("{v:<w$}"))
            .collect();
        if let Some(last) = out.last_mut() {
            *last = last.trim_end().to_string();
        }
        out.join("  ")
    };
    let mut text = line(columns.clone());
    text.push('\n');
    for row in &cells {
        text.push_str(&line(row.iter().map(String::as_str).collect()));
        text.push('\n');
    }
    text
}

/// The reply's data as text (module docs).
fn render(data: &Value) -> String {
    match data {
        Value::Array(rows) if is_table(data) => table(rows),
        Value::Array(rows) if rows.is_empty() => "(none)\n".into(),
        Value::Object(map) => {
            let mut text = String::new();
            let mut tables = Vec::new();
            for (key, value) in map {
                if is_table(value) {
                    tables.push((key, value));
                } else {
                    text.push_str(&format!("{key}: {}\n", cell(value)));
                }
            }
            for (key, value) in tables {
                text.push_str(&format!("\n{key}:\n"));
                text.push_str(&table(value.as_array().map_or(&[][..], Vec::as_slice)));
            }
            text
        }
        Value::String(s) => format!("{s}\n"),
        other => format!(
            "{}\n",
            serde_json::to_string_pretty(other).unwrap_or_default()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_are_json_when_they_read_as_json() {
        let args: Vec<String> = ["port=1", "rate=2mbit", "keep=true", r#"flow={"a":1}"#]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            request("open", &args).unwrap(),
            json!({"op": "open", "port": 1, "rate": "2mbit", "keep": true, "flow": {"a": 1}})
        );
        for bad in ["port", "=1", "op=x", "id=3"] {
            assert!(request("open", &[bad.to_string()]).is_err(), "{bad}");
        }
    }

    #[test]
    fn arrays_of_objects_are_tables_and_objects_list_their_fields() {
        let text = render(&json!([
            {"mac": "02:00:00:00:00:01", "port": 0, "age_ns": 5},
            {"mac": "02:00:00:00:00:02", "port": 1}
        ]));
        let lines: Vec<&str> = text.lines().collect();
        // Columns in key order (the daemons' objects carry no order of their own).
        assert_eq!(lines[0], "age_ns  mac                port");
        assert_eq!(lines[1], "5       02:00:00:00:00:01  0");
        assert_eq!(lines[2], "        02:00:00:00:00:02  1");
        let text = render(&json!({"rx": 3, "mode": "rether", "ports": [{"id": 4}]}));
        assert!(
            text.contains("rx: 3\n") && text.contains("mode: rether\n"),
            "{text}"
        );
        assert!(text.contains("\nports:\nid\n4\n"), "{text}");
        assert_eq!(render(&json!([])), "(none)\n");
        assert_eq!(render(&json!("pong")), "pong\n");
    }
}
