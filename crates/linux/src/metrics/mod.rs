//! Prometheus metrics of the daemons: a page in the OpenMetrics text format (the Prometheus
//! exposition format, <https://prometheus.io/docs/instrumenting/exposition_formats/>) encoded
//! with `prometheus-client`, served on `GET /metrics` by a small HTTP thread ([`server`]).
//!
//! The daemon's state lives on its data-plane thread, which must never block on a scrape. So
//! the page is rendered there, only when asked: the HTTP thread raises a flag
//! ([`Exporter::wanted`], one relaxed atomic load per loop iteration), the loop renders the
//! page from its counters and hands it over with a `try_lock` ([`Exporter::publish`]) that
//! never waits; the HTTP thread waits a bounded time for it and serves the last page otherwise.
//! Names follow Prometheus conventions: `rtlan_` prefix, unit in the name, `_total` on counters.

pub mod bwm;
pub mod rtcd;
pub mod server;
pub mod switch;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

pub use server::{Exporter, MetricsError};

/// Label pairs of one series.
pub type Labels = Vec<(String, String)>;

/// One page being built: families registered on first use, values set from the daemon's
/// counters (a fresh page each scrape, so a counter's value is the daemon's own count).
#[derive(Default)]
pub struct Page {
    registry: Registry,
    counters: Vec<(String, Family<Labels, Counter>)>,
    gauges: Vec<(String, Family<Labels, Gauge>)>,
}

/// `labels` as owned pairs.
pub fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
        .collect()
}

impl Page {
    /// An empty page.
    pub fn new() -> Page {
        Page::default()
    }

    /// Sets counter `name` (without `_total`, which the encoder appends) with `labels` to
    /// `value`.
    pub fn counter(&mut self, name: &str, help: &str, labels: Labels, value: u64) {
        let family = match self.counters.iter().find(|(n, _)| n == name) {
            Some((_, f)) => f.clone(),
            None => {
                let f = Family::<Labels, Counter>::default();
                self.registry
                    .register(name, help.trim_end_matches('.'), f.clone());
                self.counters.push((name.to_string(), f.clone()));
                f
            }
        };
        family.get_or_create(&labels).inc_by(value);
    }

    /// Sets gauge `name` with `labels` to `value` (saturating at `i64::MAX`).
    pub fn gauge(&mut self, name: &str, help: &str, labels: Labels, value: u64) {
        let family = match self.gauges.iter().find(|(n, _)| n == name) {
            Some((_, f)) => f.clone(),
            None => {
                let f = Family::<Labels, Gauge>::default();
                self.registry
                    .register(name, help.trim_end_matches('.'), f.clone());
                self.gauges.push((name.to_string(), f.clone()));
                f
            }
        };
        family
            .get_or_create(&labels)
            .set(i64::try_from(value).unwrap_or(i64::MAX));
    }

    /// The page in the OpenMetrics text format.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }
}

/// Metric family names in an encoded page (`# TYPE` lines; counters with their `_total`),
/// for checking that a dashboard asks only for what is exported.
pub fn family_names(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| {
            let mut it = l.split(' ');
            let name = it.next()?;
            Some(match it.next()? {
                "counter" => format!("{name}_total"),
                _ => name.to_string(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every metric family the daemons export, from their renderers' source: a name literal
    /// after `.counter(` gets `_total` (OpenMetrics), after `.gauge(` it is as written.
    fn exported_families() -> std::collections::BTreeSet<String> {
        let mut names = std::collections::BTreeSet::new();
        for source in [
            include_str!("switch.rs"),
            include_str!("rtcd.rs"),
            include_str!("bwm.rs"),
        ] {
            for (kind, suffix) in [(".counter(", "_total"), (".gauge(", "")] {
                for (at, _) in source.match_indices(kind) {
                    let rest = &source[at..];
                    let Some(start) = rest.find("\"rtlan_") else {
                        continue;
                    };
                    let name: String = rest[start + 1..]
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    names.insert(format!("{name}{suffix}"));
                }
            }
        }
        names
    }

    /// The Grafana dashboard (dist/grafana/rtlan.json) imports (inputs, panels, targets) and asks
    /// only for metrics the daemons export; it shows every daemon's.
    #[test]
    fn the_dashboard_uses_only_exported_metrics() {
        let exported = exported_families();
        assert!(
            exported.contains("rtlan_port_rx_frames_total"),
            "{exported:?}"
        );
        assert!(exported.contains("rtlan_rtcd_connections"), "{exported:?}");
        let dash: serde_json::Value =
            serde_json::from_str(include_str!("../../../../dist/grafana/rtlan.json"))
                .expect("the dashboard is JSON");
        assert_eq!(dash["__inputs"][0]["name"], "DS_PROMETHEUS");
        let panels = dash["panels"].as_array().expect("panels");
        let mut used = std::collections::BTreeSet::new();
        for panel in panels {
            let targets = panel["targets"].as_array().expect("targets");
            assert!(!targets.is_empty(), "{panel}");
            for t in targets {
                let expr = t["expr"].as_str().expect("a PromQL expression");
                for (at, _) in expr.match_indices("rtlan_") {
                    let name: String = expr[at..]
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    assert!(
                        exported.contains(&name),
                        "{name} in `{expr}` is not exported"
                    );
                    used.insert(name);
                }
            }
        }
        for daemon in ["rtlan_port_", "rtlan_rtcd_", "rtlan_bwm_"] {
            assert!(
                used.iter().any(|n| n.starts_with(daemon)),
                "no {daemon}* panel"
            );
        }
    }

    #[test]
    fn page_encodes_counters_with_total_and_labels() {
        let mut page = Page::new();
        page.counter("rtlan_x_frames", "X.", labels(&[("port", "a")]), 3);
        page.counter("rtlan_x_frames", "X.", labels(&[("port", "b")]), 5);
        page.gauge("rtlan_q_frames", "Q.", labels(&[]), 7);
        let text = page.encode();
        assert!(
            text.contains("rtlan_x_frames_total{port=\"a\"} 3\n"),
            "{text}"
        );
        assert!(
            text.contains("rtlan_x_frames_total{port=\"b\"} 5\n"),
            "{text}"
        );
        // An empty label set is written `{}`, which Prometheus and OpenMetrics parsers accept.
        assert!(text.contains("rtlan_q_frames{} 7\n"), "{text}");
        assert!(text.contains("# HELP rtlan_x_frames X.\n"), "{text}");
        assert!(text.ends_with("# EOF\n"));
        assert_eq!(
            family_names(&text),
            vec!["rtlan_x_frames_total".to_string(), "rtlan_q_frames".into()]
        );
    }
}
