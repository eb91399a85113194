//! Shared segments (`kind = "segment"`): options, defaults, what may be linked to them, and the
//! refusal in network files.

use std::time::Duration;

use super::tests::{err_at, ok};
use super::*;

const FIVE: &str = r#"
[[host]]
name = "h1"
[[host]]
name = "h2"
[[switch]]
name = "seg"
kind = "segment"
rate = "10Mbit/s"
propagation = "2us"
seed = 7
trt = "20ms"
[[link]]
ends = ["h1", "seg"]
[[link]]
ends = ["seg", "h2"]
rate = "10mbit"
"#;

#[test]
fn a_segment_resolves_with_its_rate_on_every_link() {
    let t = ok(FIVE);
    let seg = t.segment("seg").expect("a segment");
    assert_eq!(seg.rate_bps, 10_000_000);
    assert_eq!(seg.propagation, Some(Duration::from_micros(2)));
    assert_eq!(seg.seed, Some(7));
    assert_eq!(seg.trt, Some(Duration::from_millis(20)));
    assert!(t.links.iter().all(|l| l.rate_bps == Some(10_000_000)));
    assert_eq!(
        t.switch_ports("seg"),
        vec![
            ("p0".to_string(), "h1".to_string()),
            ("p1".to_string(), "h2".to_string())
        ]
    );
    assert!(t.segment("h1").is_none());
    assert!(!t.link_authenticated("h1", "seg"));
}

#[test]
fn the_rate_defaults_to_ten_megabit() {
    let t = ok(
        "[[host]]\nname = \"a\"\n[[switch]]\nname = \"s\"\nkind = \"segment\"\n\
                [[link]]\nends = [\"a\", \"s\"]\n",
    );
    let seg = t.segment("s").expect("segment");
    assert_eq!(seg.rate_bps, DEFAULT_SEGMENT_RATE_BPS);
    assert_eq!((seg.propagation, seg.seed), (None, None));
    assert_eq!(t.links[0].rate_bps, Some(DEFAULT_SEGMENT_RATE_BPS));
}

#[test]
fn options_of_other_kinds_and_bad_values_are_refused_where_written() {
    let seg = "[[switch]]\nname = \"s\"\nkind = \"segment\"\n";
    for (option, line, column, needle) in [
        ("rate = \"fast\"", 4, 8, "bad rate"),
        ("rate = \"0bit\"", 4, 8, "rate"),
        ("propagation = \"3\"", 4, 15, "bad `propagation`"),
        ("seed = -1", 4, 8, ""),
        ("trt = \"0ms\"", 4, 7, "bad `trt`"),
        ("trt = \"2s\"", 4, 7, "at most 1s"),
        (
            "cycle_time = \"1ms\"",
            4,
            14,
            "`cycle_time` only applies to switches of kind \"rtlan\"",
        ),
        (
            "mgmt_ip = \"198.18.255.9\"",
            4,
            11,
            "`mgmt_ip` only applies",
        ),
        ("stp = true", 4, 7, "`stp` only applies"),
        ("t_mux = \"10us\"", 4, 9, "\"rtlan\" and \"linux-bridge\""),
        ("colour = \"red\"", 4, 1, "colour"),
    ] {
        err_at(&format!("{seg}{option}\n"), line, column, needle);
    }
    for kind in ["rtlan", "linux-bridge"] {
        for (option, column) in [
            ("rate = \"10mbit\"", 8),
            ("propagation = \"1us\"", 15),
            ("seed = 3", 8),
            ("trt = \"20ms\"", 7),
        ] {
            let key = option.split(' ').next().unwrap_or_default();
            err_at(
                &format!("[[switch]]\nname = \"s\"\nkind = \"{kind}\"\n{option}\n"),
                4,
                column,
                &format!("`{key}` only applies to switches of kind \"segment\""),
            );
        }
    }
    err_at(
        "[[switch]]\nname = \"s\"\nkind = \"bus\"\n",
        3,
        8,
        "\"segment\"",
    );
}

#[test]
fn a_segment_carries_hosts_only_at_its_own_rate() {
    let base = "[[host]]\nname = \"a\"\n[[switch]]\nname = \"g\"\nkind = \"segment\"\n\
                [[switch]]\nname = \"s\"\n[[router]]\nname = \"r\"\n[[switch]]\nname = \"g2\"\nkind = \"segment\"\n\
                [[link]]\nends = [\"a\", \"g\"]\n";
    for (other, what) in [("s", "switch"), ("r", "router"), ("g2", "segment")] {
        err_at(
            &format!("{base}[[link]]\nends = [\"g\", \"{other}\"]\n"),
            16,
            8,
            &format!("segment `g` is linked to {what} `{other}`"),
        );
    }
    let one = "[[host]]\nname = \"a\"\n[[switch]]\nname = \"g\"\nkind = \"segment\"\n[[link]]\nends = [\"a\", \"g\"]\n";
    err_at(
        &format!("{one}rate = \"100mbit\"\n"),
        8,
        8,
        "runs at the segment's rate",
    );
    err_at(
        &format!("{one}delay = \"1us\"\n"),
        8,
        9,
        "`propagation` is its delay",
    );
}

#[test]
fn network_files_refuse_segments() {
    let e = Topology::network_from_str(
        "[[switch]]\nname = \"g\"\nkind = \"segment\"\n[[link]]\nends = [\"a\", \"g\"]\nrate = \"10mbit\"\n",
        "n.toml",
    )
    .expect_err("lab only");
    let msg = e.to_string();
    assert!(msg.starts_with("n.toml:3:8: "), "{msg}");
    assert!(msg.contains("lab-only"), "{msg}");
}

#[test]
fn the_kind_round_trips_through_json() {
    let t = ok(FIVE);
    let text = serde_json::to_string(&t).expect("serialise");
    assert!(text.contains("\"kind\":\"segment\""), "{text}");
    let back: Topology = serde_json::from_str(&text).expect("parse");
    assert_eq!(back, t);
}
