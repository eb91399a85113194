//! Lab test of the netlink shell (EtheReal §3.2: the host daemon's ARP entry and on-link route),
//! run inside a private network namespace. Root only; skipped with a message otherwise.
//!
//! Every netlink call happens on a thread that has `setns()`'d into the test's namespace, and
//! that thread first asserts its namespace differs from the root namespace (`/proc/1/ns/net`).

mod common;

use std::net::Ipv4Addr;
use std::os::unix::fs::MetadataExt;

use common::{can_run_lab, Netns};
use rtlan_linux::netlink::{NeighbourState, Netlink, NetlinkError};

/// Panics unless the calling thread is in a network namespace other than the root one
/// (`/proc/1/ns/net`, when readable — sandboxes may hide it) and other than the one the test
/// process started in (`/proc/self/ns/net` is the main thread's, which never calls `setns`).
fn assert_not_root_netns() {
    let mine = std::fs::metadata("/proc/thread-self/ns/net").expect("stat own netns");
    let started = std::fs::metadata("/proc/self/ns/net").expect("stat process netns");
    let mut others = vec![started];
    others.extend(std::fs::metadata("/proc/1/ns/net").ok());
    for other in others {
        assert_ne!(
            (other.dev(), other.ino()),
            (mine.dev(), mine.ino()),
            "refusing to touch the root network namespace"
        );
    }
}

/// A namespace with an up veth pair `nla` — `nlb` inside it.
fn lab(tag: &str) -> Netns {
    let ns = Netns::new(&format!("rtl-nl{}-{tag}", std::process::id()));
    ns.exec(&[
        "ip", "link", "add", "nla", "type", "veth", "peer", "name", "nlb",
    ]);
    ns.exec(&["ip", "link", "set", "nla", "up"]);
    ns.exec(&["ip", "link", "set", "nlb", "up"]);
    ns.exec(&["ip", "addr", "add", "198.18.0.1/24", "dev", "nla"]);
    ns
}

fn stdout(ns: &Netns, argv: &[&str]) -> String {
    String::from_utf8_lossy(&ns.exec(argv).stdout).into_owned()
}

const PROXY_IP: Ipv4Addr = Ipv4Addr::new(198, 19, 1, 2);
const MAC1: [u8; 6] = [0x02, 0x52, 0x54, 0x00, 0x00, 0x01];
const MAC2: [u8; 6] = [0x02, 0x52, 0x54, 0x00, 0x00, 0x02];

#[test]
fn neighbour_set_replace_delete() {
    if !can_run_lab("neighbour_set_replace_delete") {
        return;
    }
    let ns = lab("n");
    let (to_main, from_ns) = std::sync::mpsc::channel::<&'static str>();
    let (to_ns, from_main) = std::sync::mpsc::channel::<()>();
    let worker = ns.spawn(move || {
        assert_not_root_netns();
        let mut nl = Netlink::open().expect("open netlink");
        let index = nl.ifindex("nla").expect("ifindex nla");
        assert!(index > 1, "lo is 1, nla must be another index: {index}");

        nl.set_neighbour("nla", PROXY_IP, MAC1).expect("set");
        let entries = nl.neighbours("nla").expect("list");
        assert!(
            entries.contains(&(PROXY_IP, Some(MAC1), NeighbourState::Permanent)),
            "{entries:?}"
        );
        to_main.send("set").expect("main alive");
        from_main.recv().expect("main alive");

        nl.set_neighbour("nla", PROXY_IP, MAC2).expect("replace");
        let entries = nl.neighbours("nla").expect("list");
        let ours: Vec<_> = entries.iter().filter(|e| e.0 == PROXY_IP).collect();
        assert_eq!(
            ours,
            [&(PROXY_IP, Some(MAC2), NeighbourState::Permanent)],
            "{entries:?}"
        );
        assert!(nl.neighbours("nlb").expect("list nlb").is_empty());
        to_main.send("replaced").expect("main alive");
        from_main.recv().expect("main alive");

        nl.delete_neighbour("nla", PROXY_IP).expect("delete");
        assert!(!nl
            .neighbours("nla")
            .expect("list")
            .iter()
            .any(|e| e.0 == PROXY_IP));
        nl.delete_neighbour("nla", PROXY_IP)
            .expect("deleting an absent entry is Ok");
        to_main.send("deleted").expect("main alive");
    });

    let show = || stdout(&ns, &["ip", "neigh", "show", "dev", "nla"]);
    let step = from_ns.recv().expect("worker panicked before set");
    assert_eq!(step, "set");
    let out = show();
    assert!(
        out.contains("198.19.1.2 lladdr 02:52:54:00:00:01 PERMANENT"),
        "{out}"
    );
    to_ns.send(()).expect("worker alive");

    let step = from_ns.recv().expect("worker panicked before replace");
    assert_eq!(step, "replaced");
    let out = show();
    assert!(
        out.contains("198.19.1.2 lladdr 02:52:54:00:00:02 PERMANENT"),
        "{out}"
    );
    assert!(!out.contains("00:00:01"), "{out}");
    to_ns.send(()).expect("worker alive");

    let step = from_ns.recv().expect("worker panicked before delete");
    assert_eq!(step, "deleted");
    let out = show();
    assert!(!out.contains("198.19.1.2"), "{out}");
    worker.join().expect("worker thread");
}

#[test]
fn onlink_route_set_delete() {
    if !can_run_lab("onlink_route_set_delete") {
        return;
    }
    let ns = lab("r");
    let (to_main, from_ns) = std::sync::mpsc::channel::<&'static str>();
    let (to_ns, from_main) = std::sync::mpsc::channel::<()>();
    let prefix = Ipv4Addr::new(198, 19, 0, 0);
    let worker = ns.spawn(move || {
        assert_not_root_netns();
        let mut nl = Netlink::open().expect("open netlink");
        nl.set_onlink_route("nla", prefix, 16).expect("set route");
        // Replace semantics: installing it again is not an error.
        nl.set_onlink_route("nla", prefix, 16)
            .expect("set route again");
        let routes = nl.routes("nla").expect("routes");
        assert!(routes.contains(&(prefix, 16)), "{routes:?}");
        // The connected route of the interface's address is listed too.
        assert!(
            routes.contains(&(Ipv4Addr::new(198, 18, 0, 0), 24)),
            "{routes:?}"
        );
        assert!(!nl
            .routes("nlb")
            .expect("routes nlb")
            .contains(&(prefix, 16)));
        to_main.send("set").expect("main alive");
        from_main.recv().expect("main alive");

        nl.delete_route("nla", prefix, 16).expect("delete route");
        assert!(!nl.routes("nla").expect("routes").contains(&(prefix, 16)));
        nl.delete_route("nla", prefix, 16)
            .expect("deleting an absent route is Ok");
        assert!(matches!(
            nl.set_onlink_route("nla", prefix, 33),
            Err(NetlinkError::InvalidPrefixLen { len: 33 })
        ));
        to_main.send("deleted").expect("main alive");
    });

    let step = from_ns.recv().expect("worker panicked before set");
    assert_eq!(step, "set");
    let out = stdout(&ns, &["ip", "route", "show", "dev", "nla"]);
    let line = out
        .lines()
        .find(|l| l.starts_with("198.19.0.0/16"))
        .unwrap_or_else(|| panic!("route missing:\n{out}"));
    assert!(line.contains("scope link"), "{line}");
    assert!(!line.contains("via"), "{line}");
    to_ns.send(()).expect("worker alive");

    let step = from_ns.recv().expect("worker panicked before delete");
    assert_eq!(step, "deleted");
    let out = stdout(&ns, &["ip", "route", "show"]);
    assert!(!out.contains("198.19.0.0/16"), "{out}");
    worker.join().expect("worker thread");
}

#[test]
fn unknown_interface_is_named_in_the_error() {
    if !can_run_lab("unknown_interface_is_named_in_the_error") {
        return;
    }
    let ns = lab("e");
    let worker = ns.spawn(|| {
        assert_not_root_netns();
        let mut nl = Netlink::open().expect("open netlink");
        let results = [
            nl.set_neighbour("rtlnope0", PROXY_IP, MAC1),
            nl.delete_neighbour("rtlnope0", PROXY_IP),
            nl.set_onlink_route("rtlnope0", Ipv4Addr::new(198, 19, 0, 0), 16),
            nl.delete_route("rtlnope0", Ipv4Addr::new(198, 19, 0, 0), 16),
            nl.neighbours("rtlnope0").map(drop),
            nl.routes("rtlnope0").map(drop),
        ];
        for r in results {
            match r {
                Err(e @ NetlinkError::NoSuchInterface { .. }) => {
                    assert!(e.to_string().contains("rtlnope0"), "{e}");
                }
                other => panic!("expected NoSuchInterface, got {other:?}"),
            }
        }
        assert_eq!(nl.ifindex("lo").expect("lo"), 1);
    });
    worker.join().expect("worker thread");
}
