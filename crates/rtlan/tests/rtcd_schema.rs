//! The published JSON Schemas of rtcd's client protocol (`docs/schema/rtcd-request.schema.json`,
//! `docs/schema/rtcd-reply.schema.json`, draft 2020-12) checked against what they describe, so
//! they cannot drift from the code: every line of docs/rtcd.md's example session, every reply,
//! failure and event the daemon's renderer (`rtlan_linux::rtcd::render`, the envelope of
//! `rtlan_linux::mgmt`) produces, and the parser (`rtlan_linux::rtcd::parse_request`) accepting
//! every request the schema accepts and refusing the ones it refuses for their types.

use std::net::Ipv4Addr;
use std::path::PathBuf;

use jsonschema::Validator;
use rtlan_core::rtcd::policy::PolicyRefusal;
use rtlan_core::rtcd::{ConnHandle, ConnInfo, ConnPhase, Reply, RtcdError};
use rtlan_linux::mgmt::{self, MgmtError};
use rtlan_linux::rtcd::{parse_request, render, Rendered};
use rtlan_wire::control::{FailReason, TeardownReason};
use rtlan_wire::ethernet::Address;
use serde_json::{json, Value};

fn repo_file(rel: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn validator(rel: &str) -> Validator {
    let schema: Value = serde_json::from_str(&repo_file(rel)).expect("schema is JSON");
    jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap_or_else(|e| panic!("{rel} is not a valid draft 2020-12 schema: {e}"))
}

fn requests() -> Validator {
    validator("docs/schema/rtcd-request.schema.json")
}

fn replies() -> Validator {
    validator("docs/schema/rtcd-reply.schema.json")
}

#[track_caller]
fn assert_valid(v: &Validator, line: &Value) {
    let errors: Vec<String> = v.iter_errors(line).map(|e| e.to_string()).collect();
    assert!(
        errors.is_empty(),
        "{line} does not match the schema: {errors:?}"
    );
}

#[test]
fn the_documented_example_session_matches_the_schemas() {
    let doc = repo_file("docs/rtcd.md");
    let session = doc
        .split("### Example session")
        .nth(1)
        .and_then(|s| s.split("```").nth(1))
        .expect("docs/rtcd.md has an example session in a code block");
    let (req, rep) = (requests(), replies());
    let (mut sent, mut answered, mut not_json) = (0, 0, 0);
    for line in session.lines() {
        if let Some(text) = line.strip_prefix("→ ") {
            match serde_json::from_str::<Value>(text) {
                Ok(v) => {
                    assert_valid(&req, &v);
                    // The daemon's parser takes it too.
                    parse_request(text.as_bytes(), Some(4242)).expect(text);
                    sent += 1;
                }
                Err(_) => not_json += 1, // the example's deliberate bad line
            }
        } else if let Some(text) = line.strip_prefix("← ") {
            let v: Value = serde_json::from_str(text).expect("every documented reply is JSON");
            assert_valid(&rep, &v);
            answered += 1;
        }
    }
    assert_eq!(
        (sent, answered, not_json),
        (4, 5, 1),
        "the example session changed"
    );
}

fn reply_line(reply: &Reply) -> Value {
    match render(reply) {
        Rendered::Reply(Ok(data)) => mgmt::ok_reply(Some(7), data),
        Rendered::Reply(Err(e)) => mgmt::error_reply(Some(7), &e),
        Rendered::Event(v) => v,
    }
}

#[test]
fn every_rendered_reply_failure_and_event_matches_the_schema() {
    let rep = replies();
    let conn = ConnHandle(3);
    let mut lines = vec![
        Reply::Registered { pid: u32::MAX },
        Reply::Opened {
            conn,
            proxy_ip: Ipv4Addr::new(198, 19, 0, 16),
            proxy_mac: Some(Address([2, 0x52, 0x54, 0x4c, 0, 16])),
            id: 16,
            hops: 3,
            delay_bound_us: Some(9368),
        },
        Reply::Opened {
            conn,
            proxy_ip: Ipv4Addr::new(198, 18, 0, 2),
            proxy_mac: None,
            id: u16::MAX,
            hops: 1,
            delay_bound_us: None,
        },
        Reply::Closed {
            conn: ConnHandle(u64::MAX),
        },
        Reply::List(vec![]),
        Reply::List(
            [
                ConnPhase::Admitting,
                ConnPhase::Opening,
                ConnPhase::Open,
                ConnPhase::Closing,
            ]
            .into_iter()
            .map(|phase| ConnInfo {
                conn,
                id: 17,
                proxy_ip: Ipv4Addr::new(198, 19, 0, 17),
                dst_ip: Ipv4Addr::new(198, 18, 0, 2),
                dst_port: 5004,
                src_port: 0,
                rate_bps: 1_000_000,
                phase,
                delay_bound_us: (phase == ConnPhase::Open).then_some(900),
                owner_pid: (phase != ConnPhase::Closing).then_some(42),
            })
            .collect(),
        ),
        Reply::Recovered {
            conn,
            hops: 2,
            delay_bound_us: Some(900),
        },
        Reply::Recovered {
            conn,
            hops: 2,
            delay_bound_us: None,
        },
    ];
    for reason in [
        TeardownReason::Closed,
        TeardownReason::Expired,
        TeardownReason::StateLost,
        TeardownReason::NeighbourRestarted,
        TeardownReason::TopologyChange,
        TeardownReason::LinkDown,
        TeardownReason::NeighbourLost,
        TeardownReason::Administrative,
    ] {
        lines.push(Reply::Interrupted { conn, reason });
        lines.push(Reply::Revoked {
            conn,
            reason,
            error: None,
        });
        lines.push(Reply::Revoked {
            conn,
            reason,
            error: Some(RtcdError::Timeout),
        });
    }
    // Every error the core can answer with (error_code's match is exhaustive over these).
    let errors = [
        RtcdError::Config("x"),
        RtcdError::NotRegistered,
        RtcdError::Malformed("rate_bps is zero"),
        RtcdError::LocalAdmission {
            requested: 70_000_000,
            available: 60_000_000,
        },
        RtcdError::HostDelay {
            needed_us: 2500,
            budget_us: 2000,
        },
        RtcdError::HostDelay {
            needed_us: u64::MAX, // unbounded: null
            budget_us: 2000,
        },
        RtcdError::IdsExhausted,
        RtcdError::Refused {
            hop: 1,
            reason: FailReason::Bandwidth,
            switch_ip: Ipv4Addr::new(198, 18, 255, 1),
        },
        RtcdError::Refused {
            hop: u8::MAX,
            reason: FailReason::NoRoute,
            switch_ip: Ipv4Addr::new(198, 18, 255, 2),
        },
        RtcdError::Timeout,
        RtcdError::Rsvp("no path".into()),
        RtcdError::ManagerRefused("refused: delay".into()),
        RtcdError::ManagerUnreachable("connection refused".into()),
        RtcdError::Cancelled,
        RtcdError::UnknownConnection,
        RtcdError::NotOwner,
        RtcdError::Policy(PolicyRefusal::Total {
            rule: "group audio".into(),
            limit: 40_000_000,
            held: 30_000_000,
            requested: 20_000_000,
        }),
    ];
    // A new error variant fails to compile here until it is added to the list above (and so to
    // the schema's codes).
    for error in &errors {
        match error {
            RtcdError::Config(_)
            | RtcdError::NotRegistered
            | RtcdError::Policy(_)
            | RtcdError::Malformed(_)
            | RtcdError::LocalAdmission { .. }
            | RtcdError::HostDelay { .. }
            | RtcdError::IdsExhausted
            | RtcdError::Refused { .. }
            | RtcdError::Timeout
            | RtcdError::Rsvp(_)
            | RtcdError::ManagerRefused(_)
            | RtcdError::ManagerUnreachable(_)
            | RtcdError::Cancelled
            | RtcdError::UnknownConnection
            | RtcdError::NotOwner => {}
        }
    }
    for error in errors {
        for conn in [None, Some(conn)] {
            lines.push(Reply::Failed {
                conn,
                error: error.clone(),
            });
        }
    }
    for reply in &lines {
        assert_valid(&rep, &reply_line(reply));
    }
    // What the daemon's shell answers itself: a bad line (id unreadable or echoed), and the
    // socket's own refusals (crates/linux/src/rtcd/daemon.rs, crates/linux/src/mgmt/server.rs).
    for line in [
        "not json",
        "[1]",
        r#"{"op":"fly","id":3}"#,
        r#"{"op":"open","id":2,"dst_ip":"nowhere"}"#,
    ] {
        let (id, e) = parse_request(line.as_bytes(), Some(1)).expect_err(line);
        assert_valid(&rep, &mgmt::error_reply(id, &MgmtError::from(e)));
    }
    for code in [
        "forbidden",
        "no_such_process",
        "line_too_long",
        "too_many_clients",
        "idle_timeout",
    ] {
        assert_valid(
            &rep,
            &mgmt::error_reply(None, &MgmtError::new(code, "text")),
        );
    }
    // The schema is not vacuous: wrong shapes are refused.
    for bad in [
        json!({"id": 1, "ok": true, "data": {"reply": "opened", "conn": 1}}),
        json!({"id": 1, "ok": false, "error": {"code": "no_such_code", "message": "m"}}),
        json!({"id": 1, "ok": false, "error": {"code": "refused", "message": "m", "conn": 1}}),
        json!({"id": -1, "ok": true, "data": {"reply": "closed", "conn": 1}}),
        json!({"event": "revoked", "conn": 1}),
        json!({"id": 1, "ok": true, "data": {"reply": "list", "connections": [{"conn": 1}]}}),
    ] {
        assert!(!rep.is_valid(&bad), "{bad} should not match");
    }
}

#[test]
fn the_parser_takes_what_the_request_schema_takes() {
    let req = requests();
    let accepted = [
        r#"{"op":"register"}"#,
        r#"{"op":"register","id":0,"pid":4294967295}"#,
        r#"{"op":"open","id":9,"dst_ip":"198.18.0.2","dst_port":5004,"src_port":0,"rate_bps":1000000,"max_burst":3028,"max_packet":1514}"#,
        r#"{"op":"open","id":9007199254740991,"dst_ip":"198.18.0.2","dst_port":65535,"src_port":65535,"rate_bps":18446744073709551615,"burst_bytes":3028,"max_packet":1514,"shaping":"kernel","delay_us":null,"extra":"ignored"}"#,
        r#"{"op":"open","id":null,"dst_ip":"10.0.0.1","dst_port":1,"src_port":0,"rate_bps":1,"burst_bytes":1,"max_packet":1,"shaping":"none","delay_us":2000}"#,
        r#"{"op":"close","conn":18446744073709551615}"#,
        r#"{"op":"list"}"#,
        r#"{"op":"list","all":true}"#,
    ];
    for line in accepted {
        let v: Value = serde_json::from_str(line).expect(line);
        assert_valid(&req, &v);
        parse_request(line.as_bytes(), Some(1)).expect(line);
    }
    // Refused by both: wrong types, unknown op, missing fields, out-of-range integers.
    let refused = [
        r#"{"op":"fly"}"#,
        r#"{"id":1}"#,
        r#"{"op":"register","pid":4294967296}"#,
        r#"{"op":"register","pid":"42"}"#,
        r#"{"op":"open","dst_ip":"nowhere","dst_port":5004,"src_port":0,"rate_bps":1,"burst_bytes":1,"max_packet":1}"#,
        r#"{"op":"open","dst_ip":"198.18.0.2","dst_port":5004,"src_port":0,"rate_bps":1,"max_packet":1}"#,
        r#"{"op":"open","dst_ip":"198.18.0.2","dst_port":65536,"src_port":0,"rate_bps":1,"burst_bytes":1,"max_packet":1}"#,
        r#"{"op":"open","dst_ip":"198.18.0.2","dst_port":5004,"src_port":0,"rate_bps":1,"burst_bytes":1,"max_packet":1,"shaping":"leaky"}"#,
        r#"{"op":"close"}"#,
        r#"{"op":"close","conn":-1}"#,
        r#"{"op":"list","all":"yes"}"#,
        r#"{"op":"list","id":"x"}"#,
    ];
    for line in refused {
        let v: Value = serde_json::from_str(line).expect(line);
        assert!(!req.is_valid(&v), "the schema takes {line}");
        assert!(
            parse_request(line.as_bytes(), Some(1)).is_err(),
            "the parser takes {line}"
        );
    }
}
