//! The measurement side of the segment: data units cut into frames that carry a small header
//! (flow, unit, fragment, fragments, generation instant), their reassembly at the destination's
//! attachment, and the NRT token visits seen on the medium (RETHER §4.1's access delay).

use rtlan_core::rether::Station;
use rtlan_core::time::Instant;
use rtlan_wire::rether::{parse_frame, Dest, Message, Phase};

use super::{is_flood, station_id, station_mac, Attached, FlowSpec, Live, SegmentConfig, MTU};

/// Bytes of the measurement header at the start of every data frame's payload.
const MARK_LEN: usize = 18;
/// First byte of the measurement header.
const MARK: u8 = 0xA5;
/// EtherType of data frames (IPv4: what the stations carry; the engine does not look inside).
const DATA_ETHERTYPE: u16 = 0x0800;

/// A data frame of flow `index`: `payload` bytes (at least the measurement header), fragment
/// `frag` of `frags` of unit `unit`, generated at `at`.
pub(super) fn data_frame(
    f: &FlowSpec,
    index: usize,
    unit: u32,
    frag: u16,
    frags: u16,
    payload: usize,
    at: Instant,
) -> Vec<u8> {
    let payload = payload.clamp(MARK_LEN, MTU).max(46);
    let mut frame = vec![0u8; 14 + payload];
    frame[0..6].copy_from_slice(&station_mac(f.to).0);
    frame[6..12].copy_from_slice(&station_mac(f.from).0);
    frame[12..14].copy_from_slice(&DATA_ETHERTYPE.to_be_bytes());
    let m = &mut frame[14..14 + MARK_LEN];
    m[0] = MARK;
    m[1..3].copy_from_slice(&(index as u16).to_be_bytes());
    m[3..7].copy_from_slice(&unit.to_be_bytes());
    m[7..9].copy_from_slice(&frag.to_be_bytes());
    m[9..11].copy_from_slice(&frags.to_be_bytes());
    m[11..18].copy_from_slice(&at.as_nanos().to_be_bytes()[1..8]);
    frame
}

/// Cuts a unit of `bytes` generated at `at` into frames and queues them at the station.
#[allow(clippy::too_many_arguments)]
pub(super) fn send_unit(
    f: &FlowSpec,
    index: usize,
    live: &mut Live,
    station: &mut Station,
    at: Instant,
    bytes: u32,
    window_start: Instant,
    window_end: Instant,
) {
    let bytes = (bytes as usize).max(1);
    let frags = bytes.div_ceil(MTU).min(usize::from(u16::MAX)) as u16;
    let unit = live.next_unit;
    live.next_unit = live.next_unit.wrapping_add(1);
    let in_window = at >= window_start && at < window_end;
    if in_window {
        live.outcome.units += 1;
    }
    live.pending
        .insert(unit, (at, frags, bytes as u32, in_window));
    let mut left = bytes;
    for frag in 0..frags {
        let len = left.min(MTU);
        left -= len;
        let frame = data_frame(f, index, unit, frag, frags, len, at);
        let ok = if live.outcome.admitted == Some(true) {
            station.send_rt(live.session, &frame)
        } else {
            station.send_nrt(&frame)
        };
        if !ok {
            live.outcome.dropped_frames += 1;
        }
    }
}

/// A data frame arrived at its destination at `now`: completes its unit.
pub(super) fn receive_data(
    frame: &[u8],
    now: Instant,
    flows: &mut [Live],
    config: &SegmentConfig,
    window_start: Instant,
    window_end: Instant,
) {
    if frame.len() < 14 + MARK_LEN
        || frame[12..14] != DATA_ETHERTYPE.to_be_bytes()
        || frame[14] != MARK
    {
        return;
    }
    let m = &frame[14..14 + MARK_LEN];
    let index = usize::from(u16::from_be_bytes([m[1], m[2]]));
    let unit = u32::from_be_bytes([m[3], m[4], m[5], m[6]]);
    let (Some(live), Some(spec)) = (flows.get_mut(index), config.flows.get(index)) else {
        return;
    };
    if is_flood(&spec.source) {
        if now >= window_start && now < window_end {
            live.outcome.bytes_delivered += (frame.len() - 14) as u64;
        }
        return;
    }
    let Some(p) = live.pending.get_mut(&unit) else {
        return;
    };
    p.1 = p.1.saturating_sub(1);
    if p.1 > 0 {
        return;
    }
    let Some((at, _, bytes, in_window)) = live.pending.remove(&unit) else {
        return;
    };
    if !in_window {
        return;
    }
    let delay = now.saturating_duration_since(at);
    live.outcome.delivered += 1;
    live.outcome.bytes_delivered += u64::from(bytes);
    live.delays.push(delay.as_nanos() as u64);
    if spec.deadline.is_some_and(|d| delay > d) {
        live.outcome.deadline_misses += 1;
    }
}

/// A TOKEN of the NRT phase seen at its destination's attachment is an NRT visit.
pub(super) fn observe_token(
    frame: &[u8],
    port: usize,
    now: Instant,
    a: &mut Attached,
    window_start: Instant,
    window_end: Instant,
) {
    if now < window_start || now >= window_end || frame[0] & 1 == 0 {
        return;
    }
    let Ok((repr, _)) = parse_frame(frame) else {
        return;
    };
    if let (Message::Token(t), Dest::Node(id)) = (&repr.message, repr.dest) {
        if t.phase == Phase::NonRealTime && id == station_id(port) {
            a.visits.push(now);
        }
    }
}
