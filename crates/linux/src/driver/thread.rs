//! Preparing the data-plane thread (DESIGN.md §7): CPU pinning, timer slack, SCHED_FIFO. What
//! cannot be had degrades with a warning, except a pinning the configuration asked for.

use std::io;

/// Pinning the data-plane thread to the configured CPU failed.
#[derive(Debug, thiserror::Error)]
#[error("cannot pin the data plane to CPU {cpu}: {source}")]
pub struct AffinityError {
    /// The configured CPU.
    pub cpu: usize,
    /// The system error.
    #[source]
    pub source: io::Error,
}

/// Prepares the calling thread to run a data plane: pins it to `cpu` (if given), asks for 1 ns
/// timer slack and runs it under SCHED_FIFO at `realtime_priority` (0: leave it alone).
pub fn prepare(cpu: Option<usize>, realtime_priority: u8) -> Result<(), AffinityError> {
    if let Some(cpu) = cpu {
        pin_to_cpu(cpu)?;
    }
    prepare_unpinned(realtime_priority);
    Ok(())
}

/// [`prepare`] without pinning, which is all that can fail: 1 ns timer slack and SCHED_FIFO at
/// `realtime_priority` (0: leave it alone), each refusal a warning.
pub fn prepare_unpinned(realtime_priority: u8) {
    reduce_timer_slack();
    set_realtime_priority(realtime_priority);
}

/// Asks the kernel to fire this thread's timers on time: the default timer slack of 50 µs lets
/// `timerfd` expirations be deferred by that much, which shows directly as pacing lateness.
fn reduce_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes a plain integer and affects only the calling thread.
    let rc = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
    if rc != 0 {
        tracing::warn!(
            "timer slack stays at the default ({}); wake-ups may be up to 50 µs late",
            io::Error::last_os_error()
        );
    }
}

/// Runs the calling thread under SCHED_FIFO at `priority` (0: leave it alone). A refusal (no
/// CAP_SYS_NICE, or a cgroup without real-time runtime) is a warning, not fatal: the data plane
/// still works, with millisecond stalls whenever the host is busy.
fn set_realtime_priority(priority: u8) {
    if priority == 0 {
        return;
    }
    let param = libc::sched_param {
        sched_priority: libc::c_int::from(priority),
    };
    // SAFETY: `param` is a valid sched_param that outlives the call; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    if rc != 0 {
        tracing::warn!(
            priority,
            thread = std::thread::current().name().unwrap_or("?"),
            "SCHED_FIFO refused ({}); the thread runs with normal scheduling and may stall \
             for milliseconds when the host is busy",
            io::Error::last_os_error()
        );
    } else {
        tracing::info!(
            priority,
            thread = std::thread::current().name().unwrap_or("?"),
            "runs under SCHED_FIFO"
        );
    }
}

/// Pins the calling thread to `cpu`.
fn pin_to_cpu(cpu: usize) -> Result<(), AffinityError> {
    pin_to_cpus(&[cpu]).map_err(|source| AffinityError { cpu, source })
}

/// Lets the calling thread run on `cpus` only (`EINVAL` for a CPU at or past `CPU_SETSIZE`).
pub(crate) fn pin_to_cpus(cpus: &[usize]) -> io::Result<()> {
    // SAFETY: `cpu_set_t` is a plain bit array; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: `cpu < CPU_SETSIZE` (checked above), so the bit lies inside the set.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 = the calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Puts the calling thread under normal scheduling (`SCHED_OTHER`): a helper thread spawned
/// by the data-plane thread would otherwise inherit its `SCHED_FIFO`.
pub(crate) fn normal_scheduling() -> io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is valid for the call; pid 0 = the calling thread.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &param) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// CPUs the kernel may run threads on (at least 1, at most `CPU_SETSIZE`).
pub(crate) fn online_cpus() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n)
        .unwrap_or(1)
        .clamp(1, libc::CPU_SETSIZE as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_impossible_cpu_is_refused_not_ignored() {
        let err = prepare(Some(libc::CPU_SETSIZE as usize), 0).expect_err("no such CPU");
        assert_eq!(err.cpu, libc::CPU_SETSIZE as usize);
        assert_eq!(err.source.raw_os_error(), Some(libc::EINVAL));
    }
}
