//! The host daemon's client operations (EtheReal §2.2: the application asks its local RTCD
//! for a connection) in the one management envelope (`docs/mgmt.md`; operations in
//! `docs/rtcd.md`).
//!
//! A request's body is the core's [`Request`] (tagged by `"op"`). `register` may omit `"pid"`:
//! the peer's PID from `SO_PEERCRED` is used. Replies are built by hand here because the core's
//! [`Reply`] has no serde: `data` is `{"reply":"opened",...}`, a failure is an error with the
//! core's [`error_code`] and the refusal's details, and a revocation the path reports later is
//! the event `{"event":"revoked","conn":N,"reason":…}`; a connection the daemon signals again
//! after the path lost it gives `interrupted` then `recovered` (or `revoked`).
//!
//! The core matches replies to requests by a `u64` tag; the envelope's optional id maps onto it
//! as `id + 1`, tag 0 standing for "no id" ([`tag_of`], [`id_of`]).

use rtlan_core::rtcd::{ConnPhase, Reply, Request, RtcdError};
use serde_json::{json, Map, Value};

use crate::mgmt::{Envelope, MgmtError, RequestId};

/// A request body the daemon cannot take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    /// Not a valid envelope, an unknown `op`, or wrong field types (serde's text).
    #[error("bad request: {0}")]
    BadRequest(String),
    /// `register` without `pid` and the peer's PID is unknown.
    #[error("bad request: register needs a pid (the peer's PID is unknown)")]
    NoPid,
}

impl From<LineError> for MgmtError {
    fn from(e: LineError) -> MgmtError {
        MgmtError::bad_request(e.to_string())
    }
}

/// The core's tag for a request id (`id + 1`; 0 = no id).
pub fn tag_of(id: RequestId) -> u64 {
    // `id <= mgmt::MAX_ID < u64::MAX`, so the sum does not overflow.
    id.map_or(0, |id| id.saturating_add(1))
}

/// The request id of a core tag.
pub fn id_of(tag: u64) -> RequestId {
    tag.checked_sub(1)
}

/// Decodes a request body; `peer_pid` fills in a `register` without `pid`.
pub fn decode_request(envelope: &Envelope, peer_pid: Option<u32>) -> Result<Request, LineError> {
    let mut body = envelope.body.clone();
    if envelope.op == "register" && !body.contains_key("pid") {
        let pid = peer_pid.ok_or(LineError::NoPid)?;
        body.insert("pid".to_string(), Value::from(pid));
    }
    serde_json::from_value(Value::Object(body)).map_err(|e| LineError::BadRequest(e.to_string()))
}

/// Parses one whole request line (envelope and body). On error, returns the id if one could be
/// read, so the error reply can echo it.
pub fn parse_request(
    line: &[u8],
    peer_pid: Option<u32>,
) -> Result<(RequestId, Request), (RequestId, LineError)> {
    let envelope =
        crate::mgmt::parse_line(line).map_err(|(id, e)| (id, LineError::BadRequest(e.message)))?;
    let request = decode_request(&envelope, peer_pid).map_err(|e| (envelope.id, e))?;
    Ok((envelope.id, request))
}

/// The short machine-readable code of an error (`error.code` in failure replies).
pub fn error_code(error: &RtcdError) -> &'static str {
    match error {
        RtcdError::Config(_) => "config",
        RtcdError::NotRegistered => "not_registered",
        RtcdError::Policy(_) => "policy",
        RtcdError::Malformed(_) => "malformed",
        RtcdError::LocalAdmission { .. } => "local_admission",
        RtcdError::HostDelay { .. } => "host_delay",
        RtcdError::IdsExhausted => "ids_exhausted",
        RtcdError::Refused { .. } => "refused",
        RtcdError::Timeout => "timeout",
        RtcdError::Cancelled => "cancelled",
        RtcdError::UnknownConnection => "unknown_connection",
        RtcdError::NotOwner => "not_owner",
        RtcdError::ManagerRefused(_) => "manager_refused",
        RtcdError::ManagerUnreachable(_) => "manager_unreachable",
        RtcdError::Rsvp(_) => "rsvp",
    }
}

pub(crate) fn phase_name(phase: ConnPhase) -> &'static str {
    match phase {
        ConnPhase::Admitting => "admitting",
        ConnPhase::Opening => "opening",
        ConnPhase::Open => "open",
        ConnPhase::Closing => "closing",
    }
}

/// What a core reply becomes on the socket.
#[derive(Debug, Clone, PartialEq)]
pub enum Rendered {
    /// The reply to a request: `data` or an error.
    Reply(Result<Value, MgmtError>),
    /// An unsolicited event line.
    Event(Value),
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// How a core reply goes on the socket.
pub fn render(reply: &Reply) -> Rendered {
    Rendered::Reply(Ok(match reply {
        Reply::Registered { pid } => json!({"reply": "registered", "pid": pid}),
        Reply::Opened {
            conn,
            proxy_ip,
            proxy_mac,
            id,
            hops,
            delay_bound_us,
        } => json!({"reply": "opened", "conn": conn.0,
                    "proxy_ip": proxy_ip.to_string(),
                    "proxy_mac": proxy_mac.map(|m| m.to_string()),
                    "id": id, "hops": hops, "delay_bound_us": delay_bound_us}),
        Reply::Failed { conn, error } => {
            let mut e = MgmtError::new(error_code(error), error.to_string())
                .with("conn", json!(conn.map(|c| c.0)));
            match error {
                RtcdError::Refused {
                    hop,
                    reason,
                    switch_ip,
                } => {
                    e = e
                        .with("hop", json!(hop))
                        .with("reason", json!(reason.to_string()))
                        .with("switch_ip", json!(switch_ip.to_string()));
                }
                RtcdError::LocalAdmission {
                    requested,
                    available,
                } => {
                    e = e
                        .with("requested_bps", json!(requested))
                        .with("available_bps", json!(available));
                }
                RtcdError::HostDelay {
                    needed_us,
                    budget_us,
                } => {
                    // Unbounded (the reserved rates fill the link) is `null`.
                    let needed = (*needed_us != u64::MAX).then_some(*needed_us);
                    e = e
                        .with("needed_us", json!(needed))
                        .with("host_delay_us", json!(budget_us));
                }
                _ => {}
            }
            return Rendered::Reply(Err(e));
        }
        Reply::Closed { conn } => json!({"reply": "closed", "conn": conn.0}),
        Reply::Revoked {
            conn,
            reason,
            error,
        } => {
            let fields = json!({
                "conn": conn.0,
                "reason": reason.name(),
                "message": reason.to_string(),
                "error": error.as_ref().map(ToString::to_string),
            });
            return Rendered::Event(crate::mgmt::event("revoked", object(fields)));
        }
        Reply::Interrupted { conn, reason } => {
            let fields = json!({"conn": conn.0, "reason": reason.name(),
                                "message": reason.to_string()});
            return Rendered::Event(crate::mgmt::event("interrupted", object(fields)));
        }
        Reply::Recovered {
            conn,
            hops,
            delay_bound_us,
        } => {
            let fields = json!({"conn": conn.0, "hops": hops, "delay_bound_us": delay_bound_us});
            return Rendered::Event(crate::mgmt::event("recovered", object(fields)));
        }
        Reply::List(list) => {
            let connections: Vec<Value> = list
                .iter()
                .map(|c| {
                    json!({"conn": c.conn.0, "id": c.id, "proxy_ip": c.proxy_ip.to_string(),
                           "dst_ip": c.dst_ip.to_string(), "dst_port": c.dst_port,
                           "src_port": c.src_port, "rate_bps": c.rate_bps,
                           "phase": phase_name(c.phase), "delay_bound_us": c.delay_bound_us,
                           "owner_pid": c.owner_pid})
                })
                .collect();
            json!({"reply": "list", "connections": connections})
        }
    }))
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use rtlan_core::rtcd::{ConnHandle, ConnInfo};
    use rtlan_wire::control::{FailReason, TeardownReason};
    use rtlan_wire::ethernet::Address;

    use super::*;

    #[test]
    fn requests_map_from_documented_lines() {
        let cases: [(&str, RequestId, Request); 7] = [
            (
                r#"{"op":"register","pid":42}"#,
                None,
                Request::Register { pid: 42 },
            ),
            (
                r#"{"op":"register","id":3}"#,
                Some(3),
                Request::Register { pid: 777 },
            ),
            (
                r#"{"op":"open","id":9,"dst_ip":"198.18.0.2","dst_port":5004,"src_port":0,"rate_bps":1000000,"max_burst":3028,"max_packet":1514}"#,
                Some(9),
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
                // `burst_bytes`, the documented name (`max_burst` above: the earlier one).
                r#"{"op":"open","id":10,"dst_ip":"198.18.0.2","dst_port":5004,"src_port":0,"rate_bps":1000000,"burst_bytes":3028,"max_packet":1514,"delay_us":2000}"#,
                Some(10),
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
                r#"{"op":"close","conn":7,"id":0}"#,
                Some(0),
                Request::Close {
                    conn: ConnHandle(7),
                },
            ),
            (
                r#"{"op":"list","id":null}"#,
                None,
                Request::List { all: false },
            ),
            (
                r#"{"op":"list","all":true}"#,
                None,
                Request::List { all: true },
            ),
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
        for (line, id) in [
            ("not json", None),
            ("[1,2]", None),
            (r#"{"op":"fly"}"#, None),
            (r#"{"op":"close","id":5}"#, Some(5)),
            (r#"{"op":"close","conn":-1,"id":6}"#, Some(6)),
            (r#"{"op":"open","dst_ip":"nowhere","id":2}"#, Some(2)),
            (r#"{"op":"list","id":"x"}"#, None),
            (r#"{"op":"register","pid":99999999999}"#, None),
        ] {
            let err = parse_request(line.as_bytes(), Some(1)).expect_err(line);
            assert_eq!(err.0, id, "{line}");
        }
        assert_eq!(
            parse_request(br#"{"op":"register","id":4}"#, None),
            Err((Some(4), LineError::NoPid))
        );
        for id in [None, Some(0), Some(crate::mgmt::MAX_ID)] {
            assert_eq!(id_of(tag_of(id)), id);
        }
    }

    fn data(reply: &Reply) -> Value {
        match render(reply) {
            Rendered::Reply(Ok(data)) => data,
            other => panic!("not a successful reply: {other:?}"),
        }
    }

    fn error(reply: &Reply) -> Value {
        match render(reply) {
            Rendered::Reply(Err(e)) => e.to_value(),
            other => panic!("not a failure: {other:?}"),
        }
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
            crate::mgmt::ok_reply(id_of(10), data(&opened)).to_string(),
            r#"{"data":{"conn":1,"delay_bound_us":null,"hops":2,"id":16,"proxy_ip":"198.19.0.16","proxy_mac":"02:52:54:4c:00:10","reply":"opened"},"id":9,"ok":true}"#
        );
        let central = Reply::Opened {
            conn: ConnHandle(3),
            proxy_ip: Ipv4Addr::new(198, 18, 0, 2),
            proxy_mac: None,
            id: 16,
            hops: 1,
            delay_bound_us: Some(9368),
        };
        let v = data(&central);
        assert_eq!(v["proxy_ip"], json!("198.18.0.2"));
        assert_eq!(v["proxy_mac"], Value::Null);
        assert_eq!(v["delay_bound_us"], json!(9368));
        let v = error(&Reply::Failed {
            conn: Some(ConnHandle(3)),
            error: RtcdError::ManagerRefused("refused: delay".into()),
        });
        assert_eq!(v["code"], json!("manager_refused"));
        assert!(v["message"]
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
        let v = error(&refused);
        assert_eq!(v["code"], json!("refused"));
        assert_eq!(v["conn"], json!(2));
        assert_eq!(v["hop"], json!(1));
        assert_eq!(v["switch_ip"], json!("198.18.255.1"));
        let v = error(&Reply::Failed {
            conn: None,
            error: RtcdError::NotRegistered,
        });
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
            owner_pid: Some(42),
        }]);
        let v = data(&list);
        assert_eq!(v["connections"][0]["owner_pid"], json!(42));
        assert_eq!(v["reply"], json!("list"));
        assert_eq!(v["connections"][0]["phase"], json!("opening"));
        assert_eq!(v["connections"][0]["proxy_ip"], json!("198.19.0.17"));
        assert_eq!(
            render(&Reply::Revoked {
                conn: ConnHandle(5),
                reason: TeardownReason::LinkDown,
                error: None,
            }),
            Rendered::Event(json!({"event": "revoked", "conn": 5, "reason": "link_down",
                                   "message": "a link of the path went down", "error": null}))
        );
        assert_eq!(
            render(&Reply::Interrupted {
                conn: ConnHandle(5),
                reason: TeardownReason::StateLost,
            }),
            Rendered::Event(
                json!({"event": "interrupted", "conn": 5, "reason": "state_lost",
                                   "message": "a hop on the path (switch or router) lost the connection"})
            )
        );
        assert_eq!(
            render(&Reply::Recovered {
                conn: ConnHandle(5),
                hops: 2,
                delay_bound_us: Some(900),
            }),
            Rendered::Event(json!({"event": "recovered", "conn": 5, "hops": 2,
                                   "delay_bound_us": 900}))
        );
        assert_eq!(
            data(&Reply::Registered { pid: 8 }).to_string(),
            r#"{"pid":8,"reply":"registered"}"#
        );
    }
}
