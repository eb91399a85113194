//! The host daemon on a real host's terms (docs/rtcd.md `socket_mode`, `socket_group`, `list`):
//! its socket opened to other users by configuration, and the operator's `list all` — every
//! connection on the host with its owner — for root only. Clients are `rtlan ctl`, run as root
//! and as `nobody` (setpriv, util-linux).

mod common;

use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Output};
use std::time::Duration;

use common::*;

fn ctl(socket: &std::path::Path, as_nobody: bool, args: &[&str]) -> Output {
    let mut cmd = if as_nobody {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_rtlan"));
        c
    } else {
        Command::new(env!("CARGO_BIN_EXE_rtlan"))
    };
    cmd.args(["ctl", "--socket"])
        .arg(socket)
        .args(args)
        .output()
        .expect("rtlan ctl runs")
}

#[test]
fn an_opened_socket_lets_users_in_and_only_root_lists_every_connection() {
    if !root_or_skip("rtcd_operator_lab") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = up_file("default.toml", "rto");
    let rtcd = Daemon::start_with_config(&lab, "a", "socket_mode = \"0666\"\n");
    let (opened, _) = wait_until(Duration::from_secs(2), || {
        std::fs::metadata(&rtcd.socket).is_ok_and(|m| m.permissions().mode() & 0o777 == 0o666)
    });
    assert!(opened, "socket_mode applied");
    // The state directory must let `nobody` reach the socket.
    let dir = rtcd.socket.parent().expect("dir");
    let mut perms = std::fs::metadata(dir).expect("dir").permissions();
    perms.set_mode(perms.mode() | 0o011);
    std::fs::set_permissions(dir, perms).expect("chmod dir");

    // Root reserves a→b through its own client, which stays connected.
    let mut client = rtcd.client();
    let params = open_params(ip(&lab, "b"), 5004);
    let opened = client.open(&params).expect("admitted");

    // Root's operator view: every connection, with its owner's PID.
    let all = ctl(&rtcd.socket, false, &["list", "all=true", "--json"]);
    assert!(
        all.status.success(),
        "{}",
        String::from_utf8_lossy(&all.stderr)
    );
    let data: serde_json::Value = serde_json::from_slice(&all.stdout).expect("JSON");
    let conns = data["connections"].as_array().expect("connections");
    assert_eq!(conns.len(), 1, "{data}");
    assert_eq!(conns[0]["conn"], opened.conn, "{data}");
    assert_eq!(conns[0]["owner_pid"], std::process::id(), "{data}");
    // Its own list, from another client: nothing of its own.
    let own = ctl(&rtcd.socket, false, &["list", "--json"]);
    let data: serde_json::Value = serde_json::from_slice(&own.stdout).expect("JSON");
    assert_eq!(data["connections"], serde_json::json!([]), "{data}");

    // Another user may connect (mode 0666) but not see the others' connections.
    let theirs = ctl(&rtcd.socket, true, &["list", "--json"]);
    assert!(
        theirs.status.success(),
        "{}",
        String::from_utf8_lossy(&theirs.stderr)
    );
    let refused = ctl(&rtcd.socket, true, &["list", "all=true"]);
    assert_eq!(refused.status.code(), Some(1));
    let msg = String::from_utf8_lossy(&refused.stderr);
    assert!(msg.contains("forbidden"), "{msg}");
    drop(client);
    drop(rtcd);
    down_clean(lab);
}
