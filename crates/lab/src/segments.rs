//! A shared segment in a lab (`kind = "segment"`, docs/segment.md): its config file for
//! `rtlan segment --config`; `crate::daemon` starts it like a switch. The bump namespaces
//! between the hosts and the segment are built in `lab::bump`.

use std::path::Path;

use rtlan_core::units::{format_duration, format_rate};
use rtlan_linux::xdp::DataPlane;
use serde::Serialize;

use crate::daemon::DaemonError;
use crate::topology::{SharedSegment, Topology};

/// The segment config file as `rtlan segment --config` reads it (docs/segment.md).
#[derive(Debug, Serialize)]
struct SegmentFile {
    name: String,
    control_socket: String,
    rate: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    propagation: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<u64>,
    /// Absent for AF_PACKET, the segment's default.
    #[serde(skip_serializing_if = "Option::is_none")]
    data_plane: Option<DataPlane>,
    port: Vec<PortFile>,
}

#[derive(Debug, Serialize)]
struct PortFile {
    ifname: String,
}

/// Renders the config of segment `name` in `topology`: one port per link in link order, its
/// control socket at `socket`, its ports' sockets `data_plane`.
pub(crate) fn render_config(
    topology: &Topology,
    name: &str,
    segment: &SharedSegment,
    data_plane: DataPlane,
    socket: &Path,
) -> Result<String, DaemonError> {
    let file = SegmentFile {
        name: name.to_string(),
        control_socket: socket.display().to_string(),
        rate: format_rate(segment.rate_bps),
        propagation: segment.propagation.map(format_duration),
        seed: segment.seed,
        data_plane: (data_plane != DataPlane::AfPacket).then_some(data_plane),
        port: topology
            .switch_ports(name)
            .into_iter()
            .map(|(ifname, _)| PortFile { ifname })
            .collect(),
    };
    Ok(toml::to_string(&file)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_lists_one_port_per_station_and_reads_back() {
        let topo = Topology::from_str(
            "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[switch]]\nname = \"g\"\n\
             kind = \"segment\"\nrate = \"10mbit\"\npropagation = \"3us\"\nseed = 5\n\
             [[link]]\nends = [\"a\", \"g\"]\n[[link]]\nends = [\"g\", \"b\"]\n",
            "t.toml",
        )
        .expect("valid");
        let seg = topo.segment("g").expect("segment");
        let text = render_config(
            &topo,
            "g",
            seg,
            DataPlane::AfPacket,
            Path::new("/run/rtlan/labs/x/g.sock"),
        )
        .expect("renders");
        let config = rtlan_linux::segmentd::SegmentDaemonConfig::from_toml_str(&text)
            .unwrap_or_else(|e| panic!("{e}:\n{text}"));
        assert_eq!(config.name, "g");
        assert_eq!(config.rate_bps, 10_000_000);
        assert_eq!((config.propagation_ns, config.seed), (3_000, 5));
        assert_eq!(config.ports, ["p0", "p1"]);
        assert_eq!(config.data_plane, DataPlane::AfPacket);
        assert!(!text.contains("data_plane"), "{text}");
        let xdp = render_config(&topo, "g", seg, DataPlane::Auto, Path::new("/s")).expect("ok");
        assert!(xdp.contains("data_plane = \"auto\""), "{xdp}");
    }
}
