//! Root-only tests of routers in the lab library (docs/lab.md "Routers"): kernel routers
//! (`kind = "linux-router"`, no rtlan binary needed) and the rtlan-router launch path driven by a
//! fake script. `crates/rtlan/tests/lab_router.rs` runs the real `rtlan router` and BIRD.

mod common;

use std::path::PathBuf;

use common::{lab_name, namespaces_of, root, run, topo, DownOnDrop};
use rtlan_lab::{Lab, LabError, LabOptions};

/// a — r1 — r2 — b; `KIND` is replaced by the routers' kind.
const CHAIN: &str = r#"
[[host]]
name = "a"
[[host]]
name = "b"
[[router]]
name = "r1"
kind = "KIND"
[[router]]
name = "r2"
kind = "KIND"
[[link]]
ends = ["a", "r1"]
rate = "100mbit"
[[link]]
ends = ["r1", "r2"]
[[link]]
ends = ["r2", "b"]
rate = "100mbit"
"#;

fn chain(kind: &str) -> rtlan_lab::Topology {
    topo(&CHAIN.replace("KIND", kind))
}

fn out(lab: &Lab, node: &str, args: &[&str]) -> String {
    let (ok, text) = run(lab.exec(node, args).unwrap());
    assert!(ok, "{node} {args:?}: {text}");
    text
}

#[test]
fn kernel_routers_forward_between_subnets_with_the_topologys_routes() {
    if !root() {
        return;
    }
    let name = lab_name("lr");
    let _cleanup = DownOnDrop(name.clone());
    let lab = Lab::up(
        &chain("linux-router"),
        &name,
        &LabOptions::new("/nonexistent/rtlan"),
    )
    .expect("kernel routers need no rtlan executable");
    assert_eq!(namespaces_of(&name).len(), 4);
    assert_eq!(lab.routers(), ["r1", "r2"]);
    assert_eq!(
        lab.router_ports("r1").unwrap(),
        [
            ("p0".to_string(), "a".to_string()),
            ("p1".to_string(), "r2".to_string())
        ]
    );
    assert!(matches!(
        lab.router_ports("a"),
        Err(LabError::WrongKind { .. })
    ));
    assert_eq!(lab.router_socket("r1"), None);
    assert_eq!(lab.switch_socket("r1"), None);

    // Addresses from the segment plan, the host's gateway, the router's static route.
    assert!(out(&lab, "r1", &["ip", "-br", "addr", "show", "p1"]).contains("198.18.1.1/24"));
    assert!(out(&lab, "a", &["ip", "-br", "addr", "show", "eth0"]).contains("198.18.0.101/24"));
    assert!(out(&lab, "a", &["ip", "route"]).contains("default via 198.18.0.1 dev eth0"));
    let routes = out(&lab, "r1", &["ip", "route"]);
    assert!(
        routes.contains("198.18.2.0/24 via 198.18.1.2 dev p1 metric 2"),
        "{routes}"
    );
    assert_eq!(
        lab.router_missing_routes("r1").unwrap(),
        Vec::<String>::new()
    );
    for (key, want) in [
        ("net.ipv4.ip_forward", "1"),
        ("net.ipv4.conf.all.rp_filter", "0"),
        ("net.ipv4.conf.p0.rp_filter", "0"),
    ] {
        assert_eq!(
            out(&lab, "r2", &["sysctl", "-n", key]).trim(),
            want,
            "{key}"
        );
    }
    // Paced like a bridge: tbf on the ports of rate-limited links only.
    assert!(out(&lab, "r1", &["tc", "qdisc", "show", "dev", "p0"]).contains("qdisc tbf"));
    assert!(!out(&lab, "r1", &["tc", "qdisc", "show", "dev", "p1"]).contains("qdisc tbf"));

    let b = lab.host_ip("b").unwrap().to_string();
    let (ok, text) = run(lab.exec("a", &["ping", "-c1", "-W3", &b]).unwrap());
    assert!(ok && text.contains("ttl=62"), "{text}");

    // `rtlan lab` finds the roles again in state.json.
    let state = std::fs::read_to_string(lab.state_dir().join("state.json")).unwrap();
    assert!(state.contains("\"role\": \"linux-router\""), "{state}");
    lab.down().unwrap();
    assert!(namespaces_of(&name).is_empty());
}

#[test]
fn a_failed_router_start_rolls_everything_back() {
    if !root() {
        return;
    }
    let name = lab_name("fr");
    let _cleanup = DownOnDrop(name.clone());
    let dir = std::env::temp_dir().join(format!("rtlan-lab-router-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("rtlan");
    std::fs::write(
        &exe,
        "#!/bin/sh\necho \"args: $*\"\necho 'fatal: ip_forward is 1' >&2\nexit 2\n",
    )
    .unwrap();
    std::fs::set_permissions(&exe, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let err = Lab::up(&chain("rtlan"), &name, &LabOptions::new(&exe)).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, LabError::Router { .. }), "{text}");
    assert!(text.contains("router `r1`"), "{text}");
    assert!(text.contains("fatal: ip_forward is 1"), "{text}");
    assert!(text.contains("args: router --config"), "{text}");
    assert!(namespaces_of(&name).is_empty());
    assert!(!PathBuf::from(rtlan_lab::LABS_DIR).join(&name).exists());
    std::fs::remove_dir_all(&dir).unwrap();
    // rtlan routers need the executable: refused before anything is created.
    let err = Lab::up(
        &chain("rtlan"),
        &name,
        &LabOptions::new("/nonexistent/rtlan"),
    )
    .unwrap_err();
    assert!(matches!(err, LabError::RtlanExe(_)), "{err}");
    assert!(namespaces_of(&name).is_empty());
}
