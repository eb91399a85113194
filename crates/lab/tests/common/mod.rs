//! Helpers shared by the root-only lab tests.
#![allow(dead_code, unreachable_pub)]

use std::process::Command;

use rtlan_lab::Topology;

/// True when running as root; otherwise prints why the test is skipped.
pub fn root() -> bool {
    // SAFETY: geteuid(2) has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!("skipped: lab tests need root (network namespaces)");
    }
    root
}

/// A lab name unique to this test process: `tag` (at most 3 characters) plus the pid.
pub fn lab_name(tag: &str) -> String {
    assert!(tag.len() <= 3);
    format!("{tag}{}", std::process::id())
}

/// Namespaces of lab `name` that currently exist.
pub fn namespaces_of(name: &str) -> Vec<String> {
    rtlan_lab::lab_namespaces(name).expect("ip netns list")
}

/// Calls `rtlan_lab::down(name)` when dropped, so a failing test leaves nothing behind.
pub struct DownOnDrop(pub String);

impl Drop for DownOnDrop {
    fn drop(&mut self) {
        if let Err(e) = rtlan_lab::down(&self.0) {
            eprintln!("cleanup of {}: {e}", self.0);
        }
    }
}

/// Parses a topology written in the test.
pub fn topo(text: &str) -> Topology {
    Topology::from_str(text, "test.toml").unwrap_or_else(|e| panic!("{e}"))
}

/// Runs a command to completion and returns (success, stdout + stderr).
pub fn run(mut cmd: Command) -> (bool, String) {
    let out = cmd.output().unwrap();
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}
