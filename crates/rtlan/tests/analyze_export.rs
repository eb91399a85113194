//! `rtlan analyze --export-dnc` and `--token-buckets` as a user runs them (no lab, no root).

use std::path::PathBuf;
use std::process::{Command, Output};

fn table4() -> String {
    format!(
        "{}/../../experiments/loser/table4-ts1ms.toml",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn rtlan(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rtlan"))
        .args(args)
        .output()
        .expect("rtlan runs")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rtlan-export-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn export_writes_the_file_and_the_report_still_prints() {
    let dir = scratch("ok");
    let out = dir.join("t4.dnc");
    let o = rtlan(&[
        "analyze",
        &table4(),
        "--json",
        "--token-buckets",
        "--export-dnc",
        out.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // Token buckets: Σb/C + t_mux at s1->B, rounded up.
    assert_eq!(report["ports"][0]["delay_bound_us"], 1352);
    assert!(
        text.starts_with("rtlan-dnc 1\nserver 0 98600000 9/200000 s1->B\n"),
        "{text}"
    );
    // With --token-buckets the max_packet column equals the burst.
    assert!(
        text.contains("flow 40000000 52112 52112 98600000 1/12500 0 C-B\n"),
        "{text}"
    );
    assert_eq!(text.lines().filter(|l| l.starts_with("flow ")).count(), 4);
}

#[test]
fn timings_go_to_stderr_as_one_json_line() {
    let o = rtlan(&["analyze", &table4(), "--json", "--timings"]);
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    let line = err.lines().last().unwrap_or_default();
    let t: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {err}"));
    assert_eq!(t["repeats"], 20);
    assert!(t["analysis_us_min"].as_f64().unwrap() <= t["analysis_us_median"].as_f64().unwrap());
    assert!(t["read_us"].as_f64().unwrap() > 0.0);
    // stdout is still exactly the report.
    let _: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
}

#[test]
fn unwritable_export_path_is_an_error_naming_it() {
    let o = rtlan(&[
        "analyze",
        &table4(),
        "--export-dnc",
        "/nonexistent-dir/x.dnc",
    ]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("writing /nonexistent-dir/x.dnc"), "{err}");
}

fn tandem() -> String {
    format!(
        "{}/../../experiments/calculus/tandem-lp.toml",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// f's bound by each `--lp` choice: (delay_bound_us, method, the LP's bound if computed).
fn flow_f(lp: &str) -> (bool, i64, String, Option<i64>) {
    let o = rtlan(&["analyze", &tandem(), "--json", "--lp", lp]);
    let r: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    assert_eq!(o.status.success(), r["admitted"].as_bool().unwrap());
    let f = &r["flows"][1];
    assert_eq!(f["name"], "f");
    (
        r["admitted"].as_bool().unwrap(),
        f["delay_bound_us"].as_i64().unwrap(),
        f["method"].as_str().unwrap().to_string(),
        f["bounds_us"]["lp"].as_i64(),
    )
}

#[test]
fn lp_bound_admits_a_deadline_the_others_miss() {
    // PMOO gives f 4,875 µs, over its 4 ms deadline; the LP gives 3.8 ms (a delay a fluid
    // trajectory reaches) plus its certified tolerance (below 1 ns), rounded up to whole µs.
    assert_eq!(flow_f("never"), (false, 4875, "pmoo".into(), None));
    for lp in ["deadlines", "all"] {
        let (admitted, bound, method, by_lp) = flow_f(lp);
        assert!(
            admitted && method == "lp" && by_lp == Some(bound),
            "--lp {lp}"
        );
        assert!((3800..=3801).contains(&bound), "--lp {lp}: {bound}");
    }
    let o = rtlan(&["analyze", &tandem(), "--lp", "sometimes"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("sometimes"));
}
