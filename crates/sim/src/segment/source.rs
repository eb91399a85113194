//! Traffic of a shared segment (RETHER §4–§5): what each station offers, as data units (a video
//! frame, a periodic message, one non-real-time packet) that the segment cuts into Ethernet
//! frames.
//!
//! - [`Source::Cbr`]: one unit of a fixed size every period (RETHER §1 Table 1's video: 6,400
//!   bytes 30 times a second; §4.3's sessions of so many kilobytes per TRT).
//! - [`Source::Mpeg`]: a synthetic MPEG-I video stream ([`MpegConfig`]), one unit per picture.
//! - [`Source::Flood`]: a station that always has a packet waiting (RETHER §4.1: "two
//!   arbitrary nodes exchange packets of different sizes continuously ... a heavily-loaded
//!   Ethernet").
//! - [`Source::Poisson`]: packets at exponential intervals (light non-real-time traffic, and the
//!   probe that measures access delay).
//!
//! # The synthetic MPEG-I source
//!
//! No MPEG trace is available offline here, so [`MpegConfig`] generates one from the structure
//! of an MPEG-1 stream: 30 pictures/s in groups of pictures (GOP) `IBBPBBPBBPBB` (N = 12, M = 3,
//! the common MPEG-1 encoder setting), with I, P and B pictures in the size ratio 5 : 3 : 1. The
//! ratio is a round figure within the range the MPEG-1 trace studies report (I pictures several
//! times P, P two to three times B: Rose, "Statistical properties of MPEG video traffic", 1995;
//! Krunz and Tripathi, 1997) — recalled, not measured here. Scaled so that the GOP's mean is
//! RETHER's MPEG-I rate, 1.5 Mbit/s = 6,250 bytes per 33.33 ms picture (§4.3: "an MPEG-I stream
//! ... would send 6.25 kilobytes of data per TRT"), the sizes are I 17,045, P 10,227 and
//! B 3,409 bytes (GOP 75,000 bytes in 0.4 s). Each picture's size may vary by a seeded uniform
//! factor (`jitter`); with jitter 0 the stream is deterministic, which lets a runner compute the
//! delay bound its reservation implies ([`MpegConfig::sizes`]). Each stream starts at a seeded
//! position in its GOP, so that the I pictures of many streams do not line up.

use std::time::Duration;

use rand::rngs::Xoshiro256PlusPlus;
use rand::{Rng, SeedableRng};
use rtlan_core::time::Instant;

/// The GOP pattern of the synthetic MPEG-I stream.
pub const GOP: &[u8; 12] = b"IBBPBBPBBPBB";

/// A synthetic MPEG-I video stream (module docs).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MpegConfig {
    /// Mean bit rate, bit/s (1.5 Mbit/s: MPEG-I).
    pub mean_bps: u64,
    /// Pictures per second (30).
    pub fps: u32,
    /// Relative sizes of I, P and B pictures (5, 3, 1).
    pub ratio: [u32; 3],
    /// Each picture's size is multiplied by a uniform factor in `1 ± jitter` (0 = none).
    pub jitter: f64,
}

impl Default for MpegConfig {
    fn default() -> MpegConfig {
        MpegConfig {
            mean_bps: 1_500_000,
            fps: 30,
            ratio: [5, 3, 1],
            jitter: 0.0,
        }
    }
}

impl MpegConfig {
    /// The picture period.
    pub fn period(&self) -> Duration {
        Duration::from_nanos(1_000_000_000 / u64::from(self.fps.max(1)))
    }

    /// Picture sizes over one GOP, bytes, before jitter: the GOP's mean is `mean_bps / 8 / fps`.
    pub fn sizes(&self) -> [u32; 12] {
        let weight = |c: u8| match c {
            b'I' => self.ratio[0],
            b'P' => self.ratio[1],
            _ => self.ratio[2],
        };
        let total_weight: u64 = GOP.iter().map(|&c| u64::from(weight(c))).sum();
        let gop_bytes = self.mean_bps * 12 / 8 / u64::from(self.fps.max(1));
        let mut out = [0u32; 12];
        for (o, &c) in out.iter_mut().zip(GOP.iter()) {
            *o = (gop_bytes * u64::from(weight(c)) / total_weight.max(1)) as u32;
        }
        out
    }
}

/// What a flow's source offers.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Source {
    /// One unit of `bytes` every `period`.
    Cbr {
        /// Interval between units.
        period: Duration,
        /// Unit size, bytes.
        bytes: u32,
    },
    /// One unit of `bytes` every `period`, each handed over a uniform `0..jitter` after its
    /// nominal instant: a periodic program on a time-sharing host (RETHER §1's
    /// video-conferencing application on FreeBSD PCs), whose senders drift in and out of phase.
    Jittered {
        /// Interval between nominal instants.
        period: Duration,
        /// Unit size, bytes.
        bytes: u32,
        /// Largest lateness of a unit.
        jitter: Duration,
    },
    /// A synthetic MPEG-I stream, one unit per picture.
    Mpeg(MpegConfig),
    /// Keeps the station's non-real-time queue at least `backlog` frames deep with frames of
    /// `bytes` (Ethernet frames, header included).
    Flood {
        /// Frame size, bytes (60–1514).
        bytes: u32,
        /// Frames kept queued.
        backlog: u32,
    },
    /// Units of `bytes` at exponential intervals of mean `mean_interval`.
    Poisson {
        /// Mean interval.
        mean_interval: Duration,
        /// Unit size, bytes.
        bytes: u32,
    },
}

/// A source's state: when its next unit is due and how large it is.
#[derive(Debug)]
pub(crate) struct Generator {
    source: Source,
    rng: Xoshiro256PlusPlus,
    /// When the next unit is due (`None`: a flood, driven by its queue).
    pub(crate) next: Option<Instant>,
    /// Position in the GOP.
    picture: usize,
    /// The nominal instant of the next unit (jittered sources).
    nominal: Instant,
}

impl Generator {
    /// A generator whose first unit is due at `start`, seeded with `seed`.
    pub(crate) fn new(source: Source, start: Instant, seed: u64) -> Generator {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let picture = (rng.next_u64() % 12) as usize;
        let next = match source {
            Source::Flood { .. } => None,
            _ => Some(start),
        };
        Generator {
            source,
            rng,
            next,
            picture,
            nominal: start,
        }
    }

    /// The source starts at `at` (its session was admitted, or it was started then).
    pub(crate) fn start_at(&mut self, at: Instant) {
        if self.next.is_some() {
            self.next = Some(at);
        }
        self.nominal = at;
    }

    fn uniform(&mut self) -> f64 {
        (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// The unit due at `next` (its size, bytes); advances to the following one.
    pub(crate) fn emit(&mut self) -> u32 {
        let Some(at) = self.next else {
            return 0;
        };
        match self.source {
            Source::Cbr { period, bytes } => {
                self.next = Some(at + period.max(Duration::from_nanos(1)));
                bytes
            }
            Source::Jittered {
                period,
                bytes,
                jitter,
            } => {
                self.nominal += period.max(Duration::from_nanos(1));
                let late = (self.uniform() * jitter.as_nanos() as f64) as u64;
                self.next = Some(self.nominal + Duration::from_nanos(late));
                bytes
            }
            Source::Mpeg(m) => {
                let size = m.sizes()[self.picture % 12];
                self.picture += 1;
                self.next = Some(at + m.period());
                let factor = 1.0 + m.jitter * (2.0 * self.uniform() - 1.0);
                ((f64::from(size) * factor).round() as u32).max(1)
            }
            Source::Poisson {
                mean_interval,
                bytes,
            } => {
                let u = 1.0 - self.uniform();
                let gap = -u.ln() * mean_interval.as_nanos() as f64;
                let gap = if gap.is_finite() { gap.min(1e15) } else { 0.0 };
                self.next = Some(at + Duration::from_nanos(gap as u64 + 1));
                bytes
            }
            Source::Flood { .. } => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mpeg_gop_averages_the_mpeg_i_rate() {
        let m = MpegConfig::default();
        let sizes = m.sizes();
        assert_eq!(sizes[0], 17_045, "I");
        assert_eq!(sizes[3], 10_227, "P");
        assert_eq!(sizes[1], 3_409, "B");
        let gop: u32 = sizes.iter().sum();
        // 75,000 bytes per 0.4 s = 1.5 Mbit/s, less the rounding of three sizes.
        assert!((74_990..=75_000).contains(&gop), "{gop}");
    }

    #[test]
    fn a_poisson_source_keeps_its_mean_and_its_seed() {
        let src = Source::Poisson {
            mean_interval: Duration::from_millis(1),
            bytes: 100,
        };
        let run = |seed| {
            let mut g = Generator::new(src, Instant::ZERO, seed);
            for _ in 0..10_000 {
                g.emit();
            }
            g.next.unwrap().as_nanos()
        };
        let end = run(7);
        assert_eq!(end, run(7), "same seed, same stream");
        assert_ne!(end, run(8));
        // 10,000 intervals of mean 1 ms: 10 s within 5 %.
        assert!((9_500_000_000..10_500_000_000).contains(&end), "{end}");
    }
}
