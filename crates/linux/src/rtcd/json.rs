//! The JSON-lines client API of the host daemon (EtheReal §2.2: the application asks its local
//! RTCD for a connection), byte for byte in `docs/rtcd.md`.
//!
//! A request line is a JSON object: the core's [`Request`] (tagged by `"op"`) plus an optional
//! `"tag"` (unsigned integer, echoed in the reply; 0 if absent). `register` may omit `"pid"`: the
//! peer's PID from `SO_PEERCRED` is used. Replies are built by hand here because the core's
//! [`Reply`] has no serde: `{"ok":true,"tag":T,"reply":"opened",...}` or
//! `{"ok":false,"tag":T,"reply":"failed","code":"...","error":"..."}`.

use rtlan_core::rtcd::{ConnPhase, Reply, Request, RtcdError};
use serde_json::{json, Value};

/// A request line the daemon cannot take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    /// Not JSON, not an object, an unknown `op`, or wrong field types (serde's text).
    #[error("bad request: {0}")]
    BadRequest(String),
    /// `tag` is present but not an unsigned integer.
    #[error("bad request: tag must be an unsigned integer")]
    BadTag,
    /// `register` without `pid` and the peer's PID is unknown.
    #[error("bad request: register needs a pid (the peer's PID is unknown)")]
    NoPid,
}

/// Parses one request line; `peer_pid` fills in a `register` without `pid`. On error, returns
/// the tag if one could be read, so the error reply can echo it.
pub fn parse_request(
    line: &[u8],
    peer_pid: Option<u32>,
) -> Result<(u64, Request), (u64, LineError)> {
    let mut value: Value =
        serde_json::from_slice(line).map_err(|e| (0, LineError::BadRequest(e.to_string())))?;
    let Some(object) = value.as_object_mut() else {
        return Err((
            0,
            LineError::BadRequest("expected a JSON object".to_string()),
        ));
    };
    let tag = match object.remove("tag") {
        None | Some(Value::Null) => 0,
        Some(t) => t.as_u64().ok_or((0, LineError::BadTag))?,
    };
    if object.get("op").and_then(Value::as_str) == Some("register") && !object.contains_key("pid") {
        let pid = peer_pid.ok_or((tag, LineError::NoPid))?;
        object.insert("pid".to_string(), Value::from(pid));
    }
    let request: Request =
        serde_json::from_value(value).map_err(|e| (tag, LineError::BadRequest(e.to_string())))?;
    Ok((tag, request))
}

/// The short machine-readable code of an error (`"code"` in failure replies).
pub fn error_code(error: &RtcdError) -> &'static str {
    match error {
        RtcdError::Config(_) => "config",
        RtcdError::NotRegistered => "not_registered",
        RtcdError::Malformed(_) => "malformed",
        RtcdError::LocalAdmission { .. } => "local_admission",
        RtcdError::IdsExhausted => "ids_exhausted",
        RtcdError::Refused { .. } => "refused",
        RtcdError::Timeout => "timeout",
        RtcdError::Cancelled => "cancelled",
        RtcdError::UnknownConnection => "unknown_connection",
        RtcdError::NotOwner => "not_owner",
        RtcdError::ManagerRefused(_) => "manager_refused",
        RtcdError::ManagerUnreachable(_) => "manager_unreachable",
    }
}

fn phase_name(phase: ConnPhase) -> &'static str {
    match phase {
        ConnPhase::Admitting => "admitting",
        ConnPhase::Opening => "opening",
        ConnPhase::Open => "open",
        ConnPhase::Closing => "closing",
    }
}

/// The failure reply to a line that could not be taken (`code` = `"bad_request"`).
pub(super) fn line_error_reply(tag: u64, error: &LineError) -> Value {
    json!({"ok": false, "tag": tag, "reply": "failed", "conn": null,
           "code": "bad_request", "error": error.to_string()})
}

/// A failure reply the shell itself decides (e.g. a PID that does not exist).
pub(super) fn shell_error_reply(tag: u64, code: &str, error: &str) -> Value {
    json!({"ok": false, "tag": tag, "reply": "failed", "conn": null,
           "code": code, "error": error})
}

/// The JSON line of a core reply.
pub fn reply_to_json(tag: u64, reply: &Reply) -> Value {
    match reply {
        Reply::Registered { pid } => {
            json!({"ok": true, "tag": tag, "reply": "registered", "pid": pid})
        }
        Reply::Opened {
            conn,
            proxy_ip,
            proxy_mac,
            id,
            hops,
            delay_bound_us,
        } => json!({"ok": true, "tag": tag, "reply": "opened", "conn": conn.0,
                    "proxy_ip": proxy_ip.to_string(),
                    "proxy_mac": proxy_mac.map(|m| m.to_string()),
                    "id": id, "hops": hops, "delay_bound_us": delay_bound_us}),
        Reply::Failed { conn, error } => {
            let mut v = json!({"ok": false, "tag": tag, "reply": "failed",
                               "conn": conn.map(|c| c.0), "code": error_code(error),
                               "error": error.to_string()});
            match error {
                RtcdError::Refused {
                    hop,
                    reason,
                    switch_ip,
                } => {
                    v["hop"] = json!(hop);
                    v["reason"] = json!(reason.to_string());
                    v["switch_ip"] = json!(switch_ip.to_string());
                }
                RtcdError::LocalAdmission {
                    requested,
                    available,
                } => {
                    v["requested_bps"] = json!(requested);
                    v["available_bps"] = json!(available);
                }
                _ => {}
            }
            v
        }
        Reply::Closed { conn } => {
            json!({"ok": true, "tag": tag, "reply": "closed", "conn": conn.0})
        }
        Reply::Revoked { conn } => {
            json!({"ok": true, "tag": tag, "reply": "revoked", "conn": conn.0})
        }
        Reply::List(list) => {
            let connections: Vec<Value> = list
                .iter()
                .map(|c| {
                    json!({"conn": c.conn.0, "id": c.id, "proxy_ip": c.proxy_ip.to_string(),
                           "dst_ip": c.dst_ip.to_string(), "dst_port": c.dst_port,
                           "src_port": c.src_port, "rate_bps": c.rate_bps,
                           "phase": phase_name(c.phase), "delay_bound_us": c.delay_bound_us})
                })
                .collect();
            json!({"ok": true, "tag": tag, "reply": "list", "connections": connections})
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use rtlan_core::rtcd::{ConnHandle, ConnInfo};
    use rtlan_wire::control::FailReason;
    use rtlan_wire::ethernet::Address;

    use super::*;

    #[test]
    fn requests_map_from_documented_lines() {
        let cases: [(&str, u64, Request); 6] = [
            (
                r#"{"op":"register","pid":42}"#,
                0,
                Request::Register { pid: 42 },
            ),
            (
                r#"{"op":"register","tag":3}"#,
                3,
                Request::Register { pid: 777 },
            ),
            (
                r#"{"op":"open","tag":9,"dst_ip":"198.18.0.2","dst_port":5004,"src_port":0,"rate_bps":1000000,"max_burst":3028,"max_packet":1514}"#,
                9,
                Request::Open {
                    dst_ip: Ipv4Addr::new(198, 18, 0, 2),
                    dst_port: 5004,
                    src_port: 0,
                    rate_bps: 1_000_000,
                    max_burst: 3028,
                    max_packet: 1514,
                    shaping: rtlan_core::rtcd::DaemonShaping::None,
                    delay_us: None,
                },
            ),
            (
                r#"{"op":"open","tag":10,"dst_ip":"198.18.0.2","dst_port":5004,"src_port":0,"rate_bps":1000000,"max_burst":3028,"max_packet":1514,"delay_us":2000}"#,
                10,
                Request::Open {
                    dst_ip: Ipv4Addr::new(198, 18, 0, 2),
                    dst_port: 5004,
                    src_port: 0,
                    rate_bps: 1_000_000,
                    max_burst: 3028,
                    max_packet: 1514,
                    shaping: rtlan_core::rtcd::DaemonShaping::None,
                    delay_us: Some(2000),
                },
            ),
            (
                r#"{"op":"close","conn":7,"tag":1}"#,
                1,
                Request::Close {
                    conn: ConnHandle(7),
                },
            ),
            (r#"{"op":"list","tag":null}"#, 0, Request::List),
        ];
        for (line, tag, request) in cases {
            assert_eq!(
                parse_request(line.as_bytes(), Some(777)),
                Ok((tag, request)),
                "{line}"
            );
        }
    }

    #[test]
    fn bad_lines_are_errors_not_panics() {
        for (line, tag) in [
            ("not json", 0),
            ("[1,2]", 0),
            (r#"{"op":"fly"}"#, 0),
            (r#"{"op":"close","tag":5}"#, 5),
            (r#"{"op":"close","conn":-1,"tag":6}"#, 6),
            (r#"{"op":"open","dst_ip":"nowhere","tag":2}"#, 2),
            (r#"{"op":"list","tag":"x"}"#, 0),
            (r#"{"op":"register","pid":99999999999}"#, 0),
        ] {
            let err = parse_request(line.as_bytes(), Some(1)).expect_err(line);
            assert_eq!(err.0, tag, "{line}");
        }
        assert_eq!(
            parse_request(br#"{"op":"register","tag":4}"#, None),
            Err((4, LineError::NoPid))
        );
    }

    #[test]
    fn replies_render_as_documented() {
        let opened = Reply::Opened {
            conn: ConnHandle(1),
            proxy_ip: Ipv4Addr::new(198, 19, 0, 16),
            proxy_mac: Some(Address([2, 0x52, 0x54, 0x4c, 0, 16])),
            id: 16,
            hops: 2,
            delay_bound_us: None,
        };
        assert_eq!(
            reply_to_json(9, &opened).to_string(),
            r#"{"conn":1,"delay_bound_us":null,"hops":2,"id":16,"ok":true,"proxy_ip":"198.19.0.16","proxy_mac":"02:52:54:4c:00:10","reply":"opened","tag":9}"#
        );
        let central = Reply::Opened {
            conn: ConnHandle(3),
            proxy_ip: Ipv4Addr::new(198, 18, 0, 2),
            proxy_mac: None,
            id: 16,
            hops: 1,
            delay_bound_us: Some(9368),
        };
        let v = reply_to_json(1, &central);
        assert_eq!(v["proxy_ip"], json!("198.18.0.2"));
        assert_eq!(v["proxy_mac"], Value::Null);
        assert_eq!(v["delay_bound_us"], json!(9368));
        let v = reply_to_json(
            2,
            &Reply::Failed {
                conn: Some(ConnHandle(3)),
                error: RtcdError::ManagerRefused("refused: delay".into()),
            },
        );
        assert_eq!(v["code"], json!("manager_refused"));
        assert!(v["error"]
            .as_str()
            .is_some_and(|e| e.contains("refused: delay")));
        let refused = Reply::Failed {
            conn: Some(ConnHandle(2)),
            error: RtcdError::Refused {
                hop: 1,
                reason: FailReason::Bandwidth,
                switch_ip: Ipv4Addr::new(198, 18, 255, 1),
            },
        };
        let v = reply_to_json(3, &refused);
        assert_eq!(v["ok"], json!(false));
        assert_eq!(v["code"], json!("refused"));
        assert_eq!(v["conn"], json!(2));
        assert_eq!(v["hop"], json!(1));
        assert_eq!(v["switch_ip"], json!("198.18.255.1"));
        let v = reply_to_json(
            4,
            &Reply::Failed {
                conn: None,
                error: RtcdError::NotRegistered,
            },
        );
        assert_eq!(v["conn"], Value::Null);
        assert_eq!(v["code"], json!("not_registered"));
        let list = Reply::List(vec![ConnInfo {
            conn: ConnHandle(5),
            id: 17,
            proxy_ip: Ipv4Addr::new(198, 19, 0, 17),
            dst_ip: Ipv4Addr::new(198, 18, 0, 2),
            dst_port: 5004,
            src_port: 0,
            rate_bps: 1000,
            phase: ConnPhase::Opening,
            delay_bound_us: None,
        }]);
        let v = reply_to_json(0, &list);
        assert_eq!(v["reply"], json!("list"));
        assert_eq!(v["connections"][0]["phase"], json!("opening"));
        assert_eq!(v["connections"][0]["proxy_ip"], json!("198.19.0.17"));
        assert_eq!(
            reply_to_json(
                0,
                &Reply::Revoked {
                    conn: ConnHandle(5)
                }
            )["reply"],
            json!("revoked")
        );
        assert_eq!(
            reply_to_json(2, &Reply::Registered { pid: 8 }).to_string(),
            r#"{"ok":true,"pid":8,"reply":"registered","tag":2}"#
        );
    }
}
