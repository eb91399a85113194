//! Routers in a lab (QSR paper §2; docs/qsr.md §2.3, docs/lab.md "Routers"): the `rtlan router`
//! configuration (docs/router.md) of a router of kind `rtlan`, the BIRD 2 configuration of a
//! router with `ospf = "bird"` and FRR's (`zebra` and `ospfd`) of one with `ospf = "frr"`. The
//! paper ran OSPF on its control engine beside RSVP (§2); here a real routing daemon runs in the
//! router's namespace. `crate::daemon` starts them; `lab::up` addresses the ports, sets the
//! namespace's forwarding and installs a `linux-router`'s static routes in its kernel.
//!
//! Both daemons run OSPFv2 with one area 0 over every port: a port whose segment holds another
//! router port takes part (point-to-point on a router–router link, broadcast on a shared
//! segment), a port alone on its segment (a host segment) is a stub network (FRR: a passive
//! interface). Timers are short for tests ([`OSPF_HELLO_S`], [`OSPF_DEAD_S`]); the daemon puts
//! its OSPF routes into the namespace's main kernel table (BIRD's `protocol kernel`, FRR's
//! zebra), which `rtlan router` mirrors (`kernel_routes = true`) or the kernel forwards with
//! (`linux-router`).

use std::net::Ipv4Addr;
use std::path::Path;

use rtlan_core::units::format_rate;
use serde::Serialize;

use crate::daemon::DaemonError;
use crate::topology::{Router, Topology};

/// OSPF hello interval, seconds.
pub(crate) const OSPF_HELLO_S: u32 = 1;
/// OSPF router dead interval, seconds: a neighbour silent this long is declared down.
pub(crate) const OSPF_DEAD_S: u32 = 4;
/// OSPF retransmission interval, seconds: BIRD's default (5 s) would make a lost first
/// database description cost 5 s of start-up; BIRD refuses less than 2.
pub(crate) const OSPF_RETRANSMIT_S: u32 = 2;
/// BIRD's OSPF `tick`: routing table calculation runs at most this often, seconds.
pub(crate) const OSPF_TICK_S: u32 = 1;
/// How often BIRD scans interfaces and the kernel table, seconds.
pub(crate) const BIRD_SCAN_S: u32 = 1;
/// Where Debian's `frr` package puts its daemons (not on `PATH`).
pub(crate) const FRR_DIR: &str = "/usr/lib/frr";

/// The router config file as `rtlan router --config` reads it (docs/router.md).
#[derive(Debug, Serialize)]
struct RouterFile {
    name: String,
    control_socket: String,
    kernel_routes: bool,
    data_plane: rtlan_linux::xdp::DataPlane,
    /// `false` only when the lab turns the fast path off (on is the router's default).
    #[serde(skip_serializing_if = "Option::is_none")]
    fast_path: Option<bool>,
    /// `true` only when the lab asks for threaded receive (off is the router's default).
    #[serde(skip_serializing_if = "Option::is_none")]
    napi_threads: Option<bool>,
    port: Vec<PortFile>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    route: Vec<RouteFile>,
    /// `[rsvp]` with the defaults (docs/router.md) when the router runs RSVP.
    #[serde(skip_serializing_if = "Option::is_none")]
    rsvp: Option<RsvpFile>,
    /// `[psip]` when the router runs RSVP: the pipe page and API on [`PSIP_HTTP_PORT`].
    #[serde(skip_serializing_if = "Option::is_none")]
    psip: Option<PsipFile>,
}

/// `[rsvp]`: `rtlan router`'s defaults but for the lateness budget.
#[derive(Debug, Serialize)]
struct RsvpFile {
    lateness_budget: String,
}

/// The wake-up lateness the lab's routers declare: on the 2-core machine a lab shares with its
/// hosts and tools, data planes wake up late by milliseconds under floods (3.2 ms measured with
/// three switches; `topologies/chain3-flood.toml` declares 4 ms for the same reason), and a
/// reserved flow's queue needs room for what arrives meanwhile (docs/qsr.md §4).
pub(crate) const LAB_ROUTER_LATENESS: &str = "4ms";

/// The port every lab router with RSVP serves its provisioned-pipe page and JSON API on, on
/// all its addresses (QSR §5; docs/router.md "Provisioned pipes"): a lab's namespaces are its
/// own, so its hosts may reach every router's page.
pub const PSIP_HTTP_PORT: u16 = 8080;

/// `[psip]`.
#[derive(Debug, Serialize)]
struct PsipFile {
    http: String,
    /// Pipes created through the API, kept beside the router's other state files.
    state: String,
}

#[derive(Debug, Serialize)]
struct PortFile {
    ifname: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    rate: Option<String>,
}

#[derive(Debug, Serialize)]
struct RouteFile {
    prefix: String,
    gateway: String,
    metric: u32,
}

/// Renders the `rtlan router` config of `router`: one `[[port]]` per port at its link's rate
/// (the router paces its own output), its static routes, the kernel table mirrored (BIRD's
/// routes when it runs OSPF), control socket at `socket`; `fast_path` and `napi_threads` as the
/// lab's options say.
pub(crate) fn render_config(
    topology: &Topology,
    router: &Router,
    socket: &Path,
    data_plane: rtlan_linux::xdp::DataPlane,
    (fast_path, napi_threads): (bool, bool),
) -> Result<String, DaemonError> {
    let links = topology.interfaces(&router.name);
    let file = RouterFile {
        name: router.name.clone(),
        control_socket: socket.display().to_string(),
        kernel_routes: true,
        data_plane,
        fast_path: (!fast_path).then_some(false),
        napi_threads: napi_threads.then_some(true),
        port: router
            .ports
            .iter()
            .map(|p| PortFile {
                ifname: p.ifname.clone(),
                rate: links
                    .iter()
                    .find(|(own, _, _)| own.ifname == p.ifname)
                    .and_then(|(_, _, rate)| rate.map(format_rate)),
            })
            .collect(),
        route: router
            .routes
            .iter()
            .map(|r| RouteFile {
                prefix: format!("{}/{}", r.prefix, r.prefix_len),
                gateway: r.gateway.to_string(),
                metric: r.metric,
            })
            .collect(),
        rsvp: router.rsvp.then(|| RsvpFile {
            lateness_budget: LAB_ROUTER_LATENESS.to_string(),
        }),
        psip: router.rsvp.then(|| PsipFile {
            http: format!("0.0.0.0:{PSIP_HTTP_PORT}"),
            state: socket.with_extension("pipes.json").display().to_string(),
        }),
    };
    Ok(toml::to_string(&file)?)
}

/// How a port takes part in OSPF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OspfPort {
    /// A router–router link: point-to-point, no designated-router election.
    PointToPoint,
    /// A segment with hosts or switches and more than one router port: broadcast.
    Broadcast,
    /// The only router port on its segment: advertised, no hellos.
    Stub,
}

fn ospf_port(topology: &Topology, router: &Router, port: usize) -> OspfPort {
    let p = &router.ports[port];
    let links = topology.interfaces(&router.name);
    let peer_is_router = links
        .iter()
        .find(|(own, _, _)| own.ifname == p.ifname)
        .is_some_and(|(_, peer, _)| topology.router(&peer.node).is_some());
    if peer_is_router {
        return OspfPort::PointToPoint;
    }
    let ports_on_segment = topology
        .routers
        .iter()
        .flat_map(|r| &r.ports)
        .filter(|q| q.segment == p.segment)
        .count();
    if ports_on_segment > 1 {
        OspfPort::Broadcast
    } else {
        OspfPort::Stub
    }
}

/// The OSPF router id of `router`: its first port's address (`None` for a router without ports,
/// which the topology refuses).
pub(crate) fn router_id(router: &Router) -> Option<Ipv4Addr> {
    router.ports.first().map(|p| p.ip)
}

/// FRR's SPF throttle (`timers throttle spf DELAY HOLD MAX`, ms): the first calculation after
/// a change at once, later ones at least 50 ms apart, backing off to at most 1 s — FRR's
/// defaults (0, 50, 5000) with a shorter ceiling, so a test's link failure is routed around
/// within a second of the new LSA.
pub(crate) const FRR_SPF_THROTTLE_MS: (u32, u32, u32) = (0, 50, 1000);

/// Renders FRR's `zebra` configuration for `router`: zebra owns the kernel table, nothing else
/// to configure (it learns the interfaces and their addresses from the kernel).
pub(crate) fn render_zebra_config(router: &Router) -> String {
    format!(
        "! FRR zebra configuration of lab router `{name}` (written by rtlan lab; docs/lab.md)\n\
         hostname {name}\n",
        name = router.name
    )
}

/// Renders FRR's `ospfd` configuration for `router` (see the module doc): the same area,
/// interface types and timers as [`render_bird_config`], one next hop per destination.
pub(crate) fn render_ospfd_config(topology: &Topology, router: &Router) -> String {
    let id = router_id(router).unwrap_or(Ipv4Addr::UNSPECIFIED);
    let mut out = format!(
        "! FRR ospfd configuration of lab router `{name}` (written by rtlan lab; docs/lab.md)\n\
         hostname {name}\n",
        name = router.name
    );
    for (i, p) in router.ports.iter().enumerate() {
        out.push_str(&format!(
            "interface {}\n ip ospf area 0.0.0.0\n ip ospf cost 10\n",
            p.ifname
        ));
        let timers = format!(
            " ip ospf hello-interval {OSPF_HELLO_S}\n ip ospf dead-interval {OSPF_DEAD_S}\n \
             ip ospf retransmit-interval {OSPF_RETRANSMIT_S}\n"
        );
        match ospf_port(topology, router, i) {
            OspfPort::PointToPoint => {
                out.push_str(" ip ospf network point-to-point\n");
                out.push_str(&timers);
            }
            OspfPort::Broadcast => {
                out.push_str(" ip ospf network broadcast\n");
                out.push_str(&timers);
            }
            OspfPort::Stub => out.push_str(" ip ospf passive\n"),
        }
        out.push_str(&format!("! {}/{}\n", p.ip, p.prefix_len));
    }
    let (delay, hold, max) = FRR_SPF_THROTTLE_MS;
    // One next hop per destination, as rtlan's forwarding table holds (BIRD's `ecmp no`).
    out.push_str(&format!(
        "router ospf\n ospf router-id {id}\n maximum-paths 1\n \
         timers throttle spf {delay} {hold} {max}\n"
    ));
    out
}

/// Renders BIRD 2's configuration for `router` (see the module doc).
pub(crate) fn render_bird_config(topology: &Topology, router: &Router) -> String {
    let id = router_id(router).unwrap_or(Ipv4Addr::UNSPECIFIED);
    let mut out = format!(
        "# BIRD 2 configuration of lab router `{name}` (written by rtlan lab; docs/lab.md)\n\
         log stderr all;\n\
         router id {id};\n\
         \n\
         protocol device {{\n    scan time {BIRD_SCAN_S};\n}}\n\
         \n\
         # Connected networks win over OSPF's own copies (preference 240 > 150) and are not\n\
         # exported: the kernel already has them.\n\
         protocol direct {{\n    ipv4;\n    interface \"p*\";\n}}\n\
         \n\
         # OSPF's routes into the main table, which `rtlan router` mirrors or the kernel uses.\n\
         protocol kernel {{\n    ipv4 {{\n        export where source ~ [ RTS_OSPF, RTS_OSPF_IA, \
         RTS_OSPF_EXT1, RTS_OSPF_EXT2 ];\n    }};\n    scan time {BIRD_SCAN_S};\n}}\n\
         \n\
         # One next hop per destination, as rtlan's forwarding table holds: equal-cost paths\n\
         # would otherwise make a multipath route, which a linux-router spreads over its hops\n\
         # and `rtlan router` reduces to the first.\n\
         protocol ospf v2 {{\n    tick {OSPF_TICK_S};\n    ecmp no;\n    ipv4 {{\n        import all;\n        \
         export none;\n    }};\n    area 0 {{\n",
        name = router.name
    );
    for (i, p) in router.ports.iter().enumerate() {
        let body = match ospf_port(topology, router, i) {
            OspfPort::PointToPoint => format!(
                "type ptp; hello {OSPF_HELLO_S}; dead {OSPF_DEAD_S}; \
                 retransmit {OSPF_RETRANSMIT_S}; cost 10;"
            ),
            OspfPort::Broadcast => format!(
                "type broadcast; hello {OSPF_HELLO_S}; dead {OSPF_DEAD_S}; wait {OSPF_DEAD_S}; \
                 retransmit {OSPF_RETRANSMIT_S}; cost 10;"
            ),
            OspfPort::Stub => "stub yes; cost 10;".to_string(),
        };
        out.push_str(&format!(
            "        interface \"{}\" {{ {body} }};  # {}/{}\n",
            p.ifname, p.ip, p.prefix_len
        ));
    }
    out.push_str("    };\n}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRIANGLE: &str = r#"
[[host]]
name = "a"
[[host]]
name = "b"
[[router]]
name = "r1"
ospf = "bird"
[[router]]
name = "r2"
ospf = "bird"
[[router]]
name = "r3"
ospf = "bird"
[[link]]
ends = ["a", "r1"]
rate = "100mbit"
[[link]]
ends = ["r1", "r2"]
rate = "100mbit"
[[link]]
ends = ["r2", "r3"]
[[link]]
ends = ["r1", "r3"]
rate = "100mbit"
[[link]]
ends = ["r3", "b"]
rate = "100mbit"
"#;

    #[test]
    fn router_config_has_ports_with_rates_routes_and_the_kernel_mirror() {
        let topo = Topology::from_str(
            "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n\
             [[router]]\nname = \"r1\"\n[[router]]\nname = \"r2\"\n\
             [[link]]\nends = [\"a\", \"r1\"]\nrate = \"100mbit\"\n\
             [[link]]\nends = [\"r1\", \"r2\"]\n\
             [[link]]\nends = [\"r2\", \"b\"]\nrate = \"100mbit\"\n",
            "t.toml",
        )
        .unwrap();
        let r1 = topo.router("r1").unwrap();
        let text = render_config(
            &topo,
            r1,
            Path::new("/run/x/r1.sock"),
            rtlan_linux::xdp::DataPlane::AfPacket,
            (true, false),
        )
        .unwrap();
        let v: toml::Value = toml::from_str(&text).unwrap();
        assert!(v.get("fast_path").is_none(), "on is the default");
        assert!(v.get("napi_threads").is_none(), "off is the default");
        let off = render_config(
            &topo,
            r1,
            Path::new("/run/x/r1.sock"),
            rtlan_linux::xdp::DataPlane::AfXdp,
            (false, true),
        )
        .unwrap();
        let off = rtlan_linux::routerd::RouterDaemonConfig::from_toml_str(&off).unwrap();
        assert!(!off.fast_path);
        assert!(off.napi_threads);
        assert_eq!(v["name"].as_str(), Some("r1"));
        assert_eq!(v["control_socket"].as_str(), Some("/run/x/r1.sock"));
        assert_eq!(v["kernel_routes"].as_bool(), Some(true));
        assert!(v["rsvp"].is_table(), "RSVP on by default: {text}");
        // And what the router reads back is RSVP with its defaults but the lab's lateness, and
        // the pipe page on its port.
        let read = rtlan_linux::routerd::RouterDaemonConfig::from_toml_str(&text).unwrap();
        assert_eq!(
            read.rsvp,
            Some(rtlan_core::router::RsvpSettings {
                lateness_budget: std::time::Duration::from_millis(4),
                ..rtlan_core::router::RsvpSettings::default()
            })
        );
        assert_eq!(read.http.map(|a| a.port()), Some(PSIP_HTTP_PORT));
        assert_eq!(
            read.pipes_state.as_deref(),
            Some(Path::new("/run/x/r1.pipes.json"))
        );
        let ports = v["port"].as_array().unwrap();
        assert_eq!(ports.len(), 2);
        assert_eq!(ports[0]["ifname"].as_str(), Some("p0"));
        assert_eq!(ports[0]["rate"].as_str(), Some("100mbit"));
        assert_eq!(ports[1]["ifname"].as_str(), Some("p1"));
        assert!(ports[1].get("rate").is_none(), "unlimited link");
        let routes = v["route"].as_array().unwrap();
        assert_eq!(routes.len(), 1, "{text}");
        // b's segment (the third) through r2's port on the r1–r2 segment.
        assert_eq!(routes[0]["prefix"].as_str(), Some("198.18.2.0/24"));
        assert_eq!(routes[0]["gateway"].as_str(), Some("198.18.1.2"));
        assert_eq!(routes[0]["metric"].as_integer(), Some(2));
    }

    #[test]
    fn bird_config_runs_ospf_on_router_links_and_makes_host_segments_stubs() {
        let topo = Topology::from_str(TRIANGLE, "t.toml").unwrap();
        let r1 = topo.router("r1").unwrap();
        assert!(r1.routes.is_empty(), "OSPF routers get no static routes");
        let text = render_bird_config(&topo, r1);
        assert!(text.contains("router id 198.18.0.1;"), "{text}");
        assert!(
            text.contains("interface \"p0\" { stub yes; cost 10; };"),
            "{text}"
        );
        assert!(
            text.contains(
                "interface \"p1\" { type ptp; hello 1; dead 4; retransmit 2; cost 10; };"
            ),
            "{text}"
        );
        assert!(text.contains("interface \"p2\" { type ptp;"), "{text}");
        assert!(text.contains("export where source ~ [ RTS_OSPF"), "{text}");
        // Every interface line is inside `area 0 { … }`.
        let area = text.find("area 0 {").unwrap();
        assert!(text.rfind("interface \"p").unwrap() > area);
    }

    #[test]
    fn a_shared_segment_with_two_routers_is_broadcast() {
        let topo = Topology::from_str(
            "[[host]]\nname = \"a\"\n[[switch]]\nname = \"s1\"\n\
             [[router]]\nname = \"r1\"\nospf = \"bird\"\n[[router]]\nname = \"r2\"\nospf = \"bird\"\n\
             [[link]]\nends = [\"a\", \"s1\"]\n[[link]]\nends = [\"s1\", \"r1\"]\n\
             [[link]]\nends = [\"s1\", \"r2\"]\n",
            "t.toml",
        )
        .unwrap();
        let text = render_bird_config(&topo, topo.router("r2").unwrap());
        assert!(
            text.contains("interface \"p0\" { type broadcast;"),
            "{text}"
        );
    }

    #[test]
    fn frr_config_runs_ospf_on_router_links_and_makes_host_segments_passive() {
        let topo = Topology::from_str(&TRIANGLE.replace("\"bird\"", "\"frr\""), "t.toml").unwrap();
        let r1 = topo.router("r1").unwrap();
        assert!(r1.routes.is_empty(), "OSPF routers get no static routes");
        let text = render_ospfd_config(&topo, r1);
        assert!(text.contains(" ospf router-id 198.18.0.1\n"), "{text}");
        assert!(text.contains(" maximum-paths 1\n"), "{text}");
        let p1 = text.find("interface p1\n").unwrap();
        assert!(
            text[..p1].contains(" ip ospf passive\n"),
            "p0 is a stub: {text}"
        );
        assert_eq!(text.matches("ip ospf passive").count(), 1, "{text}");
        let p2 = text.find("interface p2\n").unwrap();
        assert!(
            text[p1..p2].contains(" ip ospf network point-to-point\n ip ospf hello-interval 1\n"),
            "{text}"
        );
        assert!(
            text[p1..p2].contains(" ip ospf dead-interval 4\n"),
            "{text}"
        );
        assert!(text[p1..p2].contains(" ip ospf area 0.0.0.0\n"), "{text}");
        assert!(render_zebra_config(r1).contains("hostname r1\n"));
    }

    #[test]
    fn frr_accepts_the_config() {
        let dir_of = |d: &str| std::path::Path::new(FRR_DIR).join(d);
        if !dir_of("ospfd").is_file() {
            eprintln!("skipped: FRR is not installed (scripts/install-deps)");
            return;
        }
        let topo = Topology::from_str(&TRIANGLE.replace("\"bird\"", "\"frr\""), "t.toml").unwrap();
        let dir = std::env::temp_dir().join(format!("rtlan-lab-frr-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for r in &topo.routers {
            for (daemon, text) in [
                ("zebra", render_zebra_config(r)),
                ("ospfd", render_ospfd_config(&topo, r)),
            ] {
                let path = dir.join(format!("{}.{daemon}.conf", r.name));
                std::fs::write(&path, &text).unwrap();
                // `-C`: check the configuration and exit. It exits 0 whatever it found, so
                // what it says is checked: an unknown or deprecated command is a bug here.
                let out = std::process::Command::new(dir_of(daemon))
                    .arg("-C")
                    .arg("-f")
                    .arg(&path)
                    .output()
                    .unwrap();
                let said = format!(
                    "{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
                assert!(
                    out.status.success()
                        && !said.contains("No such command")
                        && !said.contains("deprecated")
                        && !said.contains("Unknown command"),
                    "{daemon} -C refused {}: {said}",
                    path.display()
                );
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bird_accepts_the_config() {
        let Ok(status) = std::process::Command::new("bird").arg("--version").output() else {
            eprintln!("skipped: bird is not installed (scripts/install-deps)");
            return;
        };
        assert!(status.status.success() || !status.stderr.is_empty());
        let topo = Topology::from_str(TRIANGLE, "t.toml").unwrap();
        let dir = std::env::temp_dir().join(format!("rtlan-lab-bird-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for r in &topo.routers {
            let path = dir.join(format!("{}.conf", r.name));
            std::fs::write(&path, render_bird_config(&topo, r)).unwrap();
            // `-p`: parse the configuration and exit.
            let out = std::process::Command::new("bird")
                .arg("-p")
                .arg("-c")
                .arg(&path)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "bird -p refused {}: {}",
                path.display(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
