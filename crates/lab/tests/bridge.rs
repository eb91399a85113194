//! Root-only tests of the lab library with `linux-bridge` switches (no rtlan binary needed), plus
//! the rtlan-switch launch path driven by a fake switch script.

mod common;

use std::path::PathBuf;

use common::{lab_name, namespaces_of, root, run, topo, DownOnDrop};
use rtlan_lab::{Lab, LabError, LabOptions};

fn no_rtlan() -> LabOptions {
    LabOptions::new("/nonexistent/rtlan")
}

fn ping(lab: &Lab, from: &str, to: &str) -> (bool, String) {
    let ip = lab.host_ip(to).unwrap().to_string();
    run(lab
        .exec(from, &["ping", "-c", "1", "-W", "3", &ip])
        .unwrap())
}

const STAR: &str = r#"
[[host]]
name = "a"
[[host]]
name = "b"
[[host]]
name = "c"
[[switch]]
name = "br"
kind = "linux-bridge"
[[link]]
ends = ["a", "br"]
[[link]]
ends = ["b", "br"]
[[link]]
ends = ["br", "c"]
"#;

#[test]
fn three_hosts_on_one_bridge_ping_each_other() {
    if !root() {
        return;
    }
    let name = lab_name("st");
    let _cleanup = DownOnDrop(name.clone());
    let lab = Lab::up(&topo(STAR), &name, &no_rtlan()).unwrap();
    assert_eq!(lab.netns("a").unwrap(), format!("rtl-{name}-a"));
    assert_eq!(namespaces_of(&name).len(), 4);
    for (from, to) in [("a", "b"), ("a", "c"), ("b", "c"), ("c", "a")] {
        let (ok, out) = ping(&lab, from, to);
        assert!(ok, "ping {from} -> {to}: {out}");
    }
    // The address we report is the one on eth0.
    let (ok, out) = run(lab
        .exec("b", &["ip", "-br", "addr", "show", "eth0"])
        .unwrap());
    assert!(ok && out.contains("198.18.0.2/16"), "{out}");
    // IPv6 is off by default: no link-local address.
    assert!(!out.contains("fe80"), "{out}");
    // Offloads off on both ends of a link.
    for (node, ifname) in [("a", "eth0"), ("br", "p0")] {
        let (_, k) = run(lab.exec(node, &["ethtool", "-k", ifname]).unwrap());
        assert!(k.contains("tx-checksumming: off"), "{node} {ifname}: {k}");
        assert!(
            k.contains("generic-receive-offload: off"),
            "{node} {ifname}: {k}"
        );
    }
    // MACs in the state are the interfaces' real addresses.
    let mac = lab.mac("a", "eth0").unwrap();
    let text = mac.map(|b| format!("{b:02x}")).join(":");
    let (_, link) = run(lab.exec("a", &["ip", "link", "show", "eth0"]).unwrap());
    assert!(link.contains(&text), "{text} not in {link}");
    assert!(lab.mac("a", "p0").is_err());
    assert!(matches!(lab.host_ip("br"), Err(LabError::WrongKind { .. })));
    assert!(matches!(lab.netns("zz"), Err(LabError::UnknownNode { .. })));
    assert!(lab.switch_socket("br").is_none());

    // Lab::open sees the same lab from state.json and does not tear it down when dropped.
    let opened = Lab::open(&name).unwrap();
    assert_eq!(opened.host_ip("c").unwrap(), lab.host_ip("c").unwrap());
    assert_eq!(
        opened.mac("br", "p2").unwrap(),
        lab.mac("br", "p2").unwrap()
    );
    drop(opened);
    assert_eq!(namespaces_of(&name).len(), 4);

    let report = lab.down().unwrap();
    assert_eq!(report.namespaces.len(), 4, "{report}");
    assert!(report.state_dir.is_some());
    assert!(namespaces_of(&name).is_empty());
    assert!(!PathBuf::from(rtlan_lab::LABS_DIR).join(&name).exists());
    // Idempotent.
    assert!(rtlan_lab::down(&name).unwrap().is_empty());
    assert!(matches!(Lab::open(&name), Err(LabError::NotFound { .. })));
}

#[test]
fn two_bridges_in_a_chain() {
    if !root() {
        return;
    }
    let name = lab_name("ch");
    let _cleanup = DownOnDrop(name.clone());
    let t = topo(
        r#"
[[host]]
name = "a"
[[host]]
name = "b"
[[host]]
name = "c"
[[switch]]
name = "s1"
kind = "linux-bridge"
[[switch]]
name = "s2"
kind = "linux-bridge"
[[link]]
ends = ["a", "s1"]
[[link]]
ends = ["b", "s1"]
[[link]]
ends = ["s1", "s2"]
[[link]]
ends = ["c", "s2"]
"#,
    );
    let lab = Lab::up(&t, &name, &no_rtlan()).unwrap();
    let ports = lab.switch_ports("s1").unwrap();
    let want: Vec<(String, String)> = [("p0", "a"), ("p1", "b"), ("p2", "s2")]
        .iter()
        .map(|(i, p)| (i.to_string(), p.to_string()))
        .collect();
    assert_eq!(ports, want);
    assert_eq!(
        lab.switch_ports("s2").unwrap(),
        [
            ("p0".to_string(), "s1".to_string()),
            ("p1".to_string(), "c".to_string())
        ]
    );
    assert!(matches!(
        lab.switch_ports("a"),
        Err(LabError::WrongKind { .. })
    ));
    let (_, members) = run(lab
        .exec("s1", &["ip", "-br", "link", "show", "master", "br0"])
        .unwrap());
    for p in ["p0", "p1", "p2"] {
        assert!(members.contains(p), "{p} not in br0: {members}");
    }
    let (_, stp) = run(lab
        .exec("s1", &["ip", "-d", "link", "show", "br0"])
        .unwrap());
    assert!(
        stp.contains("stp_state 0") && stp.contains("forward_delay 0"),
        "{stp}"
    );
    for (from, to) in [("a", "c"), ("c", "b")] {
        let (ok, out) = ping(&lab, from, to);
        assert!(ok, "ping {from} -> {to}: {out}");
    }
    drop(lab); // the Drop guard tears it down
    assert!(namespaces_of(&name).is_empty());
}

#[test]
fn rate_limited_link_has_tbf_with_framing_overhead() {
    if !root() {
        return;
    }
    let name = lab_name("rt");
    let _cleanup = DownOnDrop(name.clone());
    let t = topo(
        r#"
[[host]]
name = "a"
[[host]]
name = "b"
[[switch]]
name = "br"
kind = "linux-bridge"
[[link]]
ends = ["a", "br"]
rate = "10mbit"
[[link]]
ends = ["b", "br"]
"#,
    );
    let lab = Lab::up(&t, &name, &no_rtlan()).unwrap();
    // Host egress and the bridge's port towards the host are both shaped.
    for (node, ifname) in [("a", "eth0"), ("br", "p0")] {
        let (_, q) = run(lab
            .exec(node, &["tc", "-s", "-d", "qdisc", "show", "dev", ifname])
            .unwrap());
        assert!(
            q.contains("tbf") && q.contains("rate 10Mbit"),
            "{node}: {q}"
        );
        assert!(q.contains("overhead 24 mpu 84"), "{node}: {q}");
    }
    // The unlimited link has no tbf.
    let (_, q) = run(lab
        .exec("b", &["tc", "qdisc", "show", "dev", "eth0"])
        .unwrap());
    assert!(!q.contains("tbf"), "{q}");
    // The size table charges wire bytes: ARP request 42 -> 84, ICMP echo of 142 -> 166.
    let ip = lab.host_ip("b").unwrap().to_string();
    let (ok, out) = run(lab
        .exec("a", &["ping", "-c", "1", "-W", "3", "-s", "100", &ip])
        .unwrap());
    assert!(ok, "{out}");
    let (_, q) = run(lab
        .exec("a", &["tc", "-s", "qdisc", "show", "dev", "eth0"])
        .unwrap());
    assert!(q.contains("Sent 250 bytes 2 pkt"), "{q}");
    lab.down().unwrap();
}

#[test]
fn up_twice_is_refused() {
    if !root() {
        return;
    }
    let name = lab_name("tw");
    let _cleanup = DownOnDrop(name.clone());
    let t = topo(STAR);
    let lab = Lab::up(&t, &name, &no_rtlan()).unwrap();
    let err = Lab::up(&t, &name, &no_rtlan()).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("lab `{name}` already exists; run `rtlan lab down --name {name}`")
    );
    // The refused attempt must not have removed the first lab.
    assert_eq!(namespaces_of(&name).len(), 4);
    let (ok, out) = ping(&lab, "a", "b");
    assert!(ok, "{out}");
    lab.down().unwrap();
}

#[test]
fn down_after_a_crash_needs_no_state() {
    if !root() {
        return;
    }
    let name = lab_name("cr");
    let _cleanup = DownOnDrop(name.clone());
    let lab = Lab::up(&topo(STAR), &name, &no_rtlan()).unwrap();
    // A process left running in a host, as a crashed experiment would leave it.
    let mut sleeper = lab.exec("a", &["sleep", "60"]).unwrap().spawn().unwrap();
    let dir = lab.state_dir().to_path_buf();
    lab.keep();
    std::fs::remove_file(dir.join("state.json")).unwrap();
    assert!(matches!(Lab::open(&name), Err(LabError::NotFound { .. })));

    let report = rtlan_lab::down(&name).unwrap();
    let mut removed = report.namespaces.clone();
    removed.sort();
    let mut want: Vec<String> = ["a", "b", "c", "br"]
        .iter()
        .map(|n| rtlan_lab::netns_name(&name, n))
        .collect();
    want.sort();
    assert_eq!(removed, want);
    assert_eq!(report.terminated, [sleeper.id()], "{report}");
    assert_eq!(report.state_dir.as_deref(), Some(dir.as_path()));
    let status = sleeper.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGTERM)
    );
    assert!(namespaces_of(&name).is_empty());
    assert!(!dir.exists());
}

/// A stand-in for `rtlan switch --config FILE`: reads `control_socket` from the config written by
/// the lab, records its arguments, and listens on the socket until terminated.
const FAKE_SWITCH: &str = r#"#!/bin/sh
cfg="$3"
sock=$(sed -n 's/^control_socket = "\(.*\)"$/\1/p' "$cfg")
echo "fake switch: $* sock=$sock"
exec socat UNIX-LISTEN:"$sock",fork /dev/null
"#;

fn fake_exe(tag: &str, script: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rtlan-lab-it-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("rtlan");
    std::fs::write(&exe, script).unwrap();
    std::fs::set_permissions(&exe, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    exe
}

const RTLAN_PAIR: &str = r#"
[[host]]
name = "a"
[[host]]
name = "b"
[[switch]]
name = "s1"
cycle_time = "10ms"
[[link]]
ends = ["a", "s1"]
rate = "100mbit"
[[link]]
ends = ["b", "s1"]
"#;

#[test]
fn rtlan_switch_is_started_in_its_namespace_and_stopped() {
    if !root() || !std::path::Path::new("/usr/bin/socat").exists() {
        return;
    }
    let name = lab_name("fs");
    let _cleanup = DownOnDrop(name.clone());
    let exe = fake_exe("ok", FAKE_SWITCH);
    let lab = Lab::up(&topo(RTLAN_PAIR), &name, &LabOptions::new(&exe)).unwrap();
    let socket = lab.switch_socket("s1").unwrap();
    assert_eq!(socket, lab.state_dir().join("s1.sock"));
    std::os::unix::net::UnixStream::connect(&socket).unwrap();
    let pid = lab.switch_pid("s1").unwrap();
    // It runs inside the switch's namespace.
    let mut list = std::process::Command::new("ip");
    list.args(["netns", "pids", lab.netns("s1").unwrap()]);
    let pids = run(list);
    assert!(
        pids.1.split_whitespace().any(|p| p == pid.to_string()),
        "{pids:?}"
    );
    let config = std::fs::read_to_string(lab.state_dir().join("s1.toml")).unwrap();
    assert!(
        config.contains("ifname = \"p0\"") && config.contains("rate = \"100mbit\""),
        "{config}"
    );
    let log = std::fs::read_to_string(lab.switch_log("s1").unwrap()).unwrap();
    assert!(log.contains("fake switch: switch --config"), "{log}");
    // The host side of a shaped link has its tbf; the rtlan switch's port has none.
    let (_, q) = run(lab
        .exec("s1", &["tc", "qdisc", "show", "dev", "p0"])
        .unwrap());
    assert!(!q.contains("tbf"), "{q}");
    let (_, q) = run(lab
        .exec("a", &["tc", "qdisc", "show", "dev", "eth0"])
        .unwrap());
    assert!(q.contains("tbf"), "{q}");
    let report = lab.down().unwrap();
    assert!(report.terminated.contains(&pid), "{report}");
    assert!(namespaces_of(&name).is_empty());
    std::fs::remove_dir_all(exe.parent().unwrap()).unwrap();
}

#[test]
fn failed_switch_start_rolls_everything_back() {
    if !root() {
        return;
    }
    let name = lab_name("fb");
    let _cleanup = DownOnDrop(name.clone());
    let exe = fake_exe(
        "bad",
        "#!/bin/sh\necho 'fatal: cannot open p0' >&2\nexit 2\n",
    );
    let err = Lab::up(&topo(RTLAN_PAIR), &name, &LabOptions::new(&exe)).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, LabError::Switch { .. }), "{text}");
    assert!(text.contains("fatal: cannot open p0"), "{text}");
    assert!(namespaces_of(&name).is_empty());
    assert!(!PathBuf::from(rtlan_lab::LABS_DIR).join(&name).exists());
    std::fs::remove_dir_all(exe.parent().unwrap()).unwrap();
    // A missing executable is refused before anything is created.
    let err = Lab::up(&topo(RTLAN_PAIR), &name, &no_rtlan()).unwrap_err();
    assert!(matches!(err, LabError::RtlanExe(_)), "{err}");
    assert!(namespaces_of(&name).is_empty());
}
