//! Per-hop admission control (EtheReal §2.3, §3.3 and §4.3): a reservation is admitted on a
//! switch only if every resource it needs is still available, all or nothing:
//!
//! - **output-link bandwidth**: the sum of real-time reservations on the output port stays under
//!   a cap (60 % of the line rate in the paper), so non-real-time traffic never starves;
//! - **backplane**: the sum of all reservations through the switch stays within the backplane's
//!   capacity (`None` = unlimited: a software switch's "backplane" is its memory bus, which the
//!   output links saturate first);
//! - **CPU**: the scheduler's cost per connection per cycle (§4.3) times the number of
//!   connections stays within a share of the cycle;
//! - **buffer memory**: the sum of the connections' queues (2 × maximum burst each, §3.3) stays
//!   within the memory set aside for real-time queues.
//!
//! **Units.** Bookings are in *wire* bit/s: every frame counted with its preamble, SFD, FCS and
//! inter-frame gap and padded to the Ethernet minimum — the same accounting the output pacer
//! uses ([`rtlan_wire::cost`]). A SETUP's rate counts whole frames with their 14-byte header but
//! without that overhead (`docs/protocol.md` §3); convert it with [`wire_rate`] before booking.
//! The line rate is a wire rate too, so the cap is a true share of the link.
//!
//! A refusal books nothing; releasing what upstream hops booked is the signalling layer's job,
//! which calls [`Admission::release`] with their bookings.

use std::time::Duration;

use rtlan_wire::control::FailReason;

use rtlan_wire::cost::wire_bytes;

use crate::switch::PortId;

/// EtheReal §3.3: real-time reservations may use at most 60 % of a link.
pub const DEFAULT_RT_CAP_PERCENT: u8 = 60;

/// Default share of a cycle the scheduler may spend on real-time connections, percent.
pub const DEFAULT_CPU_BUDGET_PERCENT: u8 = 50;

/// Default scheduler cost per connection per cycle (EtheReal §4.3 order of magnitude; measured:
/// about 0.1 µs, `docs/scheduler.md` §6).
pub const DEFAULT_CPU_COST_PER_CONNECTION: Duration = Duration::from_micros(1);

/// Default memory for real-time connection queues, bytes (64 MiB).
pub const DEFAULT_RT_BUFFER_BYTES: usize = 64 * 1024 * 1024;

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
    /// Not enough backplane capacity left.
    #[error("backplane: {requested} bit/s requested, {available} bit/s left")]
    Backplane {
        /// Wire rate asked for.
        requested: u64,
        /// Wire rate still free on the backplane.
        available: u64,
    },
    /// One more connection would exceed the scheduler's CPU budget per cycle.
    #[error("CPU: {connections} connections already use the cycle's budget")]
    Cpu {
        /// Connections admitted so far.
        connections: u64,
    },
    /// Not enough real-time queue memory left.
    #[error("buffer: {requested} bytes requested, {available} bytes left")]
    Buffer {
        /// Queue bytes asked for (2 × max burst).
        requested: usize,
        /// Queue bytes still free.
        available: usize,
    },
    /// The port's cyclic scheduler cannot serve this much more work per cycle within the bound's
    /// assumptions (`rtlan_calculus::servers::cyclic_work_budget_bits`, docs/calculus.md).
    #[error("port {port:?}: cycle work {requested} bits requested, {available} bits left")]
    CycleWork {
        /// The output port.
        port: PortId,
        /// Wire bits per cycle asked for (quota + one frame).
        requested: u64,
        /// Wire bits per cycle still free.
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
            AdmissionError::Bandwidth { .. } | AdmissionError::CycleWork { .. } => {
                FailReason::Bandwidth
            }
            AdmissionError::Backplane { .. } => FailReason::Backplane,
            AdmissionError::Cpu { .. } => FailReason::Cpu,
            AdmissionError::Buffer { .. } => FailReason::Buffer,
            AdmissionError::UnknownPort(_) => FailReason::NoRoute,
            AdmissionError::NotBooked(_) => FailReason::Malformed,
        }
    }
}

/// The wire rate (bit/s) a reservation of `rate_bps` (whole frames, header included) needs when
/// it sends frames of `max_packet` bytes: `rate × wire_bytes(max_packet) / max_packet`,
/// rounded up and saturating. Senders that use smaller frames pay the extra overhead out of their
/// own reservation (shaping and policing count wire bits). `max_packet` 0 counts as 1.
pub fn wire_rate(rate_bps: u64, max_packet: u16) -> u64 {
    let frame = u128::from(max_packet.max(1));
    let wire = u128::from(wire_bytes(usize::from(max_packet.max(1))));
    let needed = (u128::from(rate_bps) * wire).div_ceil(frame);
    u64::try_from(needed).unwrap_or(u64::MAX)
}

/// Resources held by one admitted connection on one switch. Not `Clone`: each booking is
/// released exactly once, by handing it back to [`Admission::release`].
#[derive(Debug, PartialEq, Eq)]
pub struct Booking {
    /// The output port booked on.
    pub port: PortId,
    /// Wire bit/s booked on that port (and on the backplane).
    pub wire_rate_bps: u64,
    /// Real-time queue bytes booked (the connection's backlog bound at this hop).
    pub buffer_bytes: usize,
    /// Wire bits per cycle booked against the port's cycle-work budget (0 without one).
    pub cycle_work_bits: u64,
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
    /// The most work (wire bits per cycle) a cyclic scheduler may be booked for: `U·C·T`
    /// (`None`: no such budget, e.g. a timing-wheel port).
    pub work_budget_bits: Option<u64>,
    /// Sum of the live bookings' cycle work, wire bits.
    pub work_booked_bits: u64,
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

/// The switch-wide limits (backplane, CPU, buffer memory).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct SwitchLimits {
    /// Backplane capacity, wire bit/s; `None` = unlimited.
    pub backplane_bps: Option<u64>,
    /// The scheduling cycle.
    pub cycle: Duration,
    /// Scheduler cost per connection per cycle.
    pub cpu_cost_per_connection: Duration,
    /// Share of the cycle real-time scheduling may use, percent (clamped to 100).
    pub cpu_budget_percent: u8,
    /// Memory for real-time connection queues, bytes.
    pub rt_buffer_bytes: usize,
}

impl SwitchLimits {
    /// Unlimited backplane, 10 ms cycle, 1 µs per connection, 50 % CPU, 64 MiB of queues.
    pub fn new() -> SwitchLimits {
        SwitchLimits {
            backplane_bps: None,
            cycle: Duration::from_millis(10),
            cpu_cost_per_connection: DEFAULT_CPU_COST_PER_CONNECTION,
            cpu_budget_percent: DEFAULT_CPU_BUDGET_PERCENT,
            rt_buffer_bytes: DEFAULT_RT_BUFFER_BYTES,
        }
    }

    /// Most connections the CPU budget allows: ⌊cycle × budget % / cost⌋ (unlimited if the
    /// cost is zero).
    pub fn max_connections_cpu(&self) -> u64 {
        let cost = self.cpu_cost_per_connection.as_nanos();
        if cost == 0 {
            return u64::MAX;
        }
        let budget = self.cycle.as_nanos() * u128::from(self.cpu_budget_percent.min(100)) / 100;
        u64::try_from(budget / cost).unwrap_or(u64::MAX)
    }
}

impl Default for SwitchLimits {
    fn default() -> SwitchLimits {
        SwitchLimits::new()
    }
}

/// Switch-wide use of the shared resources, for reporting.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct SwitchUsage {
    /// Sum of all bookings, wire bit/s (backplane load).
    pub backplane_booked_bps: u64,
    /// Connections admitted (CPU load: × cost per connection per cycle).
    pub connections: u64,
    /// Most connections the CPU budget allows.
    pub max_connections_cpu: u64,
    /// Real-time queue bytes booked.
    pub buffer_booked_bytes: usize,
}

/// Admission state of one switch: a budget per output port plus the switch-wide limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admission {
    ports: Vec<PortBudget>,
    limits: SwitchLimits,
    usage: SwitchUsage,
    refusals: u64,
    refusals_by: RefusalCounts,
}

/// Bookings refused, by the resource that was short (each refusal counts once, under the first
/// check that failed: port bandwidth, backplane, CPU, buffer, then cycle work).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct RefusalCounts {
    /// [`AdmissionError::Bandwidth`]: the output link's real-time cap.
    pub bandwidth: u64,
    /// [`AdmissionError::Backplane`].
    pub backplane: u64,
    /// [`AdmissionError::Cpu`]: the scheduler's per-cycle connection budget.
    pub cpu: u64,
    /// [`AdmissionError::Buffer`]: real-time queue memory.
    pub buffer: u64,
    /// [`AdmissionError::CycleWork`]: the port's cyclic-scheduler work budget.
    pub cycle_work: u64,
    /// [`AdmissionError::UnknownPort`] or [`AdmissionError::NotBooked`].
    pub other: u64,
}

impl RefusalCounts {
    /// Counts one refusal under its resource.
    fn count(&mut self, error: &AdmissionError) {
        let slot = match error {
            AdmissionError::Bandwidth { .. } => &mut self.bandwidth,
            AdmissionError::Backplane { .. } => &mut self.backplane,
            AdmissionError::Cpu { .. } => &mut self.cpu,
            AdmissionError::Buffer { .. } => &mut self.buffer,
            AdmissionError::CycleWork { .. } => &mut self.cycle_work,
            AdmissionError::UnknownPort(_) | AdmissionError::NotBooked(_) => &mut self.other,
        };
        *slot += 1;
    }

    /// `(resource, count)` pairs in a fixed order, the resource as a metric label.
    pub fn by_resource(&self) -> [(&'static str, u64); 6] {
        [
            ("bandwidth", self.bandwidth),
            ("backplane", self.backplane),
            ("cpu", self.cpu),
            ("buffer", self.buffer),
            ("cycle_work", self.cycle_work),
            ("other", self.other),
        ]
    }
}

impl Admission {
    /// One budget per port with the given line rates (wire bit/s), the paper's 60 % cap and the
    /// default [`SwitchLimits`].
    pub fn new(line_rates_bps: &[u64]) -> Admission {
        Admission::with_cap(line_rates_bps, DEFAULT_RT_CAP_PERCENT)
    }

    /// Like [`Admission::new`] with another cap (percent, clamped to 100).
    pub fn with_cap(line_rates_bps: &[u64], cap_percent: u8) -> Admission {
        Admission::with_limits(line_rates_bps, cap_percent, SwitchLimits::new())
    }

    /// Per-port budgets under `cap_percent` plus the switch-wide `limits`.
    pub fn with_limits(line_rates_bps: &[u64], cap_percent: u8, limits: SwitchLimits) -> Admission {
        Admission {
            ports: line_rates_bps
                .iter()
                .map(|&line_rate_bps| PortBudget {
                    line_rate_bps,
                    cap_percent: cap_percent.min(100),
                    booked_bps: 0,
                    work_budget_bits: None,
                    work_booked_bits: 0,
                })
                .collect(),
            usage: SwitchUsage {
                max_connections_cpu: limits.max_connections_cpu(),
                ..SwitchUsage::default()
            },
            limits,
            refusals: 0,
            refusals_by: RefusalCounts::default(),
        }
    }

    /// Gives `port` a cycle-work budget (wire bits per cycle; `None`: none). Bookings already
    /// made keep their work.
    pub fn set_work_budget(&mut self, port: PortId, budget_bits: Option<u64>) {
        if let Some(p) = self.ports.get_mut(usize::from(port.0)) {
            p.work_budget_bits = budget_bits;
        }
    }

    /// The budget of `port`.
    pub fn port(&self, port: PortId) -> Option<&PortBudget> {
        self.ports.get(usize::from(port.0))
    }

    /// The switch-wide limits.
    pub fn limits(&self) -> &SwitchLimits {
        &self.limits
    }

    /// The switch-wide use of backplane, CPU and buffer memory.
    pub fn usage(&self) -> &SwitchUsage {
        &self.usage
    }

    /// How many bookings were refused (any resource).
    pub fn refusals(&self) -> u64 {
        self.refusals
    }

    /// [`Admission::refusals`] by the resource that was short.
    pub fn refusals_by_resource(&self) -> &RefusalCounts {
        &self.refusals_by
    }

    /// Books `wire_rate_bps` on `port` (and the backplane), one connection's CPU share and
    /// `buffer_bytes` of queue memory, if all fit; all or nothing.
    pub fn try_book(
        &mut self,
        port: PortId,
        wire_rate_bps: u64,
        buffer_bytes: usize,
    ) -> Result<Booking, AdmissionError> {
        self.try_book_work(port, wire_rate_bps, buffer_bytes, 0)
    }

    /// [`Admission::try_book`], also booking `cycle_work_bits` against the port's cycle-work
    /// budget (if it has one).
    pub fn try_book_work(
        &mut self,
        port: PortId,
        wire_rate_bps: u64,
        buffer_bytes: usize,
        cycle_work_bits: u64,
    ) -> Result<Booking, AdmissionError> {
        let result = self
            .check(port, wire_rate_bps, buffer_bytes)
            .and_then(|()| self.check_work(port, cycle_work_bits));
        if let Err(error) = &result {
            self.refusals += 1;
            self.refusals_by.count(error);
        }
        result?;
        let usage = &mut self.usage;
        usage.backplane_booked_bps = usage.backplane_booked_bps.saturating_add(wire_rate_bps);
        usage.connections += 1;
        usage.buffer_booked_bytes = usage.buffer_booked_bytes.saturating_add(buffer_bytes);
        if let Some(budget) = self.ports.get_mut(usize::from(port.0)) {
            budget.booked_bps += wire_rate_bps;
            budget.work_booked_bits = budget.work_booked_bits.saturating_add(cycle_work_bits);
        }
        Ok(Booking {
            port,
            wire_rate_bps,
            buffer_bytes,
            cycle_work_bits,
        })
    }

    /// Whether `port`'s cycle-work budget (if any) holds `bits` more.
    fn check_work(&self, port: PortId, bits: u64) -> Result<(), AdmissionError> {
        let budget = self
            .ports
            .get(usize::from(port.0))
            .ok_or(AdmissionError::UnknownPort(port))?;
        let Some(limit) = budget.work_budget_bits else {
            return Ok(());
        };
        let available = limit.saturating_sub(budget.work_booked_bits);
        if bits > available {
            return Err(AdmissionError::CycleWork {
                port,
                requested: bits,
                available,
            });
        }
        Ok(())
    }

    /// Checks every resource without booking anything.
    fn check(
        &self,
        port: PortId,
        wire_rate_bps: u64,
        buffer_bytes: usize,
    ) -> Result<(), AdmissionError> {
        let budget = self
            .ports
            .get(usize::from(port.0))
            .ok_or(AdmissionError::UnknownPort(port))?;
        let available = budget.available_bps();
        if wire_rate_bps > available {
            return Err(AdmissionError::Bandwidth {
                port,
                requested: wire_rate_bps,
                available,
            });
        }
        if let Some(backplane) = self.limits.backplane_bps {
            let available = backplane.saturating_sub(self.usage.backplane_booked_bps);
            if wire_rate_bps > available {
                return Err(AdmissionError::Backplane {
                    requested: wire_rate_bps,
                    available,
                });
            }
        }
        if self.usage.connections >= self.usage.max_connections_cpu {
            return Err(AdmissionError::Cpu {
                connections: self.usage.connections,
            });
        }
        let available = self
            .limits
            .rt_buffer_bytes
            .saturating_sub(self.usage.buffer_booked_bytes);
        if buffer_bytes > available {
            return Err(AdmissionError::Buffer {
                requested: buffer_bytes,
                available,
            });
        }
        Ok(())
    }

    /// Gives back everything `booking` holds.
    pub fn release(&mut self, booking: Booking) -> Result<(), AdmissionError> {
        let budget = self
            .ports
            .get_mut(usize::from(booking.port.0))
            .ok_or(AdmissionError::UnknownPort(booking.port))?;
        budget.booked_bps = budget
            .booked_bps
            .checked_sub(booking.wire_rate_bps)
            .ok_or(AdmissionError::NotBooked(booking.port))?;
        budget.work_booked_bits = budget
            .work_booked_bits
            .saturating_sub(booking.cycle_work_bits);
        let usage = &mut self.usage;
        usage.backplane_booked_bps = usage
            .backplane_booked_bps
            .saturating_sub(booking.wire_rate_bps);
        usage.connections = usage.connections.saturating_sub(1);
        usage.buffer_booked_bytes = usage
            .buffer_booked_bytes
            .saturating_sub(booking.buffer_bytes);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn cycle_work_is_booked_against_the_ports_budget_and_released() {
        let mut adm = Admission::new(&[100_000_000, 100_000_000]);
        adm.set_work_budget(PortId(0), Some(600_000));
        let a = adm.try_book_work(PortId(0), 1_000_000, 0, 400_000).unwrap();
        // Bandwidth is plentiful, cycle work is not: BANDWIDTH, nothing booked.
        let err = adm
            .try_book_work(PortId(0), 1_000_000, 0, 200_001)
            .unwrap_err();
        assert_eq!(
            err,
            AdmissionError::CycleWork {
                port: PortId(0),
                requested: 200_001,
                available: 200_000
            }
        );
        assert_eq!(err.reason(), FailReason::Bandwidth);
        assert_eq!(adm.port(PortId(0)).unwrap().booked_bps, 1_000_000);
        let b = adm.try_book_work(PortId(0), 1_000_000, 0, 200_000).unwrap();
        assert_eq!(adm.port(PortId(0)).unwrap().work_booked_bits, 600_000);
        // A port without a budget books any work.
        let c = adm
            .try_book_work(PortId(1), 1_000_000, 0, u64::MAX / 2)
            .unwrap();
        adm.release(a).unwrap();
        assert_eq!(adm.port(PortId(0)).unwrap().work_booked_bits, 200_000);
        adm.release(b).unwrap();
        adm.release(c).unwrap();
        assert_eq!(adm.port(PortId(0)).unwrap().work_booked_bits, 0);
    }

    #[test]
    fn books_up_to_the_cap_and_release_frees() {
        let mut adm = Admission::new(&[100_000_000, 10_000_000]);
        let a = adm.try_book(PortId(0), 40_000_000, 0).unwrap();
        let b = adm.try_book(PortId(0), 20_000_000, 0).unwrap();
        assert_eq!(adm.port(PortId(0)).unwrap().booked_bps, 60_000_000);
        let err = adm.try_book(PortId(0), 1, 0).unwrap_err();
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
        assert!(adm.try_book(PortId(1), 6_000_001, 0).is_err());
        let c = adm.try_book(PortId(1), 6_000_000, 0).unwrap();
        adm.release(b).unwrap();
        assert_eq!(adm.port(PortId(0)).unwrap().available_bps(), 20_000_000);
        assert!(adm.try_book(PortId(0), 20_000_001, 0).is_err());
        let d = adm.try_book(PortId(0), 20_000_000, 0).unwrap();
        for booking in [a, c, d] {
            adm.release(booking).unwrap();
        }
        assert_eq!(adm.port(PortId(0)).unwrap().booked_bps, 0);
        assert_eq!(
            adm.try_book(PortId(2), 1, 0),
            Err(AdmissionError::UnknownPort(PortId(2)))
        );
    }

    /// Backplane 100 Mbit/s, 1 ms cycle at 1 µs per connection within 50 % (500 connections),
    /// 10 kB of queues; two ports of 1 Gbit/s.
    fn limited() -> Admission {
        let limits = SwitchLimits {
            backplane_bps: Some(100_000_000),
            cycle: Duration::from_millis(1),
            cpu_cost_per_connection: Duration::from_micros(1),
            cpu_budget_percent: 50,
            rt_buffer_bytes: 10_000,
        };
        Admission::with_limits(&[1_000_000_000, 1_000_000_000], 60, limits)
    }

    /// Everything booked, for comparisons.
    fn snapshot(adm: &Admission) -> (u64, u64, SwitchUsage) {
        let port = |p| adm.port(PortId(p)).map_or(0, |b| b.booked_bps);
        (port(0), port(1), *adm.usage())
    }

    #[test]
    fn each_switch_resource_refuses_when_exhausted_and_books_nothing() {
        let mut adm = limited();
        assert_eq!(adm.usage().max_connections_cpu, 500);
        // Backplane: 60 + 40 Mbit/s over two ports fill it; one more bit is refused although
        // both links have room.
        let a = adm.try_book(PortId(0), 60_000_000, 1_000).unwrap();
        let b = adm.try_book(PortId(1), 40_000_000, 1_000).unwrap();
        let before = snapshot(&adm);
        let err = adm.try_book(PortId(1), 1, 0).unwrap_err();
        assert_eq!(
            err,
            AdmissionError::Backplane {
                requested: 1,
                available: 0
            }
        );
        assert_eq!(err.reason(), FailReason::Backplane);
        assert_eq!(snapshot(&adm), before, "nothing booked after a refusal");
        adm.release(b).unwrap();
        // Buffer: 9 000 bytes left.
        let err = adm.try_book(PortId(1), 1_000, 9_001).unwrap_err();
        assert_eq!(
            err,
            AdmissionError::Buffer {
                requested: 9_001,
                available: 9_000
            }
        );
        assert_eq!(err.reason(), FailReason::Buffer);
        let c = adm.try_book(PortId(1), 1_000, 9_000).unwrap();
        assert_eq!(adm.usage().buffer_booked_bytes, 10_000);
        adm.release(c).unwrap();
        // CPU: 500 connections in all.
        let mut small = vec![a];
        for _ in 1..500 {
            small.push(adm.try_book(PortId(1), 1, 0).unwrap());
        }
        let before = snapshot(&adm);
        let err = adm.try_book(PortId(1), 1, 0).unwrap_err();
        assert_eq!(err, AdmissionError::Cpu { connections: 500 });
        assert_eq!(err.reason(), FailReason::Cpu);
        assert_eq!(snapshot(&adm), before);
        assert_eq!(adm.refusals(), 3);
        let by = adm.refusals_by_resource();
        assert_eq!(
            (by.backplane, by.buffer, by.cpu, by.bandwidth),
            (1, 1, 1, 0)
        );
        // Releasing frees all four resources.
        for booking in small {
            adm.release(booking).unwrap();
        }
        assert_eq!(
            snapshot(&adm),
            (
                0,
                0,
                SwitchUsage {
                    max_connections_cpu: 500,
                    ..SwitchUsage::default()
                }
            )
        );
        let d = adm.try_book(PortId(0), 100_000_000, 10_000).unwrap();
        assert_eq!(d.buffer_bytes, 10_000);
    }

    #[test]
    fn zero_cost_or_no_backplane_means_unlimited() {
        let limits = SwitchLimits {
            cpu_cost_per_connection: Duration::ZERO,
            ..SwitchLimits::new()
        };
        assert_eq!(limits.max_connections_cpu(), u64::MAX);
        assert_eq!(SwitchLimits::new().max_connections_cpu(), 5_000);
        let mut adm = Admission::new(&[u64::MAX / 2, u64::MAX / 2]);
        assert!(adm.try_book(PortId(0), u64::MAX / 4, 0).is_ok());
        assert!(adm.try_book(PortId(1), u64::MAX / 4, 0).is_ok());
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
                    match adm.try_book(PortId(port), rate, 0) {
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
