//! Root-only: a process that called `install_signal_cleanup` and built a lab removes it when it
//! gets SIGTERM and exits with status 130. Runs without the test harness (`harness = false`) so
//! that `main` controls the process (one test, in a child of its own).

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{lab_name, namespaces_of, root, topo, DownOnDrop};
use rtlan_lab::{Lab, LabOptions};

const CHILD_ENV: &str = "RTLAN_LAB_SIGNAL_CHILD";

const TOPOLOGY: &str = r#"
[[host]]
name = "a"
[[host]]
name = "b"
[[switch]]
name = "br"
kind = "linux-bridge"
[[link]]
ends = ["a", "br"]
[[link]]
ends = ["b", "br"]
"#;

/// The child: builds the lab, says so, and waits to be signalled.
fn child(name: &str) -> ! {
    rtlan_lab::install_signal_cleanup().unwrap();
    let lab = Lab::up(&topo(TOPOLOGY), name, &LabOptions::new("/nonexistent")).unwrap();
    // Children (switches, traffic tools) must not inherit blocked signals, or they could never be
    // stopped with SIGTERM.
    let status = Command::new("grep")
        .args(["SigBlk", "/proc/self/status"])
        .output()
        .unwrap();
    let blocked = String::from_utf8_lossy(&status.stdout);
    let blocked = blocked.split_whitespace().nth(1).unwrap_or("?").to_string();
    println!("ready {} {blocked}", lab.name());
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

fn main() {
    if let Ok(name) = std::env::var(CHILD_ENV) {
        child(&name);
    }
    // Accept (and ignore) the test harness's arguments; only run when not merely listing.
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    if !root() {
        return;
    }
    let name = lab_name("sg");
    let _cleanup = DownOnDrop(name.clone());
    let mut proc = Command::new(std::env::current_exe().unwrap())
        .env(CHILD_ENV, &name)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(proc.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), format!("ready {name} 0000000000000000"));
    assert_eq!(namespaces_of(&name).len(), 3);
    let pid = libc::pid_t::try_from(proc.id()).unwrap();
    // SAFETY: kill(2) has no memory-safety preconditions; `pid` is our child.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = proc.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = proc.kill();
            panic!("child did not exit after SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(130), "{status}");
    assert!(namespaces_of(&name).is_empty());
    assert!(!std::path::Path::new(rtlan_lab::LABS_DIR)
        .join(&name)
        .exists());
    println!("signal_cleanup: ok");
}
