//! The switch daemon's side of the best-effort fast path (`docs/fastpath.md`): the ports' XDP
//! programs share one set of maps ([`crate::xdp::FastPath`]), and after the core has handled a
//! batch — before anything it queued is transmitted — this mirror copies into them what the
//! core decided: the stations it learnt or forgot and which ports are open.
//!
//! A port takes part only if it is an AF_XDP port (it has the program) and its driver takes
//! redirected frames; a port that cannot is reported once at start and stays closed. A port
//! being captured (`capture` on the control socket) is closed while the capture runs, so that
//! the capture sees every frame the port receives and sends. A map
//! update that fails is logged and counted, and the port concerned is closed, so a broken
//! mirror degrades to the slow path, never to frames the core would not have forwarded.
//!
//! A port on which the switch's control frames (SETUP and its answers) wait on the driver — in
//! the core's control queue, or handed to the driver and not yet taken by the kernel
//! ([`ControlHold`](crate::xdp::ControlHold)) — stays closed until they have gone: the best-effort frames then queue
//! behind them in the core instead of competing with them for the peer's ring
//! (docs/fastpath.md "The protected control channel").

use rtlan_core::switch::{FdbChange, FdbSync, PortId, Switch};
use rtlan_core::time::Instant;

use crate::xdp::{AnyPort, FastPath, Gates};

/// One port's fast-path state, for `stats`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct FastPathPortStats {
    /// `open`, or why not (the core's reason, or `off: …` for a port that cannot take part).
    pub state: String,
    /// Frames the port's XDP program forwarded.
    pub frames: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Times the port closed while the node's control frames waited on the driver
    /// (docs/fastpath.md "The protected control channel").
    pub control_holds: u64,
}

/// The maps and what the mirror last wrote to them.
#[derive(Debug)]
pub(super) struct Mirror {
    maps: FastPath,
    /// The `open` map's side (module doc).
    gates: Gates,
    /// The port a capture holds closed.
    captured: Option<usize>,
}

impl Mirror {
    /// The mirror for `ports`, whose AF_XDP ports' programs were built from `maps`.
    pub(super) fn new(maps: FastPath, ports: &[AnyPort]) -> Mirror {
        let gates = Gates::new(maps.ports(), ports);
        Mirror {
            maps,
            gates,
            captured: None,
        }
    }

    /// Starts mirroring `switch`'s learning table.
    pub(super) fn start(&mut self, switch: &mut Switch, now: Instant) {
        let stations = switch.track_fdb(now);
        self.rebuild(&stations);
        self.sync(switch, now, None);
    }

    fn rebuild(&mut self, stations: &[(rtlan_wire::ethernet::Address, PortId)]) {
        if let Err(e) = self.maps.forget_all() {
            self.failed("emptying the station map", &e);
        }
        for (mac, port) in stations {
            if let Err(e) = self.maps.learn(*mac, u32::from(port.0)) {
                self.failed("adding a station", &e);
            }
        }
    }

    fn failed(&mut self, what: &str, e: &std::io::Error) {
        self.gates.failed(self.maps.ports(), what, e);
    }

    /// Copies the core's changes since the last call into the maps: stations first (a port
    /// opening must find them), then each port's openness (`captured`: the port a capture
    /// holds closed).
    pub(super) fn sync(&mut self, switch: &mut Switch, now: Instant, captured: Option<usize>) {
        self.captured = captured;
        match switch.fdb_sync(now) {
            FdbSync::Changes(changes) => {
                for change in changes {
                    let result = match change {
                        FdbChange::Learnt(mac, port) => self.maps.learn(mac, u32::from(port.0)),
                        FdbChange::Forgotten(mac) => self.maps.forget(mac),
                    };
                    if let Err(e) = result {
                        self.failed("updating a station", &e);
                    }
                }
            }
            FdbSync::Rebuild(stations) => self.rebuild(&stations),
        }
        for i in 0..self.gates.len() {
            let want = captured != Some(i) && switch.fast_path_closed(PortId(i as u16)).is_none();
            self.gates.set(self.maps.ports(), i, want);
        }
    }

    /// After a transmit: notes the ports whose control frames wait on the driver (module doc).
    pub(super) fn sample(&mut self, switch: &Switch, ports: &[AnyPort]) {
        self.gates.sample(ports, |i| {
            (
                switch.control_sent(PortId(i)),
                switch.control_waiting(PortId(i)),
            )
        });
    }

    /// Per port: state and what its program forwarded.
    pub(super) fn stats(&self, switch: &Switch) -> Vec<FastPathPortStats> {
        (0..self.gates.len())
            .map(|i| {
                let state = match (self.gates.off(i), switch.fast_path_closed(PortId(i as u16))) {
                    (Some(off), _) => format!("off: {off}"),
                    (None, Some(closed)) => closed.to_string(),
                    (None, None) if self.captured == Some(i) => "capture".to_string(),
                    (None, None) if self.gates.hold.held(i) => "control waiting".to_string(),
                    (None, None) => "open".to_string(),
                };
                let (frames, bytes) = self.maps.ports().forwarded(i as u32).unwrap_or_default();
                FastPathPortStats {
                    state,
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
}
