//! A port's transmit thread (docs/threads.md): it asks the kernel to send what the data-plane
//! thread released into the port's TX ring, so that the kernel's transmit work — building an
//! skb per frame, the driver's or veth's transmit, and on a veth the receiving host's whole
//! stack — runs on another CPU than the one that owns the node.
//!
//! The node thread still decides when each frame may leave (EtheReal §3.3's cyclic scheduler,
//! QSR's timing wheel and the pacer stay exact: one thread owns them) and writes the frame into
//! a free slot marked `TP_STATUS_SEND_REQUEST`, as before. Instead of calling `sendto` itself it
//! rings a doorbell; the transmit thread wakes and kicks the ring. The TX ring's status protocol
//! is made for this: the kernel takes only slots marked for sending, the writer never touches a
//! slot the kernel holds, so both run on the same ring at once, as a NIC's DMA engine runs
//! beside its driver.
//!
//! The time from doorbell to kick is measured (the largest, and the sum over kicks), because it
//! is added to every frame's departure. A failed kick (`ENOBUFS`, `ENETDOWN`) is counted and its
//! error handed back to the node thread at its next flush, which acts on it as it acted on its
//! own `sendto`'s error; the thread retries after [`RETRY`], backing off to 100 ms while the
//! kicks keep failing (a link that is down).
//!
//! Written with `std::thread` and atomics: the doorbell is one counter and `unpark`, which costs
//! a system call only while the thread sleeps; no channel or crate does less.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Wait before a kick that failed is tried again, unless the doorbell rings first; doubled
/// after each further failure, up to [`IDLE`].
pub(crate) const RETRY: Duration = Duration::from_millis(1);
/// Longest sleep, so that a stop request is seen without a doorbell.
const IDLE: Duration = Duration::from_millis(100);

/// Where a port's transmit thread runs (docs/threads.md "The design").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxThreadCpu {
    /// Wherever the scheduler puts it.
    Any,
    /// Pinned to this CPU.
    Cpu(usize),
    /// On any CPU but this one (the data-plane thread's).
    AnyBut(usize),
}

/// What the transmit thread and the node thread share.
#[derive(Debug, Default)]
struct Shared {
    /// Rung by the node thread (incremented) each time it released frames.
    doorbell: AtomicU64,
    /// `CLOCK_MONOTONIC` nanoseconds of the first ring the thread has not served yet; 0 = none.
    rung_at_ns: AtomicU64,
    stop: AtomicBool,
    kicks: AtomicU64,
    failed_kicks: AtomicU64,
    /// The errno of the latest failed kick not yet handed to the node thread; 0 = none.
    pending_errno: AtomicI32,
    wait_max_ns: AtomicU64,
    wait_sum_ns: AtomicU64,
}

/// What the transmit thread counted (folded into the port's counters by the node thread).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct KickStats {
    /// `sendto` calls made.
    pub kicks: u64,
    /// Of those, failed ones.
    pub failed_kicks: u64,
    /// Largest time from a doorbell to the kick that served it.
    pub wait_max_ns: u64,
    /// Sum of those times over all kicks.
    pub wait_sum_ns: u64,
}

/// A running transmit thread for one socket (see the module docs). Dropping it stops and joins
/// the thread; the socket must outlive it (the port declares it before its descriptor).
#[derive(Debug)]
pub(crate) struct Kicker {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Kicker {
    /// Starts the transmit thread of the TX ring on `fd` (named `tx-IFNAME`), placed as `cpu`
    /// says, under normal scheduling (not the data plane's `SCHED_FIFO`, which a thread would
    /// otherwise inherit).
    pub(crate) fn start(fd: RawFd, ifname: &str, cpu: TxThreadCpu) -> io::Result<Self> {
        let shared = Arc::new(Shared::default());
        let theirs = Arc::clone(&shared);
        let name = format!("tx-{ifname}");
        let thread = std::thread::Builder::new()
            .name(name.chars().take(15).collect())
            .spawn(move || {
                place(cpu);
                serve(fd, &theirs);
            })?;
        Ok(Kicker {
            shared,
            thread: Some(thread),
        })
    }

    /// Asks the thread to kick the ring (the node thread released frames).
    pub(crate) fn ring(&self) {
        let _ = self.shared.rung_at_ns.compare_exchange(
            0,
            crate::clock::now().as_nanos(),
            Ordering::AcqRel,
            Ordering::Relaxed,
        );
        self.shared.doorbell.fetch_add(1, Ordering::Release);
        if let Some(thread) = &self.thread {
            thread.thread().unpark();
        }
    }

    /// The error of a kick that failed since the last call, if any.
    pub(crate) fn take_error(&self) -> Option<io::Error> {
        match self.shared.pending_errno.swap(0, Ordering::AcqRel) {
            0 => None,
            errno => Some(io::Error::from_raw_os_error(errno)),
        }
    }

    /// What the thread counted so far.
    pub(crate) fn stats(&self) -> KickStats {
        KickStats {
            kicks: self.shared.kicks.load(Ordering::Relaxed),
            failed_kicks: self.shared.failed_kicks.load(Ordering::Relaxed),
            wait_max_ns: self.shared.wait_max_ns.load(Ordering::Relaxed),
            wait_sum_ns: self.shared.wait_sum_ns.load(Ordering::Relaxed),
        }
    }

    /// Whether the thread still runs (it ends only when stopped, or if it panicked).
    pub(crate) fn running(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }
}

impl Drop for Kicker {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            if thread.join().is_err() {
                tracing::error!("a transmit thread panicked");
            }
        }
    }
}

/// The thread's loop: wait for the doorbell, kick, measure; retry a failed kick.
fn serve(fd: RawFd, shared: &Shared) {
    let mut served = 0;
    let mut retry = false;
    let mut backoff = RETRY;
    while !shared.stop.load(Ordering::Acquire) {
        let rung = shared.doorbell.load(Ordering::Acquire);
        if rung == served && !retry {
            std::thread::park_timeout(IDLE);
            continue;
        }
        served = rung;
        let rung_at = shared.rung_at_ns.swap(0, Ordering::AcqRel);
        if rung_at != 0 {
            let waited = crate::clock::now().as_nanos().saturating_sub(rung_at);
            shared.wait_max_ns.fetch_max(waited, Ordering::Relaxed);
            shared.wait_sum_ns.fetch_add(waited, Ordering::Relaxed);
        }
        // SAFETY: a NULL buffer of length 0 with no address kicks the TX ring of `fd`, which the
        // port keeps open until this thread is joined.
        let rc = unsafe {
            libc::sendto(
                fd,
                std::ptr::null(),
                0,
                libc::MSG_DONTWAIT,
                std::ptr::null(),
                0,
            )
        };
        shared.kicks.fetch_add(1, Ordering::Relaxed);
        retry = rc < 0;
        if retry {
            let errno = io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO);
            shared.failed_kicks.fetch_add(1, Ordering::Relaxed);
            shared.pending_errno.store(errno, Ordering::Release);
            std::thread::park_timeout(backoff);
            backoff = (backoff * 2).min(IDLE);
        } else {
            backoff = RETRY;
        }
    }
}

/// Pins the calling thread as `cpu` says and puts it under normal scheduling; what fails is
/// logged (the thread still sends, only not where asked).
fn place(cpu: TxThreadCpu) {
    use crate::driver::thread;
    if let Err(e) = thread::normal_scheduling() {
        tracing::warn!("transmit thread: normal scheduling refused: {e}");
    }
    let online = thread::online_cpus();
    let cpus: Vec<usize> = match cpu {
        TxThreadCpu::Any => (0..online).collect(),
        TxThreadCpu::Cpu(c) if c < online => vec![c],
        TxThreadCpu::Cpu(c) => {
            tracing::warn!(
                cpu = c,
                online,
                "transmit thread: no such CPU; left unpinned"
            );
            return;
        }
        TxThreadCpu::AnyBut(not) if online > 1 => (0..online).filter(|&c| c != not).collect(),
        TxThreadCpu::AnyBut(_) => vec![0],
    };
    if let Err(e) = thread::pin_to_cpus(&cpus) {
        tracing::warn!(?cpu, "transmit thread: CPU placement refused: {e}");
    }
}
