//! The host daemon's page: its connections by phase, the rate it has reserved against the
//! host's real-time share, the reservations it refused by reason (the protocol's error codes),
//! and its control-link, client and kernel counters.

use super::{labels, Page};

/// What the daemon keeps for its page besides the core.
#[derive(Debug, Clone, Default)]
pub struct RtcdCounters {
    /// Refused requests by the protocol's error code.
    pub refused: std::collections::BTreeMap<&'static str, u64>,
}

/// Renders the host daemon's page.
pub fn render(
    core: &rtlan_core::rtcd::Rtcd,
    report: &crate::rtcd::RunReport,
    counters: &RtcdCounters,
) -> String {
    let mut page = Page::new();
    for (phase, n) in core.phase_counts() {
        page.gauge(
            "rtlan_rtcd_connections",
            "Connections of the host daemon, by phase.",
            labels(&[("phase", crate::rtcd::phase_label(phase))]),
            n,
        );
    }
    page.gauge(
        "rtlan_rtcd_reserved_bits_per_second",
        "Rate reserved by the host's opening and open connections.",
        labels(&[]),
        core.reserved_bps(),
    );
    page.gauge(
        "rtlan_rtcd_realtime_capacity_bits_per_second",
        "The host's real-time share of its link (what local admission allows in all).",
        labels(&[]),
        core.config().realtime_capacity(),
    );
    for (code, n) in &counters.refused {
        page.counter(
            "rtlan_rtcd_refusals",
            "Client requests refused, by the protocol's error code (local_admission, refused, policy, ...).",
            labels(&[("reason", code)]),
            *n,
        );
    }
    for (direction, n) in [
        ("sent", report.control_sent),
        ("received", report.control_received),
    ] {
        page.counter(
            "rtlan_rtcd_control_messages",
            "Control messages on the link to the first switch.",
            labels(&[("direction", direction)]),
            n,
        );
    }
    let errors = [
        ("control_malformed", report.control_malformed),
        ("send", report.send_errors),
        ("netlink", report.netlink_errors),
        ("shaper", report.shaper_errors),
    ];
    for (kind, n) in errors {
        page.counter(
            "rtlan_rtcd_errors",
            "Errors of the host daemon's shell, by kind.",
            labels(&[("kind", kind)]),
            n,
        );
    }
    page.counter(
        "rtlan_rtcd_client_requests",
        "Requests from clients.",
        labels(&[]),
        report.client_requests,
    );
    page.encode()
}
