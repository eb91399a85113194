//! Per-port packet capture from a daemon's data plane into a pcap file (libpcap format,
//! Ethernet link type, nanosecond timestamps), written with the `pcap-file` crate.
//!
//! Three parts, so that the data plane never waits for the disk:
//!
//! - [`CaptureArgs`]: the request as an operator gives it (`docs/switch.md`, op `capture`);
//!   [`CaptureArgs::check`] resolves the port and refuses what is unsafe (a relative path, no
//!   stop condition, a limit above the maximum) before anything is created.
//! - [`Tap`]: owned by the [`Driver`](crate::driver::Driver); it copies each frame received on
//!   or transmitted from the captured port into a bounded queue with `try_send`. A frame that
//!   does not fit is counted as dropped, never waited for. With no capture the driver's cost is
//!   one `Option` test per port and batch.
//! - a writer thread that takes the queue's frames and writes them; it ends when the tap is
//!   dropped (frame or byte limit reached, `capture-stop`, daemon exit), when the time limit
//!   passes, or on a write error. [`CaptureHandle`] reads the shared counters and state.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::{DataLink, TsResolution};
use rtlan_core::time::Instant;

/// Most frames a capture may be asked for.
pub const MAX_FRAMES: u64 = 1_000_000;
/// Longest a capture may be asked to run, in seconds.
pub const MAX_SECONDS: f64 = 3600.0;
/// Most frame bytes one capture writes (1 GiB); the capture stops there (reason `bytes`).
pub const MAX_BYTES: u64 = 1 << 30;
/// Frames the queue between the data plane and the writer holds; more are dropped (counted).
pub const QUEUE_FRAMES: usize = 4096;

/// A capture request refused, or a capture that could not start.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CaptureError {
    /// No port has this name or index.
    #[error("no port {0}")]
    NoSuchPort(String),
    /// The path is not absolute (the daemon's working directory is no place for it).
    #[error("path {0} is not absolute")]
    RelativePath(PathBuf),
    /// Neither `frames` nor `seconds` was given.
    #[error("give a stop condition: frames (at most {MAX_FRAMES}) and/or seconds (at most {MAX_SECONDS})")]
    NoStopCondition,
    /// A limit is zero, not a finite number, or above its maximum.
    #[error("{0}")]
    BadLimit(String),
    /// The file exists and `overwrite` was not set.
    #[error("{0} exists; give overwrite=true to replace it")]
    FileExists(PathBuf),
    /// The file could not be created or its header written.
    #[error("cannot create {path}: {message}")]
    Create {
        /// The file.
        path: PathBuf,
        /// The system's reason.
        message: String,
    },
    /// A capture is running (or still writing its last frames).
    #[error("a capture is running on port {0}; stop it first (capture-stop)")]
    Running(String),
    /// `capture-stop` or `capture-status` with no capture started since the daemon started.
    #[error("no capture has been started")]
    NoCapture,
}

impl CaptureError {
    /// The envelope's `snake_case` error code (`docs/mgmt.md`).
    pub fn code(&self) -> &'static str {
        match self {
            CaptureError::NoSuchPort(_) => "no_such_port",
            CaptureError::RelativePath(_) => "relative_path",
            CaptureError::NoStopCondition => "no_stop_condition",
            CaptureError::BadLimit(_) => "bad_limit",
            CaptureError::FileExists(_) => "file_exists",
            CaptureError::Create { .. } => "create_failed",
            CaptureError::Running(_) => "capture_running",
            CaptureError::NoCapture => "no_capture",
        }
    }
}

impl From<CaptureError> for crate::mgmt::MgmtError {
    fn from(e: CaptureError) -> Self {
        crate::mgmt::MgmtError::new(e.code(), e.to_string())
    }
}

/// A port as the operator names it: its index, or its interface name.
#[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(untagged)]
pub enum PortName {
    /// The port's index (order of the configuration's ports).
    Index(u64),
    /// The port's interface name (or its index as text).
    Name(String),
}

/// The arguments of a `capture` request.
#[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct CaptureArgs {
    /// The port whose received and transmitted frames are captured.
    pub port: PortName,
    /// The pcap file to create; absolute.
    pub path: PathBuf,
    /// Stop after this many frames were seen on the port (written or dropped).
    #[serde(default)]
    pub frames: Option<u64>,
    /// Stop this many seconds after the start.
    #[serde(default)]
    pub seconds: Option<f64>,
    /// Replace an existing file.
    #[serde(default)]
    pub overwrite: bool,
}

/// A checked capture request, ready to start.
#[derive(Debug, Clone, PartialEq)]
pub struct CapturePlan {
    /// The port's index.
    pub port: usize,
    /// The port's interface name.
    pub ifname: String,
    /// The file.
    pub path: PathBuf,
    /// Frame limit (`u64::MAX`: none).
    pub frames: u64,
    /// Time limit.
    pub duration: Option<Duration>,
    /// Replace an existing file.
    pub overwrite: bool,
}

impl CaptureArgs {
    /// Resolves the port among `ifnames` (the daemon's ports in index order) and checks the
    /// path's form and the limits; does not touch the file system.
    pub fn check(&self, ifnames: &[String]) -> Result<CapturePlan, CaptureError> {
        let port = match &self.port {
            PortName::Index(i) => usize::try_from(*i).ok().filter(|&i| i < ifnames.len()),
            PortName::Name(name) => ifnames
                .iter()
                .position(|n| n == name)
                .or_else(|| name.parse::<usize>().ok().filter(|&i| i < ifnames.len())),
        };
        let port = port.ok_or_else(|| {
            CaptureError::NoSuchPort(match &self.port {
                PortName::Index(i) => i.to_string(),
                PortName::Name(n) => format!("`{n}`"),
            })
        })?;
        if !self.path.is_absolute() {
            return Err(CaptureError::RelativePath(self.path.clone()));
        }
        if self.frames.is_none() && self.seconds.is_none() {
            return Err(CaptureError::NoStopCondition);
        }
        if let Some(frames) = self.frames {
            if frames == 0 || frames > MAX_FRAMES {
                return Err(CaptureError::BadLimit(format!(
                    "frames {frames}: give 1 to {MAX_FRAMES}"
                )));
            }
        }
        let duration = match self.seconds {
            Some(s) if s.is_finite() && s > 0.0 && s <= MAX_SECONDS => {
                Some(Duration::from_secs_f64(s))
            }
            Some(s) => {
                return Err(CaptureError::BadLimit(format!(
                    "seconds {s}: give more than 0 and at most {MAX_SECONDS}"
                )))
            }
            None => None,
        };
        Ok(CapturePlan {
            port,
            ifname: ifnames[port].clone(),
            path: self.path.clone(),
            frames: self.frames.unwrap_or(u64::MAX),
            duration,
            overwrite: self.overwrite,
        })
    }
}

/// Why a capture ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The frame limit was reached.
    Frames,
    /// The time limit passed.
    Seconds,
    /// The byte limit ([`MAX_BYTES`]) was reached.
    Bytes,
    /// `capture-stop`, or the daemon stopped.
    Stopped,
    /// Writing the file failed (see `error`).
    Error,
}

impl StopReason {
    const ALL: [StopReason; 5] = [
        StopReason::Frames,
        StopReason::Seconds,
        StopReason::Bytes,
        StopReason::Stopped,
        StopReason::Error,
    ];

    fn from_code(code: u8) -> Option<StopReason> {
        Self::ALL.get(usize::from(code).checked_sub(1)?).copied()
    }

    fn code(self) -> u8 {
        // The position in ALL plus one; 0 means "not stopped".
        match self {
            StopReason::Frames => 1,
            StopReason::Seconds => 2,
            StopReason::Bytes => 3,
            StopReason::Stopped => 4,
            StopReason::Error => 5,
        }
    }
}

/// Counters shared by the tap, the writer and the handle.
#[derive(Debug, Default)]
struct Shared {
    rx_frames: AtomicU64,
    tx_frames: AtomicU64,
    dropped: AtomicU64,
    written: AtomicU64,
    bytes: AtomicU64,
    /// A [`StopReason`] code; the first reason set wins.
    reason: AtomicU8,
    /// Whether the writer has finished and closed the file.
    done: std::sync::atomic::AtomicBool,
    error: Mutex<Option<String>>,
}

impl Shared {
    fn stop(&self, reason: StopReason) {
        let _ =
            self.reason
                .compare_exchange(0, reason.code(), Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// A frame on its way to the writer.
struct Record {
    /// Wall-clock time since the Unix epoch.
    ts: Duration,
    frame: Vec<u8>,
}

/// The data plane's end of a capture (see the module docs).
#[derive(Debug)]
pub struct Tap {
    port: usize,
    queue: SyncSender<Record>,
    shared: Arc<Shared>,
    /// Frames seen (written or dropped) and their limit.
    seen: u64,
    frames: u64,
    bytes: u64,
    /// The wall clock at `mono_start`, to timestamp frames from the data plane's clock.
    wall_start: Duration,
    mono_start: Instant,
    finished: bool,
}

impl Tap {
    /// The captured port's index.
    pub fn port(&self) -> usize {
        self.port
    }

    /// Whether the capture has ended on the data plane's side; the driver then drops the tap.
    pub fn finished(&self) -> bool {
        self.finished
    }

    /// Records a frame received on (`tx == false`) or transmitted from the captured port at
    /// `now`. Never blocks: a frame the queue cannot take is counted as dropped.
    pub fn record(&mut self, now: Instant, tx: bool, frame: &[u8]) {
        if self.finished {
            return;
        }
        let len = frame.len() as u64;
        if self.bytes + len > MAX_BYTES {
            self.shared.stop(StopReason::Bytes);
            self.finished = true;
            return;
        }
        let record = Record {
            ts: self.wall_start + now.saturating_duration_since(self.mono_start),
            frame: frame.to_vec(),
        };
        match self.queue.try_send(record) {
            Ok(()) => {
                self.bytes += len;
                let counter = if tx {
                    &self.shared.tx_frames
                } else {
                    &self.shared.rx_frames
                };
                counter.fetch_add(1, Ordering::Relaxed);
            }
            Err(TrySendError::Full(_)) => {
                self.shared.dropped.fetch_add(1, Ordering::Relaxed);
            }
            Err(TrySendError::Disconnected(_)) => {
                // The writer ended (time limit or write error) and set the reason.
                self.finished = true;
                return;
            }
        }
        self.seen += 1;
        if self.seen >= self.frames {
            self.shared.stop(StopReason::Frames);
            self.finished = true;
        }
    }
}

/// A capture's state as the control socket reports it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CaptureStatus {
    /// The port's index.
    pub port: usize,
    /// The port's interface name.
    pub ifname: String,
    /// The file.
    pub path: PathBuf,
    /// `running`, `stopping` (the writer is writing the last queued frames) or `done`.
    pub state: &'static str,
    /// Why it ended (`null` while running).
    pub stop_reason: Option<StopReason>,
    /// Frames received on the port and queued for the file.
    pub rx_frames: u64,
    /// Frames transmitted from the port and queued for the file.
    pub tx_frames: u64,
    /// Frames written to the file.
    pub written: u64,
    /// Frames seen on the port that the queue could not take.
    pub dropped: u64,
    /// Frame bytes written to the file.
    pub bytes: u64,
    /// The frame limit (`null`: none).
    pub frames_limit: Option<u64>,
    /// The time limit in seconds (`null`: none).
    pub seconds_limit: Option<f64>,
    /// The write error that ended the capture.
    pub error: Option<String>,
}

/// The control plane's end of a capture.
#[derive(Debug)]
pub struct CaptureHandle {
    plan: CapturePlan,
    shared: Arc<Shared>,
    writer: Option<std::thread::JoinHandle<()>>,
}

impl CaptureHandle {
    /// Creates the plan's file, writes the pcap header and starts the writer thread; returns
    /// the tap for the driver and the handle. `now` is the data plane's clock.
    pub fn start(plan: CapturePlan, now: Instant) -> Result<(Tap, CaptureHandle), CaptureError> {
        let writer = create(&plan.path, plan.overwrite)?;
        let shared = Arc::new(Shared::default());
        let (queue, rx) = mpsc::sync_channel(QUEUE_FRAMES);
        let deadline = plan.duration.map(|d| std::time::Instant::now() + d);
        let thread_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("rtlan-capture".into())
            .spawn(move || write_frames(writer, &rx, deadline, &thread_shared))
            .map_err(|e| CaptureError::Create {
                path: plan.path.clone(),
                message: format!("cannot start the writer thread: {e}"),
            })?;
        let wall_start = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let tap = Tap {
            port: plan.port,
            queue,
            shared: Arc::clone(&shared),
            seen: 0,
            frames: plan.frames,
            bytes: 0,
            wall_start,
            mono_start: now,
            finished: false,
        };
        Ok((
            tap,
            CaptureHandle {
                plan,
                shared,
                writer: Some(thread),
            },
        ))
    }

    /// Records that the capture was stopped by request (the caller drops the tap).
    pub fn stop(&self) {
        self.shared.stop(StopReason::Stopped);
    }

    /// Whether the writer has closed the file.
    pub fn done(&self) -> bool {
        self.shared.done.load(Ordering::Acquire)
    }

    /// Waits for the writer to close the file (the tap must have been dropped, or the time
    /// limit must be near: otherwise this waits for it).
    pub fn join(&mut self) {
        if let Some(thread) = self.writer.take() {
            let _ = thread.join();
        }
    }

    /// The counters and state.
    pub fn status(&self) -> CaptureStatus {
        let s = &self.shared;
        let reason = StopReason::from_code(s.reason.load(Ordering::Relaxed));
        let state = if self.done() {
            "done"
        } else if reason.is_some() {
            "stopping"
        } else {
            "running"
        };
        CaptureStatus {
            port: self.plan.port,
            ifname: self.plan.ifname.clone(),
            path: self.plan.path.clone(),
            state,
            stop_reason: reason,
            rx_frames: s.rx_frames.load(Ordering::Relaxed),
            tx_frames: s.tx_frames.load(Ordering::Relaxed),
            written: s.written.load(Ordering::Relaxed),
            dropped: s.dropped.load(Ordering::Relaxed),
            bytes: s.bytes.load(Ordering::Relaxed),
            frames_limit: (self.plan.frames != u64::MAX).then_some(self.plan.frames),
            seconds_limit: self.plan.duration.map(|d| d.as_secs_f64()),
            error: s.error.lock().ok().and_then(|e| e.clone()),
        }
    }
}

type Writer = PcapWriter<BufWriter<File>>;

/// Creates `path` (not following a symbolic link; refusing an existing file unless
/// `overwrite`) and writes the pcap header.
fn create(path: &Path, overwrite: bool) -> Result<Writer, CaptureError> {
    let mut options = OpenOptions::new();
    options
        .write(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o640);
    if overwrite {
        options.create(true).truncate(true);
    } else {
        options.create_new(true);
    }
    let file = options.open(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            CaptureError::FileExists(path.to_path_buf())
        } else {
            CaptureError::Create {
                path: path.to_path_buf(),
                message: e.to_string(),
            }
        }
    })?;
    let header = PcapHeader {
        ts_resolution: TsResolution::NanoSecond,
        datalink: DataLink::ETHERNET,
        snaplen: 65_535,
        ..PcapHeader::default()
    };
    PcapWriter::with_header(BufWriter::new(file), header).map_err(|e| CaptureError::Create {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// The writer thread: writes queued frames until the tap is dropped, the deadline passes or a
/// write fails; then flushes and marks the capture done.
fn write_frames(
    mut writer: Writer,
    queue: &Receiver<Record>,
    deadline: Option<std::time::Instant>,
    shared: &Shared,
) {
    let mut failure = None;
    loop {
        let record = match deadline {
            Some(deadline) => {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                match queue.recv_timeout(left) {
                    Ok(record) => record,
                    Err(RecvTimeoutError::Timeout) => {
                        shared.stop(StopReason::Seconds);
                        break;
                    }
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            }
            None => match queue.recv() {
                Ok(record) => record,
                Err(_) => break,
            },
        };
        let len = u32::try_from(record.frame.len()).unwrap_or(u32::MAX);
        let packet = PcapPacket::new(record.ts, len, &record.frame);
        if let Err(e) = writer.write_packet(&packet) {
            failure = Some(e.to_string());
            break;
        }
        shared.written.fetch_add(1, Ordering::Relaxed);
        shared.bytes.fetch_add(u64::from(len), Ordering::Relaxed);
    }
    let mut file = writer.into_writer();
    if failure.is_none() {
        if let Err(e) = file.flush() {
            failure = Some(e.to_string());
        }
    }
    drop(file);
    if let Some(message) = failure {
        tracing::warn!("capture: {message}");
        shared.stop(StopReason::Error);
        if let Ok(mut error) = shared.error.lock() {
            *error = Some(message);
        }
    }
    shared.done.store(true, Ordering::Release);
}

#[cfg(test)]
mod tests;
