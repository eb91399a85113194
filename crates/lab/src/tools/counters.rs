//! Interface counters and addresses from `ip -s -j link show dev IF` — the ground truth for what
//! a port really sent and received (e.g. trafgen's packets, a switch's drops).

use super::process::{check_ns, run_ip, Tool};
use super::{unparseable, Result, ToolError};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Packet, byte, drop and error counters of one interface (`stats64`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct IfCounters {
    /// Packets received.
    pub rx_packets: u64,
    /// Bytes received (Ethernet header included, FCS excluded).
    pub rx_bytes: u64,
    /// Received packets dropped by the kernel.
    pub rx_dropped: u64,
    /// Receive errors.
    pub rx_errors: u64,
    /// Packets transmitted.
    pub tx_packets: u64,
    /// Bytes transmitted (Ethernet header included, FCS excluded).
    pub tx_bytes: u64,
    /// Packets dropped on transmit (for a veth: the peer could not take them).
    pub tx_dropped: u64,
    /// Transmit errors.
    pub tx_errors: u64,
}

impl IfCounters {
    /// The change since `earlier` (counters only grow; a reset reads as 0, not a wrap).
    pub fn since(&self, earlier: &IfCounters) -> IfCounters {
        IfCounters {
            rx_packets: self.rx_packets.saturating_sub(earlier.rx_packets),
            rx_bytes: self.rx_bytes.saturating_sub(earlier.rx_bytes),
            rx_dropped: self.rx_dropped.saturating_sub(earlier.rx_dropped),
            rx_errors: self.rx_errors.saturating_sub(earlier.rx_errors),
            tx_packets: self.tx_packets.saturating_sub(earlier.tx_packets),
            tx_bytes: self.tx_bytes.saturating_sub(earlier.tx_bytes),
            tx_dropped: self.tx_dropped.saturating_sub(earlier.tx_dropped),
            tx_errors: self.tx_errors.saturating_sub(earlier.tx_errors),
        }
    }
}

#[derive(Debug, Deserialize)]
struct LinkJson {
    address: Option<String>,
    stats64: Option<StatsJson>,
}

#[derive(Debug, Deserialize)]
struct StatsJson {
    rx: DirectionJson,
    tx: DirectionJson,
}

#[derive(Debug, Deserialize)]
struct DirectionJson {
    bytes: u64,
    packets: u64,
    #[serde(default)]
    errors: u64,
    #[serde(default)]
    dropped: u64,
}

fn show_link(ns: &str, ifname: &str) -> Result<String> {
    check_ns(ns)?;
    if ifname.is_empty() || ifname.len() > 15 || ifname.contains(['/', ' ', '\0']) {
        return Err(ToolError::InvalidArgument(format!(
            "bad interface name {ifname:?}"
        )));
    }
    let out = run_ip(
        ["-n", ns, "-s", "-j", "link", "show", "dev", ifname],
        Duration::from_secs(5),
    )?;
    Ok(out.stdout_text())
}

fn parse_link(text: &str) -> Result<LinkJson> {
    let tool = Tool::Ip.binary();
    let mut links: Vec<LinkJson> = serde_json::from_str(text)
        .map_err(|e| unparseable(tool, format!("not link JSON: {e}"), text))?;
    match links.len() {
        1 => Ok(links.remove(0)),
        n => Err(unparseable(
            tool,
            format!("expected one link, got {n}"),
            text,
        )),
    }
}

/// Parses the output of `ip -s -j link show dev IF` into counters.
pub fn parse_ip_link_json(text: &str) -> Result<IfCounters> {
    let stats = parse_link(text)?
        .stats64
        .ok_or_else(|| unparseable(Tool::Ip.binary(), "no stats64 (missing -s?)", text))?;
    Ok(IfCounters {
        rx_packets: stats.rx.packets,
        rx_bytes: stats.rx.bytes,
        rx_dropped: stats.rx.dropped,
        rx_errors: stats.rx.errors,
        tx_packets: stats.tx.packets,
        tx_bytes: stats.tx.bytes,
        tx_dropped: stats.tx.dropped,
        tx_errors: stats.tx.errors,
    })
}

/// Reads the counters of interface `ifname` in namespace `ns`.
pub fn iface_counters(ns: &str, ifname: &str) -> Result<IfCounters> {
    parse_ip_link_json(&show_link(ns, ifname)?)
}

/// Reads the MAC address of interface `ifname` in namespace `ns`.
pub fn iface_mac(ns: &str, ifname: &str) -> Result<[u8; 6]> {
    let text = show_link(ns, ifname)?;
    let address = parse_link(&text)?
        .address
        .ok_or_else(|| unparseable(Tool::Ip.binary(), "no address", &text))?;
    parse_mac(&address).ok_or_else(|| unparseable(Tool::Ip.binary(), "bad MAC address", &text))
}

/// Parses `aa:bb:cc:dd:ee:ff`.
pub(crate) fn parse_mac(text: &str) -> Option<[u8; 6]> {
    let mut mac = [0u8; 6];
    let mut parts = text.split(':');
    for byte in &mut mac {
        let part = parts.next()?;
        if part.len() != 2 {
            return None;
        }
        *byte = u8::from_str_radix(part, 16).ok()?;
    }
    parts.next().is_none().then_some(mac)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_counters_and_delta() {
        let before = parse_ip_link_json(include_str!("testdata/ip_link_before.json")).expect("ok");
        let after = parse_ip_link_json(include_str!("testdata/ip_link_after.json")).expect("ok");
        assert_eq!(before.tx_packets, 625_533);
        assert_eq!(before.rx_bytes, 4_491_200);
        // Between the two captures trafgen sent 1000 frames of 60 bytes (and 6 packets came in).
        let delta = after.since(&before);
        assert_eq!(delta.tx_packets, 1000);
        assert_eq!(delta.tx_bytes, 60_000);
        assert_eq!(delta.rx_packets, 6);
        assert_eq!(delta.tx_dropped, 0);
        // Saturates instead of wrapping the other way round.
        assert_eq!(before.since(&after).tx_packets, 0);
    }

    #[test]
    fn rejects_wrong_shapes() {
        for bad in [
            "",
            "[]",
            "Device \"nope\" does not exist.",
            r#"[{"ifname":"lo"}]"#,
            r#"[{"stats64":{"rx":{"bytes":1},"tx":{"bytes":1,"packets":1}}}]"#,
        ] {
            assert!(
                matches!(parse_ip_link_json(bad), Err(ToolError::Unparseable { .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn mac_parsing() {
        assert_eq!(
            parse_mac("1e:4f:ae:0a:d8:4d"),
            Some([0x1e, 0x4f, 0xae, 0x0a, 0xd8, 0x4d])
        );
        for bad in [
            "",
            "1e:4f:ae:0a:d8",
            "1e:4f:ae:0a:d8:4d:00",
            "1e:4f:ae:0a:d8:zz",
            "1:2:3:4:5:6",
        ] {
            assert_eq!(parse_mac(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn bad_interface_names_are_rejected_before_running() {
        for bad in ["", "a/b", "sixteen-chars-xx"] {
            assert!(matches!(
                iface_counters("rtl-x", bad),
                Err(ToolError::InvalidArgument(_))
            ));
        }
    }
}
