//! Wire formats: zero-copy views and owned `Repr`s (STYLE.md §1, after smoltcp's `wire`).
//!
//! Every header has a view `Packet<T: AsRef<[u8]>>` (for Ethernet, `Frame<T>`) whose
//! `new_checked` validates the length once, after which no accessor panics, and an owned `Repr`
//! with `parse`, `emit` and `buffer_len`. Code values that may be unknown are data
//! (`Unknown(..)` variants), not errors.
//!
//! Written here rather than taken from smoltcp because the switch needs things smoltcp's `wire`
//! does not offer: VLAN-tag-aware Ethernet views that pass tags through intact, and in-place
//! destination rewriting with RFC 1624 incremental checksum updates (EtheReal §3.2, the proxy IP
//! rewrite at the first switch) — see [`rewrite`].

mod error;
#[cfg(test)]
mod testdata;

pub mod arp;
pub mod checksum;
pub mod control;
pub mod cost;
pub mod ethernet;
pub mod gso;
pub mod icmp;
pub mod ipv4;
pub mod mpls;
pub mod rether;
pub mod rewrite;
pub mod rsvp;
pub mod stp;
pub mod tcp;
pub mod udp;

pub use cost::{tx_time, wire_bits, wire_bytes};
pub use error::{Error, Result};
