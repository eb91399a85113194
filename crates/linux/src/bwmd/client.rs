//! A small blocking client of the bandwidth manager (envelope in `docs/mgmt.md`, operations in
//! `docs/bwm.md`), for the host daemon's "central" admission mode and for tests: connect, then
//! one call per request; each call sends one line with a fresh request id and reads lines until
//! the reply with that id arrives, handing it back as the core's [`Response`].

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
}

/// A connection to the bandwidth manager.
pub struct BwmClient {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    next_id: u64,
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
        })
    }

    /// Sends `op` and returns the manager's reply to it.
    pub fn request(&mut self, op: Op) -> Result<Response, ClientError> {
        let id = self.next_id;
        self.next_id += 1;
        // Invariant: `Request` holds only strings, integers and options.
        let line = serde_json::to_string(&Request { id, op }).expect("Request serialises");
        self.send_line(&line)?;
        loop {
            let resp = self.read_reply()?;
            if resp.id == Some(id) {
                return Ok(resp);
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
