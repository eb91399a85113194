//! The tables of a topology file read straight from the events of `toml_parser` (the lexer and
//! push parser under toml 1), without first building toml's generic document tree (`DeTable`,
//! a `BTreeMap` per table) and walking it again with serde. On a 1,000-flow network file that
//! tree and the walk over it were most of the time `rtlan analyze` spent reading
//! (docs/benchmarks.md, "Reading a network file").
//!
//! This is not a TOML parser of our own: `toml_parser` lexes, parses and decodes (escapes,
//! integer forms, whitespace and comment rules of TOML 1.1,
//! <https://toml.io/en/v1.1.0>); this module only maps its events onto [`RawFile`]. It takes
//! the shape every topology file we write has — top-level `[[host]]`, `[[switch]]`,
//! `[[router]]`, `[[link]]`, `[[flow]]` array tables, at most one `[lab]` table, plain
//! `key = value` lines whose values are strings, integers, booleans or arrays of strings — and
//! steps aside ([`read`] returns `None`) at anything else: any syntax error, a top-level key or
//! a table header outside that list (including the `extras` of other readers), dotted keys,
//! inline tables, nested arrays, a duplicate, unknown or missing key, a value of the wrong type
//! or out of its field's range. The general reader (`DeTable` and serde, in `parse.rs`) then
//! reads the text, so every error message and every rarer but valid spelling is produced in one
//! place, unchanged. What this module returns is exactly what the general reader returns for
//! the same text, spans included: the unit tests and a property test compare the two, and
//! debug builds (the fuzz targets among them) assert it on every read.

use std::borrow::Cow;
use std::ops::Range;

use toml::Spanned;
use toml_parser::decoder::{Encoding, ScalarKind};
use toml_parser::parser::{EventReceiver, RecursionGuard, ValidateWhitespace};
use toml_parser::{ErrorSink, ParseError, Raw, Source, Span};

use crate::flows::RawFlow;
use crate::parse::{RawFile, RawHost, RawLab, RawLink, RawRouter, RawSwitch};

/// The nesting limit toml 1 gives `toml_parser` (its `LIMIT`); any nesting makes this reader
/// step aside anyway, the guard only keeps the parser's behaviour identical.
const RECURSION_LIMIT: u32 = 80;

/// Reads `text` into [`RawFile`] if it has the plain shape described in the module doc, `None`
/// (read it with the general reader) otherwise.
pub(crate) fn read(text: &str) -> Option<RawFile> {
    let source = Source::new(text);
    // One token per few bytes; sized once here rather than grown while lexing (the lexer's own
    // `into_vec` guesses 2 tokens per 7 bytes, below what `key = "value"` lines need).
    let mut tokens = Vec::with_capacity(text.len() / 2 + 16);
    tokens.extend(source.lex());
    let mut reader = Reader::new(text);
    let mut errors: Option<ParseError> = None;
    {
        let mut whitespace = ValidateWhitespace::new(&mut reader, source);
        let mut guarded = RecursionGuard::new(&mut whitespace, RECURSION_LIMIT);
        toml_parser::parser::parse_document(&tokens, &mut guarded, &mut errors);
    }
    if errors.is_some() {
        return None;
    }
    reader.finish()
}

/// A value as written, of the kinds the raw tables take.
enum Value<'i> {
    Str(Cow<'i, str>),
    Int(i128),
    Bool(bool),
    Strs(Vec<Spanned<String>>),
}

/// One `key = value` line of the table being read.
struct Field<'i> {
    key: Cow<'i, str>,
    value: Value<'i>,
    /// The value's span, as toml gives it to `Spanned` (an array from `[` to `]`).
    span: Range<usize>,
}

/// The table whose `key = value` lines are being read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Table {
    /// Before the first header: a top-level key, which this reader does not take.
    Root,
    Lab,
    Host,
    Switch,
    Router,
    Link,
    Flow,
}

/// Where in the grammar the next event falls.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// A key, a header, or white space and comments.
    Key,
    /// Inside `[…]` or `[[…]]`.
    Header { array: bool },
    /// After a key: `=`.
    KeyValSep,
    /// After `=`: a scalar or `[`.
    Value,
    /// Inside an array of strings.
    Array,
}

/// The [`EventReceiver`]: builds [`RawFile`] table by table, or gives up (`ok = false`).
struct Reader<'i> {
    text: &'i str,
    ok: bool,
    expect: Expect,
    table: Table,
    /// The header's one key, once read.
    header: Option<Cow<'i, str>>,
    /// The key of the line being read.
    key: Option<Cow<'i, str>>,
    /// The open array: where its `[` is, and its strings so far.
    array: Option<(usize, Vec<Spanned<String>>)>,
    /// The lines of the current table, emptied into a raw table at the next header.
    fields: Vec<Field<'i>>,
    out: RawFile,
}

impl<'i> Reader<'i> {
    fn new(text: &'i str) -> Self {
        Reader {
            text,
            ok: true,
            expect: Expect::Key,
            table: Table::Root,
            header: None,
            key: None,
            array: None,
            fields: Vec::with_capacity(16),
            out: RawFile::default(),
        }
    }

    fn give_up(&mut self) {
        self.ok = false;
    }

    /// The raw text of `span` with its encoding, for `toml_parser`'s decoders.
    fn raw(&self, span: Span, encoding: Option<Encoding>) -> Option<Raw<'i>> {
        let text = self.text.get(span.start()..span.end())?;
        Some(Raw::new_unchecked(text, encoding, span))
    }

    /// Empties [`Reader::fields`] into the current table's raw form.
    fn close_table(&mut self) {
        let fields = std::mem::take(&mut self.fields);
        let done = match self.table {
            Table::Root => fields.is_empty(),
            Table::Lab => lab(fields.into_iter())
                .map(|l| self.out.lab = Some(l))
                .is_some(),
            Table::Host => host(fields.into_iter())
                .map(|h| self.out.host.push(h))
                .is_some(),
            Table::Switch => switch(fields.into_iter())
                .map(|s| self.out.switch.push(s))
                .is_some(),
            Table::Router => router(fields.into_iter())
                .map(|r| self.out.router.push(r))
                .is_some(),
            Table::Link => link(fields.into_iter())
                .map(|l| self.out.link.push(l))
                .is_some(),
            Table::Flow => flow(fields.into_iter())
                .map(|f| self.out.flow.push(f))
                .is_some(),
        };
        if !done {
            self.give_up();
        }
    }

    fn finish(mut self) -> Option<RawFile> {
        if self.expect != Expect::Key {
            return None;
        }
        self.close_table();
        self.ok.then_some(self.out)
    }

    fn push_field(&mut self, value: Value<'i>, span: Range<usize>) {
        match self.key.take() {
            Some(key) => self.fields.push(Field { key, value, span }),
            None => self.give_up(),
        }
        self.expect = Expect::Key;
    }
}

impl EventReceiver for Reader<'_> {
    fn std_table_open(&mut self, _span: Span, _error: &mut dyn ErrorSink) {
        self.table_open(false);
    }
    fn array_table_open(&mut self, _span: Span, _error: &mut dyn ErrorSink) {
        self.table_open(true);
    }
    fn std_table_close(&mut self, _span: Span, _error: &mut dyn ErrorSink) {
        self.table_close(false);
    }
    fn array_table_close(&mut self, _span: Span, _error: &mut dyn ErrorSink) {
        self.table_close(true);
    }
    fn inline_table_open(&mut self, _span: Span, _error: &mut dyn ErrorSink) -> bool {
        self.give_up();
        true
    }
    fn array_open(&mut self, span: Span, _error: &mut dyn ErrorSink) -> bool {
        if self.expect == Expect::Value {
            self.expect = Expect::Array;
            self.array = Some((span.start(), Vec::new()));
        } else {
            self.give_up();
        }
        true
    }
    fn array_close(&mut self, span: Span, _error: &mut dyn ErrorSink) {
        match (self.expect, self.array.take()) {
            (Expect::Array, Some((start, items))) => {
                self.push_field(Value::Strs(items), start..span.end());
            }
            _ => self.give_up(),
        }
    }
    fn simple_key(&mut self, span: Span, encoding: Option<Encoding>, error: &mut dyn ErrorSink) {
        let Some(raw) = self.raw(span, encoding) else {
            return self.give_up();
        };
        let mut key = Cow::Borrowed("");
        raw.decode_key(&mut key, error);
        match self.expect {
            Expect::Header { .. } if self.header.is_none() => self.header = Some(key),
            Expect::Key => {
                self.key = Some(key);
                self.expect = Expect::KeyValSep;
            }
            _ => self.give_up(),
        }
    }
    fn key_sep(&mut self, _span: Span, _error: &mut dyn ErrorSink) {
        // A dotted key or header.
        self.give_up();
    }
    fn key_val_sep(&mut self, _span: Span, _error: &mut dyn ErrorSink) {
        if self.expect == Expect::KeyValSep {
            self.expect = Expect::Value;
        } else {
            self.give_up();
        }
    }
    fn scalar(&mut self, span: Span, encoding: Option<Encoding>, error: &mut dyn ErrorSink) {
        let Some(raw) = self.raw(span, encoding) else {
            return self.give_up();
        };
        let mut decoded = Cow::Borrowed("");
        let kind = raw.decode_scalar(&mut decoded, error);
        let range = span.start()..span.end();
        match (self.expect, kind) {
            (Expect::Value, ScalarKind::String) => self.push_field(Value::Str(decoded), range),
            (Expect::Value, ScalarKind::Boolean(b)) => self.push_field(Value::Bool(b), range),
            (Expect::Value, ScalarKind::Integer(radix)) => {
                // toml's deserializer visits an i64, else a u64 (else wider kinds, left to it).
                let radix = radix.value();
                let int = i64::from_str_radix(&decoded, radix)
                    .map(i128::from)
                    .or_else(|_| u64::from_str_radix(&decoded, radix).map(i128::from));
                match int {
                    Ok(i) => self.push_field(Value::Int(i), range),
                    Err(_) => self.give_up(),
                }
            }
            (Expect::Array, ScalarKind::String) => match &mut self.array {
                Some((_, items)) => items.push(Spanned::new(range, decoded.into_owned())),
                None => self.give_up(),
            },
            _ => self.give_up(),
        }
    }
    fn error(&mut self, _span: Span, _error: &mut dyn ErrorSink) {
        self.give_up();
    }
}

impl Reader<'_> {
    fn table_open(&mut self, array: bool) {
        if self.expect != Expect::Key {
            return self.give_up();
        }
        self.close_table();
        self.expect = Expect::Header { array };
        self.header = None;
    }

    fn table_close(&mut self, array: bool) {
        let header = self.header.take();
        if self.expect != (Expect::Header { array }) {
            return self.give_up();
        }
        self.expect = Expect::Key;
        self.table = match (array, header.as_deref()) {
            (false, Some("lab")) if self.out.lab.is_none() => Table::Lab,
            (true, Some("host")) => Table::Host,
            (true, Some("switch")) => Table::Switch,
            (true, Some("router")) => Table::Router,
            (true, Some("link")) => Table::Link,
            (true, Some("flow")) => Table::Flow,
            _ => {
                // Another table, or `[lab]` twice (a duplicate the general reader reports).
                self.table = Table::Root;
                return self.give_up();
            }
        };
        if self.table == Table::Lab {
            // Taken now, so that a second `[lab]` is seen as one.
            self.out.lab = Some(RawLab {
                offloads: None,
                ipv6: None,
            });
        }
    }
}

/// Sets a field read once: `None` (give up) if it was already set — a duplicate key.
fn set<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    match slot {
        Some(_) => None,
        None => {
            *slot = Some(value);
            Some(())
        }
    }
}

/// A string value.
fn string(f: Field<'_>) -> Option<Spanned<String>> {
    match f.value {
        Value::Str(s) => Some(Spanned::new(f.span, s.into_owned())),
        _ => None,
    }
}

/// An array of strings.
fn strings(f: Field<'_>) -> Option<Spanned<Vec<Spanned<String>>>> {
    match f.value {
        Value::Strs(v) => Some(Spanned::new(f.span, v)),
        _ => None,
    }
}

/// A boolean.
fn boolean(f: &Field<'_>) -> Option<bool> {
    match f.value {
        Value::Bool(b) => Some(b),
        _ => None,
    }
}

/// An integer in the range of `T`.
fn integer<T: TryFrom<i128>>(f: &Field<'_>) -> Option<Spanned<T>> {
    match f.value {
        Value::Int(i) => Some(Spanned::new(f.span.clone(), T::try_from(i).ok()?)),
        _ => None,
    }
}

fn lab<'i>(fields: impl Iterator<Item = Field<'i>>) -> Option<RawLab> {
    let (mut offloads, mut ipv6) = (None, None);
    for f in fields {
        match f.key.as_ref() {
            "offloads" => set(&mut offloads, boolean(&f)?)?,
            "ipv6" => set(&mut ipv6, boolean(&f)?)?,
            _ => return None,
        }
    }
    Some(RawLab { offloads, ipv6 })
}

fn host<'i>(fields: impl Iterator<Item = Field<'i>>) -> Option<RawHost> {
    let (mut name, mut ip, mut host_delay) = (None, None, None);
    for f in fields {
        match f.key.as_ref() {
            "name" => set(&mut name, string(f)?)?,
            "ip" => set(&mut ip, string(f)?)?,
            "host_delay" => set(&mut host_delay, string(f)?)?,
            _ => return None,
        }
    }
    Some(RawHost {
        name: name?,
        ip,
        host_delay,
    })
}

fn router<'i>(fields: impl Iterator<Item = Field<'i>>) -> Option<RawRouter> {
    let (mut name, mut kind, mut rsvp, mut ospf) = (None, None, None, None);
    for f in fields {
        match f.key.as_ref() {
            "name" => set(&mut name, string(f)?)?,
            "kind" => set(&mut kind, string(f)?)?,
            "rsvp" => set(&mut rsvp, Spanned::new(f.span.clone(), boolean(&f)?))?,
            "ospf" => set(&mut ospf, string(f)?)?,
            _ => return None,
        }
    }
    Some(RawRouter {
        name: name?,
        kind,
        rsvp,
        ospf,
    })
}

fn switch<'i>(fields: impl Iterator<Item = Field<'i>>) -> Option<RawSwitch> {
    let mut name = None;
    let mut s = RawSwitch {
        name: Spanned::new(0..0, String::new()),
        kind: None,
        unknown_unicast: None,
        mgmt_ip: None,
        cycle_time: None,
        nrt_queue_bytes: None,
        cpu: None,
        scheduler: None,
        lateness_budget: None,
        t_mux: None,
        buffer: None,
        stp: None,
        auth: None,
        rate: None,
        propagation: None,
        seed: None,
        trt: None,
    };
    for f in fields {
        let spanned_bool = |f: &Field<'_>| Some(Spanned::new(f.span.clone(), boolean(f)?));
        match f.key.as_ref() {
            "name" => set(&mut name, string(f)?)?,
            "kind" => set(&mut s.kind, string(f)?)?,
            "unknown_unicast" => set(&mut s.unknown_unicast, string(f)?)?,
            "mgmt_ip" => set(&mut s.mgmt_ip, string(f)?)?,
            "cycle_time" => set(&mut s.cycle_time, string(f)?)?,
            "nrt_queue_bytes" => set(&mut s.nrt_queue_bytes, integer(&f)?)?,
            "cpu" => set(&mut s.cpu, integer(&f)?)?,
            "scheduler" => set(&mut s.scheduler, string(f)?)?,
            "lateness_budget" => set(&mut s.lateness_budget, string(f)?)?,
            "t_mux" => set(&mut s.t_mux, string(f)?)?,
            "buffer" => set(&mut s.buffer, string(f)?)?,
            "stp" => set(&mut s.stp, spanned_bool(&f)?)?,
            "auth" => set(&mut s.auth, spanned_bool(&f)?)?,
            "rate" => set(&mut s.rate, string(f)?)?,
            "propagation" => set(&mut s.propagation, string(f)?)?,
            "seed" => set(&mut s.seed, integer(&f)?)?,
            "trt" => set(&mut s.trt, string(f)?)?,
            _ => return None,
        }
    }
    s.name = name?;
    Some(s)
}

fn link<'i>(fields: impl Iterator<Item = Field<'i>>) -> Option<RawLink> {
    let (mut ends, mut rate, mut effective_rate, mut delay) = (None, None, None, None);
    for f in fields {
        match f.key.as_ref() {
            "ends" => set(&mut ends, strings(f)?)?,
            "rate" => set(&mut rate, string(f)?)?,
            "effective_rate" => set(&mut effective_rate, string(f)?)?,
            "delay" => set(&mut delay, string(f)?)?,
            _ => return None,
        }
    }
    Some(RawLink {
        ends: ends?,
        rate,
        effective_rate,
        delay,
    })
}

/// A `[[flow]]` table.
fn flow<'i>(fields: impl Iterator<Item = Field<'i>>) -> Option<RawFlow> {
    let (mut name, mut path, mut rate, mut max_packet) = (None, None, None, None);
    let (mut shaping_interval, mut burst, mut host_delay, mut deadline) = (None, None, None, None);
    for f in fields {
        match f.key.as_ref() {
            "name" => set(&mut name, string(f)?)?,
            "path" => set(&mut path, strings(f)?)?,
            "rate" => set(&mut rate, string(f)?)?,
            "max_packet" => set(&mut max_packet, integer(&f)?)?,
            "shaping_interval" => set(&mut shaping_interval, string(f)?)?,
            "burst" => set(&mut burst, string(f)?)?,
            "host_delay" => set(&mut host_delay, string(f)?)?,
            "deadline" => set(&mut deadline, string(f)?)?,
            _ => return None,
        }
    }
    Some(RawFlow {
        name: name?,
        path: path?,
        rate: rate?,
        max_packet: max_packet?,
        shaping_interval,
        burst,
        host_delay,
        deadline,
    })
}
