//! The owned RSVP message: common header fields and objects (RFC 2205 §3.1), with the
//! mandatory-object check of §3.1.3–§3.1.9.

use core::fmt;

use super::object::{ClassNum, Object, ObjectRepr};
use super::objects::state::StyleKind;
use super::{MessageType, Packet, Result, RsvpError, HEADER_LEN, MAX_LEN, VERSION};

/// An RSVP message in owned form. The checksum and length are computed by
/// [`emit`](Repr::emit); the reserved octet is written as 0.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Repr {
    /// The message type.
    pub msg_type: MessageType,
    /// The header flags (low 4 bits written; none defined by RFC 2205).
    pub flags: u8,
    /// Send_TTL: the IP TTL the message is sent with.
    pub send_ttl: u8,
    /// The objects, in the order they are written.
    pub objects: Vec<ObjectRepr>,
}

impl Repr {
    /// A message of type `msg_type` with no flags.
    pub fn new(msg_type: MessageType, send_ttl: u8, objects: Vec<ObjectRepr>) -> Repr {
        Repr {
            msg_type,
            flags: 0,
            send_ttl,
            objects,
        }
    }

    /// Parses a checked message: [`RsvpError::Version`] unless the version is 1,
    /// [`RsvpError::Checksum`] unless the checksum verifies, and the first error of any object.
    /// Which objects are present is not checked here; see [`validate`](Self::validate).
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        if packet.version() != VERSION {
            return Err(RsvpError::Version(packet.version()));
        }
        if !packet.verify_checksum() {
            return Err(RsvpError::Checksum);
        }
        let objects = packet
            .objects()
            .map(|object| ObjectRepr::parse(&object?))
            .collect::<Result<Vec<_>>>()?;
        Ok(Repr {
            msg_type: packet.msg_type(),
            flags: packet.flags(),
            send_ttl: packet.send_ttl(),
            objects,
        })
    }

    /// Length of the emitted message: header and objects.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN
            + self
                .objects
                .iter()
                .map(ObjectRepr::buffer_len)
                .sum::<usize>()
    }

    /// Writes the message into the first [`buffer_len`](Self::buffer_len) bytes of `packet`,
    /// with its length and checksum. [`RsvpError::Truncated`] if the buffer is shorter,
    /// [`RsvpError::Unencodable`] if the message is longer than [`MAX_LEN`] or an object
    /// cannot be written. Nothing is written on error.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) -> Result<()> {
        let len = self.buffer_len();
        if len > MAX_LEN {
            return Err(RsvpError::Unencodable);
        }
        for object in &self.objects {
            if !object.buffer_len().is_multiple_of(4) {
                return Err(RsvpError::Unencodable);
            }
        }
        if packet.as_ref().len() < len {
            return Err(RsvpError::Truncated);
        }
        packet.set_version(VERSION);
        packet.set_flags(self.flags);
        packet.set_msg_type(self.msg_type);
        packet.set_send_ttl(self.send_ttl);
        packet.set_reserved(0);
        // `len <= MAX_LEN` was checked above.
        packet.set_length(len as u16);
        let mut area = packet.objects_bytes_mut();
        for object in &self.objects {
            let (this, rest) = area.split_at_mut(object.buffer_len());
            object.emit(&mut Object::new_unchecked(this))?;
            area = rest;
        }
        packet.fill_checksum();
        Ok(())
    }

    /// Writes the message into a new vector of [`buffer_len`](Self::buffer_len) bytes.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut buf = vec![0; self.buffer_len()];
        self.emit(&mut Packet::new_unchecked(&mut buf[..]))?;
        Ok(buf)
    }

    /// The first object of class `class`, if any.
    pub fn find(&self, class: ClassNum) -> Option<&ObjectRepr> {
        self.objects.iter().find(|o| o.class_num() == class)
    }

    /// Checks that every object RFC 2205 §3.1.3–§3.1.9 requires for this message type is
    /// present (in any order, as §3.1 lets a receiver accept): SESSION always; RSVP_HOP in
    /// all but PathErr and ResvConf; TIME_VALUES in Path and Resv; ERROR_SPEC in the error
    /// messages and ResvConf; RESV_CONFIRM in ResvConf; STYLE in the Resv family; in a Path a
    /// SENDER_TSPEC when a SENDER_TEMPLATE is present; in a Resv at least one FLOWSPEC, and for
    /// the FF and SE styles at least one FILTER_SPEC. Unknown message types pass.
    pub fn validate(&self) -> Result<()> {
        use ClassNum as C;
        let required: &[ClassNum] = match self.msg_type {
            MessageType::Path => &[C::Session, C::RsvpHop, C::TimeValues],
            MessageType::Resv => &[C::Session, C::RsvpHop, C::TimeValues, C::Style, C::Flowspec],
            MessageType::PathTear => &[C::Session, C::RsvpHop],
            MessageType::ResvTear => &[C::Session, C::RsvpHop, C::Style],
            MessageType::PathErr => &[C::Session, C::ErrorSpec],
            MessageType::ResvErr => &[C::Session, C::RsvpHop, C::ErrorSpec, C::Style],
            MessageType::ResvConf => &[C::Session, C::ErrorSpec, C::ResvConfirm, C::Style],
            MessageType::Unknown(_) => &[],
        };
        let missing = |class: ClassNum| RsvpError::MissingObject {
            message: self.msg_type,
            class,
        };
        for &class in required {
            self.find(class).ok_or(missing(class))?;
        }
        if self.msg_type == MessageType::Path
            && self.find(C::SenderTemplate).is_some()
            && self.find(C::SenderTspec).is_none()
        {
            return Err(missing(C::SenderTspec));
        }
        if self.msg_type == MessageType::Resv {
            if let Some(ObjectRepr::Style(style)) = self.find(C::Style) {
                let explicit = matches!(
                    style.kind(),
                    StyleKind::FixedFilter | StyleKind::SharedExplicit
                );
                if explicit && self.find(C::FilterSpec).is_none() {
                    return Err(missing(C::FilterSpec));
                }
            }
        }
        Ok(())
    }
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "RSVP {:?} ttl={} objects=[",
            self.msg_type, self.send_ttl
        )?;
        for (i, object) in self.objects.iter().enumerate() {
            let sep = if i == 0 { "" } else { " " };
            write!(f, "{sep}{:?}", object.class_num())?;
        }
        write!(f, "]")
    }
}
