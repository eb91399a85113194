//! Linux shells (DESIGN.md §2): AF_PACKET ports, clocks and timers, and the switch daemon's
//! data-plane loop with its control socket.
//!
//! - [`packet`]: PACKET_MMAP (TPACKET_V2) ports.
//! - [`clock`], [`timer`]: `CLOCK_MONOTONIC` as the cores' [`rtlan_core::Instant`], absolute
//!   `timerfd` deadlines, wake-up lateness.
//! - [`switchd`]: the switch daemon (`rtlan switch --config FILE`).
//! - [`ctl`]: the client of the switch's control socket.

pub mod clock;
pub mod ctl;
pub mod packet;
pub mod switchd;
pub mod timer;
