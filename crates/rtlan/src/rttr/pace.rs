//! Inline token-bucket pacing of a UDP socket (Löser/Härtig's shaper with interval `Ts`, bucket
//! `r·Ts + M`), used by [`super::Shaping::TokenBucket`] and by `rtlan send` as a paced traffic
//! generator. Rates count whole frames ([`super::wire_bytes`]).

use std::net::UdpSocket;
use std::time::Duration;

use rtlan_core::shaper::{ShaperError, TokenBucketConfig, TokenBucketShaper};
use rtlan_linux::clock;

/// A token bucket that makes the caller sleep until a datagram's wire cost is covered.
#[derive(Debug)]
pub struct TokenPacer {
    shaper: TokenBucketShaper<()>,
}

impl TokenPacer {
    /// Rate `rate_bps` (whole frames), shaping interval `interval`, largest payload
    /// `max_datagram` bytes.
    pub fn new(
        rate_bps: u64,
        interval: Duration,
        max_datagram: usize,
    ) -> Result<TokenPacer, ShaperError> {
        let cfg = TokenBucketConfig::new(rate_bps, interval, max_datagram);
        Ok(TokenPacer {
            shaper: TokenBucketShaper::new(cfg, clock::now())?,
        })
    }

    /// The bucket depth in wire bytes: the largest burst this pacer lets out back to back.
    pub fn burst_bytes(&self) -> u64 {
        self.shaper.config().bucket_bytes
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
}
