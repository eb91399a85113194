//! Tests of the scheduler service curves and the per-hop arithmetic (`servers`).

use proptest::prelude::*;

use crate::curve::{self, ArrivalCurve, RateLatency};
use crate::rational::Q;
use crate::servers::*;

fn port(lateness_ns: u64) -> PortParams {
    PortParams {
        line_rate_bps: 1_000_000,
        max_frame_bits: 1000,
        control_burst_bits: 1000,
        control_rate_bps: 0,
        lateness_ns,
        link_delay_ns: 5000,
    }
}

fn flow() -> HopTspec {
    HopTspec {
        rate_bps: 100_000,
        burst_bits: 3000,
        max_frame_bits: 1000,
    }
}

fn secs_ns(ns: u64) -> Q {
    Q::new(i128::from(ns), 1_000_000_000).unwrap()
}

#[test]
fn cyclic_latency_by_hand() {
    // T = 1 s, U = 20 %, C = 1 Mbit/s: W_max = 0.2·1e6·1 = 200 000 bits;
    // Δ = (200 000 + 1000 + 1000) / 1e6 = 0.202 s; θ = T + Δ + L_i/r = 1 + 0.202 + 0.01 s,
    // + λ (1 µs, once) + link (5 µs).
    let s = Server::Cyclic(CyclicParams {
        port: port(1000),
        cycle_ns: 1_000_000_000,
        rt_share_percent: 20,
    });
    assert_eq!(s.latency_ns(&flow()), Ok(1_212_006_000));
    let beta = s.service_curve(&flow()).unwrap();
    assert_eq!(beta.rate, Q::int(100_000));
    assert_eq!(beta.latency, secs_ns(1_212_006_000));
    if let Server::Cyclic(p) = s {
        assert_eq!(cyclic_drain_ns(&p), Ok(202_000_000));
        assert_eq!(cyclic_work_budget_bits(&p), Ok(200_000));
    }
    // w = r·T + L = 100 000 + 1000.
    assert_eq!(cyclic_cycle_work_bits(&flow(), 1_000_000_000), Ok(101_000));
    // Rounded up: 1 bit/s over 1.5 s is 2 bits (+ L).
    assert_eq!(cyclic_cycle_work_bits(&flow(), 1_500_000_000), Ok(151_000));
    let one = HopTspec {
        rate_bps: 1,
        ..flow()
    };
    assert_eq!(cyclic_cycle_work_bits(&one, 1_500_000_000), Ok(1002));
    assert_eq!(
        cyclic_cycle_work_bits(&flow(), 0),
        Err(ServerError::ZeroCycle)
    );
}

#[test]
fn wheel_latency_by_hand() {
    // d_i = L_i/R + (L_max + σ_c)/(C − ρ_c) = 10 ms + 2 ms; + g = 1 µs.
    let p = WheelParams {
        port: port(1000),
        granularity_ns: 1000,
    };
    assert_eq!(wheel_deadline_ns(&p, &flow()), Ok(12_001_000));
    // θ = d_i + g + λ + link (λ once per hop).
    assert_eq!(Server::Wheel(p).latency_ns(&flow()), Ok(12_007_000));
}

#[test]
fn wfq_latency_by_hand() {
    // C = 1 Mbit/s, no control rate, σ_c = 1000 bits, L_max = 1000 bits; Guaranteed flows book
    // R_GS = 500 kbit/s with Σ L_j = 2000 bits on 1 µs slots: C_w = 500 kbit/s,
    // T_w + L_max/C_w = (1000 + 2000 + 0.5e6 × 1e-6 + 1000) / 5e5 s = 8.001 ms;
    // L_i/r = 1000 / 1e5 = 10 ms.
    let p = WfqParams {
        port: port(1000),
        granularity_ns: 1000,
        gs_rate_bps: 500_000,
        gs_frames_bits: 2000,
    };
    assert_eq!(wfq_fixed_delay_ns(&p), Ok(8_001_000));
    assert_eq!(wfq_latency_ns(&p, &flow()), Ok(18_001_000));
    // θ = that + λ (1 µs) + link (5 µs); the curve's rate is the flow's r.
    assert_eq!(Server::Wfq(p).latency_ns(&flow()), Ok(18_007_000));
    let beta = Server::Wfq(p).service_curve(&flow()).unwrap();
    assert_eq!(
        beta,
        RateLatency::new(Q::int(100_000), secs_ns(18_007_000)).unwrap()
    );
    // Without Guaranteed flows it is WF²Q+'s own L_i/r + L_max/C plus the control burst.
    let bare = WfqParams {
        gs_rate_bps: 0,
        gs_frames_bits: 0,
        ..p
    };
    assert_eq!(wfq_latency_ns(&bare, &flow()), Ok(10_000_000 + 2_000_000));
    // A flow frame above the port's L_max counts as L_max: 2000-bit frames at 1e5 bit/s:
    // 20 ms + (1000 + 2000 + 0.5 + 2000)/5e5 s = 20 ms + 10.001 ms.
    let big = HopTspec {
        max_frame_bits: 2000,
        ..flow()
    };
    assert_eq!(wfq_latency_ns(&p, &big), Ok(30_001_000));
    // The Guaranteed share may not take all that control leaves; the flow may not exceed C_w.
    assert_eq!(
        wfq_latency_ns(
            &WfqParams {
                gs_rate_bps: 1_000_000,
                ..p
            },
            &flow()
        ),
        Err(ServerError::RateAboveLimit {
            rate_bps: 1_000_000,
            limit_bps: 1_000_000
        })
    );
    let fast = HopTspec {
        rate_bps: 600_000,
        ..flow()
    };
    assert_eq!(
        wfq_latency_ns(&p, &fast),
        Err(ServerError::RateAboveLimit {
            rate_bps: 600_000,
            limit_bps: 500_000
        })
    );
}

#[test]
fn latencies_round_up() {
    // L_i/r = 1000/3 s: not a whole number of ns.
    let p = WheelParams {
        port: port(0),
        granularity_ns: 0,
    };
    let f = HopTspec {
        rate_bps: 3,
        burst_bits: 1000,
        max_frame_bits: 1000,
    };
    let exact = Server::Wheel(p).latency(&f).unwrap();
    let ns = Server::Wheel(p).latency_ns(&f).unwrap();
    assert!(secs_ns(ns) >= exact);
    assert!(secs_ns(ns - 1) < exact);
}

#[test]
fn refusals_are_errors() {
    let c = CyclicParams {
        port: port(0),
        cycle_ns: 1_000_000_000,
        rt_share_percent: 20,
    };
    let zero = HopTspec {
        rate_bps: 0,
        ..flow()
    };
    assert_eq!(
        Server::Cyclic(c).latency_ns(&zero),
        Err(ServerError::ZeroRate)
    );
    // Cycle work r·T + L = 199 001 + 1000 above the budget U·C·T = 200 000 bits.
    let fast = HopTspec {
        rate_bps: 199_001,
        ..flow()
    };
    assert_eq!(
        Server::Cyclic(c).latency_ns(&fast),
        Err(ServerError::WorkAboveBudget {
            work_bits: 200_001,
            budget_bits: 200_000
        })
    );
    // A quota r·T below the largest frame is allowed: the flow gathers credit over several
    // cycles and L_i/r covers the wait (T + Δ + 1000/999 s + link).
    let slow = HopTspec {
        rate_bps: 999,
        ..flow()
    };
    assert_eq!(
        Server::Cyclic(c).latency_ns(&slow),
        Ok(1_000_000_000 + 202_000_000 + 1_001_001_002 + 5000)
    );
    // U = 100 %: a whole cycle of work plus a frame and the control bucket cannot drain within
    // the cycle.
    let crowded = CyclicParams {
        rt_share_percent: 100,
        ..c
    };
    assert!(matches!(
        Server::Cyclic(crowded).latency_ns(&flow()),
        Err(ServerError::CycleTooShort { .. })
    ));
    let bad_share = CyclicParams {
        rt_share_percent: 101,
        ..c
    };
    assert_eq!(
        Server::Cyclic(bad_share).latency_ns(&flow()),
        Err(ServerError::BadShare(101))
    );
    let mut no_line = port(0);
    no_line.line_rate_bps = 0;
    let w = WheelParams {
        port: no_line,
        granularity_ns: 0,
    };
    assert_eq!(
        Server::Wheel(w).latency_ns(&flow()),
        Err(ServerError::ZeroLineRate)
    );
    assert_eq!(end_to_end_ns(&zero, 0), Err(ServerError::ZeroRate));
    assert!(burst_at_hop(
        &HopTspec {
            rate_bps: u64::MAX,
            ..flow()
        },
        u64::MAX
    )
    .is_err());
}

#[test]
fn setup_conversion() {
    // 30 Mbit/s of 1042-byte frames (1000-byte payload + Ethernet, IP, UDP headers), two-frame
    // burst: each frame costs 1066 wire bytes.
    let t = tspec_from_setup(30_000_000, 2084, 1042).unwrap();
    assert_eq!(t.rate_bps, 30_690_979, "⌈30e6 · 1066 / 1042⌉");
    assert_eq!(t.burst_bits, 2132 * 8);
    assert_eq!(t.max_frame_bits, 8528);
    // Small frames are padded: 42-byte frames cost 84 wire bytes.
    let t = tspec_from_setup(42 * 8 * 1000, 84, 42).unwrap();
    assert_eq!(t.rate_bps, 84 * 8 * 1000);
    assert_eq!(t.burst_bits, 168 * 8);
    assert_eq!(
        tspec_from_setup(1, 10, 20),
        Err(ServerError::BurstBelowPacket {
            burst: 10,
            packet: 20
        })
    );
    assert_eq!(tspec_from_setup(0, 10, 10), Err(ServerError::ZeroRate));
    assert_eq!(tspec_from_setup(1, 10, 0), Err(ServerError::ZeroFrame));
    assert!(tspec_from_setup(u64::MAX, u32::MAX, 1).is_err());
}

#[test]
fn queue_bytes_rounds_up() {
    assert_eq!(queue_bytes(0), 0);
    assert_eq!(queue_bytes(17), 3);
    assert_eq!(queue_bytes(16), 2);
    assert!(queue_bytes(u64::MAX) > 0);
}

/// The target flow: 30 Mbit/s of 1042-byte frames, two-frame burst, 3 hops at
/// 100 Mbit/s, λ = 200 µs. Ports carry full-size (1514-byte) frames and a control bucket of one
/// full frame at 1 Mbit/s.
fn target_port() -> PortParams {
    PortParams {
        line_rate_bps: 100_000_000,
        max_frame_bits: rtlan_wire::cost::wire_bits(1514),
        control_burst_bits: rtlan_wire::cost::wire_bits(1514),
        control_rate_bps: 1_000_000,
        lateness_ns: 200_000,
        link_delay_ns: 0,
    }
}

/// θ per hop and the 3-hop bound for 30 Mbit/s of `frame`-byte frames, two-frame burst.
fn three_hops(server: Server, frame: u16) -> (u64, u64) {
    let t = tspec_from_setup(30_000_000, 2 * u32::from(frame), frame).unwrap();
    let theta = server.latency_ns(&t).unwrap();
    (theta, end_to_end_ns(&t, 3 * theta).unwrap())
}

#[test]
fn target_example_wheel() {
    let server = Server::Wheel(WheelParams {
        port: target_port(),
        granularity_ns: 10_000,
    });
    // 1000-byte frames: r = 30 720 000, L_i = 8192 bits. θ = L_i/R (266 666.7 ns)
    // + (12304 + 12304)/99e6 s (248 565.7 ns) + g 10 µs + λ 200 µs = 725 232.3 ns;
    // b/r = 16384/30.72e6 s = 533 333.3 ns.
    let (theta, e2e) = three_hops(server, 1000);
    println!("wheel, 1000-byte frames: θ = {theta} ns per hop, 3-hop bound {e2e} ns");
    assert_eq!(theta, 725_233);
    assert_eq!(e2e, 533_334 + 3 * 725_233);
    // 1042-byte frames (1000-byte payload): r = 30 690 979, L_i = 8528 bits. θ = 277 866.7
    // + 248 565.7 + 10 000 + 200 000 = 736 432.3 ns; b/r = 17056/30690979 s = 555 733.x ns.
    let (theta, e2e) = three_hops(server, 1042);
    println!("wheel, 1042-byte frames: θ = {theta} ns per hop, 3-hop bound {e2e} ns");
    assert_eq!(theta, 736_433);
    assert_eq!(e2e, 555_734 + 3 * 736_433);
    // Both within the 3 ms target (2.71 and 2.77 ms); λ (once per hop) is 0.6 ms of it.
    assert!(e2e < 3_000_000);
    let ideal = Server::Wheel(WheelParams {
        port: PortParams {
            lateness_ns: 0,
            ..target_port()
        },
        granularity_ns: 10_000,
    });
    assert_eq!(three_hops(ideal, 1042).1, e2e - 600_000);
}

#[test]
fn target_example_cyclic() {
    // T = 10 ms at EtheReal's 60 % cap: W_max = 600 000 bits,
    // Δ = (600 000 + 12304 + 12304)/99e6 s = 6 309 171.7 ns.
    let params = CyclicParams {
        port: target_port(),
        cycle_ns: 10_000_000,
        rt_share_percent: 60,
    };
    assert_eq!(cyclic_drain_ns(&params), Ok(6_309_172));
    assert_eq!(cyclic_work_budget_bits(&params), Ok(600_000));
    let server = Server::Cyclic(params);
    // 1000-byte frames: θ = T + Δ + L_i/r + λ = 10 000 000 + 6 309 171.7 + 266 666.7 + 200 000.
    let (theta, e2e) = three_hops(server, 1000);
    println!("cyclic, 1000-byte frames: θ = {theta} ns per hop, 3-hop bound {e2e} ns");
    assert_eq!(theta, 16_775_839);
    // 1042-byte frames: θ = 10 000 000 + 6 309 171.7 + 277 866.7 + 200 000 = 16 787 038.4 ns.
    let (theta, e2e) = three_hops(server, 1042);
    println!("cyclic, 1042-byte frames: θ = {theta} ns per hop, 3-hop bound {e2e} ns");
    assert_eq!(theta, 16_787_039);
    assert_eq!(e2e, 555_734 + 3 * 16_787_039);
    // Its cycle work ⌈r·T⌉ + L_i = 306 910 + 8528 bits: one such flow per port fits the budget
    // (two would take 629 876 > 600 000).
    let t = tspec_from_setup(30_000_000, 2084, 1042).unwrap();
    assert_eq!(cyclic_cycle_work_bits(&t, 10_000_000), Ok(315_438));
}

/// At EtheReal's defaults (U = 60 %, T = 10 ms) the cyclic scheduler can be analysed on 100 Mbit/s,
/// 1 Gbit/s and 10 Gbit/s ports with 1518-byte frames (L_max = 12 336 wire bits), control at 1 %
/// of the line, the switch's default lateness budget λ = 500 µs, and a control bucket of a few
/// hundred bytes (512 bytes) or of the current default two full frames (3076 bytes):
///
/// | C | σ_c | W_max (bits) | Δ (ns) | Δ + λ |
/// |---|---|---|---|---|
/// | 100 Mbit/s | 512 B | 600 000 | 6 226 586 | 6.73 ms |
/// | 100 Mbit/s | 3076 B | 600 000 | 6 433 778 | 6.93 ms |
/// | 1 Gbit/s | 512 B | 6 000 000 | 6 077 205 | 6.58 ms |
/// | 1 Gbit/s | 3076 B | 6 000 000 | 6 097 924 | 6.60 ms |
/// | 10 Gbit/s | 512 B | 60 000 000 | 6 062 266 | 6.56 ms |
/// | 10 Gbit/s | 3076 B | 60 000 000 | 6 064 338 | 6.56 ms |
#[test]
fn cyclic_defaults_are_analysable_at_every_line_rate() {
    let cases = [
        (100_000_000u64, 512u64, 6_226_586u64),
        (100_000_000, 3076, 6_433_778),
        (1_000_000_000, 512, 6_077_205),
        (1_000_000_000, 3076, 6_097_924),
        (10_000_000_000, 512, 6_062_266),
        (10_000_000_000, 3076, 6_064_338),
    ];
    for (c, sigma_bytes, drain) in cases {
        let params = CyclicParams {
            port: PortParams {
                line_rate_bps: c,
                max_frame_bits: rtlan_wire::cost::wire_bits(1518),
                control_burst_bits: sigma_bytes * 8,
                control_rate_bps: c / 100,
                lateness_ns: 500_000,
                link_delay_ns: 0,
            },
            cycle_ns: 10_000_000,
            rt_share_percent: 60,
        };
        assert_eq!(
            cyclic_drain_ns(&params),
            Ok(drain),
            "C = {c}, σ_c = {sigma_bytes} B"
        );
        assert_eq!(cyclic_work_budget_bits(&params), Ok(c / 100 * 6 / 10));
        assert!(drain + 500_000 <= 10_000_000);
        // A flow of 1518-byte frames taking nearly all of the budget is still bounded.
        let frame = rtlan_wire::cost::wire_bits(1518);
        let rate = (c / 100 * 6 / 10 - frame) * 100;
        let f = HopTspec {
            rate_bps: rate,
            burst_bits: 2 * frame,
            max_frame_bits: frame,
        };
        assert_eq!(
            cyclic_cycle_work_bits(&f, 10_000_000),
            cyclic_work_budget_bits(&params)
        );
        let theta = Server::Cyclic(params).latency_ns(&f).unwrap();
        println!("C = {c}: Δ = {drain} ns, θ = {theta} ns");
        assert!(theta < 10_000_000 + drain + 500_000 + 1_000_000);
    }
}

fn any_port() -> impl Strategy<Value = PortParams> {
    (
        1_000_000u64..10_000_000_000,
        672u64..100_000,
        0u64..100_000,
        0u64..100,
        0u64..1_000_000,
        0u64..100_000,
    )
        .prop_map(|(c, l, sc, rc_pct, lat, link)| PortParams {
            line_rate_bps: c,
            max_frame_bits: l,
            control_burst_bits: sc,
            control_rate_bps: c / 1000 * rc_pct / 10,
            lateness_ns: lat,
            link_delay_ns: link,
        })
}

fn any_server() -> impl Strategy<Value = Server> {
    prop_oneof![
        (any_port(), 0u64..100_000).prop_map(|(port, g)| Server::Wheel(WheelParams {
            port,
            granularity_ns: g
        })),
        (any_port(), 0u64..100_000, 0u64..1_000_000, 0u64..100_000).prop_map(|(port, g, r, l)| {
            Server::Wfq(WfqParams {
                port,
                granularity_ns: g,
                gs_rate_bps: r,
                gs_frames_bits: l,
            })
        }),
        (any_port(), 1_000_000u64..100_000_000, 1u8..=100).prop_map(|(port, t, u)| {
            Server::Cyclic(CyclicParams {
                port,
                cycle_ns: t,
                rt_share_percent: u,
            })
        }),
    ]
}

fn any_flow() -> impl Strategy<Value = HopTspec> {
    (1_000u64..1_000_000_000, 672u64..100_000, 0u64..1_000_000).prop_map(|(r, l, extra)| HopTspec {
        rate_bps: r,
        burst_bits: l + extra,
        max_frame_bits: l,
    })
}

proptest! {
    /// Each hop's rounded latency is at least its exact one; the end-to-end bound equals the
    /// horizontal deviation of γ_{r,b} against the concatenation of the hops' curves (latencies
    /// on the ns grid, as `network` rounds them, so denominators stay small) up to < 1 ns, and is
    /// never below it; a peak-limited T-SPEC gives no more.
    #[test]
    fn e2e_is_the_concatenated_delay_bound(
        servers in proptest::collection::vec(any_server(), 1..6), f in any_flow()) {
        let mut curves = Vec::new();
        let mut sum_ns = 0u64;
        for s in &servers {
            match (s.service_curve(&f), s.latency_ns(&f)) {
                (Ok(beta), Ok(ns)) => {
                    prop_assert!(secs_ns(ns) >= beta.latency);
                    prop_assert!(secs_ns(ns) < beta.latency.add(secs_ns(1)).unwrap());
                    curves.push(RateLatency::new(beta.rate, secs_ns(ns)).unwrap());
                    sum_ns += ns;
                }
                (Err(a), Err(b)) => { prop_assert_eq!(a, b); return Ok(()); }
                (a, b) => prop_assert!(false, "curve {:?} vs latency {:?}", a, b),
            }
        }
        let path = RateLatency::concat_all(curves).unwrap().unwrap();
        let r = Q::int(i64::try_from(f.rate_bps).unwrap());
        let alpha = ArrivalCurve::token_bucket(r, Q::int(i64::try_from(f.burst_bits).unwrap())).unwrap();
        let exact = curve::delay_bound(&alpha, &path).unwrap();
        let e2e = end_to_end_ns(&f, sum_ns).unwrap();
        prop_assert!(secs_ns(e2e) >= exact);
        let slack = secs_ns(1);
        prop_assert!(secs_ns(e2e) < exact.add(slack).unwrap());
        let peak = Q::int(10_000_000_000);
        let tspec = ArrivalCurve::tspec(peak, Q::int(i64::try_from(f.max_frame_bits).unwrap()),
            r, Q::int(i64::try_from(f.burst_bits).unwrap())).unwrap();
        prop_assert!(curve::delay_bound(&tspec, &path).unwrap() <= exact);
    }

    /// burst_at_hop after each prefix of the path is the (rounded-up) burst of the output curve
    /// of the flow through the concatenation of the upstream hops; the backlog bound is the
    /// vertical deviation there.
    #[test]
    fn burst_and_backlog_match_the_curves(
        servers in proptest::collection::vec(any_server(), 1..5), f in any_flow()) {
        let r = Q::int(i64::try_from(f.rate_bps).unwrap());
        let b = Q::int(i64::try_from(f.burst_bits).unwrap());
        let mut alpha = ArrivalCurve::token_bucket(r, b).unwrap();
        let mut upstream = 0u64;
        for s in &servers {
            let Ok(theta) = s.latency_ns(&f) else { return Ok(()); };
            let here = burst_at_hop(&f, upstream).unwrap();
            let beta = RateLatency::new(r, secs_ns(theta)).unwrap();
            // The curve's burst after the upstream hops (with their rounded latencies).
            prop_assert!(Q::int(i64::try_from(here).unwrap()) >= alpha.burst());
            prop_assert!(Q::int(i64::try_from(here).unwrap()) < alpha.burst().add(Q::ONE).unwrap());
            let backlog = backlog_bits(&f, here, theta).unwrap();
            prop_assert!(Q::int(i64::try_from(backlog).unwrap()) >= curve::backlog_bound(&alpha, &beta).unwrap());
            prop_assert!(queue_bytes(backlog) * 8 >= usize::try_from(backlog).unwrap());
            alpha = curve::output_curve(&alpha, &beta).unwrap();
            upstream += theta;
        }
    }

    /// θ never decreases when λ, L_max, σ_c, ρ_c, the link delay, T, U, g or the Guaranteed
    /// share of a WF²Q+ port grow (while the scheduler can still be analysed).
    #[test]
    fn latency_is_monotone(s in any_server(), f in any_flow(),
                           d_lat in 0u64..1_000_000, d_l in 0u64..50_000, d_sc in 0u64..50_000,
                           d_rc in 0u64..1000, d_link in 0u64..100_000, d_t in 0u64..10_000_000,
                           d_u in 0u8..3, d_g in 0u64..100_000) {
        let Ok(before) = s.latency_ns(&f) else { return Ok(()); };
        let grow = |p: PortParams| PortParams {
            line_rate_bps: p.line_rate_bps,
            max_frame_bits: p.max_frame_bits + d_l,
            control_burst_bits: p.control_burst_bits + d_sc,
            control_rate_bps: p.control_rate_bps + d_rc,
            lateness_ns: p.lateness_ns + d_lat,
            link_delay_ns: p.link_delay_ns + d_link,
        };
        let bigger = match s {
            Server::Wheel(w) => Server::Wheel(WheelParams { port: grow(w.port), granularity_ns: w.granularity_ns + d_g }),
            Server::Cyclic(c) => Server::Cyclic(CyclicParams { port: grow(c.port), cycle_ns: c.cycle_ns + d_t,
                                                              rt_share_percent: c.rt_share_percent + d_u }),
            Server::Wfq(w) => Server::Wfq(WfqParams { port: grow(w.port), granularity_ns: w.granularity_ns + d_g,
                                                      gs_rate_bps: w.gs_rate_bps + d_rc,
                                                      gs_frames_bits: w.gs_frames_bits + d_l }),
        };
        if let Ok(after) = bigger.latency_ns(&f) {
            prop_assert!(after >= before);
        }
    }

    /// No input panics.
    #[test]
    fn never_panics(c in any::<u64>(), l in any::<u64>(), sc in any::<u64>(), rc in any::<u64>(),
                    lat in any::<u64>(), t in any::<u64>(), u in any::<u8>(), r in any::<u64>(),
                    b in any::<u64>(), lf in any::<u64>(), up in any::<u64>(), sb in any::<u32>(),
                    mp in any::<u16>()) {
        let port = PortParams { line_rate_bps: c, max_frame_bits: l, control_burst_bits: sc,
                                control_rate_bps: rc, lateness_ns: lat, link_delay_ns: lat };
        let f = HopTspec { rate_bps: r, burst_bits: b, max_frame_bits: lf };
        for s in [Server::Cyclic(CyclicParams { port, cycle_ns: t, rt_share_percent: u }),
                  Server::Wheel(WheelParams { port, granularity_ns: t }),
                  Server::Wfq(WfqParams { port, granularity_ns: t, gs_rate_bps: r, gs_frames_bits: b })] {
            let _ = s.latency_ns(&f);
            let _ = s.service_curve(&f);
        }
        let _ = burst_at_hop(&f, up);
        let _ = backlog_bits(&f, b, up);
        let _ = end_to_end_ns(&f, up);
        let _ = queue_bytes(b);
        let _ = tspec_from_setup(r, sb, mp);
    }
}
