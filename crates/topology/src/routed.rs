//! Topologies with routers (QSR paper §2: routers between subnets; docs/qsr.md §2.3, docs/lab.md
//! "Routers"): the segments, their subnets, every address, the hosts' gateways and the routers'
//! static routes.
//!
//! Removing the routers splits a topology into *segments*: each connected component of hosts,
//! switches and the links between them, plus one segment per router–router link. Segment `k`
//! (numbered in file order of its first link) is a subnet: the one its first explicit address
//! gives (`ip` of a host, `mgmt_ip` of a switch, in file order), else the next free
//! `198.18.j.0/24`. On it router ports take `.1, .2, …` (in link order), hosts without `ip`
//! `.101` up, rtlan switches without `mgmt_ip` `.201` up; each wraps to the lowest free address
//! when its range is full. A host's gateway is the first router port on its segment. Routers
//! get a static route to every segment they are not on: fewest routers crossed, equal costs to
//! the next router whose name sorts first (then the lower segment); with `ospf` they get none
//! and a routing daemon fills their tables.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::ops::Range;

use crate::parse::{Components, Locator, RawFile, RawRouter, Used};
use crate::{
    Host, Link, Ospf, Route, Router, RouterKind, RouterPort, Segment, Switch, SwitchKind,
    TopologyError,
};

/// Where automatic host addresses start on a segment (`.101`).
const HOST_START: u32 = 101;
/// Where automatic switch management addresses start on a segment (`.201`).
const MGMT_START: u32 = 201;

/// Each router's `kind`, refused if unknown.
pub(crate) fn resolve_kinds(
    routers: &[RawRouter],
    loc: &Locator<'_>,
) -> Result<Vec<RouterKind>, TopologyError> {
    routers
        .iter()
        .map(|r| match &r.kind {
            None => Ok(RouterKind::Rtlan),
            Some(k) => match k.get_ref().as_str() {
                "rtlan" => Ok(RouterKind::Rtlan),
                "linux-router" => Ok(RouterKind::LinuxRouter),
                other => Err(TopologyError::BadOption {
                    at: loc.at(&k.span()),
                    option: "kind",
                    reason: format!("`{other}` (expected \"rtlan\" or \"linux-router\")"),
                }),
            },
        })
        .collect()
}

/// Each router's `rsvp`: on by default for rtlan routers; refused on the kernel's router.
pub(crate) fn resolve_rsvp(
    routers: &[RawRouter],
    kinds: &[RouterKind],
    loc: &Locator<'_>,
) -> Result<Vec<bool>, TopologyError> {
    routers
        .iter()
        .zip(kinds)
        .map(|(r, kind)| match (&r.rsvp, kind) {
            (Some(v), RouterKind::LinuxRouter) if *v.get_ref() => Err(TopologyError::BadOption {
                at: loc.at(&v.span()),
                option: "rsvp",
                reason: "the kernel's router (kind \"linux-router\") has no RSVP".to_string(),
            }),
            (_, RouterKind::LinuxRouter) => Ok(false),
            (Some(v), RouterKind::Rtlan) => Ok(*v.get_ref()),
            (None, RouterKind::Rtlan) => Ok(true),
        })
        .collect()
}

/// Each router's `ospf`, refused if unknown or if only some routers have it.
pub(crate) fn resolve_ospf(
    routers: &[RawRouter],
    loc: &Locator<'_>,
) -> Result<Vec<Option<Ospf>>, TopologyError> {
    let mut out = Vec::with_capacity(routers.len());
    for r in routers {
        out.push(match &r.ospf {
            None => None,
            Some(v) => match v.get_ref().as_str() {
                "bird" => Some(Ospf::Bird),
                "frr" => Some(Ospf::Frr),
                other => {
                    return Err(TopologyError::BadOption {
                        at: loc.at(&v.span()),
                        option: "ospf",
                        reason: format!("`{other}` (expected \"bird\" or \"frr\")"),
                    })
                }
            },
        });
    }
    let on = out.iter().position(Option::is_some);
    let off = out.iter().position(Option::is_none);
    if let (Some(on), Some(off)) = (on, off) {
        let later = on.max(off);
        return Err(TopologyError::OspfMixed {
            at: loc.at(&routers[later].name.span()),
            on: routers[on].name.get_ref().clone(),
            off: routers[off].name.get_ref().clone(),
        });
    }
    Ok(out)
}

/// A segment being resolved.
struct SegBuild {
    /// Index of its first link.
    first_link: usize,
    /// Router ports on it: (router index, link index), in link order.
    ports: Vec<(usize, usize)>,
    /// Its subnet and the node whose explicit address set it.
    subnet: Option<(Segment, String)>,
}

/// The inputs of the address plan of a topology with routers.
pub(crate) struct Plan<'a> {
    pub(crate) raw: &'a RawFile,
    pub(crate) loc: &'a Locator<'a>,
    /// Explicit addresses, already claimed (duplicates refused).
    pub(crate) used: Used,
    /// Each router's routing daemon.
    pub(crate) ospf: &'a [Option<Ospf>],
    /// Each router's kind.
    pub(crate) kinds: &'a [RouterKind],
    /// Each router's `rsvp`.
    pub(crate) rsvp: &'a [bool],
}

impl Plan<'_> {
    fn link_span(&self, link: usize) -> Range<usize> {
        self.raw.link[link].ends.span()
    }

    /// Segments, subnets, addresses (hosts in `host_pending` and rtlan switches in
    /// `mgmt_pending` had none), gateways and routers.
    pub(crate) fn assign(
        mut self,
        hosts: &mut [Host],
        host_pending: &[usize],
        switches: &mut [Switch],
        mgmt_pending: &[usize],
        links: &[Link],
    ) -> Result<(Vec<Router>, Vec<Segment>), TopologyError> {
        let raw = self.raw;
        let loc = self.loc;
        let router_index: HashMap<&str, usize> = raw
            .router
            .iter()
            .enumerate()
            .map(|(i, r)| (r.name.get_ref().as_str(), i))
            .collect();
        let mut comps = Components::default();
        for link in links {
            let [a, b] = &link.ends;
            if !router_index.contains_key(a.node.as_str())
                && !router_index.contains_key(b.node.as_str())
            {
                comps.join(&a.node, &b.node);
            }
        }
        // Each segment in file order of its first link: a component's first link touches one
        // of its nodes, a router–router link is its own segment.
        let is_router = |n: &str| router_index.contains_key(n);
        let mut firsts: Vec<(usize, Option<String>)> = Vec::new();
        let mut seen_roots: HashMap<String, ()> = HashMap::new();
        for (li, link) in links.iter().enumerate() {
            let lan_ends: Vec<&str> = link
                .ends
                .iter()
                .map(|e| e.node.as_str())
                .filter(|n| !is_router(n))
                .collect();
            if lan_ends.is_empty() {
                firsts.push((li, None));
            }
            for end in lan_ends {
                let root = comps.root(end);
                if seen_roots.insert(root.clone(), ()).is_none() {
                    firsts.push((li, Some(root)));
                }
            }
        }
        let mut seg_of_root: HashMap<String, usize> = HashMap::new();
        let mut seg_of_link: HashMap<usize, usize> = HashMap::new();
        let mut segs: Vec<SegBuild> = Vec::with_capacity(firsts.len());
        for (i, (li, root)) in firsts.into_iter().enumerate() {
            match root {
                Some(root) => seg_of_root.insert(root, i),
                None => seg_of_link.insert(li, i),
            };
            segs.push(SegBuild {
                first_link: li,
                ports: Vec::new(),
                subnet: None,
            });
        }
        // Per router: (segment, link index) of each port, in port (= link) order.
        let mut router_ports: Vec<Vec<(usize, usize)>> = vec![Vec::new(); raw.router.len()];
        for (li, link) in links.iter().enumerate() {
            let [a, b] = &link.ends;
            let ra = router_index.get(a.node.as_str()).copied();
            let rb = router_index.get(b.node.as_str()).copied();
            let seg = match (ra, rb) {
                (None, None) => continue,
                (Some(_), Some(_)) => seg_of_link[&li],
                (Some(_), None) => seg_of_root[&comps.root(&b.node)],
                (None, Some(_)) => seg_of_root[&comps.root(&a.node)],
            };
            for r in [ra, rb].into_iter().flatten() {
                if let Some(&(_, first)) = router_ports[r].iter().find(|(s, _)| *s == seg) {
                    return Err(TopologyError::TwoPortsOnSegment {
                        at: loc.at(&self.link_span(li)),
                        router: raw.router[r].name.get_ref().clone(),
                        first_line: loc.line(&self.link_span(first)),
                    });
                }
                router_ports[r].push((seg, li));
                segs[seg].ports.push((r, li));
            }
        }
        let mut segment_of = |node: &str| seg_of_root[&comps.root(node)];

        // Subnets from explicit addresses, in file order.
        let mut explicit: Vec<(Range<usize>, Ipv4Addr, u8, String, usize)> = Vec::new();
        for (h, rh) in hosts.iter().zip(&raw.host) {
            if let Some(ip) = &rh.ip {
                explicit.push((
                    ip.span(),
                    h.ip,
                    h.prefix_len,
                    h.name.clone(),
                    segment_of(&h.name),
                ));
            }
        }
        for (s, rs) in switches.iter().zip(&raw.switch) {
            if let (SwitchKind::Rtlan(o), Some(ip)) = (&s.kind, &rs.mgmt_ip) {
                let seg = segment_of(&s.name);
                explicit.push((ip.span(), o.mgmt_ip, o.mgmt_prefix_len, s.name.clone(), seg));
            }
        }
        explicit.sort_by_key(|e| e.0.start);
        for (span, ip, len, node, seg) in &explicit {
            let bad = |reason: String| TopologyError::BadIp {
                at: loc.at(span),
                text: format!("{ip}/{len}"),
                reason,
            };
            match &segs[*seg].subnet {
                Some((subnet, by)) => {
                    if !subnet.contains(*ip) || subnet.prefix_len != *len {
                        return Err(bad(format!(
                            "its segment's subnet is {subnet} (from `{by}`): every node of a \
                             segment is in one subnet"
                        )));
                    }
                }
                None => {
                    if *len > 30 {
                        return Err(bad(
                            "a segment's subnet needs a prefix of /30 or shorter".to_string()
                        ));
                    }
                    let subnet = segment(*ip, *len);
                    if let Some((other, by)) = segs
                        .iter()
                        .filter_map(|s| s.subnet.as_ref())
                        .find(|(o, _)| overlap(o, &subnet))
                    {
                        return Err(bad(format!(
                            "its subnet {subnet} overlaps {other}, the subnet of another \
                             segment (from `{by}`)"
                        )));
                    }
                    segs[*seg].subnet = Some((subnet, node.clone()));
                }
            }
        }
        let mut next_auto = 0u32;
        for i in 0..segs.len() {
            if segs[i].subnet.is_some() {
                continue;
            }
            loop {
                if next_auto > 255 {
                    return Err(TopologyError::TooManySegments {
                        at: loc.at(&self.link_span(segs[i].first_link)),
                    });
                }
                let candidate = segment(Ipv4Addr::new(198, 18, next_auto as u8, 0), 24);
                next_auto += 1;
                if !segs
                    .iter()
                    .filter_map(|s| s.subnet.as_ref())
                    .any(|(o, _)| overlap(o, &candidate))
                {
                    segs[i].subnet = Some((candidate, String::new()));
                    break;
                }
            }
        }
        let segments: Vec<Segment> = segs
            .iter()
            .map(|s| {
                s.subnet
                    .as_ref()
                    .expect("every segment has a subnet")
                    .0
                    .clone()
            })
            .collect();

        // Router ports first, in link order, then hosts, then management addresses.
        let mut port_ip: HashMap<(usize, usize), Ipv4Addr> = HashMap::new();
        for li in 0..links.len() {
            for (r, ports) in router_ports.iter().enumerate() {
                let Some(&(seg, _)) = ports.iter().find(|(_, l)| *l == li) else {
                    continue;
                };
                let name = raw.router[r].name.get_ref();
                let ip = self.alloc(&segments[seg], 1, name, &raw.router[r].name.span())?;
                port_ip.insert((r, seg), ip);
            }
        }
        for &i in host_pending {
            let seg = segment_of(&hosts[i].name);
            let ip = self.alloc(
                &segments[seg],
                HOST_START,
                &hosts[i].name,
                &raw.host[i].name.span(),
            )?;
            hosts[i].ip = ip;
            hosts[i].prefix_len = segments[seg].prefix_len;
        }
        for h in hosts.iter_mut() {
            let seg = segment_of(&h.name);
            h.gateway = segs[seg].ports.first().map(|&(r, _)| port_ip[&(r, seg)]);
        }
        for &i in mgmt_pending {
            let seg = segment_of(&switches[i].name);
            let name = switches[i].name.clone();
            let ip = self.alloc(
                &segments[seg],
                MGMT_START,
                &name,
                &raw.switch[i].name.span(),
            )?;
            if let SwitchKind::Rtlan(o) = &mut switches[i].kind {
                o.mgmt_ip = ip;
                o.mgmt_prefix_len = segments[seg].prefix_len;
            }
        }

        let routes = if self.ospf.iter().all(Option::is_some) {
            vec![Vec::new(); raw.router.len()]
        } else {
            static_routes(raw, &segs, &segments, &router_ports, &port_ip)
        };
        let routers = raw
            .router
            .iter()
            .enumerate()
            .zip(routes)
            .map(|((r, rr), routes)| Router {
                name: rr.name.get_ref().clone(),
                kind: self.kinds[r],
                rsvp: self.rsvp[r],
                ospf: self.ospf[r],
                ports: router_ports[r]
                    .iter()
                    .map(|&(seg, li)| {
                        let own = links[li]
                            .ends
                            .iter()
                            .find(|e| e.node == *rr.name.get_ref())
                            .expect("the router is an end of its port's link");
                        RouterPort {
                            ifname: own.ifname.clone(),
                            ip: port_ip[&(r, seg)],
                            prefix_len: segments[seg].prefix_len,
                            segment: seg,
                        }
                    })
                    .collect(),
                routes,
            })
            .collect();
        Ok((routers, segments))
    }

    /// The first free address of `subnet` from host number `start` (wrapping to 1), claimed
    /// for `node`.
    fn alloc(
        &mut self,
        subnet: &Segment,
        start: u32,
        node: &str,
        span: &Range<usize>,
    ) -> Result<Ipv4Addr, TopologyError> {
        let last = (1u32 << (32 - u32::from(subnet.prefix_len))) - 2;
        let base = u32::from(subnet.prefix);
        let found = (start..=last)
            .chain(1..start.min(last + 1))
            .map(|n| Ipv4Addr::from(base + n))
            .find(|ip| !self.used.contains_key(ip));
        let Some(ip) = found else {
            return Err(TopologyError::AddressesExhausted {
                at: self.loc.at(span),
                name: node.to_string(),
                subnet: subnet.to_string(),
            });
        };
        self.used.insert(ip, node.to_string());
        Ok(ip)
    }
}

/// The subnet of `len` bits around `ip`.
fn segment(ip: Ipv4Addr, len: u8) -> Segment {
    let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
    Segment {
        prefix: Ipv4Addr::from(u32::from(ip) & mask),
        prefix_len: len,
    }
}

fn overlap(a: &Segment, b: &Segment) -> bool {
    a.contains(b.prefix) || b.contains(a.prefix)
}

/// Every router's routes to the segments it is not on (see the module doc).
fn static_routes(
    raw: &RawFile,
    segs: &[SegBuild],
    segments: &[Segment],
    router_ports: &[Vec<(usize, usize)>],
    port_ip: &HashMap<(usize, usize), Ipv4Addr>,
) -> Vec<Vec<Route>> {
    let n = router_ports.len();
    // Router hops between routers: breadth-first from each.
    let neighbours: Vec<Vec<(usize, usize)>> = (0..n)
        .map(|r| {
            router_ports[r]
                .iter()
                .flat_map(|&(seg, _)| {
                    segs[seg]
                        .ports
                        .iter()
                        .filter(move |&&(q, _)| q != r)
                        .map(move |&(q, _)| (q, seg))
                })
                .collect()
        })
        .collect();
    let dist: Vec<Vec<Option<u32>>> = (0..n)
        .map(|from| {
            let mut d = vec![None; n];
            d[from] = Some(0);
            let mut queue = std::collections::VecDeque::from([from]);
            while let Some(r) = queue.pop_front() {
                let dr = d[r].expect("queued routers have a distance");
                for &(q, _) in &neighbours[r] {
                    if d[q].is_none() {
                        d[q] = Some(dr + 1);
                        queue.push_back(q);
                    }
                }
            }
            d
        })
        .collect();
    let to_segment = |r: usize, s: usize| -> Option<u32> {
        segs[s].ports.iter().filter_map(|&(q, _)| dist[r][q]).min()
    };
    let name = |r: usize| raw.router[r].name.get_ref().as_str();
    (0..n)
        .map(|r| {
            let mut routes = Vec::new();
            for (s, subnet) in segments.iter().enumerate() {
                if router_ports[r].iter().any(|&(seg, _)| seg == s) {
                    continue;
                }
                let Some(d) = to_segment(r, s) else { continue };
                let next = neighbours[r]
                    .iter()
                    .filter(|&&(q, _)| to_segment(q, s).is_some_and(|dq| dq + 1 == d))
                    .min_by_key(|&&(q, seg)| (name(q), seg));
                let Some(&(q, seg)) = next else { continue };
                routes.push(Route {
                    prefix: subnet.prefix,
                    prefix_len: subnet.prefix_len,
                    gateway: port_ip[&(q, seg)],
                    metric: d + 1,
                });
            }
            routes
        })
        .collect()
}
