//! A small blocking client of the bandwidth manager (envelope in `docs/mgmt.md`, operations in
//! `docs/bwm.md`), for the host daemon's "central" admission mode and for tests: connect, then
//! one call per request; each call sends one line with a fresh request id and reads lines until
//! the reply with that id arrives, handing it back as the core's [`Response`]. With
//! [`BwmClient::with_token`] every request carries the token in its envelope's `token` field.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use rtlan_core::bwm::{BestEffortSpec, ConnId, ConnSpec, Op, Request, Response};

/// A client call failed (a refusal is not an error: it is a [`Response`] with `ok = false`).
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Connecting, sending or receiving failed.
    #[error("bandwidth manager connection: {0}")]
    Io(#[from] std::io::Error),
    /// The manager closed the connection.
    #[error("the bandwidth manager closed the connection")]
    Closed,
    /// The manager sent a line that is not a reply.
    #[error("bad reply from the bandwidth manager: {0}")]
    BadReply(String),
    /// The manager reported an error about the connection itself (no request id: e.g.
    /// `too_many_clients`, `idle_timeout`) and closes it.
    #[error("the bandwidth manager dropped the connection: {0}")]
    Dropped(String),
}

/// A connection to the bandwidth manager.
pub struct BwmClient {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    next_id: u64,
    token: Option<String>,
}

impl BwmClient {
    /// Connects; replies are awaited for at most `timeout` (none = forever).
    pub fn connect(
        addr: impl ToSocketAddrs,
        timeout: Option<Duration>,
    ) -> Result<BwmClient, ClientError> {
        let stream = TcpStream::connect(addr)?;
        stream.set_read_timeout(timeout)?;
        stream.set_nodelay(true)?;
        Ok(BwmClient {
            reader: BufReader::new(stream.try_clone()?),
            writer: stream,
            next_id: 1,
            token: None,
        })
    }

    /// Connects to `addr` within `timeout`; every reply (and every send) is then awaited for at
    /// most `timeout` too.
    pub fn connect_timeout(
        addr: std::net::SocketAddr,
        timeout: Duration,
    ) -> Result<BwmClient, ClientError> {
        let stream = TcpStream::connect_timeout(&addr, timeout)?;
        stream.set_read_timeout(Some(timeout))?;
        stream.set_write_timeout(Some(timeout))?;
        stream.set_nodelay(true)?;
        Ok(BwmClient {
            reader: BufReader::new(stream.try_clone()?),
            writer: stream,
            next_id: 1,
            token: None,
        })
    }

    /// Sends `token` in every request from now on (none: no token).
    pub fn with_token(mut self, token: Option<String>) -> BwmClient {
        self.token = token;
        self
    }

    /// Sends `op` and returns the manager's reply to it. An error reply without a request id
    /// (about the connection, not a request) is [`ClientError::Dropped`].
    pub fn request(&mut self, op: Op) -> Result<Response, ClientError> {
        let id = self.next_id;
        self.next_id += 1;
        // Invariant: `Request` holds only strings, integers and options, and is an object.
        let mut value = serde_json::to_value(Request { id, op }).expect("Request serialises");
        if let (Some(token), Some(map)) = (&self.token, value.as_object_mut()) {
            map.insert("token".into(), serde_json::Value::String(token.clone()));
        }
        self.send_line(&value.to_string())?;
        loop {
            let resp = self.read_reply()?;
            if resp.id == Some(id) {
                return Ok(resp);
            }
            if let (None, rtlan_core::bwm::Reply::Error { code, message, .. }) =
                (resp.id, &resp.reply)
            {
                let code = serde_json::to_value(code).unwrap_or_default();
                let code = code.as_str().unwrap_or("error");
                return Err(ClientError::Dropped(format!("{code}: {message}")));
            }
        }
    }

    /// Sends a raw line (for diagnostics and tests) and returns the next reply line.
    pub fn raw(&mut self, line: &str) -> Result<Response, ClientError> {
        self.send_line(line)?;
        self.read_reply()
    }

    /// `admit`.
    pub fn admit(&mut self, spec: ConnSpec) -> Result<Response, ClientError> {
        self.request(Op::Admit(spec))
    }

    /// `release`.
    pub fn release(&mut self, conn: ConnId) -> Result<Response, ClientError> {
        self.request(Op::Release { conn })
    }

    /// `besteffort`.
    pub fn best_effort(&mut self, spec: BestEffortSpec) -> Result<Response, ClientError> {
        self.request(Op::BestEffort(spec))
    }

    /// `list`.
    pub fn list(&mut self) -> Result<Response, ClientError> {
        self.request(Op::List)
    }

    /// `topology`.
    pub fn topology(&mut self) -> Result<Response, ClientError> {
        self.request(Op::Topology)
    }

    fn send_line(&mut self, line: &str) -> Result<(), ClientError> {
        let mut text = line.trim_end().to_string();
        text.push('\n');
        self.writer.write_all(text.as_bytes())?;
        Ok(())
    }

    fn read_reply(&mut self) -> Result<Response, ClientError> {
        loop {
            let mut line = String::new();
            if self.reader.read_line(&mut line)? == 0 {
                return Err(ClientError::Closed);
            }
            match crate::mgmt::parse_incoming(&line) {
                Ok(crate::mgmt::Incoming::Reply { id, result }) => {
                    return super::result_to_response(id, result).ok_or_else(|| {
                        ClientError::BadReply(format!("not a manager reply: {}", line.trim()))
                    })
                }
                // The manager sends no events today; one from a newer manager is skipped.
                Ok(crate::mgmt::Incoming::Event { .. }) => {}
                Err(e) => return Err(ClientError::BadReply(format!("{e}: {}", line.trim()))),
            }
        }
    }
}
