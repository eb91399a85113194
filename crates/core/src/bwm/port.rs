//! Unit helpers for reporting bounds (seed 004 §2.2): bounds are exact rationals in the ledger
//! and only rounded up (ns → µs) when they are shown.

/// ns → µs, rounded up.
pub(crate) fn ceil_us(ns: u64) -> u64 {
    ns.div_ceil(1000)
}
