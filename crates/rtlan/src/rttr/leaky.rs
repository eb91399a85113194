//! The driver of RTTR's leaky bucket (EtheReal §3.2): a background thread woken by a `timerfd`
//! every tick `T` hands the measured interval `T_m` to the sans-IO
//! [`LeakyBucketShaper`] and sends what its credit (`T_m × B` wire bytes) covers; the
//! application's `send` fills the shaper's double buffer (`2 × B × T`) and blocks while it is
//! full.
//!
//! The thread asks for `SCHED_FIFO` at [`SHAPER_PRIORITY`] and 1 ns timer slack, as the
//! paper's timer-interrupt driven shaper effectively has: a tick later than the buffer covers
//! loses rate for good (the shaper credits at most `max_interval`), and under normal scheduling
//! on a busy host ticks were measured up to 28 ms late (p99 12 ms; the lab's guarantee demo,
//! where a 50 Mbit/s stream then offered only 48.5). Where the process may not (no
//! `CAP_SYS_NICE`), the refusal is logged and the thread runs with normal scheduling.

use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant as StdInstant};

use rtlan_core::shaper::{LeakyBucketShaper, ShaperError, ShaperStats};
use rtlan_linux::clock;
use rtlan_linux::timer::Timer;

use super::RttrError;

/// `SCHED_FIFO` priority of the shaping thread: below a switch's data plane (default 20), so a
/// switch sharing the machine still comes first, above every normal process.
pub const SHAPER_PRIORITY: u8 = 10;

/// Longest a blocked `send` or the thread sleeps before rechecking the stop flag.
const RECHECK: Duration = Duration::from_millis(50);

#[derive(Debug)]
struct State {
    shaper: LeakyBucketShaper<Vec<u8>>,
    stop: bool,
    /// Why the thread stopped on its own, if it did.
    failed: Option<String>,
    /// Socket sends that failed (e.g. ICMP port unreachable reported on a connected socket).
    send_errors: u64,
    /// Measured tick intervals `T_m` in ns (the first [`MAX_TICK_RECORDS`]), for EtheReal
    /// Table 1.
    tick_intervals_ns: Vec<u64>,
}

/// How many tick intervals a connection records.
const MAX_TICK_RECORDS: usize = 1 << 20;

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    /// Signalled after every tick (buffer space freed) and on stop.
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means a sender panicked; the shaper state is still consistent.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The running leaky bucket of one connection.
#[derive(Debug)]
pub(super) struct LeakyDriver {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl LeakyDriver {
    /// Starts the shaping thread for `shaper`, sending on `socket`.
    pub(super) fn start(
        shaper: LeakyBucketShaper<Vec<u8>>,
        socket: Arc<UdpSocket>,
    ) -> Result<LeakyDriver, RttrError> {
        let timer = Timer::new().map_err(|e| RttrError::Timer(e.to_string()))?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                shaper,
                stop: false,
                failed: None,
                send_errors: 0,
                tick_intervals_ns: Vec::new(),
            }),
            changed: Condvar::new(),
        });
        let for_thread = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("rttr-leaky".into())
            .spawn(move || run(&for_thread, timer, &socket))?;
        Ok(LeakyDriver {
            shared,
            thread: Some(thread),
        })
    }

    /// Queues `payload`, blocking while the double buffer is full.
    pub(super) fn send(&self, payload: &[u8]) -> Result<usize, RttrError> {
        let mut state = self.shared.lock();
        let mut data = payload.to_vec();
        loop {
            if let Some(why) = &state.failed {
                return Err(RttrError::Timer(why.clone()));
            }
            if state.stop {
                return Err(RttrError::Closed);
            }
            match state.shaper.handle_send(clock::now(), payload.len(), data) {
                Ok(()) => return Ok(payload.len()),
                Err(rejected) => match rejected.error {
                    ShaperError::BufferFull { .. } => {
                        data = rejected.payload;
                        state = self
                            .shared
                            .changed
                            .wait_timeout(state, RECHECK)
                            .unwrap_or_else(|p| p.into_inner())
                            .0;
                    }
                    other => return Err(other.into()),
                },
            }
        }
    }

    /// Waits until the buffer is empty, at most `timeout`; whether it is.
    pub(super) fn flush(&self, timeout: Duration) -> bool {
        let deadline = StdInstant::now() + timeout;
        let mut state = self.shared.lock();
        loop {
            if state.shaper.is_idle() {
                return true;
            }
            let now = StdInstant::now();
            if now >= deadline || state.stop || state.failed.is_some() {
                return false;
            }
            state = self
                .shared
                .changed
                .wait_timeout(state, (deadline - now).min(RECHECK))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Socket sends that failed so far.
    pub(super) fn send_errors(&self) -> u64 {
        self.shared.lock().send_errors
    }

    /// The shaper's counters so far.
    pub(super) fn stats(&self) -> ShaperStats {
        *self.shared.lock().shaper.stats()
    }

    /// The measured tick intervals `T_m` so far, ns.
    pub(super) fn tick_intervals_ns(&self) -> Vec<u64> {
        self.shared.lock().tick_intervals_ns.clone()
    }

    /// Stops the thread (what is still buffered is dropped) and waits for it.
    pub(super) fn stop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.changed.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for LeakyDriver {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Waits for the timer fd to become readable, at most [`RECHECK`].
fn wait_readable(timer: &Timer) {
    let mut pfd = libc::pollfd {
        fd: timer.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = i32::try_from(RECHECK.as_millis()).unwrap_or(50);
    // SAFETY: `pfd` is one valid pollfd for the duration of the call; an error (EINTR) only
    // makes us recheck the clock early.
    unsafe { libc::poll(&mut pfd, 1, ms) };
}

fn run(shared: &Shared, mut timer: Timer, socket: &UdpSocket) {
    // Never fails without a CPU to pin to; a refused priority is logged inside.
    let _ = rtlan_linux::driver::thread::prepare(None, SHAPER_PRIORITY);
    let mut out: Vec<Vec<u8>> = Vec::new();
    let mut next = shared.lock().shaper.poll_timeout();
    let mut previous_tick = None;
    loop {
        if let Err(e) = timer.arm(Some(next)) {
            let mut state = shared.lock();
            state.failed = Some(e.to_string());
            shared.changed.notify_all();
            return;
        }
        wait_readable(&timer);
        timer.drain();
        let now = clock::now();
        {
            let mut state = shared.lock();
            if state.stop {
                return;
            }
            if now >= state.shaper.poll_timeout() {
                if let Some(previous) = previous_tick.replace(now) {
                    if state.tick_intervals_ns.len() < MAX_TICK_RECORDS {
                        let interval = u64::try_from((now - previous).as_nanos()).unwrap_or(0);
                        state.tick_intervals_ns.push(interval);
                    }
                }
                state.shaper.handle_tick(now);
                while let Some(t) = state.shaper.poll_transmit(now) {
                    out.push(t.payload);
                }
            }
            next = state.shaper.poll_timeout();
        }
        shared.changed.notify_all();
        let mut errors = 0;
        for datagram in out.drain(..) {
            if socket.send(&datagram).is_err() {
                errors += 1;
            }
        }
        if errors > 0 {
            shared.lock().send_errors += errors;
        }
    }
}
