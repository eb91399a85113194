//! Traffic-tool wrappers for the lab (DESIGN.md §5, §6: "guarantees are measured, not asserted").
//!
//! Each wrapper runs a real, unmodified tool inside a named network namespace
//! (`ip netns exec NS …`) and parses its output into a typed result: `iperf3` (TCP/UDP throughput,
//! loss, jitter), `ping` (RTT), `sockperf` (UDP ping-pong latency percentiles), `trafgen`
//! (minimum-size frame floods, the load of the EtheReal evaluation), `socat` (end-to-end integrity
//! checks), `ip -s -j link` (interface counters) and headless `chromium` (web pages the lab's
//! daemons serve, driven through the DevTools protocol).
//!
//! We drive the tools through their command lines rather than re-implementing them: the papers'
//! evaluations — and the users who compare against them — use exactly these tools, and a
//! home-grown load generator would be one more thing to trust. The parsers are pure functions
//! (`parse_*`) tested against outputs captured from the real tools (see `testdata/`).
//!
//! Every spawned tool runs in its own process group under a [`ProcessGuard`], gets a deadline, and
//! is killed (SIGTERM, then SIGKILL) when the deadline passes or the guard is dropped, so a broken
//! network turns into a [`ToolError::TimedOut`] rather than a hung test.

mod chromium;
mod counters;
mod iperf3;
mod ping;
mod process;
mod socat;
mod sockperf;
mod trafgen;

#[cfg(test)]
mod lab_tests;

pub use chromium::{Browser, Page};
pub use counters::{iface_counters, iface_mac, parse_ip_link_json, IfCounters};
pub use iperf3::{
    iperf3_tcp, iperf3_udp, parse_iperf3_tcp, parse_iperf3_udp, Iperf3Opts, Iperf3Result,
    Iperf3Server, Iperf3UdpResult,
};
pub use ping::{parse_ping_output, ping, PingResult, RttStats};
pub use process::{pin_process_group, wait_listening, CapturedOutput, ProcessGuard, Proto, Tool};
pub use socat::{socat_tcp_transfer, socat_udp_transfer};
pub use sockperf::{
    parse_sockperf_output, sockperf_pingpong, sockperf_pingpong_with, LatencyResult, SockperfOpts,
    SockperfServer,
};
pub use trafgen::{
    parse_trafgen_summary, trafgen_config, trafgen_udp, TrafgenPacing, TrafgenRun, TrafgenUdp,
};

use std::time::Duration;

/// Everything that can go wrong while running or parsing a traffic tool.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// A required program is not installed (or not on `PATH`, `/usr/sbin`, `/sbin`).
    #[error(
        "`{tool}` not found; install the Debian package `{package}` (apt-get install {package})"
    )]
    Missing {
        /// Program name.
        tool: &'static str,
        /// Debian package that provides it.
        package: &'static str,
    },
    /// The process could not be started.
    #[error("failed to start `{tool}`: {source}")]
    Spawn {
        /// Program name.
        tool: &'static str,
        /// Underlying OS error.
        #[source]
        source: std::io::Error,
    },
    /// The tool did not finish within its deadline and was killed.
    #[error(
        "`{tool}` did not finish within {timeout:?} and was killed; stderr tail: {stderr_tail}"
    )]
    TimedOut {
        /// Program name.
        tool: &'static str,
        /// The deadline that passed.
        timeout: Duration,
        /// The last part of what it wrote to stderr.
        stderr_tail: String,
    },
    /// The tool exited unsuccessfully.
    #[error("`{tool}` exited with {status}; stderr tail: {stderr_tail}")]
    Failed {
        /// Program name.
        tool: &'static str,
        /// Exit status as text (`exit status: 1`, `signal: 9`, …).
        status: String,
        /// The last part of what it wrote to stderr (or stdout if stderr was empty).
        stderr_tail: String,
    },
    /// The tool ran but reported that the test failed (iperf3's JSON `error`, sockperf's
    /// "no messages were received", …).
    #[error("`{tool}` reported an error: {message}")]
    Reported {
        /// Program name.
        tool: &'static str,
        /// The tool's own message.
        message: String,
    },
    /// The tool's output did not have the expected shape.
    #[error("could not parse `{tool}` output ({reason}); output starts: {snippet}")]
    Unparseable {
        /// Program name.
        tool: &'static str,
        /// What was missing or malformed.
        reason: String,
        /// The start of the output, for the log.
        snippet: String,
    },
    /// A server did not start listening in time.
    #[error(
        "`{tool}` in namespace {ns} was not listening on {proto} port {port} within {timeout:?}"
    )]
    NotListening {
        /// Program name.
        tool: &'static str,
        /// Namespace it was started in.
        ns: String,
        /// Transport protocol.
        proto: Proto,
        /// Port it should listen on.
        port: u16,
        /// How long we waited.
        timeout: Duration,
    },
    /// An argument was out of range or malformed (rejected before running anything).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// Talking to a running tool (its stdin, `/proc`) failed.
    #[error("i/o with `{tool}` failed: {source}")]
    Io {
        /// Program name.
        tool: &'static str,
        /// Underlying OS error.
        #[source]
        source: std::io::Error,
    },
}

/// Result alias for this module.
pub type Result<T, E = ToolError> = std::result::Result<T, E>;

/// The first `max` characters of `text` (on a char boundary), for error messages.
pub(crate) fn snippet(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

/// The last `max` characters of `text` (on a char boundary), for error messages.
pub(crate) fn tail(text: &str, max: usize) -> String {
    let count = text.chars().count();
    text.chars().skip(count.saturating_sub(max)).collect()
}

/// Builds an [`ToolError::Unparseable`] with a snippet of the output.
pub(crate) fn unparseable(
    tool: &'static str,
    reason: impl Into<String>,
    output: &str,
) -> ToolError {
    ToolError::Unparseable {
        tool,
        reason: reason.into(),
        snippet: snippet(output, 300),
    }
}
