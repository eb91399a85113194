//! Unit tests of the bandwidth manager on rtlan real-time switches: the bound is the switches'
//! `b/r + host delay + Σθ`, and every resource the switches' own admission checks refuses.
//! (Kept apart from `tests.rs`, the FIFO switches' tests, to keep both files small.)

use rtlan_calculus::servers::{self, CyclicParams, HopTspec, PortParams, Server, WheelParams};

use super::tests::{admit_op, standing_config, violations};
use super::*;

/// A chain A — s1 — s2 — s3 — B of rtlan switches with `sched` (100 Mbit/s links, λ = 200 µs),
/// C also on s1, and a FIFO switch f1 behind s3 with host D.
fn chain(sched: &str, buffer: &str) -> Topology {
    let mut text = String::new();
    for s in ["s1", "s2", "s3"] {
        text.push_str(&format!(
            "[[switch]]\nname = \"{s}\"\nscheduler = \"{sched}\"\nlateness_budget = \"200us\"\n{buffer}\n"
        ));
    }
    text.push_str("[[switch]]\nname = \"f1\"\nt_mux = \"10us\"\nbuffer = \"1MB\"\n");
    for (a, b) in [
        ("A", "s1"),
        ("C", "s1"),
        ("s1", "s2"),
        ("s2", "s3"),
        ("s3", "B"),
        ("s3", "f1"),
        ("f1", "D"),
    ] {
        text.push_str(&format!(
            "[[link]]\nends = [\"{a}\", \"{b}\"]\nrate = \"100mbit\"\n"
        ));
    }
    Topology::parse(&text, "chain.toml").expect("valid network")
}

fn manager(sched: &str) -> Manager {
    Manager::new(chain(sched, ""), ManagerConfig::default()).expect("valid topology")
}

/// What rtcd sends: rate and burst of whole frames, a maximum packet, the host's delay.
fn spec(src: &str, dst: &str, rate_bps: u64, burst: u64, packet: u64) -> ConnSpec {
    ConnSpec {
        src: src.into(),
        dst: dst.into(),
        rate_bps,
        max_packet: packet,
        shaping_interval_us: None,
        burst_bytes: Some(burst),
        delay_us: None,
        host_delay_us: Some(50),
    }
}

// A test helper: the reply is inspected, not propagated.
#[allow(clippy::result_large_err)]
fn per_hop(m: &mut Manager, s: ConnSpec) -> Result<(ConnId, u64), Reply> {
    admit_op(m, Op::AdmitPerHop(s))
}

/// The port of every switch in the chain, spelled out from the switch's documented defaults
/// (not from `port_server`): 100 Mbit/s, L_max a 1518-byte frame, a control bucket of four
/// 128-byte control frames at 1 % of the line, λ = 200 µs, no link delay.
fn port() -> PortParams {
    PortParams {
        line_rate_bps: 100_000_000,
        max_frame_bits: (1518 + 24) * 8,
        control_burst_bits: 4 * (128 + 24) * 8,
        control_rate_bps: 1_000_000,
        lateness_ns: 200_000,
        link_delay_ns: 0,
    }
}

fn wheel() -> Server {
    Server::Wheel(WheelParams {
        port: port(),
        granularity_ns: 10_000,
    })
}

fn cyclic() -> Server {
    Server::Cyclic(CyclicParams {
        port: port(),
        cycle_ns: 10_000_000,
        rt_share_percent: 60,
    })
}

/// `b/r + D_h + 3θ` for 30 Mbit/s in 1042-byte frames with a two-frame burst, and the queues
/// hop by hop (burst grown by r·θ per upstream hop, D_h included).
fn expected(server: &Server) -> (u64, Vec<u64>) {
    let flow: HopTspec = servers::tspec_from_setup(30_000_000, 2084, 1042).expect("valid");
    let theta = server.latency_ns(&flow).expect("bounded");
    let mut upstream = 50_000;
    let mut queues = Vec::new();
    for _ in 0..3 {
        let burst = servers::burst_at_hop(&flow, upstream).expect("fits");
        let backlog = servers::backlog_bits(&flow, burst, theta).expect("fits");
        queues.push(backlog.div_ceil(8));
        upstream += theta;
    }
    let bound = servers::end_to_end_ns(&flow, 50_000 + 3 * theta).expect("fits");
    (bound, queues)
}

fn topology_ports(m: &mut Manager) -> Vec<PortInfo> {
    match m
        .handle_request(
            Instant::ZERO,
            Request {
                id: 2,
                op: Op::Topology,
            },
        )
        .reply
    {
        Reply::Topology { ports, .. } => ports,
        other => panic!("{other:?}"),
    }
}

fn port_info<'a>(ports: &'a [PortInfo], switch: &str, to: &str) -> &'a PortInfo {
    ports
        .iter()
        .find(|p| p.switch == switch && p.to == to)
        .expect("port exists")
}

#[test]
fn bound_is_burst_over_rate_plus_host_delay_plus_three_latencies() {
    for (sched, server) in [("wheel", wheel()), ("cyclic", cyclic())] {
        let mut m = manager(sched);
        let (conn, bound_us) =
            per_hop(&mut m, spec("A", "B", 30_000_000, 2084, 1042)).expect("admitted");
        let (bound_ns, queues) = expected(&server);
        assert_eq!(m.delay_bound_ns(conn), Some(bound_ns), "{sched}");
        assert_eq!(bound_us, bound_ns.div_ceil(1000), "{sched}");
        // Wheel: 2.76 ms within the 3 ms target (docs/calculus.md); cyclic: tens of ms.
        let range = if sched == "wheel" {
            2_000..3_000
        } else {
            40_000..60_000
        };
        assert!(range.contains(&bound_us), "{sched}: {bound_us} µs");
        let listed = m.list();
        assert_eq!(listed[0].delay_bound_us, Some(bound_us));
        let ports = topology_ports(&mut m);
        for (hop, (s, to)) in [("s1", "s2"), ("s2", "s3"), ("s3", "B")].iter().enumerate() {
            let p = port_info(&ports, s, to);
            assert_eq!(p.backlog_bound_bytes, queues[hop], "{sched} {s}");
            // Booked in wire bit/s: 30 Mbit/s × 1066/1042.
            assert_eq!(p.booked_bps, 30_690_979, "{sched} {s}");
            assert_eq!(p.connections, 1);
        }
        // A second connection leaves the first one's bound alone (θ does not depend on it).
        per_hop(&mut m, spec("C", "B", 5_000_000, 484, 242)).expect("admitted");
        assert_eq!(m.delay_bound_ns(conn), Some(bound_ns), "{sched}");
        // Released: nothing booked.
        m.release(conn).expect("held");
        let ports = topology_ports(&mut m);
        assert_eq!(port_info(&ports, "s1", "s2").connections, 1);
        assert_ne!(port_info(&ports, "s1", "s2").booked_bps, 30_690_979);
    }
}

#[test]
fn refuses_beyond_the_real_time_cap() {
    let mut m = manager("wheel");
    per_hop(&mut m, spec("A", "B", 55_000_000, 3028, 1514)).expect("55 Mbit/s fit the 60 % cap");
    let v = violations(per_hop(&mut m, spec("C", "B", 5_000_000, 3028, 1514)).unwrap_err());
    // 55 and 5 Mbit/s in 1514-byte frames are 55.87 + 5.08 Mbit/s on the wire, above 60.
    assert!(
        v.contains(&Violation::Capacity {
            switch: "s1".into(),
            to: "s2".into(),
            rate_bps: 55_871_863 + 5_079_261,
            capacity_bps: 60_000_000,
        }),
        "{v:?}"
    );
    assert_eq!(v.len(), 3, "every switch of the path refuses: {v:?}");
    // Nothing of the refused connection stayed booked anywhere.
    let ports = topology_ports(&mut m);
    assert_eq!(port_info(&ports, "s1", "s2").booked_bps, 55_871_863);
    per_hop(&mut m, spec("C", "B", 4_000_000, 3028, 1514)).expect("4 Mbit/s still fit");
}

#[test]
fn refuses_beyond_the_cycle_work_budget() {
    // U·C·T = 600 000 bits; 1 Mbit/s of 1514-byte frames works ⌈r·T⌉ + L = 10 159 + 12 304
    // bits a cycle: 26 fit (584 038), the 27th does not, far below the rate cap.
    let mut m = manager("cyclic");
    for _ in 0..26 {
        per_hop(&mut m, spec("A", "B", 1_000_000, 1514, 1514)).expect("fits the cycle");
    }
    let v = violations(per_hop(&mut m, spec("C", "B", 1_000_000, 1514, 1514)).unwrap_err());
    assert!(
        v.contains(&Violation::CycleWork {
            switch: "s2".into(),
            to: "s3".into(),
            work_bits: 27 * 22_463,
            budget_bits: 600_000,
        }),
        "{v:?}"
    );
    // The wheel books no cycle work: the same 27 connections fit there.
    let mut m = manager("wheel");
    for _ in 0..27 {
        per_hop(&mut m, spec("A", "B", 1_000_000, 1514, 1514)).expect("no cycle budget");
    }
}

#[test]
fn refuses_queues_beyond_the_switch_buffer() {
    // Wheel queues of a 30 Mbit/s connection: about 3.9, 6.7 and 9.5 kB along the path.
    let topo = chain("wheel", "buffer = \"8kB\"");
    let mut m = Manager::new(topo, ManagerConfig::default()).expect("valid");
    let (_, queues) = expected(&wheel());
    let v = violations(per_hop(&mut m, spec("A", "B", 30_000_000, 2084, 1042)).unwrap_err());
    assert_eq!(
        v,
        vec![Violation::Buffer {
            switch: "s3".into(),
            backlog_bytes: queues[2],
            buffer_bytes: 8000,
        }],
    );
    // The switches upstream booked nothing either.
    let ports = topology_ports(&mut m);
    assert_eq!(port_info(&ports, "s1", "s2").backlog_bound_bytes, 0);
}

#[test]
fn refuses_a_bound_above_the_requirement() {
    let mut m = manager("wheel");
    let (bound_ns, _) = expected(&wheel());
    let required_us = bound_ns / 1000 - 1;
    let mut s = spec("A", "B", 30_000_000, 2084, 1042);
    s.delay_us = Some(required_us);
    let v = violations(per_hop(&mut m, s.clone()).unwrap_err());
    assert_eq!(
        v,
        vec![Violation::Delay {
            conn: None,
            delay_bound_us: bound_ns.div_ceil(1000),
            delay_us: required_us,
        }]
    );
    assert_eq!(topology_ports(&mut m)[0].booked_bps, 0);
    s.delay_us = Some(bound_ns.div_ceil(1000));
    per_hop(&mut m, s).expect("the bound meets its requirement");
}

#[test]
fn refuses_what_rtlan_switches_cannot_carry_as_real_time() {
    let mut m = manager("wheel");
    // Central only (no per-hop SETUP): non-real-time in an rtlan switch.
    let r = m.handle_request(
        Instant::ZERO,
        Request {
            id: 1,
            op: Op::Admit(spec("A", "B", 1_000_000, 3028, 1514)),
        },
    );
    let Reply::Error { code, message, .. } = r.reply else {
        panic!("refused")
    };
    assert_eq!(code, ErrorCode::Refused);
    assert!(message.contains("admit_per_hop"), "{message}");
    // Through rtlan and FIFO switches: no analysis joins the two.
    let Reply::Error { code, message, .. } =
        per_hop(&mut m, spec("A", "D", 1_000_000, 3028, 1514)).unwrap_err()
    else {
        panic!("refused")
    };
    assert_eq!(code, ErrorCode::Refused);
    assert!(
        message.contains("both FIFO switches and rtlan"),
        "{message}"
    );
    // Best effort: not signalled per hop either.
    let r = m.handle_request(
        Instant::ZERO,
        Request {
            id: 3,
            op: Op::BestEffort(BestEffortSpec {
                src: "A".into(),
                rate_bps: 1_000_000,
                max_packet: 1514,
                shaping_interval_us: None,
                burst_bytes: Some(3028),
            }),
        },
    );
    assert!(!r.ok, "{r:?}");
    // A SETUP cannot carry a packet above 65535 bytes.
    let Reply::Error { code, .. } =
        per_hop(&mut m, spec("A", "B", 1_000_000, 70_000, 70_000)).unwrap_err()
    else {
        panic!("refused")
    };
    assert_eq!(code, ErrorCode::BadRequest);
    // A standing reservation is not signalled per hop: the manager does not start.
    assert!(Manager::new(chain("wheel", ""), standing_config()).is_err());
}

#[test]
fn restore_rebooks_connections_across_rtlan_switches() {
    let mut m = manager("cyclic");
    let (a, _) = per_hop(&mut m, spec("A", "B", 30_000_000, 2084, 1042)).expect("admitted");
    let (c, _) = per_hop(&mut m, spec("C", "B", 5_000_000, 484, 242)).expect("admitted");
    let state = m.snapshot();
    let text = serde_json::to_string(&state).expect("serialises");
    let mut again = manager("cyclic");
    let refused = again.restore(serde_json::from_str(&text).expect("parses"));
    assert!(refused.is_empty(), "{refused:?}");
    for id in [a, c] {
        assert_eq!(again.delay_bound_ns(id), m.delay_bound_ns(id));
    }
    assert_eq!(topology_ports(&mut again), topology_ports(&mut m));
    let (next, _) = per_hop(&mut again, spec("A", "B", 1_000_000, 1514, 1514)).expect("fits");
    assert!(next > c, "ids are not reused");
}

#[test]
fn admit_per_hop_json() {
    let line = r#"{"id":9,"op":"admit_per_hop","src":"A","dst":"B","rate_bps":1000000,"max_packet":1514,"burst_bytes":3028}"#;
    let req: Request = serde_json::from_str(line).expect("parses");
    assert!(matches!(req.op, Op::AdmitPerHop(ref s) if s.src == "A"));
    let v = serde_json::to_value(Violation::CycleWork {
        switch: "s1".into(),
        to: "s2".into(),
        work_bits: 1,
        budget_bits: 2,
    })
    .expect("serialises");
    assert_eq!(v["constraint"], "cycle_work");
}

#[test]
fn a_lab_topologys_rtlan_switch_gets_the_switchs_defaults() {
    let lab = "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n\
               [[switch]]\nname = \"s1\"\nkind = \"rtlan\"\n\
               [[link]]\nends = [\"a\", \"s1\"]\nrate = \"100mbit\"\ndelay = \"3us\"\n\
               [[link]]\nends = [\"b\", \"s1\"]\nrate = \"100mbit\"\n";
    let model = rtlan_topology::Topology::from_str(lab, "lab.toml").expect("valid lab");
    let topo = Topology::from_model(&model).expect("an rtlan switch");
    let spec = topo.rtlan_switch("s1").expect("modelled as rtlan");
    let defaults = crate::switch::ServerParams::default();
    assert_eq!(
        spec.params(),
        crate::switch::ServerParams {
            link_delay: std::time::Duration::from_micros(3),
            ..defaults
        }
    );
    assert_eq!(defaults.scheduler, crate::egress::SchedulerKind::Cyclic);
    assert_eq!(defaults.cycle_time, std::time::Duration::from_millis(10));
    assert_eq!(
        defaults.lateness_budget,
        std::time::Duration::from_micros(400)
    );
    assert_eq!((defaults.cap_percent, defaults.max_frame_bytes), (60, 1518));
    assert_eq!(topo.switches[0].buffer_bytes, 64 << 20);
    // Described as both kinds, or with an effective rate the switch does not use: refused.
    let both = lab.replace(
        "kind = \"rtlan\"\n",
        "kind = \"rtlan\"\nscheduler = \"wheel\"\nt_mux = \"5us\"\n",
    );
    let model = rtlan_topology::Topology::from_str(&both, "lab.toml").expect("valid lab");
    assert!(matches!(
        Topology::from_model(&model),
        Err(TopologyError::Ambiguous { .. })
    ));
    let effective = lab.replace("delay = \"3us\"", "effective_rate = \"98mbit\"");
    let model = rtlan_topology::Topology::from_str(&effective, "lab.toml").expect("valid lab");
    assert!(matches!(
        Topology::from_model(&model),
        Err(TopologyError::Ambiguous { .. })
    ));
}
