//! Reads the network file of `rtlan analyze` (issue 5 item 2; `docs/bwm.md`) into the manager's
//! [`Topology`]: `[[switch]]` tables (`name`, `t_mux`, `buffer`) and `[[link]]` tables (`ends`,
//! `rate`, optional `effective_rate`, which the bounds then use). Other tables (`[[flow]]`,
//! `[[host]]`, …) and unknown keys are ignored, so the same file serves both tools.

use std::path::Path;

use rtlan_core::bwm::{LinkSpec, SwitchSpec, Topology};
use rtlan_core::units::{parse_duration, parse_rate, UnitError};
use serde::Deserialize;

/// A network file that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum NetworkError {
    /// The file could not be read.
    #[error("reading {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// Not valid TOML or a field has the wrong type.
    #[error("network file: {0}")]
    Toml(String),
    /// A rate or duration is malformed.
    #[error("{what}: {source}")]
    Unit {
        /// Which field.
        what: String,
        /// The cause.
        source: UnitError,
    },
    /// A buffer size is malformed.
    #[error("switch `{0}`: bad buffer size `{1}` (expected e.g. 131072, \"128KiB\", \"64KB\")")]
    Size(String, String),
}

#[derive(Deserialize)]
struct RawNetwork {
    #[serde(default)]
    switch: Vec<RawSwitch>,
    #[serde(default)]
    link: Vec<RawLink>,
}

#[derive(Deserialize)]
struct RawSwitch {
    name: String,
    #[serde(default = "default_t_mux")]
    t_mux: String,
    #[serde(default = "default_buffer")]
    buffer: String,
}

fn default_t_mux() -> String {
    "45us".into()
}

fn default_buffer() -> String {
    "128KiB".into()
}

#[derive(Deserialize)]
struct RawLink {
    ends: [String; 2],
    rate: String,
    effective_rate: Option<String>,
}

/// Parses a byte size: a plain number of bytes, or with suffix `B`, `KB`/`MB` (10³, 10⁶) or
/// `KiB`/`MiB` (2¹⁰, 2²⁰).
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let n: u64 = t[..end].parse().ok()?;
    let mul = match t[end..].trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" => 1000,
        "mb" => 1_000_000,
        "kib" | "k" => 1024,
        "mib" | "m" => 1 << 20,
        _ => return None,
    };
    n.checked_mul(mul)
}

/// Parses the text of a network file.
pub fn parse_network(text: &str) -> Result<Topology, NetworkError> {
    let raw: RawNetwork = toml::from_str(text).map_err(|e| NetworkError::Toml(e.to_string()))?;
    let mut topo = Topology::default();
    for s in raw.switch {
        let t_mux = parse_duration(&s.t_mux).map_err(|source| NetworkError::Unit {
            what: format!("switch `{}` t_mux", s.name),
            source,
        })?;
        let buffer =
            parse_size(&s.buffer).ok_or_else(|| NetworkError::Size(s.name.clone(), s.buffer))?;
        topo.switches.push(SwitchSpec {
            name: s.name,
            t_mux_ns: u64::try_from(t_mux.as_nanos()).unwrap_or(u64::MAX),
            buffer_bytes: buffer,
        });
    }
    for l in raw.link {
        let text = l.effective_rate.as_deref().unwrap_or(&l.rate);
        let rate_bps = parse_rate(text).map_err(|source| NetworkError::Unit {
            what: format!("link {}-{} rate", l.ends[0], l.ends[1]),
            source,
        })?;
        topo.links.push(LinkSpec {
            ends: l.ends,
            rate_bps,
        });
    }
    Ok(topo)
}

/// Reads a network file.
pub fn load_network(path: &Path) -> Result<Topology, NetworkError> {
    let text = std::fs::read_to_string(path).map_err(|source| NetworkError::Io {
        path: path.display().to_string(),
        source,
    })?;
    parse_network(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_analyze_format() {
        let topo = parse_network(
            r#"
            [[switch]]
            name = "s1"
            t_mux = "45us"
            buffer = "128KiB"
            [[link]]
            ends = ["C", "s1"]
            rate = "100mbit"
            effective_rate = "98.6mbit"
            [[link]]
            ends = ["s1", "B"]
            rate = "10mbit"
            [[flow]]
            name = "C-B"
            path = ["C", "s1", "B"]
            rate = "40mbit"
            "#,
        )
        .expect("valid file");
        assert_eq!(topo.switches[0].t_mux_ns, 45_000);
        assert_eq!(topo.switches[0].buffer_bytes, 131_072);
        assert_eq!(topo.links[0].rate_bps, 98_600_000);
        assert_eq!(topo.links[1].rate_bps, 10_000_000);
    }

    #[test]
    fn sizes_and_errors() {
        assert_eq!(parse_size("64KB"), Some(64_000));
        assert_eq!(parse_size("2MiB"), Some(2 << 20));
        assert_eq!(parse_size("1500"), Some(1500));
        assert_eq!(parse_size("lots"), None);
        assert_eq!(parse_size("5 parsecs"), None);
        assert!(matches!(
            parse_network("[[switch]]\nname = \"s\"\nbuffer = \"big\""),
            Err(NetworkError::Size(..))
        ));
        assert!(matches!(
            parse_network("[[link]]\nends = [\"a\", \"s\"]\nrate = \"fast\""),
            Err(NetworkError::Unit { .. })
        ));
        assert!(matches!(
            parse_network("[[link]]\nends = 3"),
            Err(NetworkError::Toml(_))
        ));
    }
}
