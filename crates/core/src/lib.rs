//! Sans-IO cores of rtlan (DESIGN.md §2).
//!
//! Everything here is a pure state machine: it takes input (a frame, a request, a timer tick) and the
//! current time as an argument and returns what to do. Nothing reads a clock, opens a socket or
//! sleeps; the Linux shells (`rtlan-linux`), the simulator and the unit tests drive the same code.

pub mod auth;
pub mod bwm;
pub mod egress;
pub mod latency;
pub mod node;
pub mod prefix;
pub mod rether;
pub mod router;
pub mod rsvp;
pub mod rtcd;
pub mod segment;
pub mod shaper;
pub mod stats;
pub mod stp;
pub mod switch;
pub mod time;
pub mod timer;
pub use rtlan_topology::units;

pub use node::{Medium, Node, PortId};
pub use time::Instant;
