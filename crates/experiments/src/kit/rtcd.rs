//! A client of a lab host's `rtlan rtcd` socket (the JSON-lines protocol of docs/rtcd.md) that
//! opens one reservation, keeps it open while a stream runs, and records what the daemon says
//! about it afterwards (`interrupted`, `recovered`, `revoked`: a reservation lost and found
//! again, QSR §6.2's RSVP state lost under congestion). Closing the client closes the
//! reservation (the daemon sends PathTear under RSVP).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{json, Value};

/// What to reserve (`open` of docs/rtcd.md).
#[derive(Debug, Clone)]
pub struct OpenRequest {
    /// Receiver's address.
    pub dst_ip: std::net::Ipv4Addr,
    /// Receiver's UDP port.
    pub dst_port: u16,
    /// Sender's UDP port; 0 = any (RSVP's wildcard sender port).
    pub src_port: u16,
    /// Rate of whole frames on the wire, bit/s.
    pub rate_bps: u64,
    /// Bucket depth, bytes.
    pub max_burst: u32,
    /// Largest frame, bytes (header included).
    pub max_packet: u16,
}

/// One event the daemon sent after the open was answered, with when it came (seconds after
/// the open was answered).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Event {
    /// Seconds after the reservation opened.
    pub at_s: f64,
    /// The daemon's message.
    pub event: Value,
}

/// An open client connection to rtcd.
#[derive(Debug)]
pub struct Session {
    writer: UnixStream,
    /// The reply to `open` (`ok` true or false).
    pub reply: Value,
    /// How long the open took, seconds.
    pub open_s: f64,
    events: Arc<Mutex<Vec<Event>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Session {
    /// Registers with the daemon at `socket` and opens `req`; waits up to `timeout` for the
    /// answer. A refused open is not an error: [`Session::opened`] says which it was.
    pub fn open(socket: &Path, req: &OpenRequest, timeout: Duration) -> anyhow::Result<Session> {
        let stream = UnixStream::connect(socket).context("connecting to rtcd")?;
        stream.set_read_timeout(Some(timeout))?;
        let mut writer = stream.try_clone()?;
        let mut lines = BufReader::new(stream);
        let mut line = String::new();
        writeln!(writer, "{}", json!({"op": "register", "id": 1}))?;
        lines.read_line(&mut line)?;
        let reply: Value = serde_json::from_str(line.trim()).context("rtcd's register reply")?;
        anyhow::ensure!(reply["ok"] == json!(true), "register failed: {reply}");
        let started = Instant::now();
        writeln!(
            writer,
            "{}",
            json!({"op": "open", "id": 2, "dst_ip": req.dst_ip.to_string(),
                "dst_port": req.dst_port, "src_port": req.src_port, "rate_bps": req.rate_bps,
                "burst_bytes": req.max_burst, "max_packet": req.max_packet})
        )?;
        let reply = loop {
            line.clear();
            anyhow::ensure!(
                lines.read_line(&mut line)? > 0,
                "rtcd closed the connection"
            );
            let v: Value = serde_json::from_str(line.trim()).context("rtcd's open reply")?;
            if v.get("event").is_none() {
                break v;
            }
        };
        let open_s = started.elapsed().as_secs_f64();
        let opened_at = Instant::now();
        let events = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&events);
        lines.get_ref().set_read_timeout(None)?;
        let reader = std::thread::spawn(move || {
            let mut line = String::new();
            while matches!(lines.read_line(&mut line), Ok(n) if n > 0) {
                if let Ok(event) = serde_json::from_str::<Value>(line.trim()) {
                    if let Ok(mut list) = sink.lock() {
                        list.push(Event {
                            at_s: opened_at.elapsed().as_secs_f64(),
                            event,
                        });
                    }
                }
                line.clear();
            }
        });
        Ok(Session {
            writer,
            reply,
            open_s,
            events,
            reader: Some(reader),
        })
    }

    /// Whether the open was granted.
    pub fn opened(&self) -> bool {
        self.reply["ok"] == json!(true)
    }

    /// The events so far.
    pub fn events(&self) -> Vec<Event> {
        self.events.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Closes the connection (and so the reservation); returns every event received.
    pub fn close(mut self) -> Vec<Event> {
        let _ = self.writer.shutdown(std::net::Shutdown::Both);
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        self.events()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.writer.shutdown(std::net::Shutdown::Both);
    }
}
