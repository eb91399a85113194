//! Lab helpers for root-only tests: network namespaces that are always removed (Drop guards),
//! veth pairs between them, and running code inside a namespace on a dedicated thread.
#![allow(dead_code, unreachable_pub)]

use std::fs::File;
use std::os::fd::AsRawFd;
use std::process::{Command, Output};

/// Whether these tests can run (root); prints why not otherwise.
pub fn can_run_lab(test: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("SKIP {test}: needs root (network namespaces, AF_PACKET)");
        return false;
    }
    if Command::new("ip").arg("-V").output().is_err() {
        println!("SKIP {test}: `ip` (iproute2) not installed");
        return false;
    }
    true
}

fn check(what: &str, out: std::io::Result<Output>) -> Output {
    let out = out.unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A network namespace named `rtl…`, deleted on drop.
pub struct Netns {
    pub name: String,
}

impl Netns {
    pub fn new(name: &str) -> Netns {
        assert!(name.starts_with("rtl"), "lab namespaces are named rtl*");
        // Remove a leftover of a crashed earlier run with the same pid (harmless if absent).
        let _ = Command::new("ip").args(["netns", "del", name]).output();
        check(
            &format!("ip netns add {name}"),
            Command::new("ip").args(["netns", "add", name]).output(),
        );
        let ns = Netns {
            name: name.to_string(),
        };
        ns.exec(&["ip", "link", "set", "lo", "up"]);
        ns
    }

    /// Runs a command inside the namespace; panics if it fails.
    pub fn exec(&self, argv: &[&str]) -> Output {
        check(
            &format!("[{}] {}", self.name, argv.join(" ")),
            self.try_exec(argv),
        )
    }

    /// Runs a command inside the namespace.
    pub fn try_exec(&self, argv: &[&str]) -> std::io::Result<Output> {
        Command::new("ip")
            .args(["netns", "exec", &self.name])
            .args(argv)
            .output()
    }

    /// Disables checksum and segmentation offloads on `ifname` (veth would otherwise hand over
    /// frames with partial checksums).
    pub fn no_offloads(&self, ifname: &str) {
        // ethtool may be missing; veth then keeps offloads and CSUMNOTREADY frames are counted.
        let _ = self.try_exec(&[
            "ethtool", "-K", ifname, "tx", "off", "tso", "off", "gso", "off", "gro", "off",
        ]);
    }

    /// Runs `f` on a new thread that has joined this namespace, returning its result.
    pub fn spawn<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> std::thread::JoinHandle<T> {
        let path = format!("/run/netns/{}", self.name);
        std::thread::spawn(move || {
            enter(&path);
            f()
        })
    }
}

/// Moves the calling thread into the network namespace at `path`.
pub fn enter(path: &str) {
    let file = File::open(path).unwrap_or_else(|e| panic!("open {path}: {e}"));
    // SAFETY: `file` is an open namespace file; setns only changes this thread's namespace.
    let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
    assert_eq!(rc, 0, "setns {path}: {}", std::io::Error::last_os_error());
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
    }
}

/// Creates a veth pair `a_if` (in `a`) — `b_if` (in `b`), both up, offloads off.
pub fn veth(a: &Netns, a_if: &str, b: &Netns, b_if: &str) {
    a.exec(&[
        "ip", "link", "add", a_if, "type", "veth", "peer", "name", b_if, "netns", &b.name,
    ]);
    for (ns, ifname) in [(a, a_if), (b, b_if)] {
        ns.no_offloads(ifname);
        ns.exec(&["ip", "link", "set", ifname, "up"]);
    }
}

/// Turns off IPv6 in a namespace so that router solicitations and DAD do not add traffic.
pub fn no_ipv6(ns: &Netns) {
    let _ = ns.try_exec(&["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"]);
    let _ = ns.try_exec(&["sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"]);
}
