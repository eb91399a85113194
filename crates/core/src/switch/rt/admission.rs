//! Per-hop admission control (EtheReal §2.3 and §3.3): a reservation is admitted on an output
//! link only while the sum of real-time reservations stays under a cap (60 % of the line rate in
//! the paper), so non-real-time traffic never starves.
//!
//! **Units.** Bookings are in *wire* bit/s: every frame counted with its preamble, SFD, FCS and
//! inter-frame gap and padded to the Ethernet minimum — the same accounting the output pacer
//! uses ([`wire_bits`]). A SETUP's rate counts whole frames with their 14-byte header but
//! without that overhead (`docs/protocol.md` §3); convert it with [`wire_rate`] before booking.
//! The line rate is a wire rate too, so the cap is a true share of the link.
//!
//! Only output-link bandwidth is checked now; backplane, CPU and buffer budgets (EtheReal §2.3,
//! issue 4) become further fields of [`Booking`] and further checks in [`Admission::try_book`],
//! which stays all-or-nothing. A refusal here books nothing; releasing what upstream hops booked
//! is the signalling layer's job, which calls [`Admission::release`] with their bookings.

use rtlan_wire::control::FailReason;

use crate::switch::{wire_bits, PortId};

/// EtheReal §3.3: real-time reservations may use at most 60 % of a link.
pub const DEFAULT_RT_CAP_PERCENT: u8 = 60;

/// Why a booking was refused or could not be released.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AdmissionError {
    /// Not enough real-time bandwidth left on the output link.
    #[error("port {port:?}: {requested} bit/s requested, {available} bit/s left under the cap")]
    Bandwidth {
        /// The output port.
        port: PortId,
        /// Wire rate asked for.
        requested: u64,
        /// Wire rate still free under the cap.
        available: u64,
    },
    /// The port is not one admission knows.
    #[error("unknown port {0:?}")]
    UnknownPort(PortId),
    /// A release for more than the port has booked (a booking released twice, or from another
    /// admission instance).
    #[error("port {0:?}: release exceeds what is booked")]
    NotBooked(PortId),
}

impl AdmissionError {
    /// The reason code a SETUP_FAIL carries for this error.
    pub fn reason(&self) -> FailReason {
        match self {
            AdmissionError::Bandwidth { .. } => FailReason::Bandwidth,
            AdmissionError::UnknownPort(_) => FailReason::NoRoute,
            AdmissionError::NotBooked(_) => FailReason::Malformed,
        }
    }
}

/// The wire rate (bit/s) a reservation of `rate_bps` (whole frames, header included) needs when
/// it sends frames of `max_packet` bytes: `rate × wire_bits(max_packet) / (8 × max_packet)`,
/// rounded up and saturating. Senders that use smaller frames pay the extra overhead out of their
/// own reservation (shaping and policing count wire bits). `max_packet` 0 counts as 1.
pub fn wire_rate(rate_bps: u64, max_packet: u16) -> u64 {
    let frame = u128::from(max_packet.max(1));
    let wire = u128::from(wire_bits(usize::from(max_packet.max(1))));
    let needed = (u128::from(rate_bps) * wire).div_ceil(frame * 8);
    u64::try_from(needed).unwrap_or(u64::MAX)
}

/// Resources held by one admitted connection on one switch. Not `Clone`: each booking is
/// released exactly once, by handing it back to [`Admission::release`].
#[derive(Debug, PartialEq, Eq)]
pub struct Booking {
    /// The output port booked on.
    pub port: PortId,
    /// Wire bit/s booked on that port.
    pub wire_rate_bps: u64,
}

/// One output port's budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct PortBudget {
    /// Line rate, wire bit/s.
    pub line_rate_bps: u64,
    /// Real-time cap in percent of the line rate.
    pub cap_percent: u8,
    /// Sum of live bookings, wire bit/s.
    pub booked_bps: u64,
}

impl PortBudget {
    /// Largest total the real-time bookings may reach, wire bit/s.
    pub fn cap_bps(&self) -> u64 {
        let cap = u128::from(self.line_rate_bps) * u128::from(self.cap_percent.min(100)) / 100;
        u64::try_from(cap).unwrap_or(u64::MAX)
    }

    /// What is still free under the cap, wire bit/s.
    pub fn available_bps(&self) -> u64 {
        self.cap_bps().saturating_sub(self.booked_bps)
    }
}

/// Admission state of one switch: a budget per output port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admission {
    ports: Vec<PortBudget>,
    refusals: u64,
}

impl Admission {
    /// One budget per port with the given line rates (wire bit/s) and the paper's 60 % cap.
    pub fn new(line_rates_bps: &[u64]) -> Admission {
        Admission::with_cap(line_rates_bps, DEFAULT_RT_CAP_PERCENT)
    }

    /// Like [`Admission::new`] with another cap (percent, clamped to 100).
    pub fn with_cap(line_rates_bps: &[u64], cap_percent: u8) -> Admission {
        Admission {
            ports: line_rates_bps
                .iter()
                .map(|&line_rate_bps| PortBudget {
                    line_rate_bps,
                    cap_percent: cap_percent.min(100),
                    booked_bps: 0,
                })
                .collect(),
            refusals: 0,
        }
    }

    /// The budget of `port`.
    pub fn port(&self, port: PortId) -> Option<&PortBudget> {
        self.ports.get(usize::from(port.0))
    }

    /// How many bookings were refused for lack of bandwidth.
    pub fn refusals(&self) -> u64 {
        self.refusals
    }

    /// Books `wire_rate_bps` on `port` if it fits under the cap; all or nothing.
    pub fn try_book(
        &mut self,
        port: PortId,
        wire_rate_bps: u64,
    ) -> Result<Booking, AdmissionError> {
        let budget = self
            .ports
            .get_mut(usize::from(port.0))
            .ok_or(AdmissionError::UnknownPort(port))?;
        let available = budget.available_bps();
        if wire_rate_bps > available {
            self.refusals += 1;
            return Err(AdmissionError::Bandwidth {
                port,
                requested: wire_rate_bps,
                available,
            });
        }
        budget.booked_bps += wire_rate_bps;
        Ok(Booking {
            port,
            wire_rate_bps,
        })
    }

    /// Gives back what `booking` holds.
    pub fn release(&mut self, booking: Booking) -> Result<(), AdmissionError> {
        let budget = self
            .ports
            .get_mut(usize::from(booking.port.0))
            .ok_or(AdmissionError::UnknownPort(booking.port))?;
        budget.booked_bps = budget
            .booked_bps
            .checked_sub(booking.wire_rate_bps)
            .ok_or(AdmissionError::NotBooked(booking.port))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn books_up_to_the_cap_and_release_frees() {
        let mut adm = Admission::new(&[100_000_000, 10_000_000]);
        let a = adm.try_book(PortId(0), 40_000_000).unwrap();
        let b = adm.try_book(PortId(0), 20_000_000).unwrap();
        assert_eq!(adm.port(PortId(0)).unwrap().booked_bps, 60_000_000);
        let err = adm.try_book(PortId(0), 1).unwrap_err();
        assert_eq!(
            err,
            AdmissionError::Bandwidth {
                port: PortId(0),
                requested: 1,
                available: 0
            }
        );
        assert_eq!(err.reason(), FailReason::Bandwidth);
        assert_eq!(adm.refusals(), 1);
        // The other port is independent.
        assert!(adm.try_book(PortId(1), 6_000_001).is_err());
        let c = adm.try_book(PortId(1), 6_000_000).unwrap();
        adm.release(b).unwrap();
        assert_eq!(adm.port(PortId(0)).unwrap().available_bps(), 20_000_000);
        assert!(adm.try_book(PortId(0), 20_000_001).is_err());
        let d = adm.try_book(PortId(0), 20_000_000).unwrap();
        for booking in [a, c, d] {
            adm.release(booking).unwrap();
        }
        assert_eq!(adm.port(PortId(0)).unwrap().booked_bps, 0);
        assert_eq!(
            adm.try_book(PortId(2), 1),
            Err(AdmissionError::UnknownPort(PortId(2)))
        );
    }

    #[test]
    fn wire_rate_adds_per_frame_overhead() {
        // 1514-byte frames: (1514 + 24) / 1514 of the frame rate.
        assert_eq!(wire_rate(1514 * 8, 1514), 1538 * 8);
        // Small frames are padded to 60 bytes: 42-byte frames cost (60 + 24) / 42.
        assert_eq!(wire_rate(42 * 8 * 1000, 42), 84 * 8 * 1000);
        assert_eq!(wire_rate(1, 1514), 2, "rounded up");
        assert_eq!(wire_rate(u64::MAX, 60), u64::MAX, "saturates");
    }

    proptest! {
        #[test]
        fn booked_is_sum_of_live_bookings(
            ops in proptest::collection::vec((any::<bool>(), 0u16..3, 0u64..30_000_000, any::<prop::sample::Index>()), 0..200)
        ) {
            let line = [100_000_000u64, 10_000_000, 1_000_000_000];
            let mut adm = Admission::new(&line);
            let mut live: Vec<Booking> = Vec::new();
            for (book, port, rate, pick) in ops {
                if book || live.is_empty() {
                    let before = adm.port(PortId(port)).unwrap().available_bps();
                    match adm.try_book(PortId(port), rate) {
                        Ok(b) => live.push(b),
                        Err(e) => {
                            prop_assert_eq!(e.reason(), FailReason::Bandwidth);
                            prop_assert!(rate > before, "refused although it fit");
                        }
                    }
                } else {
                    let b = live.swap_remove(pick.index(live.len()));
                    adm.release(b).unwrap();
                }
                for p in 0..3u16 {
                    let budget = adm.port(PortId(p)).unwrap();
                    let sum: u64 = live.iter().filter(|b| b.port == PortId(p)).map(|b| b.wire_rate_bps).sum();
                    prop_assert_eq!(budget.booked_bps, sum);
                    prop_assert!(budget.booked_bps <= line[usize::from(p)] * 60 / 100);
                }
            }
        }
    }
}
