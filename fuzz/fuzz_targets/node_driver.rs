//! Drives any node of the shared contract (`rtlan_core::Node`) with fuzz input, for the
//! whole-node targets (`switch_frames`, `router_frames`): records `[port, advance, len_hi,
//! len_lo, frame…]` — virtual time advances by `advance × 37 µs`, due timers run, the frame goes
//! to `handle_frame` on port `port % ports`, every port is drained (`after_each` then runs on
//! the node, e.g. to take trapped frames) — and then the node's own deadlines run for up to
//! 200 steps or 60 s of virtual time. Every `poll_transmit` length must fit the buffer.

use std::time::Duration;

use rtlan_core::{Instant, Node, PortId};

/// Feeds `data` to `node` (module docs); `buf` receives transmitted frames.
pub fn drive<N: Node>(node: &mut N, data: &[u8], buf: &mut [u8], mut after_each: impl FnMut(&mut N)) {
    let ports = u16::try_from(node.port_count()).unwrap_or(u16::MAX).max(1);
    let mut now = Instant::ZERO;
    let mut rest = data;
    while let [port, advance, hi, lo, tail @ ..] = rest {
        let len = usize::from(u16::from_be_bytes([*hi, *lo])).min(tail.len());
        let (frame, next) = tail.split_at(len);
        rest = next;
        now += Duration::from_micros(u64::from(*advance) * 37);
        if node.poll_timeout().is_some_and(|t| t <= now) {
            node.handle_timeout(now);
        }
        node.handle_frame(now, PortId(u16::from(*port) % ports), frame);
        drain(node, now, ports, buf);
        after_each(node);
    }
    let end = now + Duration::from_secs(60);
    for _ in 0..200 {
        let Some(t) = node.poll_timeout() else {
            break;
        };
        if t > end {
            break;
        }
        now = now.max(t);
        node.handle_timeout(now);
        drain(node, now, ports, buf);
        after_each(node);
    }
}

fn drain<N: Node>(node: &mut N, now: Instant, ports: u16, buf: &mut [u8]) {
    for port in 0..ports {
        while let Some(len) = node.poll_transmit(now, PortId(port), buf) {
            assert!(len <= buf.len());
        }
    }
}
