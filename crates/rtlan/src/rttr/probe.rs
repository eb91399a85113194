//! The measurement header `rtlan send` puts at the start of every UDP payload and `rtlan recv`
//! reads back (byte layout in `docs/rttr.md`):
//!
//! ```text
//!  0      4        5      6          8                16                   24
//!  +------+--------+------+----------+----------------+--------------------+-- filler
//!  |"RTLN"|version | flags| reserved |  seq (u64 BE)  | sent ns (u64 BE)   |
//!  +------+--------+------+----------+----------------+--------------------+--
//! ```
//!
//! `sent ns` is `CLOCK_REALTIME` in nanoseconds, stamped right before `sendto`.

/// The magic at the start of every probe payload.
pub const MAGIC: [u8; 4] = *b"RTLN";
/// The header version this code writes and reads.
pub const VERSION: u8 = 1;
/// Header length in bytes; payloads shorter than this cannot carry a probe.
pub const HEADER_LEN: usize = 24;

/// A payload is not a probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ProbeError {
    /// Fewer bytes than [`HEADER_LEN`].
    #[error("{len} bytes, a probe header needs {HEADER_LEN}")]
    Truncated {
        /// The length seen.
        len: usize,
    },
    /// The first four bytes are not `RTLN`.
    #[error("no RTLN magic")]
    BadMagic,
    /// A version this code does not read.
    #[error("unknown probe version {0}")]
    UnknownVersion(u8),
}

/// The probe header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeHeader {
    /// Flags (none defined yet; carried as is).
    pub flags: u8,
    /// Sequence number, from 0 per stream.
    pub seq: u64,
    /// Send time, `CLOCK_REALTIME` nanoseconds.
    pub sent_ns: u64,
}

impl ProbeHeader {
    /// Reads the header at the start of `buf`.
    pub fn parse(buf: &[u8]) -> Result<ProbeHeader, ProbeError> {
        let Some(h) = buf.get(..HEADER_LEN) else {
            return Err(ProbeError::Truncated { len: buf.len() });
        };
        if h[0..4] != MAGIC {
            return Err(ProbeError::BadMagic);
        }
        if h[4] != VERSION {
            return Err(ProbeError::UnknownVersion(h[4]));
        }
        let word = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&h[at..at + 8]);
            u64::from_be_bytes(b)
        };
        Ok(ProbeHeader {
            flags: h[5],
            seq: word(8),
            sent_ns: word(16),
        })
    }

    /// Writes the header into the start of `buf`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), ProbeError> {
        let len = buf.len();
        let Some(h) = buf.get_mut(..HEADER_LEN) else {
            return Err(ProbeError::Truncated { len });
        };
        h[0..4].copy_from_slice(&MAGIC);
        h[4] = VERSION;
        h[5] = self.flags;
        h[6..8].copy_from_slice(&[0, 0]);
        h[8..16].copy_from_slice(&self.seq.to_be_bytes());
        h[16..24].copy_from_slice(&self.sent_ns.to_be_bytes());
        Ok(())
    }
}

/// `CLOCK_REALTIME` in nanoseconds since the Unix epoch (0 before 1970).
pub fn realtime_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn annotated_bytes() {
        let bytes = [
            b'R', b'T', b'L', b'N', // magic
            1,    // version
            0x80, // flags
            0, 0, // reserved
            0, 0, 0, 0, 0, 0, 1, 2, // seq = 258
            0, 0, 0, 0, 0, 0, 0x03, 0xe8, // sent_ns = 1000
            0xaa, // filler
        ];
        let h = ProbeHeader::parse(&bytes).expect("valid header");
        assert_eq!(
            h,
            ProbeHeader {
                flags: 0x80,
                seq: 258,
                sent_ns: 1000
            }
        );
        let mut out = [0xffu8; 25];
        h.emit(&mut out).expect("room");
        assert_eq!(&out[..24], &bytes[..24]);
        assert_eq!(out[24], 0xff, "emit touches only the header");
    }

    #[test]
    fn bad_input_is_an_error() {
        assert_eq!(
            ProbeHeader::parse(b"RTLN"),
            Err(ProbeError::Truncated { len: 4 })
        );
        assert_eq!(ProbeHeader::parse(&[0u8; 24]), Err(ProbeError::BadMagic));
        let mut v = [0u8; 24];
        v[..4].copy_from_slice(b"RTLN");
        v[4] = 9;
        assert_eq!(ProbeHeader::parse(&v), Err(ProbeError::UnknownVersion(9)));
        let h = ProbeHeader {
            flags: 0,
            seq: 1,
            sent_ns: 2,
        };
        assert_eq!(
            h.emit(&mut [0u8; 23]),
            Err(ProbeError::Truncated { len: 23 })
        );
    }

    proptest! {
        #[test]
        fn round_trip(flags: u8, seq: u64, sent_ns: u64, extra in 0usize..64) {
            let h = ProbeHeader { flags, seq, sent_ns };
            let mut buf = vec![0u8; HEADER_LEN + extra];
            h.emit(&mut buf).expect("room");
            prop_assert_eq!(ProbeHeader::parse(&buf), Ok(h));
        }

        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = ProbeHeader::parse(&bytes);
        }
    }
}
