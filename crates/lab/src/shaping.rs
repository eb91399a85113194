//! Link-rate emulation: a `tbf` qdisc with a size table, so that the kernel charges each frame
//! what the wire would — the same accounting as the rtlan switch's pacer (EtheReal §3.3 output
//! pacing): `max(len, 60) + 4` (FCS) `+ 20` (preamble, start delimiter, inter-frame gap) bytes.
//!
//! This kernel has no loadable qdisc modules (no netem/fq/cbs/taprio/etf); `tbf`, `htb`,
//! `pfifo`/`bfifo` and size tables (`stab`) are built in. `stab overhead 24 mpu 84` adds the 24
//! framing bytes and raises short frames to 84; `mtu 2047 tsize 2048` makes the table exact to the
//! byte (iproute2's default 512 entries round every size up to a multiple of 4).
//! Should `stab` be refused, the lab falls back to plain `tbf` (then framing is not counted and
//! small frames get up to 40 % more than the line rate) and says so in the log.

/// Bytes the wire adds to each frame beyond what the kernel sees: FCS 4, preamble+SFD 8, IFG 12.
pub const FRAME_OVERHEAD: u32 = 24;
/// Smallest frame on the wire including that overhead: 60 + 24.
pub const MIN_WIRE_FRAME: u32 = 84;
/// Largest frame on the wire at MTU 1500 including that overhead: 1514 + 24.
pub const MAX_WIRE_FRAME: u32 = 1538;

/// How much line-rate time the bucket may save up, in µs; see [`TbfParams::for_rate`].
const BURST_TIME_US: u64 = 1000;
/// Minimum burst, in full-size frames.
const BURST_MIN_FRAMES: u32 = 4;
/// Queue behind the bucket, in full-size frames (a short NIC transmit ring).
const QUEUE_FRAMES: u32 = 100;

/// Parameters of one emulated link direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TbfParams {
    /// Line rate in bit/s.
    pub rate_bps: u64,
    /// Bucket size in bytes (wire bytes, overhead included).
    pub burst_bytes: u64,
    /// Bytes that may wait in the queue plus the bucket; more is dropped (or, for a local
    /// socket, blocks the sender once its send buffer is full).
    pub limit_bytes: u64,
}

impl TbfParams {
    /// Parameters for a link of `rate_bps`:
    ///
    /// * burst = max(1 ms at line rate, 4 full frames). The bucket must hold at least a couple of
    ///   full frames or tbf cannot send them at all, and the qdisc watchdog wakes up late by tens
    ///   to hundreds of µs on a loaded 2-core machine; tokens beyond the burst are lost, so a
    ///   burst shorter than the wake-up lateness would cost throughput. The price is that a host
    ///   may, after idling, put up to 1 ms of line-rate data on the veth back to back.
    /// * limit = burst + 100 full frames (12 ms at 100 Mbit/s): like a real NIC's transmit ring,
    ///   deep enough that a UDP sender is held back by its socket buffer before frames are
    ///   dropped, shallow enough that queueing delay stays within what a delay test can bound.
    pub fn for_rate(rate_bps: u64) -> TbfParams {
        let per_ms = rate_bps.div_ceil(8) * BURST_TIME_US / 1_000_000;
        let burst_bytes = per_ms.max(u64::from(BURST_MIN_FRAMES * MAX_WIRE_FRAME));
        TbfParams {
            rate_bps,
            burst_bytes,
            limit_bytes: burst_bytes + u64::from(QUEUE_FRAMES * MAX_WIRE_FRAME),
        }
    }

    /// The `tc` arguments after `qdisc add dev IF root`, with (`stab = true`) or without the size
    /// table.
    pub fn tc_args(&self, stab: bool) -> Vec<String> {
        let mut args: Vec<String> = Vec::new();
        if stab {
            args.extend(
                [
                    "stab",
                    "overhead",
                    &FRAME_OVERHEAD.to_string(),
                    "mpu",
                    &MIN_WIRE_FRAME.to_string(),
                    "mtu",
                    "2047",
                    "tsize",
                    "2048",
                ]
                .map(str::to_string),
            );
        }
        args.extend([
            "tbf".to_string(),
            "rate".to_string(),
            format!("{}bit", self.rate_bps),
            "burst".to_string(),
            self.burst_bytes.to_string(),
            "limit".to_string(),
            self.limit_bytes.to_string(),
        ]);
        args
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_is_one_ms_or_four_frames() {
        let p = TbfParams::for_rate(100_000_000);
        assert_eq!(p.burst_bytes, 12_500);
        assert_eq!(p.limit_bytes, 12_500 + 153_800);
        assert_eq!(TbfParams::for_rate(10_000_000).burst_bytes, 4 * 1538);
        assert_eq!(TbfParams::for_rate(1_000_000_000).burst_bytes, 125_000);
        // A burst must always hold a full frame, even at absurdly low rates.
        assert!(TbfParams::for_rate(1).burst_bytes >= u64::from(MAX_WIRE_FRAME));
    }

    #[test]
    fn tc_arguments() {
        let p = TbfParams::for_rate(100_000_000);
        assert_eq!(
            p.tc_args(true).join(" "),
            "stab overhead 24 mpu 84 mtu 2047 tsize 2048 tbf rate 100000000bit burst 12500 \
             limit 166300"
        );
        assert_eq!(
            p.tc_args(false).join(" "),
            "tbf rate 100000000bit burst 12500 limit 166300"
        );
    }
}
