//! The whole-network analysis on network files read by the one topology reader: Table 4 of
//! Löser/Härtig, "Low-latency hard real-time communication over switched Ethernet" (§4.3.1) from
//! the shipped experiment files, multi-hop propagation, and violations — the same numbers the
//! calculus gave when it parsed these files itself.

use rtlan_calculus::analysis::{analyze_file, Violation};
use rtlan_calculus::loser::{self, Port, Tspec};
use rtlan_calculus::netfile::NetFile;
use rtlan_calculus::Q;
use rtlan_topology::Topology;

/// Reads a network file through the topology model and converts it for the calculus.
fn parse(text: &str) -> Result<NetFile, String> {
    Topology::network_from_str(text, "test.toml")
        .map_err(|e| e.to_string())?
        .network()
        .map_err(|e| e.to_string())
}

const TS10MS: &str = include_str!("../../../experiments/loser/table4-ts10ms.toml");
const TS1MS: &str = include_str!("../../../experiments/loser/table4-ts1ms.toml");
const TS100US: &str = include_str!("../../../experiments/loser/table4-ts100us.toml");

fn within(ours: f64, paper: f64, tol: f64) -> bool {
    (ours - paper).abs() / paper <= tol
}

#[test]
fn table4_reproduced_within_2_percent() {
    // Seed 004 Table 4: buffer bound (KByte = 1024), t_max (µs), t_est (µs).
    for (text, kb, tmax, test) in [
        (TS10MS, 111.8, 9357.0, 9731.0),
        (TS1MS, 15.7, 1380.0, 1345.0),
        (TS100US, 6.1, 582.0, 506.0),
    ] {
        let r = analyze_file(&parse(text).unwrap()).unwrap();
        assert!(r.admitted(), "{:?}", r.violations);
        assert_eq!(r.ports.len(), 1);
        let p = &r.ports[0];
        assert_eq!((p.switch.as_str(), p.to.as_str()), ("s1", "B"));
        let buf = p.backlog_bound.unwrap().to_f64() / 8.0 / 1024.0;
        let est = p.delay_estimate.unwrap().to_f64() * 1e6;
        let a = r.flows.iter().find(|f| f.name == "A-B").unwrap();
        let t = a.delay_bound.unwrap().to_f64() * 1e6;
        assert!(within(buf, kb, 0.02), "buffer {buf} vs {kb}");
        assert!(within(t, tmax, 0.02), "t_max {t} vs {tmax}");
        assert!(within(est, test, 0.02), "t_est {est} vs {test}");
    }
}

#[test]
fn single_port_equals_loser_closed_forms() {
    // Without the test flow, the port is exactly seed 004's setting (peak = C).
    let mut file = parse(TS1MS).unwrap();
    file.flows.retain(|f| f.name != "A-B");
    let r = analyze_file(&file).unwrap();
    let port = Port {
        rate: Q::int(98_600_000),
        t_mux: Q::micros(45),
    };
    let tspecs: Vec<Tspec> = file
        .flows
        .iter()
        .map(|f| Tspec {
            max_packet: f.max_packet,
            rate: f.rate,
            bucket: f.burst,
        })
        .collect();
    let p = &r.ports[0];
    // Bounds are at most 1 ps (delay) / one grid step of g (backlog) above the exact values.
    let d = loser::delay_bound(&port, &tspecs).unwrap();
    let got = p.delay_bound.unwrap();
    assert!(got >= d && got.sub(d).unwrap() <= Q::new(1, 1_000_000_000_000).unwrap());
    let b = loser::backlog_bound(&port, &tspecs).unwrap();
    let got = p.backlog_bound.unwrap();
    assert!(got >= b && got.sub(b).unwrap() <= Q::new(1, 10_000).unwrap());
    assert_eq!(
        p.delay_estimate,
        Some(loser::delay_estimate(&port, &tspecs).unwrap())
    );
    assert_eq!(
        p.backlog_estimate,
        Some(loser::backlog_estimate(&port, &tspecs).unwrap())
    );
}

const TANDEM: &str = r#"
[[switch]]
name = "s1"
t_mux = "10us"
buffer = "1MiB"
[[switch]]
name = "s2"
t_mux = "10us"
buffer = "1MiB"
[[link]]
ends = ["a", "s1"]
rate = "100mbit"
[[link]]
ends = ["s1", "s2"]
rate = "100mbit"
[[link]]
ends = ["s2", "b"]
rate = "100mbit"
[[flow]]
name = "f"
path = ["a", "s1", "s2", "b"]
rate = "10mbit"
max_packet = 1000
burst = "11000B"
host_delay = "5us"
"#;

#[test]
fn multi_hop_burst_grows_by_rate_times_delay() {
    let r = analyze_file(&parse(TANDEM).unwrap()).unwrap();
    let (p1, p2) = (&r.ports[0], &r.ports[1]);
    assert_eq!((p1.switch.as_str(), p2.switch.as_str()), ("s1", "s2"));
    // Hop 1: g = 80000 bit / 90 Mbit/s; d1 = b/C + t_mux − g·(1 − r/C).
    let d1 = p1.delay_bound.unwrap();
    let exact = Q::new(88_000, 100_000_000)
        .unwrap()
        .add(Q::micros(10))
        .unwrap()
        .sub(
            Q::new(80_000, 90_000_000)
                .unwrap()
                .mul(Q::new(9, 10).unwrap())
                .unwrap(),
        )
        .unwrap();
    assert!(d1 >= exact && d1.sub(exact).unwrap() < Q::new(1, 100_000_000_000).unwrap());
    // Hop 2 sees b + r·d1: its estimate (7) is (b + r·d1)/C + t_mux.
    let b2 = Q::bytes(11_000)
        .add(Q::int(10_000_000).mul(d1).unwrap())
        .unwrap();
    let est2 = b2
        .div(Q::int(100_000_000))
        .unwrap()
        .add(Q::micros(10))
        .unwrap();
    assert_eq!(p2.delay_estimate, Some(est2));
    let total = d1
        .add(p2.delay_bound.unwrap())
        .unwrap()
        .add(Q::micros(5))
        .unwrap();
    assert_eq!(r.flows[0].bounds.tfa, Some(total));
    // Alone on its path the flow pays its burst once (SFA): 2·t_mux + M/C + host delay.
    assert_eq!(r.flows[0].delay_bound, Some(Q::micros(105)));
}

#[test]
fn violations_are_named() {
    let over = TS10MS.replace("rate = \"40mbit\"", "rate = \"70mbit\"");
    let r = analyze_file(&parse(&over).unwrap()).unwrap();
    assert!(!r.admitted());
    assert!(matches!(
        r.violations[0],
        Violation::RateOverCapacity { .. }
    ));
    assert!(r.flows.iter().all(|f| f.delay_bound.is_none()));
    let small = TS10MS.replace("128KiB", "100KiB");
    let r = analyze_file(&parse(&small).unwrap()).unwrap();
    assert_eq!(r.violations.len(), 1);
    assert!(r.violations[0]
        .to_string()
        .contains("buffer over switch memory at s1"));
    let r = analyze_file(&parse(TS1MS).unwrap()).unwrap();
    assert!(r.admitted());
}
