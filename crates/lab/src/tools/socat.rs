//! End-to-end integrity checks with `socat`: send N pseudo-random bytes over TCP or UDP from one
//! namespace to another and verify that exactly those bytes arrive — the "does a plain
//! application still work through the switch" test of DESIGN.md §5.

use super::process::{netns_command, start_server, ProcessGuard, Proto, Tool};
use super::{Result, ToolError};
use std::io::Write as _;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Largest transfer accepted (the receiver's copy is held in memory).
const MAX_BYTES: usize = 32 << 20;
/// UDP datagram payload size: below a 1500-byte MTU, so nothing is fragmented.
const UDP_BLOCK: usize = 1024;

/// `n` pseudo-random bytes (xorshift64*, seeded from the clock, the PID and a call counter — the
/// data only has to differ between runs and defeat compression, not be unpredictable).
fn random_bytes(n: usize) -> Vec<u8> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let call = CALLS.fetch_add(1, Ordering::Relaxed);
    let mut state =
        (nanos ^ (u64::from(std::process::id()) << 32) ^ call.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            | 1;
    let mut out = Vec::with_capacity(n + 8);
    while out.len() < n {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        out.extend_from_slice(&state.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes());
    }
    out.truncate(n);
    out
}

fn check_size(bytes: usize, max: usize) -> Result<()> {
    if bytes == 0 || bytes > max {
        return Err(ToolError::InvalidArgument(format!(
            "transfer size {bytes} outside 1..={max}"
        )));
    }
    Ok(())
}

/// Time budget for moving `bytes`: generous (veth moves GB/s; a shaped lab link may be slow).
fn budget(bytes: usize) -> Duration {
    Duration::from_secs(5) + Duration::from_millis((bytes / 100_000) as u64 * 10)
}

/// Spawns the sending socat with `data` on its stdin (written by a thread, so a stalled
/// network cannot block the caller past its deadline).
fn spawn_sender(
    ns: &str,
    args: Vec<String>,
    data: Vec<u8>,
) -> Result<(ProcessGuard, JoinHandle<std::io::Result<()>>)> {
    let cmd = netns_command(ns, Tool::Socat, args)?;
    let mut guard = ProcessGuard::spawn(Tool::Socat, cmd, true)?;
    let stdin = guard.take_stdin();
    let writer = std::thread::spawn(move || match stdin {
        // Dropping stdin at the end closes the pipe: socat sees EOF and finishes.
        Some(mut stdin) => stdin.write_all(&data),
        None => Ok(()),
    });
    Ok((guard, writer))
}

/// Sends `bytes` random bytes over one TCP connection from `ns_client` to `ip:port`, where a
/// socat in `ns_server` listens (`ip` must be an address of `ns_server`, or lead to it). True
/// if the server received exactly the bytes sent; a connection that cannot be made or a
/// transfer that stalls is an error.
pub fn socat_tcp_transfer(
    ns_server: &str,
    ns_client: &str,
    ip: Ipv4Addr,
    port: u16,
    bytes: usize,
) -> Result<bool> {
    check_size(bytes, MAX_BYTES)?;
    let data = random_bytes(bytes);
    let server_cmd = netns_command(
        ns_server,
        Tool::Socat,
        ["-u", &format!("TCP-LISTEN:{port},reuseaddr"), "STDOUT"],
    )?;
    let server = start_server(ns_server, Tool::Socat, server_cmd, Proto::Tcp, port)?;
    let args = vec![
        "-u".to_string(),
        "STDIN".to_string(),
        format!("TCP:{ip}:{port},connect-timeout=3"),
    ];
    let (client, writer) = spawn_sender(ns_client, args, data.clone())?;
    let deadline = budget(bytes);
    let sent = client.wait_timeout(deadline)?;
    // A write error just means socat quit early; its exit status says why.
    let _ = writer.join();
    if !sent.status.success() {
        return Err(sent.failed(Tool::Socat));
    }
    let received = server.wait_timeout(deadline)?.success(Tool::Socat)?;
    Ok(received.stdout == data)
}

/// Sends `bytes` random bytes as 1024-byte UDP datagrams from `ns_client` to `ip:port`, where a
/// socat in `ns_server` receives. True if the receiver got exactly the bytes sent, in order,
/// within the time budget; loss or reordering gives false. Meant for small checks (≤ 1 MiB):
/// UDP has no flow control, so a large burst can overrun the receiver's socket buffer.
pub fn socat_udp_transfer(
    ns_server: &str,
    ns_client: &str,
    ip: Ipv4Addr,
    port: u16,
    bytes: usize,
) -> Result<bool> {
    check_size(bytes, 1 << 20)?;
    let data = random_bytes(bytes);
    let server_cmd = netns_command(
        ns_server,
        Tool::Socat,
        ["-u", &format!("UDP-RECV:{port},reuseaddr"), "STDOUT"],
    )?;
    let server = start_server(ns_server, Tool::Socat, server_cmd, Proto::Udp, port)?;
    let args = vec![
        "-u".to_string(),
        "-b".to_string(),
        UDP_BLOCK.to_string(),
        "STDIN".to_string(),
        format!("UDP-SENDTO:{ip}:{port}"),
    ];
    let (client, writer) = spawn_sender(ns_client, args, data.clone())?;
    let deadline = budget(bytes);
    let sent = client.wait_timeout(deadline)?;
    let _ = writer.join();
    if !sent.status.success() {
        return Err(sent.failed(Tool::Socat));
    }
    // The receiver never exits by itself: wait until everything (or too much) arrived, or a
    // quiet second passed.
    let give_up = Instant::now() + Duration::from_secs(1);
    while server.stdout_len() < bytes && Instant::now() < give_up && !server.has_exited() {
        std::thread::sleep(Duration::from_millis(10));
    }
    let received = server.stop_with(libc::SIGTERM, Duration::from_millis(500));
    Ok(received.stdout == data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_bytes_have_the_size_and_vary() {
        let a = random_bytes(1001);
        assert_eq!(a.len(), 1001);
        // Not a constant fill: many distinct byte values.
        let distinct = a.iter().collect::<std::collections::HashSet<_>>().len();
        assert!(distinct > 200, "{distinct}");
        std::thread::sleep(Duration::from_millis(1));
        assert_ne!(random_bytes(64), random_bytes(64));
    }

    #[test]
    fn sizes_are_checked_before_running() {
        assert!(matches!(
            socat_tcp_transfer("a", "b", Ipv4Addr::LOCALHOST, 1, 0),
            Err(ToolError::InvalidArgument(_))
        ));
        assert!(matches!(
            socat_udp_transfer("a", "b", Ipv4Addr::LOCALHOST, 1, 2 << 20),
            Err(ToolError::InvalidArgument(_))
        ));
    }
}
