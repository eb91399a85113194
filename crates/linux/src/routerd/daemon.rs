//! The router daemon's loop: the router core as the driver's node, the kernel route mirror and
//! the control socket on the same `epoll`.

use std::os::fd::AsRawFd;
use std::sync::atomic::AtomicBool;

use rtlan_core::router::node::MAX_FRAME;
use rtlan_core::router::{
    Ipv4Prefix, NextHop, Route, RouteSource, Router, RouterConfig, RouterPort, StaticRoute,
};
use rtlan_core::{Medium, PortId};
use rtlan_wire::ethernet::Address;

use super::pipes::{self, HttpApi, PipeRequest, PipeStore};
use super::{nanos, Error, RouterDaemonConfig, RunReport};
use crate::clock;
use crate::driver::{Driver, DriverOptions, USER_TOKEN_BASE};
use crate::linkwatch::LinkWatch;
use crate::mgmt::MgmtError;
use crate::netlink::{KernelRoute, Netlink};
use crate::packet::PortOptions;
use crate::switchd::control::ControlServer;
use crate::xdp::{AnyPort, RouterFastPath, Steering};

/// Token of the route notifications (above the control server's span).
const ROUTE_TOKEN: u64 = USER_TOKEN_BASE + (1 << 41);

/// Token of the HTTP server's wake-ups.
const HTTP_TOKEN: u64 = USER_TOKEN_BASE + (1 << 41) + 1;

/// A control request (`docs/router.md`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
enum Request {
    /// Liveness; answers `"pong"`.
    Ping,
    /// The core's counters and the shell's.
    Stats,
    /// The forwarding table.
    Routes,
    /// Resolved neighbours.
    Neighbours,
    /// The configuration in force.
    Config,
    /// Provisioned pipes started or ended here (QSR §5).
    Pipes,
    /// Starts a pipe.
    PipeCreate(PipeRequest),
    /// Deletes a pipe started here, by name.
    PipeDelete {
        /// Its name.
        name: String,
    },
}

/// One route as `routes` lists it.
#[derive(serde::Serialize)]
struct RouteView {
    prefix: String,
    gateway: Option<std::net::Ipv4Addr>,
    port: String,
    source: &'static str,
    metric: u32,
}

pub(super) struct Daemon {
    config: RouterDaemonConfig,
    driver: Driver<Router, AnyPort>,
    control: Option<ControlServer>,
    netlink: Netlink,
    routes_watch: Option<LinkWatch>,
    mirror: KernelMirror,
    /// The best-effort fast path's mirror (docs/fastpath.md "The router"), if on.
    fast: Option<super::fastpath::Mirror>,
    http: Option<HttpApi>,
    store: PipeStore,
    /// With RSVP: a raw IPPROTO_RSVP socket that is never read, so that the kernel of the
    /// router's namespace, which gets its own copy of every RSVP message addressed to the
    /// router, delivers it there instead of answering "protocol unreachable" (the core's
    /// engine handles the copy from the port).
    _rsvp_sink: Option<std::os::fd::OwnedFd>,
}

/// A raw IPv4 socket for protocol 46 (RSVP) with a small receive buffer: the kernel queues its
/// copies there and drops them when full, which is all it is for.
fn rsvp_sink() -> std::io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: socket(2) with constant arguments; the descriptor is owned from here on.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 46) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is a new, valid descriptor nothing else owns.
    let owned = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
    let size: libc::c_int = 4096;
    // SAFETY: a valid socket, a pointer to a c_int and its size.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&size as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(owned)
}

/// The kernel routes mirrored into the core.
struct KernelMirror {
    /// Interface index of each port.
    ifindex: Vec<u32>,
    /// The kernel routes installed in the core, to remove the ones that disappear.
    installed: Vec<(Ipv4Prefix, Route)>,
    /// Times the table was read.
    syncs: u64,
}

impl KernelMirror {
    /// Reads the kernel's main table and makes the core's kernel routes match it.
    fn sync(&mut self, netlink: &mut Netlink, router: &mut Router) {
        self.syncs += 1;
        let routes = match netlink.ipv4_routes() {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!("reading the kernel's routes: {e}");
                return;
            }
        };
        let wanted: Vec<(Ipv4Prefix, Route)> =
            routes.iter().filter_map(|r| self.mirror_of(r)).collect();
        for (prefix, route) in &self.installed {
            if !wanted.contains(&(*prefix, *route)) {
                router.remove_route(*prefix, RouteSource::Kernel);
                if !wanted.iter().any(|(p, _)| p == prefix) {
                    tracing::info!(%prefix, "kernel route removed");
                }
            }
        }
        let mut installed = Vec::with_capacity(wanted.len());
        for (prefix, route) in wanted {
            let fresh = !self.installed.contains(&(prefix, route));
            if router.install_route(prefix, route) {
                if fresh {
                    tracing::info!(%prefix, gateway = ?route.next_hop.gateway, port = route.next_hop.port.0, "kernel route installed");
                }
                installed.push((prefix, route));
            }
        }
        self.installed = installed;
    }

    /// The core route of a kernel route: only routes out of one of our ports, and not the
    /// kernel's own routes for the interface addresses (the core has those as connected).
    fn mirror_of(&self, r: &KernelRoute) -> Option<(Ipv4Prefix, Route)> {
        if r.connected {
            return None;
        }
        let port = self.ifindex.iter().position(|&i| Some(i) == r.oif)?;
        let prefix = Ipv4Prefix::new(r.dst, r.prefix_len).ok()?;
        Some((
            prefix,
            Route {
                next_hop: NextHop {
                    gateway: r.gateway,
                    port: PortId(port as u16),
                },
                source: RouteSource::Kernel,
                metric: r.metric,
            },
        ))
    }
}

impl Daemon {
    pub(super) fn new(config: RouterDaemonConfig) -> Result<Daemon, Error> {
        let mut netlink = Netlink::open()?;
        let options = PortOptions::default();
        let mut ports = Vec::with_capacity(config.ports.len());
        let mut router_ports = Vec::with_capacity(config.ports.len());
        let mut ifindex = Vec::with_capacity(config.ports.len());
        // Every port's address first: an AF_XDP port's program leaves all of them to the kernel.
        let mut addresses = Vec::with_capacity(config.ports.len());
        for spec in &config.ports {
            crate::packet::iface_index(&spec.ifname).map_err(|source| Error::Port {
                ifname: spec.ifname.clone(),
                source,
            })?;
            let address = netlink
                .ipv4_addresses(&spec.ifname)?
                .into_iter()
                .next()
                .ok_or_else(|| Error::NoAddress(spec.ifname.clone()))?;
            addresses.push(address);
        }
        // The fast path's maps come first: every port's program (XDP or TC) is built with them.
        let maps = crate::xdp::fastpath::maps_for(config.fast_path, || {
            RouterFastPath::new(config.ports.len() as u32)
        });
        let mut opened = Vec::with_capacity(config.ports.len());
        for (i, spec) in config.ports.iter().enumerate() {
            let fast = match &maps {
                Some(maps) => {
                    let mac =
                        crate::packet::iface_mac(&spec.ifname).map_err(|source| Error::Port {
                            ifname: spec.ifname.clone(),
                            source,
                        })?;
                    Some(maps.program_for(i as u32, mac, MAX_FRAME as u32))
                }
                None => None,
            };
            let steering = Steering::Router {
                addresses: addresses.clone(),
                fast,
            };
            let port = AnyPort::open(&spec.ifname, config.data_plane, &steering, &options)
                .map_err(|e| match e.split() {
                    Ok(source) => Error::Port {
                        ifname: spec.ifname.clone(),
                        source,
                    },
                    Err(source) => Error::Xdp(source),
                })?;
            tracing::info!(ifname = %spec.ifname, kind = port.kind(), "port open");
            opened.push(port);
        }
        let fast = maps.map(|maps| super::fastpath::Mirror::new(maps, &opened));
        for ((spec, &(addr, prefix_len)), port) in config.ports.iter().zip(&addresses).zip(opened) {
            ifindex.push(crate::driver::Port::ifindex(&port));
            router_ports.push(RouterPort {
                name: spec.ifname.clone(),
                mac: Address(crate::driver::Port::mac(&port).0),
                addr,
                prefix_len,
                medium: match spec.rate_bps {
                    Some(rate_bps) => Medium::FullDuplex { rate_bps },
                    None => Medium::Unpaced,
                },
            });
            ports.push(port);
        }
        let mut core = RouterConfig::new(router_ports);
        core.answer_local = config.answer_local;
        // Nothing consumes trapped frames here: the kernel has its own copy of each.
        core.trap_queue = 0;
        core.rsvp = config.rsvp.clone();
        core.routes = config
            .routes
            .iter()
            .map(|r| StaticRoute {
                prefix: r.prefix,
                gateway: r.gateway,
                metric: r.metric,
            })
            .collect();
        let mut router = Router::new(core, clock::now())?;
        if fast.is_some() {
            router.track_fast_path();
        }
        let driver = Driver::new(router, ports, DriverOptions::default())?;
        let control = match &config.control_socket {
            Some(path) => Some(ControlServer::bind(path, driver.epoll())?),
            None => None,
        };
        let routes_watch = if config.kernel_routes {
            let watch = LinkWatch::open_routes().map_err(|source| Error::Io {
                what: "subscribing to route notifications",
                source,
            })?;
            driver
                .epoll()
                .add(watch.as_raw_fd(), libc::EPOLLIN as u32, ROUTE_TOKEN)
                .map_err(|source| Error::Io {
                    what: "watching route notifications",
                    source,
                })?;
            Some(watch)
        } else {
            None
        };
        let rsvp_sink = match config.rsvp {
            Some(_) => Some(rsvp_sink().map_err(|source| Error::Io {
                what: "opening the RSVP socket",
                source,
            })?),
            None => None,
        };
        let store = PipeStore::open(config.pipes_state.as_deref()).map_err(Error::PipeState)?;
        let http = match config.http {
            Some(addr) => {
                let api = HttpApi::start(addr).map_err(|source| Error::Io {
                    what: "starting the pipe page and API (`[psip] http`)",
                    source,
                })?;
                driver
                    .epoll()
                    .add(api.wake_fd(), libc::EPOLLIN as u32, HTTP_TOKEN)
                    .map_err(|source| Error::Io {
                        what: "watching the HTTP server",
                        source,
                    })?;
                tracing::info!(addr = %api.addr, "pipe page and API listening");
                Some(api)
            }
            None => None,
        };
        let mut daemon = Daemon {
            config,
            driver,
            control,
            netlink,
            routes_watch,
            http,
            store,
            _rsvp_sink: rsvp_sink,
            mirror: KernelMirror {
                ifindex,
                installed: Vec::new(),
                syncs: 0,
            },
            fast,
        };
        if daemon.config.kernel_routes {
            let Daemon {
                driver,
                netlink,
                mirror,
                ..
            } = &mut daemon;
            mirror.sync(netlink, driver.node_mut());
        }
        let now = clock::now();
        // The configuration's pipes, then those created through the API before a restart
        // (a name in both is the configuration's).
        let kept: Vec<PipeRequest> = daemon
            .store
            .requests()
            .iter()
            .filter(|k| !daemon.config.pipes.iter().any(|p| p.name == k.name))
            .cloned()
            .collect();
        for (p, from) in daemon
            .config
            .pipes
            .iter()
            .map(|p| (p, "configuration"))
            .chain(kept.iter().map(|p| (p, "state file")))
        {
            // Checked when read; what remains (routes) settles with time.
            let started = p.to_spec().and_then(|spec| {
                daemon
                    .driver
                    .node_mut()
                    .create_pipe(now, spec)
                    .map_err(pipes::pipe_error)
            });
            match started {
                Ok(_) => tracing::info!(pipe = %p.name, to = %p.to, from, "pipe started"),
                Err(e) => tracing::warn!(pipe = %p.name, from, "pipe not started: {e}"),
            }
        }
        tracing::info!(
            name = %daemon.config.name,
            ports = ?daemon.config.ports.iter().map(|p| p.ifname.as_str()).collect::<Vec<_>>(),
            routes = daemon.driver.node().tables().fib.len(),
            "router running"
        );
        Ok(daemon)
    }

    pub(super) fn run(&mut self, shutdown: &AtomicBool) -> Result<(), Error> {
        let Daemon {
            config,
            driver,
            control,
            netlink,
            routes_watch,
            mirror,
            fast,
            http,
            store,
            ..
        } = self;
        // Read by the control socket, written around each transmit: the hooks run one after
        // another on this thread, so a run-time borrow never conflicts.
        let fast = std::cell::RefCell::new(fast);
        crate::service::ready(&format!("router {} forwarding", config.name));
        let on_user_event = |driver: &mut crate::driver::Driver<_, _>, token, flags| {
            if token == ROUTE_TOKEN {
                if routes_watch.as_mut().is_some_and(|w| w.drain() > 0) {
                    mirror.sync(netlink, driver.node_mut());
                }
                return;
            }
            if token == HTTP_TOKEN {
                if let Some(api) = http.as_mut() {
                    let router = driver.node_mut();
                    api.on_wake(|call| {
                        pipes::dispatch(call, router, store, clock::now(), &config.name)
                    });
                }
                return;
            }
            let Some(control) = control.as_mut() else {
                return;
            };
            let shell = ShellStats {
                ports: driver.port_stats(),
                loop_iterations: driver.loop_iterations(),
                route_syncs: mirror.syncs,
                fast_path: fast.borrow().as_ref().map(|m| FastPathStats {
                    ports: m.stats(driver.node()),
                    prefixes: m.prefixes(),
                    errors: m.errors(),
                }),
            };
            let uptime = driver.uptime();
            let (epoll, router) = driver.epoll_and_node();
            control.on_event(epoll, token, flags, |request: Request| {
                respond(request, router, store, config, &shell, uptime)
            });
        };
        // Before each transmit, what the core decided goes into the fast path's maps; after
        // it, where the driver pushed back (docs/fastpath.md "The router").
        let before_tx = |driver: &mut crate::driver::Driver<Router, AnyPort>| {
            if let Some(fast) = fast.borrow_mut().as_mut() {
                fast.sync(driver.node());
            }
        };
        // SIGHUP: routes come from the kernel table as they change; the file's settings need a
        // restart, and a reload names each one that changed.
        let after_io = |driver: &mut crate::driver::Driver<Router, AnyPort>| {
            if let Some(fast) = fast.borrow_mut().as_mut() {
                fast.sample(driver.node(), driver.ports());
            }
            if crate::service::take_reload() {
                crate::service::reload_nothing_live("router", |path| {
                    super::RouterDaemonConfig::from_file(path)
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                });
            }
        };
        driver.run_hooked(shutdown, on_user_event, before_tx, after_io)?;
        crate::service::stopping();
        tracing::info!(name = %self.config.name, "router stopped");
        Ok(())
    }

    pub(super) fn report(&mut self) -> RunReport {
        RunReport {
            name: self.config.name.clone(),
            uptime_ns: nanos(self.driver.uptime()),
            router: self.driver.node().stats().clone(),
            ports: self.driver.port_stats(),
            route_syncs: self.mirror.syncs,
        }
    }
}

/// The shell's part of `stats`.
#[derive(serde::Serialize)]
struct ShellStats {
    ports: Vec<crate::driver::PortStats>,
    /// Data-plane loop iterations since the start (wake-ups, for the benchmarks).
    loop_iterations: u64,
    route_syncs: u64,
    /// The best-effort fast path (docs/fastpath.md "The router"); `null` when off.
    fast_path: Option<FastPathStats>,
}

/// The fast path in `stats`.
#[derive(serde::Serialize)]
struct FastPathStats {
    /// Per port: state and what its program forwarded.
    ports: Vec<crate::switchd::fastpath::FastPathPortStats>,
    /// Prefixes in the program's forwarding table.
    prefixes: usize,
    /// Map updates that failed (each closes the fast path for good).
    errors: u64,
}

fn respond(
    request: Request,
    router: &mut Router,
    store: &mut PipeStore,
    config: &RouterDaemonConfig,
    shell: &ShellStats,
    uptime: std::time::Duration,
) -> Result<serde_json::Value, MgmtError> {
    let names: Vec<&str> = config.ports.iter().map(|p| p.ifname.as_str()).collect();
    let value = match request {
        Request::Ping => Ok(serde_json::Value::String("pong".to_string())),
        Request::Stats => Ok(serde_json::json!({
            "name": config.name,
            "uptime_ns": nanos(uptime),
            "router": router.stats(),
            "shell": shell,
            "max_frame": MAX_FRAME,
        })),
        Request::Routes => serde_json::to_value(
            router
                .tables()
                .fib
                .iter()
                .map(|(prefix, r)| RouteView {
                    prefix: prefix.to_string(),
                    gateway: r.next_hop.gateway,
                    port: names
                        .get(usize::from(r.next_hop.port.0))
                        .map_or_else(|| r.next_hop.port.0.to_string(), |n| (*n).to_string()),
                    source: match r.source {
                        RouteSource::Connected => "connected",
                        RouteSource::Static => "static",
                        RouteSource::Kernel => "kernel",
                    },
                    metric: r.metric,
                })
                .collect::<Vec<_>>(),
        ),
        Request::Neighbours => Ok(serde_json::Value::Array(
            router
                .neighbours()
                .into_iter()
                .map(|(ip, port, mac)| {
                    serde_json::json!({
                        "ip": ip,
                        "port": names.get(usize::from(port.0)).copied().unwrap_or("?"),
                        "mac": mac.to_string(),
                    })
                })
                .collect(),
        )),
        Request::Config => serde_json::to_value(config),
        Request::Pipes => return pipes::list(router, clock::now()),
        Request::PipeCreate(p) => return pipes::create(router, store, clock::now(), &p),
        Request::PipeDelete { name } => return pipes::delete(router, store, clock::now(), &name),
    };
    value.map_err(|e| MgmtError::new("internal", e.to_string()))
}
