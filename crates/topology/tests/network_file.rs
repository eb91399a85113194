//! Network files (`rtlan analyze`, `rtlan bwm`) read by the one topology reader under
//! [`Profile::Network`]: the values the calculus gets, and every refusal at `file:line:column`.

use std::net::Ipv4Addr;
use std::time::Duration;

use rtlan_calculus::Q;
use rtlan_topology::{Bucket, Profile, Topology, TopologyError};

const GOOD: &str = r#"
[[switch]]
name = "s1"
t_mux = "45us"
buffer = "128KiB"
[[link]]
ends = ["C", "s1"]
rate = "100mbit"
effective_rate = "98.6mbit"
[[link]]
ends = ["s1", "B"]
rate = "100mbit"
[[flow]]
name = "C-B"
path = ["C", "s1", "B"]
rate = "40mbit"
max_packet = 1514
shaping_interval = "10ms"
host_delay = "80us"
"#;

fn read(text: &str) -> Result<Topology, TopologyError> {
    Topology::network_from_str(text, "net.toml")
}

#[test]
fn reads_the_documented_example_exactly() {
    let t = read(GOOD).unwrap();
    assert_eq!(t.switches[0].t_mux, Some(Duration::from_micros(45)));
    assert_eq!(t.switches[0].buffer_bytes, Some(131_072));
    assert_eq!(t.links[0].effective_rate_bps, Some(98_600_000));
    assert_eq!(t.links[1].bound_rate_bps(), Some(100_000_000));
    assert_eq!(t.links[0].delay, Duration::ZERO);
    assert!(t.is_host("C") && t.is_host("B") && !t.is_host("s1"));
    assert_eq!(
        t.flows[0].bucket,
        Bucket::ShapingInterval(Duration::from_millis(10))
    );
    let n = t.network().unwrap();
    assert_eq!(n.switches[0].t_mux, Q::micros(45));
    assert_eq!(n.switches[0].buffer, Q::bytes(131_072));
    assert_eq!(n.links[0].effective_rate, Q::int(98_600_000));
    assert_eq!(n.links[1].effective_rate, Q::int(100_000_000));
    assert_eq!(n.flows[0].burst, Q::bytes(51_514));
    assert_eq!(n.flows[0].host_delay, Q::micros(80));
    assert_eq!(n.flows[0].deadline, None);
}

/// `(line, column, message)` of the refusal of `text`.
fn err_at(text: &str) -> (usize, usize, String) {
    let e = read(text).expect_err("must be refused");
    let at = e.location().expect("inside the file").clone();
    assert_eq!(at.origin, "net.toml");
    let message = e.to_string();
    assert!(
        message.starts_with(&format!("net.toml:{}:{}: ", at.line, at.column)),
        "{message}"
    );
    (at.line, at.column, message)
}

#[test]
fn unknown_key_is_refused_with_position() {
    let (line, _, msg) = err_at(&GOOD.replace("t_mux = ", "colour = \"red\"\nt_mux = "));
    assert_eq!(line, 4);
    assert!(msg.contains("colour"), "{msg}");
}

#[test]
fn bad_values_name_line_and_column() {
    let (line, col, msg) = err_at(&GOOD.replace("\"40mbit\"", "\"40 furlongs\""));
    assert_eq!((line, col), (16, 8));
    assert!(msg.contains("rate"), "{msg}");
    let (line, col, msg) = err_at(&GOOD.replace("\"40mbit\"", "\"5mbps\""));
    assert_eq!((line, col), (16, 8));
    assert!(
        msg.contains("tc(8) reads it as 5 megabytes/s = 40 Mbit/s"),
        "{msg}"
    );
    let (line, _, msg) = err_at(&GOOD.replace("[\"C\", \"s1\", \"B\"]", "[\"C\", \"B\"]"));
    assert_eq!(line, 15);
    assert!(msg.contains("path"), "{msg}");
    let (_, _, msg) =
        err_at(&GOOD.replace("\"s1\", \"B\"]\nrate = \"40", "\"s1\", \"X\"]\nrate = \"40"));
    assert!(msg.contains("no link between s1 and X"), "{msg}");
    let (_, _, msg) = err_at(&GOOD.replace("shaping_interval = \"10ms\"", "burst = \"1000B\""));
    assert!(msg.contains("smaller than max_packet"), "{msg}");
    let (_, _, msg) = err_at(&GOOD.replace("shaping_interval = \"10ms\"", ""));
    assert!(msg.contains("exactly one"), "{msg}");
    let (line, col, msg) = err_at(&GOOD.replace("\"98.6mbit\"", "\"198mbit\""));
    assert_eq!((line, col), (9, 18));
    assert!(msg.contains("exceeds rate"), "{msg}");
    let (_, _, msg) = err_at(&GOOD.replace("max_packet = 1514", "max_packet = -1"));
    assert!(msg.contains("max_packet"), "{msg}");
    let (_, _, msg) = err_at(&GOOD.replace("\"128KiB\"", "\"128kb\""));
    assert!(msg.contains("bad `buffer`: `128kb` is ambiguous"), "{msg}");
    let (line, _, _) = err_at("[[switch]\nname=");
    assert_eq!(line, 1);
}

#[test]
fn network_rules() {
    let (line, col, msg) = err_at(&GOOD.replace("buffer = \"128KiB\"\n", ""));
    assert_eq!((line, col), (3, 8));
    assert!(msg.contains("[[switch]] needs `buffer`"), "{msg}");
    let (line, _, msg) = err_at(&GOOD.replace("rate = \"100mbit\"\neffective", "effective"));
    assert_eq!(line, 7);
    assert!(msg.contains("[[link]] needs `rate`"), "{msg}");
    let (_, _, msg) = err_at(&format!(
        "{GOOD}[[link]]\nends = [\"C\", \"B\"]\nrate = \"1gbit\"\n"
    ));
    assert!(msg.contains("joins two hosts"), "{msg}");
    let (line, _, msg) = err_at(&format!(
        "{GOOD}[[link]]\nends = [\"B\", \"s1\"]\nrate = \"1gbit\"\n"
    ));
    assert_eq!(line, 21);
    assert!(
        msg.contains("duplicate link B–s1 (first at line 11)"),
        "{msg}"
    );
    let (_, _, msg) = err_at(&GOOD.replace("[\"C\", \"s1\"]", "[\"C D\", \"s1\"]"));
    assert!(msg.contains("bad name `C D`"), "{msg}");
    // The same text is not a lab topology: upper-case names and undeclared hosts.
    let lab = Topology::read(GOOD, "net.toml", Profile::Lab, &[]).unwrap_err();
    assert!(matches!(lab, TopologyError::UnknownEnd { .. }), "{lab}");
}

#[test]
fn link_delay_is_read() {
    let t = read(&GOOD.replace(
        "effective_rate = \"98.6mbit\"",
        "effective_rate = \"98.6mbit\"\ndelay = \"2.5us\"",
    ))
    .unwrap();
    assert_eq!(t.links[0].delay, Duration::from_nanos(2500));
    let (_, _, msg) = err_at(&GOOD.replace("effective_rate = \"98.6mbit\"", "delay = \"2.5\""));
    assert!(msg.contains("bad `delay`: `2.5` has no unit"), "{msg}");
}

#[test]
fn host_tables_give_addresses_and_are_checked() {
    let hosts = "[[host]]\nname = \"C\"\nip = \"198.18.0.3\"\n[[host]]\nname = \"B\"\nip = \"198.18.0.2\"\n";
    let t = read(&format!("{hosts}{GOOD}")).unwrap();
    let n = t.network().unwrap();
    assert_eq!(n.hosts.len(), 2);
    assert_eq!(n.hosts[0].name, "C");
    assert_eq!(n.hosts[1].ip, Ipv4Addr::new(198, 18, 0, 2));
    let bad = |h: &str| err_at(&format!("{h}{GOOD}")).2;
    assert!(bad("[[host]]\nname = \"s1\"\nip = \"198.18.0.9\"\n").contains("duplicate name `s1`"));
    assert!(bad("[[host]]\nname = \"Z\"\nip = \"198.18.0.9\"\n").contains("no link"));
    assert!(bad("[[host]]\nname = \"C\"\nip = \"198.18.0\"\n").contains("IP"));
    assert!(bad("[[host]]\nname = \"C\"\nip = \"224.0.0.1\"\n").contains("unicast"));
    let dup_ip = hosts.replace("198.18.0.2", "198.18.0.3");
    assert!(bad(&dup_ip).contains("already used by `C`"));
    let dup_name = hosts.replace("\"B\"", "\"C\"");
    assert!(bad(&dup_name).contains("duplicate name `C`"));
}

#[test]
fn every_shipped_network_and_topology_file_reads() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let mut seen = 0;
    for dir in ["experiments/loser", "experiments/loser/lab"] {
        for entry in std::fs::read_dir(format!("{root}/{dir}")).unwrap() {
            // Listing a directory of the repository: entries are readable.
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if name.starts_with("table4") || name.starts_with("net-") {
                let t = Topology::network_from_file(&path).unwrap_or_else(|e| panic!("{e}"));
                t.network().unwrap_or_else(|e| panic!("{e}"));
                seen += 1;
            } else if name.starts_with("topology-") {
                Topology::from_file(&path).unwrap_or_else(|e| panic!("{e}"));
                seen += 1;
            }
        }
    }
    for entry in std::fs::read_dir(format!("{root}/topologies")).unwrap() {
        // As above: a directory of the repository.
        let path = entry.unwrap().path();
        Topology::from_file(&path).unwrap_or_else(|e| panic!("{e}"));
        seen += 1;
    }
    assert!(seen >= 22, "only {seen} files found");
}

#[test]
fn a_lab_topology_carries_the_calculus_values_too() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fuzz/seeds/topology/full.toml"
    ))
    .expect("seed file of the repository");
    let t = Topology::from_str_with(&text, "full.toml", &["sim"]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(t.switch("s2").unwrap().buffer_bytes, Some(1 << 20));
    assert_eq!(t.links[1].delay, Duration::from_nanos(2500));
    assert_eq!(t.links[2].rate_bps, Some(100_000_000));
    assert_eq!(t.flows[0].deadline, Some(Duration::from_millis(5)));
    let n = t.network().unwrap();
    assert_eq!(n.flows[0].burst, Q::bytes(2500 + 1514));
    // Without `t_mux` the lab still reads the file; the calculus conversion names what is missing.
    let bare = Topology::from_str_with(
        &text.replace("t_mux = \"45us\"\n", ""),
        "full.toml",
        &["sim"],
    )
    .unwrap();
    assert_eq!(
        bare.network().unwrap_err().to_string(),
        "full.toml: switch `s1` has no `t_mux`, which the analysis needs"
    );
    // The lab's rules still hold: a host with two links is refused.
    let two = format!("{text}[[link]]\nends = [\"a\", \"s2\"]\n");
    let e = Topology::from_str_with(&two, "full.toml", &["sim"]).unwrap_err();
    assert!(e.to_string().contains("already has a link"), "{e}");
}
