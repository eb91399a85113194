//! Client side of the switch daemon's control socket (protocol in `docs/switch.md`): send one
//! JSON-line request, read one JSON-line reply, with a timeout on every step.

use std::io::{self, BufRead, BufReader, Write};
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
    /// The daemon answered with an error.
    #[error("the daemon refused the request: {0}")]
    Refused(String),
}

/// How long [`request`] waits for each step.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// Sends `{"cmd": cmd}` to the daemon at `path` and returns the reply's `data`, waiting at most
/// [`DEFAULT_TIMEOUT`] per step.
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
    let stream = UnixStream::connect(path).map_err(|source| CtlError::Connect {
        path: path.to_path_buf(),
        source,
    })?;
    let timeout = Some(timeout.max(Duration::from_millis(1)));
    stream.set_read_timeout(timeout).map_err(CtlError::Io)?;
    stream.set_write_timeout(timeout).map_err(CtlError::Io)?;
    let mut request = serde_json::Map::new();
    request.insert(
        "cmd".to_string(),
        serde_json::Value::String(cmd.to_string()),
    );
    let mut line = serde_json::Value::Object(request).to_string();
    line.push('\n');
    (&stream).write_all(line.as_bytes()).map_err(CtlError::Io)?;
    let mut reply = String::new();
    BufReader::new(&stream)
        .read_line(&mut reply)
        .map_err(CtlError::Io)?;
    if reply.is_empty() {
        return Err(CtlError::NoReply);
    }
    parse_reply(&reply)
}

/// Interprets one reply line: `{"ok":true,"data":...}` gives `data`, `{"ok":false,"error":...}`
/// gives [`CtlError::Refused`].
pub fn parse_reply(line: &str) -> Result<serde_json::Value, CtlError> {
    let mut value: serde_json::Value =
        serde_json::from_str(line.trim()).map_err(|e| CtlError::BadReply(e.to_string()))?;
    match value.get("ok").and_then(serde_json::Value::as_bool) {
        Some(true) => Ok(value
            .get_mut("data")
            .map(serde_json::Value::take)
            .unwrap_or_default()),
        Some(false) => Err(CtlError::Refused(
            value
                .get("error")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("(no error message)")
                .to_string(),
        )),
        None => Err(CtlError::BadReply(format!(
            "no boolean `ok` in {}",
            line.trim()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::net::UnixListener;

    #[test]
    fn reply_shapes() {
        assert_eq!(
            parse_reply(r#"{"ok":true,"data":{"a":1}}"#).expect("ok"),
            serde_json::json!({"a": 1})
        );
        assert!(
            matches!(parse_reply(r#"{"ok":false,"error":"nope"}"#), Err(CtlError::Refused(e)) if e == "nope")
        );
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
            assert_eq!(&buf[..n], b"{\"cmd\":\"ping\"}\n");
            s.write_all(b"{\"ok\":true,\"data\":\"pong\"}\n")
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
