//! Real-time connections in the switch (EtheReal §2.2, §2.3, §3.3): per-link connection-id
//! allocation (`ids`), the connection table (`table`), per-hop admission (`admission`) and the
//! data path that swaps connection ids (this module, [`forward_data`]).
//!
//! These are sans-IO building blocks with no clock and no sockets. A driver (the switch core)
//! classifies a received frame as real-time when its destination MAC is a connection id under
//! the [`ProxyMacPlan`], calls [`forward_data`] to rewrite it in place, and queues it on the
//! returned port. For a SETUP it calls [`Admission::try_book`] on the output port, then
//! [`IdAllocator::allocate`] on that port's allocator, then [`ConnectionTable::insert`]; if a
//! later step fails it undoes the earlier ones ([`IdAllocator::release`],
//! [`Admission::release`]), and so on a SETUP_FAIL relayed from downstream.

use rtlan_wire::control::ProxyMacPlan;
use rtlan_wire::ethernet::Frame;

use crate::switch::PortId;

mod admission;
mod ids;
mod police;
mod reshape;
mod table;
#[cfg(test)]
mod tests;

pub use admission::{
    wire_rate, Admission, AdmissionError, Booking, PortBudget, RefusalCounts, SwitchLimits,
    SwitchUsage, DEFAULT_CPU_BUDGET_PERCENT, DEFAULT_CPU_COST_PER_CONNECTION,
    DEFAULT_RT_BUFFER_BYTES, DEFAULT_RT_CAP_PERCENT,
};
pub use ids::{IdAllocator, IdError};
pub use police::Policer;
pub use reshape::{HeldFrame, Reshaper};
pub use table::{ConnectionTable, RequestKey, RtEntry, TableError};

/// Why [`forward_data`] dropped a frame. The frame is left unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RtDrop {
    /// The frame is too short for an Ethernet header (with its VLAN tags).
    #[error("malformed frame: {0}")]
    Malformed(rtlan_wire::Error),
    /// The destination MAC is not a connection id under the plan (the caller misclassified it).
    #[error("destination is not a real-time connection address")]
    NotRealTime,
    /// No connection uses this id on this input link (never flooded).
    #[error("unknown connection id {id:#06x} on port {port:?}")]
    UnknownId {
        /// The input port.
        port: PortId,
        /// The connection id the frame carried.
        id: u16,
    },
    /// At the first switch, the proxy destination IP could not be rewritten (not IPv4, or a
    /// truncated IPv4/UDP/TCP header).
    #[error("cannot rewrite destination IP: {0}")]
    Rewrite(rtlan_wire::Error),
    /// At the first switch, the frame does not conform to its connection's T-SPEC
    /// ([`forward_policed`]); also counted for the connection.
    #[error("non-conforming frame on connection {id:#06x} from port {port:?}")]
    NonConforming {
        /// The input port.
        port: PortId,
        /// The connection id the frame carried.
        id: u16,
    },
}

/// Counters of the real-time data path and admission (all monotonic).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct RtStats {
    /// Frames forwarded on a connection (rewritten and offered to the connection's queue).
    pub forwarded: u64,
    /// Forwarded frames the connection's queue refused (queue of 2 × max burst full: the sender
    /// exceeds its reservation, or the frame is longer than its maximum packet). Also counted
    /// per connection.
    pub queue_drops: u64,
    /// Frames dropped because no connection uses their id on their input link.
    pub unknown_id_drops: u64,
    /// Frames dropped as malformed or not real-time.
    pub malformed_drops: u64,
    /// Frames dropped at the first switch because the IP rewrite failed.
    pub rewrite_drops: u64,
    /// Connection ids swapped for the next link's id.
    pub id_swaps: u64,
    /// Destination MACs set to the receiver's (last switch).
    pub mac_rewrites: u64,
    /// Proxy destination IPs rewritten to the receiver's (first switch).
    pub ip_rewrites: u64,
    /// SETUPs refused by admission (any resource); the driver copies [`Admission::refusals`] in.
    pub admission_refusals: u64,
    /// SETUPs refused because the end-to-end bound with this hop exceeded their required delay.
    pub delay_refusals: u64,
    /// Frames the first switch dropped as not conforming to their connection's T-SPEC (token
    /// bucket of its wire rate and burst). Also counted per connection.
    pub nonconforming_drops: u64,
    /// Frames the first switch held until they conformed (`reshape_allowance`) instead of
    /// dropping them: the sender's own stack had bunched them (docs/delay.md §3).
    pub reshaped: u64,
    /// Held frames whose connection was torn down (or replaced) before their release time.
    pub reshape_orphans: u64,
}

impl RtStats {
    /// Counts a frame [`forward_data`] dropped.
    fn count_drop(&mut self, drop: &RtDrop) {
        match drop {
            RtDrop::Malformed(_) | RtDrop::NotRealTime => self.malformed_drops += 1,
            RtDrop::UnknownId { .. } => self.unknown_id_drops += 1,
            RtDrop::Rewrite(_) => self.rewrite_drops += 1,
            RtDrop::NonConforming { .. } => self.nonconforming_drops += 1,
        }
    }
}

/// Forwards one real-time data frame that arrived on `in_port`, rewriting it in place, and
/// returns its output port; counts into `stats`. EtheReal §3.3: the destination MAC's last two
/// bytes are the connection id on the input link; the entry's output id replaces them (or the
/// receiver's MAC replaces the whole address at the last switch), and at the first switch the
/// proxy destination IP becomes the receiver's IP with IPv4 and UDP/TCP checksums updated
/// incrementally (RFC 1624). VLAN tags are skipped. Never allocates; on error the frame is
/// unchanged and must be dropped (never flooded).
pub fn forward_data(
    frame: &mut [u8],
    in_port: PortId,
    table: &ConnectionTable,
    plan: &ProxyMacPlan,
    stats: &mut RtStats,
) -> Result<PortId, RtDrop> {
    forward_entry(frame, in_port, table, plan, stats).map(|entry| entry.out_port)
}

/// [`forward_data`], returning the connection's whole entry (its output port and its flow on
/// that port's scheduler), so the caller queues the frame without another lookup.
pub fn forward_entry<'t>(
    frame: &mut [u8],
    in_port: PortId,
    table: &'t ConnectionTable,
    plan: &ProxyMacPlan,
    stats: &mut RtStats,
) -> Result<&'t RtEntry, RtDrop> {
    let result = forward_inner(frame, in_port, table, plan, stats);
    match &result {
        Ok(_) => stats.forwarded += 1,
        Err(drop) => stats.count_drop(drop),
    }
    result
}

/// [`forward_entry`] with first-hop policing (`police`, `docs/delay.md`): the one lookup of the
/// connection's entry also finds its policer, which only a first-hop entry has
/// ([`RtEntry::policer`]), so a later hop pays nothing for policing. A frame beyond the T-SPEC
/// is dropped unchanged before any rewrite, counted for the connection
/// ([`RtEntry::nonconforming`]) and in [`RtStats::nonconforming_drops`]; every other outcome is
/// [`forward_entry`]'s. [`forward_regulated`] with no allowance.
pub fn forward_policed<'t>(
    frame: &mut [u8],
    in_port: PortId,
    table: &'t mut ConnectionTable,
    plan: &ProxyMacPlan,
    (now, stats): (crate::time::Instant, &mut RtStats),
) -> Result<&'t RtEntry, RtDrop> {
    forward_regulated(
        frame,
        in_port,
        table,
        plan,
        (now, std::time::Duration::ZERO, stats),
    )
    .map(|r| r.entry)
}

/// A frame [`forward_regulated`] let through, rewritten.
#[derive(Debug, Clone, Copy)]
pub struct Regulated<'t> {
    /// Its connection.
    pub entry: &'t RtEntry,
    /// The connection id it arrived with (the entry's key with the input port).
    pub in_id: u16,
    /// When it may join its queue: the arrival time, or later when the first switch's regulator
    /// holds it ([`Policer::regulate`]).
    pub release: crate::time::Instant,
}

/// [`forward_policed`] with reshaping: a first-hop frame that does not conform yet but will
/// within `allowance` is rewritten and handed back with the time it may be queued
/// ([`Regulated::release`]); the caller holds it until then. Only one that would wait longer is
/// dropped as non-conforming.
pub fn forward_regulated<'t>(
    frame: &mut [u8],
    in_port: PortId,
    table: &'t mut ConnectionTable,
    plan: &ProxyMacPlan,
    (now, allowance, stats): (crate::time::Instant, std::time::Duration, &mut RtStats),
) -> Result<Regulated<'t>, RtDrop> {
    let result = connection_id(frame, plan).and_then(|id| {
        let entry = table
            .lookup_mut(in_port, id)
            .ok_or(RtDrop::UnknownId { port: in_port, id })?;
        let mut release = now;
        if let Some(policer) = &mut entry.policer {
            let bits = rtlan_wire::cost::wire_bits(frame.len());
            match policer.regulate(now, bits, allowance) {
                Some(at) => release = at,
                None => {
                    entry.nonconforming += 1;
                    return Err(RtDrop::NonConforming { port: in_port, id });
                }
            }
        }
        let entry = &*entry;
        rewrite(frame, entry, plan, stats).map(|()| Regulated {
            entry,
            in_id: id,
            release,
        })
    });
    match &result {
        Ok(_) => stats.forwarded += 1,
        Err(drop) => stats.count_drop(drop),
    }
    result
}

/// The connection id a real-time frame carries in its destination MAC.
fn connection_id(frame: &[u8], plan: &ProxyMacPlan) -> Result<u16, RtDrop> {
    let dst = Frame::new_checked(frame)
        .map_err(RtDrop::Malformed)?
        .dst_addr();
    plan.connection_id(&dst).ok_or(RtDrop::NotRealTime)
}

fn forward_inner<'t>(
    frame: &mut [u8],
    in_port: PortId,
    table: &'t ConnectionTable,
    plan: &ProxyMacPlan,
    stats: &mut RtStats,
) -> Result<&'t RtEntry, RtDrop> {
    let id = connection_id(frame, plan)?;
    let entry = table
        .lookup(in_port, id)
        .ok_or(RtDrop::UnknownId { port: in_port, id })?;
    rewrite(frame, entry, plan, stats)?;
    Ok(entry)
}

/// Rewrites `frame` for `entry` (EtheReal §3.3: IP at the first switch, then the id or the
/// receiver's MAC); on error the frame is unchanged.
fn rewrite(
    frame: &mut [u8],
    entry: &RtEntry,
    plan: &ProxyMacPlan,
    stats: &mut RtStats,
) -> Result<(), RtDrop> {
    // The IP rewrite first: it leaves the buffer unchanged when it fails.
    if let Some(receiver_ip) = entry.receiver_ip {
        rtlan_wire::rewrite::frame_ipv4_dst(frame, receiver_ip).map_err(RtDrop::Rewrite)?;
        stats.ip_rewrites += 1;
    }
    let new_dst = match entry.receiver_mac {
        Some(mac) => {
            stats.mac_rewrites += 1;
            mac
        }
        None => {
            stats.id_swaps += 1;
            plan.mac_for(entry.out_id)
        }
    };
    // `connection_id` parsed the same buffer, so the header is present.
    Frame::new_unchecked(&mut *frame).set_dst_addr(new_dst);
    Ok(())
}
