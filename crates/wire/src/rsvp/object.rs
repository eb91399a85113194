//! RSVP objects (RFC 2205 §3.1.2 and §A): the 4-byte object header, the view [`Object`], the
//! bounds-checked iterator [`Objects`] and the owned [`ObjectRepr`].

use super::objects::addressing::{FilterSpec, Label, ResvConfirm, RsvpHop, Session};
use super::objects::adspec::Adspec;
use super::objects::intserv::{Flowspec, TokenBucket};
use super::objects::state::{ErrorSpec, Style, TimeValues};
use super::objects::{Body, BodyWriter};
use super::{Result, RsvpError};

/// Length of an object header (Length, Class-Num, C-Type).
pub const OBJECT_HEADER_LEN: usize = 4;

/// The C-Type of the IPv4 forms of SESSION, RSVP_HOP, ERROR_SPEC, FILTER_SPEC,
/// SENDER_TEMPLATE and RESV_CONFIRM, and of TIME_VALUES, STYLE and LABEL.
pub(super) const CTYPE_IPV4: u8 = 1;

/// The C-Type of the Integrated Services forms of FLOWSPEC, SENDER_TSPEC and ADSPEC
/// (RFC 2210 §3).
pub(super) const CTYPE_INTSERV: u8 = 2;

/// The Class-Num of an object (RFC 2205 §A; LABEL from RFC 3209 §4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ClassNum {
    /// NULL, 0.
    Null,
    /// SESSION, 1.
    Session,
    /// RSVP_HOP, 3.
    RsvpHop,
    /// INTEGRITY, 4 (RFC 2747).
    Integrity,
    /// TIME_VALUES, 5.
    TimeValues,
    /// ERROR_SPEC, 6.
    ErrorSpec,
    /// SCOPE, 7.
    Scope,
    /// STYLE, 8.
    Style,
    /// FLOWSPEC, 9.
    Flowspec,
    /// FILTER_SPEC, 10.
    FilterSpec,
    /// SENDER_TEMPLATE, 11.
    SenderTemplate,
    /// SENDER_TSPEC, 12.
    SenderTspec,
    /// ADSPEC, 13.
    Adspec,
    /// POLICY_DATA, 14.
    PolicyData,
    /// RESV_CONFIRM, 15.
    ResvConfirm,
    /// LABEL, 16 (RFC 3209).
    Label,
    /// Any other value, kept as data.
    Unknown(u8),
}

impl From<u8> for ClassNum {
    fn from(value: u8) -> ClassNum {
        match value {
            0 => ClassNum::Null,
            1 => ClassNum::Session,
            3 => ClassNum::RsvpHop,
            4 => ClassNum::Integrity,
            5 => ClassNum::TimeValues,
            6 => ClassNum::ErrorSpec,
            7 => ClassNum::Scope,
            8 => ClassNum::Style,
            9 => ClassNum::Flowspec,
            10 => ClassNum::FilterSpec,
            11 => ClassNum::SenderTemplate,
            12 => ClassNum::SenderTspec,
            13 => ClassNum::Adspec,
            14 => ClassNum::PolicyData,
            15 => ClassNum::ResvConfirm,
            16 => ClassNum::Label,
            other => ClassNum::Unknown(other),
        }
    }
}

impl From<ClassNum> for u8 {
    fn from(value: ClassNum) -> u8 {
        match value {
            ClassNum::Null => 0,
            ClassNum::Session => 1,
            ClassNum::RsvpHop => 3,
            ClassNum::Integrity => 4,
            ClassNum::TimeValues => 5,
            ClassNum::ErrorSpec => 6,
            ClassNum::Scope => 7,
            ClassNum::Style => 8,
            ClassNum::Flowspec => 9,
            ClassNum::FilterSpec => 10,
            ClassNum::SenderTemplate => 11,
            ClassNum::SenderTspec => 12,
            ClassNum::Adspec => 13,
            ClassNum::PolicyData => 14,
            ClassNum::ResvConfirm => 15,
            ClassNum::Label => 16,
            ClassNum::Unknown(other) => other,
        }
    }
}

mod field {
    use core::ops::Range;

    pub(super) const LENGTH: Range<usize> = 0..2;
    pub(super) const CLASS: usize = 2;
    pub(super) const CTYPE: usize = 3;
}

/// A read/write view of one object: header and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Object<T> {
    /// Wraps a buffer without checking it; accessors may panic on a short buffer.
    pub fn new_unchecked(buffer: T) -> Object<T> {
        Object { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len); after this no accessor panics.
    pub fn new_checked(buffer: T) -> Result<Object<T>> {
        let object = Self::new_unchecked(buffer);
        object.check_len()?;
        Ok(object)
    }

    /// Checks the buffer: [`RsvpError::Truncated`] if shorter than the object header or than
    /// the object's Length; [`RsvpError::ObjectLength`] if the Length is below 4 or not a
    /// multiple of 4.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < OBJECT_HEADER_LEN {
            return Err(RsvpError::Truncated);
        }
        let length = self.length();
        if usize::from(length) < OBJECT_HEADER_LEN || !length.is_multiple_of(4) {
            Err(RsvpError::ObjectLength {
                class: self.class_num_raw(),
                length,
            })
        } else if usize::from(length) > len {
            Err(RsvpError::Truncated)
        } else {
            Ok(())
        }
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The object's Length: header and body, in bytes.
    pub fn length(&self) -> u16 {
        let d = &self.buffer.as_ref()[field::LENGTH];
        u16::from_be_bytes([d[0], d[1]])
    }

    fn class_num_raw(&self) -> u8 {
        self.buffer.as_ref()[field::CLASS]
    }

    /// The Class-Num.
    pub fn class_num(&self) -> ClassNum {
        ClassNum::from(self.class_num_raw())
    }

    /// The C-Type.
    pub fn ctype(&self) -> u8 {
        self.buffer.as_ref()[field::CTYPE]
    }

    /// The body: the bytes after the header up to the object's Length.
    pub fn body(&self) -> &[u8] {
        &self.buffer.as_ref()[OBJECT_HEADER_LEN..usize::from(self.length())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Object<T> {
    /// Sets the Length.
    pub fn set_length(&mut self, value: u16) {
        self.buffer.as_mut()[field::LENGTH].copy_from_slice(&value.to_be_bytes());
    }

    /// Sets the Class-Num.
    pub fn set_class_num(&mut self, value: ClassNum) {
        self.buffer.as_mut()[field::CLASS] = value.into();
    }

    /// Sets the C-Type.
    pub fn set_ctype(&mut self, value: u8) {
        self.buffer.as_mut()[field::CTYPE] = value;
    }

    /// The body, mutable (up to the object's Length).
    pub fn body_mut(&mut self) -> &mut [u8] {
        let end = usize::from(self.length());
        &mut self.buffer.as_mut()[OBJECT_HEADER_LEN..end]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Object<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// Iterator over the objects of a message's object area. Each item is a checked view, or the
/// error that stopped the walk (a truncated header, a Length below 4, not a multiple of 4, or
/// past the end of the message); after an error the iterator is finished. It never panics.
#[derive(Debug, Clone)]
pub struct Objects<'a> {
    rest: &'a [u8],
}

impl<'a> Objects<'a> {
    /// Iterates over the objects in `data` (an object area, without the common header).
    pub fn new(data: &'a [u8]) -> Objects<'a> {
        Objects { rest: data }
    }
}

impl<'a> Iterator for Objects<'a> {
    type Item = Result<Object<&'a [u8]>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        match Object::new_checked(self.rest) {
            Ok(object) => {
                // `new_checked` has verified 4 <= length <= rest.len().
                let (this, rest) = self.rest.split_at(usize::from(object.length()));
                self.rest = rest;
                Some(Ok(Object::new_unchecked(this)))
            }
            Err(error) => {
                self.rest = &[];
                Some(Err(error))
            }
        }
    }
}

impl core::iter::FusedIterator for Objects<'_> {}

/// An object in owned form. Classes and C-Types not listed, and Integrated Services bodies not
/// in the canonical RFC 2210 form, are [`ObjectRepr::Unknown`] and written back byte for byte.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ObjectRepr {
    /// SESSION, IPv4 (class 1, C-Type 1).
    Session(Session),
    /// RSVP_HOP, IPv4 (class 3, C-Type 1): PHOP in Path, NHOP in Resv.
    RsvpHop(RsvpHop),
    /// TIME_VALUES (class 5, C-Type 1).
    TimeValues(TimeValues),
    /// ERROR_SPEC, IPv4 (class 6, C-Type 1).
    ErrorSpec(ErrorSpec),
    /// STYLE (class 8, C-Type 1).
    Style(Style),
    /// FLOWSPEC, Integrated Services (class 9, C-Type 2).
    Flowspec(Flowspec),
    /// FILTER_SPEC, IPv4 (class 10, C-Type 1).
    FilterSpec(FilterSpec),
    /// SENDER_TEMPLATE, IPv4 (class 11, C-Type 1): the layout of FILTER_SPEC.
    SenderTemplate(FilterSpec),
    /// SENDER_TSPEC, Integrated Services (class 12, C-Type 2): the sender's token bucket.
    SenderTspec(TokenBucket),
    /// ADSPEC, Integrated Services (class 13, C-Type 2).
    Adspec(Adspec),
    /// RESV_CONFIRM, IPv4 (class 15, C-Type 1).
    ResvConfirm(ResvConfirm),
    /// LABEL (class 16, C-Type 1, RFC 3209 §4.1).
    Label(Label),
    /// Any other object, kept as data.
    Unknown {
        /// Class-Num.
        class: u8,
        /// C-Type.
        ctype: u8,
        /// The body (a multiple of 4 bytes long, at most [`super::MAX_LEN`] − 12).
        body: Vec<u8>,
    },
}

impl ObjectRepr {
    /// The Class-Num written for this object.
    pub fn class_num(&self) -> ClassNum {
        match self {
            ObjectRepr::Session(_) => ClassNum::Session,
            ObjectRepr::RsvpHop(_) => ClassNum::RsvpHop,
            ObjectRepr::TimeValues(_) => ClassNum::TimeValues,
            ObjectRepr::ErrorSpec(_) => ClassNum::ErrorSpec,
            ObjectRepr::Style(_) => ClassNum::Style,
            ObjectRepr::Flowspec(_) => ClassNum::Flowspec,
            ObjectRepr::FilterSpec(_) => ClassNum::FilterSpec,
            ObjectRepr::SenderTemplate(_) => ClassNum::SenderTemplate,
            ObjectRepr::SenderTspec(_) => ClassNum::SenderTspec,
            ObjectRepr::Adspec(_) => ClassNum::Adspec,
            ObjectRepr::ResvConfirm(_) => ClassNum::ResvConfirm,
            ObjectRepr::Label(_) => ClassNum::Label,
            ObjectRepr::Unknown { class, .. } => ClassNum::from(*class),
        }
    }

    /// The C-Type written for this object.
    pub fn ctype(&self) -> u8 {
        match self {
            ObjectRepr::Flowspec(_) | ObjectRepr::SenderTspec(_) | ObjectRepr::Adspec(_) => {
                CTYPE_INTSERV
            }
            ObjectRepr::Unknown { ctype, .. } => *ctype,
            _ => CTYPE_IPV4,
        }
    }

    fn body_len(&self) -> usize {
        match self {
            ObjectRepr::Session(o) => o.body_len(),
            ObjectRepr::RsvpHop(o) => o.body_len(),
            ObjectRepr::TimeValues(o) => o.body_len(),
            ObjectRepr::ErrorSpec(o) => o.body_len(),
            ObjectRepr::Style(o) => o.body_len(),
            ObjectRepr::Flowspec(o) => o.body_len(),
            ObjectRepr::FilterSpec(o) | ObjectRepr::SenderTemplate(o) => o.body_len(),
            ObjectRepr::SenderTspec(o) => o.body_len(),
            ObjectRepr::Adspec(o) => o.body_len(),
            ObjectRepr::ResvConfirm(o) => o.body_len(),
            ObjectRepr::Label(o) => o.body_len(),
            ObjectRepr::Unknown { body, .. } => body.len(),
        }
    }

    /// Length of the emitted object, header included.
    pub fn buffer_len(&self) -> usize {
        OBJECT_HEADER_LEN + self.body_len()
    }

    /// Parses a checked object. Unknown classes and C-Types, and Integrated Services bodies not
    /// in canonical form, become [`ObjectRepr::Unknown`]; a known fixed-size layout with a body
    /// of the wrong size is [`RsvpError::ObjectSize`].
    pub fn parse<T: AsRef<[u8]>>(object: &Object<T>) -> Result<ObjectRepr> {
        object.check_len()?;
        let body = object.body();
        let ctype = object.ctype();
        let class = object.class_num();
        let exact = |expected: usize| RsvpError::ObjectSize {
            class: class.into(),
            ctype,
            length: body.len(),
            expected,
        };
        let parsed = match (class, ctype) {
            (ClassNum::Session, CTYPE_IPV4) => {
                let body = body.try_into().map_err(|_| exact(Session::LEN))?;
                Some(ObjectRepr::Session(Session::parse_body(body)))
            }
            (ClassNum::RsvpHop, CTYPE_IPV4) => {
                let body = body.try_into().map_err(|_| exact(RsvpHop::LEN))?;
                Some(ObjectRepr::RsvpHop(RsvpHop::parse_body(body)))
            }
            (ClassNum::TimeValues, CTYPE_IPV4) => {
                let body = body.try_into().map_err(|_| exact(TimeValues::LEN))?;
                Some(ObjectRepr::TimeValues(TimeValues::parse_body(body)))
            }
            (ClassNum::ErrorSpec, CTYPE_IPV4) => {
                let body = body.try_into().map_err(|_| exact(ErrorSpec::LEN))?;
                Some(ObjectRepr::ErrorSpec(ErrorSpec::parse_body(body)))
            }
            (ClassNum::Style, CTYPE_IPV4) => {
                let body = body.try_into().map_err(|_| exact(Style::LEN))?;
                Some(ObjectRepr::Style(Style::parse_body(body)))
            }
            (ClassNum::FilterSpec, CTYPE_IPV4) => {
                let body = body.try_into().map_err(|_| exact(FilterSpec::LEN))?;
                Some(ObjectRepr::FilterSpec(FilterSpec::parse_body(body)))
            }
            (ClassNum::SenderTemplate, CTYPE_IPV4) => {
                let body = body.try_into().map_err(|_| exact(FilterSpec::LEN))?;
                Some(ObjectRepr::SenderTemplate(FilterSpec::parse_body(body)))
            }
            (ClassNum::ResvConfirm, CTYPE_IPV4) => {
                let body = body.try_into().map_err(|_| exact(ResvConfirm::LEN))?;
                Some(ObjectRepr::ResvConfirm(ResvConfirm::parse_body(body)))
            }
            (ClassNum::Label, CTYPE_IPV4) => {
                let body = body.try_into().map_err(|_| exact(Label::LEN))?;
                Some(ObjectRepr::Label(Label::parse_body(body)))
            }
            (ClassNum::Flowspec, CTYPE_INTSERV) => {
                Flowspec::parse_intserv(body).map(ObjectRepr::Flowspec)
            }
            (ClassNum::SenderTspec, CTYPE_INTSERV) => {
                TokenBucket::parse_sender_tspec(body).map(ObjectRepr::SenderTspec)
            }
            (ClassNum::Adspec, CTYPE_INTSERV) => {
                Adspec::parse_intserv(body).map(ObjectRepr::Adspec)
            }
            _ => None,
        };
        Ok(parsed.unwrap_or_else(|| ObjectRepr::Unknown {
            class: class.into(),
            ctype,
            body: body.to_vec(),
        }))
    }

    /// Writes the object into the first [`buffer_len`](Self::buffer_len) bytes of `object`.
    /// [`RsvpError::Truncated`] if the buffer is shorter, [`RsvpError::Unencodable`] if an
    /// unknown body is not a multiple of 4 bytes or the object is longer than a message can be.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, object: &mut Object<T>) -> Result<()> {
        let len = self.buffer_len();
        if !len.is_multiple_of(4) || len > super::MAX_LEN - super::HEADER_LEN {
            return Err(RsvpError::Unencodable);
        }
        if object.as_ref().len() < len {
            return Err(RsvpError::Truncated);
        }
        // `len <= MAX_LEN` was checked above.
        object.set_length(len as u16);
        object.set_class_num(self.class_num());
        object.set_ctype(self.ctype());
        let body = object.body_mut();
        match self {
            ObjectRepr::Unknown { body: data, .. } => body.copy_from_slice(data),
            _ => {
                let mut w = BodyWriter::new(body);
                match self {
                    ObjectRepr::Session(o) => o.emit_body(&mut w),
                    ObjectRepr::RsvpHop(o) => o.emit_body(&mut w),
                    ObjectRepr::TimeValues(o) => o.emit_body(&mut w),
                    ObjectRepr::ErrorSpec(o) => o.emit_body(&mut w),
                    ObjectRepr::Style(o) => o.emit_body(&mut w),
                    ObjectRepr::Flowspec(o) => o.emit_body(&mut w),
                    ObjectRepr::FilterSpec(o) | ObjectRepr::SenderTemplate(o) => {
                        o.emit_body(&mut w)
                    }
                    ObjectRepr::SenderTspec(o) => o.emit_body(&mut w),
                    ObjectRepr::Adspec(o) => o.emit_body(&mut w),
                    ObjectRepr::ResvConfirm(o) => o.emit_body(&mut w),
                    ObjectRepr::Label(o) => o.emit_body(&mut w),
                    ObjectRepr::Unknown { .. } => {}
                }
            }
        }
        Ok(())
    }
}
