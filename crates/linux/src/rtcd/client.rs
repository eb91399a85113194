//! A blocking client of the host daemon's socket (envelope in `docs/mgmt.md`, operations in
//! `docs/rtcd.md`), for the RTTR library, tools and tests: handle → request → execute, one
//! request in flight at a time, every call bounded by a timeout. `revoked` events that arrive
//! while waiting are kept in [`RtcdClient::revoked`].

use std::io::{self, BufRead, BufReader, Write};
use std::net::Ipv4Addr;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use rtlan_core::rtcd::{DaemonShaping, Request};
use rtlan_wire::ethernet::Address;
use serde_json::Value;

use crate::mgmt::{parse_incoming, Incoming};
use crate::switchd::parse_mac;

/// Default time a call waits for its reply (a SETUP may retransmit for ~3 s by default).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// A call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Connecting, writing or reading failed (a timeout is `WouldBlock`/`TimedOut`).
    #[error("rtcd socket: {0}")]
    Io(#[from] io::Error),
    /// The daemon closed the connection.
    #[error("rtcd closed the connection")]
    Closed,
    /// The daemon sent something that is not a valid reply.
    #[error("bad reply from rtcd: {0}")]
    Protocol(String),
    /// The daemon refused the request (`"ok":false`).
    #[error("rtcd refused ({code}): {message}")]
    Refused {
        /// The machine-readable `error.code`.
        code: String,
        /// The human-readable `error.message`.
        message: String,
    },
}

/// Parameters of an `open` request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenParams {
    /// Receiver's IPv4 address.
    pub dst_ip: Ipv4Addr,
    /// Receiver's UDP port.
    pub dst_port: u16,
    /// Sender's UDP port (0 = any).
    pub src_port: u16,
    /// Reserved rate, bit/s of whole frames.
    pub rate_bps: u64,
    /// Largest burst, bytes (`burst_bytes` on the wire).
    pub max_burst: u32,
    /// Largest frame, bytes.
    pub max_packet: u16,
    /// Required end-to-end delay, µs (central admission; `None` = no requirement).
    pub delay_us: Option<u64>,
}

/// A reservation in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opened {
    /// Handle for [`RtcdClient::close`].
    pub conn: u64,
    /// Address to send UDP to (the receiver's own under central-only admission).
    pub proxy_ip: Ipv4Addr,
    /// Proxy MAC the frames carry (`None` under central-only admission: plain frames).
    pub proxy_mac: Option<Address>,
    /// Connection id on the host's link.
    pub id: u16,
    /// Switches on the path.
    pub hops: u8,
    /// The bandwidth manager's end-to-end delay bound, µs (central admission).
    pub delay_bound_us: Option<u64>,
}

/// One connection as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedConn {
    /// Handle.
    pub conn: u64,
    /// Proxy IP.
    pub proxy_ip: Ipv4Addr,
    /// `opening`, `open` or `closing`.
    pub phase: String,
    /// Reserved rate, bit/s.
    pub rate_bps: u64,
}

/// A connection to the daemon.
#[derive(Debug)]
pub struct RtcdClient {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    next_id: u64,
    /// Handles of connections the path revoked (`revoked` events seen so far).
    pub revoked: Vec<u64>,
}

fn field<'a>(v: &'a Value, name: &str) -> Result<&'a Value, ClientError> {
    v.get(name)
        .ok_or_else(|| ClientError::Protocol(format!("missing `{name}` in {v}")))
}

fn u64_field(v: &Value, name: &str) -> Result<u64, ClientError> {
    field(v, name)?
        .as_u64()
        .ok_or_else(|| ClientError::Protocol(format!("`{name}` is not a number in {v}")))
}

fn str_field<'a>(v: &'a Value, name: &str) -> Result<&'a str, ClientError> {
    field(v, name)?
        .as_str()
        .ok_or_else(|| ClientError::Protocol(format!("`{name}` is not a string in {v}")))
}

fn ip_field(v: &Value, name: &str) -> Result<Ipv4Addr, ClientError> {
    str_field(v, name)?
        .parse()
        .map_err(|_| ClientError::Protocol(format!("`{name}` is not an IPv4 address in {v}")))
}

impl RtcdClient {
    /// Connects to the daemon at `path` with [`DEFAULT_TIMEOUT`] per call.
    pub fn connect(path: &Path) -> Result<RtcdClient, ClientError> {
        RtcdClient::connect_with_timeout(path, DEFAULT_TIMEOUT)
    }

    /// Connects with `timeout` for every read and write.
    pub fn connect_with_timeout(path: &Path, timeout: Duration) -> Result<RtcdClient, ClientError> {
        let stream = UnixStream::connect(path)?;
        stream.set_read_timeout(Some(timeout))?;
        stream.set_write_timeout(Some(timeout))?;
        let writer = stream.try_clone()?;
        Ok(RtcdClient {
            reader: BufReader::new(stream),
            writer,
            next_id: 1,
            revoked: Vec::new(),
        })
    }

    /// Sends one raw line (a newline is appended) and returns the next reply line as JSON,
    /// whatever its tag (for tests and debugging).
    pub fn raw(&mut self, line: &str) -> Result<Value, ClientError> {
        self.writer.write_all(format!("{line}\n").as_bytes())?;
        self.read_line()
    }

    fn read_line(&mut self) -> Result<Value, ClientError> {
        let mut line = String::new();
        if self.reader.read_line(&mut line)? == 0 {
            return Err(ClientError::Closed);
        }
        serde_json::from_str(&line).map_err(|e| ClientError::Protocol(format!("{e}: {line}")))
    }

    /// Sends `request` with a fresh id and waits for the reply carrying that id; returns its
    /// `data`. `"ok":false` becomes [`ClientError::Refused`].
    pub fn call(&mut self, request: &Request) -> Result<Value, ClientError> {
        let id = self.next_id;
        self.next_id += 1;
        let mut value =
            serde_json::to_value(request).map_err(|e| ClientError::Protocol(e.to_string()))?;
        if let Some(object) = value.as_object_mut() {
            object.insert("id".to_string(), Value::from(id));
        }
        self.writer.write_all(format!("{value}\n").as_bytes())?;
        loop {
            let mut line = String::new();
            if self.reader.read_line(&mut line)? == 0 {
                return Err(ClientError::Closed);
            }
            match parse_incoming(&line).map_err(ClientError::Protocol)? {
                Incoming::Event { name, fields } => {
                    if name == "revoked" {
                        self.revoked
                            .push(u64_field(&Value::Object(fields), "conn")?);
                    }
                }
                // A late reply to an earlier, timed-out call.
                Incoming::Reply { id: got, .. } if got != Some(id) => {}
                Incoming::Reply { result, .. } => {
                    return result.map_err(|e| ClientError::Refused {
                        code: e.code,
                        message: e.message,
                    })
                }
            }
        }
    }

    /// Registers process `pid` (normally `std::process::id()`); returns the PID on record.
    pub fn register(&mut self, pid: u32) -> Result<u32, ClientError> {
        let reply = self.call(&Request::Register { pid })?;
        u32::try_from(u64_field(&reply, "pid")?)
            .map_err(|_| ClientError::Protocol("pid out of range".to_string()))
    }

    /// Reserves a connection; blocks until the path answered.
    pub fn open(&mut self, params: &OpenParams) -> Result<Opened, ClientError> {
        self.open_shaped(params, DaemonShaping::None)
    }

    /// Reserves a connection, asking the daemon to shape it in the kernel when `shaping` is
    /// [`DaemonShaping::Kernel`] (`"shaping":"kernel"`, `docs/rtcd.md`); blocks until the path
    /// answered.
    pub fn open_shaped(
        &mut self,
        params: &OpenParams,
        shaping: DaemonShaping,
    ) -> Result<Opened, ClientError> {
        let reply = self.call(&Request::Open {
            dst_ip: params.dst_ip,
            dst_port: params.dst_port,
            src_port: params.src_port,
            rate_bps: params.rate_bps,
            max_burst: params.max_burst,
            max_packet: params.max_packet,
            shaping,
            delay_us: params.delay_us,
        })?;
        let bad = |name: &str| ClientError::Protocol(format!("`{name}` out of range in {reply}"));
        Ok(Opened {
            conn: u64_field(&reply, "conn")?,
            proxy_ip: ip_field(&reply, "proxy_ip")?,
            proxy_mac: match reply.get("proxy_mac") {
                None | Some(serde_json::Value::Null) => None,
                Some(_) => Some(
                    parse_mac(str_field(&reply, "proxy_mac")?).ok_or_else(|| bad("proxy_mac"))?,
                ),
            },
            id: u16::try_from(u64_field(&reply, "id")?).map_err(|_| bad("id"))?,
            hops: u8::try_from(u64_field(&reply, "hops")?).map_err(|_| bad("hops"))?,
            delay_bound_us: reply
                .get("delay_bound_us")
                .and_then(serde_json::Value::as_u64),
        })
    }

    /// Releases connection `conn`.
    pub fn close(&mut self, conn: u64) -> Result<(), ClientError> {
        self.call(&Request::Close {
            conn: rtlan_core::rtcd::ConnHandle(conn),
        })?;
        Ok(())
    }

    /// This client's connections.
    pub fn list(&mut self) -> Result<Vec<ListedConn>, ClientError> {
        let reply = self.call(&Request::List { all: false })?;
        let Some(items) = field(&reply, "connections")?.as_array() else {
            return Err(ClientError::Protocol(format!(
                "`connections` not a list in {reply}"
            )));
        };
        items
            .iter()
            .map(|c| {
                Ok(ListedConn {
                    conn: u64_field(c, "conn")?,
                    proxy_ip: ip_field(c, "proxy_ip")?,
                    phase: str_field(c, "phase")?.to_string(),
                    rate_bps: u64_field(c, "rate_bps")?,
                })
            })
            .collect()
    }
}
