//! The host's own egress queue as the first server on a connection's path (`docs/delay.md`
//! § "The host's term").
//!
//! EtheReal §2.2 shapes at the sender and reserves from the first switch on; Löser/Härtig §3
//! count a host delay `t_os` in every bound. Here the daemon gives its host's reserved traffic a
//! queue served ahead of the host's other traffic (`crates/linux/src/rtcd/tc.rs`, the
//! simulator's host NIC): the reserved aggregate sees the link as a strict rate-latency server
//! of rate `C` and latency `L_max/C` (one non-real-time frame in transmission). In whatever order
//! the reserved frames are served among themselves (one FIFO, or kernel shaping classes served
//! round robin beside it), connection *i* is left at least the service the others cannot take —
//! blind multiplexing (Le Boudec/Thiran, Thm 6.2.1) against their token buckets:
//!
//! ```text
//! θ_h,i = (Σ_{j≠i} b_j + L_max) / (C − Σ_{j≠i} r_j)      at rate C − Σ_{j≠i} r_j ≥ r_i
//! ```
//!
//! plus the host's wake-up lateness budget `λ_h`, all in wire units (`rtlan_wire::cost`). Its own
//! burst is not in its own term: the concatenation pays it once, as `b/r`. The daemon promises
//! one constant term `D_h` (`host_delay`) to every connection and keeps it by admission: a
//! connection opens only if θ_h,i + λ_h ≤ `D_h` for every connection *i* of the host, the new one
//! included. So admitting one never breaks another's term, and each bound starts at `D_h` (the
//! SETUP's DELAY TLV carries it as the latency so far, and the first switch sizes its queue and
//! policer for the burst `b + r·D_h` it can see).
//!
//! Integer arithmetic, rounded up: a handful of sums per SETUP, no need for exact rationals.

use rtlan_calculus::servers::{self, HopTspec};
use rtlan_wire::control::SetupRepr;
use rtlan_wire::cost::wire_bits;

use crate::switch::DEFAULT_MAX_FRAME_BYTES;

/// The wire T-SPEC of `setup`, `None` for one the calculus refuses.
pub(super) fn tspec(setup: &SetupRepr) -> Option<HopTspec> {
    servers::tspec_from_setup(setup.rate, setup.max_burst, setup.max_packet).ok()
}

/// The longest any one of `flows` can wait in the host's reserved queue, ns (rounded up),
/// lateness not included: the largest θ_h,i over the flows; `None` when the others' rates leave
/// some connection less than its own rate (no bound).
pub(super) fn queue_delay_ns(flows: &[HopTspec], link_rate_bps: u64) -> Option<u64> {
    let bursts: u128 = flows.iter().map(|f| u128::from(f.burst_bits)).sum();
    let rates: u128 = flows.iter().map(|f| u128::from(f.rate_bps)).sum();
    let frame = u128::from(wire_bits(DEFAULT_MAX_FRAME_BYTES));
    let link = u128::from(link_rate_bps);
    let mut worst = 0u64;
    for f in flows {
        let others_rate = rates - u128::from(f.rate_bps);
        let left = link.checked_sub(others_rate)?;
        if left < u128::from(f.rate_bps) || left == 0 {
            return None;
        }
        let bits = bursts - u128::from(f.burst_bits) + frame;
        let ns = u64::try_from((bits * 1_000_000_000).div_ceil(left)).ok()?;
        worst = worst.max(ns);
    }
    Some(worst)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(rate_bps: u64, burst_bits: u64) -> HopTspec {
        HopTspec {
            rate_bps,
            burst_bits,
            max_frame_bits: 12_000,
        }
    }

    #[test]
    fn each_connection_waits_for_the_others_bursts_and_one_frame() {
        // Alone: one frame, 12,336 bits / 100 Mbit/s.
        assert_eq!(
            queue_delay_ns(&[flow(30_000_000, 20_000)], 100_000_000),
            Some(123_360)
        );
        // Two: the 30 Mbit/s one waits (10,000 + 12,336) / 95 Mbit/s = 235.12 µs, the 5 Mbit/s
        // one (20,000 + 12,336) / 70 Mbit/s = 461.94 µs: the worst is the term.
        let flows = [flow(30_000_000, 20_000), flow(5_000_000, 10_000)];
        assert_eq!(queue_delay_ns(&flows, 100_000_000), Some(461_943));
        assert_eq!(queue_delay_ns(&[], 100_000_000), Some(0));
    }

    #[test]
    fn rates_that_leave_a_connection_less_than_its_own_have_no_bound() {
        let full = [flow(60_000_000, 20_000), flow(41_000_000, 10_000)];
        assert_eq!(queue_delay_ns(&full, 100_000_000), None);
    }
}
