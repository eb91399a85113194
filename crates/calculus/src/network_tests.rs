//! Tests for `network`: hand-computed tandems, feed-forward checks, and lower-bound properties.

use super::*;
use proptest::prelude::*;

fn q(n: i64) -> Q {
    Q::int(n)
}

fn dec(n: i64, d: i64) -> Q {
    Q::new(n as i128, d as i128).unwrap()
}

fn node(rate: i64, lat: i64) -> Node {
    Node {
        name: String::new(),
        service: RateLatency::new(q(rate), q(lat)).unwrap(),
    }
}

fn flow(r: i64, b: i64, path: &[usize]) -> Flow {
    Flow {
        name: String::new(),
        arrival: ArrivalCurve::token_bucket(q(r), q(b)).unwrap(),
        path: path.to_vec(),
    }
}

#[test]
fn two_node_tandem_by_hand() {
    // Nodes β_{10,1}; f = γ_{1,4}, cross c = γ_{2,6}, both over [0, 1].
    // TFA: node 0 sees γ_{3,10}: d0 = 1 + 10/10 = 2, backlog 10 + 3·1 = 13; outputs γ_{1,6},
    // γ_{2,10}; node 1 sees γ_{3,16}: d1 = 2.6. f: 4.6.
    // SFA FIFO: β_{8, 1 + 6/10} ⊗ β_{8, 1 + 10/10} = β_{8, 3.6}: 3.6 + 4/8 = 4.1.
    // SFA blind: β_{8, 1 + 8/8} ⊗ β_{8, 1 + 12/8} = β_{8, 4.5}: 5.0.
    let net = Network {
        nodes: vec![node(10, 1), node(10, 1)],
        flows: vec![flow(1, 4, &[0, 1]), flow(2, 6, &[0, 1])],
    };
    let t = net.tfa().unwrap();
    let n0 = t.nodes[0].clone().unwrap();
    assert_eq!((n0.delay, n0.backlog, n0.load), (q(2), q(13), q(3)));
    assert_eq!(t.nodes[1].clone().unwrap().delay, dec(26, 10));
    assert_eq!(t.flow_delays[0], dec(46, 10));
    let fifo = net.sfa(Multiplexing::Fifo).unwrap();
    let blind = net.sfa(Multiplexing::Blind).unwrap();
    assert_eq!(fifo[0], dec(41, 10));
    assert_eq!(blind[0], q(5));
    // Here SFA-FIFO beats TFA but SFA-blind does not: neither dominates in general.
    assert!(fifo[0] < t.flow_delays[0] && blind[0] > t.flow_delays[0]);
}

#[test]
fn three_node_tandem_by_hand() {
    // f = γ_{1,4} over [0,1,2]; c1 = γ_{2,6} over [0,1]; c2 = γ_{3,3} over [1,2]; nodes β_{10,1}.
    // TFA: d0 = 2; node 1: γ_{1,6}+γ_{2,10}+γ_{3,3} = γ_{6,19}: d1 = 2.9, backlog 25;
    // node 2: γ_{1,8.9} + γ_{3,11.7} = γ_{4,20.6}: d2 = 3.06. f: 7.96.
    // SFA FIFO: β_{8,1.6} ⊗ β_{5,2.3} ⊗ β_{7,2.17} = β_{5,6.07}: + 4/5 = 6.87.
    // SFA blind: β_{8,2} ⊗ β_{5,4.6} ⊗ β_{7,3.1} = β_{5,9.7}: 10.5.
    let net = Network {
        nodes: vec![node(10, 1), node(10, 1), node(10, 1)],
        flows: vec![
            flow(1, 4, &[0, 1, 2]),
            flow(2, 6, &[0, 1]),
            flow(3, 3, &[1, 2]),
        ],
    };
    let t = net.tfa().unwrap();
    assert_eq!(t.nodes[1].clone().unwrap().backlog, q(25));
    assert_eq!(t.nodes[2].clone().unwrap().delay, dec(306, 100));
    assert_eq!(
        t.flow_delays,
        vec![dec(796, 100), dec(49, 10), dec(596, 100)]
    );
    assert_eq!(net.sfa(Multiplexing::Fifo).unwrap()[0], dec(687, 100));
    assert_eq!(net.sfa(Multiplexing::Blind).unwrap()[0], dec(105, 10));
}

#[test]
fn single_node_tfa_beats_sfa() {
    // One node: TFA = T + (b_f + b_c)/R = 2; SFA-FIFO = T + b_c/R + b_f/(R − r_c) = 1.6 + 0.5.
    let net = Network {
        nodes: vec![node(10, 1)],
        flows: vec![flow(1, 4, &[0]), flow(2, 6, &[0])],
    };
    let tfa = net.tfa().unwrap().flow_delays[0];
    let sfa = net.sfa(Multiplexing::Fifo).unwrap()[0];
    assert_eq!((tfa, sfa), (q(2), dec(21, 10)));
}

#[test]
fn feed_forward_order_and_errors() {
    // Paths 2 -> 0 and 0 -> 1: order must put 2 before 0 before 1.
    let net = Network {
        nodes: vec![node(10, 1), node(10, 1), node(10, 1)],
        flows: vec![flow(1, 1, &[2, 0]), flow(1, 1, &[0, 1])],
    };
    assert_eq!(net.topological_order().unwrap(), vec![2, 0, 1]);
    let t = net.tfa().unwrap();
    // Flow 1 at node 1 carries the delay of node 0, which includes flow 0's delayed burst.
    assert_eq!(t.arrivals[1].len(), 2);
    let cyclic = Network {
        nodes: vec![node(10, 1), node(10, 1)],
        flows: vec![flow(1, 1, &[0, 1]), flow(1, 1, &[1, 0])],
    };
    assert_eq!(cyclic.tfa(), Err(NetworkError::Cyclic));
    let bad = Network {
        nodes: vec![node(10, 1)],
        flows: vec![flow(1, 1, &[3])],
    };
    assert!(matches!(bad.tfa(), Err(NetworkError::UnknownNode { .. })));
    let over = Network {
        nodes: vec![node(10, 1)],
        flows: vec![flow(6, 1, &[0]), flow(6, 1, &[0])],
    };
    assert!(matches!(
        over.tfa(),
        Err(NetworkError::Curve { node: 0, .. })
    ));
}

/// A delay the worst case certainly reaches: every node is "delay T_n, then rate R_n, FIFO" (which
/// offers β_{R,T}), and every flow starting at f's first node sends its whole burst at 0, ahead of
/// f's burst. f's last bit then leaves the first node at T_0 + Σ b / R_0 and pays at least T_n at
/// each later node. Also T_total + b_f / R_min (f alone).
fn lower_bound(net: &Network, f: usize) -> Q {
    let fl = &net.flows[f];
    let first = fl.path[0];
    let bursts: Q = crate::rational::sum(
        net.flows
            .iter()
            .filter(|g| g.path[0] == first)
            .map(|g| g.arrival.burst()),
    )
    .unwrap();
    let lat = crate::rational::sum(fl.path.iter().map(|&v| net.nodes[v].service.latency)).unwrap();
    let r0 = net.nodes[first].service.rate;
    let rmin = fl
        .path
        .iter()
        .map(|&v| net.nodes[v].service.rate)
        .min()
        .unwrap();
    let a = lat.add(bursts.div(r0).unwrap()).unwrap();
    let b = lat.add(fl.arrival.burst().div(rmin).unwrap()).unwrap();
    a.max(b)
}

fn arb_tandem() -> impl Strategy<Value = Network> {
    (
        prop::collection::vec((50i64..100, 0i64..4), 2..5),
        prop::collection::vec((1i64..10, 0i64..60, 0usize..5, 1usize..5), 1..6),
    )
        .prop_map(|(nodes, flows)| {
            let n = nodes.len();
            Network {
                nodes: nodes.into_iter().map(|(r, t)| node(r, t)).collect(),
                flows: flows
                    .into_iter()
                    .map(|(r, b, s, len)| {
                        let s = s % n;
                        let e = (s + len).min(n);
                        flow(r, b, &(s..e).collect::<Vec<_>>())
                    })
                    .collect(),
            }
        })
}

proptest! {
    #[test]
    fn all_analyses_are_above_a_reachable_delay(net in arb_tandem()) {
        // Rates: at most 5 flows × 9 < 50: every node is stable.
        let tfa = net.tfa().unwrap();
        let fifo = net.sfa(Multiplexing::Fifo).unwrap();
        let blind = net.sfa(Multiplexing::Blind).unwrap();
        for f in 0..net.flows.len() {
            let lb = lower_bound(&net, f);
            prop_assert!(tfa.flow_delays[f] >= lb, "tfa {} < {}", tfa.flow_delays[f], lb);
            prop_assert!(fifo[f] >= lb, "sfa-fifo {} < {}", fifo[f], lb);
            prop_assert!(blind[f] >= lb, "sfa-blind {} < {}", blind[f], lb);
            // FIFO leftover is never worse than blind leftover.
            prop_assert!(fifo[f] <= blind[f]);
        }
    }

    #[test]
    fn lone_flow_is_tight(r in 1i64..10, b in 0i64..60, hops in 1usize..5) {
        // One flow alone: TFA pays the burst at each hop; SFA pays it once and is exact.
        let net = Network {
            nodes: (0..hops).map(|_| node(20, 1)).collect(),
            flows: vec![flow(r, b, &(0..hops).collect::<Vec<_>>())],
        };
        let sfa = net.sfa(Multiplexing::Blind).unwrap()[0];
        prop_assert_eq!(sfa, lower_bound(&net, 0));
        prop_assert!(net.tfa().unwrap().flow_delays[0] >= sfa);
    }
}
