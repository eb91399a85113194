//! `rtlan bwmctl`: asks a running bandwidth manager (seed 004 §3.2; protocol `docs/bwm.md`) what
//! it has booked, or releases / refreshes bookings by hand — the operator's view of central
//! admission.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand};
use rtlan_core::bwm::{Op, Reply};
use rtlan_core::units::format_rate;
use rtlan_linux::bwmd::BwmClient;

/// Arguments of `rtlan bwmctl`.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples (the manager listening on 198.18.0.1:7470, docs/bwm.md):

    rtlan bwmctl --manager 198.18.0.1:7470 list          # every booking with its current bound
    rtlan bwmctl --manager 198.18.0.1:7470 topology      # per port: booked rate, bounds; buffers
    rtlan bwmctl --manager 198.18.0.1:7470 release 7     # free booking 7
    rtlan bwmctl --manager 198.18.0.1:7470 refresh 7 9   # renew leases of 7 and 9

A manager started with --tokens wants a token in every request: --token, or the environment
variable RTLAN_BWM_TOKEN. A client token lists, releases and refreshes only its principal's
bookings; an operator token all of them.

--json prints the manager's reply line as it came. A refusal or error reply exits 1.")]
pub(crate) struct BwmctlArgs {
    /// The manager's TCP address.
    #[arg(long, short)]
    manager: SocketAddr,
    /// Wait this long for the manager (connect and reply).
    #[arg(long, default_value = "5s", value_parser = rtlan_core::units::parse_duration)]
    timeout: Duration,
    /// Print the reply as JSON.
    #[arg(long)]
    json: bool,
    /// The token to present (default: the environment variable RTLAN_BWM_TOKEN).
    #[arg(long)]
    token: Option<String>,
    /// What to ask.
    #[command(subcommand)]
    what: What,
}

/// The requests.
#[derive(Debug, Subcommand)]
enum What {
    /// Every booking: kind, hosts, rate, bucket, requirement, current end-to-end bound, path.
    List,
    /// The topology with per-port bookings and bounds and per-switch buffer use.
    Topology,
    /// Release a booking.
    Release {
        /// The connection id.
        conn: u64,
    },
    /// Renew the leases of bookings.
    Refresh {
        /// The connection ids.
        #[arg(required = true)]
        conns: Vec<u64>,
    },
}

/// The environment variable holding the token when `--token` is not given.
const TOKEN_ENV: &str = "RTLAN_BWM_TOKEN";

pub(crate) fn run(args: BwmctlArgs) -> anyhow::Result<ExitCode> {
    let token = args
        .token
        .or_else(|| std::env::var(TOKEN_ENV).ok())
        .filter(|t| !t.is_empty());
    let mut client = BwmClient::connect_timeout(args.manager, args.timeout)
        .with_context(|| format!("connecting to the bandwidth manager at {}", args.manager))?
        .with_token(token);
    let op = match args.what {
        What::List => Op::List,
        What::Topology => Op::Topology,
        What::Release { conn } => Op::Release { conn },
        What::Refresh { conns } => Op::Refresh { conns },
    };
    let resp = client.request(op)?;
    if args.json {
        println!("{}", serde_json::to_string(&resp)?);
    } else {
        print!("{}", render(&resp.reply));
    }
    Ok(if resp.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn us(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

/// The human-readable form of a reply.
fn render(reply: &Reply) -> String {
    let mut out = String::new();
    match reply {
        Reply::List { connections } => {
            out += &format!(
                "{:>6}  {:<11} {:<10} {:<8} {:<8} {:>10} {:>9} {:>9} {:>9}  path\n",
                "conn", "kind", "owner", "src", "dst", "rate", "bucket B", "req µs", "bound µs"
            );
            for c in connections {
                let kind = serde_json::to_value(c.kind)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                out += &format!(
                    "{:>6}  {:<11} {:<10} {:<8} {:<8} {:>10} {:>9} {:>9} {:>9}  {}\n",
                    c.conn,
                    kind,
                    c.owner,
                    c.src,
                    c.dst.as_deref().unwrap_or("*"),
                    format_rate(c.rate_bps),
                    c.bucket_bytes,
                    us(c.delay_us),
                    us(c.delay_bound_us),
                    c.path.join(" → ")
                );
            }
        }
        Reply::Topology {
            ports, switches, ..
        } => {
            out += &format!(
                "{:<16} {:>5} {:>12} {:>12} {:>12} {:>10}\n",
                "port", "conns", "booked", "rate", "backlog B", "delay µs"
            );
            for p in ports {
                out += &format!(
                    "{:<16} {:>5} {:>12} {:>12} {:>12} {:>10}\n",
                    format!("{} → {}", p.switch, p.to),
                    p.connections,
                    format_rate(p.booked_bps),
                    format_rate(p.rate_bps),
                    p.backlog_bound_bytes,
                    p.delay_bound_us
                );
            }
            for s in switches {
                out += &format!(
                    "switch {}: {} of {} buffer bytes booked\n",
                    s.name, s.booked_bytes, s.buffer_bytes
                );
            }
        }
        Reply::Released { conn } => out += &format!("released {conn}\n"),
        Reply::Refreshed { renewed, unknown } => {
            out += &format!("renewed {renewed:?}; not held {unknown:?}\n");
        }
        Reply::Error {
            code,
            message,
            violations,
        } => {
            out += &format!("error ({code:?}): {message}\n");
            for v in violations {
                out += &format!("  {}\n", serde_json::to_string(v).unwrap_or_default());
            }
        }
        other => out += &format!("{other:?}\n"),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtlan_core::bwm::{ErrorCode, Violation};

    #[test]
    fn replies_render_readably() {
        let r = render(&Reply::Released { conn: 7 });
        assert_eq!(r, "released 7\n");
        let e = render(&Reply::Error {
            code: ErrorCode::Refused,
            message: "admission refused".into(),
            violations: vec![Violation::Delay {
                conn: None,
                delay_bound_us: 9368,
                delay_us: 9000,
            }],
        });
        assert!(e.starts_with("error (Refused): admission refused"), "{e}");
        assert!(e.contains("9368"), "{e}");
        let r = render(&Reply::Refreshed {
            renewed: vec![1],
            unknown: vec![2],
        });
        assert_eq!(r, "renewed [1]; not held [2]\n");
    }
}
