//! The control frames the real switch and host daemon cores emit, read through
//! `tools/wireshark/rtlan.lua`: `rtlan sim` runs a two-switch path (a reservation admitted, one
//! refused by the first switch for its delay requirement, the second switch restarted so the
//! first tears the connection down and the daemon signals it again, a REFRESH round at 10 s)
//! with `--pcap`, and `tshark -X lua_script:…` must decode every EtherType 0x88B5 frame of every
//! link with no expert info and no Lua error, and see all eight message types with the values
//! this run must produce. The Reprs of every type, field by field, and the broken messages are
//! checked in `crates/wire/tests/control_tshark.rs`.
//!
//! Without `tshark` on the PATH the test says so and passes — except under `CI=true`, where a
//! missing `tshark` fails it (`scripts/install-deps` installs it).

#[path = "../../wire/tests/tshark_util/mod.rs"]
mod tshark_util;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

const SCENARIO: &str = r#"
[[host]]
name = "a"

[[host]]
name = "b"

[[switch]]
name = "s1"
kind = "rtlan"

[[switch]]
name = "s2"
kind = "rtlan"

[[link]]
ends = ["a", "s1"]
rate = "100mbit"

[[link]]
ends = ["s1", "s2"]
rate = "100mbit"

[[link]]
ends = ["s2", "b"]
rate = "100mbit"

[sim]
duration = "10500ms"   # one REFRESH round (the daemon's period is 10 s)
seed = 1

[[traffic]]
name = "admitted"
src = "a"
dst = "b"
kind = "constant"
rate = "200kbit"
size = 200
start = "100ms"
reserve = { rate = "1mbit", delay = "50ms" }

[[traffic]]
name = "too tight"     # the first switch refuses: SETUP_FAIL DELAY
src = "a"
dst = "b"
kind = "constant"
rate = "100kbit"
size = 200
start = "200ms"
reserve = { rate = "1mbit", delay = "3ms" }

[[fault]]              # s1 tears the connection down towards a, which signals it again
at = "2s"
kind = "restart"
switch = "s2"
down_for = "50ms"
"#;

#[test]
fn tshark_decodes_every_control_frame_the_simulated_switches_emit() {
    if !tshark_util::available() {
        return;
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("control-tshark-sim");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let scenario = dir.join("control.toml");
    std::fs::write(&scenario, SCENARIO).unwrap();
    let pcaps = dir.join("pcap");
    let out = Command::new(env!("CARGO_BIN_EXE_rtlan"))
        .arg("sim")
        .arg(&scenario)
        .arg("--pcap")
        .arg(&pcaps)
        .output()
        .expect("rtlan runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let mut files: Vec<PathBuf> = std::fs::read_dir(&pcaps)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 3, "{files:?}");
    let mut types = BTreeSet::new();
    let mut rows = Vec::new();
    for pcap in &files {
        let name = pcap.file_name().unwrap().to_string_lossy().into_owned();
        for row in tshark_util::control_rows(pcap) {
            types.insert(row.msg_type);
            rows.push((
                name.clone(),
                row.msg_type.to_string(),
                row.fail_reason,
                row.teardown_reason,
            ));
        }
    }
    // SETUP, SETUP_OK, SETUP_FAIL, TEARDOWN, TEARDOWN_ACK, HELLO, REFRESH, REFRESH_ACK.
    assert_eq!(types, (1..=8).collect::<BTreeSet<u8>>(), "{rows:?}");
    let count = |t: &str| rows.iter().filter(|r| r.1 == t).count();
    // Two SETUPs from a (one admitted, one refused) and one relayed by s1, then after the
    // restart one from a and one relayed: each admitted one answered hop by hop.
    assert_eq!(count("1"), 5, "{rows:?}");
    assert_eq!(count("2"), 4, "{rows:?}");
    let fails: Vec<_> = rows.iter().filter(|r| r.1 == "3").collect();
    assert_eq!(fails.len(), 1, "{rows:?}");
    assert_eq!(fails[0].0, "a-s1.pcap");
    assert_eq!(fails[0].2, "9", "refused for DELAY");
    let teardowns: Vec<_> = rows.iter().filter(|r| r.1 == "4").collect();
    assert_eq!(teardowns.len(), 1, "{rows:?}");
    assert_eq!(teardowns[0].3, "4", "reason neighbour_restarted");
}
