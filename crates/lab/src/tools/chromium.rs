//! Headless Chromium in a lab namespace, driven through the Chrome DevTools Protocol over
//! `--remote-debugging-pipe` (messages are JSON objects ended by a NUL byte; the browser reads
//! commands on its descriptor 3 and writes answers and events on descriptor 4).
//!
//! Why the pipe and not the usual WebSocket: the browser runs inside a lab namespace, whose
//! loopback the test process in the root namespace cannot reach, and a pipe needs no WebSocket
//! client either. Why by hand: the DevTools crates (`headless_chrome`, `chromiumoxide`) speak
//! only WebSocket and bring an async runtime or a downloader; three commands are all a page
//! test needs (`Target.createTarget`, `Target.attachToTarget`, `Runtime.evaluate`).

use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::process::{netns_command, ProcessGuard, Tool};
use super::{Result, ToolError};

/// How long one DevTools command may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(20);

/// A headless Chromium in a namespace. Dropping it ends the browser (its process group).
pub struct Browser {
    guard: Option<ProcessGuard>,
    to_browser: std::fs::File,
    answers: mpsc::Receiver<Value>,
    pending: HashMap<u64, Value>,
    next_id: u64,
    reader: Option<JoinHandle<()>>,
    profile: std::path::PathBuf,
}

impl std::fmt::Debug for Browser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Browser")
            .field("pid", &self.guard.as_ref().map(ProcessGuard::pid))
            .finish()
    }
}

/// A page (a DevTools target) of a [`Browser`].
#[derive(Debug, Clone)]
pub struct Page {
    session: String,
}

fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `fds` is a valid array of two descriptors for pipe2 to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors are fresh and owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn browser_error(message: impl Into<String>) -> ToolError {
    ToolError::Reported {
        tool: "chromium",
        message: message.into(),
    }
}

impl Browser {
    /// Starts headless Chromium in namespace `ns` with a fresh profile.
    pub fn start(ns: &str) -> Result<Browser> {
        let io = |source| ToolError::Spawn {
            tool: "chromium",
            source,
        };
        let (cmd_read, cmd_write) = pipe().map_err(io)?;
        let (ans_read, ans_write) = pipe().map_err(io)?;
        static COUNT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let profile = std::env::temp_dir().join(format!(
            "rtlan-chromium-{}-{}",
            std::process::id(),
            COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let mut cmd = netns_command(
            ns,
            Tool::Chromium,
            [
                "--headless".to_string(),
                // Root in a test namespace: Chromium's sandbox needs an unprivileged user.
                "--no-sandbox".to_string(),
                "--disable-gpu".to_string(),
                "--disable-dev-shm-usage".to_string(),
                "--no-first-run".to_string(),
                "--no-default-browser-check".to_string(),
                "--remote-debugging-pipe".to_string(),
                format!("--user-data-dir={}", profile.display()),
                "about:blank".to_string(),
            ],
        )?;
        let (child_in, child_out) = (cmd_read.as_raw_fd(), ans_write.as_raw_fd());
        // SAFETY: between fork and exec only dup2 and fcntl run, both async-signal-safe; the
        // descriptors are open (owned above until after the spawn).
        unsafe {
            cmd.pre_exec(move || {
                // Move the ends out of the way first, so that dup2 onto 3 and 4 cannot close
                // one of them.
                let a = libc::fcntl(child_in, libc::F_DUPFD_CLOEXEC, 10);
                let b = libc::fcntl(child_out, libc::F_DUPFD_CLOEXEC, 10);
                if a < 0 || b < 0 || libc::dup2(a, 3) < 0 || libc::dup2(b, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let guard = ProcessGuard::spawn(Tool::Chromium, cmd, false)?;
        drop(cmd_read);
        drop(ans_write);
        let (tx, answers) = mpsc::channel();
        let mut from_browser = std::fs::File::from(ans_read);
        let reader = std::thread::Builder::new()
            .name("chromium-devtools".into())
            .spawn(move || {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 64 * 1024];
                while let Ok(n) = from_browser.read(&mut chunk) {
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    while let Some(end) = buf.iter().position(|&b| b == 0) {
                        let message: Vec<u8> = buf.drain(..=end).collect();
                        if let Ok(v) = serde_json::from_slice::<Value>(&message[..end]) {
                            // Events have no id; only answers are waited for.
                            if v.get("id").is_some() && tx.send(v).is_err() {
                                return;
                            }
                        }
                    }
                }
            })
            .map_err(io)?;
        Ok(Browser {
            guard: Some(guard),
            to_browser: std::fs::File::from(cmd_write),
            answers,
            pending: HashMap::new(),
            next_id: 1,
            reader: Some(reader),
            profile,
        })
    }

    /// Sends a DevTools command (to a page's session if given) and waits for its result.
    fn command(&mut self, session: Option<&str>, method: &str, params: Value) -> Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            message["sessionId"] = Value::String(s.to_string());
        }
        let mut bytes = message.to_string().into_bytes();
        bytes.push(0);
        self.to_browser
            .write_all(&bytes)
            .map_err(|source| ToolError::Io {
                tool: "chromium",
                source,
            })?;
        let deadline = Instant::now() + COMMAND_TIMEOUT;
        loop {
            if let Some(answer) = self.pending.remove(&id) {
                return match answer.get("error") {
                    Some(e) => Err(browser_error(format!("{method}: {e}"))),
                    None => Ok(answer.get("result").cloned().unwrap_or(Value::Null)),
                };
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.answers.recv_timeout(left) {
                Ok(answer) => {
                    if let Some(got) = answer.get("id").and_then(Value::as_u64) {
                        self.pending.insert(got, answer);
                    }
                }
                Err(_) => {
                    let stderr_tail = self
                        .guard
                        .as_ref()
                        .map(|g| String::from_utf8_lossy(&g.stderr_so_far()).into_owned())
                        .unwrap_or_default();
                    let tail: String = stderr_tail
                        .chars()
                        .rev()
                        .take(2000)
                        .collect::<Vec<_>>()
                        .into_iter()
                        .rev()
                        .collect();
                    return Err(ToolError::TimedOut {
                        tool: "chromium",
                        timeout: COMMAND_TIMEOUT,
                        stderr_tail: format!("{method}: {tail}"),
                    });
                }
            }
        }
    }

    /// Opens `url` in a new page.
    pub fn open(&mut self, url: &str) -> Result<Page> {
        let target = self.command(None, "Target.createTarget", json!({"url": url}))?;
        let target_id = target
            .get("targetId")
            .and_then(Value::as_str)
            .ok_or_else(|| browser_error(format!("no targetId in {target}")))?
            .to_string();
        let attached = self.command(
            None,
            "Target.attachToTarget",
            json!({"targetId": target_id, "flatten": true}),
        )?;
        let session = attached
            .get("sessionId")
            .and_then(Value::as_str)
            .ok_or_else(|| browser_error(format!("no sessionId in {attached}")))?
            .to_string();
        Ok(Page { session })
    }

    /// Evaluates the JavaScript `expression` in `page` (promises awaited) and returns its
    /// value; a thrown exception is an error with its text.
    pub fn eval(&mut self, page: &Page, expression: &str) -> Result<Value> {
        let result = self.command(
            Some(&page.session),
            "Runtime.evaluate",
            json!({"expression": expression, "awaitPromise": true, "returnByValue": true}),
        )?;
        if let Some(e) = result.get("exceptionDetails") {
            let text = e
                .pointer("/exception/description")
                .or_else(|| e.get("text"))
                .cloned()
                .unwrap_or(Value::Null);
            return Err(browser_error(format!("{expression}: {text}")));
        }
        Ok(result
            .pointer("/result/value")
            .cloned()
            .unwrap_or(Value::Null))
    }

    /// Evaluates `expression` every 100 ms until it is truthy (not `false`, `null`, `0` or
    /// `""`) and returns that value; errors while the page loads count as not yet.
    pub fn wait_for(&mut self, page: &Page, expression: &str, timeout: Duration) -> Result<Value> {
        let deadline = Instant::now() + timeout;
        loop {
            let last = match self.eval(page, expression) {
                Ok(v) if truthy(&v) => return Ok(v),
                Ok(v) => v,
                Err(e) => Value::String(e.to_string()),
            };
            if Instant::now() >= deadline {
                return Err(browser_error(format!(
                    "{expression} not true within {timeout:?}; last: {last}"
                )));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        _ => true,
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Ending the process group closes the pipe, which ends the reader.
        drop(self.guard.take());
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}
