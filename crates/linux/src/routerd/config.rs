//! The router daemon's configuration file (`rtlan router --config FILE`, `docs/router.md`):
//! TOML, every error at its `line:column`, unknown keys refused.
//!
//! ```toml
//! name = "r1"
//! control_socket = "/run/rtlan/r1.sock"   # optional
//! answer_local = false                    # the kernel answers ARP and pings for the router
//! kernel_routes = true                    # mirror the main routing table (a routing daemon's)
//! data_plane = "auto"                     # or "af_xdp", or "af_packet" (docs/afxdp.md)
//! fast_path = true                        # best-effort forwarding in XDP or TC (docs/fastpath.md)
//! realtime_priority = 20                  # SCHED_FIFO priority of the data plane; 0 = normal
//! napi_threads = false                    # unpaced ports receive in kernel threads (docs/threads.md)
//!
//! [[port]]
//! ifname = "eth1"                         # its IPv4 address is read from the interface
//! rate = "100mbit"                        # optional: paced at this rate; absent = unpaced
//!
//! [[route]]
//! prefix = "198.18.9.0/24"
//! gateway = "198.18.12.2"
//! metric = 10                             # optional
//!
//! [rsvp]                                  # optional: RSVP and switched paths (docs/rsvp.md §7)
//! refresh = "30s"                         # R of the router's own state
//! default_floor_percent = 10              # of each port's rate, never reservable
//! gs_buffer = "256KiB"                    # Guaranteed-Service buffer per port
//! lateness_budget = "400us"               # how late the driver may wake (queues, ADSPEC D)
//!
//! [psip]                                  # optional, needs [rsvp]: provisioned pipes (QSR §5)
//! http = "198.18.1.1:8080"                # the pipe page and JSON API; absent = none
//! peers = ["198.18.0.0/16"]               # ingress routers whose pipes may end here; absent = any
//! state = "/var/lib/rtlan/r1-pipes.json"  # pipes created through the API, kept across restarts
//!
//! [[pipe]]                                # pipes started at start-up (needs [rsvp])
//! name = "video"
//! from = ["198.18.1.0/24"]                # optional, default any source
//! to = "198.18.3.0/24"
//! service = "controlled_load"             # or "guaranteed"
//! rate = "3mbit"
//! burst = "3000B"                         # optional, default two largest packets
//! max_packet = 1500                       # optional
//! protected = true                        # RSVP on the control queue (QSR §6.2); false: with data
//! ```

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use rtlan_core::router::{Ipv4Prefix, RsvpSettings};
use rtlan_core::units::{parse_duration, parse_rate, parse_size};
use serde::Deserialize;
use toml::Spanned;

use super::pipes::PipeRequest;
use crate::switchd::config::Source;
use crate::switchd::ConfigError;

/// One router port.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RouterPortSpec {
    /// The interface.
    pub ifname: String,
    /// Paced at this rate, bit/s; `None` = unpaced.
    pub rate_bps: Option<u64>,
}

/// A configured route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct RouteSpec {
    /// The destinations.
    #[serde(serialize_with = "display")]
    pub prefix: Ipv4Prefix,
    /// The next router.
    pub gateway: Ipv4Addr,
    /// Its metric.
    pub metric: u32,
}

fn display<S: serde::Serializer>(p: &Ipv4Prefix, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(p)
}

/// The router daemon's configuration.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RouterDaemonConfig {
    /// Name used in logs and reports.
    pub name: String,
    /// Path of the Unix control socket; `None` = none.
    pub control_socket: Option<PathBuf>,
    /// Whether the router answers ARP and pings for its addresses itself (the kernel of its
    /// namespace does by default).
    pub answer_local: bool,
    /// Whether the kernel's main routing table is mirrored.
    pub kernel_routes: bool,
    /// The ports' sockets.
    pub data_plane: crate::xdp::DataPlane,
    /// Whether the ports forward plain IPv4 themselves where the core allows, in XDP (AF_XDP)
    /// or at TC ingress (AF_PACKET) (docs/fastpath.md "The router").
    pub fast_path: bool,
    /// The ports, in order.
    pub ports: Vec<RouterPortSpec>,
    /// Static routes.
    pub routes: Vec<RouteSpec>,
    /// RSVP and switched paths, `None` without an `[rsvp]` table.
    #[serde(skip)]
    pub rsvp: Option<RsvpSettings>,
    /// Where the pipe page and JSON API listen; `None` = nowhere.
    pub http: Option<std::net::SocketAddr>,
    /// Pipes started at start-up.
    pub pipes: Vec<PipeRequest>,
    /// The file that keeps the pipes created through the API across restarts; `None` = none.
    pub pipes_state: Option<PathBuf>,
    /// SCHED_FIFO priority of the router's thread (a switch's by default); 0 = normal
    /// scheduling. Under normal scheduling on the loaded 2-core lab machine, a pipe's reserved
    /// queue overflowed at r1 and r3 in 2 of 5 runs while the drivers waited for a CPU
    /// (`tests/lab_pipes.rs`): the queues' `lateness_budget` assumes a driver that wakes on time.
    pub realtime_priority: u8,
    /// Each unpaced port receives in a kernel thread of its own (threaded NAPI, with GRO on), as
    /// the switch's `napi_threads` (docs/threads.md "Threaded receive"); paced ports keep the
    /// softirq.
    pub napi_threads: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    name: Option<String>,
    control_socket: Option<PathBuf>,
    answer_local: Option<bool>,
    kernel_routes: Option<bool>,
    data_plane: Option<crate::xdp::DataPlane>,
    fast_path: Option<bool>,
    realtime_priority: Option<Spanned<u8>>,
    napi_threads: Option<bool>,
    #[serde(default)]
    port: Vec<RawPort>,
    #[serde(default)]
    route: Vec<RawRoute>,
    rsvp: Option<RawRsvp>,
    psip: Option<Spanned<RawPsip>>,
    #[serde(default)]
    pipe: Vec<Spanned<PipeRequest>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPsip {
    http: Option<Spanned<String>>,
    state: Option<PathBuf>,
    #[serde(default)]
    peers: Vec<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRsvp {
    refresh: Option<Spanned<String>>,
    default_floor_percent: Option<Spanned<u8>>,
    gs_buffer: Option<Spanned<String>>,
    lateness_budget: Option<Spanned<String>>,
    protected: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPort {
    ifname: Spanned<String>,
    rate: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRoute {
    prefix: Spanned<String>,
    gateway: Spanned<String>,
    metric: Option<u32>,
}

impl RouterDaemonConfig {
    /// Reads and validates `path`.
    pub fn from_file(path: &Path) -> Result<RouterDaemonConfig, ConfigError> {
        RouterDaemonConfig::from_toml_str(&crate::switchd::config::read_config(path)?)
    }

    /// Parses and validates a configuration.
    pub fn from_toml_str(text: &str) -> Result<RouterDaemonConfig, ConfigError> {
        let src = Source(text);
        let raw: RawConfig = src.parse()?;
        if raw.port.is_empty() {
            return Err(ConfigError::NoPorts);
        }
        let mut ports: Vec<RouterPortSpec> = Vec::with_capacity(raw.port.len());
        for p in raw.port {
            let ifname = p.ifname.get_ref().clone();
            if ifname.is_empty() || ifname.len() > 15 {
                return Err(src.error(p.ifname.span(), "ifname must be 1 to 15 characters"));
            }
            if ports.iter().any(|q| q.ifname == ifname) {
                return Err(src.error(p.ifname.span(), format!("port {ifname} is listed twice")));
            }
            let rate_bps = match p.rate {
                None => None,
                Some(r) => Some(
                    parse_rate(r.get_ref())
                        .ok()
                        .filter(|&bps| bps > 0)
                        .ok_or_else(|| {
                            src.error(r.span(), "rate: expected a rate above 0, like \"100mbit\"")
                        })?,
                ),
            };
            ports.push(RouterPortSpec { ifname, rate_bps });
        }
        let mut routes = Vec::with_capacity(raw.route.len());
        for r in raw.route {
            let prefix: Ipv4Prefix = r
                .prefix
                .get_ref()
                .parse()
                .map_err(|e| src.error(r.prefix.span(), format!("prefix: {e}")))?;
            let gateway: Ipv4Addr =
                r.gateway.get_ref().parse().map_err(|_| {
                    src.error(r.gateway.span(), "gateway: expected an IPv4 address")
                })?;
            routes.push(RouteSpec {
                prefix,
                gateway,
                metric: r.metric.unwrap_or(0),
            });
        }
        let rsvp = match raw.rsvp {
            None => None,
            Some(r) => {
                let mut settings = RsvpSettings::default();
                if let Some(v) = r.refresh {
                    settings.refresh = parse_duration(v.get_ref())
                        .ok()
                        .filter(|d| !d.is_zero() && d.as_millis() <= u128::from(u32::MAX))
                        .ok_or_else(|| {
                            src.error(
                                v.span(),
                                "refresh: expected a duration above 0, like \"30s\"",
                            )
                        })?;
                }
                if let Some(v) = r.default_floor_percent {
                    if *v.get_ref() > 99 {
                        return Err(src.error(v.span(), "default_floor_percent: 0 to 99"));
                    }
                    settings.default_floor_percent = *v.get_ref();
                }
                if let Some(v) = r.gs_buffer {
                    settings.gs_buffer_bytes = parse_size(v.get_ref())
                        .ok()
                        .and_then(|b| usize::try_from(b).ok())
                        .ok_or_else(|| {
                            src.error(v.span(), "gs_buffer: expected a size, like \"256KiB\"")
                        })?;
                }
                if let Some(v) = r.lateness_budget {
                    settings.lateness_budget = parse_duration(v.get_ref())
                        .ok()
                        .filter(|d| *d <= std::time::Duration::from_secs(1))
                        .ok_or_else(|| {
                            src.error(
                                v.span(),
                                "lateness_budget: expected a duration up to 1s, like \"4ms\"",
                            )
                        })?;
                }
                if let Some(p) = r.protected {
                    settings.protected = p;
                }
                Some(settings)
            }
        };
        let mut rsvp = rsvp;
        let mut http = None;
        let mut pipes_state = None;
        if let Some(psip) = raw.psip {
            let span = psip.span();
            let psip = psip.into_inner();
            let Some(settings) = rsvp.as_mut() else {
                return Err(src.error(
                    span,
                    "[psip]: pipes are set up with RSVP: add an [rsvp] table",
                ));
            };
            pipes_state = psip.state;
            if let Some(h) = psip.http {
                http = Some(h.get_ref().parse::<std::net::SocketAddr>().map_err(|_| {
                    src.error(
                        h.span(),
                        "http: expected an address and port, like \"198.18.1.1:8080\"",
                    )
                })?);
            }
            for p in psip.peers {
                settings.psip_peers.push(
                    p.get_ref()
                        .parse()
                        .map_err(|e| src.error(p.span(), format!("peers: {e}")))?,
                );
            }
        }
        let mut pipes: Vec<PipeRequest> = Vec::with_capacity(raw.pipe.len());
        for p in raw.pipe {
            let span = p.span();
            if rsvp.is_none() {
                return Err(src.error(
                    span,
                    "[[pipe]]: pipes are set up with RSVP: add an [rsvp] table",
                ));
            }
            let request = p.into_inner();
            if let Err(e) = request.to_spec() {
                return Err(src.error(span, format!("[[pipe]] {:?}: {}", request.name, e.message)));
            }
            if pipes.iter().any(|q| q.name == request.name) {
                return Err(src.error(span, format!("[[pipe]] {:?} is listed twice", request.name)));
            }
            pipes.push(request);
        }
        Ok(RouterDaemonConfig {
            name: raw.name.unwrap_or_else(|| "router".to_string()),
            control_socket: raw.control_socket,
            answer_local: raw.answer_local.unwrap_or(false),
            kernel_routes: raw.kernel_routes.unwrap_or(true),
            // AF_XDP where it opens, AF_PACKET elsewhere, with the reason logged (docs/afxdp.md).
            data_plane: raw.data_plane.unwrap_or(crate::xdp::DataPlane::Auto),
            fast_path: raw.fast_path.unwrap_or(true),
            ports,
            routes,
            rsvp,
            http,
            pipes,
            pipes_state,
            realtime_priority: src.realtime_priority(raw.realtime_priority.as_ref())?,
            napi_threads: raw.napi_threads.unwrap_or(false),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_file_parses() {
        let c = RouterDaemonConfig::from_toml_str(
            "name = \"r1\"\ncontrol_socket = \"/run/r1.sock\"\nanswer_local = true\n\
             kernel_routes = false\nrealtime_priority = 30\nnapi_threads = true\n[[port]]\nifname = \"eth1\"\nrate = \"100mbit\"\n\
             [[port]]\nifname = \"eth2\"\n[[route]]\nprefix = \"198.18.9.0/24\"\n\
             gateway = \"198.18.12.2\"\nmetric = 10\n",
        )
        .expect("valid");
        assert_eq!(c.name, "r1");
        assert!(c.answer_local && !c.kernel_routes);
        assert_eq!(c.realtime_priority, 30);
        assert!(c.napi_threads);
        assert_eq!(c.ports[0].rate_bps, Some(100_000_000));
        assert_eq!(c.ports[1].rate_bps, None);
        assert_eq!(c.routes[0].prefix.to_string(), "198.18.9.0/24");
        assert_eq!(c.routes[0].gateway, Ipv4Addr::new(198, 18, 12, 2));
        assert_eq!(c.routes[0].metric, 10);
        let d = RouterDaemonConfig::from_toml_str("[[port]]\nifname = \"eth1\"\n").expect("valid");
        assert!(
            !d.answer_local && d.kernel_routes,
            "defaults: the kernel answers, routes mirrored"
        );
        assert!(d.rsvp.is_none());
        assert_eq!(d.realtime_priority, 20, "a switch's");
        assert!(!d.napi_threads, "off by default, as in the switch");
        let r = RouterDaemonConfig::from_toml_str(
            "[[port]]\nifname = \"eth1\"\n[rsvp]\nrefresh = \"5s\"\ndefault_floor_percent = 20\ngs_buffer = \"1MiB\"\nlateness_budget = \"4ms\"\n",
        )
        .expect("valid")
        .rsvp
        .expect("rsvp on");
        assert_eq!(r.refresh, std::time::Duration::from_secs(5));
        assert_eq!((r.default_floor_percent, r.gs_buffer_bytes), (20, 1 << 20));
        assert_eq!(r.lateness_budget, std::time::Duration::from_millis(4));
        assert!(r.protected, "the protected channel by default");
        let exposed = RouterDaemonConfig::from_toml_str(
            "[[port]]\nifname = \"eth1\"\n[rsvp]\nprotected = false\n",
        )
        .expect("valid")
        .rsvp
        .expect("rsvp on");
        assert!(!exposed.protected);
        let on = RouterDaemonConfig::from_toml_str("[[port]]\nifname = \"eth1\"\n[rsvp]\n")
            .expect("valid");
        assert_eq!(on.rsvp, Some(RsvpSettings::default()));
        let pipes = RouterDaemonConfig::from_toml_str(
            "[[port]]\nifname = \"eth1\"\n[rsvp]\n[psip]\nhttp = \"198.18.1.1:8080\"\n\
             peers = [\"198.18.0.0/16\"]\n[[pipe]]\nname = \"video\"\nfrom = [\"198.18.1.0/24\"]\n\
             to = \"198.18.3.0/24\"\nrate = \"3mbit\"\n",
        )
        .expect("valid");
        assert_eq!(pipes.http, Some("198.18.1.1:8080".parse().unwrap()));
        assert_eq!(
            pipes.rsvp.unwrap().psip_peers,
            vec!["198.18.0.0/16".parse().unwrap()]
        );
        assert_eq!(pipes.pipes[0].to_spec().unwrap().rate_bps, 3_000_000);
    }

    #[test]
    fn errors_name_their_line_and_column() {
        for (text, line, column, needle) in [
            ("[[port]]\nifname = \"eth1\"\nrate = \"fast\"\n", 3, 8, "rate"),
            ("[[port]]\nifname = \"eth1\"\n[[port]]\nifname = \"eth1\"\n", 4, 10, "twice"),
            ("[[port]]\nifname = \"eth1\"\n[[route]]\nprefix = \"198.18.9.0/33\"\ngateway = \"1.2.3.4\"\n", 4, 10, "prefix"),
            ("[[port]]\nifname = \"eth1\"\n[[route]]\nprefix = \"198.18.9.0/24\"\ngateway = \"nowhere\"\n", 5, 11, "gateway"),
            ("colour = \"red\"\n[[port]]\nifname = \"eth1\"\n", 1, 1, "colour"),
            ("realtime_priority = 100\n[[port]]\nifname = \"eth1\"\n", 1, 21, "realtime_priority"),
            ("[[port]]\nifname = \"eth1\"\n[rsvp]\nrefresh = \"0s\"\n", 4, 11, "refresh"),
            ("[[port]]\nifname = \"eth1\"\n[rsvp]\ndefault_floor_percent = 100\n", 4, 25, "floor"),
            ("[[port]]\nifname = \"eth1\"\n[psip]\nhttp = \"127.0.0.1:80\"\n", 3, 1, "[rsvp]"),
            ("[[port]]\nifname = \"eth1\"\n[rsvp]\n[psip]\nhttp = \"nowhere\"\n", 5, 8, "http"),
            ("[[port]]\nifname = \"eth1\"\n[rsvp]\n[psip]\npeers = [\"1.2.3.4/99\"]\n", 5, 10, "peers"),
            ("[[port]]\nifname = \"eth1\"\n[rsvp]\n[[pipe]]\nname = \"v\"\nto = \"198.18.3.0/24\"\nrate = \"fast\"\n", 4, 1, "rate"),
            ("[[port]]\nifname = \"eth1\"\n[[pipe]]\nname = \"v\"\nto = \"198.18.3.0/24\"\nrate = \"1mbit\"\n", 3, 1, "[rsvp]"),
        ] {
            match RouterDaemonConfig::from_toml_str(text) {
                Err(ConfigError::Invalid {
                    line: l,
                    column: c,
                    message,
                }) => {
                    assert_eq!((l, c), (line, column), "{text}: {message}");
                    assert!(message.contains(needle), "{message}");
                }
                other => panic!("{text}: {other:?}"),
            }
        }
        assert!(matches!(
            RouterDaemonConfig::from_toml_str("name = \"r\"\n"),
            Err(ConfigError::NoPorts)
        ));
    }
}
