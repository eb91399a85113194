//! Topologies with routers: segments, subnets, addresses, gateways and static routes
//! (docs/lab.md "Routers", docs/qsr.md §2.3).

use std::collections::HashMap;
use std::net::Ipv4Addr;

use proptest::prelude::*;

use super::*;

fn ok(text: &str) -> Topology {
    match Topology::from_str(text, "t.toml") {
        Ok(t) => t,
        Err(e) => panic!("unexpected error: {e}"),
    }
}

fn err(text: &str) -> String {
    match Topology::from_str(text, "t.toml") {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

fn ip(s: &str) -> Ipv4Addr {
    s.parse().unwrap()
}

/// a on s1 behind r1; r1, r2, r3 in a triangle; b on r2, c on r3.
const TRIANGLE: &str = r#"
[[host]]
name = "a"
[[host]]
name = "b"
[[host]]
name = "c"
[[switch]]
name = "s1"
[[router]]
name = "r1"
[[router]]
name = "r2"
[[router]]
name = "r3"
[[link]]
ends = ["a", "s1"]
[[link]]
ends = ["s1", "r1"]
[[link]]
ends = ["r1", "r2"]
[[link]]
ends = ["r2", "r3"]
[[link]]
ends = ["r1", "r3"]
[[link]]
ends = ["b", "r2"]
[[link]]
ends = ["r3", "c"]
"#;

#[test]
fn a_router_triangle_gets_subnets_addresses_gateways_and_shortest_routes() {
    let t = ok(TRIANGLE);
    let subnets: Vec<String> = t.segments.iter().map(|s| s.to_string()).collect();
    assert_eq!(
        subnets,
        [
            "198.18.0.0/24",
            "198.18.1.0/24",
            "198.18.2.0/24",
            "198.18.3.0/24",
            "198.18.4.0/24",
            "198.18.5.0/24"
        ]
    );
    let a = t.host("a").unwrap();
    assert_eq!((a.ip, a.prefix_len), (ip("198.18.0.101"), 24));
    assert_eq!(a.gateway, Some(ip("198.18.0.1")));
    assert_eq!(t.host("b").unwrap().ip, ip("198.18.4.101"));
    assert_eq!(t.host("b").unwrap().gateway, Some(ip("198.18.4.1")));
    assert_eq!(t.host("c").unwrap().gateway, Some(ip("198.18.5.1")));
    let SwitchKind::Rtlan(o) = &t.switch("s1").unwrap().kind else {
        panic!("rtlan")
    };
    assert_eq!((o.mgmt_ip, o.mgmt_prefix_len), (ip("198.18.0.201"), 24));

    let ports = |r: &str| -> Vec<(String, Ipv4Addr, usize)> {
        t.router(r)
            .unwrap()
            .ports
            .iter()
            .map(|p| (p.ifname.clone(), p.ip, p.segment))
            .collect()
    };
    let p = |i: &str, a: &str, s| (i.to_string(), ip(a), s);
    assert_eq!(
        ports("r1"),
        [
            p("p0", "198.18.0.1", 0),
            p("p1", "198.18.1.1", 1),
            p("p2", "198.18.3.1", 3)
        ]
    );
    assert_eq!(
        ports("r2"),
        [
            p("p0", "198.18.1.2", 1),
            p("p1", "198.18.2.1", 2),
            p("p2", "198.18.4.1", 4)
        ]
    );
    assert_eq!(
        ports("r3"),
        [
            p("p0", "198.18.2.2", 2),
            p("p1", "198.18.3.2", 3),
            p("p2", "198.18.5.1", 5)
        ]
    );
    let routes = |r: &str| -> Vec<(String, Ipv4Addr, u32)> {
        t.router(r)
            .unwrap()
            .routes
            .iter()
            .map(|x| {
                (
                    format!("{}/{}", x.prefix, x.prefix_len),
                    x.gateway,
                    x.metric,
                )
            })
            .collect()
    };
    let q = |n: &str, g: &str, m| (n.to_string(), ip(g), m);
    // 198.18.2.0/24 (r2–r3) is one router away through r2 or r3: r2 sorts first.
    assert_eq!(
        routes("r1"),
        [
            q("198.18.2.0/24", "198.18.1.2", 2),
            q("198.18.4.0/24", "198.18.1.2", 2),
            q("198.18.5.0/24", "198.18.3.2", 2)
        ]
    );
    assert_eq!(
        routes("r2"),
        [
            q("198.18.0.0/24", "198.18.1.1", 2),
            q("198.18.3.0/24", "198.18.1.1", 2),
            q("198.18.5.0/24", "198.18.2.2", 2)
        ]
    );
    assert_eq!(
        t.node_names().collect::<Vec<_>>(),
        ["a", "b", "c", "s1", "r1", "r2", "r3"]
    );
    assert!(t.is_host("a") && !t.is_host("r1") && t.has_node("r2"));
    assert!(t
        .routers
        .iter()
        .all(|r| r.kind == RouterKind::Rtlan && r.rsvp));
    // Routers carry no control-protocol keys.
    assert!(!t.link_authenticated("s1", "r1"));
}

#[test]
fn without_routers_nothing_changes() {
    let t = ok("[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\nends = [\"a\", \"b\"]\n");
    assert!(t.routers.is_empty() && t.segments.is_empty());
    let a = t.host("a").unwrap();
    assert_eq!(
        (a.ip, a.prefix_len, a.gateway),
        (ip("198.18.0.1"), 16, None)
    );
}

#[test]
fn an_explicit_address_sets_its_segments_subnet() {
    let t = ok(r#"
[[host]]
name = "a"
ip = "10.1.0.5"
[[host]]
name = "b"
[[host]]
name = "c"
[[switch]]
name = "s1"
[[router]]
name = "r1"
[[link]]
ends = ["a", "s1"]
[[link]]
ends = ["b", "s1"]
[[link]]
ends = ["s1", "r1"]
[[link]]
ends = ["r1", "c"]
"#);
    assert_eq!(t.segments[0].to_string(), "10.1.0.0/24");
    assert_eq!(t.segments[1].to_string(), "198.18.0.0/24");
    assert_eq!(t.host("a").unwrap().prefix_len, 24);
    assert_eq!(t.host("b").unwrap().ip, ip("10.1.0.101"));
    assert_eq!(t.router("r1").unwrap().ports[0].ip, ip("10.1.0.1"));
    assert_eq!(t.host("c").unwrap().gateway, Some(ip("198.18.0.1")));
}

#[test]
fn an_automatic_subnet_skips_an_explicit_one() {
    let t = ok(r#"
[[host]]
name = "a"
[[host]]
name = "b"
ip = "198.18.0.9"
[[router]]
name = "r1"
[[link]]
ends = ["a", "r1"]
[[link]]
ends = ["r1", "b"]
"#);
    assert_eq!(t.segments[0].to_string(), "198.18.1.0/24");
    assert_eq!(t.segments[1].to_string(), "198.18.0.0/24");
    // b took .9; the router port takes .1 all the same.
    assert_eq!(t.router("r1").unwrap().ports[1].ip, ip("198.18.0.1"));
}

const TWO: &str = "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n";

#[test]
fn router_errors_name_their_line() {
    let e = err(
        "[[host]]\nname = \"a\"\nip = \"10.0.0.1\"\n[[host]]\nname = \"b\"\nip = \"10.9.0.1\"\n[[switch]]\nname = \"s1\"\n[[router]]\nname = \"r1\"\n[[link]]\nends = [\"a\", \"s1\"]\n[[link]]\nends = [\"b\", \"s1\"]\n[[link]]\nends = [\"s1\", \"r1\"]\n"
    );
    assert!(
        e.starts_with("t.toml:6:6: bad IP address `10.9.0.1/24`")
            && e.contains("10.0.0.0/24 (from `a`)"),
        "{e}"
    );
    let e = err("[[host]]\nname = \"a\"\n[[router]]\nname = \"r1\"\n[[router]]\nname = \"r2\"\n[[link]]\nends = [\"a\", \"r1\"]\n");
    assert_eq!(e, "t.toml:6:8: router `r2` has no link");
    let e = err(&format!(
        "{TWO}[[switch]]\nname = \"s1\"\n[[router]]\nname = \"r1\"\n[[link]]\nends = [\"a\", \"s1\"]\n[[link]]\nends = [\"s1\", \"r1\"]\n[[link]]\nends = [\"b\", \"s1\"]\n[[link]]\nends = [\"r1\", \"b\"]\n"
    ));
    assert_eq!(
        e,
        "t.toml:16:15: host `b` already has a link (line 14); a host has exactly one link"
    );
    let e = err(&format!(
        "{TWO}[[switch]]\nname = \"s1\"\n[[switch]]\nname = \"s2\"\n[[router]]\nname = \"r1\"\n[[link]]\nends = [\"a\", \"s1\"]\n[[link]]\nends = [\"s1\", \"s2\"]\n[[link]]\nends = [\"s1\", \"r1\"]\n[[link]]\nends = [\"r1\", \"s2\"]\n[[link]]\nends = [\"b\", \"s2\"]\n"
    ));
    assert_eq!(
        e,
        "t.toml:18:8: router `r1` already has a port on this segment (line 16); a router has one port per subnet"
    );
    let e = err(&format!(
        "{TWO}[[router]]\nname = \"r1\"\nospf = \"bird\"\n[[router]]\nname = \"r2\"\n[[link]]\nends = [\"a\", \"r1\"]\n[[link]]\nends = [\"r1\", \"r2\"]\n[[link]]\nends = [\"r2\", \"b\"]\n"
    ));
    assert!(
        e.starts_with("t.toml:9:8: `ospf` is set on router `r1` but not on `r2`"),
        "{e}"
    );
    let e = err(&format!(
        "{TWO}[[router]]\nname = \"r1\"\nospf = \"quagga\"\n[[link]]\nends = [\"a\", \"r1\"]\n[[link]]\nends = [\"r1\", \"b\"]\n"
    ));
    assert_eq!(
        e,
        "t.toml:7:8: bad `ospf`: `quagga` (expected \"bird\" or \"frr\")"
    );
    let e = err(&format!(
        "{TWO}[[router]]\nname = \"r1\"\nkind = \"cisco\"\n[[link]]\nends = [\"a\", \"r1\"]\n"
    ));
    assert_eq!(
        e,
        "t.toml:7:8: bad `kind`: `cisco` (expected \"rtlan\" or \"linux-router\")"
    );
    let e = err(&format!(
        "{TWO}[[router]]\nname = \"r1\"\nkind = \"linux-router\"\nrsvp = true\n[[link]]\nends = [\"a\", \"r1\"]\n"
    ));
    assert!(e.starts_with("t.toml:8:8: bad `rsvp`"), "{e}");
    let e = err("[[host]]\nname = \"a\"\n[[router]]\nname = \"a\"\n");
    assert!(e.contains("duplicate name `a`"), "{e}");
    let e = err("[[host]]\nname = \"a\"\n[[router]]\nname = \"r1\"\n[[link]]\nends = [\"a\", \"r1\"]\nrate = \"1mbps\"\n");
    assert!(e.starts_with("t.toml:7:8: bad rate"), "{e}");
}

#[test]
fn a_network_file_refuses_routers_by_name() {
    let e = Topology::network_from_str(
        "[[switch]]\nname = \"s1\"\nt_mux = \"1us\"\nbuffer = \"1MiB\"\n[[router]]\nname = \"r1\"\n[[link]]\nends = [\"s1\", \"r1\"]\nrate = \"1gbit\"\n",
        "n.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.starts_with("n.toml:6:8: routers are not analysed yet"),
        "{e}"
    );
}

#[test]
fn with_ospf_routers_get_no_static_routes() {
    let t = ok(&TRIANGLE.replace(
        "[[router]]\nname = \"r1\"\n[[router]]\nname = \"r2\"\n[[router]]\nname = \"r3\"\n",
        "[[router]]\nname = \"r1\"\nospf = \"bird\"\n[[router]]\nname = \"r2\"\nospf = \"bird\"\n[[router]]\nname = \"r3\"\nospf = \"bird\"\n",
    ));
    assert!(t
        .routers
        .iter()
        .all(|r| r.routes.is_empty() && r.ospf == Some(Ospf::Bird)));
    assert_eq!(t.host("b").unwrap().gateway, Some(ip("198.18.4.1")));
}

#[test]
fn parallel_router_links_and_router_loops_are_not_ethernet_loops() {
    let t = ok(&format!(
        "{TWO}[[router]]\nname = \"r1\"\n[[router]]\nname = \"r2\"\n[[link]]\nends = [\"a\", \"r1\"]\n[[link]]\nends = [\"r1\", \"r2\"]\n[[link]]\nends = [\"r2\", \"r1\"]\n[[link]]\nends = [\"r2\", \"b\"]\n"
    ));
    assert_eq!(t.segments.len(), 4);
    // Both links are one router away: the lower segment wins.
    assert_eq!(t.router("r1").unwrap().routes[0].gateway, ip("198.18.1.2"));
}

/// A topology of `n` routers, each with a host, linked along a chain plus `extra` links.
fn random_routers(n: usize, extra: &[(usize, usize)]) -> String {
    let mut s = String::new();
    for i in 0..n {
        s += &format!("[[host]]\nname = \"h{i}\"\n[[router]]\nname = \"r{i}\"\n");
    }
    for i in 0..n {
        s += &format!("[[link]]\nends = [\"h{i}\", \"r{i}\"]\n");
    }
    for i in 1..n {
        s += &format!("[[link]]\nends = [\"r{}\", \"r{i}\"]\n", i - 1);
    }
    for &(a, b) in extra {
        if a % n != b % n {
            s += &format!("[[link]]\nends = [\"r{}\", \"r{}\"]\n", a % n, b % n);
        }
    }
    s
}

proptest! {
    /// From every router, following the static routes reaches every host's segment, each
    /// hop one router closer, in exactly `metric − 1` hops.
    #[test]
    fn static_routes_lead_every_router_to_every_segment(
        n in 2usize..8,
        extra in proptest::collection::vec((0usize..8, 0usize..8), 0..8),
    ) {
        let t = ok(&random_routers(n, &extra));
        let owner: HashMap<Ipv4Addr, &Router> = t
            .routers
            .iter()
            .flat_map(|r| r.ports.iter().map(move |p| (p.ip, r)))
            .collect();
        for r in &t.routers {
            let on: Vec<usize> = r.ports.iter().map(|p| p.segment).collect();
            prop_assert_eq!(r.routes.len() + on.len(), t.segments.len());
            for route in &r.routes {
                let seg = t.segments.iter().position(|s| s.prefix == route.prefix).unwrap();
                let mut at = r;
                let mut hops = 0;
                while !at.ports.iter().any(|p| p.segment == seg) {
                    let next = at.routes.iter().find(|x| x.prefix == route.prefix).unwrap();
                    // The gateway is on a segment of the router that uses it.
                    prop_assert!(at.ports.iter().any(|p| t.segments[p.segment].contains(next.gateway)));
                    at = owner[&next.gateway];
                    hops += 1;
                    prop_assert!(hops <= n);
                }
                prop_assert_eq!(hops + 1, route.metric as usize);
            }
        }
    }
}
