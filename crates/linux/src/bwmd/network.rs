//! Reads the network file of `rtlan bwm` (`docs/analyze.md`, `docs/bwm.md`) with the one topology
//! reader (`rtlan_topology`, network-file rules, errors at `file:line:column`) and derives the
//! manager's [`Topology`] from it: `[[switch]]` (`name`, `t_mux`, `buffer`), `[[link]]` (`ends`,
//! `rate`, optional `effective_rate`, which the bounds use), `[[host]]` addresses. `[[flow]]`
//! tables are checked by the reader but not booked.

use std::path::Path;

use rtlan_core::bwm::{Topology, TopologyError};

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
    /// The file is not a valid network file.
    #[error(transparent)]
    Invalid(#[from] TopologyError),
}

/// Parses the text of a network file; `origin` names it in error messages.
pub fn parse_network(text: &str, origin: &str) -> Result<Topology, NetworkError> {
    Ok(Topology::parse(text, origin)?)
}

/// Reads a network file.
pub fn load_network(path: &Path) -> Result<Topology, NetworkError> {
    let text = std::fs::read_to_string(path).map_err(|source| NetworkError::Io {
        path: path.display().to_string(),
        source,
    })?;
    parse_network(&text, &path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_analyze_format() {
        let topo = parse_network(
            &r#"
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
            rate = "4mbit"
            max_packet = 1514
            shaping_interval = "10ms"
            "#
            .replace("\n            ", "\n"),
            "net.toml",
        )
        .expect("valid file");
        assert_eq!(topo.switches[0].t_mux_ns, 45_000);
        assert_eq!(topo.switches[0].buffer_bytes, 131_072);
        assert_eq!(topo.links[0].rate_bps, 98_600_000);
        assert_eq!(topo.links[1].rate_bps, 10_000_000);
    }

    /// The message of a refused file, which must be the reader's (`net.toml:line:col: …`).
    fn refusal(text: &str) -> String {
        match parse_network(text, "net.toml") {
            Err(NetworkError::Invalid(TopologyError::File(m))) => m,
            other => panic!("expected a file error, got {other:?}"),
        }
    }

    #[test]
    fn errors_are_the_analyze_parsers() {
        let switch = "[[switch]]\nname = \"s\"\nt_mux = \"45us\"\n";
        let m = refusal(&format!("{switch}buffer = \"big\""));
        assert!(m.starts_with("net.toml:4:10: bad `buffer`"), "{m}");
        let m = refusal(&format!(
            "{switch}buffer = \"64KB\"\n[[link]]\nends = [\"a\", \"s\"]\nrate = \"fast\""
        ));
        assert!(m.starts_with("net.toml:7:8: bad rate"), "{m}");
        let m = refusal(&format!(
            "{switch}buffer = \"64KB\"\n[[link]]\nends = [\"a\", \"s\"]\nrate = \"100mbps\""
        ));
        assert!(
            m.contains("tc(8) reads it as 100 megabytes/s = 800 Mbit/s"),
            "{m}"
        );
        let m = refusal("[[link]]\nends = 3");
        assert!(m.starts_with("net.toml:2:8:"), "{m}");
        let ok = parse_network(
            &format!(
                "{switch}buffer = \"64KB\"\n[[link]]\nends = [\"a\", \"s\"]\nrate = \"1gbit\""
            ),
            "net.toml",
        )
        .expect("valid");
        assert_eq!(ok.switches[0].buffer_bytes, 64_000);
        assert_eq!(ok.links[0].rate_bps, 1_000_000_000);
    }
}
