//! Tests for [`crate::lp`]: one server against its closed form, the lines of summed T-SPECs,
//! and the certificate's soundness whatever the dual.

use super::*;

fn q(n: i64) -> Q {
    Q::int(n)
}

fn frac(n: i64, d: i64) -> Q {
    Q::new(n as i128, d as i128).unwrap()
}

fn server(c: i64, t: Q, sum_r: Q, sum_b: Q) -> PortView {
    PortView {
        key: crate::analysis::PortKey { switch: 0, to: 1 },
        c: q(c),
        t_mux: t,
        sum_r,
        sum_b,
    }
}

#[test]
fn one_server_is_its_horizontal_deviation() {
    // 100 Mbit/s, T = 20 µs; a T-SPEC p = 1 Gbit/s, M = 12,000 bits, r = 10 Mbit/s,
    // b = 100,000 bits, alone: the delay is T + the deviation against λ_C.
    let spec = Tspec {
        p: q(1_000_000_000),
        m: q(12_000),
        r: q(10_000_000),
        b: q(100_000),
    };
    let mut t = Tandem::new(vec![server(
        100_000_000,
        frac(20, 1_000_000),
        spec.r,
        spec.b,
    )]);
    t.add(0, &[spec]);
    let exact = frac(20, 1_000_000)
        .add(crate::methods::tspec_delay(spec.p, spec.m, spec.r, spec.b, q(100_000_000)).unwrap())
        .unwrap();
    let lp = t.delay_bound().unwrap().unwrap();
    assert!(lp >= exact, "LP {} below the exact {}", lp, exact);
    // Within 1 ns of it (the solver's tolerance, certified).
    assert!(
        lp.sub(exact).unwrap() <= frac(1, 1_000_000_000),
        "LP {lp} vs {exact}"
    );
}

#[test]
fn summed_lines_are_the_sum() {
    let a = Tspec {
        p: q(4_000_000),
        m: q(1),
        r: q(1_000_000),
        b: q(7),
    };
    let b = Tspec {
        p: q(3_000_000),
        m: q(2),
        r: q(2_000_000),
        b: q(4),
    };
    let unit = Scale {
        tau: frac(1, 1_000_000),
        delta: Q::ONE,
    };
    let lines = summed_lines(&[a, b], unit).unwrap();
    // In µs: a = min(4t + 1, t + 7) (g = 2), b = min(3t + 2, 2t + 4) (g = 2): one switch.
    assert_eq!(lines, vec![(q(3), q(7)), (q(11), q(3))]);
    for t in 0..10 {
        let t = q(t);
        let sum = q(1)
            .add(q(4).mul(t).unwrap())
            .unwrap()
            .min(q(7).add(t).unwrap())
            .add(
                q(2).add(q(3).mul(t).unwrap())
                    .unwrap()
                    .min(q(4).add(q(2).mul(t).unwrap()).unwrap()),
            )
            .unwrap();
        let min = lines
            .iter()
            .map(|&(s, r)| s.add(r.mul(t).unwrap()).unwrap())
            .min()
            .unwrap();
        assert_eq!(min, sum);
    }
}

#[test]
fn certificate_is_sound_for_any_dual() {
    // Whatever dual the solver hands back, the certified value bounds the program's optimum:
    // a zero dual, a wrong-signed one and a scaled one all give at least the true optimum.
    let spec = Tspec {
        p: q(100_000_000),
        m: q(1_000),
        r: q(1_000_000),
        b: q(5_000),
    };
    let mut t = Tandem::new(vec![server(10_000_000, frac(1, 10_000), spec.r, spec.b)]);
    t.add(0, &[spec]);
    let lp = Program::build(&t).unwrap().unwrap();
    let z = lp.solve().unwrap();
    let secs = |c: Q| c.mul(lp.tau).unwrap();
    let best = secs(lp.certificate(&z).unwrap());
    // The optimum: T plus the T-SPEC's deviation against λ_C (one flow, one server).
    let exact = frac(1, 10_000)
        .add(crate::methods::tspec_delay(spec.p, spec.m, spec.r, spec.b, q(10_000_000)).unwrap())
        .unwrap();
    assert!(
        best >= exact && best.sub(exact).unwrap() < frac(1, 1_000_000_000),
        "{best} vs {exact}"
    );
    for z in [
        vec![0.0; z.len()],
        z.iter().map(|x| -x).collect(),
        z.iter().map(|x| x * 0.5).collect(),
        z.iter().map(|x| x * 3.0).collect(),
    ] {
        let c = secs(lp.certificate(&z).unwrap());
        assert!(c >= exact, "certificate {c} below the optimum {exact}");
    }
}

#[test]
fn too_long_or_overloaded_gives_nothing() {
    let spec = Tspec {
        p: q(10),
        m: q(1),
        r: q(1),
        b: q(2),
    };
    let s = server(10, q(1), q(1), q(2));
    let mut t = Tandem::new(vec![s; MAX_HOPS + 1]);
    t.add(0, &vec![spec; MAX_HOPS + 1]);
    assert_eq!(t.delay_bound().unwrap(), None);
    let mut t = Tandem::new(vec![server(10, q(1), q(10), q(2))]);
    t.add(0, &[spec]);
    assert_eq!(t.delay_bound().unwrap(), None);
}
