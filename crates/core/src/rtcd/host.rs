//! The host's own egress queue as the first server on a connection's path (`docs/delay.md`
//! § "The host's term").
//!
//! EtheReal §2.2 shapes at the sender and reserves from the first switch on; Löser/Härtig §3
//! count a host delay `t_os` in every bound. Here the daemon gives its host's reserved traffic a
//! queue ahead of the host's other traffic (`crates/linux/src/rtcd/tc.rs`, the simulator's host
//! NIC), so a reserved frame waits for at most the non-real-time frame in transmission and the
//! other reserved frames of the same host. Those are bounded by the T-SPECs the daemon itself
//! admitted, so the daemon can promise a constant host term `D_h` (`host_delay`) for every
//! connection and keep it by admission:
//!
//! - all reserved traffic in one FIFO (every connection shaped by the application): a frame
//!   waits at most `(Σ b_j + L_max) / C`;
//! - some connections in kernel shaping classes served round robin beside the FIFO (work
//!   conserving among themselves, not FIFO): at most the busy period of the reserved aggregate,
//!   `(Σ b_j + L_max) / (C − Σ r_j)`;
//!
//! plus the host's wake-up lateness budget `λ_h`, all in wire units (`rtlan_wire::cost`). A
//! connection is opened only if that sum over every connection of the host, the new one
//! included, stays within `D_h`; so admitting one never breaks another's term, and each bound
//! starts at `D_h` (the SETUP's DELAY TLV carries it as the latency so far, and the first switch
//! sizes its queue and policer for the burst `b + r·D_h` it can see).
//!
//! Integer arithmetic, rounded up: a handful of sums per SETUP, no need for exact rationals.

use rtlan_calculus::servers::{self, HopTspec};
use rtlan_wire::control::SetupRepr;
use rtlan_wire::cost::wire_bits;

use crate::switch::DEFAULT_MAX_FRAME_BYTES;

/// One reserved connection of the host as its queue sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct HostFlow {
    /// Wire rate and burst.
    pub(super) tspec: HopTspec,
    /// Whether the kernel shapes it in its own class (so the reserved queue is not one FIFO).
    pub(super) kernel_shaped: bool,
}

impl HostFlow {
    /// The flow of `setup`, `None` for a T-SPEC the calculus refuses.
    pub(super) fn of(setup: &SetupRepr, kernel_shaped: bool) -> Option<HostFlow> {
        let tspec =
            servers::tspec_from_setup(setup.rate, setup.max_burst, setup.max_packet).ok()?;
        Some(HostFlow {
            tspec,
            kernel_shaped,
        })
    }
}

/// The longest a reserved frame can wait in the host's queue, ns (rounded up), lateness not
/// included; `None` when the reserved rates fill the link (no bound).
pub(super) fn queue_delay_ns(flows: &[HostFlow], link_rate_bps: u64) -> Option<u64> {
    let bits: u128 = flows
        .iter()
        .map(|f| u128::from(f.tspec.burst_bits))
        .sum::<u128>()
        + u128::from(wire_bits(DEFAULT_MAX_FRAME_BYTES));
    let fifo = flows.iter().all(|f| !f.kernel_shaped);
    let rate: u128 = if fifo {
        u128::from(link_rate_bps)
    } else {
        let reserved: u128 = flows.iter().map(|f| u128::from(f.tspec.rate_bps)).sum();
        u128::from(link_rate_bps).checked_sub(reserved)?
    };
    if rate == 0 {
        return None;
    }
    u64::try_from((bits * 1_000_000_000).div_ceil(rate)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(rate_bps: u64, burst_bits: u64, kernel_shaped: bool) -> HostFlow {
        HostFlow {
            tspec: HopTspec {
                rate_bps,
                burst_bits,
                max_frame_bits: 12_000,
            },
            kernel_shaped,
        }
    }

    #[test]
    fn one_fifo_waits_for_every_burst_and_one_frame_at_line_rate() {
        // (20,000 + 10,000 + 12,336 bits) / 100 Mbit/s = 423.36 µs.
        let flows = [
            flow(30_000_000, 20_000, false),
            flow(5_000_000, 10_000, false),
        ];
        assert_eq!(queue_delay_ns(&flows, 100_000_000), Some(423_360));
        assert_eq!(queue_delay_ns(&[], 100_000_000), Some(123_360));
    }

    #[test]
    fn round_robin_classes_wait_for_the_busy_period() {
        // One kernel-shaped class: not FIFO, so (Σb + L)/(C − Σr) = 42,336 / 65 Mbit/s.
        let flows = [
            flow(30_000_000, 20_000, true),
            flow(5_000_000, 10_000, false),
        ];
        assert_eq!(queue_delay_ns(&flows, 100_000_000), Some(651_324));
        let full = [
            flow(60_000_000, 20_000, true),
            flow(40_000_000, 10_000, false),
        ];
        assert_eq!(queue_delay_ns(&full, 100_000_000), None);
    }
}
