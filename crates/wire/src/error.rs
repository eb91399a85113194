//! The one error type of the wire crate.

/// Why a buffer could not be viewed, parsed or written as a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum Error {
    /// The buffer is shorter than the header (or than a length field inside it claims), or an
    /// output buffer is too short for what is to be written into it.
    #[error("buffer too short for the packet")]
    Truncated,
    /// A field holds a value the format forbids (wrong version, a length field smaller than the
    /// header it covers, an unparseable textual address, ...).
    #[error("malformed packet or address")]
    Malformed,
    /// The packet is well formed but of a kind this crate does not handle (e.g. ARP for a
    /// hardware or protocol type other than Ethernet/IPv4, or an Ethernet frame that does not
    /// carry IPv4 where IPv4 is required).
    #[error("unsupported packet type")]
    Unsupported,
}

/// Result with the wire crate's [`Error`].
pub type Result<T> = core::result::Result<T, Error>;
