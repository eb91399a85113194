//! Why an RSVP message or object could not be viewed, parsed, validated or written.

use super::{ClassNum, MessageType};

/// The error of the [`rsvp`](super) module.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum RsvpError {
    /// The buffer is shorter than the common header, than the RSVP Length field, than an object
    /// header or than an object's Length field; or an output buffer is too short for the
    /// message to be written into it.
    #[error("buffer too short for the RSVP message")]
    Truncated,
    /// The version nibble of the common header is not 1 (RFC 2205 §3.1.1).
    #[error("RSVP version {0}, expected 1")]
    Version(u8),
    /// The RSVP Length field is smaller than the 8-byte common header or not a multiple of 4.
    #[error("bad RSVP length {0}")]
    Length(u16),
    /// An object's Length field is smaller than its 4-byte header or not a multiple of 4
    /// (RFC 2205 §3.1.2).
    #[error("bad length {length} of an object of class {class}")]
    ObjectLength {
        /// The object's Class-Num.
        class: u8,
        /// The object's Length field.
        length: u16,
    },
    /// An object of a known class and C-Type has a body of the wrong size for its layout.
    #[error("object class {class} c-type {ctype} has a {length}-byte body, expected {expected}")]
    ObjectSize {
        /// The object's Class-Num.
        class: u8,
        /// The object's C-Type.
        ctype: u8,
        /// The body length found.
        length: usize,
        /// The body length the layout needs.
        expected: usize,
    },
    /// The RSVP Checksum is neither zero ("no checksum transmitted") nor correct.
    #[error("bad RSVP checksum")]
    Checksum,
    /// The message lacks an object its type requires (RFC 2205 §3.1.3–§3.1.9).
    #[error("{message:?} message without a {class:?} object")]
    MissingObject {
        /// The message type.
        message: MessageType,
        /// The class of the missing object.
        class: ClassNum,
    },
    /// A message type RFC 2205 does not define (decoding a typed [`super::Message`]).
    #[error("unknown RSVP message type {0}")]
    UnknownMessage(u8),
    /// A STYLE whose option vector names none of WF, FF, SE (RFC 2205 §A.7).
    #[error("unknown reservation style option vector {0:#x}")]
    UnknownStyle(u32),
    /// A message or an object to be written does not fit its 16-bit Length field, or an
    /// unknown object's body is not a multiple of 4 bytes long.
    #[error("RSVP message or object too long or misaligned to be written")]
    Unencodable,
}

impl From<RsvpError> for crate::Error {
    /// Maps onto the crate-wide error: truncation stays truncation, everything else is
    /// [`crate::Error::Malformed`].
    fn from(value: RsvpError) -> crate::Error {
        match value {
            RsvpError::Truncated => crate::Error::Truncated,
            _ => crate::Error::Malformed,
        }
    }
}
