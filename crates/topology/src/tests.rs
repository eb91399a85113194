//! Topology parsing: good files resolve as documented, every error names its line and column.

use std::net::Ipv4Addr;
use std::time::Duration;

use super::parse::parse_cidr;
use super::*;

pub(super) fn ok(text: &str) -> Topology {
    match Topology::from_str(text, "t.toml") {
        Ok(t) => t,
        Err(e) => panic!("unexpected error: {e}"),
    }
}

/// Parses `text`, expects an error, and checks its `line:column` and a piece of its message.
pub(super) fn err_at(text: &str, line: usize, column: usize, needle: &str) -> TopologyError {
    let e = match Topology::from_str(text, "t.toml") {
        Ok(_) => panic!("expected an error containing {needle:?}"),
        Err(e) => e,
    };
    let msg = e.to_string();
    let prefix = format!("t.toml:{line}:{column}: ");
    assert!(
        msg.starts_with(&prefix),
        "want prefix {prefix:?}, got {msg:?}"
    );
    assert!(msg.contains(needle), "want {needle:?} in {msg:?}");
    let at = e.location().expect("parse errors carry a location");
    assert_eq!((at.line, at.column), (line, column));
    e
}

const DEFAULT: &str = r#"
[[host]]
name = "a"
[[host]]
name = "b"
ip = "198.18.0.1/24"
[[host]]
name = "c"
[[switch]]
name = "s1"
[[link]]
ends = ["a", "s1"]
rate = "100mbit"
[[link]]
ends = ["s1", "b"]
[[link]]
ends = ["c", "s1"]
rate = "10mbit"
"#;

#[test]
fn resolves_ports_ips_and_rates() {
    let t = ok(DEFAULT);
    assert!(!t.offloads);
    assert!(!t.ipv6);
    // b took 198.18.0.1 explicitly (with /24), so the automatic addresses skip it.
    assert_eq!(t.host("a").unwrap().ip, Ipv4Addr::new(198, 18, 0, 2));
    assert_eq!(t.host("a").unwrap().prefix_len, 16);
    assert_eq!(t.host("b").unwrap().ip, Ipv4Addr::new(198, 18, 0, 1));
    assert_eq!(t.host("b").unwrap().prefix_len, 24);
    assert_eq!(t.host("c").unwrap().ip, Ipv4Addr::new(198, 18, 0, 3));
    let s1 = t.switch("s1").unwrap();
    let SwitchKind::Rtlan(opts) = &s1.kind else {
        panic!("default kind is rtlan")
    };
    assert_eq!(opts.mgmt_ip, Ipv4Addr::new(198, 18, 255, 1));
    assert_eq!(opts.unknown_unicast, None);
    // Ports in link order, whichever side the switch is written on.
    assert_eq!(
        t.switch_ports("s1"),
        [("p0", "a"), ("p1", "b"), ("p2", "c")].map(|(i, p)| (i.to_string(), p.to_string()))
    );
    assert_eq!(t.links[0].rate_bps, Some(100_000_000));
    assert_eq!(t.links[1].rate_bps, None);
    assert_eq!(t.links[2].ends[0].ifname, "eth0");
    assert_eq!(t.links[2].ends[1].ifname, "p2");
    assert_eq!(t.node_names().collect::<Vec<_>>(), ["a", "b", "c", "s1"]);
}

#[test]
fn rtlan_options_and_lab_table() {
    let t = ok(r#"
[lab]
offloads = true
ipv6 = true
[[host]]
name = "h1"
[[switch]]
name = "sw"
kind = "rtlan"
unknown_unicast = "flood"
mgmt_ip = "10.0.0.1/8"
cycle_time = "5ms"
nrt_queue_bytes = 30000
cpu = 1
scheduler = "wheel"
lateness_budget = "200us"
[[switch]]
name = "br"
kind = "linux-bridge"
[[link]]
ends = ["h1", "sw"]
[[link]]
ends = ["sw", "br"]
"#);
    assert!(t.offloads && t.ipv6);
    let SwitchKind::Rtlan(o) = &t.switch("sw").unwrap().kind else {
        panic!("rtlan")
    };
    assert_eq!(o.unknown_unicast, Some(UnknownUnicast::Flood));
    assert_eq!(
        (o.mgmt_ip, o.mgmt_prefix_len),
        (Ipv4Addr::new(10, 0, 0, 1), 8)
    );
    assert_eq!(o.cycle_time, Some(Duration::from_millis(5)));
    assert_eq!(o.nrt_queue_bytes, Some(30000));
    assert_eq!(o.cpu, Some(1));
    assert_eq!(o.scheduler, Some(SchedulerKind::Wheel));
    assert_eq!(o.lateness_budget, Some(Duration::from_micros(200)));
    assert_eq!(t.switch("br").unwrap().kind, SwitchKind::LinuxBridge);
    assert_eq!(t.switch_ports("br"), [("p0".to_string(), "sw".to_string())]);
    assert_eq!(
        t.switch_ports("sw")[1],
        ("p1".to_string(), "br".to_string())
    );
}

#[test]
fn auto_ips_skip_explicit_ones_and_mgmt_range() {
    let t = ok(r#"
[[host]]
name = "a"
[[host]]
name = "b"
ip = "198.18.255.1"
[[switch]]
name = "s1"
[[switch]]
name = "s2"
mgmt_ip = "198.18.0.1"
[[link]]
ends = ["a", "s1"]
[[link]]
ends = ["b", "s1"]
[[link]]
ends = ["s1", "s2"]
"#);
    assert_eq!(t.host("a").unwrap().ip, Ipv4Addr::new(198, 18, 0, 2));
    let SwitchKind::Rtlan(o) = &t.switch("s1").unwrap().kind else {
        panic!("rtlan")
    };
    assert_eq!(o.mgmt_ip, Ipv4Addr::new(198, 18, 255, 2));
}

#[test]
fn host_to_host_link_is_allowed() {
    let t = ok("[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\nends = [\"a\", \"b\"]\n");
    assert_eq!(t.interfaces("a")[0].1.node, "b");
    assert_eq!(t.interfaces("b")[0].0.ifname, "eth0");
}

#[test]
fn cidr_rules() {
    assert_eq!(
        parse_cidr("198.18.0.7"),
        Ok((Ipv4Addr::new(198, 18, 0, 7), 16))
    );
    assert_eq!(
        parse_cidr("10.1.2.3/31"),
        Ok((Ipv4Addr::new(10, 1, 2, 3), 31))
    );
    assert!(parse_cidr("198.18.0.0/16").unwrap_err().contains("network"));
    assert!(parse_cidr("198.18.255.255")
        .unwrap_err()
        .contains("broadcast"));
    assert!(parse_cidr("198.18.0.1/33").is_err());
    assert!(parse_cidr("198.18.0.1/x").is_err());
    assert!(parse_cidr("127.0.0.1/8").is_err());
    assert!(parse_cidr("224.0.0.1/4").is_err());
    assert!(parse_cidr("198.18.0").is_err());
}

#[test]
fn syntax_error_has_position() {
    err_at("[[host]]\nname = \"a\nx", 2, 10, "invalid basic string");
}

#[test]
fn unknown_field_points_at_key() {
    let e = err_at(
        "[[host]]\nname = \"a\"\ncolour = \"red\"\n",
        3,
        1,
        "unknown field `colour`",
    );
    assert!(matches!(e, TopologyError::Syntax { .. }));
    err_at("[lab]\nofloads = true\n", 2, 1, "unknown field `ofloads`");
    err_at("[[hosts]]\nname = \"a\"\n", 1, 1, "unknown table `hosts`");
}

#[test]
fn wrong_type_and_missing_field() {
    err_at("[[host]]\nname = 7\n", 2, 8, "");
    err_at(
        "[[host]]\nip = \"198.18.0.1\"\n",
        1,
        1,
        "missing field `name`",
    );
    err_at(
        "[[switch]]\nname = \"s\"\nnrt_queue_bytes = -1\n",
        3,
        19,
        "",
    );
}

#[test]
fn empty_file() {
    err_at("# nothing\n", 1, 1, "no hosts, switches or routers");
}

#[test]
fn bad_and_duplicate_names() {
    err_at("[[host]]\nname = \"Alpha\"\n", 2, 8, "bad name `Alpha`");
    err_at("[[host]]\nname = \"abcdefghi\"\n", 2, 8, "bad name");
    err_at("[[host]]\nname = \"1a\"\n", 2, 8, "bad name");
    err_at("[[host]]\nname = \"\"\n", 2, 8, "bad name");
    err_at(
        "[[host]]\nname = \"a\"\n[[switch]]\nname = \"a\"\n",
        4,
        8,
        "duplicate name `a` (first defined at line 2)",
    );
}

#[test]
fn bad_kind_and_options() {
    err_at(
        "[[switch]]\nname = \"s\"\nkind = \"hub\"\n",
        3,
        8,
        "unknown switch kind `hub`",
    );
    err_at(
        "[[switch]]\nname = \"s\"\nkind = \"linux-bridge\"\ncycle_time = \"1ms\"\n",
        4,
        14,
        "`cycle_time` only applies",
    );
    err_at(
        "[[switch]]\nname = \"s\"\nscheduler = \"fifo\"\n",
        3,
        13,
        "bad `scheduler`: `fifo` (expected \"cyclic\", \"wheel\" or \"qsr\")",
    );
    err_at(
        "[[switch]]\nname = \"s\"\nlateness_budget = \"200\"\n",
        3,
        19,
        "bad `lateness_budget`",
    );
    err_at(
        "[[switch]]\nname = \"s\"\nkind = \"linux-bridge\"\nscheduler = \"wheel\"\n",
        4,
        13,
        "`scheduler` only applies",
    );
    err_at(
        "[[switch]]\nname = \"s\"\nunknown_unicast = \"drop\"\n",
        3,
        19,
        "bad `unknown_unicast`",
    );
    err_at(
        "[[switch]]\nname = \"s\"\ncycle_time = \"10\"\n",
        3,
        14,
        "bad `cycle_time`",
    );
    err_at(
        "[[switch]]\nname = \"s\"\ncycle_time = \"0ms\"\n",
        3,
        14,
        "greater than zero",
    );
    err_at(
        "[[switch]]\nname = \"s\"\nnrt_queue_bytes = 0\n",
        3,
        19,
        "greater than zero",
    );
}

#[test]
fn bad_and_duplicate_ips() {
    err_at(
        "[[host]]\nname = \"a\"\nip = \"300.1.1.1\"\n",
        3,
        6,
        "bad IP address `300.1.1.1`",
    );
    err_at(
        "[[switch]]\nname = \"s\"\nmgmt_ip = \"198.18.0.0\"\n",
        3,
        11,
        "network address",
    );
    err_at(
        "[[host]]\nname = \"a\"\nip = \"198.18.0.9\"\n[[host]]\nname = \"b\"\nip = \"198.18.0.9/24\"\n",
        6,
        6,
        "IP address 198.18.0.9 is already used by `a`",
    );
    err_at(
        "[[host]]\nname = \"a\"\nip = \"198.18.0.9\"\n[[switch]]\nname = \"s\"\nmgmt_ip = \"198.18.0.9\"\n",
        6,
        11,
        "already used by `a`",
    );
}

const TWO: &str = "[[host]]\nname = \"a\"\n[[switch]]\nname = \"s1\"\n[[switch]]\nname = \"s2\"\n";

#[test]
fn link_errors() {
    let t = |links: &str| format!("{TWO}{links}");
    err_at(
        &t("[[link]]\nends = [\"a\", \"s9\"]\n"),
        8,
        14,
        "link end \"s9\" is not a host or switch",
    );
    err_at(
        &t("[[link]]\nends = [\"a\"]\n"),
        8,
        8,
        "exactly two ends, found 1",
    );
    err_at(
        &t("[[link]]\nends = [\"a\", \"s1\", \"s2\"]\n"),
        8,
        8,
        "found 3",
    );
    err_at(&t("[[link]]\nends = [\"s1\", \"s1\"]\n"), 8, 8, "to itself");
    err_at(
        &t("[[link]]\nends = [\"a\", \"s1\"]\nrate = \"fast\"\n"),
        9,
        8,
        "bad rate",
    );
    err_at(
        &t("[[link]]\nends = [\"a\", \"s1\"]\n[[link]]\nends = [\"s2\", \"a\"]\n"),
        10,
        15,
        "host `a` already has a link (line 8)",
    );
    err_at(
        &t("[[link]]\nends = [\"a\", \"s1\"]\n[[link]]\nends = [\"s1\", \"s2\"]\n[[link]]\nends = [\"s2\", \"s1\"]\n"),
        12,
        8,
        "closes a loop",
    );
}

#[test]
fn nodes_without_links() {
    err_at(
        &format!("{TWO}[[link]]\nends = [\"s1\", \"s2\"]\n"),
        2,
        8,
        "host `a` has no link",
    );
    err_at(
        &format!("{TWO}[[link]]\nends = [\"s1\", \"a\"]\n"),
        6,
        8,
        "switch `s2` has no link",
    );
}

#[test]
fn column_counts_characters_not_bytes() {
    // "é" is two bytes: the stray `x` is character 12 of line 2 but byte 13.
    err_at("[[host]]\nname = \"é\" x\n", 2, 12, "");
}

#[test]
fn from_file_reports_missing_file_and_uses_path_as_origin() {
    let e = Topology::from_file("/nonexistent/x.toml").unwrap_err();
    assert!(matches!(e, TopologyError::Read { .. }));
    assert!(e.to_string().starts_with("/nonexistent/x.toml: "));
    let dir = std::env::temp_dir().join(format!("rtlan-lab-topo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.toml");
    std::fs::write(&path, "[[host]]\nname = \"a\"\n").unwrap();
    let e = Topology::from_file(&path).unwrap_err();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        e.to_string()
            .starts_with(&format!("{}:2:8: ", path.display())),
        "{e}"
    );
}

#[test]
fn shipped_topologies_parse() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../topologies");
    let default = Topology::from_file(format!("{dir}/default.toml")).unwrap();
    assert_eq!(default.hosts.len(), 3);
    assert_eq!(default.switches.len(), 1);
    assert!(default
        .links
        .iter()
        .all(|l| l.rate_bps == Some(100_000_000)));
    let chain = Topology::from_file(format!("{dir}/chain.toml")).unwrap();
    assert_eq!(chain.switch_ports("s2").len(), 2);
    assert!(chain
        .switch_ports("s1")
        .iter()
        .any(|(_, peer)| peer == "s2"));
    let routed = Topology::from_file(format!("{dir}/routed.toml")).unwrap();
    assert_eq!(routed.routers.len(), 2);
    assert_eq!(routed.segments.len(), 3);
    assert!(routed.routers.iter().all(|r| r.kind == RouterKind::Rtlan));
    assert!(routed.routers.iter().all(|r| r.routes.len() == 1));
    assert_eq!(
        routed.host("a").unwrap().gateway,
        Some("198.18.0.1".parse().unwrap())
    );
}

#[test]
fn extra_tables_are_left_to_their_reader_and_others_refused() {
    let base =
        "[[host]]\nname = \"a\"\n[[switch]]\nname = \"s1\"\n[[link]]\nends = [\"a\", \"s1\"]\n";
    let with_sim = format!("{base}[sim]\nduration = \"1s\"\n");
    let topo = Topology::from_str_with(&with_sim, "t.toml", &["sim"]).expect("sim is an extra");
    assert_eq!(topo.hosts.len(), 1);
    let err = Topology::from_str(&with_sim, "t.toml").expect_err("sim unknown to the lab");
    assert_eq!(
        err.to_string(),
        "t.toml:7:1: unknown table `sim`, expected one of `lab`, `host`, `switch`, `router`, `link`, `flow`"
    );
    let typo = format!("{base}\n  [[trafic]]\nx = 1\n");
    let err = Topology::from_str_with(&typo, "t.toml", &["sim", "traffic"]).expect_err("typo");
    assert!(
        err.to_string()
            .starts_with("t.toml:8:3: unknown table `trafic`"),
        "{err}"
    );
    assert_eq!(
        Location::of(&with_sim, "t.toml", with_sim.find("[sim]").unwrap()).line,
        7
    );
}

#[test]
fn a_host_declares_its_delay_term() {
    let t = ok("[[host]]\nname = \"h\"\nhost_delay = \"350us\"\n[[host]]\nname = \"g\"\n\
         [[switch]]\nname = \"s\"\n[[link]]\nends = [\"h\", \"s\"]\n[[link]]\nends = [\"g\", \"s\"]\n");
    assert_eq!(t.hosts[0].host_delay, Some(Duration::from_micros(350)));
    assert_eq!(t.hosts[1].host_delay, None);
    err_at(
        "[[host]]\nname = \"h\"\nhost_delay = \"soon\"\n",
        3,
        14,
        "bad `host_delay`",
    );
}

#[test]
fn network_switch_is_fifo_with_t_mux_or_rtlan_with_a_scheduler() {
    let text = "[[switch]]\nname = \"s\"\nscheduler = \"wheel\"\nlateness_budget = \"100us\"\n\
                [[link]]\nends = [\"a\", \"s\"]\nrate = \"100mbit\"\ndelay = \"2us\"\n";
    let t = Topology::network_from_str(text, "n.toml").expect("no t_mux or buffer needed");
    let SwitchKind::Rtlan(o) = &t.switches[0].kind else {
        panic!("an rtlan switch");
    };
    assert_eq!(o.scheduler, Some(SchedulerKind::Wheel));
    assert_eq!(
        (t.switches[0].t_mux, t.switches[0].buffer_bytes),
        (None, None)
    );
    assert_eq!(t.links[0].delay, Duration::from_micros(2));
    // Without a scheduler a network file's switch is a FIFO switch and needs t_mux.
    let e = Topology::network_from_str("[[switch]]\nname = \"s\"\nbuffer = \"1MB\"\n", "n.toml")
        .expect_err("t_mux missing");
    assert!(e.to_string().starts_with("n.toml:2:8: "), "{e}");
    assert!(e.to_string().contains("`t_mux`"), "{e}");
    let e = Topology::network_from_str(
        "[[switch]]\nname = \"s\"\nt_mux = \"10us\"\nbuffer = \"1MB\"\nscheduler = \"cyclic\"\n",
        "n.toml",
    )
    .expect_err("both kinds");
    assert!(e.to_string().starts_with("n.toml:5:13: "), "{e}");
    assert!(e.to_string().contains("not both"), "{e}");
    let e = Topology::network_from_str(
        "[[switch]]\nname = \"s\"\nscheduler = \"cyclic\"\n[[link]]\nends = [\"a\", \"s\"]\n\
         rate = \"100mbit\"\neffective_rate = \"98mbit\"\n",
        "n.toml",
    )
    .expect_err("effective rate on an rtlan switch");
    assert!(e.to_string().starts_with("n.toml:7:18: "), "{e}");
}

/// A triangle of three switches with a host on s1, `stp` lines per switch as given.
fn triangle(stp: [&str; 3]) -> String {
    format!(
        "[[host]]\nname = \"a\"\n\
         [[switch]]\nname = \"s1\"\n{}\n\
         [[switch]]\nname = \"s2\"\n{}\n\
         [[switch]]\nname = \"s3\"\n{}\n\
         [[link]]\nends = [\"a\", \"s1\"]\n\
         [[link]]\nends = [\"s1\", \"s2\"]\n\
         [[link]]\nends = [\"s2\", \"s3\"]\n\
         [[link]]\nends = [\"s3\", \"s1\"]\n",
        stp[0], stp[1], stp[2]
    )
}

#[test]
fn loops_are_accepted_only_when_every_switch_runs_the_spanning_tree() {
    let on = "stp = true";
    let topo = Topology::from_str(&triangle([on, on, on]), "t.toml").expect("loop with stp");
    assert_eq!(topo.links.len(), 4);
    for s in &topo.switches {
        assert!(
            matches!(&s.kind, SwitchKind::Rtlan(o) if o.stp),
            "{}",
            s.name
        );
    }
    err_at(&triangle([on, "", on]), 19, 8, "closes a loop");
    err_at(&triangle([on, "stp = false", on]), 19, 8, "stp = true");
    err_at(
        &triangle([on, "kind = \"linux-bridge\"\nstp = true", on]),
        9,
        7,
        "`stp` only applies",
    );
}

/// A chain a — s1 — s2 — b, then s2 — br (a kernel bridge) — c, with the given lines per rtlan
/// switch.
fn auth_chain(s1: &str, s2: &str) -> String {
    format!(
        "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[host]]\nname = \"c\"\n\
         [[switch]]\nname = \"s1\"\n{s1}\n\
         [[switch]]\nname = \"s2\"\n{s2}\n\
         [[switch]]\nname = \"br\"\nkind = \"linux-bridge\"\n\
         [[link]]\nends = [\"a\", \"s1\"]\n\
         [[link]]\nends = [\"s1\", \"s2\"]\n\
         [[link]]\nends = [\"s2\", \"b\"]\n\
         [[link]]\nends = [\"s2\", \"br\"]\n\
         [[link]]\nends = [\"br\", \"c\"]\n"
    )
}

#[test]
fn auth_gives_keys_to_every_link_of_the_switch_but_never_across_a_bridge() {
    let on = "auth = true";
    let topo = Topology::from_str(&auth_chain(on, on), "t.toml").expect("auth on both");
    assert!(topo.link_authenticated("a", "s1"));
    assert!(topo.link_authenticated("s1", "a"));
    assert!(topo.link_authenticated("s1", "s2"));
    assert!(topo.link_authenticated("b", "s2"));
    assert!(!topo.link_authenticated("s2", "br"), "a bridge has no keys");
    assert!(!topo.link_authenticated("br", "c"));
    let off = Topology::from_str(&auth_chain("", ""), "t.toml").expect("no auth");
    assert!(!off.link_authenticated("a", "s1"));
    assert!(!off.link_authenticated("s1", "s2"));
}

#[test]
fn auth_on_one_switch_of_a_link_only_is_refused_with_its_line() {
    // The ends of the link s1–s2 are on line 19.
    err_at(
        &auth_chain("auth = true", ""),
        19,
        8,
        "`auth = true` on s1 but not on s2",
    );
    err_at(
        &auth_chain("", "auth = true"),
        19,
        8,
        "`auth = true` on s2 but not on s1",
    );
    err_at(
        &auth_chain("", "auth = true").replace(
            "name = \"br\"\nkind = \"linux-bridge\"",
            "name = \"br\"\nkind = \"linux-bridge\"\nauth = true",
        ),
        16,
        8,
        "`auth` only applies",
    );
}

/// The flow and link checks of a network file (looked up through indexes since the reader was
/// made fast) still name the offending value's line and column.
#[test]
fn network_paths_and_links_are_checked_at_their_place() {
    let head = "[[switch]]\nname = \"s1\"\nt_mux = \"1us\"\nbuffer = \"1MiB\"\n\
                [[switch]]\nname = \"s2\"\nt_mux = \"1us\"\nbuffer = \"1MiB\"\n\
                [[link]]\nends = [\"a\", \"s1\"]\nrate = \"1gbit\"\n\
                [[link]]\nends = [\"s2\", \"b\"]\nrate = \"1gbit\"\n";
    let flow = |path: &str| {
        format!(
            "{head}[[flow]]\nname = \"f\"\npath = {path}\nrate = \"1mbit\"\n\
             max_packet = 100\nburst = \"1000B\"\n"
        )
    };
    let err = |text: &str| match Topology::network_from_str(text, "n.toml") {
        Ok(_) => panic!("expected an error:\n{text}"),
        Err(e) => e.to_string(),
    };
    // Line 17 holds the path; columns count from 1.
    let e = err(&flow("[\"a\", \"s1\", \"s2\", \"b\"]"));
    assert!(e.starts_with("n.toml:17:20: "), "{e}");
    assert!(e.contains("no link between s1 and s2"), "{e}");
    let e = err(&flow("[\"a\", \"b\", \"s2\"]"));
    assert!(e.starts_with("n.toml:17:14: "), "{e}");
    assert!(e.contains("`b` must be a switch"), "{e}");
    let e = err(&flow("[\"s1\", \"s1\", \"a\"]"));
    assert!(e.starts_with("n.toml:17:9: "), "{e}");
    assert!(e.contains("`s1` must be a host"), "{e}");
    assert!(Topology::network_from_str(&flow("[\"b\", \"s2\", \"b\"]"), "n.toml").is_err());
    let twice = format!("{head}[[link]]\nends = [\"s1\", \"a\"]\nrate = \"1gbit\"\n");
    let e = err(&twice);
    assert!(e.starts_with("n.toml:16:8: "), "{e}");
    assert!(e.contains("duplicate link s1–a (first at line 10)"), "{e}");
    // And the good path reads.
    let ok = format!("{head}[[link]]\nends = [\"s1\", \"s2\"]\nrate = \"1gbit\"\n")
        + &flow("[\"a\", \"s1\", \"s2\", \"b\"]")[head.len()..];
    let net = Topology::network_from_str(&ok, "n.toml")
        .expect("a valid network")
        .network()
        .expect("complete");
    assert_eq!(net.flows[0].path, ["a", "s1", "s2", "b"]);
}
