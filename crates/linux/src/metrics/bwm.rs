//! The bandwidth manager's page: its bookings by kind, the rate booked on every link of the
//! network, and the requests it refused by the protocol's error code (docs/bwm.md: `bandwidth`,
//! `buffer`, `delay`, `unauthenticated`, ...).

use std::collections::BTreeMap;

use super::{labels, Page};

/// Renders the manager's page from its bookings and its refusal counts.
pub fn render(
    bookings: &[rtlan_core::bwm::ConnInfo],
    refused: &BTreeMap<String, u64>,
    requests: u64,
) -> String {
    let mut page = Page::new();
    let mut by_kind: BTreeMap<String, u64> = BTreeMap::new();
    let mut by_link: BTreeMap<String, u64> = BTreeMap::new();
    for b in bookings {
        let kind = serde_json::to_value(b.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_else(|| format!("{:?}", b.kind));
        *by_kind.entry(kind).or_default() += 1;
        for hop in b.path.windows(2) {
            *by_link
                .entry(format!("{}->{}", hop[0], hop[1]))
                .or_default() += b.rate_bps;
        }
    }
    for (kind, n) in &by_kind {
        page.gauge(
            "rtlan_bwm_bookings",
            "Bookings the manager holds, by kind.",
            labels(&[("kind", kind)]),
            *n,
        );
    }
    for (link, bps) in &by_link {
        page.gauge(
            "rtlan_bwm_booked_bits_per_second",
            "Rate booked on a link of the network (from -> to).",
            labels(&[("link", link)]),
            *bps,
        );
    }
    for (code, n) in refused {
        page.counter(
            "rtlan_bwm_refusals",
            "Requests refused, by the protocol's error code.",
            labels(&[("reason", code)]),
            *n,
        );
    }
    page.counter(
        "rtlan_bwm_requests",
        "Requests answered.",
        labels(&[]),
        requests,
    );
    page.encode()
}
