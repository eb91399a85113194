//! Traffic sources and sinks of the simulated hosts: the applications of RETHER §5's simulation
//! setting (constant-rate real-time streams, on-off and Poisson background, a greedy TCP-like
//! sender) in front of the host's UDP stack.
//!
//! Every datagram carries a small header in its UDP payload ([`PAYLOAD_HEADER_LEN`] bytes:
//! magic `RTSM`, flow index, sequence number, send time in ns, a data/ack flag and, in acks, the
//! cumulative acknowledgement) so that the sink measures one-way delay, loss and reordering
//! from the frames alone.
//!
//! Rates count whole frames on the wire ([`rtlan_core::shaper::wire_bytes`]), as reservations
//! and `rtlan send` do.

use std::collections::BTreeSet;
use std::time::Duration;

use rand::rngs::Xoshiro256PlusPlus;
use rand::{Rng, SeedableRng};
use rtlan_core::shaper::{wire_bytes, TokenBucketConfig, TokenBucketShaper};
use rtlan_core::time::Instant;

use crate::scenario::{SourceKind, TrafficSpec};

/// Bytes of the simulator's header at the start of every UDP payload.
pub const PAYLOAD_HEADER_LEN: usize = 40;

/// The payload magic.
pub const MAGIC: [u8; 4] = *b"RTSM";

/// Flag of a data datagram.
pub const FLAG_DATA: u8 = 0;
/// Flag of an acknowledgement (greedy flows, sink → source).
pub const FLAG_ACK: u8 = 1;

/// The simulator's header of a datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PayloadHeader {
    /// Flow index (position in the scenario's traffic list).
    pub flow: u32,
    /// Sequence number (data) or echoed sequence number (ack).
    pub seq: u64,
    /// When the application sent it, ns since the start of the run (an ack echoes the data's).
    pub sent_ns: u64,
    /// [`FLAG_DATA`] or [`FLAG_ACK`].
    pub flag: u8,
    /// Cumulative acknowledgement: the next sequence number the sink expects (acks only).
    pub ack: u64,
}

impl PayloadHeader {
    /// Writes the header into the first [`PAYLOAD_HEADER_LEN`] bytes of `buf` (which is at
    /// least that long; shorter buffers are left alone).
    pub fn emit(&self, buf: &mut [u8]) {
        let Some(b) = buf.get_mut(..PAYLOAD_HEADER_LEN) else {
            return;
        };
        b[0..4].copy_from_slice(&MAGIC);
        b[4..8].copy_from_slice(&self.flow.to_be_bytes());
        b[8..16].copy_from_slice(&self.seq.to_be_bytes());
        b[16..24].copy_from_slice(&self.sent_ns.to_be_bytes());
        b[24] = self.flag;
        b[25..32].fill(0);
        b[32..40].copy_from_slice(&self.ack.to_be_bytes());
    }

    /// Reads a header; `None` unless `buf` starts with one.
    pub fn parse(buf: &[u8]) -> Option<PayloadHeader> {
        let b = buf.get(..PAYLOAD_HEADER_LEN)?;
        if b[0..4] != MAGIC {
            return None;
        }
        let u64_at = |i: usize| {
            let mut v = [0u8; 8];
            v.copy_from_slice(&b[i..i + 8]);
            u64::from_be_bytes(v)
        };
        let mut flow = [0u8; 4];
        flow.copy_from_slice(&b[4..8]);
        Some(PayloadHeader {
            flow: u32::from_be_bytes(flow),
            seq: u64_at(8),
            sent_ns: u64_at(16),
            flag: b[24],
            ack: u64_at(32),
        })
    }
}

/// A 64-bit mix (SplitMix64's finaliser) to derive independent per-source seeds from the
/// scenario seed.
pub fn mix(seed: u64, stream: u64) -> u64 {
    let mut z = seed ^ stream.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Where a source's reservation stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reservation {
    /// The flow is plain UDP.
    None,
    /// Requested, no answer yet.
    Pending,
    /// Granted: datagrams go to this proxy IP.
    Opened {
        /// Proxy IP to send to.
        proxy_ip: std::net::Ipv4Addr,
        /// Switches on the path.
        hops: u8,
        /// The path's end-to-end delay bound, µs (SETUP_OK's BOUND).
        bound_us: Option<u64>,
        /// When the grant arrived, ns.
        at_ns: u64,
    },
    /// Refused (the daemon's or a switch's reason).
    Refused(String),
}

/// Counters of a source.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SourceStats {
    /// Datagrams the application sent (retransmissions included).
    pub sent_frames: u64,
    /// Their wire bytes.
    pub sent_wire_bytes: u64,
    /// Datagrams sent inside the measuring window.
    pub window_frames: u64,
    /// Their wire bytes.
    pub window_wire_bytes: u64,
    /// Datagrams the shaper refused (buffer full).
    pub shaper_drops: u64,
    /// Greedy: segments sent again.
    pub retransmits: u64,
}

/// The TCP-like state of a greedy source (see `docs/sim.md` for what it leaves out).
#[derive(Debug, Clone)]
pub(crate) struct Greedy {
    /// Congestion window, segments.
    pub(crate) cwnd: f64,
    pub(crate) ssthresh: f64,
    /// Next new sequence number.
    pub(crate) next_seq: u64,
    /// Oldest unacknowledged sequence number.
    pub(crate) snd_una: u64,
    dupacks: u32,
    /// Smoothed RTT, ns.
    srtt_ns: Option<u64>,
    /// Retransmission deadline while data is outstanding.
    pub(crate) rto_at: Option<Instant>,
    /// Sequence number to retransmit at the next chance (fast retransmit).
    pub(crate) retransmit: Option<u64>,
}

/// Smallest retransmission timeout (Linux's 200 ms).
pub const MIN_RTO: Duration = Duration::from_millis(200);

/// Largest congestion window, segments (a receive window standing in for the socket buffers).
pub const MAX_CWND: f64 = 1024.0;

impl Greedy {
    fn new() -> Greedy {
        Greedy {
            cwnd: 2.0,
            ssthresh: MAX_CWND,
            next_seq: 0,
            snd_una: 0,
            dupacks: 0,
            srtt_ns: None,
            rto_at: None,
            retransmit: None,
        }
    }

    fn rto(&self) -> Duration {
        let srtt = Duration::from_nanos(self.srtt_ns.unwrap_or(0));
        (srtt * 2).max(MIN_RTO)
    }

    /// Whether the window allows a new segment.
    pub(crate) fn can_send(&self) -> bool {
        self.retransmit.is_some() || ((self.next_seq - self.snd_una) as f64) < self.cwnd.floor()
    }

    /// The sequence number to send next; arms the timer.
    pub(crate) fn take(&mut self, now: Instant) -> (u64, bool) {
        if self.rto_at.is_none() {
            self.rto_at = Some(now + self.rto());
        }
        if let Some(seq) = self.retransmit.take() {
            return (seq, true);
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        (seq, false)
    }

    /// An ack with cumulative acknowledgement `ack` for a segment sent at `sent_ns`.
    pub(crate) fn on_ack(&mut self, now: Instant, ack: u64, sent_ns: u64) {
        let rtt = now.as_nanos().saturating_sub(sent_ns);
        self.srtt_ns = Some(match self.srtt_ns {
            None => rtt,
            Some(s) => (s * 7 + rtt) / 8,
        });
        if ack > self.snd_una {
            let acked = ack - self.snd_una;
            self.snd_una = ack;
            self.next_seq = self.next_seq.max(ack);
            self.dupacks = 0;
            for _ in 0..acked {
                if self.cwnd < self.ssthresh {
                    self.cwnd += 1.0;
                } else {
                    self.cwnd += 1.0 / self.cwnd;
                }
            }
            self.cwnd = self.cwnd.min(MAX_CWND);
            self.rto_at = (self.next_seq > self.snd_una).then(|| now + self.rto());
        } else if ack == self.snd_una && self.next_seq > self.snd_una {
            self.dupacks += 1;
            if self.dupacks == 3 {
                self.ssthresh = (self.cwnd / 2.0).max(2.0);
                self.cwnd = self.ssthresh;
                self.retransmit = Some(self.snd_una);
            }
        }
    }

    /// The retransmission timer fired: back to one segment, go back to the oldest unacked.
    pub(crate) fn on_timeout(&mut self, now: Instant) {
        self.ssthresh = (self.cwnd / 2.0).max(2.0);
        self.cwnd = 1.0;
        self.next_seq = self.snd_una;
        self.dupacks = 0;
        self.retransmit = None;
        self.srtt_ns = self.srtt_ns.map(|s| s.saturating_mul(2));
        self.rto_at = Some(now + self.rto());
    }
}

/// A traffic source on its host.
#[derive(Debug)]
pub(crate) struct Source {
    pub(crate) flow: u32,
    /// The receiver's address.
    pub(crate) dst_ip: std::net::Ipv4Addr,
    /// Whether the start time has been handled.
    pub(crate) started: bool,
    pub(crate) spec: TrafficSpec,
    pub(crate) start: Instant,
    pub(crate) stop: Instant,
    /// When the next datagram is generated (`None`: not started, or finished).
    pub(crate) next: Option<Instant>,
    /// Constant/on-off: datagrams generated since `epoch` (exact schedule).
    count: u64,
    epoch: Instant,
    /// On-off: end of the current on period, or start of the next one while off.
    on_until: Option<Instant>,
    pub(crate) seq: u64,
    rng: Xoshiro256PlusPlus,
    pub(crate) shaper: Option<TokenBucketShaper<(u64, u64)>>,
    /// The shaper's `poll_timeout` after the last call that changed it (kept, not recomputed:
    /// it divides 128-bit numbers).
    pub(crate) shaper_due: Option<Instant>,
    pub(crate) reservation: Reservation,
    pub(crate) greedy: Option<Greedy>,
    pub(crate) stats: SourceStats,
    /// The reservation's outages: `interrupted` until `recovered` or `revoked`.
    pub(crate) outages: Vec<Outage>,
}

/// One outage of a reservation (issue 12: recovery measured in the simulator): from the
/// daemon's `interrupted` to its `recovered` (or `revoked`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Outage {
    /// The reason the path gave (`neighbour_restarted`, `link_down`, …).
    pub reason: String,
    /// When the client was told `interrupted`, ns from the start.
    pub start_ns: u64,
    /// When it was told `recovered` or `revoked`; `None` if the run ended first.
    pub end_ns: Option<u64>,
    /// Whether it ended in `revoked`.
    pub revoked: bool,
}

impl Source {
    pub(crate) fn new(
        flow: u32,
        spec: TrafficSpec,
        dst_ip: std::net::Ipv4Addr,
        seed: u64,
    ) -> Source {
        let start = Instant::ZERO + spec.start;
        let stop = Instant::ZERO + spec.stop;
        let greedy = (spec.kind == SourceKind::Greedy).then(Greedy::new);
        let reservation = if spec.reserve.is_some() {
            Reservation::Pending
        } else {
            Reservation::None
        };
        Source {
            flow,
            dst_ip,
            started: false,
            start,
            stop,
            next: None,
            count: 0,
            epoch: start,
            on_until: None,
            seq: 0,
            rng: Xoshiro256PlusPlus::seed_from_u64(mix(seed, u64::from(flow))),
            shaper: None,
            shaper_due: None,
            reservation,
            greedy,
            stats: SourceStats::default(),
            outages: Vec::new(),
            spec,
        }
    }

    /// Builds the shaper (reservation or `shape`), bucket full at `now`.
    pub(crate) fn build_shaper(&mut self, now: Instant) -> Result<(), String> {
        let (rate, bucket) = match (&self.spec.reserve, &self.spec.shape) {
            (Some(r), _) => (
                r.rate_bps,
                u64::from(r.burst).max(wire_bytes(self.spec.size)),
            ),
            (None, Some(s)) => (s.rate_bps, s.burst_bytes),
            (None, None) => return Ok(()),
        };
        let config = TokenBucketConfig {
            rate_bps: rate,
            bucket_bytes: bucket,
            buffer_bytes: bucket.saturating_mul(8).max(64 * 1024),
            max_datagram: self.spec.size,
            interval: Duration::ZERO,
        };
        self.shaper = Some(TokenBucketShaper::new(config, now).map_err(|e| e.to_string())?);
        Ok(())
    }

    /// Starts generating at `now` (the start time, or the grant of the reservation).
    pub(crate) fn begin(&mut self, now: Instant) {
        if now >= self.stop {
            return;
        }
        self.epoch = now;
        self.count = 0;
        self.next = Some(now);
        if let SourceKind::Burst { frames, phase } = self.spec.kind {
            // The first burst of the grid `phase + m·period` at or after `now`.
            self.epoch = Instant::ZERO + phase;
            let since = u128::from(now.as_nanos().saturating_sub(self.epoch.as_nanos()));
            let (num, den) = self.burst_period_fraction(frames);
            let mut m = (since * den).div_ceil(num.max(1));
            while m > 0 && (m - 1) * num / den >= since {
                m -= 1;
            }
            self.count = u64::try_from(m).unwrap_or(u64::MAX / 2) * u64::from(frames);
            self.next = Some(self.burst_at(frames));
        }
        if let SourceKind::OnOff { on, .. } = self.spec.kind {
            let len = self.exp(on.as_nanos() as f64);
            self.on_until = Some(now + Duration::from_nanos(len.max(1)));
        }
    }

    /// A burst source's period in ns as the exact fraction `(num, den)`: `frames` datagrams'
    /// wire bits at the offered rate.
    fn burst_period_fraction(&self, frames: u32) -> (u128, u128) {
        let num = u128::from(frames) * u128::from(wire_bytes(self.spec.size)) * 8 * 1_000_000_000;
        (num, u128::from(self.spec.rate_bps.max(1)))
    }

    /// When the burst of datagram number `count` is due: burst `count / frames` of the grid,
    /// exact (one division from the epoch, no accumulated rounding).
    fn burst_at(&self, frames: u32) -> Instant {
        let (num, den) = self.burst_period_fraction(frames);
        let m = u128::from(self.count / u64::from(frames.max(1)));
        let offset = m.saturating_mul(num) / den;
        self.epoch + Duration::from_nanos(u64::try_from(offset).unwrap_or(u64::MAX))
    }

    /// Nanoseconds between datagrams at the offered rate.
    fn gap_ns(&self) -> u128 {
        u128::from(wire_bytes(self.spec.size)) * 8 * 1_000_000_000
            / u128::from(self.spec.rate_bps.max(1))
    }

    fn exp(&mut self, mean_ns: f64) -> u64 {
        // 53 random bits in (0, 1].
        let u = ((self.rng.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
        let v = -u.ln() * mean_ns;
        if v.is_finite() && v >= 0.0 {
            v.min(1e15) as u64
        } else {
            0
        }
    }

    /// Called after a datagram was generated at `now`: when the next one is due.
    pub(crate) fn advance(&mut self, now: Instant) {
        let next = match self.spec.kind {
            SourceKind::Greedy => None,
            SourceKind::Constant => {
                self.count += 1;
                let offset = self.gap_ns().saturating_mul(u128::from(self.count));
                Some(self.epoch + Duration::from_nanos(u64::try_from(offset).unwrap_or(u64::MAX)))
            }
            SourceKind::Burst { frames, .. } => {
                self.count += 1;
                Some(self.burst_at(frames))
            }
            SourceKind::Poisson => {
                let gap = self.exp(self.gap_ns() as f64);
                Some(now + Duration::from_nanos(gap.max(1)))
            }
            SourceKind::OnOff { on, off } => {
                self.count += 1;
                let offset = self.gap_ns().saturating_mul(u128::from(self.count));
                let mut next =
                    self.epoch + Duration::from_nanos(u64::try_from(offset).unwrap_or(u64::MAX));
                // Period ends before the next datagram: stay off, then start a new on period.
                if let Some(until) = self.on_until {
                    if next >= until {
                        let silent = self.exp(off.as_nanos() as f64);
                        let resume = until + Duration::from_nanos(silent);
                        let len = self.exp(on.as_nanos() as f64);
                        self.on_until = Some(resume + Duration::from_nanos(len.max(1)));
                        self.epoch = resume;
                        self.count = 0;
                        next = resume;
                    }
                }
                Some(next)
            }
        };
        self.next = next.filter(|&t| t < self.stop);
    }

    /// The next sequence number.
    pub(crate) fn seq_next(&mut self) -> u64 {
        let seq = self.seq;
        self.seq += 1;
        seq
    }

    /// Counts a datagram handed to the network at `now` with `wire` bytes.
    pub(crate) fn count_sent(&mut self, now: Instant, wire: u64, window: (Instant, Instant)) {
        self.stats.sent_frames += 1;
        self.stats.sent_wire_bytes += wire;
        if now >= window.0 && now < window.1 {
            self.stats.window_frames += 1;
            self.stats.window_wire_bytes += wire;
        }
    }
}

/// What a sink recorded for one flow.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sink {
    /// Data datagrams received (duplicates included).
    pub(crate) frames: u64,
    /// Distinct sequence numbers received.
    pub(crate) distinct: u64,
    /// Wire bytes received inside the measuring window (distinct datagrams).
    pub(crate) window_wire_bytes: u64,
    /// Datagrams received inside the window.
    pub(crate) window_frames: u64,
    /// Datagrams that arrived after one with a higher sequence number.
    pub(crate) reordered: u64,
    /// Duplicates (greedy retransmissions of segments already here).
    pub(crate) duplicates: u64,
    /// Highest sequence number seen + 1.
    pub(crate) high: u64,
    /// Greedy: next expected sequence number and the segments above it.
    pub(crate) expected: u64,
    pub(crate) above: BTreeSet<u64>,
    /// One-way delays of datagrams received inside the window, ns.
    pub(crate) delays: Vec<u64>,
    /// The sequence numbers received (not greedy flows).
    pub(crate) seqs: crate::results::SeqSet,
}

impl Sink {
    /// Records data datagram `seq` sent at `sent_ns`, arriving at `now` with `wire` bytes.
    /// Returns whether it was new.
    pub(crate) fn record(
        &mut self,
        now: Instant,
        seq: u64,
        sent_ns: u64,
        wire: u64,
        window: (Instant, Instant),
        greedy: bool,
    ) -> bool {
        self.frames += 1;
        let new = if greedy {
            if seq < self.expected || self.above.contains(&seq) {
                false
            } else {
                if seq == self.expected {
                    self.expected += 1;
                    while self.above.remove(&self.expected) {
                        self.expected += 1;
                    }
                } else {
                    self.above.insert(seq);
                }
                true
            }
        } else {
            true
        };
        if !new {
            self.duplicates += 1;
            return false;
        }
        self.distinct += 1;
        if !greedy {
            self.seqs.insert(seq);
        }
        if seq < self.high {
            self.reordered += 1;
        }
        self.high = self.high.max(seq + 1);
        if now >= window.0 && now < window.1 {
            self.window_frames += 1;
            self.window_wire_bytes += wire;
            self.delays.push(now.as_nanos().saturating_sub(sent_ns));
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_header_round_trips_and_rejects_foreign_payloads() {
        let h = PayloadHeader {
            flow: 7,
            seq: 1 << 40,
            sent_ns: 123_456_789,
            flag: FLAG_ACK,
            ack: 99,
        };
        let mut buf = [0u8; 64];
        h.emit(&mut buf);
        assert_eq!(&buf[..4], b"RTSM");
        assert_eq!(PayloadHeader::parse(&buf), Some(h));
        assert_eq!(PayloadHeader::parse(&buf[..39]), None, "too short");
        buf[0] = b'X';
        assert_eq!(PayloadHeader::parse(&buf), None, "wrong magic");
    }

    fn burst_source(frames: u32, phase_us: u64) -> Source {
        // 934-byte payloads are 1000 wire bytes: at 8 Mbit/s one datagram per ms.
        let spec = TrafficSpec {
            name: "b".into(),
            src: 0,
            dst: 1,
            kind: SourceKind::Burst {
                frames,
                phase: Duration::from_micros(phase_us),
            },
            rate_bps: 8_000_000,
            size: 934,
            dst_port: 1,
            src_port: 1,
            start: Duration::ZERO,
            stop: Duration::from_secs(1),
            reserve: None,
            shape: None,
        };
        Source::new(0, spec, std::net::Ipv4Addr::LOCALHOST, 1)
    }

    /// Emits datagrams as the host does (each at its due instant) and returns their instants, µs.
    fn instants(source: &mut Source, n: usize) -> Vec<u64> {
        let mut out = Vec::new();
        while out.len() < n {
            let due = source.next.expect("still sending");
            out.push(due.as_nanos() / 1000);
            source.advance(due);
        }
        out
    }

    #[test]
    fn burst_sends_its_frames_at_once_on_the_phase_grid() {
        // 3 datagrams of 1 ms each at the mean rate: a burst every 3 ms, at 0.5 + 3k ms.
        let mut s = burst_source(3, 500);
        s.begin(Instant::from_nanos(1_700_000));
        assert_eq!(
            instants(&mut s, 7),
            vec![3500, 3500, 3500, 6500, 6500, 6500, 9500],
            "the first burst is the grid's next one after the start, not the start"
        );
        // Starting exactly on a grid point sends at once; before the phase, at the phase.
        let mut s = burst_source(3, 500);
        s.begin(Instant::from_nanos(3_500_000));
        assert_eq!(instants(&mut s, 4), vec![3500, 3500, 3500, 6500]);
        let mut s = burst_source(2, 400);
        s.begin(Instant::ZERO);
        assert_eq!(instants(&mut s, 3), vec![400, 400, 2400]);
    }

    #[test]
    fn burst_grid_does_not_drift() {
        // 7 wire-byte-exact datagrams at 3 Mbit/s: period 7 × 8000 / 3 µs = 18 666.66… µs.
        let mut s = burst_source(7, 0);
        s.spec.rate_bps = 3_000_000;
        s.begin(Instant::ZERO);
        let all = instants(&mut s, 7 * 31);
        let last = *all.last().expect("samples");
        // Burst 30 at exactly 30 × 56 000 / 3 ms = 560 ms (no rounding carried over).
        assert_eq!(last, 560_000);
        assert!(all.chunks(7).all(|b| b.iter().all(|&t| t == b[0])));
    }

    #[test]
    fn seeds_of_different_streams_differ() {
        assert_ne!(mix(1, 0), mix(1, 1));
        assert_ne!(mix(1, 0), mix(2, 0));
        assert_eq!(mix(5, 9), mix(5, 9));
    }

    #[test]
    fn greedy_grows_halves_on_three_dupacks_and_restarts_on_timeout() {
        let now = Instant::from_nanos(1_000_000);
        let mut g = Greedy::new();
        assert!(g.can_send());
        let (s0, _) = g.take(now);
        let (s1, _) = g.take(now);
        assert_eq!((s0, s1), (0, 1));
        assert!(!g.can_send(), "window of 2 is full");
        g.on_ack(now, 1, 0);
        g.on_ack(now, 2, 0);
        assert_eq!(g.cwnd, 4.0, "slow start adds one per acked segment");
        for _ in 0..4 {
            g.take(now);
        }
        g.on_ack(now, 2, 0);
        g.on_ack(now, 2, 0);
        g.on_ack(now, 2, 0);
        assert_eq!(g.cwnd, 2.0, "three duplicate acks halve the window");
        assert_eq!(g.take(now), (2, true), "the missing segment goes again");
        g.on_timeout(now);
        assert_eq!(g.cwnd, 1.0);
        assert_eq!(
            g.next_seq, 2,
            "go back to the oldest unacknowledged segment"
        );
    }

    #[test]
    fn sink_counts_reordering_duplicates_and_window() {
        let window = (Instant::from_nanos(10), Instant::from_nanos(100));
        let mut s = Sink::default();
        assert!(s.record(Instant::from_nanos(5), 0, 0, 100, window, false));
        assert!(s.record(Instant::from_nanos(20), 2, 10, 100, window, false));
        assert!(s.record(Instant::from_nanos(30), 1, 10, 100, window, false));
        assert_eq!(s.reordered, 1);
        assert_eq!(s.window_frames, 2, "the first arrival is before the window");
        assert_eq!(s.delays, vec![10, 20]);
        let mut g = Sink::default();
        assert!(g.record(Instant::from_nanos(20), 1, 0, 100, window, true));
        assert_eq!(g.expected, 0);
        assert!(g.record(Instant::from_nanos(20), 0, 0, 100, window, true));
        assert_eq!(g.expected, 2);
        assert!(!g.record(Instant::from_nanos(20), 1, 0, 100, window, true));
        assert_eq!(g.duplicates, 1);
    }
}
