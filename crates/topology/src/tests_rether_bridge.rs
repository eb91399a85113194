//! RETHER bridges (`kind = "rether-bridge"`, RETHER §2.5): what they may be linked to, their
//! ports, the options they refuse, loops through them and the refusal in network files.

use std::net::Ipv4Addr;

use super::tests::{err_at, ok};
use super::*;

const TWO_SEGMENTS: &str = include_str!("../../../topologies/rether-two-segments.toml");

/// Two segments `g` and `g2`, a host on each, a bridge `br` on `g`, and nodes of every other
/// kind, unlinked: `h` (host), `s` (rtlan switch), `r` (router), `b2` (a second bridge).
const BASE: &str = "[[host]]\nname = \"a\"\n[[host]]\nname = \"h\"\n\
    [[switch]]\nname = \"g\"\nkind = \"segment\"\n[[switch]]\nname = \"g2\"\nkind = \"segment\"\n\
    [[switch]]\nname = \"br\"\nkind = \"rether-bridge\"\n[[switch]]\nname = \"s\"\n\
    [[router]]\nname = \"r\"\n[[switch]]\nname = \"b2\"\nkind = \"rether-bridge\"\n\
    [[link]]\nends = [\"a\", \"g\"]\n[[link]]\nends = [\"br\", \"g\"]\n";

/// Two segments `g` and `g2` with a host each, joined by bridge `br` (`p0` to `g2`, `p1` to `g`: link order).
const TWO: &str = "[[host]]\nname = \"a\"\n[[host]]\nname = \"h\"\n\
    [[switch]]\nname = \"g\"\nkind = \"segment\"\n[[switch]]\nname = \"g2\"\nkind = \"segment\"\n\
    [[switch]]\nname = \"br\"\nkind = \"rether-bridge\"\n\
    [[link]]\nends = [\"br\", \"g2\"]\n[[link]]\nends = [\"a\", \"g\"]\n\
    [[link]]\nends = [\"br\", \"g\"]\n[[link]]\nends = [\"g2\", \"h\"]\n";

/// The 1-based line `text` would give a line appended after it.
fn next_line(text: &str) -> usize {
    text.matches('\n').count() + 1
}

#[test]
fn the_shipped_two_segment_file_resolves_with_the_bridge_on_both() {
    let t = ok(TWO_SEGMENTS);
    assert!(t.is_rether_bridge("br"));
    assert!(!t.is_rether_bridge("s1") && !t.is_rether_bridge("a"));
    assert_eq!(
        t.switch("br").map(|s| &s.kind),
        Some(&SwitchKind::RetherBridge)
    );
    assert_eq!(
        t.switch_ports("br"),
        vec![
            ("p0".to_string(), "s1".to_string()),
            ("p1".to_string(), "s2".to_string())
        ]
    );
    assert_eq!(
        t.switch_ports("s1")[3],
        ("p3".to_string(), "br".to_string())
    );
    assert_eq!(
        t.switch_ports("s2")[3],
        ("p3".to_string(), "br".to_string())
    );
    assert!(t.links.iter().all(|l| l.rate_bps == Some(10_000_000)));
    assert!(!t.link_authenticated("br", "s1"));
    // One flat layer-2 network: no routers, no IP segments, every host in 198.18.0.0/16.
    assert!(t.segments.is_empty() && t.routers.is_empty());
    let ips: Vec<(Ipv4Addr, u8, Option<Ipv4Addr>)> = t
        .hosts
        .iter()
        .map(|h| (h.ip, h.prefix_len, h.gateway))
        .collect();
    let want: Vec<(Ipv4Addr, u8, Option<Ipv4Addr>)> = (1..=6)
        .map(|n| (Ipv4Addr::new(198, 18, 0, n), 16, None))
        .collect();
    assert_eq!(ips, want);
}

#[test]
fn a_bridge_is_linked_to_segments_only() {
    // (ends, the bridge named, what the other end is, its name); the first bridge of a link is
    // the one named.
    for (a, b, bridge, what, other) in [
        ("br", "h", "br", "host", "h"),
        ("h", "br", "br", "host", "h"),
        ("br", "s", "br", "switch", "s"),
        ("s", "br", "br", "switch", "s"),
        ("br", "r", "br", "router", "r"),
        ("r", "br", "br", "router", "r"),
        ("br", "b2", "br", "rether-bridge", "b2"),
        ("b2", "br", "b2", "rether-bridge", "br"),
    ] {
        let text = format!("{BASE}[[link]]\nends = [\"{a}\", \"{b}\"]\n");
        let e = err_at(
            &text,
            next_line(BASE) + 1,
            8,
            &format!(
                "rether-bridge `{bridge}` is linked to {what} `{other}`; a rether-bridge's links \
                 go to segments"
            ),
        );
        assert!(matches!(e, TopologyError::RetherBridgeLink { .. }), "{e:?}");
    }
}

#[test]
fn a_bridge_has_one_port_per_segment() {
    let text = format!("{BASE}[[link]]\nends = [\"g\", \"br\"]\n");
    let e = err_at(
        &text,
        next_line(BASE) + 1,
        8,
        "rether-bridge `br` is already linked to segment `g` (line 24); a bridge has one port per segment",
    );
    assert!(
        matches!(e, TopologyError::RetherBridgeTwoPorts { .. }),
        "{e:?}"
    );
}

#[test]
fn a_bridge_joins_two_segments_at_least() {
    let one = "[[host]]\nname = \"a\"\n[[switch]]\nname = \"g\"\nkind = \"segment\"\n\
               [[switch]]\nname = \"br\"\nkind = \"rether-bridge\"\n\
               [[link]]\nends = [\"a\", \"g\"]\n[[link]]\nends = [\"br\", \"g\"]\n";
    let e = err_at(
        one,
        7,
        8,
        "rether-bridge `br` has one link; a bridge joins two segments",
    );
    assert!(
        matches!(e, TopologyError::RetherBridgeOneSegment { .. }),
        "{e:?}"
    );
    let none = "[[switch]]\nname = \"br\"\nkind = \"rether-bridge\"\n";
    err_at(none, 2, 8, "switch `br` has no link");
}

#[test]
fn segments_take_bridges_as_stations_but_not_other_switches() {
    let t = ok(TWO);
    assert_eq!(
        t.switch_ports("br"),
        vec![
            ("p0".to_string(), "g2".to_string()),
            ("p1".to_string(), "g".to_string())
        ],
        "ports in link order"
    );
    assert_eq!(
        t.switch_ports("g2")[0],
        ("p0".to_string(), "br".to_string())
    );
    // The other kinds still may not be a segment's station.
    let s = format!("{TWO}[[switch]]\nname = \"s\"\n[[link]]\nends = [\"g2\", \"s\"]\n");
    err_at(
        &s,
        next_line(TWO) + 3,
        8,
        "segment `g2` is linked to switch `s`; a segment's stations are hosts (each behind its RETHER bump) and rether-bridges",
    );
}

#[test]
fn options_of_other_kinds_are_refused_on_a_bridge() {
    let br = "[[switch]]\nname = \"br\"\nkind = \"rether-bridge\"\n";
    for (option, column, needle) in [
        (
            "rate = \"10mbit\"",
            8,
            "`rate` only applies to switches of kind \"segment\"",
        ),
        (
            "propagation = \"1us\"",
            15,
            "`propagation` only applies to switches of kind \"segment\"",
        ),
        (
            "seed = 3",
            8,
            "`seed` only applies to switches of kind \"segment\"",
        ),
        (
            "trt = \"20ms\"",
            7,
            "`trt` only applies to switches of kind \"segment\"",
        ),
        (
            "cycle_time = \"1ms\"",
            14,
            "`cycle_time` only applies to switches of kind \"rtlan\"",
        ),
        ("mgmt_ip = \"198.18.255.9\"", 11, "`mgmt_ip` only applies"),
        ("stp = true", 7, "`stp` only applies"),
        ("auth = true", 8, "`auth` only applies"),
        ("t_mux = \"10us\"", 9, "\"rtlan\" and \"linux-bridge\""),
        ("buffer = \"1MB\"", 10, "\"rtlan\" and \"linux-bridge\""),
    ] {
        let e = err_at(&format!("{br}{option}\n"), 4, column, needle);
        assert!(
            matches!(e, TopologyError::OptionNotForKind { .. }),
            "{option}: {e:?}"
        );
    }
    err_at(
        "[[switch]]\nname = \"s\"\nkind = \"bus\"\n",
        3,
        8,
        "\"segment\" or \"rether-bridge\"",
    );
}

#[test]
fn two_bridges_between_the_same_segments_close_a_loop() {
    let text = format!(
        "{TWO}[[switch]]\nname = \"b2\"\nkind = \"rether-bridge\"\n[[link]]\nends = [\"b2\", \"g\"]\n"
    );
    let looped = format!("{text}[[link]]\nends = [\"b2\", \"g2\"]\n");
    let e = err_at(&looped, next_line(&text) + 1, 8, "link b2–g2 closes a loop");
    assert!(matches!(e, TopologyError::Loop { .. }), "{e:?}");
    // A second bridge to a third segment is a tree, not a loop.
    let tree = format!(
        "{text}[[switch]]\nname = \"g3\"\nkind = \"segment\"\n[[link]]\nends = [\"b2\", \"g3\"]\n"
    );
    assert_eq!(ok(&tree).switch_ports("b2").len(), 2);
}

#[test]
fn network_files_refuse_bridges() {
    let e = Topology::network_from_str(
        "[[switch]]\nname = \"br\"\nkind = \"rether-bridge\"\n[[link]]\nends = [\"a\", \"br\"]\nrate = \"10mbit\"\n",
        "n.toml",
    )
    .expect_err("lab only");
    let msg = e.to_string();
    assert!(msg.starts_with("n.toml:3:8: "), "{msg}");
    assert!(
        msg.contains("`kind = \"rether-bridge\"` is lab-only"),
        "{msg}"
    );
    assert!(
        matches!(e, TopologyError::RetherBridgesNotAnalysed { .. }),
        "{e:?}"
    );
}

#[test]
fn the_kind_round_trips_through_json() {
    let t = ok(TWO_SEGMENTS);
    let text = serde_json::to_string(&t).expect("serialise");
    assert!(text.contains("\"kind\":\"rether-bridge\""), "{text}");
    let back: Topology = serde_json::from_str(&text).expect("parse");
    assert_eq!(back, t);
}
