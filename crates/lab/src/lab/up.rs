//! Building a lab, step by step (docs/lab.md "What `up` does"): namespaces, veth pairs created
//! directly inside them (routers' forwarding and reverse-path filter set first), offloads off,
//! bridges, addresses, `tbf` link emulation, interfaces up, gateways and static routes,
//! `state.json`, then the rtlan switches, the shared segments, the RETHER bridges, the hosts'
//! RETHER agents, the routers and their BIRD or FRR. Any failure rolls everything back.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::bump::{self, BUMP_HOST_IFNAME, BUMP_SEGMENT_IFNAME};
use super::{LabError, LabOptions};
use crate::cmd::{self, CmdError};
use crate::daemon::{self, DaemonError, Launch};
use crate::shaping::TbfParams;
use crate::state::{self, DaemonState, IfaceState, LabState, NodeState, STATE_VERSION};
use crate::topology::{Ospf, Router, RouterKind, SwitchKind, Topology, HOST_IFNAME};
use crate::{netns_name, registry};
use crate::{rether_bridges, routers, segments, switches};

/// The bridge interface of a `linux-bridge` switch.
const BRIDGE_IFNAME: &str = "br0";
/// How long interfaces may take to become operationally up.
const OPER_UP_TIMEOUT: Duration = Duration::from_secs(5);

pub(super) fn up(
    topology: &Topology,
    name: &str,
    options: &LabOptions,
) -> Result<LabState, LabError> {
    if !crate::valid_lab_name(name) {
        return Err(LabError::InvalidName(name.to_string()));
    }
    let has_rtlan = topology.switches.iter().any(|s| {
        matches!(
            s.kind,
            SwitchKind::Rtlan(_) | SwitchKind::Segment(_) | SwitchKind::RetherBridge
        )
    }) || topology.routers.iter().any(|r| r.kind == RouterKind::Rtlan);
    if has_rtlan && !options.rtlan_exe.is_file() {
        return Err(LabError::RtlanExe(options.rtlan_exe.clone()));
    }
    if topology.routers.iter().any(|r| r.ospf == Some(Ospf::Bird)) && find_bird().is_none() {
        return Err(CmdError::NotFound {
            program: BIRD.to_string(),
            package: cmd::package_of(BIRD),
        }
        .into());
    }
    if topology.routers.iter().any(|r| r.ospf == Some(Ospf::Frr)) {
        for program in FRR_DAEMONS {
            if !Path::new(routers::FRR_DIR).join(program).is_file() {
                return Err(CmdError::NotFound {
                    program: format!("{}/{program}", routers::FRR_DIR),
                    package: cmd::package_of("frr"),
                }
                .into());
            }
        }
    }
    let _guard = registry::lifecycle();
    check_abort()?;
    let dir = state::state_dir(name);
    if dir.exists() || !crate::lab_namespaces(name)?.is_empty() {
        return Err(LabError::AlreadyExists(name.to_string()));
    }
    let labs = Path::new(crate::LABS_DIR);
    std::fs::create_dir_all(labs).map_err(|source| LabError::Io {
        what: format!("creating {}", labs.display()),
        source,
    })?;
    // `create_dir` (not `_all`) fails if another process created it meanwhile: the lab is ours.
    match std::fs::create_dir(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(LabError::AlreadyExists(name.to_string()))
        }
        Err(source) => {
            return Err(LabError::Io {
                what: format!("creating {}", dir.display()),
                source,
            })
        }
    }
    registry::register(name);
    match build(topology, name, &dir, options) {
        Ok(state) => Ok(state),
        Err(e) => {
            tracing::warn!(error = %e, lab = name, "lab up failed; rolling back");
            if let Err(down) = crate::down::down_locked(name) {
                eprintln!("rtlan: rolling back lab `{name}`: {down}");
            }
            Err(e)
        }
    }
}

fn check_abort() -> Result<(), LabError> {
    if registry::shutting_down() {
        Err(LabError::Interrupted)
    } else {
        Ok(())
    }
}

/// Whether `node` gets a `tbf` on its link interfaces: hosts, kernel bridges and kernel routers
/// do; rtlan switches and routers pace their own output, and segments and RETHER bridges pace
/// themselves (the medium's rate; each station's token visits).
fn shaped_by_qdisc(topology: &Topology, node: &str) -> bool {
    if let Some(s) = topology.switch(node) {
        return s.kind == SwitchKind::LinuxBridge;
    }
    if let Some(r) = topology.router(node) {
        return r.kind == RouterKind::LinuxRouter;
    }
    true
}

/// The BIRD executable's name.
const BIRD: &str = "bird";

/// FRR's daemons a router with `ospf = "frr"` runs, in start order (ospfd talks to zebra).
const FRR_DAEMONS: [&str; 2] = ["zebra", "ospfd"];

/// The user and group FRR's daemons run as (Debian's `frr` package creates them; they must be
/// in the `frrvty` group, which root is not, for the vty sockets): their uid and gid.
fn frr_ids() -> Option<(u32, u32)> {
    // SAFETY: the name is a NUL-terminated constant; getpwnam(3) returns a pointer to static
    // storage or null, read at once (no other thread of the lab calls getpw*).
    let pw = unsafe { libc::getpwnam(c"frr".as_ptr()) };
    if pw.is_null() {
        return None;
    }
    // SAFETY: `pw` is non-null and points to a valid passwd record (above).
    let (uid, gid) = unsafe { ((*pw).pw_uid, (*pw).pw_gid) };
    Some((uid, gid))
}

/// Starts FRR's zebra, then ospfd, in router `r`'s namespace: configuration, pid files, vty
/// sockets and zebra's API socket in `<state>/<router>.frr/` (owned by the `frr` user), output
/// to `<state>/<router>.zebra.log` and `.ospfd.log`; each is ready when its vty socket accepts.
fn start_frr(
    state: &mut LabState,
    r: &Router,
    netns: &str,
    options: &LabOptions,
) -> Result<(), LabError> {
    let dir = state.state_dir.clone();
    let lab = state.name.clone();
    let frr_err = |source| LabError::Frr {
        router: r.name.clone(),
        source,
    };
    let frr_dir = dir.join(format!("{}.frr", r.name));
    let io = |what: String| {
        move |source| LabError::Io {
            what: what.clone(),
            source,
        }
    };
    std::fs::create_dir_all(&frr_dir).map_err(io(format!("creating {}", frr_dir.display())))?;
    let (uid, gid) = frr_ids().ok_or_else(|| LabError::Io {
        what: "looking up the `frr` user (Debian package frr)".into(),
        source: std::io::Error::from(std::io::ErrorKind::NotFound),
    })?;
    std::os::unix::fs::chown(&frr_dir, Some(uid), Some(gid))
        .map_err(io(format!("chown frr {}", frr_dir.display())))?;
    let zserv = frr_dir.join("zserv.api");
    for daemon in FRR_DAEMONS {
        let config = frr_dir.join(format!("{daemon}.conf"));
        let text = match daemon {
            "zebra" => routers::render_zebra_config(r),
            _ => routers::render_ospfd_config(&state.topology, r),
        };
        daemon::write_config(&config, &text).map_err(frr_err)?;
        let socket = frr_dir.join(format!("{daemon}.vty"));
        let log = dir.join(format!("{}.{daemon}.log", r.name));
        let exe = Path::new(routers::FRR_DIR).join(daemon);
        // Foreground (no `-d`), so the PID the lab records is the daemon's; no vty TCP port
        // (`-P 0`); every path of its own under `frr_dir`, none under /etc/frr or /var/run/frr.
        let args: Vec<OsString> = vec![
            "-f".into(),
            config.clone().into(),
            "-i".into(),
            frr_dir.join(format!("{daemon}.pid")).into(),
            "-z".into(),
            zserv.clone().into(),
            "--vty_socket".into(),
            frr_dir.clone().into(),
            "-P".into(),
            "0".into(),
            "-u".into(),
            "frr".into(),
            "-g".into(),
            "frr".into(),
            "--log".into(),
            "stdout".into(),
        ];
        let launch = Launch {
            exe: &exe,
            args,
            netns,
            log: &log,
            socket: &socket,
            timeout: options.switch_timeout,
        };
        let pid = start(&lab, &launch).map_err(|e| e.map(frr_err))?;
        let record = DaemonState {
            pid,
            socket,
            config,
            log,
        };
        if let Some(n) = state.nodes.iter_mut().find(|n| n.name == r.name) {
            match daemon {
                "zebra" => n.zebra = Some(record),
                _ => n.ospfd = Some(record),
            }
        }
        write_state(state)?;
    }
    Ok(())
}

/// Where `bird` is on `PATH`, if anywhere.
fn find_bird() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(BIRD))
        .find(|p| p.is_file())
}

fn build(
    topology: &Topology,
    name: &str,
    dir: &Path,
    options: &LabOptions,
) -> Result<LabState, LabError> {
    let ns: HashMap<&str, String> = topology
        .node_names()
        .map(|n| (n, netns_name(name, n)))
        .collect();
    // `ns` holds every node and links only name nodes (the topology was validated).
    let ns_of = |node: &str| ns[node].as_str();
    let ipv6_sysctl = Path::new("/proc/sys/net/ipv6").exists();

    for node in topology.node_names() {
        check_abort()?;
        let netns = ns_of(node);
        cmd::ip(&["netns", "add", netns])?;
        if !topology.ipv6 && ipv6_sysctl {
            // Before any interface exists, so that none gets an IPv6 link-local address and
            // none sends router solicitations, MLD reports or DAD probes into measurements.
            cmd::in_netns(
                netns,
                "sysctl",
                &[
                    "-qw",
                    "net.ipv6.conf.all.disable_ipv6=1",
                    "net.ipv6.conf.default.disable_ipv6=1",
                ],
            )?;
        }
        if let Some(r) = topology.router(node) {
            // Before any interface exists, so that every port inherits `default`. A new
            // namespace copies IPv4 settings from the root namespace, whatever they are there.
            // rtlan routers forward in user space and refuse to start while the kernel also
            // forwards; a linux-router is the kernel forwarding. Reverse-path filtering off:
            // with OSPF, a packet may arrive on a port other than the one its reply takes
            // while routes change.
            let forward = match r.kind {
                RouterKind::Rtlan => "net.ipv4.ip_forward=0",
                RouterKind::LinuxRouter => "net.ipv4.ip_forward=1",
            };
            cmd::in_netns(
                netns,
                "sysctl",
                &[
                    "-qw",
                    forward,
                    "net.ipv4.conf.all.rp_filter=0",
                    "net.ipv4.conf.default.rp_filter=0",
                ],
            )?;
        }
        cmd::ip(&["-n", netns, "link", "set", "lo", "up"])?;
    }
    // Hosts on a shared segment reach it through a bump namespace each (`bump`).
    let bumps = bump::bumps(topology);
    let bump_ns: HashMap<&str, String> = bumps
        .iter()
        .map(|b| (b.host.as_str(), crate::bump_netns_name(name, &b.host)))
        .collect();
    for b in &bumps {
        check_abort()?;
        let netns = &bump_ns[b.host.as_str()];
        cmd::ip(&["netns", "add", netns])?;
        if !topology.ipv6 && ipv6_sysctl {
            cmd::in_netns(
                netns,
                "sysctl",
                &[
                    "-qw",
                    "net.ipv6.conf.all.disable_ipv6=1",
                    "net.ipv6.conf.default.disable_ipv6=1",
                ],
            )?;
        }
        cmd::ip(&["-n", netns, "link", "set", "lo", "up"])?;
    }

    for link in &topology.links {
        check_abort()?;
        let [a, b] = &link.ends;
        let bumped = [a, b]
            .into_iter()
            .find_map(|end| bump_ns.get(end.node.as_str()).map(|ns| (end, ns)));
        match bumped {
            // host eth0 ── h0 (bump) and s0 (bump) ── pN (segment).
            Some((host, netns)) => {
                let seg = if std::ptr::eq(host, a) { b } else { a };
                add_veth(
                    (&host.ifname, ns_of(&host.node)),
                    (BUMP_HOST_IFNAME, netns),
                    topology.offloads,
                )?;
                add_veth(
                    (BUMP_SEGMENT_IFNAME, netns),
                    (&seg.ifname, ns_of(&seg.node)),
                    topology.offloads,
                )?;
            }
            None => add_veth(
                (&a.ifname, ns_of(&a.node)),
                (&b.ifname, ns_of(&b.node)),
                topology.offloads,
            )?,
        }
        // An rtlan switch or router on AF_XDP ports forwards best-effort frames in XDP by
        // redirecting them into the output port (docs/fastpath.md), which a veth accepts only
        // when the other end receives through NAPI: GRO on there, as a physical NIC has it by
        // default. And the node's own end gets a plain FIFO qdisc, as a NIC has one: with a
        // qdisc a veth whose peer's ring is full pushes a transmit back instead of dropping
        // it, so a control frame waits while the node closes the port to the fast path
        // (docs/fastpath.md "The protected control channel"). AF_XDP sends bypass the qdisc
        // itself.
        if options.data_plane != rtlan_linux::xdp::DataPlane::AfPacket
            && options.fast_path
            && bumped.is_none()
        {
            for (switch_end, other) in [(a, b), (b, a)] {
                let rtlan_node =
                    topology.switches.iter().any(|s| {
                        s.name == switch_end.node && matches!(s.kind, SwitchKind::Rtlan(_))
                    }) || topology
                        .routers
                        .iter()
                        .any(|r| r.name == switch_end.node && r.kind == RouterKind::Rtlan);
                if rtlan_node {
                    cmd::in_netns(
                        ns_of(&other.node),
                        "ethtool",
                        &["-K", &other.ifname, "gro", "on"],
                    )?;
                    cmd::run(
                        "tc",
                        &[
                            "-n",
                            ns_of(&switch_end.node),
                            "qdisc",
                            "add",
                            "dev",
                            &switch_end.ifname,
                            "root",
                            "pfifo",
                        ],
                    )?;
                }
            }
        }
    }

    for s in &topology.switches {
        if s.kind != SwitchKind::LinuxBridge {
            continue;
        }
        check_abort()?;
        let netns = ns_of(&s.name);
        cmd::ip(&[
            "-n",
            netns,
            "link",
            "add",
            BRIDGE_IFNAME,
            "type",
            "bridge",
            "stp_state",
            "0",
            "forward_delay",
            "0",
        ])?;
        for (ifname, _) in topology.switch_ports(&s.name) {
            cmd::ip(&["-n", netns, "link", "set", &ifname, "master", BRIDGE_IFNAME])?;
        }
        cmd::ip(&["-n", netns, "link", "set", BRIDGE_IFNAME, "up"])?;
    }

    for h in &topology.hosts {
        let cidr = format!("{}/{}", h.ip, h.prefix_len);
        cmd::ip(&[
            "-n",
            ns_of(&h.name),
            "addr",
            "add",
            &cidr,
            "dev",
            HOST_IFNAME,
        ])?;
    }

    for r in &topology.routers {
        for p in &r.ports {
            let cidr = format!("{}/{}", p.ip, p.prefix_len);
            cmd::ip(&["-n", ns_of(&r.name), "addr", "add", &cidr, "dev", &p.ifname])?;
        }
    }

    let mut use_stab = true;
    let mut qdiscs: HashMap<(String, String), String> = HashMap::new();
    for link in &topology.links {
        let Some(rate) = link.rate_bps else { continue };
        check_abort()?;
        for end in &link.ends {
            if shaped_by_qdisc(topology, &end.node) {
                let q = add_tbf(ns_of(&end.node), &end.ifname, rate, &mut use_stab)?;
                qdiscs.insert((end.node.clone(), end.ifname.clone()), q);
            }
        }
    }

    for link in &topology.links {
        for end in &link.ends {
            cmd::ip(&["-n", ns_of(&end.node), "link", "set", &end.ifname, "up"])?;
        }
    }
    for netns in bump_ns.values() {
        for ifname in [BUMP_HOST_IFNAME, BUMP_SEGMENT_IFNAME] {
            cmd::ip(&["-n", netns, "link", "set", ifname, "up"])?;
        }
    }

    // The kernel attaches an interface's qdisc and sets it operationally up from a work item
    // that may run up to a second later; until then every frame sent on it is dropped. Wait for
    // it, so the first ping after `up` does not lose its ARP request.
    let deadline = Instant::now() + OPER_UP_TIMEOUT;
    let mut links_of = HashMap::new();
    for node in topology.node_names() {
        let mut want: Vec<String> = topology
            .interfaces(node)
            .into_iter()
            .map(|(own, _, _)| own.ifname.clone())
            .collect();
        if topology.switch(node).map(|s| &s.kind) == Some(&SwitchKind::LinuxBridge) {
            want.push(BRIDGE_IFNAME.to_string());
        }
        links_of.insert(node, wait_oper_up(ns_of(node), &want, deadline)?);
    }
    let bump_ifnames = [
        BUMP_HOST_IFNAME.to_string(),
        BUMP_SEGMENT_IFNAME.to_string(),
    ];
    for netns in bump_ns.values() {
        wait_oper_up(netns, &bump_ifnames, deadline)?;
    }

    // Routes need their gateway on a connected subnet, and the kernel only has the connected
    // routes of interfaces that are up.
    for h in &topology.hosts {
        let Some(gw) = h.gateway else { continue };
        let gw = gw.to_string();
        cmd::ip(&["-n", ns_of(&h.name), "route", "add", "default", "via", &gw])?;
    }
    for r in &topology.routers {
        if r.kind == RouterKind::LinuxRouter {
            add_static_routes(ns_of(&r.name), r)?;
        }
    }

    let mut nodes = Vec::new();
    for node in topology.node_names() {
        let netns = ns_of(node).to_string();
        let macs = &links_of[node];
        let interfaces = topology
            .interfaces(node)
            .into_iter()
            .map(|(own, peer, rate_bps)| IfaceState {
                ifname: own.ifname.clone(),
                mac: macs
                    .get(&own.ifname)
                    .map(|l| l.mac.clone())
                    .unwrap_or_default(),
                peer_node: peer.node.clone(),
                peer_ifname: peer.ifname.clone(),
                rate_bps,
                qdisc: qdiscs.get(&(node.to_string(), own.ifname.clone())).cloned(),
            })
            .collect();
        let role = match (
            topology.switch(node).map(|s| &s.kind),
            topology.router(node).map(|r| r.kind),
        ) {
            (Some(SwitchKind::Rtlan(_)), _) => state::ROLE_RTLAN_SWITCH,
            (Some(SwitchKind::LinuxBridge), _) => state::ROLE_LINUX_BRIDGE,
            (Some(SwitchKind::Segment(_)), _) => state::ROLE_SEGMENT,
            (Some(SwitchKind::RetherBridge), _) => state::ROLE_RETHER_BRIDGE,
            (None, Some(RouterKind::Rtlan)) => state::ROLE_RTLAN_ROUTER,
            (None, Some(RouterKind::LinuxRouter)) => state::ROLE_LINUX_ROUTER,
            (None, None) => state::ROLE_HOST,
        };
        nodes.push(NodeState {
            name: node.to_string(),
            netns,
            role: role.to_string(),
            ip: topology.host(node).map(|h| (h.ip, h.prefix_len)),
            interfaces,
            pid: None,
            socket: None,
            config: None,
            log: None,
            bird: None,
            zebra: None,
            ospfd: None,
            bump: None,
        });
    }
    let mut state = LabState {
        version: STATE_VERSION,
        name: name.to_string(),
        state_dir: dir.to_path_buf(),
        topology: topology.clone(),
        nodes,
    };
    write_state(&state)?;
    crate::keys::write_link_keys(topology, dir).map_err(|source| LabError::Io {
        what: format!("writing the link keys under {}", dir.display()),
        source,
    })?;

    for s in &topology.switches {
        let SwitchKind::Rtlan(opts) = &s.kind else {
            continue;
        };
        check_abort()?;
        let switch_err = |source| LabError::Switch {
            switch: s.name.clone(),
            source,
        };
        let config = dir.join(format!("{}.toml", s.name));
        let socket = dir.join(format!("{}.sock", s.name));
        let log = dir.join(format!("{}.log", s.name));
        let text = switches::render_config(topology, &s.name, opts, options, dir, &socket)
            .map_err(switch_err)?;
        let files = DaemonState {
            pid: 0,
            socket,
            config,
            log,
        };
        let run = launch_rtlan(name, options, ns_of(&s.name), "switch", files, &text)
            .map_err(|e| e.map(switch_err))?;
        record_node(&mut state, &s.name, run);
        write_state(&state)?;
    }
    for s in &topology.switches {
        let SwitchKind::Segment(seg) = &s.kind else {
            continue;
        };
        check_abort()?;
        let segment_err = |source| LabError::Segment {
            segment: s.name.clone(),
            source,
        };
        let config = dir.join(format!("{}.toml", s.name));
        let socket = dir.join(format!("{}.sock", s.name));
        let log = dir.join(format!("{}.log", s.name));
        let text = segments::render_config(topology, &s.name, seg, options.data_plane, &socket)
            .map_err(segment_err)?;
        let files = DaemonState {
            pid: 0,
            socket,
            config,
            log,
        };
        let run = launch_rtlan(name, options, ns_of(&s.name), "segment", files, &text)
            .map_err(|e| e.map(segment_err))?;
        record_node(&mut state, &s.name, run);
        write_state(&state)?;
    }
    // RETHER bridges after the segments, whose stations they are on every port (a port's
    // station must find its segment running), and before the hosts' agents: once an agent
    // forwards its host's frames, the way to the other segments is there already. The order
    // among stations does not matter to RETHER: a segment stays in CSMA mode until a session
    // is asked for, and a station starting later joins the ring it hears (docs/rether.md §6).
    for s in &topology.switches {
        if s.kind != SwitchKind::RetherBridge {
            continue;
        }
        check_abort()?;
        let bridge_err = |source| LabError::RetherBridge {
            bridge: s.name.clone(),
            source,
        };
        let config = dir.join(format!("{}.toml", s.name));
        let socket = dir.join(format!("{}.sock", s.name));
        let log = dir.join(format!("{}.log", s.name));
        let text = rether_bridges::render_config(topology, &s.name, options.data_plane, &socket)
            .map_err(bridge_err)?;
        let files = DaemonState {
            pid: 0,
            socket,
            config,
            log,
        };
        let run = launch_rtlan(name, options, ns_of(&s.name), "rether-bridge", files, &text)
            .map_err(|e| e.map(bridge_err))?;
        record_node(&mut state, &s.name, run);
        write_state(&state)?;
    }
    for (b, id) in bumps.iter().zip(bump::station_ids(topology, &bumps)) {
        check_abort()?;
        let agent_err = |source| LabError::Agent {
            host: b.host.clone(),
            source,
        };
        let Some(seg) = topology.segment(&b.segment) else {
            continue;
        };
        let config = bump::agent_config_path(dir, &b.host);
        let socket = dir.join(format!("{}.rether.sock", b.host));
        let log = dir.join(format!("{}.rether.log", b.host));
        let text = bump::render_agent_config(b, id, seg, options.data_plane, &socket)
            .map_err(agent_err)?;
        let netns = &bump_ns[b.host.as_str()];
        let files = DaemonState {
            pid: 0,
            socket,
            config,
            log,
        };
        let agent = launch_rtlan(name, options, netns, "rether", files, &text)
            .map_err(|e| e.map(agent_err))?;
        if let Some(n) = state.nodes.iter_mut().find(|n| n.name == b.host) {
            n.bump = Some(bump::record(b, netns, agent));
        }
        write_state(&state)?;
    }
    for r in &topology.routers {
        check_abort()?;
        start_router(&mut state, r, ns_of(&r.name), options)?;
    }
    tracing::info!(lab = name, nodes = state.nodes.len(), "lab up");
    Ok(state)
}

/// A daemon failed to start: interrupted, or the error of the daemon.
enum StartError {
    Interrupted,
    Failed(DaemonError),
}

impl StartError {
    /// The lab error, with a failed daemon's error wrapped by `wrap`.
    fn map(self, wrap: impl FnOnce(DaemonError) -> LabError) -> LabError {
        match self {
            StartError::Interrupted => LabError::Interrupted,
            StartError::Failed(e) => wrap(e),
        }
    }
}

/// Writes `text` to `files.config` and starts `rtlan <subcommand> --config <it>` of lab `lab` in
/// `netns` (ready when `files.socket` accepts); `files` with its PID.
fn launch_rtlan(
    lab: &str,
    options: &LabOptions,
    netns: &str,
    subcommand: &str,
    files: DaemonState,
    text: &str,
) -> Result<DaemonState, StartError> {
    daemon::write_config(&files.config, text).map_err(StartError::Failed)?;
    let launch = Launch {
        exe: &options.rtlan_exe,
        args: vec![
            subcommand.into(),
            "--config".into(),
            files.config.clone().into(),
        ],
        netns,
        log: &files.log,
        socket: &files.socket,
        timeout: options.switch_timeout,
    };
    let pid = start(lab, &launch)?;
    Ok(DaemonState { pid, ..files })
}

/// Records a node's own daemon in the lab state.
fn record_node(state: &mut LabState, node: &str, run: DaemonState) {
    if let Some(n) = state.nodes.iter_mut().find(|n| n.name == node) {
        n.pid = Some(run.pid);
        n.socket = Some(run.socket);
        n.config = Some(run.config);
        n.log = Some(run.log);
    }
}

/// Starts a daemon of lab `lab` and registers it to be reaped; its PID.
fn start(lab: &str, launch: &Launch<'_>) -> Result<u32, StartError> {
    let started = daemon::start(launch, registry::shutting_down);
    match started {
        Ok(pid) => {
            registry::add_child(lab, pid);
            Ok(pid)
        }
        Err(DaemonError::Interrupted) => Err(StartError::Interrupted),
        Err(e) => Err(StartError::Failed(e)),
    }
}

/// Starts BIRD (with `ospf = "bird"`) or FRR (`ospf = "frr"`) and then `rtlan router` (kind
/// `rtlan`) for router `r`, recording each in `state` as soon as it runs.
fn start_router(
    state: &mut LabState,
    r: &Router,
    netns: &str,
    options: &LabOptions,
) -> Result<(), LabError> {
    let dir = state.state_dir.clone();
    let lab = state.name.clone();
    let router_err = |source| LabError::Router {
        router: r.name.clone(),
        source,
    };
    if r.ospf == Some(Ospf::Bird) {
        let bird_err = |source| LabError::Bird {
            router: r.name.clone(),
            source,
        };
        let config = dir.join(format!("{}.bird.conf", r.name));
        let socket = dir.join(format!("{}.bird.ctl", r.name));
        let log = dir.join(format!("{}.bird.log", r.name));
        let pidfile = dir.join(format!("{}.bird.pid", r.name));
        daemon::write_config(&config, &routers::render_bird_config(&state.topology, r))
            .map_err(bird_err)?;
        let exe = find_bird().unwrap_or_else(|| PathBuf::from(BIRD));
        let args: Vec<OsString> = vec![
            "-f".into(),
            "-c".into(),
            config.clone().into(),
            "-s".into(),
            socket.clone().into(),
            "-P".into(),
            pidfile.into(),
        ];
        let launch = Launch {
            exe: &exe,
            args,
            netns,
            log: &log,
            socket: &socket,
            timeout: options.switch_timeout,
        };
        let pid = start(&lab, &launch).map_err(|e| e.map(bird_err))?;
        if let Some(n) = state.nodes.iter_mut().find(|n| n.name == r.name) {
            n.bird = Some(DaemonState {
                pid,
                socket,
                config,
                log,
            });
        }
        write_state(state)?;
    }
    if r.ospf == Some(Ospf::Frr) {
        start_frr(state, r, netns, options)?;
    }
    if r.kind != RouterKind::Rtlan {
        return Ok(());
    }
    let config = dir.join(format!("{}.toml", r.name));
    let socket = dir.join(format!("{}.sock", r.name));
    let log = dir.join(format!("{}.log", r.name));
    let text = routers::render_config(
        &state.topology,
        r,
        &socket,
        options.data_plane,
        (options.fast_path, options.napi_threads),
    )
    .map_err(router_err)?;
    daemon::write_config(&config, &text).map_err(router_err)?;
    let launch = Launch {
        exe: &options.rtlan_exe,
        args: vec!["router".into(), "--config".into(), config.clone().into()],
        netns,
        log: &log,
        socket: &socket,
        timeout: options.switch_timeout,
    };
    let pid = start(&lab, &launch).map_err(|e| e.map(router_err))?;
    if let Some(n) = state.nodes.iter_mut().find(|n| n.name == r.name) {
        n.pid = Some(pid);
        n.socket = Some(socket);
        n.config = Some(config);
        n.log = Some(log);
    }
    write_state(state)
}

/// Installs a `linux-router`'s static routes into its namespace's kernel.
fn add_static_routes(netns: &str, r: &Router) -> Result<(), LabError> {
    for route in &r.routes {
        let prefix = format!("{}/{}", route.prefix, route.prefix_len);
        let gateway = route.gateway.to_string();
        let metric = route.metric.to_string();
        cmd::ip(&[
            "-n", netns, "route", "add", &prefix, "via", &gateway, "metric", &metric,
        ])?;
    }
    Ok(())
}

/// Creates a veth pair with each end `(ifname, netns)` made directly inside its namespace,
/// offloads off unless `offloads`.
fn add_veth(a: (&str, &str), b: (&str, &str), offloads: bool) -> Result<(), LabError> {
    cmd::ip(&[
        "link", "add", "name", a.0, "netns", a.1, "type", "veth", "peer", "name", b.0, "netns", b.1,
    ])?;
    if !offloads {
        for (ifname, netns) in [a, b] {
            cmd::in_netns(
                netns,
                "ethtool",
                &[
                    "-K", ifname, "tx", "off", "tso", "off", "gso", "off", "gro", "off",
                ],
            )?;
        }
    }
    Ok(())
}

/// Adds the link-rate `tbf` on `ifname` and returns the qdisc spec used. Falls back to plain
/// `tbf` (once, for the whole lab) if the kernel refuses the size table.
fn add_tbf(netns: &str, ifname: &str, rate: u64, use_stab: &mut bool) -> Result<String, LabError> {
    let params = TbfParams::for_rate(rate);
    let run = |stab: bool| -> Result<String, CmdError> {
        let spec = params.tc_args(stab);
        let mut args = vec!["-n", netns, "qdisc", "add", "dev", ifname, "root"];
        args.extend(spec.iter().map(String::as_str));
        cmd::run("tc", &args)?;
        Ok(spec.join(" "))
    };
    if *use_stab {
        match run(true) {
            Ok(spec) => return Ok(spec),
            Err(e @ CmdError::Failed { .. }) => {
                tracing::warn!(error = %e, "tc refused the size table; links are shaped \
                    without Ethernet framing overhead");
                eprintln!("rtlan: warning: {e}; shaping without framing overhead (docs/lab.md)");
                *use_stab = false;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(run(false)?)
}

/// What `ip -j link show` says about one interface.
pub(super) struct LinkInfo {
    mac: String,
    operstate: String,
}

/// Interface name → MAC address and operational state in `netns`, from `ip -j link show`.
fn read_links(netns: &str) -> Result<HashMap<String, LinkInfo>, LabError> {
    let text = cmd::ip(&["-j", "-n", netns, "link", "show"])?;
    let links: Vec<serde_json::Value> =
        serde_json::from_str(&text).map_err(|source| LabError::BadState {
            path: format!("<output of ip -j -n {netns} link show>").into(),
            source,
        })?;
    Ok(links
        .iter()
        .filter_map(|l| {
            let field = |k: &str| l.get(k).and_then(|v| v.as_str()).map(str::to_string);
            let info = LinkInfo {
                mac: field("address")?,
                operstate: field("operstate").unwrap_or_default(),
            };
            Some((field("ifname")?, info))
        })
        .collect())
}

/// Polls `netns` until every interface in `want` is operationally up; returns the last listing.
pub(super) fn wait_oper_up(
    netns: &str,
    want: &[String],
    deadline: Instant,
) -> Result<HashMap<String, LinkInfo>, LabError> {
    loop {
        let links = read_links(netns)?;
        let down: Vec<&str> = want
            .iter()
            .filter(|i| links.get(*i).is_none_or(|l| l.operstate != "UP"))
            .map(String::as_str)
            .collect();
        if down.is_empty() {
            return Ok(links);
        }
        check_abort()?;
        if Instant::now() >= deadline {
            return Err(LabError::NotOperational {
                netns: netns.to_string(),
                interfaces: down.join(", "),
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn write_state(state: &LabState) -> Result<(), LabError> {
    let path = state::state_file(&state.state_dir);
    let io = |source| LabError::Io {
        what: format!("writing {}", path.display()),
        source,
    };
    // serde_json cannot fail on this tree of strings, numbers and options.
    let text = serde_json::to_string_pretty(state).map_err(|e| io(std::io::Error::other(e)))?;
    // Write then rename, so a reader never sees half a file.
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, text).map_err(io)?;
    std::fs::rename(&tmp, &path).map_err(io)
}
