//! Bounds of one switch output port with the Löser/Härtig closed forms (seed 004 §2.2): backlog
//! bound eq. (4) and delay bound eq. (6), falling back to the generic vertical/horizontal
//! deviation when `t_mux > g_max` (where (3)/(4) do not apply). Results are rounded up (bytes,
//! ns) so that sums over a path stay in integers and remain bounds.

use rtlan_calculus::loser::{self, LoserError, Port, Tspec};
use rtlan_calculus::{ArithError, Q};

/// Backlog bound (bytes) and delay bound (ns) of a port carrying `flows`; zero for no flows.
pub(crate) fn bounds(port: &Port, flows: &[Tspec]) -> Result<(u64, u64), LoserError> {
    if flows.is_empty() {
        return Ok((0, 0));
    }
    let g = loser::g_max(port, flows)?;
    let (backlog, delay) = if port.t_mux <= g {
        (
            loser::backlog_bound(port, flows)?,
            loser::delay_bound(port, flows)?,
        )
    } else {
        (
            loser::backlog_bound_generic(port, flows)?,
            loser::delay_bound_generic(port, flows)?,
        )
    };
    Ok((to_u64(backlog.ceil_bytes()?)?, ceil_nanos(delay)?))
}

/// A time in seconds as whole ns, rounded up.
pub(crate) fn ceil_nanos(t: Q) -> Result<u64, ArithError> {
    to_u64(t.mul(Q::int(1_000_000_000))?.ceil())
}

fn to_u64(v: i128) -> Result<u64, ArithError> {
    u64::try_from(v.max(0)).map_err(|_| ArithError::Overflow)
}

/// ns → µs, rounded up.
pub(crate) fn ceil_us(ns: u64) -> u64 {
    ns.div_ceil(1000)
}
