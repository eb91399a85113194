//! Running tshark from the wire tests (`rsvp_tshark.rs`, `rether_tshark.rs`).

use std::path::Path;
use std::process::Command;

/// Whether tshark is installed; without it a test says so and passes, except under `CI=true`,
/// where a missing tshark fails it (`scripts/install-deps` installs it).
pub(crate) fn available() -> bool {
    if Command::new("tshark").arg("--version").output().is_ok() {
        return true;
    }
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    assert!(
        !ci,
        "tshark is not installed (scripts/install-deps installs it)"
    );
    println!("note: tshark not installed, skipping the tshark check");
    false
}

/// `tshark <before…> -r pcap <args…>`'s standard output; a failing tshark fails the test.
pub(crate) fn run(before: &[&str], pcap: &Path, args: &[&str]) -> String {
    let out = Command::new("tshark")
        .args(before)
        .arg("-r")
        .arg(pcap)
        .args(args)
        .output()
        .expect("tshark runs");
    // tshark run as root warns on stderr; only the exit status and stdout matter.
    assert!(
        out.status.success(),
        "tshark {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("tshark prints UTF-8")
}
