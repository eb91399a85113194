//! A RETHER bridge in a lab (`kind = "rether-bridge"`, RETHER §2.5; docs/rether-bridge.md,
//! docs/segment.md): its config file for `rtlan rether-bridge --config`; `lab::up` starts it in
//! the bridge's own namespace once the segments run. Each port `pN` (link order) is a veth
//! straight to a segment's port — no bump: the bridge is a RETHER station on every segment it
//! joins — with that segment's rate and TRT and the station id of its link there
//! (`lab::bump::station_id`, the numbering the hosts' agents use). The lab's token cost and
//! acknowledgement slack are the agents'.

use std::path::Path;

use rtlan_core::units::{format_duration, format_rate};
use rtlan_linux::xdp::DataPlane;
use serde::Serialize;

use crate::daemon::DaemonError;
use crate::lab::bump::{station_id, LAB_ACK_SLACK, LAB_TOKEN_COST};
use crate::topology::Topology;

/// The bridge's config file as `rtlan rether-bridge --config` reads it.
#[derive(Debug, Serialize)]
struct BridgeFile {
    name: String,
    control_socket: String,
    /// Absent for AF_PACKET, the bridge's default.
    #[serde(skip_serializing_if = "Option::is_none")]
    data_plane: Option<DataPlane>,
    ack_slack: &'static str,
    token_cost: &'static str,
    port: Vec<PortFile>,
}

/// One port: the bridge's station on one segment.
#[derive(Debug, Serialize)]
struct PortFile {
    ifname: String,
    id: u16,
    rate: String,
    /// Absent when the segment gives none (the station's default).
    #[serde(skip_serializing_if = "Option::is_none")]
    trt: Option<String>,
}

/// Renders the config of RETHER bridge `name` in `topology`: one port per link in link order,
/// each with the rate, TRT and station id of the segment at its other end; its control socket
/// at `socket`, its ports' sockets `data_plane`.
pub(crate) fn render_config(
    topology: &Topology,
    name: &str,
    data_plane: DataPlane,
    socket: &Path,
) -> Result<String, DaemonError> {
    let mut port = Vec::new();
    for (ifname, peer) in topology.switch_ports(name) {
        // A validated topology links a bridge to segments only, each once.
        let (Some(segment), Some(id)) =
            (topology.segment(&peer), station_id(topology, &peer, name))
        else {
            continue;
        };
        port.push(PortFile {
            ifname,
            id,
            rate: format_rate(segment.rate_bps),
            trt: segment.trt.map(format_duration),
        });
    }
    let file = BridgeFile {
        name: name.to_string(),
        control_socket: socket.display().to_string(),
        data_plane: (data_plane != DataPlane::AfPacket).then_some(data_plane),
        ack_slack: LAB_ACK_SLACK,
        token_cost: LAB_TOKEN_COST,
        port,
    };
    Ok(toml::to_string(&file)?)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_two_segment_bridge_is_station_four_on_both_and_reads_back() {
        let topo = Topology::from_str(
            include_str!("../../../topologies/rether-two-segments.toml"),
            "rether-two-segments.toml",
        )
        .expect("valid");
        let text = render_config(
            &topo,
            "br",
            DataPlane::AfPacket,
            Path::new("/run/rtlan/labs/x/br.sock"),
        )
        .expect("renders");
        let c = rtlan_linux::retherd::RetherBridgeConfig::from_toml_str(&text)
            .unwrap_or_else(|e| panic!("{e}:\n{text}"));
        assert_eq!(c.name, "br");
        assert_eq!(
            c.control_socket.as_deref(),
            Some(Path::new("/run/rtlan/labs/x/br.sock"))
        );
        assert_eq!(c.data_plane, DataPlane::AfPacket);
        assert!(!text.contains("data_plane"), "{text}");
        let ports: Vec<(&str, u16, u64, Duration)> = c
            .ports
            .iter()
            .map(|p| {
                let s = &p.station;
                (p.ifname.as_str(), s.id.get(), s.rate_bps, s.trt)
            })
            .collect();
        let trt = Duration::from_millis(20);
        assert_eq!(
            ports,
            [("p0", 4, 10_000_000, trt), ("p1", 4, 10_000_000, trt)]
        );
        for p in &c.ports {
            assert_eq!(p.station.ack_slack, Duration::from_millis(8));
            assert_eq!(p.station.token_cost, Duration::from_micros(200));
        }
        let xdp = render_config(&topo, "br", DataPlane::Auto, Path::new("/s")).expect("ok");
        assert!(xdp.contains("data_plane = \"auto\""), "{xdp}");
    }

    #[test]
    fn each_port_takes_its_segments_rate_trt_and_place() {
        // g: 100 Mbit/s, TRT 5 ms, the bridge second; h: default rate and TRT, the bridge first.
        let topo = Topology::from_str(
            "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n\
             [[switch]]\nname = \"g\"\nkind = \"segment\"\nrate = \"100mbit\"\ntrt = \"5ms\"\n\
             [[switch]]\nname = \"h\"\nkind = \"segment\"\n\
             [[switch]]\nname = \"br\"\nkind = \"rether-bridge\"\n\
             [[link]]\nends = [\"br\", \"h\"]\n[[link]]\nends = [\"a\", \"g\"]\n\
             [[link]]\nends = [\"g\", \"br\"]\n[[link]]\nends = [\"h\", \"b\"]\n",
            "t.toml",
        )
        .expect("valid");
        let text = render_config(&topo, "br", DataPlane::AfPacket, Path::new("/s")).expect("ok");
        let c = rtlan_linux::retherd::RetherBridgeConfig::from_toml_str(&text)
            .unwrap_or_else(|e| panic!("{e}:\n{text}"));
        let ports: Vec<(&str, u16, u64, Duration)> = c
            .ports
            .iter()
            .map(|p| {
                let s = &p.station;
                (p.ifname.as_str(), s.id.get(), s.rate_bps, s.trt)
            })
            .collect();
        assert_eq!(
            ports,
            [
                ("p0", 1, 10_000_000, c.ports[0].station.trt),
                ("p1", 2, 100_000_000, Duration::from_millis(5))
            ]
        );
        // h gives no TRT: its port leaves it to the station's default.
        assert_eq!(text.matches("trt = ").count(), 1, "{text}");
        assert_ne!(c.ports[0].station.trt, Duration::from_millis(5));
    }
}
