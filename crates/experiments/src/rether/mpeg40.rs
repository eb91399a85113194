//! RETHER §5.2: "this configuration can support a maximum of 40 MPEG-I streams" — 100 Mbit/s,
//! PCs with the NIC on a local bus, 20 stations. Here 44 synthetic MPEG-I streams
//! ([`rtlan_sim::segment::MpegConfig`]: GOP IBBPBBPBBPBB, 1.5 Mbit/s on average, each at its
//! own GOP position) ask for a session of five full frames (7,500 bytes) per TRT — the
//! smallest whole-frame reservation above the 6,250-byte mean, so that a picture's backlog
//! drains — and eq. (3) decides how many are admitted. Each admitted stream's deadline is the
//! delay bound its reservation implies for its GOP: with five frames served per TRT and visits
//! one TRT apart, a picture waits at most one TRT for the first visit plus the visits the
//! backlog of its busy period needs, plus the visit itself. The admitted streams then run under
//! four non-real-time loads — none, light (Poisson at every station), two stations flooding, and
//! every station flooding — and their deadline misses are counted; the same streams on plain
//! CSMA/CD under the same loads are counted against the same deadlines.

use std::time::Duration;

use rtlan_core::rether::Station;
use rtlan_sim::segment::{FlowSpec, MpegConfig, SegmentConfig, Source, MTU};
use serde_json::{json, Value};

use super::{access_ms, finish, r3, simulate, Hardware, Params};

/// Stations.
const STATIONS: usize = 20;
/// Streams asking for a session.
const REQUESTED: usize = 44;
/// Reservation: whole frames per TRT.
const FRAMES_PER_TRT: u32 = 5;

const HW: Hardware = Hardware {
    rate_bps: 100_000_000,
    local_bus: true,
};

/// The delay bound of a stream of `sizes` (one GOP, one picture per TRT) served `per_trt`
/// frames per visit, visits one TRT apart, each visit taking at most `tht` (module docs).
pub fn gop_bound(sizes: &[u32; 12], per_trt: u32, trt: Duration, tht: Duration) -> Duration {
    let frames = |b: u32| b.div_ceil(MTU as u32);
    let mut worst = 0i64;
    for start in 0..12 {
        let mut cum = 0u32;
        for k in 0..36 {
            cum += frames(sizes[(start + k) % 12]);
            let visit = i64::from(cum.div_ceil(per_trt)) - 1;
            worst = worst.max(visit - k as i64);
        }
    }
    trt * (1 + worst as u32) + tht
}

fn streams(c: &mut SegmentConfig, count: usize, reserve: bool, deadline: Duration) {
    for k in 0..count {
        let from = k % STATIONS;
        c.flows.push(FlowSpec {
            from,
            to: (from + 7) % STATIONS,
            source: Source::Mpeg(MpegConfig::default()),
            reserve: reserve.then_some(FRAMES_PER_TRT * MTU as u32),
            deadline: Some(deadline),
            start: Duration::from_millis(20),
        });
    }
}

fn load(c: &mut SegmentConfig, name: &str) {
    let start = Duration::from_millis(300);
    let flood = |from: usize| FlowSpec {
        from,
        to: (from + 1) % STATIONS,
        source: Source::Flood {
            bytes: 1500,
            backlog: 8,
        },
        reserve: None,
        deadline: None,
        start,
    };
    match name {
        "light" => {
            for s in 0..STATIONS {
                c.flows.push(FlowSpec {
                    from: s,
                    to: (s + 1) % STATIONS,
                    source: Source::Poisson {
                        mean_interval: Duration::from_millis(20),
                        bytes: 1000,
                    },
                    reserve: None,
                    deadline: None,
                    start,
                });
            }
        }
        "two floods" => {
            c.flows.push(flood(18));
            c.flows.push(flood(19));
        }
        "every station floods" => {
            for s in 0..STATIONS {
                c.flows.push(flood(s));
            }
        }
        _ => {}
    }
}

/// Runs the experiment.
pub fn run(p: &Params) -> anyhow::Result<Value> {
    let base = HW.segment(STATIONS);
    let probe = Station::new(base.station_config(0));
    let tht = probe.tht(FRAMES_PER_TRT * MTU as u32, 1514);
    let mpeg = MpegConfig::default();
    let deadline = gop_bound(&mpeg.sizes(), FRAMES_PER_TRT, base.trt, tht);
    let mut rows = Vec::new();
    for name in ["none", "light", "two floods", "every station floods"] {
        let mut c = HW.segment(STATIONS);
        c.seed = p.seed;
        c.window = p.window;
        streams(&mut c, REQUESTED, true, deadline);
        load(&mut c, name);
        let c = finish(c);
        let r = simulate(&c)?;
        let admitted: Vec<usize> = (0..REQUESTED)
            .filter(|&i| r.flows[i].admitted == Some(true))
            .collect();
        let units: u64 = admitted.iter().map(|&i| r.flows[i].units).sum();
        let delivered: u64 = admitted.iter().map(|&i| r.flows[i].delivered).sum();
        let misses: u64 = admitted.iter().map(|&i| r.flows[i].deadline_misses).sum();
        let worst = admitted
            .iter()
            .map(|&i| r.flows[i].delay.max_us)
            .fold(0.0f64, f64::max);
        let nrt_bytes: u64 = r.flows[REQUESTED..].iter().map(|f| f.bytes_delivered).sum();
        let all: Vec<usize> = (0..STATIONS).collect();
        // The same streams (as many as were admitted) on plain CSMA/CD under the same load.
        let mut plain = HW.segment(STATIONS);
        plain.seed = p.seed;
        plain.window = p.window;
        streams(&mut plain, admitted.len(), false, deadline);
        load(&mut plain, name);
        let q = simulate(&finish(plain))?;
        let n = admitted.len();
        let q_units: u64 = q.flows[..n].iter().map(|f| f.units).sum();
        let q_delivered: u64 = q.flows[..n].iter().map(|f| f.delivered).sum();
        let q_misses: u64 = q.flows[..n].iter().map(|f| f.deadline_misses).sum();
        let q_worst = q.flows[..n]
            .iter()
            .map(|f| f.delay.max_us)
            .fold(0.0f64, f64::max);
        let q_nrt: u64 = q.flows[n..].iter().map(|f| f.bytes_delivered).sum();
        let late_streams = q.flows[..n]
            .iter()
            .filter(|f| f.deadline_misses > 0)
            .count();
        rows.push(json!({
            "nrt_load": name,
            "rether": {
                "requested": REQUESTED,
                "admitted": n,
                "units": units,
                "delivered": delivered,
                "deadline_misses": misses,
                "max_delay_ms": r3(worst / 1000.0),
                "nrt_mbit_s": r3(nrt_bytes as f64 * 8.0 / p.window.as_secs_f64() / 1e6),
                "access_ms": access_ms(&r, &all).map(r3),
                "collisions": r.bus.collisions,
                "deaths": r.deaths,
            },
            "csma": {
                "streams": n,
                "units": q_units,
                "delivered": q_delivered,
                "deadline_misses": q_misses,
                "miss_percent": r3(q_misses as f64 / q_units.max(1) as f64 * 100.0),
                "streams_with_misses": late_streams,
                "max_delay_ms": r3(q_worst / 1000.0),
                "nrt_mbit_s": r3(q_nrt as f64 * 8.0 / p.window.as_secs_f64() / 1e6),
                "collisions": q.bus.collisions,
            },
        }));
    }
    Ok(json!({
        "figure": "RETHER §5.2: MPEG-I streams on 100 Mbit/s, 20 stations, deadline misses under NRT load",
        "hardware": HW.label(),
        "stations": STATIONS,
        "mpeg": {
            "gop": "IBBPBBPBBPBB",
            "sizes_bytes": mpeg.sizes(),
            "mean_bps": mpeg.mean_bps,
            "fps": mpeg.fps,
        },
        "reservation_bytes_per_trt": FRAMES_PER_TRT * MTU as u32,
        "tht_us": r3(tht.as_nanos() as f64 / 1000.0),
        "deadline_ms": r3(deadline.as_nanos() as f64 / 1e6),
        "paper": {"max_streams": 40, "claim": "admitted sessions keep their guarantee"},
        "loads": rows,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gop_bound_counts_the_i_pictures_backlog() {
        let sizes = MpegConfig::default().sizes();
        let trt = Duration::from_millis(30);
        // I: 12 frames need three visits of five: the I picture waits two TRT beyond the first.
        assert_eq!(
            gop_bound(&sizes, 5, trt, Duration::ZERO),
            Duration::from_millis(90)
        );
        // A constant stream that fits one visit: one TRT plus the visit.
        assert_eq!(
            gop_bound(&[1500; 12], 1, trt, Duration::from_millis(1)),
            Duration::from_millis(31)
        );
    }
}
