//! Reads the network file of `rtlan analyze` (issue 5 item 2; `docs/analyze.md`, `docs/bwm.md`)
//! into the manager's [`Topology`] with the one parser both tools share
//! (`rtlan_calculus::netfile`, via [`Topology::parse`]): `[[switch]]` (`name`, `t_mux`,
//! `buffer`) and `[[link]]` (`ends`, `rate`, optional `effective_rate`, which the bounds use).
//! `[[flow]]` tables are checked by that parser but not booked.

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

/// Parses the text of a network file.
pub fn parse_network(text: &str) -> Result<Topology, NetworkError> {
    Ok(Topology::parse(text)?)
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
            rate = "4mbit"
            max_packet = 1514
            shaping_interval = "10ms"
            "#,
        )
        .expect("valid file");
        assert_eq!(topo.switches[0].t_mux_ns, 45_000);
        assert_eq!(topo.switches[0].buffer_bytes, 131_072);
        assert_eq!(topo.links[0].rate_bps, 98_600_000);
        assert_eq!(topo.links[1].rate_bps, 10_000_000);
    }

    #[test]
    fn errors_are_the_analyze_parsers() {
        let switch = "[[switch]]\nname = \"s\"\nt_mux = \"45us\"\n";
        assert!(matches!(
            parse_network(&format!("{switch}buffer = \"big\"")),
            Err(NetworkError::Invalid(TopologyError::File(_)))
        ));
        assert!(matches!(
            parse_network(&format!(
                "{switch}buffer = \"64KB\"\n[[link]]\nends = [\"a\", \"s\"]\nrate = \"fast\""
            )),
            Err(NetworkError::Invalid(TopologyError::File(_)))
        ));
        assert!(matches!(
            parse_network("[[link]]\nends = 3"),
            Err(NetworkError::Invalid(TopologyError::File(_)))
        ));
        let ok = parse_network(&format!(
            "{switch}buffer = \"64KB\"\n[[link]]\nends = [\"a\", \"s\"]\nrate = \"1gbit\""
        ))
        .expect("valid");
        assert_eq!(ok.switches[0].buffer_bytes, 64_000);
        assert_eq!(ok.links[0].rate_bps, 1_000_000_000);
    }
}
