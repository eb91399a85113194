//! Frames the agent's and the bridge's tests put on hosts' links: hosts numbered `n` with MAC
//! 02:00:00:00:02:n and address 198.18.0.n.

use std::net::Ipv4Addr;

use rtlan_wire::ethernet::Address;

use crate::time::Instant;

/// Host `n`'s MAC.
pub(crate) fn host_mac(n: u16) -> Address {
    Address([2, 0, 0, 0, 2, n as u8])
}

/// Host `n`'s address.
pub(crate) fn host_ip(n: u16) -> Ipv4Addr {
    Ipv4Addr::new(198, 18, 0, n as u8)
}

/// `n` milliseconds after the start.
pub(crate) fn ms(n: u64) -> Instant {
    Instant::from_nanos(n * 1_000_000)
}

/// A UDP frame from host `from` to host `to`, ports 5000 → `dport`, of `len` bytes, carrying
/// `tag` and `n` at the start of the payload.
pub(crate) fn udp(from: u16, to: u16, dport: u16, len: usize, tag: u8, n: u32) -> Vec<u8> {
    let mut f = vec![0u8; len.max(60)];
    f[0..6].copy_from_slice(&host_mac(to).0);
    f[6..12].copy_from_slice(&host_mac(from).0);
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let ip_len = (f.len() - 14) as u16;
    f[14] = 0x45;
    f[16..18].copy_from_slice(&ip_len.to_be_bytes());
    f[22] = 64;
    f[23] = 17;
    f[26..30].copy_from_slice(&host_ip(from).octets());
    f[30..34].copy_from_slice(&host_ip(to).octets());
    f[34..36].copy_from_slice(&5000u16.to_be_bytes());
    f[36..38].copy_from_slice(&dport.to_be_bytes());
    f[38..40].copy_from_slice(&(ip_len - 20).to_be_bytes());
    f[42] = tag;
    f[43..47].copy_from_slice(&n.to_be_bytes());
    f
}
