//! A UDP socket in a lab host's namespace that is never read: the flood's destination port is
//! then open, so the receiving host drops the frames once the socket buffer is full instead of
//! answering every one with an ICMP port-unreachable (route lookups and an ICMP send per frame).
//!
//! On veth links the receiving host's stack runs on the CPU that sent the frame to it — for the
//! rtlan switch, the switch's own data-plane CPU — so an expensive receiver would be charged to
//! the switch. A real switch never pays for its receivers; a cheap sink keeps the measurement
//! about forwarding.

use std::net::{Ipv4Addr, UdpSocket};
use std::os::fd::{AsRawFd, OwnedFd};

use anyhow::Context;

/// Where `ip netns` keeps its namespace handles.
const NETNS_DIR: &str = "/run/netns";

/// Binds a UDP socket to `0.0.0.0:port` inside network namespace `ns` (named as for `ip netns`)
/// with the smallest receive buffer the kernel allows. Keep it open for as long as the sink is
/// needed; it is never read.
pub(super) fn udp_sink(ns: &str, port: u16) -> anyhow::Result<UdpSocket> {
    if ns.is_empty() || ns.contains(['/', '\0']) {
        anyhow::bail!("bad namespace name {ns:?}");
    }
    let path = format!("{NETNS_DIR}/{ns}");
    let handle: OwnedFd = std::fs::File::open(&path)
        .with_context(|| format!("opening {path}"))?
        .into();
    // A thread of its own enters the namespace, so the caller's threads stay where they are; the
    // socket keeps the namespace it was created in after the thread ends.
    let socket = std::thread::spawn(move || -> std::io::Result<UdpSocket> {
        // SAFETY: `handle` is an open namespace file; setns(2) only changes the calling thread's
        // network namespace, and this thread ends right after creating the socket.
        let rc = unsafe { libc::setns(handle.as_raw_fd(), libc::CLONE_NEWNET) };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        UdpSocket::bind((Ipv4Addr::UNSPECIFIED, port))
    })
    .join()
    .map_err(|_| anyhow::anyhow!("the namespace thread panicked"))?
    .with_context(|| format!("binding UDP port {port} in {ns}"))?;
    let small: libc::c_int = 1;
    // SAFETY: `small` is a live c_int of the size passed; the kernel only reads it (and clamps
    // the value to its minimum buffer size).
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&small as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        // Only a larger buffer: the sink still drops, a little later.
        tracing::debug!("SO_RCVBUF: {}", std::io::Error::last_os_error());
    }
    Ok(socket)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_namespace_names_are_refused_before_anything_happens() {
        for bad in ["", "a/b", "../x", "a\0b"] {
            assert!(udp_sink(bad, 9).is_err(), "{bad:?}");
        }
        let err = udp_sink("rtl-no-such-namespace-xyz", 9).expect_err("no such namespace");
        assert!(format!("{err:#}").contains("/run/netns/rtl-no-such-namespace-xyz"));
    }

    /// Removes the namespace when dropped, also when the test fails.
    struct Netns(String);

    impl Drop for Netns {
        fn drop(&mut self) {
            let _ = std::process::Command::new("ip")
                .args(["netns", "del", &self.0])
                .status();
        }
    }

    fn listening_udp(ns: &str) -> String {
        let out = std::process::Command::new("ip")
            .args(["netns", "exec", ns, "ss", "-H", "-uln"])
            .output()
            .expect("ss runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    #[test]
    fn the_socket_lives_in_the_namespace() {
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipping: needs root (network namespaces)");
            return;
        }
        let ns = Netns(format!("rtlbs{}", std::process::id()));
        let added = std::process::Command::new("ip")
            .args(["netns", "add", &ns.0])
            .status()
            .expect("ip runs");
        assert!(added.success());
        assert!(!listening_udp(&ns.0).contains(":9 "));
        let own = || std::fs::read_link("/proc/thread-self/ns/net").expect("own netns");
        let before = own();
        let socket = udp_sink(&ns.0, 9).expect("sink in a fresh namespace");
        assert!(
            listening_udp(&ns.0).contains("0.0.0.0:9 "),
            "{}",
            listening_udp(&ns.0)
        );
        assert_eq!(own(), before, "the calling thread stays in its namespace");
        drop(socket);
        assert!(
            !listening_udp(&ns.0).contains(":9 "),
            "closed with the socket"
        );
    }
}
