//! IPv4 prefixes (CIDR blocks, RFC 4632): the key of the router's forwarding table (QSR paper
//! §4.1) and of the PSIP classifier's filters (QSR paper §5), and what the host daemon's proxy
//! prefix (EtheReal §3.2) is made of.
//!
//! [`Ipv4Prefix`] always holds its network address with the host bits cleared, so two prefixes
//! that cover the same addresses compare equal. It implements `prefix_trie::Prefix`, which is how
//! the router's tables store it without converting to another crate's IP types.

use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

/// Errors of building or parsing an [`Ipv4Prefix`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrefixError {
    /// The prefix length is above 32.
    #[error("prefix length {0} is above 32")]
    LengthTooLong(u8),
    /// The text is not `a.b.c.d/len` (or a bare address, read as /32).
    #[error("not an IPv4 prefix: {0:?}")]
    Malformed(String),
}

/// An IPv4 prefix: a network address and a length of 0 ..= 32 bits, host bits cleared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ipv4Prefix {
    /// The network address as a host-order integer, host bits zero.
    bits: u32,
    /// The prefix length, 0 ..= 32.
    len: u8,
}

/// The netmask of a prefix of `len` bits (`len` ≤ 32), as a host-order integer.
const fn mask(len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        // len is 1 ..= 32 here, so the shift is 0 ..= 31.
        u32::MAX << (32 - len as u32)
    }
}

impl Ipv4Prefix {
    /// The default route's prefix, 0.0.0.0/0: covers every address.
    pub const DEFAULT: Self = Self { bits: 0, len: 0 };

    /// The prefix of `len` bits that contains `addr`; the host bits of `addr` are cleared.
    pub fn new(addr: Ipv4Addr, len: u8) -> Result<Self, PrefixError> {
        if len > 32 {
            return Err(PrefixError::LengthTooLong(len));
        }
        Ok(Self {
            bits: u32::from(addr) & mask(len),
            len,
        })
    }

    /// The prefix of `len` bits containing `addr`, for constants: the host bits are cleared,
    /// and a `len` above 32 is taken as 32.
    pub const fn from_parts(addr: Ipv4Addr, len: u8) -> Self {
        let len = if len > 32 { 32 } else { len };
        Self {
            bits: addr.to_bits() & mask(len),
            len,
        }
    }

    /// The host prefix (/32) of `addr`.
    pub const fn host(addr: Ipv4Addr) -> Self {
        Self {
            bits: addr.to_bits(),
            len: 32,
        }
    }

    /// The network address (host bits zero).
    pub const fn network(&self) -> Ipv4Addr {
        Ipv4Addr::from_bits(self.bits)
    }

    /// The prefix length in bits, 0 ..= 32.
    pub const fn prefix_len(&self) -> u8 {
        self.len
    }

    /// Whether this is the default prefix 0.0.0.0/0 (length zero).
    pub const fn is_default(&self) -> bool {
        self.len == 0
    }

    /// Whether `addr` lies inside this prefix.
    pub const fn contains(&self, addr: Ipv4Addr) -> bool {
        addr.to_bits() & mask(self.len) == self.bits
    }

    /// Whether every address of `other` lies inside this prefix (true for `self == other`).
    pub const fn covers(&self, other: &Self) -> bool {
        self.len <= other.len && other.bits & mask(self.len) == self.bits
    }
}

impl fmt::Display for Ipv4Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network(), self.len)
    }
}

impl FromStr for Ipv4Prefix {
    type Err = PrefixError;

    /// Parses `a.b.c.d/len`, or a bare address as a /32. Host bits are cleared, as in
    /// [`Ipv4Prefix::new`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let malformed = || PrefixError::Malformed(s.to_owned());
        let (addr, len) = match s.split_once('/') {
            Some((addr, len)) => (addr, len.parse::<u8>().map_err(|_| malformed())?),
            None => (s, 32),
        };
        let addr = addr.parse::<Ipv4Addr>().map_err(|_| malformed())?;
        Self::new(addr, len)
    }
}

impl prefix_trie::Prefix for Ipv4Prefix {
    type R = u32;

    fn repr(&self) -> u32 {
        self.bits
    }

    fn prefix_len(&self) -> u8 {
        self.len
    }

    /// The trie passes `len` ≤ 32 (the width of `u32`); a larger one is clamped rather than
    /// trusted, so that no call can build a prefix that breaks the type's invariant.
    fn from_repr_len(repr: u32, len: u8) -> Self {
        let len = len.min(32);
        Self {
            bits: repr & mask(len),
            len,
        }
    }

    fn mask(&self) -> u32 {
        self.bits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Ipv4Prefix {
        s.parse().unwrap()
    }

    #[test]
    fn host_bits_are_cleared_so_equal_blocks_compare_equal() {
        assert_eq!(p("10.1.2.3/16"), p("10.1.0.0/16"));
        assert_eq!(p("10.1.2.3/16").network(), Ipv4Addr::new(10, 1, 0, 0));
        assert_eq!(p("255.255.255.255/0"), Ipv4Prefix::DEFAULT);
        assert_eq!(
            p("192.0.2.7"),
            Ipv4Prefix::host(Ipv4Addr::new(192, 0, 2, 7))
        );
    }

    #[test]
    fn lengths_above_32_and_bad_text_are_refused() {
        assert_eq!(
            Ipv4Prefix::new(Ipv4Addr::LOCALHOST, 33),
            Err(PrefixError::LengthTooLong(33))
        );
        for bad in [
            "",
            "10.0.0.0/",
            "10.0.0/8",
            "10.0.0.0/x",
            "10.0.0.0/300",
            "/8",
        ] {
            assert!(bad.parse::<Ipv4Prefix>().is_err(), "{bad:?} parsed");
        }
        assert_eq!(
            "10.0.0.0/33".parse::<Ipv4Prefix>(),
            Err(PrefixError::LengthTooLong(33))
        );
    }

    #[test]
    fn contains_and_covers_follow_the_mask() {
        let net = p("10.1.0.0/16");
        assert!(net.contains(Ipv4Addr::new(10, 1, 255, 255)));
        assert!(!net.contains(Ipv4Addr::new(10, 2, 0, 0)));
        assert!(Ipv4Prefix::DEFAULT.contains(Ipv4Addr::BROADCAST));
        assert!(net.covers(&p("10.1.2.0/24")));
        assert!(net.covers(&net));
        assert!(!p("10.1.2.0/24").covers(&net));
        assert!(!net.covers(&p("10.2.0.0/24")));
        let host = p("10.1.2.3/32");
        assert!(host.contains(Ipv4Addr::new(10, 1, 2, 3)));
        assert!(!host.contains(Ipv4Addr::new(10, 1, 2, 4)));
    }

    #[test]
    fn display_round_trips() {
        for s in [
            "0.0.0.0/0",
            "10.0.0.0/8",
            "192.0.2.128/25",
            "203.0.113.9/32",
        ] {
            assert_eq!(p(s).to_string(), s);
        }
    }
}
