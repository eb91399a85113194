//! The router daemon's side of the best-effort fast path (`docs/fastpath.md` "The router"): the
//! ports' XDP programs share one set of maps ([`crate::xdp::RouterFastPath`]), and after the core
//! has handled a batch — before anything it queued is transmitted — this mirror copies into them
//! what the core decided: its forwarding table with resolved next hops (QSR §4.1) and which
//! ports are open.
//!
//! QSR §6.2's protected control channel: on a port open to the fast path, data redirected by
//! XDP and the core's own frames (RSVP, from its control queue) meet in the driver. After each
//! transmit the mirror notes whether signalling waits there — in the core's control queue, or
//! handed to the driver and not yet taken by the kernel ([`crate::xdp::ControlHold`]) — and
//! keeps the port closed until it has gone: the data that would have bypassed the core then
//! goes through it, behind the signalling, and nothing refills the driver's queue with
//! redirected frames. So no data load can hold a control message back for longer than the
//! driver takes to drain.
//!
//! A port takes part only if it is an AF_XDP port and its driver takes redirected frames; a port
//! that cannot is reported once at start and stays closed. A map update that fails is logged and
//! counted and closes every port, so a broken mirror degrades to the slow path, never to packets
//! the core would not have forwarded.

use std::collections::BTreeMap;

use rtlan_core::router::{FastRoute, Ipv4Prefix, Router};
use rtlan_core::PortId;

use crate::switchd::fastpath::FastPathPortStats;
use crate::xdp::fastpath::ROUTER_FIB_CAPACITY;
use crate::xdp::{AnyPort, Gates, RouterFastPath};

/// The maps and what the mirror last wrote to them.
#[derive(Debug)]
pub(super) struct Mirror {
    maps: RouterFastPath,
    /// The `open` map's side, with the signalling holds (module doc).
    gates: Gates,
    /// What the `fib` map holds.
    table: BTreeMap<Ipv4Prefix, FastRoute>,
    /// The core's table version the map holds (`None`: not yet written).
    version: Option<u64>,
    /// Why the table is not mirrored (every port then stays closed).
    table_problem: Option<&'static str>,
}

impl Mirror {
    /// The mirror for `ports`, whose AF_XDP ports' programs were built from `maps`.
    pub(super) fn new(maps: RouterFastPath, ports: &[AnyPort]) -> Mirror {
        let gates = Gates::new(maps.ports(), ports);
        Mirror {
            maps,
            gates,
            table: BTreeMap::new(),
            version: None,
            table_problem: None,
        }
    }

    fn failed(&mut self, what: &str, e: &std::io::Error) {
        self.gates.failed(self.maps.ports(), what, e);
    }

    /// Copies the core's table (when it changed) and each port's openness into the maps: the
    /// table first, so that a port opening finds it.
    pub(super) fn sync(&mut self, router: &Router) {
        let version = router.fast_version();
        if self.version != Some(version) {
            self.version = Some(version);
            self.write_table(router.fast_table());
        }
        // `Gates::set` keeps off and held ports closed; the reasons as text are for `stats`.
        for i in 0..self.gates.len() {
            let want =
                self.table_problem.is_none() && router.fast_path_closed(PortId(i as u16)).is_none();
            self.gates.set(self.maps.ports(), i, want);
        }
    }

    /// Makes the `fib` map hold `wanted`, writing only the differences.
    fn write_table(&mut self, wanted: Vec<(Ipv4Prefix, FastRoute)>) {
        if wanted.len() > ROUTER_FIB_CAPACITY as usize {
            if self.table_problem.is_none() {
                tracing::warn!(
                    prefixes = wanted.len(),
                    capacity = ROUTER_FIB_CAPACITY,
                    "fast path closed: the forwarding table outgrew its map"
                );
            }
            self.table_problem = Some("forwarding table too large");
            return;
        }
        self.table_problem = None;
        let wanted: BTreeMap<Ipv4Prefix, FastRoute> = wanted.into_iter().collect();
        let gone: Vec<Ipv4Prefix> = self
            .table
            .keys()
            .filter(|p| !wanted.contains_key(p))
            .copied()
            .collect();
        for prefix in gone {
            if let Err(e) = self
                .maps
                .remove_route(prefix.network(), prefix.prefix_len())
            {
                self.failed("removing a prefix", &e);
                return;
            }
            self.table.remove(&prefix);
        }
        for (prefix, route) in wanted {
            if self.table.get(&prefix) == Some(&route) {
                continue;
            }
            let hop = match route {
                FastRoute::Forward(hop) => Some((u32::from(hop.port.0), hop.dst_mac, hop.src_mac)),
                FastRoute::ToCore => None,
            };
            if let Err(e) = self
                .maps
                .set_route(prefix.network(), prefix.prefix_len(), hop)
            {
                self.failed("writing a prefix", &e);
                return;
            }
            self.table.insert(prefix, route);
        }
    }

    /// Why port `i` is closed, or `None` if it is open.
    fn closed(&self, router: &Router, i: usize) -> Option<String> {
        if let Some(off) = self.gates.off(i) {
            return Some(format!("off: {off}"));
        }
        if let Some(problem) = self.table_problem {
            return Some(problem.to_string());
        }
        if let Some(reason) = router.fast_path_closed(PortId(i as u16)) {
            return Some(reason.to_string());
        }
        if self.gates.hold.held(i) {
            return Some("control waiting".to_string());
        }
        None
    }

    /// After a transmit: notes the ports whose signalling waits on the driver (module doc).
    pub(super) fn sample(&mut self, router: &Router, ports: &[AnyPort]) {
        self.gates.sample(ports, |i| {
            (
                router.control_sent(PortId(i)),
                router.control_waiting(PortId(i)),
            )
        });
    }

    /// Per port: state and what its program forwarded.
    pub(super) fn stats(&self, router: &Router) -> Vec<FastPathPortStats> {
        (0..self.gates.len())
            .map(|i| {
                let (frames, bytes) = self.maps.ports().forwarded(i as u32).unwrap_or_default();
                FastPathPortStats {
                    state: self.closed(router, i).unwrap_or_else(|| "open".to_string()),
                    frames,
                    bytes,
                    control_holds: self.gates.hold.holds(i),
                }
            })
            .collect()
    }

    /// Map updates that failed.
    pub(super) fn errors(&self) -> u64 {
        self.gates.errors()
    }

    /// Prefixes in the `fib` map.
    pub(super) fn prefixes(&self) -> usize {
        self.table.len()
    }
}
