//! The one node contract (DESIGN.md §2; STYLE.md items 2–3): every node kind — the EtheReal
//! switch today, the QSR switch-router and the RETHER agent next, and the simulator's hosts — is a
//! sans-IO state machine with ports, driven the same way by the Linux data-plane driver, by the
//! discrete-event simulator and by unit tests.
//!
//! A node never reads a clock and never touches a socket: every input carries `now`, and the node
//! tells its driver when it next has work ([`Node::poll_timeout`]). Frames are whole Ethernet
//! frames without FCS; a port is an index `0..port_count()`.
//!
//! # Driver call order
//!
//! After the node is built at some `now`, a driver repeats:
//!
//! 1. [`Node::handle_frame`] for each frame received on a port (in batches; order within a port
//!    is arrival order);
//! 2. [`Node::handle_timeout`] if the instant from [`Node::poll_timeout`] has come (calling it
//!    early is harmless and cheap);
//! 3. [`Node::poll_transmit`] on each port whose line is free, until it returns `None` — on a
//!    [`Medium::FullDuplex`] port the node paces itself and may be polled at any time; on a
//!    [`Medium::Unpaced`] or [`Medium::Shared`] port the driver polls only when it can put a frame
//!    on the wire at once (NIC ring or bus free);
//! 4. sleep until the next received frame, the next free line or [`Node::poll_timeout`],
//!    whichever comes first.
//!
//! `poll_timeout` may return an instant already past: a port has a frame ready or a timer is due,
//! and the driver goes round again before sleeping. [`Node::handle_link`] reports carrier changes
//! whenever the driver sees them.

use crate::time::Instant;

/// Index of a port of a node, `0..port_count()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct PortId(pub u16);

/// What a port transmits on: who decides when a frame may go on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "medium", rename_all = "kebab-case")]
pub enum Medium {
    /// A full-duplex link of a known rate (switched Ethernet): the node paces its own output at
    /// this rate on virtual time, so its schedule is exact whatever the driver's batching.
    FullDuplex {
        /// Line rate, bit/s (> 0).
        rate_bps: u64,
    },
    /// A full-duplex link whose rate the node does not know: the node does not pace, the driver
    /// (NIC ring) serialises.
    Unpaced,
    /// A shared segment (a bus, RETHER §2): all stations contend for one line of this rate. The
    /// node does not pace; the driver transmits only while the medium is free (carrier sense and
    /// backoff in CSMA mode, the token in RETHER mode) and polls the node only then.
    Shared {
        /// Rate of the segment, bit/s (> 0).
        rate_bps: u64,
    },
}

impl Medium {
    /// The rate the node paces output at, if it paces (full duplex at a known rate).
    pub fn pacing_rate_bps(self) -> Option<u64> {
        match self {
            Medium::FullDuplex { rate_bps } => Some(rate_bps),
            Medium::Unpaced | Medium::Shared { .. } => None,
        }
    }

    /// The line rate, if known.
    pub fn rate_bps(self) -> Option<u64> {
        match self {
            Medium::FullDuplex { rate_bps } | Medium::Shared { rate_bps } => Some(rate_bps),
            Medium::Unpaced => None,
        }
    }
}

/// A sans-IO node with ports (see the module docs for the driver's call order).
pub trait Node {
    /// Number of ports.
    fn port_count(&self) -> usize;

    /// The medium of `port` (`Medium::Unpaced` for a port out of range).
    fn medium(&self, port: PortId) -> Medium;

    /// A frame received on `port` at `now`. A port out of range or a malformed frame is counted
    /// by the node and otherwise ignored; it never panics.
    fn handle_frame(&mut self, now: Instant, port: PortId, frame: &[u8]);

    /// Copies the next frame `port` may send at `now` into `buf` and returns its length, or `None`
    /// when the port has nothing due (empty, or its pacer says the line is busy). `buf` should
    /// hold the node's largest frame; a longer frame is dropped and counted.
    fn poll_transmit(&mut self, now: Instant, port: PortId, buf: &mut [u8]) -> Option<usize>;

    /// Runs the timers due at `now`.
    fn handle_timeout(&mut self, now: Instant);

    /// The earliest instant at which [`Node::poll_transmit`] or [`Node::handle_timeout`] has
    /// work; `None` = nothing until the next input.
    fn poll_timeout(&self) -> Option<Instant>;

    /// The carrier of `port` went up (`true`) or down. The default ignores it.
    fn handle_link(&mut self, now: Instant, port: PortId, up: bool) {
        let _ = (now, port, up);
    }

    /// Guarantee violations on `port` so far: sends later than the node's lateness budget allows
    /// (docs/delay.md §4). The driver logs every increase. The default has none.
    fn guarantee_violations(&self, port: PortId) -> u64 {
        let _ = port;
        0
    }
}
