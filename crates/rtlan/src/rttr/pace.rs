//! Inline token-bucket pacing of a UDP socket (Löser/Härtig, seed 004 §3.1: shaping interval
//! `Ts`, bucket `b = r·Ts + M`), used by [`super::Shaping::TokenBucket`]
//! ([`TokenPacer::with_shaping_interval`]: an empty bucket is refilled at most once per `Ts`, so
//! the sender sleeps once per `Ts` and sends about `r·Ts` per wake-up) and by `rtlan send` as a
//! smooth traffic generator ([`TokenPacer::new`]: the same bucket, each datagram released as
//! soon as its tokens accrue). Both outputs conform to the T-SPEC `(r, b)`. Rates count whole
//! frames ([`super::wire_bytes`]).

use std::net::UdpSocket;
use std::time::Duration;

use rtlan_core::shaper::{ShaperError, ShaperStats, TokenBucketConfig, TokenBucketShaper};
use rtlan_linux::clock;

/// A token bucket that makes the caller sleep until a datagram's wire cost is covered.
#[derive(Debug)]
pub struct TokenPacer {
    shaper: TokenBucketShaper<()>,
}

impl TokenPacer {
    /// A smooth pacer: rate `rate_bps` (whole frames), bucket `rate × interval + M` for the
    /// largest payload `max_datagram`, each datagram released the moment its tokens accrue.
    pub fn new(
        rate_bps: u64,
        interval: Duration,
        max_datagram: usize,
    ) -> Result<TokenPacer, ShaperError> {
        let cfg = TokenBucketConfig::new(rate_bps, interval, max_datagram).continuous();
        Ok(TokenPacer {
            shaper: TokenBucketShaper::new(cfg, clock::now())?,
        })
    }

    /// The paper's shaper (seed 004 §3.1): bucket `rate × ts + M`, and once the bucket is empty
    /// the caller sleeps until `ts` later (or until the datagram's tokens accrue, if later).
    pub fn with_shaping_interval(
        rate_bps: u64,
        ts: Duration,
        max_datagram: usize,
    ) -> Result<TokenPacer, ShaperError> {
        if ts.is_zero() {
            return Err(ShaperError::ZeroInterval);
        }
        let cfg = TokenBucketConfig::new(rate_bps, ts, max_datagram);
        Ok(TokenPacer {
            shaper: TokenBucketShaper::new(cfg, clock::now())?,
        })
    }

    /// The same pacer with a full bucket, an empty queue and fresh counters as of now.
    pub fn restarted(&self) -> Result<TokenPacer, ShaperError> {
        Ok(TokenPacer {
            shaper: TokenBucketShaper::new(self.shaper.config().clone(), clock::now())?,
        })
    }

    /// The bucket depth in wire bytes: the largest burst this pacer lets out back to back.
    pub fn burst_bytes(&self) -> u64 {
        self.shaper.config().bucket_bytes
    }

    /// The shaper's counters (sent, and [`ShaperStats::forfeited_wire_bytes`]: rate lost to
    /// late wake-ups while a datagram waited).
    pub fn stats(&self) -> &ShaperStats {
        self.shaper.stats()
    }

    /// Sleeps until `len` payload bytes may go; the datagram's tokens are then spent.
    pub fn wait(&mut self, len: usize) -> Result<(), ShaperError> {
        self.shaper
            .handle_send(clock::now(), len, ())
            .map_err(|r| r.error)?;
        loop {
            let now = clock::now();
            if self.shaper.poll_transmit(now).is_some() {
                return Ok(());
            }
            match self.shaper.poll_timeout() {
                Some(due) => std::thread::sleep(due.saturating_duration_since(now)),
                None => return Ok(()), // nothing queued: cannot happen right after handle_send
            }
        }
    }

    /// [`wait`](Self::wait)s for `payload`, then sends it on the connected `socket`.
    pub fn send(&mut self, socket: &UdpSocket, payload: &[u8]) -> Result<usize, super::RttrError> {
        self.wait(payload.len())?;
        Ok(socket.send(payload)?)
    }
}

#[cfg(test)]
mod tests {
    use super::super::wire_bytes;
    use super::*;

    #[test]
    fn paces_at_the_wire_rate() {
        // 100 payloads of 1000 B at 8.528 Mbit/s of frames: wire_bytes(1000) = 1066 B = 8528 bit,
        // so one per ms; the bucket (1 ms + one datagram) lets two go at once, the other 98
        // take at least 97 ms in all.
        let mut p = TokenPacer::new(8_528_000, Duration::from_millis(1), 1000).expect("valid");
        assert_eq!(wire_bytes(1000), 1066);
        let start = std::time::Instant::now();
        for _ in 0..100 {
            p.wait(1000).expect("fits");
        }
        assert!(
            start.elapsed() >= Duration::from_millis(97),
            "{:?}",
            start.elapsed()
        );
        assert!(matches!(p.wait(1001), Err(ShaperError::TooLarge { .. })));
    }

    #[test]
    fn shaping_interval_sleeps_once_per_interval() {
        // 8.528 Mbit/s, 1000-byte payloads (1066 wire bytes, one per ms), Ts = 20 ms: the bucket
        // (20 + 1 datagrams) lets 21 go at once; then each wake-up, 20 ms after the bucket got
        // empty, releases at least 20. 61 datagrams therefore take exactly two sleeps of >= 20 ms
        // (a smooth pacer would sleep ~1 ms before each of the last 40 instead).
        let mut p = TokenPacer::with_shaping_interval(8_528_000, Duration::from_millis(20), 1000)
            .expect("valid");
        assert_eq!(p.burst_bytes(), 21 * 1066);
        let start = std::time::Instant::now();
        let mut last = start;
        let mut gaps = Vec::new();
        for _ in 0..61 {
            p.wait(1000).expect("fits");
            let now = std::time::Instant::now();
            gaps.push(now - last);
            last = now;
        }
        let long = gaps
            .iter()
            .filter(|g| **g >= Duration::from_millis(15))
            .count();
        assert_eq!(long, 2, "{gaps:?}");
        assert!(start.elapsed() >= Duration::from_millis(40));
        assert_eq!(
            TokenPacer::with_shaping_interval(1_000_000, Duration::ZERO, 1000).err(),
            Some(ShaperError::ZeroInterval)
        );
    }
}
