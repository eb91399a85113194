//! Smoke tests of the QSR paper's experiments (`rtlan experiment qsr-fig6 | qsr-video |
//! qsr-signalling --quick`, QSR §6.1–§6.2): each runner runs end to end and writes results
//! whose structure and deterministic parts are right. Rates and losses measured in the lab
//! depend on the machine's load (and these tests run the debug binary), so the lab tests
//! assert only what a loaded host cannot change; the simulator is deterministic, so its tests
//! assert the outcome the experiment exists to show. The full runs and their numbers are on
//! the pages under `experiments/qsr/`. The lab tests need root and skip without it.

mod common;

use std::path::PathBuf;

use common::*;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_rtlan");
const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// Runs `rtlan experiment NAME --quick --no-plot --backend BACKEND` on the repository's scenario
/// into a fresh directory; returns the parsed results file `results_name`, after checking that
/// no namespace of the run's labs (`rtl-<tag><pid>-…` for each of `lab_tags`) is left.
fn quick(name: &str, backend: &str, results_name: &str, lab_tags: &[&str]) -> Value {
    let out = std::env::temp_dir().join(format!(
        "rtlan-{name}-{backend}-smoke-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&out).expect("temp dir");
    let dir = name.replace("qsr-", "qsr/");
    let scenario = PathBuf::from(ROOT).join(format!("experiments/{dir}/scenario.toml"));
    let child = std::process::Command::new(BIN)
        .args([
            "experiment",
            name,
            "--quick",
            "--no-plot",
            "--backend",
            backend,
        ])
        .arg("--scenario")
        .arg(&scenario)
        .arg("--out")
        .arg(&out)
        .current_dir(ROOT)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("rtlan experiment starts");
    let pid = child.id() % 1_000_000;
    let run = child.wait_with_output().expect("rtlan experiment runs");
    let netns = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    for tag in lab_tags {
        let ours = format!("rtl-{tag}{pid}-");
        assert!(!netns.contains(&ours), "{name} left {ours}…:\n{netns}");
    }
    let text = std::fs::read_to_string(out.join(results_name));
    let _ = std::fs::remove_dir_all(&out);
    assert!(
        run.status.success(),
        "{name} on {backend} failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let r: Value = serde_json::from_str(&text.expect("results written")).expect("JSON");
    assert_eq!(r["quick"], true);
    r
}

fn u(v: &Value, pointer: &str) -> u64 {
    v.pointer(pointer)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{pointer} in {v}"))
}

/// A loss record's frames are the sent packets in frames of `per_frame`, and no more frames
/// are lost than packets.
fn check_loss(loss: &Value, per_frame: u64) {
    let (sent, lost) = (u(loss, "/sent"), u(loss, "/lost"));
    assert_eq!(u(loss, "/frames"), sent.div_ceil(per_frame), "{loss}");
    assert!(u(loss, "/frames_lost") <= lost, "{loss}");
    assert_eq!(u(loss, "/received") + lost, sent, "{loss}");
}

#[test]
fn qsr_video_on_the_simulator_loses_frames_unreserved_and_nothing_reserved() {
    let r = quick("qsr-video", "sim", "results-sim.json", &[]);
    let cases = r["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 2);
    for c in cases {
        for v in c["videos"].as_array().expect("one record per video") {
            check_loss(v, 12);
        }
    }
    // The totals over both videos.
    let (plain, reserved) = (&cases[0]["video"], &cases[1]["video"]);
    assert!(
        u(plain, "/frames_lost") > 0,
        "the blast costs frames: {plain}"
    );
    assert_eq!(u(reserved, "/lost"), 0, "{reserved}");
    assert!(u(reserved, "/sent") > 0);
    assert!(u(&cases[1], "/routers_total/labelled_switched") > 0);
}

#[test]
fn qsr_signalling_on_the_simulator_is_kept_only_on_the_protected_queue() {
    let r = quick("qsr-signalling", "sim", "results-sim.json", &[]);
    let cases = r["cases"].as_array().expect("cases");
    assert_eq!(cases[0]["protected"], true);
    assert_eq!(u(&cases[0], "/state_timeouts"), 0, "{}", cases[0]);
    assert_eq!(u(&cases[0], "/early/lost"), 0);
    assert_eq!(u(&cases[0], "/late/opened"), 2, "set up during the flood");
    assert_eq!(cases[1]["protected"], false);
    let (protected_paths, exposed_paths) = (
        u(&cases[0], "/routers_total/rsvp_path_in"),
        u(&cases[1], "/routers_total/rsvp_path_in"),
    );
    assert!(
        exposed_paths < protected_paths,
        "the flood drops Path messages from the data queue: {exposed_paths} vs {protected_paths}"
    );
    assert!(u(&cases[1], "/late/sent") < u(&cases[0], "/late/sent"));
}

#[test]
fn qsr_fig6_quick_measures_both_routers_at_both_depths() {
    if !root_or_skip("qsr_fig6_quick_measures_both_routers_at_both_depths") {
        return;
    }
    let r = quick("qsr-fig6", "lab", "results.json", &["qf6r", "qf6k"]);
    let points = r["points"].as_array().expect("points");
    assert_eq!(
        points.len(),
        4,
        "64-byte frames, depths 1 and 32, two routers"
    );
    for p in points {
        assert!(p["forwarded_kpps"].as_f64().unwrap_or(0.0) > 1.0, "{p}");
        let depth = u(p, "/depth") as usize;
        assert_eq!(p["prefix_lens"].as_array().map(Vec::len), Some(depth));
    }
    assert_eq!(r["ratios"].as_array().map(Vec::len), Some(2));
}

#[test]
fn qsr_video_quick_in_the_lab_reserves_across_three_routers() {
    if !root_or_skip("qsr_video_quick_in_the_lab_reserves_across_three_routers") {
        return;
    }
    let r = quick("qsr-video", "lab", "results-lab.json", &["qv"]);
    let cases = r["cases"].as_array().expect("cases");
    for c in cases {
        check_loss(&c["video"], 12);
        assert!(u(c, "/video/sent") > 100, "{c}");
    }
    let reserved = &cases[1];
    // The first router classified the stream and the two after it switched it by label.
    assert!(u(reserved, "/routers/r3/reserved_in") > 0, "{reserved}");
    assert!(
        u(reserved, "/routers/r2/labelled_switched") > 0,
        "{reserved}"
    );
    assert!(
        u(reserved, "/routers/r1/labelled_switched") > 0,
        "{reserved}"
    );
    assert_eq!(u(&cases[0], "/routers/r3/reserved_in"), 0);
}

#[test]
fn qsr_signalling_quick_in_the_lab_restarts_the_routers_per_case() {
    if !root_or_skip("qsr_signalling_quick_in_the_lab_restarts_the_routers_per_case") {
        return;
    }
    let r = quick("qsr-signalling", "lab", "results-lab.json", &["qs"]);
    let cases = r["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 2);
    for c in cases {
        check_loss(&c["stream"], 12);
        assert_eq!(c["floods"].as_array().map(Vec::len), Some(4), "{c}");
        // Every router saw Path messages: the reservation before the flood was made.
        for router in ["r1", "r2", "r3"] {
            assert!(u(c, &format!("/routers/{router}/rsvp_path_in")) > 0, "{c}");
        }
    }
}
