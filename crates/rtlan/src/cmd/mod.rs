//! Subcommands.

pub(crate) mod analyze;
pub(crate) mod bench;
pub(crate) mod bwm;
pub(crate) mod bwmctl;
pub(crate) mod completions;
pub(crate) mod ctl;
pub(crate) mod demo;
pub(crate) mod experiment;
pub(crate) mod flood;
pub(crate) mod lab;
pub(crate) mod recv;
pub(crate) mod reservations;
pub(crate) mod reserve;
pub(crate) mod rether;
pub(crate) mod rether_bridge;
pub(crate) mod router;
pub(crate) mod rtcd;
pub(crate) mod runner;
pub(crate) mod segment;
pub(crate) mod send;
pub(crate) mod signals;
pub(crate) mod sim;
pub(crate) mod switch;
pub(crate) mod tc_config;

/// Prints the per-port counter table of a stopped switch or router: name, rx frames and bytes,
/// tx frames and bytes, frames the port's queue had no room for.
pub(crate) fn print_port_table(rows: impl IntoIterator<Item = (String, [u64; 5])>) {
    println!(
        "  {:<8} {:>12} {:>12} {:>12} {:>12} {:>10}",
        "port", "rx frames", "rx bytes", "tx frames", "tx bytes", "q drops"
    );
    for (name, [rx_frames, rx_bytes, tx_frames, tx_bytes, drops]) in rows {
        println!(
            "  {name:<8} {rx_frames:>12} {rx_bytes:>12} {tx_frames:>12} {tx_bytes:>12} {drops:>10}"
        );
    }
}

/// A daemon's configuration file that could not be used, as the CLI reports it:
/// `FILE:line:column: message`, or `FILE: error` when the problem has no place.
/// Fails with how to create the file when a daemon's configuration file does not exist (the
/// daemons default to `/etc/rtlan/<daemon>.toml`, docs/deploy.md).
pub(crate) fn require_config(path: &std::path::Path, daemon: &str) -> anyhow::Result<()> {
    if path.exists() {
        return Ok(());
    }
    anyhow::bail!(
        "no configuration file at {}: write one (an example is dist/etc/rtlan/{daemon}.toml, \
         every key is in docs/{daemon}.md) or name another with --config",
        path.display()
    )
}

pub(crate) fn config_error(
    path: &std::path::Path,
    e: rtlan_linux::switchd::ConfigError,
) -> anyhow::Error {
    match e {
        rtlan_linux::switchd::ConfigError::Invalid {
            line,
            column,
            message,
        } => anyhow::anyhow!("{}:{line}:{column}: {message}", path.display()),
        // It names the file already.
        e @ rtlan_linux::switchd::ConfigError::Read { .. } => anyhow::anyhow!("{e}"),
        e => anyhow::anyhow!("{}: {e}", path.display()),
    }
}
