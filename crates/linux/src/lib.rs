//! Linux shells (DESIGN.md §2): AF_PACKET ports, clocks and timers, the one data-plane driver
//! for every node kind, and the daemons built on them.
//!
//! - [`driver`]: the data-plane driver generic over the node contract (epoll, timerfd, ports).
//! - [`mgmt`]: the one JSON-lines envelope and server of every daemon's management socket.
//! - [`packet`]: PACKET_MMAP (TPACKET_V2) ports.
//! - [`bwmd`]: the bandwidth manager service (`rtlan bwm`) and its blocking client.
//! - [`clock`], [`timer`]: `CLOCK_MONOTONIC` as the cores' [`rtlan_core::Instant`], absolute
//!   `timerfd` deadlines, wake-up lateness.
//! - [`switchd`]: the switch daemon (`rtlan switch --config FILE`).
//! - [`segmentd`]: the shared-segment daemon (`rtlan segment --config FILE`).
//! - [`rtcd`]: the host daemon (`rtlan rtcd`) and its blocking client.
//! - [`ctl`]: the client of the switch's control socket.
//! - [`netlink`]: neighbour (ARP) entries and on-link routes for the host daemon.

pub mod bwmd;
pub mod capture;
pub mod clock;
pub mod ctl;
pub mod driver;
pub mod epoch;
pub mod ethtool;
pub mod keys;
pub mod linkwatch;
pub mod metrics;
pub mod mgmt;
pub mod napi;
pub mod netlink;
pub mod packet;
pub mod retherd;
pub mod routerd;
pub mod rtcd;
pub mod segmentd;
pub mod service;
pub mod switchd;
pub mod timer;
mod unix_socket;
pub mod xdp;
