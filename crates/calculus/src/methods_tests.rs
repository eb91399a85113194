//! Tests for [`crate::methods`]: hand-computed tandems, the unsound "θ from the T-SPEC's burst"
//! leftover beaten by a trajectory, and properties against an exact fluid simulation
//! ([`crate::fluid`]) of greedy T-SPEC sources through FIFO ports at exactly their service curves.

use proptest::prelude::*;

use crate::analysis::{analyze, analyze_with, Flow, Topology};
use crate::fluid;
use crate::methods::{tspec_delay, LpUse, Method};
use crate::netfile::{FlowSpec, LinkSpec, NetFile, SwitchSpec};
use crate::rational::Q;

fn q(n: i64) -> Q {
    Q::int(n)
}

fn frac(n: i64, d: i64) -> Q {
    Q::new(n as i128, d as i128).unwrap()
}

fn link(a: &str, b: &str, rate: i64) -> LinkSpec {
    LinkSpec {
        ends: [a.into(), b.into()],
        rate: q(rate),
        effective_rate: q(rate),
    }
}

/// A flow spec in bits and seconds: rate r, packet M, bucket b.
fn spec(name: &str, path: &[&str], r: i64, m: i64, b: i64) -> FlowSpec {
    FlowSpec {
        name: name.into(),
        path: path.iter().map(|s| s.to_string()).collect(),
        rate: q(r),
        max_packet: q(m),
        burst: q(b),
        host_delay: Q::ZERO,
        deadline: None,
    }
}

fn resolve(file: &NetFile) -> (Topology, Vec<Flow>) {
    let topo = Topology::from_netfile(file);
    let flows = file
        .flows
        .iter()
        .map(|f| topo.resolve(f).unwrap())
        .collect();
    (topo, flows)
}

/// Switches s0 → s1 → … in a line at `c` bit/s, t_mux = `t` s.
fn line(n: usize, c: i64, t: i64) -> NetFile {
    let mut f = NetFile::default();
    for k in 0..n {
        f.switches.push(SwitchSpec {
            name: format!("s{k}"),
            t_mux: q(t),
            buffer: q(1 << 40),
        });
        if k > 0 {
            f.links
                .push(link(&format!("s{}", k - 1), &format!("s{k}"), c));
        }
    }
    f
}

#[test]
fn tspec_delay_cases() {
    // p > R ≥ r: M/R + g·(p − R)/R with g = (b − M)/(p − r) = 4/8: 1/8 + 1/8.
    assert_eq!(
        tspec_delay(q(10), q(1), q(2), q(5), q(8)).unwrap(),
        frac(1, 4)
    );
    // p ≤ R: only M waits.
    assert_eq!(
        tspec_delay(q(10), q(1), q(2), q(5), q(10)).unwrap(),
        frac(1, 10)
    );
    // b ≤ M: a token bucket.
    assert_eq!(
        tspec_delay(q(10), q(3), q(2), q(2), q(8)).unwrap(),
        frac(1, 4)
    );
}

#[test]
fn three_port_tandem_by_hand() {
    // s0 → s1 → s2, C = 10 everywhere (host links too, so p = 10), t_mux = 1.
    // f: r 2, M 1, b 5 (g = 1/2); x: r 2, M 1, b 9 (g = 1); both over s0→s1, s1→s2, then apart.
    // TFA: d0 = 14/10 + 1 − 1·6/10 = 9/5; bursts 43/5, 63/5; d1 = 9/4; f alone at s2: 1 + 1/10.
    //   f: 9/5 + 9/4 + 11/10 = 103/20.
    // FIFO-TFA: θ_x = 1 + 5/10 = 3/2 < 9/5, so x reaches s1 with 9 + 3 = 12 (not 63/5);
    //   d1 = (43/5 + 12)/10 + 1 − (11/8)·6/10 = 447/200; f: 9/5 + 447/200 + 11/10 = 1027/200.
    // SFA: β_{8, 1 + 9/10} ⊗ β_{8, 1 + 12/10} ⊗ β_{10, 1} = β_{8, 51/10}, plus f's T-SPEC
    //   against λ_8: 1/8 + (1/2)·2/8 = 1/4: 107/20 — here above TFA.
    // PMOO: R = 8, T = 3 + (9 + 2·(1 + 1))/8 = 37/8, plus 1/4: 39/8 — the tightest of these
    //   (the LP, not computed here without a deadline, is tighter: `lp_is_tight_on_the_tandem`).
    let (topo, flows) = tandem_f_x(None);
    let r = analyze(&topo, &flows).unwrap();
    let f = &r.flows[1];
    assert_eq!(f.bounds.tfa, Some(frac(103, 20)));
    assert_eq!(f.bounds.fifo_tfa, Some(frac(1027, 200)));
    assert_eq!(f.bounds.sfa, Some(frac(107, 20)));
    assert_eq!(f.bounds.pmoo, Some(frac(39, 8)));
    assert_eq!(
        (f.delay_bound, f.method),
        (Some(frac(39, 8)), Some(Method::Pmoo))
    );
    // The port reports stay those of TFA.
    assert_eq!(r.ports[0].delay_bound, Some(frac(9, 5)));
    assert_eq!(r.ports[1].delay_bound, Some(frac(9, 4)));
    // And a trajectory reaches a delay below every bound.
    let sim = fluid::simulate(&topo, &flows, &[Q::ZERO, Q::ZERO], q(10)).unwrap();
    assert!(sim[1] <= frac(39, 8), "simulated {}", sim[1]);
    assert!(sim[1] >= q(3), "simulated {}", sim[1]);
}

/// The three-port tandem: x, then f (with `deadline`), over the same three ports.
fn tandem_f_x(deadline: Option<Q>) -> (Topology, Vec<Flow>) {
    let mut file = line(3, 10, 1);
    for h in ["a", "ax", "zf", "zx"] {
        let s = if h.starts_with('a') { "s0" } else { "s2" };
        file.links.push(link(h, s, 10));
    }
    file.flows
        .push(spec("x", &["ax", "s0", "s1", "s2", "zx"], 2, 1, 9));
    let mut f = spec("f", &["a", "s0", "s1", "s2", "zf"], 2, 1, 5);
    f.deadline = deadline;
    file.flows.push(f);
    resolve(&file)
}

#[test]
fn lp_is_tight_on_the_tandem() {
    // PMOO gives f 39/8 = 4.875 s; the LP gives 3.8 s, and the fluid trajectory with both flows
    // greedy from 0 reaches exactly 3.8 s: the LP bound is the worst case, to within its
    // certified tolerance.
    let (topo, flows) = tandem_f_x(None);
    let r = analyze_with(&topo, &flows, LpUse::All).unwrap();
    let f = &r.flows[1];
    let lp = f.bounds.lp.unwrap();
    assert!(
        lp >= frac(38, 10) && lp <= frac(38, 10).add(frac(1, 10_000_000)).unwrap(),
        "{lp}"
    );
    assert_eq!((f.delay_bound, f.method), (Some(lp), Some(Method::Lp)));
    let sim = fluid::simulate(&topo, &flows, &[Q::ZERO, Q::ZERO], q(10)).unwrap();
    assert_eq!(sim[1], frac(38, 10));
    // By default (`LpUse::Deadlines`) a flow without a deadline does not get it.
    assert_eq!(analyze(&topo, &flows).unwrap().flows[1].bounds.lp, None);
}

#[test]
fn admission_uses_the_tightest_bound() {
    // The tandem above with a deadline on f: above PMOO's 39/8, PMOO settles it and the LP is
    // not computed; between the LP's 3.8 and 39/8, the LP admits it (booking and `analyze`
    // alike); below 3.8 (a delay the fluid trajectory reaches) it is refused at the LP bound.
    for (deadline, fits, lp) in [
        (q(5), true, false),
        (q(4), true, true),
        (frac(37, 10), false, true),
    ] {
        let (topo, flows) = tandem_f_x(Some(deadline));
        let report = analyze(&topo, &flows).unwrap();
        assert_eq!(report.admitted(), fits, "deadline {deadline}");
        assert_eq!(report.flows[1].bounds.lp.is_some(), lp);
        let want = report.flows[1].delay_bound.unwrap();
        let mut booking = crate::booking::Booking::new(topo);
        booking.try_admit(flows[0].clone()).unwrap().unwrap();
        match booking.try_admit(flows[1].clone()).unwrap() {
            Ok(v) => {
                assert!(fits);
                assert_eq!(v.delay_bound, want);
                if !lp {
                    assert_eq!(want, frac(39, 8));
                }
            }
            Err(refusal) => {
                assert!(!fits);
                assert!(matches!(
                    refusal.violations[..],
                    [crate::analysis::Violation::DeadlineMissed { bound, .. }] if bound == want
                ));
            }
        }
        if lp {
            assert!(want < frac(38, 10).add(frac(1, 10_000_000)).unwrap());
        }
    }
}

#[test]
fn leftover_from_tspec_burst_is_unsound() {
    // One port s0 → z, C = 10, t_mux = 1. Two cross flows from their own 10 bit/s links
    // (r 1, M 1, b 10, so g = 1): together they arrive at 2C for a second and pile up.
    // f: r 1, M = b = 1, sent at t = 1.
    // The leftover with θ from the cross T-SPECs' burst at 0+ (ΣM = 2), as for token buckets,
    // would give 1 + 2/10 + 1/8 = 1.325. The trajectory below reaches 2.3: f's bit enters the
    // queue at 2 behind 22 − 10 = 12 cross bits and leaves at 2 + 13/10.
    // Ours: θ = 1 + (10 + 10)/10 = 3, SFA = 3 + 1/8; TFA d = 21/10 + 1 − 1·7/10 = 2.4.
    let mut file = line(1, 10, 1);
    for h in ["a", "b1", "b2", "z"] {
        file.links.push(link(h, "s0", 10));
    }
    file.flows.push(spec("f", &["a", "s0", "z"], 1, 1, 1));
    file.flows.push(spec("x1", &["b1", "s0", "z"], 1, 1, 10));
    file.flows.push(spec("x2", &["b2", "s0", "z"], 1, 1, 10));
    let (topo, flows) = resolve(&file);
    let sim = fluid::simulate(&topo, &flows, &[q(1), Q::ZERO, Q::ZERO], q(5)).unwrap();
    assert_eq!(sim[0], frac(23, 10));
    let wrong = q(1).add(frac(2, 10)).unwrap().add(frac(1, 8)).unwrap();
    assert!(wrong < sim[0]);
    let r = analyze(&topo, &flows).unwrap();
    let b = r.flows[0].bounds;
    assert_eq!(b.sfa, Some(frac(25, 8)));
    assert_eq!(b.tfa, Some(frac(12, 5)));
    assert!(r.flows[0].delay_bound.unwrap() >= sim[0]);
}

#[test]
fn fluid_port_by_hand() {
    // One port C = 10, t_mux = 1; a batch of 20 at 0 and a fluid 5 bit/s over [0, 2] of another
    // flow. After the delay, the batch leaves over [1, 3]; the fluid arriving in [1, 3] queues
    // behind it and leaves from 3 at 10 bit/s: the last of it, arriving at 3, leaves at 4.
    let ins = vec![
        vec![fluid::Piece {
            t0: Q::ZERO,
            t1: Q::ZERO,
            amount: q(20),
        }],
        vec![fluid::Piece {
            t0: Q::ZERO,
            t1: q(2),
            amount: q(10),
        }],
    ];
    let out = fluid::port(q(10), q(1), &ins).unwrap();
    assert_eq!(fluid::worst_delay(&ins[0], &out[0]).unwrap(), q(3));
    assert_eq!(fluid::worst_delay(&ins[1], &out[1]).unwrap(), q(3));
    // The bit arriving at 0+ leaves at 3: delay 3; the one arriving at 2 leaves at 4: delay 2.
    assert_eq!(out[1].last().unwrap().t1, q(4));
}

/// A line of 1–4 switches with per-link rates, and up to four flows over consecutive switches,
/// each from its own host (link rate 10, 20 or 40, so its peak at the first port varies) to its
/// own host, starting greedily at its own time.
fn arb_tandem() -> impl Strategy<Value = (NetFile, Vec<Q>)> {
    (
        prop::collection::vec((0usize..2, 0i64..3), 1..5),
        prop::collection::vec(
            (
                0usize..4,
                1usize..5,
                1i64..3,
                1i64..4,
                0i64..10,
                (0usize..3, 0i64..5),
            ),
            1..5,
        ),
    )
        .prop_map(|(switches, flows)| {
            let n = switches.len();
            let mut file = NetFile::default();
            for (k, &(rate, t)) in switches.iter().enumerate() {
                file.switches.push(SwitchSpec {
                    name: format!("s{k}"),
                    t_mux: q(t),
                    buffer: q(1 << 40),
                });
                if k > 0 {
                    file.links.push(link(
                        &format!("s{}", k - 1),
                        &format!("s{k}"),
                        10 + 10 * rate as i64,
                    ));
                }
            }
            let mut starts = Vec::new();
            for (i, (s, len, r, m, extra, (host, start))) in flows.into_iter().enumerate() {
                let s = s % n;
                let e = (s + len).min(n);
                let (a, z) = (format!("a{i}"), format!("z{i}"));
                file.links
                    .push(link(&a, &format!("s{s}"), [10, 20, 40][host]));
                file.links.push(link(&format!("s{}", e - 1), &z, 10));
                let mut path = vec![a];
                path.extend((s..e).map(|k| format!("s{k}")));
                path.push(z);
                let path: Vec<&str> = path.iter().map(String::as_str).collect();
                file.flows
                    .push(spec(&format!("f{i}"), &path, r, m, m + extra));
                starts.push(frac(start, 2));
            }
            (file, starts)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]
    /// Every method's bound is at least the delay an exact fluid trajectory reaches, the reported
    /// bound is the smallest of them, FIFO-aware TFA never exceeds TFA, and the LP (computed
    /// for every flow here) is at most every other method's bound, to within its solver's
    /// tolerance (10⁻⁶ relative, certified upward).
    #[test]
    fn every_method_is_above_a_reachable_delay((file, starts) in arb_tandem()) {
        // Σr ≤ 4·2 < 10 ≤ C: every port is stable.
        let (topo, flows) = resolve(&file);
        let r = analyze_with(&topo, &flows, LpUse::All).unwrap();
        prop_assert!(r.admitted(), "{:?}", r.violations);
        let sim = fluid::simulate(&topo, &flows, &starts, q(12)).unwrap();
        for (fr, lb) in r.flows.iter().zip(&sim) {
            let best = fr.delay_bound.unwrap();
            for m in Method::ALL {
                let Some(v) = fr.bounds.get(m) else { continue };
                prop_assert!(v >= *lb, "{} {}: {} < simulated {}", fr.name, m, v, lb);
                prop_assert!(best <= v);
            }
            prop_assert_eq!(fr.bounds.get(fr.method.unwrap()), Some(best));
            prop_assert!(fr.bounds.fifo_tfa.unwrap() <= fr.bounds.tfa.unwrap());
            prop_assert!(fr.bounds.tfa.is_some() && fr.bounds.sfa.is_some() && fr.bounds.pmoo.is_some());
            let lp = fr.bounds.lp.unwrap();
            for m in [Method::Tfa, Method::FifoTfa, Method::Sfa, Method::Pmoo] {
                let v = fr.bounds.get(m).unwrap();
                let slack = v.mul(Q::new(1, 1_000_000).unwrap()).unwrap();
                prop_assert!(lp <= v.add(slack).unwrap(), "{}: LP {} above {} {}", fr.name, lp, m, v);
            }
        }
    }

    /// The FIFO-aware output burst of every flow after every port is at least what the
    /// trajectory's output actually needs: its data after the port conforms to γ_{r, b}.
    #[test]
    fn fifo_output_bursts_cover_the_trajectory((file, starts) in arb_tandem()) {
        let (topo, flows) = resolve(&file);
        let (_, bursts) = crate::analysis::analyze_with_bursts(&topo, &flows, crate::methods::LpUse::Never).unwrap();
        let (_, inputs) = fluid::simulate_hops(&topo, &flows, &starts, q(12)).unwrap();
        for (i, f) in flows.iter().enumerate() {
            for h in 1..f.hops.len() {
                let need = fluid::burstiness(&inputs[i][h], f.rate).unwrap();
                let have = bursts[i][h].unwrap();
                prop_assert!(have >= need, "{} hop {}: burst {} < trajectory's {}", f.name, h, have, need);
            }
        }
    }
}
