//! The one management-socket protocol of every daemon (DESIGN.md §2 "one JSON-lines server for
//! every daemon socket"; STYLE.md item 4): the switch's control socket, the host daemon's client
//! socket (EtheReal §2.2: the application asks its local RTCD for a connection) and the
//! bandwidth manager's TCP socket (Löser/Härtig §3.2 "Admission process") all speak JSON lines
//! in one envelope, written byte by byte in `docs/mgmt.md`:
//!
//! - request: `{"op": "...", "id": <optional integer, echoed>, ...arguments}`;
//! - reply: `{"id": ID, "ok": true, "data": ...}` or
//!   `{"id": ID, "ok": false, "error": {"code": "snake_case", "message": "...", ...details}}`;
//! - unsolicited event: `{"event": "...", ...fields}` (no `id`, no `ok`).
//!
//! [`parse_line`] reads the envelope of a request line, [`Envelope::decode`] turns its body into
//! a daemon's action enum (tagged by `op`), [`ok_reply`], [`error_reply`] and [`event`] build
//! the lines going back. [`server`] moves the lines: non-blocking, on the daemon's own `epoll`,
//! with bounded line length, client count and unread output. Nothing here panics on input.

pub mod server;

use serde_json::{Map, Value};

pub use server::{Limits, Listen, MgmtEvent, MgmtServer, ServerError, Stats};

/// The largest request id (2^53 − 1, the largest integer every JSON implementation keeps exact).
pub const MAX_ID: u64 = (1 << 53) - 1;

/// A request id: `None` when the request had none (its reply then carries `"id": null`).
pub type RequestId = Option<u64>;

/// A request line's envelope: its id and its body (the object without `id`, `op` included).
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    /// The request's id, echoed in the reply.
    pub id: RequestId,
    /// The operation (`op`), also still in `body`.
    pub op: String,
    /// The request object without `id`.
    pub body: Map<String, Value>,
}

/// A refusal: the `error` object of a failure reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MgmtError {
    /// Machine-readable reason, `snake_case` (e.g. `bad_request`).
    pub code: String,
    /// Human-readable text.
    pub message: String,
    /// Further fields of the `error` object (a daemon's details, e.g. the refusing hop).
    pub details: Map<String, Value>,
}

impl MgmtError {
    /// An error without details.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> MgmtError {
        MgmtError {
            code: code.into(),
            message: message.into(),
            details: Map::new(),
        }
    }

    /// A `bad_request` error: the line is not a valid request for this daemon.
    pub fn bad_request(message: impl Into<String>) -> MgmtError {
        MgmtError::new("bad_request", message)
    }

    /// Adds a detail field (`code` and `message` cannot be overwritten).
    pub fn with(mut self, key: &str, value: Value) -> MgmtError {
        if key != "code" && key != "message" {
            self.details.insert(key.to_string(), value);
        }
        self
    }

    /// The `error` object.
    pub fn to_value(&self) -> Value {
        let mut map = self.details.clone();
        map.insert("code".to_string(), Value::String(self.code.clone()));
        map.insert("message".to_string(), Value::String(self.message.clone()));
        Value::Object(map)
    }
}

impl std::fmt::Display for MgmtError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for MgmtError {}

/// Reads the envelope of one request line. On error, returns the id if one could be read, so
/// the error reply can echo it.
pub fn parse_line(line: &[u8]) -> Result<Envelope, (RequestId, MgmtError)> {
    let value: Value = serde_json::from_slice(line)
        .map_err(|e| (None, MgmtError::bad_request(format!("not JSON: {e}"))))?;
    let Value::Object(mut body) = value else {
        return Err((None, MgmtError::bad_request("expected a JSON object")));
    };
    let id = match body.remove("id") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_u64().filter(|&n| n <= MAX_ID) {
            Some(n) => Some(n),
            None => {
                return Err((
                    None,
                    MgmtError::bad_request(format!("`id` must be an integer from 0 to {MAX_ID}")),
                ))
            }
        },
    };
    let op = match body.get("op") {
        Some(Value::String(op)) => op.clone(),
        Some(_) => return Err((id, MgmtError::bad_request("`op` must be a string"))),
        None => return Err((id, MgmtError::bad_request("missing `op`"))),
    };
    Ok(Envelope { id, op, body })
}

impl Envelope {
    /// Deserializes the body (with `op`) into a daemon's request type; a mismatch is a
    /// `bad_request` naming what serde found wrong.
    pub fn decode<T: serde::de::DeserializeOwned>(&self) -> Result<T, MgmtError> {
        serde_json::from_value(Value::Object(self.body.clone()))
            .map_err(|e| MgmtError::bad_request(format!("bad `{}` request: {e}", self.op)))
    }
}

fn id_value(id: RequestId) -> Value {
    id.map_or(Value::Null, Value::from)
}

/// `{"id": id, "ok": true, "data": data}`.
pub fn ok_reply(id: RequestId, data: Value) -> Value {
    let mut map = Map::new();
    map.insert("id".to_string(), id_value(id));
    map.insert("ok".to_string(), Value::Bool(true));
    map.insert("data".to_string(), data);
    Value::Object(map)
}

/// `{"id": id, "ok": false, "error": {"code": ..., "message": ..., ...}}`.
pub fn error_reply(id: RequestId, error: &MgmtError) -> Value {
    let mut map = Map::new();
    map.insert("id".to_string(), id_value(id));
    map.insert("ok".to_string(), Value::Bool(false));
    map.insert("error".to_string(), error.to_value());
    Value::Object(map)
}

/// The reply line for a result.
pub fn reply(id: RequestId, result: Result<Value, MgmtError>) -> Value {
    match result {
        Ok(data) => ok_reply(id, data),
        Err(e) => error_reply(id, &e),
    }
}

/// `{"event": name, ...fields}` (a field named `event` in `fields` is ignored).
pub fn event(name: &str, mut fields: Map<String, Value>) -> Value {
    fields.insert("event".to_string(), Value::String(name.to_string()));
    Value::Object(fields)
}

/// A reply line as a client reads it.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A reply to request `id`.
    Reply {
        /// The echoed id.
        id: RequestId,
        /// `data` on success, the error otherwise.
        result: Result<Value, MgmtError>,
    },
    /// An unsolicited event.
    Event {
        /// Its name.
        name: String,
        /// The whole line.
        fields: Map<String, Value>,
    },
}

/// Reads one line a daemon sent (a client's side of the envelope); `Err` names what is wrong.
pub fn parse_incoming(line: &str) -> Result<Incoming, String> {
    let value: Value = serde_json::from_str(line.trim()).map_err(|e| format!("not JSON: {e}"))?;
    let Value::Object(mut map) = value else {
        return Err(format!("not a JSON object: {}", line.trim()));
    };
    if let Some(name) = map.get("event").and_then(Value::as_str) {
        let name = name.to_string();
        return Ok(Incoming::Event { name, fields: map });
    }
    let id = match map.get("id") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .ok_or_else(|| format!("`id` is not an integer in {}", line.trim()))?,
        ),
    };
    let result = match map.get("ok").and_then(Value::as_bool) {
        Some(true) => Ok(map.remove("data").unwrap_or(Value::Null)),
        Some(false) => {
            let Some(Value::Object(mut error)) = map.remove("error") else {
                return Err(format!("no `error` object in {}", line.trim()));
            };
            let text = |error: &mut Map<String, Value>, key: &str| match error.remove(key) {
                Some(Value::String(s)) => s,
                _ => String::new(),
            };
            let code = text(&mut error, "code");
            let message = text(&mut error, "message");
            Err(MgmtError {
                code,
                message,
                details: error,
            })
        }
        None => return Err(format!("no boolean `ok` in {}", line.trim())),
    };
    Ok(Incoming::Reply { id, result })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, PartialEq, serde::Deserialize)]
    #[serde(tag = "op", rename_all = "snake_case")]
    enum Action {
        Ping,
        Close { conn: u64 },
    }

    #[test]
    fn envelope_of_documented_lines() {
        let e = parse_line(br#"{"op":"close","id":7,"conn":3}"#).expect("valid");
        assert_eq!((e.id, e.op.as_str()), (Some(7), "close"));
        assert_eq!(e.decode::<Action>(), Ok(Action::Close { conn: 3 }));
        let e = parse_line(br#" {"op" : "ping"} "#).expect("valid");
        assert_eq!(e.id, None);
        assert_eq!(e.decode::<Action>(), Ok(Action::Ping));
        let e = parse_line(br#"{"op":"ping","id":null}"#).expect("valid");
        assert_eq!(e.id, None);
    }

    #[test]
    fn bad_lines_are_bad_requests_with_the_id_when_readable() {
        for (line, id) in [
            (&b"not json"[..], None),
            (b"[1,2]", None),
            (b"\xff\xfe", None),
            (br#"{"id":-1,"op":"ping"}"#, None),
            (br#"{"id":"x","op":"ping"}"#, None),
            (br#"{"id":9007199254740992,"op":"ping"}"#, None),
            (br#"{"id":4}"#, Some(4)),
            (br#"{"id":5,"op":3}"#, Some(5)),
        ] {
            let (got, err) = parse_line(line).expect_err("invalid");
            assert_eq!(got, id, "{}", String::from_utf8_lossy(line));
            assert_eq!(err.code, "bad_request");
        }
        let e = parse_line(br#"{"op":"close","id":1}"#).expect("envelope is fine");
        let err = e.decode::<Action>().expect_err("no conn");
        assert_eq!(err.code, "bad_request");
        assert!(err.message.contains("conn"), "{err}");
        let e = parse_line(br#"{"op":"fly","id":1}"#).expect("envelope is fine");
        assert!(e.decode::<Action>().is_err());
    }

    #[test]
    fn replies_and_events_render_as_documented() {
        assert_eq!(
            ok_reply(Some(3), json!("pong")).to_string(),
            r#"{"data":"pong","id":3,"ok":true}"#
        );
        let err = MgmtError::new("refused", "no room").with("hop", json!(1));
        assert_eq!(
            error_reply(None, &err).to_string(),
            r#"{"error":{"code":"refused","hop":1,"message":"no room"},"id":null,"ok":false}"#
        );
        let mut fields = Map::new();
        fields.insert("conn".to_string(), json!(5));
        assert_eq!(
            event("revoked", fields).to_string(),
            r#"{"conn":5,"event":"revoked"}"#
        );
    }

    #[test]
    fn a_client_reads_back_what_a_server_writes() {
        let err = MgmtError::new("refused", "no room").with("hop", json!(1));
        assert_eq!(
            parse_incoming(&error_reply(Some(2), &err).to_string()),
            Ok(Incoming::Reply {
                id: Some(2),
                result: Err(err)
            })
        );
        assert_eq!(
            parse_incoming(&ok_reply(None, json!({"a": 1})).to_string()),
            Ok(Incoming::Reply {
                id: None,
                result: Ok(json!({"a": 1}))
            })
        );
        assert!(matches!(
            parse_incoming(r#"{"event":"revoked","conn":5}"#),
            Ok(Incoming::Event { name, .. }) if name == "revoked"
        ));
        for bad in [
            "[1,",
            "{}",
            r#"{"ok":false}"#,
            r#"{"ok":true,"id":"x"}"#,
            "3",
        ] {
            assert!(parse_incoming(bad).is_err(), "{bad}");
        }
    }
}
