//! Property: on any connected graph of bridges (parallel links included), with any priorities
//! and port costs, the network settles on the lowest bridge id as root, every bridge's root path
//! cost is its shortest-path cost, and the links with both ends forwarding form a spanning tree.

use proptest::prelude::*;

use super::*;

/// Bridges, priorities, per-port costs (indexed like the ports `Net` creates) and links.
#[derive(Debug, Clone)]
struct Graph {
    priorities: Vec<u16>,
    links: Vec<(End, End)>,
    costs: Vec<Vec<u32>>,
}

fn graph() -> impl Strategy<Value = Graph> {
    (2usize..7).prop_flat_map(|n| {
        let tree = proptest::collection::vec(any::<prop::sample::Index>(), n - 1);
        let extra = proptest::collection::vec((0..n, 0..n), 0..5);
        let priorities =
            proptest::collection::vec(prop::sample::select(vec![0x1000u16, 0x8000, 0x9000]), n);
        let costs = proptest::collection::vec(1u32..50, 64);
        (Just(n), tree, extra, priorities, costs).prop_map(|(n, tree, extra, priorities, costs)| {
            // Bridge i > 0 hangs off a random earlier bridge: connected.
            let mut pairs: Vec<(usize, usize)> = tree
                .iter()
                .enumerate()
                .map(|(i, ix)| (i + 1, ix.index(i + 1)))
                .collect();
            pairs.extend(extra.into_iter().filter(|(a, b)| a != b));
            let mut next_port = vec![0u16; n];
            let mut links = Vec::new();
            for (a, b) in pairs {
                let ea = (a, next_port[a]);
                next_port[a] += 1;
                let eb = (b, next_port[b]);
                next_port[b] += 1;
                links.push((ea, eb));
            }
            let mut k = 0;
            let costs = next_port
                .iter()
                .map(|&ports| {
                    (0..ports)
                        .map(|_| {
                            k += 1;
                            costs[k % costs.len()]
                        })
                        .collect()
                })
                .collect();
            Graph {
                priorities,
                links,
                costs,
            }
        })
    })
}

fn find(parent: &mut [usize], x: usize) -> usize {
    let mut r = x;
    while parent[r] != r {
        r = parent[r];
    }
    parent[x] = r;
    r
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn settles_on_a_shortest_path_spanning_tree(g in graph()) {
        let n = g.priorities.len();
        let mut net = Net::with(n, &g.links, |i, c| {
            c.priority = g.priorities[i];
            for (port, cost) in c.ports.iter_mut().zip(&g.costs[i]) {
                port.path_cost = *cost;
            }
        });
        net.run_until(at(200));

        let root = (0..n).min_by_key(|&i| net.bridges[i].bridge_id()).unwrap();
        net.assert_single_root(root);

        // Shortest root path costs (Bellman-Ford; a hop costs the port of the bridge farther
        // from the root, the port that receives the root's BPDUs).
        let mut dist = vec![u32::MAX; n];
        dist[root] = 0;
        for _ in 0..n {
            for &((a, pa), (b, pb)) in &g.links {
                if dist[b] != u32::MAX {
                    dist[a] = dist[a].min(dist[b] + g.costs[a][usize::from(pa)]);
                }
                if dist[a] != u32::MAX {
                    dist[b] = dist[b].min(dist[a] + g.costs[b][usize::from(pb)]);
                }
            }
        }
        for (i, b) in net.bridges.iter().enumerate() {
            prop_assert_eq!(b.root_path_cost(), dist[i], "bridge {}", i);
        }

        // Steady state: every port forwards or blocks, each link is active (both ends
        // forwarding) or cut (at least one end blocking), and the active links form a tree.
        prop_assert!(net.ports_in(PortState::Listening).is_empty());
        prop_assert!(net.ports_in(PortState::Learning).is_empty());
        let mut parent: Vec<usize> = (0..n).collect();
        let mut active = 0;
        for &((a, pa), (b, pb)) in &g.links {
            if net.state(a, pa).forwards() && net.state(b, pb).forwards() {
                active += 1;
                let (ra, rb) = (find(&mut parent, a), find(&mut parent, b));
                prop_assert!(ra != rb, "forwarding loop through link {:?}", ((a, pa), (b, pb)));
                parent[ra] = rb;
            }
        }
        prop_assert_eq!(active, n - 1, "the forwarding links span every bridge");
    }
}
