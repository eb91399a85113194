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

use std::sync::{Arc, Mutex};

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::MetricType;
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
    histograms: Vec<(String, HistogramFamily)>,
}

/// One histogram series from counts the daemon keeps itself (`prometheus-client`'s own
/// histogram observes values one by one; ours are counted in the core, which has no
/// metrics library).
#[derive(Debug, Clone)]
struct HistogramSeries {
    sum: f64,
    count: u64,
    /// (upper bound, samples in that bucket alone); the last bound is `f64::MAX` (`+Inf`).
    buckets: Vec<(f64, u64)>,
}

/// The series of one histogram family, shared between the page and its registry.
#[derive(Debug, Clone, Default)]
struct HistogramFamily(Arc<Mutex<Vec<(Labels, HistogramSeries)>>>);

impl EncodeMetric for HistogramFamily {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let series = self.0.lock().map_err(|_| std::fmt::Error)?;
        for (labels, h) in series.iter() {
            encoder
                .encode_family(labels)?
                .encode_histogram::<NoLabelSet>(h.sum, h.count, &h.buckets, None)?;
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
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

    /// Sets histogram `name` with `labels` from per-bucket counts: `counts[i]` samples at or
    /// below `bounds[i]` (and above the bound before), one more count for those above the last
    /// bound; `sum` of all samples, in the bounds' unit. The encoder makes the buckets
    /// cumulative and adds `+Inf`.
    pub fn histogram(
        &mut self,
        name: &str,
        help: &str,
        labels: Labels,
        bounds: &[f64],
        counts: &[u64],
        sum: f64,
    ) {
        let family = match self.histograms.iter().find(|(n, _)| n == name) {
            Some((_, f)) => f.clone(),
            None => {
                let f = HistogramFamily::default();
                self.registry
                    .register(name, help.trim_end_matches('.'), f.clone());
                self.histograms.push((name.to_string(), f.clone()));
                f
            }
        };
        let buckets: Vec<(f64, u64)> = bounds
            .iter()
            .copied()
            .chain(std::iter::once(f64::MAX))
            .zip(counts.iter().copied().chain(std::iter::repeat(0)))
            .collect();
        let count = counts.iter().sum();
        let series = HistogramSeries {
            sum,
            count,
            buckets,
        };
        if let Ok(mut all) = family.0.lock() {
            all.push((labels, series));
        };
    }

    /// The page in the OpenMetrics text format.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }
}

/// Metric family names in an encoded page (`# TYPE` lines; counters with their `_total`,
/// histograms as their `_bucket`, `_sum` and `_count` series),
/// for checking that a dashboard asks only for what is exported.
pub fn family_names(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| {
            let mut it = l.split(' ');
            let name = it.next()?;
            Some(match it.next()? {
                "counter" => vec![format!("{name}_total")],
                "histogram" => ["bucket", "sum", "count"]
                    .iter()
                    .map(|s| format!("{name}_{s}"))
                    .collect(),
                _ => vec![name.to_string()],
            })
        })
        .flatten()
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
            for (kind, suffixes) in [
                (".counter(", &["_total"][..]),
                (".gauge(", &[""][..]),
                (".histogram(", &["_bucket", "_sum", "_count"][..]),
            ] {
                for (at, _) in source.match_indices(kind) {
                    let rest = &source[at..];
                    let Some(start) = rest.find("\"rtlan_") else {
                        continue;
                    };
                    let name: String = rest[start + 1..]
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    for suffix in suffixes {
                        names.insert(format!("{name}{suffix}"));
                    }
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

    #[test]
    fn page_encodes_a_histogram_with_cumulative_buckets() {
        let mut page = Page::new();
        let bounds = [0.001, 0.01];
        page.histogram(
            "rtlan_t_seconds",
            "T.",
            labels(&[("kind", "hit")]),
            &bounds,
            &[2, 0, 1],
            0.5,
        );
        page.histogram(
            "rtlan_t_seconds",
            "T.",
            labels(&[("kind", "miss")]),
            &bounds,
            &[0, 1, 0],
            0.002,
        );
        let text = page.encode();
        for line in [
            "# TYPE rtlan_t_seconds histogram\n",
            "rtlan_t_seconds_sum{kind=\"hit\"} 0.5\n",
            "rtlan_t_seconds_count{kind=\"hit\"} 3\n",
            "rtlan_t_seconds_bucket{le=\"0.001\",kind=\"hit\"} 2\n",
            "rtlan_t_seconds_bucket{le=\"0.01\",kind=\"hit\"} 2\n",
            "rtlan_t_seconds_bucket{le=\"+Inf\",kind=\"hit\"} 3\n",
            "rtlan_t_seconds_bucket{le=\"0.01\",kind=\"miss\"} 1\n",
            "rtlan_t_seconds_count{kind=\"miss\"} 1\n",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
        assert_eq!(
            family_names(&text),
            vec![
                "rtlan_t_seconds_bucket".to_string(),
                "rtlan_t_seconds_sum".into(),
                "rtlan_t_seconds_count".into()
            ]
        );
    }
}
