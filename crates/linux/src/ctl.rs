//! Client side of the switch daemon's control socket (envelope in `docs/mgmt.md`, operations in
//! `docs/switch.md`): send one JSON-line request, read one JSON-line reply, with a timeout on
//! every step.

use std::io::{self, BufRead, BufReader};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A control request failed.
#[derive(Debug, thiserror::Error)]
pub enum CtlError {
    /// Could not connect to the socket (no daemon, wrong path, no permission).
    #[error("cannot connect to {path}: {source}")]
    Connect {
        /// The socket path.
        path: PathBuf,
        /// The system error.
        #[source]
        source: io::Error,
    },
    /// Sending the request or reading the reply failed or timed out.
    #[error("control socket I/O: {0}")]
    Io(#[source] io::Error),
    /// The daemon closed the connection without replying.
    #[error("the daemon closed the connection without a reply")]
    NoReply,
    /// The reply was not the documented JSON shape.
    #[error("malformed reply: {0}")]
    BadReply(String),
    /// The daemon answered with an error (`code: message`).
    #[error("the daemon refused the request: {0}")]
    Refused(String),
}

/// How long [`request`] waits for each step.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// Sends `{"op": cmd, "id": 1}` to the daemon at `path` and returns the reply's `data`, waiting
/// at most [`DEFAULT_TIMEOUT`] per step.
pub fn request(path: &Path, cmd: &str) -> Result<serde_json::Value, CtlError> {
    request_with_timeout(path, cmd, DEFAULT_TIMEOUT)
}

/// Like [`request`] with a caller-chosen timeout per step (connect is immediate on Unix sockets;
/// the timeout bounds the write and the read).
pub fn request_with_timeout(
    path: &Path,
    cmd: &str,
    timeout: Duration,
) -> Result<serde_json::Value, CtlError> {
    request_json(path, serde_json::json!({ "op": cmd }), timeout)
}

/// Sends one request object (`{"op": …, arguments…}`; its `id` is set to 1) and returns the
/// reply's `data`, waiting at most `timeout` per step — for requests with arguments.
pub fn request_json(
    path: &Path,
    request: serde_json::Value,
    timeout: Duration,
) -> Result<serde_json::Value, CtlError> {
    let stream = UnixStream::connect(path).map_err(|source| CtlError::Connect {
        path: path.to_path_buf(),
        source,
    })?;
    let timeout = Some(timeout.max(Duration::from_millis(1)));
    stream.set_read_timeout(timeout).map_err(CtlError::Io)?;
    stream.set_write_timeout(timeout).map_err(CtlError::Io)?;
    exchange(&stream, request)
}

/// [`request_json`] to a daemon listening on TCP (`rtlan bwm`), `addr` as `host:port`.
pub fn request_json_tcp(
    addr: &str,
    request: serde_json::Value,
    timeout: Duration,
) -> Result<serde_json::Value, CtlError> {
    use std::net::ToSocketAddrs;

    let timeout = timeout.max(Duration::from_millis(1));
    let connect_error = |source| CtlError::Connect {
        path: PathBuf::from(addr),
        source,
    };
    let target = addr
        .to_socket_addrs()
        .map_err(connect_error)?
        .next()
        .ok_or_else(|| connect_error(io::Error::from(io::ErrorKind::NotFound)))?;
    let stream = std::net::TcpStream::connect_timeout(&target, timeout).map_err(connect_error)?;
    stream
        .set_read_timeout(Some(timeout))
        .map_err(CtlError::Io)?;
    stream
        .set_write_timeout(Some(timeout))
        .map_err(CtlError::Io)?;
    exchange(&stream, request)
}

/// Writes one request line on `stream` and reads one reply line.
fn exchange<S>(stream: S, request: serde_json::Value) -> Result<serde_json::Value, CtlError>
where
    S: io::Read + io::Write + Copy,
{
    let mut request = match request {
        serde_json::Value::Object(map) => map,
        other => {
            return Err(CtlError::BadReply(format!(
                "a request is a JSON object, not {other}"
            )))
        }
    };
    request.insert("id".to_string(), serde_json::Value::from(1u64));
    let mut line = serde_json::Value::Object(request).to_string();
    line.push('\n');
    let mut writer = stream;
    writer.write_all(line.as_bytes()).map_err(CtlError::Io)?;
    let mut reply = String::new();
    BufReader::new(stream)
        .read_line(&mut reply)
        .map_err(CtlError::Io)?;
    if reply.is_empty() {
        return Err(CtlError::NoReply);
    }
    parse_reply(&reply)
}

/// Interprets one reply line: `{"ok":true,"data":...}` gives `data`,
/// `{"ok":false,"error":{"code":...,"message":...}}` gives [`CtlError::Refused`] with
/// `code: message`; an event line is not a reply.
pub fn parse_reply(line: &str) -> Result<serde_json::Value, CtlError> {
    match crate::mgmt::parse_incoming(line).map_err(CtlError::BadReply)? {
        crate::mgmt::Incoming::Reply { result, .. } => {
            result.map_err(|e| CtlError::Refused(e.to_string()))
        }
        crate::mgmt::Incoming::Event { name, .. } => Err(CtlError::BadReply(format!(
            "an `{name}` event where a reply was due"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::unix::net::UnixListener;

    #[test]
    fn reply_shapes() {
        assert_eq!(
            parse_reply(r#"{"id":1,"ok":true,"data":{"a":1}}"#).expect("ok"),
            serde_json::json!({"a": 1})
        );
        assert!(
            matches!(parse_reply(r#"{"id":1,"ok":false,"error":{"code":"bad_request","message":"nope"}}"#),
                Err(CtlError::Refused(e)) if e == "bad_request: nope")
        );
        assert!(matches!(
            parse_reply(r#"{"ok":false,"error":"old style"}"#),
            Err(CtlError::BadReply(_))
        ));
        assert!(matches!(
            parse_reply(r#"{"event":"revoked","conn":1}"#),
            Err(CtlError::BadReply(_))
        ));
        assert!(matches!(
            parse_reply("{\"data\":1}"),
            Err(CtlError::BadReply(_))
        ));
        assert!(matches!(parse_reply("[1,"), Err(CtlError::BadReply(_))));
    }

    #[test]
    fn round_trip_and_timeout_against_a_fake_daemon() {
        let path =
            std::env::temp_dir().join(format!("rtl-lnx-ctl-client-{}.sock", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path).expect("bind");
        let server = std::thread::spawn(move || {
            // First client: answer. Second client: never answer.
            let (mut s, _) = listener.accept().expect("accept");
            let mut buf = [0u8; 256];
            let n = s.read(&mut buf).expect("read");
            assert_eq!(&buf[..n], b"{\"id\":1,\"op\":\"ping\"}\n");
            s.write_all(b"{\"id\":1,\"ok\":true,\"data\":\"pong\"}\n")
                .expect("write");
            let (silent, _) = listener.accept().expect("accept");
            std::thread::sleep(Duration::from_millis(300));
            drop(silent);
        });
        assert_eq!(
            request(&path, "ping").expect("pong"),
            serde_json::json!("pong")
        );
        let err =
            request_with_timeout(&path, "stats", Duration::from_millis(50)).expect_err("timeout");
        assert!(matches!(err, CtlError::Io(_)), "{err:?}");
        server.join().expect("server thread");
        let _ = std::fs::remove_file(&path);
        assert!(matches!(
            request(&path, "ping"),
            Err(CtlError::Connect { .. })
        ));
    }
}
