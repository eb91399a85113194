//! The switch's page: the core's per-port and switch-wide counters (every drop reason it
//! keeps), the shell's per-port counters, queue depths, timer lateness, guarantee violations,
//! per-connection counters from the connection table, admission refusals by resource, and the
//! recent per-hop setup latencies.

use rtlan_core::switch::Switch;

use super::{labels, Page};
use crate::switchd::ShellStats;
use crate::timer::LatenessStats;

/// Renders the switch's page; `ifnames` name the ports (label `port`).
pub fn render(
    switch: &Switch,
    shell: &ShellStats,
    timer: &LatenessStats,
    ifnames: &[String],
    now: rtlan_core::time::Instant,
) -> String {
    let mut page = Page::new();
    let name_of = |i: usize| ifnames.get(i).cloned().unwrap_or_else(|| i.to_string());
    let stats = switch.stats();
    for (i, p) in stats.ports.iter().enumerate() {
        let port = name_of(i);
        let l = || labels(&[("port", &port)]);
        page.counter(
            "rtlan_port_rx_frames",
            "Frames received on the port.",
            l(),
            p.rx_frames,
        );
        page.counter(
            "rtlan_port_rx_bytes",
            "Bytes received on the port.",
            l(),
            p.rx_bytes,
        );
        page.counter(
            "rtlan_port_tx_frames",
            "Frames sent on the port.",
            l(),
            p.tx_frames,
        );
        page.counter(
            "rtlan_port_tx_bytes",
            "Bytes sent on the port.",
            l(),
            p.tx_bytes,
        );
        let drops = [
            ("queue_full", p.drop_queue_full),
            ("rt_queue_full", p.rt_drop_queue_full),
            ("preemptive_discard", p.nrt_preemptive_drops),
            ("tx_buffer", p.drop_tx_buffer),
            ("stp_blocked", p.stp_blocked),
        ];
        for (reason, n) in drops {
            page.counter(
                "rtlan_port_drops",
                "Frames dropped at the port, by reason.",
                labels(&[("port", &port), ("reason", reason)]),
                n,
            );
        }
        let queued = p.tx_queued.saturating_sub(p.tx_frames + p.drop_tx_buffer);
        page.gauge(
            "rtlan_port_queue_frames",
            "Frames waiting in the port's queues.",
            l(),
            queued,
        );
        page.counter(
            "rtlan_port_late_sends",
            "Sends later than 50 us after they fell due.",
            l(),
            p.pacing_late_sends,
        );
        page.gauge(
            "rtlan_port_late_send_max_seconds",
            "Largest lateness of a send (whole seconds are rare: see the _ns value in stats).",
            l(),
            p.pacing_late_max_ns / 1_000_000_000,
        );
        page.counter(
            "rtlan_guarantee_violations",
            "Sends later than half the lateness budget: each may have broken a delay bound.",
            l(),
            p.guarantee_violations,
        );
    }
    for (i, p) in shell.ports.iter().enumerate() {
        let port = name_of(i);
        let c = &p.counters;
        let reasons = [
            ("rx_truncated", c.rx_truncated),
            ("rx_superframe", c.rx_superframe_dropped),
            ("rx_bad_descriptor", c.rx_bad_descriptor),
            ("rx_kernel", c.rx_kernel_drops),
            ("tx_wrong_format", c.tx_wrong_format),
            ("tx_bad_length", c.tx_bad_length),
        ];
        for (reason, n) in reasons {
            page.counter(
                "rtlan_port_driver_drops",
                "Frames the port's driver or kernel dropped, by reason.",
                labels(&[("port", &port), ("reason", reason)]),
                n,
            );
        }
        // Transmit threads (docs/threads.md), on ports that have one.
        if c.tx_thread_kicks > 0 {
            page.counter(
                "rtlan_port_tx_thread_kicks",
                "TX-ring kicks made by the port's transmit thread.",
                labels(&[("port", &port)]),
                c.tx_thread_kicks,
            );
            page.counter(
                "rtlan_port_tx_thread_failed_kicks",
                "Of those, kicks that failed (retried; the error reaches the data plane).",
                labels(&[("port", &port)]),
                c.tx_thread_failed_kicks,
            );
            page.counter(
                "rtlan_port_tx_thread_wait_microseconds",
                "Sum over kicks of the time from the data plane's doorbell to the kick.",
                labels(&[("port", &port)]),
                c.tx_thread_wait_sum_ns / 1000,
            );
        }
    }
    // The best-effort fast path (docs/fastpath.md): frames its XDP programs forwarded from each
    // port, which the core's counters above never see, and whether the port is open.
    for (i, f) in shell.fast_path.iter().enumerate() {
        let port = name_of(i);
        page.counter(
            "rtlan_port_fast_frames",
            "Best-effort frames the port's XDP program forwarded itself (fast path).",
            labels(&[("port", &port)]),
            f.frames,
        );
        page.counter(
            "rtlan_port_fast_bytes",
            "Bytes of those frames.",
            labels(&[("port", &port)]),
            f.bytes,
        );
        page.gauge(
            "rtlan_port_fast_open",
            "1 while the port is open to the fast path (no reservation crosses it).",
            labels(&[("port", &port)]),
            u64::from(f.state == "open"),
        );
    }
    let rt = &stats.rt;
    let switch_drops = [
        ("malformed", stats.drop_malformed),
        ("to_switch", stats.drop_to_switch),
        ("same_port", stats.drop_same_port),
        ("pending_full", stats.drop_pending_full),
        ("pending_timeout", stats.drop_pending_timeout),
        ("bad_port", stats.drop_bad_port),
        ("control", stats.drop_control),
        ("control_refused_role", stats.control_refused_role),
        ("policed", stats.drop_policed),
        ("preemptive_discard", stats.drop_preemptive),
        ("rt_queue_full", rt.queue_drops),
        ("rt_unknown_id", rt.unknown_id_drops),
        ("rt_malformed", rt.malformed_drops),
        ("rt_rewrite", rt.rewrite_drops),
        ("rt_nonconforming", rt.nonconforming_drops),
        ("rt_reshape_orphan", rt.reshape_orphans),
    ];
    for (reason, n) in switch_drops {
        page.counter(
            "rtlan_switch_drops",
            "Frames the switch core dropped, by reason.",
            labels(&[("reason", reason)]),
            n,
        );
    }
    page.counter(
        "rtlan_switch_forwarded_frames",
        "Unicast frames forwarded.",
        labels(&[]),
        stats.forwarded,
    );
    page.counter(
        "rtlan_switch_flooded_frames",
        "Frames flooded.",
        labels(&[]),
        stats.flooded,
    );
    page.counter(
        "rtlan_switch_rt_frames",
        "Real-time frames forwarded on a connection.",
        labels(&[]),
        rt.forwarded,
    );
    page.counter(
        "rtlan_switch_rt_reshaped_frames",
        "First-hop frames held until they conformed to their T-SPEC instead of dropped.",
        labels(&[]),
        rt.reshaped,
    );
    for (resource, n) in switch.admission().refusals_by_resource().by_resource() {
        page.counter(
            "rtlan_admission_refusals",
            "Reservations refused by per-hop admission, by the resource that was short.",
            labels(&[("resource", resource)]),
            n,
        );
    }
    page.counter(
        "rtlan_admission_refusals",
        "Reservations refused by per-hop admission, by the resource that was short.",
        labels(&[("resource", "delay")]),
        rt.delay_refusals,
    );
    page.gauge(
        "rtlan_connections",
        "Real-time connections installed.",
        labels(&[]),
        switch.connections().len() as u64,
    );
    for c in switch.connection_list(now) {
        let conn = format!("{}:{}", c.in_port, c.in_id);
        let l = || labels(&[("conn", &conn), ("port", &name_of(usize::from(c.out_port)))]);
        page.counter(
            "rtlan_conn_tx_frames",
            "Frames the scheduler sent on the connection.",
            l(),
            c.frames_sent,
        );
        page.counter(
            "rtlan_conn_tx_bytes",
            "Bytes sent on the connection.",
            l(),
            c.bytes_sent,
        );
        page.counter(
            "rtlan_conn_drops",
            "Frames of the connection dropped (queue full or too long).",
            l(),
            c.frames_dropped,
        );
        page.counter(
            "rtlan_conn_nonconforming_drops",
            "Frames dropped as not conforming to the T-SPEC.",
            l(),
            c.nonconforming,
        );
        page.gauge(
            "rtlan_conn_rate_bits_per_second",
            "Reserved rate (whole frames).",
            l(),
            c.rate_bps,
        );
        page.gauge(
            "rtlan_conn_queue_frames",
            "Frames waiting in the connection's queue.",
            l(),
            c.queued as u64,
        );
    }
    page.counter(
        "rtlan_timer_wakeups",
        "Deadlines the loop observed.",
        labels(&[]),
        timer.wakeups,
    );
    page.counter(
        "rtlan_timer_late_wakeups",
        "Wake-ups later than 50 us.",
        labels(&[]),
        timer.over_50us,
    );
    page.counter(
        "rtlan_timer_lateness_nanoseconds",
        "Sum of wake-up lateness (mean = this / rtlan_timer_wakeups_total).",
        labels(&[]),
        timer.total_ns,
    );
    let latency = switch.setup_latency();
    let bounds: Vec<f64> = latency
        .hit
        .bounds_ns
        .iter()
        .map(|&ns| ns as f64 / 1e9)
        .collect();
    for (kind, buckets) in [("hit", &latency.hit), ("miss", &latency.miss)] {
        page.histogram(
            "rtlan_setup_latency_seconds",
            "Per-hop SETUP handling time since start, from the SETUP's arrival to its forwarded SETUP or answer leaving the port, by whether the receiver's route was known (hit) or needed an ARP query (miss).",
            labels(&[("kind", kind)]),
            &bounds,
            &buckets.counts,
            buckets.sum_ns as f64 / 1e9,
        );
    }
    page.encode()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::PortStats;
    use crate::packet::PortCounters;

    /// A port with a transmit thread exports its kicks, failures and wait; one without exports
    /// none of the three.
    #[test]
    fn transmit_thread_counters_appear_for_ports_that_have_one() {
        let text = "[[port]]\nifname = \"p0\"\n[[port]]\nifname = \"p1\"\n";
        let config = crate::switchd::Config::from_toml_str(text).expect("config");
        let macs = [
            rtlan_wire::ethernet::Address([2, 0, 0, 0, 0, 1]),
            rtlan_wire::ethernet::Address([2, 0, 0, 0, 0, 2]),
        ];
        let now = rtlan_core::time::Instant::ZERO;
        let switch = Switch::new(config.switch_config(&macs), now).expect("switch");
        let port = |ifname: &str, counters: PortCounters| PortStats {
            ifname: ifname.to_string(),
            ifindex: 1,
            mac: "02:00:00:00:00:01".to_string(),
            kind: "af_packet",
            counters,
        };
        let shell = ShellStats {
            ports: vec![
                port(
                    "p0",
                    PortCounters {
                        tx_thread_kicks: 7,
                        tx_thread_failed_kicks: 2,
                        tx_thread_wait_sum_ns: 3_500_000,
                        ..PortCounters::default()
                    },
                ),
                port("p1", PortCounters::default()),
            ],
            ..ShellStats::default()
        };
        let names = ["p0".to_string(), "p1".to_string()];
        let page = render(&switch, &shell, &LatenessStats::default(), &names, now);
        for line in [
            "rtlan_port_tx_thread_kicks_total{port=\"p0\"} 7",
            "rtlan_port_tx_thread_failed_kicks_total{port=\"p0\"} 2",
            "rtlan_port_tx_thread_wait_microseconds_total{port=\"p0\"} 3500",
        ] {
            assert!(page.contains(line), "{line} missing:\n{page}");
        }
        assert!(
            !page.contains("tx_thread_kicks_total{port=\"p1\"}"),
            "{page}"
        );
    }
}
