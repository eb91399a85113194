//! Saves an interface's egress traffic-control tree before the host daemon replaces it, and
//! puts it back exactly when the daemon is done (issue 15: "kernel shaping keeps the host's other
//! traffic on the qdisc it had, or restores it exactly").
//!
//! The daemon's HTB tree ([`super::tc`]) has to be the interface's root qdisc: EtheReal §2.2's
//! separation of real-time from other traffic needs a priority class ahead of everything the host
//! sends. Whatever was there — the kernel's default, an operator's `fq_codel`, a `tbf` that
//! emulates a link, a whole HTB tree with filters — is read over rtnetlink first: every qdisc,
//! class and filter of the egress tree (the ingress/clsact qdisc is never touched). When the
//! daemon stops, its tree is deleted and the saved objects are created again, parents first, with
//! their handles, parents and options byte for byte. A root the kernel made itself (handle 0:)
//! needs nothing: deleting ours brings the default back.
//!
//! The snapshot is also written to a file next to the daemon's socket, so a daemon that was
//! killed still restores, at its next start, the tree that was there before the first one.
//!
//! Written on raw rtnetlink messages rather than the typed `netlink-packet-route` messages the
//! rest of the shell uses: replaying must carry every qdisc's options exactly as the kernel dumped
//! them, and the typed parser reads `TCA_OPTIONS` as nested attributes, which it is not for
//! qdiscs whose options are a bare C struct (`pfifo`, `bfifo`, `prio`). The messages are only
//! walked (header, top-level attributes), bounds-checked; their payloads are never interpreted,
//! except the size table: the kernel dumps only its parameters (`TCA_STAB_BASE`), so the table
//! itself is computed again exactly as iproute2's `tc_calc_size_table` computed it.

use std::collections::HashSet;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

/// `RTM_NEWQDISC` .. of `<linux/rtnetlink.h>`.
const RTM_NEWQDISC: u16 = 36;
const RTM_DELQDISC: u16 = 37;
const RTM_GETQDISC: u16 = 38;
const RTM_NEWTCLASS: u16 = 40;
const RTM_GETTCLASS: u16 = 42;
const RTM_NEWTFILTER: u16 = 44;
const RTM_GETTFILTER: u16 = 46;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_ACK: u16 = 0x4;
const NLM_F_DUMP: u16 = 0x300;
const NLM_F_REPLACE: u16 = 0x100;
const NLM_F_EXCL: u16 = 0x200;
const NLM_F_CREATE: u16 = 0x400;
/// `TC_H_ROOT` and `TC_H_INGRESS` (= `TC_H_CLSACT`) of `<linux/pkt_sched.h>`.
const TC_H_ROOT: u32 = 0xffff_ffff;
const TC_H_INGRESS: u32 = 0xffff_fff1;
/// Top-level attributes of a `tcmsg`.
const TCA_KIND: u16 = 1;
const TCA_OPTIONS: u16 = 2;
const TCA_STAB: u16 = 8;
/// `TCA_HTB_INIT`: an HTB qdisc's `struct tc_htb_glob`.
const TCA_HTB_INIT: u16 = 2;
/// The attributes a dump adds that a request must not carry back: statistics, offload state,
/// padding (`TCA_STATS`, `TCA_XSTATS`, `TCA_FCNT`, `TCA_STATS2`, `TCA_PAD`,
/// `TCA_DUMP_INVISIBLE`, `TCA_HW_OFFLOAD`).
const DUMP_ONLY: [u16; 7] = [3, 4, 6, 7, 9, 10, 12];
const TCA_STAB_BASE: u16 = 1;
const TCA_STAB_DATA: u16 = 2;
const NLMSG_HDR: usize = 16;
const TCMSG: usize = 20;

/// What a saved tree could not do.
#[derive(Debug, thiserror::Error)]
pub(super) enum SaveError {
    /// A netlink socket call failed.
    #[error("netlink: {0}")]
    Io(#[from] io::Error),
    /// The kernel refused a request.
    #[error("{what}: {source}")]
    Refused {
        /// The object being created or deleted.
        what: String,
        /// The kernel's errno.
        source: io::Error,
    },
    /// A message from the kernel did not parse.
    #[error("malformed netlink message: {0}")]
    Malformed(&'static str),
    /// The interface does not exist.
    #[error("no such interface: {0}")]
    NoInterface(String),
    /// Some objects could not be created again.
    #[error("{failed} of {total} saved traffic-control objects not restored (first: {first})")]
    Partial {
        /// How many failed.
        failed: usize,
        /// How many there were.
        total: usize,
        /// The first failure.
        first: String,
    },
}

/// One saved qdisc, class or filter: its `tcmsg` and attributes, ready to be sent again.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Object {
    /// `qdisc`, `class` or `filter`.
    kind: String,
    /// The `tcmsg` header and attributes, dump-only attributes removed.
    body: Vec<u8>,
}

impl Object {
    fn field(&self, at: usize) -> u32 {
        self.body
            .get(at..at + 4)
            .map_or(0, |b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn handle(&self) -> u32 {
        self.field(8)
    }
    fn parent(&self) -> u32 {
        self.field(12)
    }
}

/// An interface's egress tree as it was before the daemon replaced it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(super) struct TcSnapshot {
    /// The interface's name (the index may change across reboots; a snapshot file in /run does
    /// not outlive one).
    ifname: String,
    /// Whether the root was the kernel's own (handle 0:): deleting ours brings it back.
    kernel_default: bool,
    /// Qdiscs and classes in dump order, then filters.
    objects: Vec<Object>,
}

impl TcSnapshot {
    /// Reads `ifname`'s egress tree from the kernel.
    pub(super) fn take(ifname: &str) -> Result<TcSnapshot, SaveError> {
        let ifindex = ifindex(ifname)?;
        let nl = Netlink::open()?;
        let qdiscs: Vec<Object> = nl
            .dump(RTM_GETQDISC, ifindex, 0)?
            .into_iter()
            .filter(|b| tcm_ifindex(b) == ifindex && tcm_field(b, 12) != TC_H_INGRESS)
            .map(|body| Object {
                kind: "qdisc".into(),
                body,
            })
            .collect();
        let root = qdiscs.iter().find(|q| q.parent() == TC_H_ROOT);
        let kernel_default = root.is_none_or(|r| r.handle() == 0);
        let mut objects = Vec::new();
        if !kernel_default {
            let classes: Vec<Object> = nl
                .dump(RTM_GETTCLASS, ifindex, 0)?
                .into_iter()
                .filter(|b| tcm_ifindex(b) == ifindex)
                .map(|body| Object {
                    kind: "class".into(),
                    body,
                })
                .collect();
            // Filters hang off a qdisc (parent = its handle) or a class (parent = its id).
            let mut attach: Vec<u32> = qdiscs
                .iter()
                .map(Object::handle)
                .filter(|&h| h != 0)
                .collect();
            attach.extend(classes.iter().map(Object::handle));
            let mut filters = Vec::new();
            for parent in attach {
                for body in nl.dump(RTM_GETTFILTER, ifindex, parent)? {
                    if tcm_ifindex(&body) == ifindex {
                        filters.push(Object {
                            kind: "filter".into(),
                            body,
                        });
                    }
                }
            }
            objects.extend(qdiscs);
            objects.extend(classes);
            objects.extend(filters);
        }
        Ok(TcSnapshot {
            ifname: ifname.to_string(),
            kernel_default,
            objects,
        })
    }

    /// Whether `ifname`'s root is the kernel's own (nothing to create again).
    pub(super) fn kernel_default(&self) -> bool {
        self.kernel_default
    }

    /// Deletes the interface's root qdisc (the daemon's tree) and creates the saved tree again,
    /// parents before children, filters last. Every object is attempted; the first failure is
    /// reported with how many failed.
    pub(super) fn restore(&self) -> Result<(), SaveError> {
        let ifindex = ifindex(&self.ifname)?;
        let nl = Netlink::open()?;
        let mut del = tcmsg(ifindex, 0, TC_H_ROOT);
        match nl.request(RTM_DELQDISC, NLM_F_REQUEST | NLM_F_ACK, &del) {
            // ENOENT/EINVAL: there is no root of ours to delete (a default root cannot be).
            Ok(()) | Err(SaveError::Refused { .. }) => {}
            Err(e) => return Err(e),
        }
        del.clear();
        let total = self.objects.len();
        let mut failures: Vec<String> = Vec::new();
        // Created ids: qdisc handles (major:0) and class ids; the root's parent always exists.
        let mut created: HashSet<u32> = HashSet::from([TC_H_ROOT]);
        let mut pending: Vec<&Object> =
            self.objects.iter().filter(|o| o.kind != "filter").collect();
        while !pending.is_empty() {
            let ready: Vec<&Object> = pending
                .iter()
                .copied()
                .filter(|o| {
                    // A class needs its qdisc (major:0) and, below the top, its parent class
                    // (a top class's parent is TC_H_ROOT); a qdisc needs its parent class.
                    let parent = created.contains(&o.parent());
                    if o.kind == "class" {
                        created.contains(&(o.handle() & 0xffff_0000))
                            && (parent || o.parent() == TC_H_ROOT)
                    } else {
                        parent
                    }
                })
                .collect();
            if ready.is_empty() {
                failures.extend(pending.iter().map(|o| {
                    format!(
                        "{} {:x}: parent {:x} missing",
                        o.kind,
                        o.handle(),
                        o.parent()
                    )
                }));
                break;
            }
            pending.retain(|o| !ready.contains(o));
            for o in ready {
                let (kind, flags) = if o.kind == "qdisc" {
                    (RTM_NEWQDISC, NLM_F_CREATE | NLM_F_REPLACE)
                } else {
                    (RTM_NEWTCLASS, NLM_F_CREATE)
                };
                match nl.request(
                    kind,
                    NLM_F_REQUEST | NLM_F_ACK | flags,
                    &for_request(&o.body),
                ) {
                    Ok(()) => {
                        created.insert(o.handle());
                    }
                    // A class its qdisc makes itself (tbf's and other classless-with-a-child
                    // qdiscs' `:1`) cannot be created: it came back with its qdisc.
                    Err(SaveError::Refused { source, .. })
                        if o.kind == "class" && source.raw_os_error() == Some(libc::EOPNOTSUPP) =>
                    {
                        created.insert(o.handle());
                    }
                    Err(e) => failures.push(format!("{} {:x}: {e}", o.kind, o.handle())),
                }
            }
        }
        for o in self.objects.iter().filter(|o| o.kind == "filter") {
            let flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;
            match nl.request(RTM_NEWTFILTER, flags, &for_request(&o.body)) {
                Ok(()) => {}
                // A u32 filter's hash table (and its root) come with the first filter: the dump
                // lists them as filters of their own.
                Err(SaveError::Refused { source, .. })
                    if source.raw_os_error() == Some(libc::EEXIST) => {}
                Err(e) => failures.push(format!("filter {:x}: {e}", o.handle())),
            }
        }
        match failures.first() {
            None => Ok(()),
            Some(first) => Err(SaveError::Partial {
                failed: failures.len(),
                total,
                first: first.clone(),
            }),
        }
    }

    /// Where the snapshot of `ifname` is kept for a daemon whose socket is `socket`: beside
    /// it, named after it (`rtcd.sock` → `rtcd.sock.eth0.tc.json`), so that daemons in other
    /// namespaces whose interfaces share a name never take each other's snapshot.
    pub(super) fn file_for(socket: &Path, ifname: &str) -> PathBuf {
        let stem = socket
            .file_name()
            .map_or_else(|| "rtcd".into(), |n| n.to_string_lossy());
        socket
            .parent()
            .unwrap_or(Path::new("."))
            .join(format!("{stem}.{ifname}.tc.json"))
    }

    /// Writes the snapshot to `path` (atomically: a temporary file renamed over it).
    pub(super) fn save(&self, path: &Path) -> io::Result<()> {
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, serde_json::to_vec(self).map_err(io::Error::other)?)?;
        std::fs::rename(&tmp, path)
    }

    /// Reads a snapshot [`TcSnapshot::save`] wrote for `ifname`; `None` if there is none or it
    /// is for another interface. A file that does not parse is an error (kept for the operator).
    pub(super) fn load(path: &Path, ifname: &str) -> io::Result<Option<TcSnapshot>> {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let snap: TcSnapshot = serde_json::from_slice(&bytes)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        Ok((snap.ifname == ifname).then_some(snap))
    }
}

fn tcm_field(body: &[u8], at: usize) -> u32 {
    body.get(at..at + 4)
        .map_or(0, |b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
}

fn tcm_ifindex(body: &[u8]) -> i32 {
    tcm_field(body, 4) as i32
}

/// A `tcmsg` header for `ifindex` with `handle` and `parent`.
fn tcmsg(ifindex: i32, handle: u32, parent: u32) -> Vec<u8> {
    let mut m = vec![0u8; TCMSG];
    m[4..8].copy_from_slice(&ifindex.to_ne_bytes());
    m[8..12].copy_from_slice(&handle.to_ne_bytes());
    m[12..16].copy_from_slice(&parent.to_ne_bytes());
    m
}

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// The top-level attributes of a `tcmsg` body as `(type, whole attribute bytes)`.
fn attributes(body: &[u8]) -> Result<Vec<(u16, &[u8])>, SaveError> {
    let mut out = Vec::new();
    let mut at = TCMSG;
    if body.len() < TCMSG {
        return Err(SaveError::Malformed("short tcmsg"));
    }
    while at + 4 <= body.len() {
        let len = usize::from(u16::from_ne_bytes([body[at], body[at + 1]]));
        let kind = u16::from_ne_bytes([body[at + 2], body[at + 3]]) & 0x3fff;
        if len < 4 || at + len > body.len() {
            return Err(SaveError::Malformed("attribute length"));
        }
        out.push((kind, &body[at..at + len]));
        at += align4(len);
    }
    Ok(out)
}

/// `body` without the attributes only a dump carries.
fn strip_dump_only(body: &[u8]) -> Result<Vec<u8>, SaveError> {
    let mut out = body[..TCMSG.min(body.len())].to_vec();
    for (kind, attr) in attributes(body)? {
        if !DUMP_ONLY.contains(&kind) {
            out.extend_from_slice(attr);
            out.resize(align4(out.len()), 0);
        }
    }
    Ok(out)
}

/// `body` with its size table's data computed again from its parameters (the kernel dumps only
/// `TCA_STAB_BASE`); unchanged if it has no size table or one without data.
fn with_size_table(body: &[u8]) -> Vec<u8> {
    let Ok(attrs) = attributes(body) else {
        return body.to_vec();
    };
    let mut out = body[..TCMSG].to_vec();
    for (kind, attr) in attrs {
        if kind == TCA_STAB {
            if let Some(stab) = rebuild_stab(&attr[4..]) {
                out.extend_from_slice(&stab);
                out.resize(align4(out.len()), 0);
                continue;
            }
        }
        out.extend_from_slice(attr);
        out.resize(align4(out.len()), 0);
    }
    out
}

/// A kind (NUL-terminated), one of its option attributes, and how to fix the dumped value.
type DumpFix = (&'static [u8], u16, fn(u32) -> u32);

/// Options a dump reports in a form the same object's creation refuses, by kind: `(kind,
/// option attribute, fix)`.
/// - `htb_dump` reports the whole `HTB_VER` (0x30011) in `TCA_HTB_INIT`; `htb_init` accepts
///   only its major part (3).
/// - Classifiers report their hardware state (`TCA_CLS_FLAGS_IN_HW` 4, `_NOT_IN_HW` 8) in their
///   flags; `tc_flags_valid` refuses any flag but `SKIP_HW`, `SKIP_SW` and `VERBOSE`
///   (`TCA_U32_FLAGS` 11, `TCA_FLOWER_FLAGS` 22, `TCA_MATCHALL_FLAGS` 3).
const DUMP_FIXES: [DumpFix; 4] = [
    (
        b"htb\0",
        TCA_HTB_INIT,
        |v| if v > 0xffff { v >> 16 } else { v },
    ),
    (b"u32\0", 11, |v| v & !0xc),
    (b"flower\0", 22, |v| v & !0xc),
    (b"matchall\0", 3, |v| v & !0xc),
];

/// `body` as the kernel accepts it back: its size table rebuilt ([`with_size_table`]) and the
/// options a dump reports differently fixed ([`DUMP_FIXES`]).
fn for_request(body: &[u8]) -> Vec<u8> {
    let mut out = with_size_table(body);
    let Ok(attrs) = attributes(&out) else {
        return out;
    };
    let kind = attrs
        .iter()
        .find(|(k, _)| *k == TCA_KIND)
        .map(|(_, a)| a.get(4..).unwrap_or_default().to_vec());
    let options = attrs
        .iter()
        .find(|(k, _)| *k == TCA_OPTIONS)
        .map(|(_, a)| a.as_ptr() as usize - out.as_ptr() as usize);
    let (Some(kind), Some(start)) = (kind, options) else {
        return out;
    };
    let fixes: Vec<_> = DUMP_FIXES
        .iter()
        .filter(|(k, _, _)| kind.starts_with(k))
        .collect();
    if fixes.is_empty() {
        return out;
    }
    let len = usize::from(u16::from_ne_bytes([out[start], out[start + 1]]));
    let mut at = start + 4;
    while at + 4 <= start + len {
        let alen = usize::from(u16::from_ne_bytes([out[at], out[at + 1]]));
        let akind = u16::from_ne_bytes([out[at + 2], out[at + 3]]) & 0x3fff;
        if alen < 4 || at + alen > start + len {
            break;
        }
        for (_, option, fix) in &fixes {
            if akind == *option && alen >= 8 {
                let v = u32::from_ne_bytes([out[at + 4], out[at + 5], out[at + 6], out[at + 7]]);
                out[at + 4..at + 8].copy_from_slice(&fix(v).to_ne_bytes());
            }
        }
        at += align4(alen);
    }
    out
}

/// `struct tc_sizespec` (24 bytes) as the kernel dumped it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SizeSpec {
    cell_log: u8,
    size_log: u8,
    mpu: u32,
    linklayer: u32,
    tsize: u32,
}

impl SizeSpec {
    fn parse(b: &[u8]) -> Option<SizeSpec> {
        let u32_at = |at: usize| {
            b.get(at..at + 4)
                .map(|x| u32::from_ne_bytes([x[0], x[1], x[2], x[3]]))
        };
        Some(SizeSpec {
            cell_log: *b.first()?,
            size_log: *b.get(1)?,
            linklayer: u32_at(8)?,
            mpu: u32_at(12)?,
            tsize: u32_at(20)?,
        })
    }

    /// The table iproute2's `tc_calc_size_table` built for these parameters:
    /// `data[i] = adjust((i + 1) << cell_log) >> size_log`, where `adjust` raises a size to the
    /// minimum packet unit and, on ATM, to whole 53-byte cells of 48 payload bytes.
    fn table(&self) -> Vec<u16> {
        (0..self.tsize.min(4096))
            .map(|i| {
                let mut sz = (i + 1)
                    .checked_shl(u32::from(self.cell_log))
                    .unwrap_or(u32::MAX);
                sz = sz.max(self.mpu);
                if self.linklayer == 2 {
                    sz = sz.div_ceil(48).saturating_mul(53);
                }
                u16::try_from(sz.checked_shr(u32::from(self.size_log)).unwrap_or(0))
                    .unwrap_or(u16::MAX)
            })
            .collect()
    }
}

/// A `TCA_STAB` attribute with `TCA_STAB_BASE` from `nested` and the table computed again;
/// `None` if `nested` already has data or no table is needed.
fn rebuild_stab(nested: &[u8]) -> Option<Vec<u8>> {
    let mut base: Option<&[u8]> = None;
    let mut at = 0;
    while at + 4 <= nested.len() {
        let len = usize::from(u16::from_ne_bytes([nested[at], nested[at + 1]]));
        let kind = u16::from_ne_bytes([nested[at + 2], nested[at + 3]]) & 0x3fff;
        if len < 4 || at + len > nested.len() {
            return None;
        }
        match kind {
            TCA_STAB_BASE => base = Some(&nested[at..at + len]),
            TCA_STAB_DATA => return None,
            _ => {}
        }
        at += align4(len);
    }
    let base = base?;
    let spec = SizeSpec::parse(&base[4..])?;
    if spec.tsize == 0 {
        return None;
    }
    let table = spec.table();
    let data_len = 4 + 2 * table.len();
    let mut inner = base.to_vec();
    inner.resize(align4(inner.len()), 0);
    inner.extend_from_slice(&u16::try_from(data_len).ok()?.to_ne_bytes());
    inner.extend_from_slice(&TCA_STAB_DATA.to_ne_bytes());
    for v in table {
        inner.extend_from_slice(&v.to_ne_bytes());
    }
    inner.resize(align4(inner.len()), 0);
    let mut out = Vec::with_capacity(4 + inner.len());
    out.extend_from_slice(&u16::try_from(4 + inner.len()).ok()?.to_ne_bytes());
    out.extend_from_slice(&(TCA_STAB | 0x8000).to_ne_bytes());
    out.extend_from_slice(&inner);
    Some(out)
}

fn ifindex(ifname: &str) -> Result<i32, SaveError> {
    let name = std::ffi::CString::new(ifname).map_err(|_| SaveError::NoInterface(ifname.into()))?;
    // SAFETY: `name` is a valid NUL-terminated string for the duration of the call.
    let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if index == 0 {
        return Err(SaveError::NoInterface(ifname.into()));
    }
    i32::try_from(index).map_err(|_| SaveError::NoInterface(ifname.into()))
}

/// A `NETLINK_ROUTE` socket of the calling thread's network namespace.
struct Netlink {
    fd: OwnedFd,
}

impl Netlink {
    fn open() -> io::Result<Netlink> {
        // SAFETY: plain socket(2) call; the descriptor is owned below.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::NETLINK_ROUTE,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a new descriptor nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let timeout = libc::timeval {
            tv_sec: 2,
            tv_usec: 0,
        };
        // SAFETY: `timeout` is a valid timeval of the size passed.
        let rc = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&timeout as *const libc::timeval).cast(),
                std::mem::size_of::<libc::timeval>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Netlink { fd })
    }

    fn send(&self, kind: u16, flags: u16, body: &[u8]) -> io::Result<u32> {
        let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let len = u32::try_from(NLMSG_HDR + body.len()).map_err(|_| io::ErrorKind::InvalidInput)?;
        let mut msg = Vec::with_capacity(NLMSG_HDR + body.len());
        msg.extend_from_slice(&len.to_ne_bytes());
        msg.extend_from_slice(&kind.to_ne_bytes());
        msg.extend_from_slice(&flags.to_ne_bytes());
        msg.extend_from_slice(&seq.to_ne_bytes());
        msg.extend_from_slice(&0u32.to_ne_bytes());
        msg.extend_from_slice(body);
        // SAFETY: `msg` is a valid buffer of the length passed; the kernel is the peer (no
        // address needed on a netlink socket that sends to pid 0 by default).
        let rc = unsafe { libc::send(self.fd.as_raw_fd(), msg.as_ptr().cast(), msg.len(), 0) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(seq)
    }

    /// Receives messages of sequence `seq` until done, passing each `(type, payload)` to `f`;
    /// returns at `NLMSG_DONE` or an error/ack.
    fn receive(
        &self,
        seq: u32,
        mut f: impl FnMut(u16, &[u8]) -> Result<bool, SaveError>,
    ) -> Result<(), SaveError> {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            // SAFETY: `buf` is writable for its length.
            let n =
                unsafe { libc::recv(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n < 0 {
                return Err(io::Error::last_os_error().into());
            }
            let data = &buf[..usize::try_from(n).unwrap_or(0)];
            if walk_messages(data, seq, &mut f)? {
                return Ok(());
            }
        }
    }

    /// Dumps objects of `kind` (a GET type) of `ifindex` under `parent`.
    fn dump(&self, kind: u16, ifindex: i32, parent: u32) -> Result<Vec<Vec<u8>>, SaveError> {
        let seq = self.send(kind, NLM_F_REQUEST | NLM_F_DUMP, &tcmsg(ifindex, 0, parent))?;
        let mut out = Vec::new();
        self.receive(seq, |k, payload| {
            if k == NLMSG_ERROR {
                let errno = tcm_field(payload, 0) as i32;
                if errno == 0 {
                    return Ok(false);
                }
                return Err(SaveError::Refused {
                    what: format!("dump {kind}"),
                    source: io::Error::from_raw_os_error(-errno),
                });
            }
            out.push(strip_dump_only(payload)?);
            Ok(true)
        })?;
        Ok(out)
    }

    /// Sends one request and waits for its acknowledgement.
    fn request(&self, kind: u16, flags: u16, body: &[u8]) -> Result<(), SaveError> {
        let seq = self.send(kind, flags, body)?;
        self.receive(seq, |k, payload| {
            if k != NLMSG_ERROR {
                return Ok(true);
            }
            let errno = tcm_field(payload, 0) as i32;
            if errno == 0 {
                return Ok(false);
            }
            Err(SaveError::Refused {
                what: format!(
                    "type {kind} handle {:x} parent {:x}",
                    tcm_field(body, 8),
                    tcm_field(body, 12)
                ),
                source: io::Error::from_raw_os_error(-errno),
            })
        })
    }
}

/// Walks the netlink messages of one `recv` (`data`), bounds-checked, passing each of sequence
/// `seq` as `(type, payload)` to `f`; `true` once the answer is complete (`NLMSG_DONE`, or `f`
/// said so), `false` if more datagrams are to come.
fn walk_messages(
    data: &[u8],
    seq: u32,
    f: &mut impl FnMut(u16, &[u8]) -> Result<bool, SaveError>,
) -> Result<bool, SaveError> {
    let mut at = 0;
    while at + NLMSG_HDR <= data.len() {
        let len = tcm_field(data, at) as usize;
        let kind = u16::from_ne_bytes([data[at + 4], data[at + 5]]);
        let mseq = tcm_field(data, at + 8);
        if len < NLMSG_HDR || len > data.len() - at {
            return Err(SaveError::Malformed("message length"));
        }
        let payload = &data[at + NLMSG_HDR..at + len];
        at += align4(len);
        if mseq != seq {
            continue;
        }
        if kind == NLMSG_DONE {
            return Ok(true);
        }
        if !f(kind, payload)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Runs what the daemon does with a dump the kernel sent (and with a snapshot file's objects)
/// on arbitrary bytes: the messages walked as one `recv`, each payload stripped of its dump-only
/// attributes and made ready for a request. For the fuzz target `tc_dump`; panics only if an
/// object the walker accepted comes out of [`for_request`] no longer walkable.
#[doc(hidden)]
pub fn fuzz_dump(data: &[u8]) {
    let mut objects = Vec::new();
    let _ = walk_messages(data, 7, &mut |kind, payload| {
        if kind == NLMSG_ERROR {
            return Ok(false);
        }
        objects.push(strip_dump_only(payload)?);
        Ok(true)
    });
    for object in &objects {
        let request = for_request(object);
        assert!(
            attributes(&request).is_ok(),
            "a walkable object became unwalkable: {object:?} -> {request:?}"
        );
        let object = Object {
            kind: "qdisc".into(),
            body: request,
        };
        let _ = (object.handle(), object.parent(), tcm_ifindex(&object.body));
    }
    // A snapshot file's objects are replayed as they are, without the dump's checks.
    let _ = for_request(data);
}

static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);

#[cfg(test)]
mod tests {
    use super::*;

    fn nlmsg(kind: u16, seq: u32, payload: &[u8]) -> Vec<u8> {
        let mut m = Vec::new();
        m.extend_from_slice(
            &u32::try_from(NLMSG_HDR + payload.len())
                .expect("small")
                .to_ne_bytes(),
        );
        m.extend_from_slice(&kind.to_ne_bytes());
        m.extend_from_slice(&0u16.to_ne_bytes());
        m.extend_from_slice(&seq.to_ne_bytes());
        m.extend_from_slice(&0u32.to_ne_bytes());
        m.extend_from_slice(payload);
        m.resize(align4(m.len()), 0);
        m
    }

    #[test]
    fn the_walker_takes_its_own_sequence_until_done_and_refuses_bad_lengths() {
        let mut data = nlmsg(RTM_NEWQDISC, 5, &[1; 20]);
        data.extend(nlmsg(RTM_NEWQDISC, 9, &[2; 20]));
        data.extend(nlmsg(RTM_NEWQDISC, 5, &[3; 21]));
        let mut seen = Vec::new();
        let mut f = |_: u16, p: &[u8]| {
            seen.push(p.to_vec());
            Ok(true)
        };
        assert!(
            !walk_messages(&data, 5, &mut f).expect("walks"),
            "no DONE yet"
        );
        data.extend(nlmsg(NLMSG_DONE, 5, &[]));
        assert!(walk_messages(&data, 5, &mut f).expect("walks"));
        // A length past the datagram, or shorter than the header, is refused.
        let mut bad = nlmsg(RTM_NEWQDISC, 5, &[1; 20]);
        bad[0..4].copy_from_slice(&1000u32.to_ne_bytes());
        assert!(walk_messages(&bad, 5, &mut f).is_err());
        bad[0..4].copy_from_slice(&3u32.to_ne_bytes());
        assert!(walk_messages(&bad, 5, &mut f).is_err());
        assert_eq!(seen.len(), 4);
        assert_eq!(seen[1], vec![3; 21]);
        // The fuzz entry point accepts all of these.
        fuzz_dump(&data);
        fuzz_dump(&bad);
    }

    fn attr(kind: u16, value: &[u8]) -> Vec<u8> {
        let mut a = Vec::new();
        a.extend_from_slice(&u16::try_from(4 + value.len()).expect("small").to_ne_bytes());
        a.extend_from_slice(&kind.to_ne_bytes());
        a.extend_from_slice(value);
        a.resize(align4(a.len()), 0);
        a
    }

    #[test]
    fn dump_only_attributes_are_removed_and_the_rest_kept_in_order() {
        let mut body = tcmsg(3, 0x10000, TC_H_ROOT);
        body.extend(attr(1, b"tbf\0"));
        body.extend(attr(7, &[9; 12]));
        body.extend(attr(2, &[1, 2, 3, 4, 5]));
        body.extend(attr(3, &[0; 8]));
        let out = strip_dump_only(&body).expect("well formed");
        let mut want = tcmsg(3, 0x10000, TC_H_ROOT);
        want.extend(attr(1, b"tbf\0"));
        want.extend(attr(2, &[1, 2, 3, 4, 5]));
        assert_eq!(out, want);
    }

    #[test]
    fn truncated_attributes_are_an_error_not_a_panic() {
        let mut body = tcmsg(3, 0, 0);
        body.extend_from_slice(&[200, 0, 1, 0, 7, 7]);
        assert!(matches!(
            strip_dump_only(&body),
            Err(SaveError::Malformed(_))
        ));
        assert!(matches!(
            strip_dump_only(&[1, 2]),
            Err(SaveError::Malformed(_))
        ));
        // A bad stab is left alone rather than rebuilt.
        assert_eq!(with_size_table(&body), body);
    }

    #[test]
    fn the_size_table_is_the_one_tc_computes() {
        // `stab overhead 24 mpu 84 mtu 2047 tsize 2048` (the lab's link emulation): tc picks
        // cell_log 0 (2047 >> 0 <= 2047), size_log 0; entry i is max(i + 1, 84).
        let spec = SizeSpec {
            cell_log: 0,
            size_log: 0,
            mpu: 84,
            linklayer: 1,
            tsize: 2048,
        };
        let t = spec.table();
        assert_eq!(t.len(), 2048);
        assert_eq!(
            (t[0], t[83], t[84], t[1513], t[2047]),
            (84, 84, 85, 1514, 2048)
        );
        // ATM: whole cells of 53 bytes per 48.
        let atm = SizeSpec {
            cell_log: 1,
            size_log: 0,
            mpu: 0,
            linklayer: 2,
            tsize: 4,
        };
        assert_eq!(atm.table(), vec![53, 53, 53, 53]);
    }

    #[test]
    fn an_htb_qdisc_gets_the_version_its_init_accepts() {
        let mut glob = vec![0u8; 20];
        glob[..4].copy_from_slice(&0x30011u32.to_ne_bytes());
        glob[8..12].copy_from_slice(&0x20u32.to_ne_bytes());
        let mut body = tcmsg(3, 0x10000, TC_H_ROOT);
        body.extend(attr(TCA_KIND, b"htb\0"));
        body.extend(attr(TCA_OPTIONS, &attr(TCA_HTB_INIT, &glob)));
        let out = for_request(&body);
        let mut want_glob = glob.clone();
        want_glob[..4].copy_from_slice(&3u32.to_ne_bytes());
        let mut want = tcmsg(3, 0x10000, TC_H_ROOT);
        want.extend(attr(TCA_KIND, b"htb\0"));
        want.extend(attr(TCA_OPTIONS, &attr(TCA_HTB_INIT, &want_glob)));
        assert_eq!(out, want);
        // A u32 filter's hardware state is dropped from its flags, the rest kept.
        let mut u32f = tcmsg(3, 0x8000_0800, 0x10000);
        u32f.extend(attr(TCA_KIND, b"u32\0"));
        u32f.extend(attr(TCA_OPTIONS, &attr(11, &9u32.to_ne_bytes())));
        let mut want = tcmsg(3, 0x8000_0800, 0x10000);
        want.extend(attr(TCA_KIND, b"u32\0"));
        want.extend(attr(TCA_OPTIONS, &attr(11, &1u32.to_ne_bytes())));
        assert_eq!(for_request(&u32f), want);
        // Another kind with the same bytes is left alone.
        let mut tbf = tcmsg(3, 0x10000, TC_H_ROOT);
        tbf.extend(attr(TCA_KIND, b"tbf\0"));
        tbf.extend(attr(TCA_OPTIONS, &attr(TCA_HTB_INIT, &glob)));
        assert_eq!(for_request(&tbf), tbf);
    }

    #[test]
    fn a_dumped_stab_gets_its_data_back() {
        let mut spec = vec![0u8; 24];
        spec[12..16].copy_from_slice(&84u32.to_ne_bytes());
        spec[20..24].copy_from_slice(&8u32.to_ne_bytes());
        let mut body = tcmsg(3, 0x10000, TC_H_ROOT);
        body.extend(attr(TCA_STAB | 0x8000, &attr(TCA_STAB_BASE, &spec)));
        let rebuilt = with_size_table(&body);
        let attrs = attributes(&rebuilt).expect("well formed");
        let stab = attrs[0].1;
        // header 4 + base (4 + 24) + data (4 + 8 × 2)
        assert_eq!(stab.len(), 4 + 28 + 20);
        assert_eq!(&stab[32..36], &[20, 0, 2, 0]);
        assert_eq!(u16::from_ne_bytes([stab[36], stab[37]]), 84);
        // Already with data: unchanged.
        assert_eq!(with_size_table(&rebuilt), rebuilt);
    }

    #[test]
    fn a_snapshot_file_round_trips_and_names_its_interface() {
        let dir = std::env::temp_dir().join(format!("rtlan-tcsave-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = TcSnapshot::file_for(&dir.join("rtcd.sock"), "eth0");
        assert_eq!(path, dir.join("rtcd.sock.eth0.tc.json"));
        assert_ne!(
            path,
            TcSnapshot::file_for(&dir.join("other.sock"), "eth0"),
            "two daemons' eth0 in two namespaces"
        );
        let snap = TcSnapshot {
            ifname: "eth0".into(),
            kernel_default: false,
            objects: vec![Object {
                kind: "qdisc".into(),
                body: tcmsg(3, 0x10000, TC_H_ROOT),
            }],
        };
        snap.save(&path).expect("save");
        assert_eq!(TcSnapshot::load(&path, "eth0").expect("load"), Some(snap));
        assert_eq!(TcSnapshot::load(&path, "eth1").expect("load"), None);
        std::fs::write(&path, b"{not json").expect("write");
        assert!(TcSnapshot::load(&path, "eth0").is_err());
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }
}
