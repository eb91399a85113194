//! An rtlan switch in a lab: its config file (docs/switch.md); `crate::daemon` starts it.

use std::path::Path;

use rtlan_core::switch::UnknownUnicast;
use rtlan_core::units::{format_duration, format_rate};
use serde::Serialize;

use rtlan_linux::xdp::DataPlane;

use crate::daemon::DaemonError;
use crate::topology::{RtlanSwitch, Topology};

/// The switch config file as `rtlan switch --config` reads it (docs/switch.md).
#[derive(Debug, Serialize)]
struct SwitchFile {
    name: String,
    mgmt_ip: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    unknown_unicast: Option<UnknownUnicast>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cycle_time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    nrt_queue_bytes: Option<u64>,
    control_socket: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    cpu: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lateness_budget: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    scheduler: Option<rtlan_topology::SchedulerKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stp: Option<StpFile>,
    /// Always written: the switch's own default is `auto`, the lab's AF_PACKET.
    data_plane: DataPlane,
    /// Absent when on, the switch's default.
    #[serde(skip_serializing_if = "Option::is_none")]
    fast_path: Option<bool>,
    /// Absent when off, the switch's default.
    #[serde(skip_serializing_if = "Option::is_none")]
    tx_threads: Option<bool>,
    /// Absent when off, the switch's default.
    #[serde(skip_serializing_if = "Option::is_none")]
    napi_threads: Option<bool>,
    port: Vec<PortFile>,
}

/// `[stp]` with the smallest legal 802.1D timers (docs/stp.md §4), so lab tests stay short.
#[derive(Debug, Serialize)]
struct StpFile {
    enabled: bool,
    max_age: &'static str,
    hello_time: &'static str,
    forward_delay: &'static str,
}

impl StpFile {
    const LAB: StpFile = StpFile {
        enabled: true,
        max_age: "6s",
        hello_time: "1s",
        forward_delay: "4s",
    };
}

#[derive(Debug, Serialize)]
struct PortFile {
    ifname: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    rate: Option<String>,
    /// The link's key (`crate::keys`) when the link is authenticated.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    keys: Vec<KeyFile>,
}

/// One `{ id, file }` key of a port.
#[derive(Debug, Serialize)]
struct KeyFile {
    id: u32,
    file: String,
}

/// Renders the config of switch `name` in `topology`, with its ports' sockets `data_plane`, its
/// control socket at `socket` and the link keys of an authenticated switch under the lab's state
/// directory `dir`.
pub(crate) fn render_config(
    topology: &Topology,
    name: &str,
    opts: &RtlanSwitch,
    options: &crate::LabOptions,
    dir: &Path,
    socket: &Path,
) -> Result<String, DaemonError> {
    let file = SwitchFile {
        name: name.to_string(),
        mgmt_ip: opts.mgmt_ip.to_string(),
        unknown_unicast: opts.unknown_unicast,
        cycle_time: opts.cycle_time.map(format_duration),
        nrt_queue_bytes: opts.nrt_queue_bytes,
        control_socket: socket.display().to_string(),
        cpu: opts.cpu,
        lateness_budget: opts.lateness_budget.map(format_duration),
        scheduler: opts.scheduler,
        stp: opts.stp.then_some(StpFile::LAB),
        data_plane: options.data_plane,
        fast_path: (!options.fast_path).then_some(false),
        tx_threads: options.tx_threads.then_some(true),
        napi_threads: options.napi_threads.then_some(true),
        port: topology
            .interfaces(name)
            .into_iter()
            .map(|(own, peer, rate)| PortFile {
                ifname: own.ifname.clone(),
                rate: rate.map(format_rate),
                keys: if topology.link_authenticated(name, &peer.node) {
                    vec![KeyFile {
                        id: crate::keys::LAB_KEY_ID,
                        file: crate::keys::key_path(dir, name, &peer.node)
                            .display()
                            .to_string(),
                    }]
                } else {
                    Vec::new()
                },
            })
            .collect(),
    };
    Ok(toml::to_string(&file)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_lists_ports_in_order_with_rates() {
        let topo = Topology::from_str(
            r#"
[[host]]
name = "a"
[[host]]
name = "b"
[[switch]]
name = "s1"
unknown_unicast = "flood"
cycle_time = "2500us"
cpu = 1
[[link]]
ends = ["a", "s1"]
rate = "100mbit"
[[link]]
ends = ["s1", "b"]
"#,
            "t.toml",
        )
        .unwrap();
        let crate::SwitchKind::Rtlan(opts) = &topo.switches[0].kind else {
            panic!("rtlan switch")
        };
        let text = render_config(
            &topo,
            "s1",
            opts,
            &crate::LabOptions::new("/bin/true"),
            Path::new("/run/x"),
            Path::new("/run/x/s1.sock"),
        )
        .unwrap();
        let v: toml::Value = toml::from_str(&text).unwrap();
        assert_eq!(v["name"].as_str(), Some("s1"));
        assert_eq!(v["mgmt_ip"].as_str(), Some("198.18.255.1"));
        assert_eq!(v["unknown_unicast"].as_str(), Some("flood"));
        assert_eq!(v["cycle_time"].as_str(), Some("2500us"));
        assert_eq!(v["cpu"].as_integer(), Some(1));
        assert_eq!(v["control_socket"].as_str(), Some("/run/x/s1.sock"));
        assert!(v.get("nrt_queue_bytes").is_none());
        let ports = v["port"].as_array().unwrap();
        assert_eq!(ports.len(), 2);
        assert_eq!(ports[0]["ifname"].as_str(), Some("p0"));
        assert_eq!(ports[0]["rate"].as_str(), Some("100mbit"));
        assert_eq!(ports[1]["ifname"].as_str(), Some("p1"));
        assert!(ports[1].get("rate").is_none());
        assert!(ports[0].get("keys").is_none(), "no auth, no keys");
        assert_eq!(
            v["data_plane"].as_str(),
            Some("af_packet"),
            "the lab's default"
        );
        let rendered = |data_plane, fast_path| {
            let mut options = crate::LabOptions::new("/bin/true");
            options.data_plane = data_plane;
            options.fast_path = fast_path;
            options.tx_threads = !fast_path;
            options.napi_threads = !fast_path;
            let text = render_config(
                &topo,
                "s1",
                opts,
                &options,
                Path::new("/run/x"),
                Path::new("/run/x/s1.sock"),
            )
            .unwrap();
            toml::from_str::<toml::Value>(&text).unwrap()
        };
        let v = rendered(DataPlane::AfXdp, true);
        assert_eq!(v["data_plane"].as_str(), Some("af_xdp"));
        assert!(v.get("fast_path").is_none(), "on is the default");
        assert!(v.get("tx_threads").is_none(), "off is the default");
        assert!(v.get("napi_threads").is_none(), "off is the default");
        let v = rendered(DataPlane::AfXdp, false);
        assert_eq!(v["fast_path"].as_bool(), Some(false));
        assert_eq!(v["tx_threads"].as_bool(), Some(true));
        assert_eq!(v["napi_threads"].as_bool(), Some(true));
    }

    #[test]
    fn an_authenticating_switch_names_each_links_key_file_but_none_towards_a_bridge() {
        let topo = Topology::from_str(
            "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n\
             [[switch]]\nname = \"s1\"\nauth = true\n\
             [[switch]]\nname = \"br\"\nkind = \"linux-bridge\"\n\
             [[link]]\nends = [\"a\", \"s1\"]\n\
             [[link]]\nends = [\"s1\", \"br\"]\n\
             [[link]]\nends = [\"br\", \"b\"]\n",
            "t.toml",
        )
        .unwrap();
        let crate::SwitchKind::Rtlan(opts) = &topo.switches[0].kind else {
            panic!("rtlan switch")
        };
        let dir = Path::new("/run/x");
        let text = render_config(
            &topo,
            "s1",
            opts,
            &crate::LabOptions::new("/bin/true"),
            dir,
            &dir.join("s1.sock"),
        )
        .unwrap();
        let v: toml::Value = toml::from_str(&text).unwrap();
        let ports = v["port"].as_array().unwrap();
        let keys = ports[0]["keys"].as_array().expect("keys on the host link");
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0]["id"].as_integer(), Some(1));
        assert_eq!(keys[0]["file"].as_str(), Some("/run/x/keys/a--s1.key"));
        assert!(
            ports[1].get("keys").is_none(),
            "the bridge link has no keys"
        );
    }

    #[test]
    fn durations_stay_exact() {
        use std::time::Duration;
        assert_eq!(format_duration(Duration::from_millis(10)), "10ms");
        assert_eq!(format_duration(Duration::from_secs(2)), "2s");
        assert_eq!(format_duration(Duration::from_micros(1500)), "1500us");
        assert_eq!(format_duration(Duration::from_nanos(1001)), "1001ns");
    }
}
