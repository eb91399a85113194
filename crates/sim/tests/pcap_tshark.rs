//! Every pcap the simulator writes is read by `tshark` with the frame count the run reports.
//! Without `tshark` on the PATH the test says so and passes — except under `CI=true`, where a
//! missing `tshark` fails it (`scripts/install-deps` installs it).

mod common;

use std::process::Command;
use std::time::Duration;

use rtlan_sim::RunOptions;

#[test]
fn tshark_reads_every_pcap() {
    let mut scenario = common::load("guarantee.toml");
    scenario.sim.duration = Duration::from_millis(800);
    scenario.sim.warmup = Duration::from_millis(600);
    let dir = common::temp_dir("pcap-tshark");
    let options = RunOptions {
        seed: None,
        pcap_dir: Some(dir),
    };
    let outcome = common::simulate(&scenario, &options);
    assert_eq!(outcome.pcaps.len(), scenario.topology.links.len());
    for p in &outcome.pcaps {
        // The pcap header (24 bytes, nanosecond magic) and 16 bytes per record at least.
        let bytes = std::fs::read(&p.path).expect("pcap written");
        let magic = [bytes[0], bytes[1], bytes[2], bytes[3]];
        assert!(
            u32::from_le_bytes(magic) == 0xa1b2_3c4d || u32::from_be_bytes(magic) == 0xa1b2_3c4d,
            "nanosecond pcap magic, got {magic:02x?}"
        );
        assert!(bytes.len() as u64 >= 24 + 16 * p.frames);
    }
    let tshark = Command::new("tshark").arg("--version").output();
    if tshark.is_err() {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(
            !ci,
            "tshark is not installed (scripts/install-deps installs it)"
        );
        eprintln!("tshark not found: skipping the tshark half of this test");
        return;
    }
    for p in &outcome.pcaps {
        let out = Command::new("tshark")
            .arg("-r")
            .arg(&p.path)
            .args(["-T", "fields", "-e", "frame.number"])
            .output()
            .expect("tshark runs");
        assert!(
            out.status.success(),
            "tshark -r {}: {}",
            p.path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let frames = String::from_utf8_lossy(&out.stdout).lines().count() as u64;
        assert_eq!(frames, p.frames, "{}", p.path.display());
    }
}
