//! From a [`Scenario`] to an [`Engine`]: the real EtheReal switch core for every `rtlan` switch
//! (EtheReal §3.3/§3.4; ports in link order, deterministic MACs, port rate = link rate, cycle
//! time, queue bound and unknown-unicast policy from the topology), the real QSR router core for
//! every `rtlan` router (default IP forwarding, QSR paper §4.1, with the address plan's static
//! routes; docs/qsr.md §2.3), a [`Host`] for every host (with its subnet and gateway in a routed
//! topology), and the links between their ports.

use std::net::Ipv4Addr;
use std::time::Duration;

use rtlan_core::node::Medium;
use rtlan_core::router::{Ipv4Prefix, Router, RouterConfig, RouterPort, RsvpSettings, StaticRoute};
use rtlan_core::switch::{PortConfig, RtConfig, Switch, SwitchConfig};
use rtlan_core::time::Instant;
use rtlan_topology::{RouterKind, SwitchKind};
use rtlan_wire::ethernet::Address;

use crate::engine::{Engine, Fault, PortEnd, SimNode};
use crate::host::Host;
use crate::scenario::{FaultKind, Scenario, SourceKind};
use crate::SimError;

/// Default refresh period of RSVP state in simulated routers and hosts (RFC 2205 §3.7's
/// default; `[sim] rsvp_refresh`).
pub const RSVP_REFRESH: Duration = Duration::from_secs(30);

/// Default scheduling cycle of a switch (EtheReal: 10 ms).
pub const DEFAULT_CYCLE: Duration = Duration::from_millis(10);

/// The MAC of port `port` of switch number `index` (`0xffff` = the switch's own MAC):
/// locally administered, `02:53` + index + port.
pub fn switch_mac(index: usize, port: u16) -> Address {
    let i = index as u16;
    let [i0, i1] = i.to_be_bytes();
    let [p0, p1] = port.to_be_bytes();
    Address([0x02, 0x53, i0, i1, p0, p1])
}

/// The MAC of port `port` of router number `index`: locally administered, `02:72` + index +
/// port (`02:53` are switches', `02:00` hosts', `02:52:54:4c` the proxy-MAC plan's).
pub fn router_mac(index: usize, port: u16) -> Address {
    let i = index as u16;
    let [i0, i1] = i.to_be_bytes();
    let [p0, p1] = port.to_be_bytes();
    Address([0x02, 0x72, i0, i1, p0, p1])
}

/// The configuration of router `index` of `scenario`: its ports in link order with the plan's
/// addresses, [`router_mac`] MACs and the link's rate, the plan's static routes, answering ARP
/// and pings itself (no kernel beside it here), and no control plane to hand trapped frames to
/// (they are counted). `kind = "linux-router"` and `ospf` are refused: the simulator runs the
/// rtlan router core with static routes only.
pub fn router_config(scenario: &Scenario, index: usize) -> Result<RouterConfig, SimError> {
    let topo = &scenario.topology;
    let router = &topo.routers[index];
    if router.kind != RouterKind::Rtlan {
        return Err(SimError::Unsupported(format!(
            "router `{}`: only kind \"rtlan\" is simulated (the kernel's forwarding of kind \"{}\" is not modelled)",
            router.name,
            router.kind.name()
        )));
    }
    if router.ospf.is_some() {
        return Err(SimError::Unsupported(format!(
            "router `{}`: `ospf` is not simulated (the simulator runs the rtlan router with the \
             address plan's static routes; no routing daemon)",
            router.name
        )));
    }
    let links = topo.interfaces(&router.name);
    if links.len() != router.ports.len() {
        return Err(SimError::Unsupported(format!(
            "router `{}`: {} links but {} addressed ports",
            router.name,
            links.len(),
            router.ports.len()
        )));
    }
    let ports = router
        .ports
        .iter()
        .zip(links)
        .enumerate()
        .map(|(p, (port, (_, _, rate)))| RouterPort {
            name: port.ifname.clone(),
            mac: router_mac(index, p as u16),
            addr: port.ip,
            prefix_len: port.prefix_len,
            medium: rate.map_or(Medium::Unpaced, |rate_bps| Medium::FullDuplex { rate_bps }),
        })
        .collect();
    let mut routes = Vec::with_capacity(router.routes.len());
    for r in &router.routes {
        let prefix = Ipv4Prefix::new(r.prefix, r.prefix_len).map_err(|e| {
            SimError::Unsupported(format!(
                "router `{}`: route {}/{}: {e}",
                router.name, r.prefix, r.prefix_len
            ))
        })?;
        routes.push(StaticRoute {
            prefix,
            gateway: r.gateway,
            metric: r.metric,
        });
    }
    let mut config = RouterConfig::new(ports);
    config.routes = routes;
    config.answer_local = true;
    config.trap_queue = 0;
    // RSVP on every router: reservations across routers are signalled hop by hop and switched
    // (docs/qsr.md §3); the RFC's 30 s refresh, the jitter seeded by the router's index.
    config.rsvp = Some(RsvpSettings {
        refresh: scenario.sim.rsvp_refresh,
        seed: scenario.sim.seed ^ (index as u64 + 1),
        protected: scenario.sim.rsvp_protected,
        gs_buffer_bytes: scenario.sim.rsvp_gs_buffer,
        ..RsvpSettings::default()
    });
    Ok(config)
}

/// The switch configuration of switch `index` of `scenario`.
pub fn switch_config(scenario: &Scenario, index: usize) -> Result<SwitchConfig, SimError> {
    let topo = &scenario.topology;
    let switch = &topo.switches[index];
    let options = match &switch.kind {
        SwitchKind::Rtlan(options) => options,
        SwitchKind::LinuxBridge => {
            return Err(SimError::Unsupported(format!(
                "switch `{}`: only kind \"rtlan\" is simulated (the Linux bridge is not modelled)",
                switch.name
            )))
        }
        SwitchKind::Segment(_) | SwitchKind::RetherBridge => {
            return Err(SimError::Unsupported(format!(
                "switch `{}`: RETHER segments are simulated by `rtlan experiment rether` on its \
                 CSMA/CD bus (crates/sim/src/segment, docs/rether.md §8), not by `rtlan sim`; \
                 `rtlan lab up` runs this topology",
                switch.name
            )))
        }
    };
    let ports = topo
        .interfaces(&switch.name)
        .into_iter()
        .enumerate()
        .map(|(p, (own, _, rate))| PortConfig {
            name: own.ifname.clone(),
            mac: switch_mac(index, p as u16),
            medium: rate.map_or(Medium::Unpaced, |rate_bps| Medium::FullDuplex { rate_bps }),
            security: Default::default(),
        })
        .collect();
    let nrt_queue_bytes = match options.nrt_queue_bytes {
        Some(b) => Some(usize::try_from(b).map_err(|_| {
            SimError::Unsupported(format!("switch `{}`: queue bound too large", switch.name))
        })?),
        None => None,
    };
    Ok(SwitchConfig {
        mac: switch_mac(index, 0xffff),
        mgmt_ip: Some(options.mgmt_ip),
        ports,
        unknown_unicast: options.unknown_unicast.unwrap_or_default(),
        cycle_time: options.cycle_time.unwrap_or(DEFAULT_CYCLE),
        ageing_time: Duration::from_secs(300),
        nrt_queue_bytes,
        pending_capacity: scenario.sim.pending_capacity,
        pending_timeout: Duration::from_millis(200),
        rt: RtConfig {
            max_connections: scenario.sim.max_connections,
            cpu_cost_per_connection: scenario.sim.cpu_cost_per_connection,
            scheduler: options.scheduler.unwrap_or_default(),
            lateness_budget: options
                .lateness_budget
                .unwrap_or(rtlan_core::switch::DEFAULT_LATENESS_BUDGET),
            // One figure per switch: the longest of its links, so every hop's latency covers
            // its own output link.
            link_delay: topo
                .links
                .iter()
                .zip(&scenario.link_delays)
                .filter(|(l, _)| l.ends.iter().any(|e| e.node == switch.name))
                .map(|(_, d)| *d)
                .max()
                .unwrap_or_default(),
            ..RtConfig::default()
        },
        // The lab's short timers (docs/stp.md §4): ports forward 8 s after start.
        stp: options.stp.then(|| rtlan_core::switch::StpConfig {
            timers: rtlan_core::stp::Timers {
                max_age: Duration::from_secs(6),
                hello_time: Duration::from_secs(1),
                forward_delay: Duration::from_secs(4),
                hold_time: Duration::from_secs(1),
            },
            ..Default::default()
        }),
    })
}

/// Index of each node: hosts first (topology order), then switches, then routers.
pub(crate) fn node_index(scenario: &Scenario, name: &str) -> Option<usize> {
    let topo = &scenario.topology;
    let hosts = topo.hosts.len();
    let switches = topo.switches.len();
    topo.hosts
        .iter()
        .position(|h| h.name == name)
        .or_else(|| {
            topo.switches
                .iter()
                .position(|s| s.name == name)
                .map(|i| i + hosts)
        })
        .or_else(|| {
            topo.routers
                .iter()
                .position(|r| r.name == name)
                .map(|i| i + hosts + switches)
        })
}

/// The index in [`rtlan_topology::Topology::segments`] of the subnet holding `ip`.
fn segment_of(scenario: &Scenario, ip: Ipv4Addr) -> Option<usize> {
    scenario
        .topology
        .segments
        .iter()
        .position(|s| s.contains(ip))
}

/// Builds the network of `scenario` at time zero.
pub(crate) fn build(scenario: &Scenario) -> Result<Engine, SimError> {
    let topo = &scenario.topology;
    let now = Instant::ZERO;
    let window = (
        Instant::ZERO + scenario.sim.warmup,
        Instant::ZERO + scenario.sim.duration,
    );
    let count = topo.hosts.len() + topo.switches.len() + topo.routers.len();
    let mut node_ports: Vec<Vec<PortEnd>> = vec![Vec::new(); count];
    // Port numbers in link order, as the switch's configuration lists them.
    let mut next_port = vec![0u16; count];
    let mut ends = Vec::with_capacity(topo.links.len());
    for link in &topo.links {
        let [a, b] = &link.ends;
        let (Some(na), Some(nb)) = (node_index(scenario, &a.node), node_index(scenario, &b.node))
        else {
            return Err(SimError::Unsupported(format!(
                "link {}–{} names an unknown node",
                a.node, b.node
            )));
        };
        let pa = next_port[na];
        let pb = next_port[nb];
        next_port[na] += 1;
        next_port[nb] += 1;
        ends.push(((na, pa), (nb, pb)));
    }
    for (index, (((na, pa), (nb, pb)), link)) in ends.iter().zip(&topo.links).enumerate() {
        let rate = link.rate_bps.ok_or_else(|| {
            SimError::Unsupported("the simulator needs a rate on every link".into())
        })?;
        let delay = scenario.link_delays[index];
        node_ports[*na].push(PortEnd::new((*nb as u32, *pb), rate, delay, index as u32));
        node_ports[*nb].push(PortEnd::new((*na as u32, *pa), rate, delay, index as u32));
    }
    let mut hosts = Vec::with_capacity(topo.hosts.len());
    for (i, h) in topo.hosts.iter().enumerate() {
        let rate = node_ports[i].first().map_or(0, |p| p.rate_bps);
        let mut host = Host::new(
            &h.name,
            h.ip,
            rate,
            h.host_delay,
            scenario.sim.txqueuelen,
            window,
            now,
        )
        .map_err(|e| SimError::Unsupported(format!("host `{}`: {e}", h.name)))?;
        // Without routers every address is on-link (no gateway), as on one flat lab subnet.
        host.set_subnet(h.prefix_len, h.gateway);
        if let Some(span) = scenario.sim.announce {
            let offset = span.as_nanos() * i as u128 / topo.hosts.len() as u128;
            host.announce_at(now + Duration::from_nanos(u64::try_from(offset).unwrap_or(0)));
        }
        hosts.push(host);
    }
    let ips: Vec<Ipv4Addr> = topo.hosts.iter().map(|h| h.ip).collect();
    for (flow, spec) in scenario.traffic.iter().enumerate() {
        let flow = u32::try_from(flow)
            .map_err(|_| SimError::Unsupported("too many traffic sources".into()))?;
        hosts[spec.dst].add_sink(flow, spec.kind == SourceKind::Greedy);
        let dst_ip = ips[spec.dst];
        // A reservation across routers is signalled with RSVP (docs/qsr.md §3): the sender's
        // Path, the receiver's Resv, the routers' switched path.
        let across = spec.reserve.is_some()
            && !topo.routers.is_empty()
            && segment_of(scenario, ips[spec.src]) != segment_of(scenario, dst_ip);
        if across {
            let (refresh, service) = (scenario.sim.rsvp_refresh, scenario.sim.rsvp_service);
            hosts[spec.src].use_rsvp(refresh, service, Some(flow));
            hosts[spec.dst].use_rsvp(refresh, service, None);
        }
        hosts[spec.src].add_source(flow, spec.clone(), dst_ip, scenario.sim.seed, now);
    }
    // RSVP sessions without data: the sender's Paths, the receiver's Resvs, their refreshes.
    for (group, spec) in scenario.sessions.iter().enumerate() {
        hosts[spec.src].use_rsvp(scenario.sim.rsvp_refresh, scenario.sim.rsvp_service, None);
        hosts[spec.dst].use_rsvp(scenario.sim.rsvp_refresh, scenario.sim.rsvp_service, None);
        hosts[spec.src].add_sessions(group, spec.clone(), ips[spec.dst]);
    }
    let mut nodes: Vec<SimNode> = hosts
        .into_iter()
        .map(|h| SimNode::Host(Box::new(h)))
        .collect();
    for index in 0..topo.switches.len() {
        let config = switch_config(scenario, index)?;
        let switch = Switch::new(config, now).map_err(|e| {
            SimError::Unsupported(format!("switch `{}`: {e}", topo.switches[index].name))
        })?;
        nodes.push(SimNode::Switch(Box::new(switch)));
    }
    for index in 0..topo.routers.len() {
        let config = router_config(scenario, index)?;
        let router = Router::new(config, now).map_err(|e| {
            SimError::Unsupported(format!("router `{}`: {e}", topo.routers[index].name))
        })?;
        nodes.push(SimNode::Router(Box::new(router)));
    }
    let mut engine = Engine::new(nodes, node_ports);
    for (i, fault) in scenario.faults.iter().enumerate() {
        let at = now + fault.at;
        match fault.kind {
            FaultKind::Restart { switch, down_for } => {
                let node = (topo.hosts.len() + switch) as u32;
                engine.schedule(at, Fault::Crash { node });
                // A boot epoch no earlier start of this switch had: every start at build time
                // has the default epoch, each restart 2 + its fault's index.
                let epoch = 2 + i as u64;
                engine.schedule(at + down_for, Fault::Start { node, epoch });
            }
            FaultKind::RestartRouter { router, down_for } => {
                let node = (topo.hosts.len() + topo.switches.len() + router) as u32;
                engine.schedule(at, Fault::Crash { node });
                // A router has no boot epoch: it starts from its configuration alone.
                engine.schedule(at + down_for, Fault::Start { node, epoch: 0 });
            }
            FaultKind::LinkDown { link, down_for } => {
                let ((na, pa), (nb, pb)) = ends[link];
                let (a, b) = ((na as u32, pa), (nb as u32, pb));
                engine.schedule(at, Fault::Link { a, b, up: false });
                if let Some(d) = down_for {
                    engine.schedule(at + d, Fault::Link { a, b, up: true });
                }
            }
        }
    }
    Ok(engine)
}
