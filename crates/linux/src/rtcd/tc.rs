//! The host's egress queues, set with the `tc` binary: a priority class that keeps real-time
//! connections ahead of the host's other traffic, and kernel shaping of single connections (the
//! daemon's side of RTTR's `Shaping::Kernel`; EtheReal §3.2 shapes in a user-level library, this
//! is the in-kernel alternative for applications that cannot link it).
//!
//! EtheReal §2.2 separates real-time from other traffic in the switch; on the host both leave
//! through the one interface queue, so a reserved stream would wait behind the host's own bulk
//! traffic (a TCP flow keeps the queue full) and leave it in clumps its switch queue was not
//! sized for. When the first connection opens (with its proxy route), the interface's root
//! qdisc is therefore replaced by an HTB tree whose size table counts whole frames exactly like
//! the switch's `wire_bits` (`stab overhead 24 mpu 84`: FCS 4 + preamble/SFD 8 + inter-frame
//! gap 12 on top of the skb's Ethernet frame, at least 84 bytes; `mtu 2047 tsize 2048` make the
//! table exact to the byte, as in the lab's link emulation):
//!
//! ```text
//! 1:      htb default ffff (stab overhead 24 mpu 84)
//! └ 1:1     rate = ceil = link rate
//!   ├ 1:fffe  reserved traffic, prio 0: rate = cap share − kernel-shaped, ceil = link
//!   │         fed by `u32 match ip dst <proxy prefix>` at pref 65535
//!   ├ 1:<id>  one per kernel-shaped connection, prio 0: rate = ceil = reserved rate,
//!   │         burst = cburst = max_burst, fed by `u32 match ip dst <proxy_ip>/32` at pref <id>
//!   └ 1:ffff  everything else, prio 1: rate = link − cap share, ceil = link
//! ```
//!
//! HTB serves the classes that are within their rate by `prio`, lowest first, so a frame to a
//! proxy IP waits for at most the frame in transmission, never behind the host's queue. The
//! cap share is `realtime_cap_percent` of the link: the daemon admits no more than that, so
//! shaped real-time traffic always finds its class within its rate. Every class may borrow up
//! to the link rate (`ceil`), so the host is never held below its link rate.
//!
//! This replaces whatever root qdisc was there (a lab's `tbf` link emulation becomes an HTB tree
//! of the same rate) for as long as the daemon runs. The tree that was there is saved first
//! ([`super::tc_save`], also to a file beside the socket) and put back exactly when the daemon
//! exits — or, if it was killed, when it next starts and stops. Commands run with an argument vector (no shell); a failure is returned, the
//! caller logs and counts it.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::process::Command;

use rtlan_core::rtcd::ProxyPrefix;

use super::tc_save::TcSnapshot;

/// A `tc` invocation failed.
#[derive(Debug, thiserror::Error)]
pub(super) enum TcError {
    /// The `tc` binary could not be started.
    #[error("cannot run tc: {0}")]
    Spawn(#[source] std::io::Error),
    /// `tc` exited with a failure status.
    #[error("`tc {args}` failed ({status}): {stderr}")]
    Failed {
        /// The arguments, space-joined.
        args: String,
        /// The exit status.
        status: std::process::ExitStatus,
        /// What `tc` wrote to stderr.
        stderr: String,
    },
    /// The saved egress tree could not be put back.
    #[error("restoring the interface's own egress tree: {0}")]
    Restore(#[source] super::tc_save::SaveError),
    /// The connection id cannot name an HTB class (0 is the qdisc, `fffe` the reserved class,
    /// `ffff` the default class).
    #[error("connection id {0} cannot name an htb class")]
    BadId(u16),
}

/// Minor class id of the default (non-real-time) class.
const DEFAULT_MINOR: u16 = 0xffff;
/// Minor class id of the class of all traffic to the proxy prefix.
const RESERVED_MINOR: u16 = 0xfffe;
/// Filter preference of the proxy-prefix filter: after every connection's own (pref = its id,
/// at most `fffd`), so a kernel-shaped connection still reaches its own class.
const PREFIX_PREF: u16 = 0xffff;
/// Lowest rate given to a class (HTB needs > 0).
const MIN_RATE: u64 = 8_000;
/// A full frame on the wire (1514 + FCS, preamble/SFD, inter-frame gap), bytes: HTB's DRR
/// quantum, so classes of one priority that borrow share by frames.
const FULL_FRAME: u64 = 1538;
/// How late a library shaper's wake-up may be before it loses rate (RTTR's leaky-bucket buffer,
/// `MIN_LEAKY_BUFFER`): it then releases that much of its rate at once, which the reserved
/// class lets through at link rate without leaving its priority.
const RESERVED_BURST_MS: u64 = 10;

/// Longest a closed kernel-shaped connection's class is given to send its backlog.
const DRAIN_LIMIT: std::time::Duration = std::time::Duration::from_secs(1);

/// How often the backlog of a draining class is read.
const DRAIN_POLL: std::time::Duration = std::time::Duration::from_millis(2);

/// The bytes of the `backlog 1234b 3p` line of `tc -s class show` (sizes as iproute2's
/// `sprint_size` prints them: `b`, or whole `Kb` / `Mb` when exact to within a few bytes).
fn parse_backlog(text: &str) -> Option<u64> {
    let line = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("backlog "))?;
    let size = line.split_whitespace().next()?;
    let (number, unit) = size.split_at(size.find(|c: char| c.is_ascii_alphabetic())?);
    let number: f64 = number.parse().ok()?;
    let scale = match unit {
        "b" => 1.0,
        "Kb" => 1024.0,
        "Mb" => 1024.0 * 1024.0,
        _ => return None,
    };
    Some((number * scale) as u64)
}

/// The bucket of the link and default classes: 1 ms at link rate, at least four full frames —
/// the lab's `tbf` link emulation (docs/lab.md): the qdisc watchdog fires tens to hundreds of
/// µs late on a loaded host, and a smaller bucket would cost link throughput.
fn link_burst(link_rate_bps: u64) -> u64 {
    (link_rate_bps / 8 / 1000).max(4 * FULL_FRAME)
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_string()).collect()
}

/// `tc` arguments that install the root HTB with the whole-frame size table.
fn root_args(ifname: &str) -> Vec<String> {
    args(&[
        "qdisc", "replace", "dev", ifname, "root", "handle", "1:", "stab", "overhead", "24", "mpu",
        "84", "mtu", "2047", "tsize", "2048", "htb", "default", "ffff",
    ])
}

/// One HTB class `1:<minor>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct HtbClass {
    minor: u16,
    rate_bps: u64,
    ceil_bps: u64,
    /// `burst` = `cburst`, bytes (`None`: tc's default).
    burst: Option<u64>,
    /// HTB priority, 0 first (`None`: no priority, for the inner class `1:1`).
    prio: Option<u8>,
}

/// `tc` arguments for `class` under `parent` (`add` or `change`).
fn class_args(verb: &str, ifname: &str, parent: &str, class: &HtbClass) -> Vec<String> {
    let mut v = args(&["class", verb, "dev", ifname, "parent", parent]);
    v.push("classid".into());
    v.push(format!("1:{:x}", class.minor));
    v.extend(args(&["htb", "rate"]));
    v.push(format!("{}bit", class.rate_bps));
    v.push("ceil".into());
    v.push(format!("{}bit", class.ceil_bps));
    if let Some(b) = class.burst {
        v.extend([
            "burst".into(),
            b.to_string(),
            "cburst".into(),
            b.to_string(),
        ]);
    }
    if let Some(p) = class.prio {
        v.extend(["prio".into(), p.to_string()]);
        v.extend(["quantum".into(), FULL_FRAME.to_string()]);
    }
    v
}

/// `tc` arguments for the filter steering `proxy_ip` into class `1:<id>` (pref `id`).
fn filter_add_args(
    ifname: &str,
    id: u16,
    proxy_ip: Ipv4Addr,
    dst_port: Option<u16>,
) -> Vec<String> {
    let mut v = args(&[
        "filter", "add", "dev", ifname, "parent", "1:", "protocol", "ip", "pref",
    ]);
    v.push(id.to_string());
    v.extend(args(&["u32", "match", "ip", "dst"]));
    v.push(format!("{proxy_ip}/32"));
    if let Some(port) = dst_port {
        // Central-only admission: several connections may share the receiver's address.
        v.extend(args(&[
            "match", "ip", "protocol", "17", "0xff", "match", "ip", "dport",
        ]));
        v.push(port.to_string());
        v.push("0xffff".into());
    }
    v.push("flowid".into());
    v.push(format!("1:{id:x}"));
    v
}

/// `tc` arguments for the filter steering the whole proxy prefix into the reserved class.
fn prefix_filter_args(ifname: &str, prefix: ProxyPrefix) -> Vec<String> {
    let mut v = args(&[
        "filter", "add", "dev", ifname, "parent", "1:", "protocol", "ip", "pref",
    ]);
    v.push(PREFIX_PREF.to_string());
    v.extend(args(&["u32", "match", "ip", "dst"]));
    v.push(prefix.to_string());
    v.push("flowid".into());
    v.push(format!("1:{RESERVED_MINOR:x}"));
    v
}

/// `tc` arguments removing the filter of connection `id`.
fn filter_del_args(ifname: &str, id: u16) -> Vec<String> {
    let mut v = args(&[
        "filter", "del", "dev", ifname, "parent", "1:", "protocol", "ip", "pref",
    ]);
    v.push(id.to_string());
    v.push("u32".into());
    v
}

fn run_tc(argv: &[String]) -> Result<(), TcError> {
    let out = Command::new("tc")
        .args(argv)
        .output()
        .map_err(TcError::Spawn)?;
    if out.status.success() {
        return Ok(());
    }
    Err(TcError::Failed {
        args: argv.join(" "),
        status: out.status,
        stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
    })
}

/// The HTB tree on the daemon's interface and the connections shaped in it.
#[derive(Debug)]
pub(super) struct KernelShaper {
    ifname: String,
    link_rate_bps: u64,
    /// The share of the link reservations may take in all, percent.
    realtime_cap_percent: u8,
    /// Whether traffic to the proxy prefix gets the priority class (`priority_queue`).
    priority_queue: bool,
    root_installed: bool,
    /// The prefix whose filter feeds the reserved class, once installed.
    prefix: Option<ProxyPrefix>,
    /// Reserved rate per kernel-shaped connection id.
    classes: BTreeMap<u16, u64>,
    /// Where the tree the daemon replaced is saved, if anywhere.
    save_path: Option<std::path::PathBuf>,
    /// The tree the daemon replaced, to put back at [`KernelShaper::shutdown`].
    saved: Option<TcSnapshot>,
}

impl KernelShaper {
    pub(super) fn new(
        ifname: String,
        link_rate_bps: u64,
        realtime_cap_percent: u8,
        priority_queue: bool,
    ) -> KernelShaper {
        KernelShaper {
            ifname,
            link_rate_bps,
            realtime_cap_percent: realtime_cap_percent.min(100),
            priority_queue,
            root_installed: false,
            prefix: None,
            classes: BTreeMap::new(),
            save_path: None,
            saved: None,
        }
    }

    /// Also keeps the snapshot of the replaced tree in `path`, for a later start to restore if
    /// this one is killed.
    pub(super) fn saving_to(mut self, path: std::path::PathBuf) -> KernelShaper {
        self.save_path = Some(path);
        self
    }

    /// Puts back what a killed earlier start replaced, if its HTB tree is still the root: the
    /// snapshot it saved, or else the kernel's default (with a warning). Called at start, so a
    /// restarted daemon that never installs its tree again does not leave the old one.
    pub(super) fn recover(&mut self) {
        if !self.leftover_root() {
            return;
        }
        let earlier = match self.save_path.as_deref() {
            Some(p) => TcSnapshot::load(p, &self.ifname),
            None => Ok(None),
        };
        let result = match earlier {
            Ok(Some(snap)) => snap
                .restore()
                .map_err(TcError::Restore)
                .map(|()| "restored"),
            Ok(None) => run_tc(&args(&["qdisc", "del", "dev", &self.ifname, "root"])).map(|()| {
                "removed (no snapshot of what it replaced: the kernel's default is back)"
            }),
            Err(e) => {
                tracing::warn!(interface = %self.ifname, "snapshot of the egress tree unreadable: {e}");
                run_tc(&args(&["qdisc", "del", "dev", &self.ifname, "root"]))
                    .map(|()| "removed (snapshot unreadable: the kernel's default is back)")
            }
        };
        match result {
            Ok(what) => {
                if let Some(path) = &self.save_path {
                    let _ = std::fs::remove_file(path);
                }
                tracing::warn!(interface = %self.ifname, "the HTB tree an earlier start left: {what}");
            }
            Err(e) => tracing::error!(
                interface = %self.ifname,
                "the HTB tree an earlier start left could not be removed: {e}"
            ),
        }
    }

    /// Saves the tree about to be replaced: the one a killed earlier start saved if the root is
    /// that start's HTB, else the interface's own.
    fn save_tree(&mut self) {
        if self.leftover_root() {
            let earlier = self
                .save_path
                .as_deref()
                .map(|p| TcSnapshot::load(p, &self.ifname));
            match earlier {
                Some(Ok(Some(snap))) => self.saved = Some(snap),
                Some(Err(e)) => tracing::warn!(
                    interface = %self.ifname,
                    "the tree an earlier start replaced cannot be read ({e}): the kernel's \
                     default qdisc comes back at exit"
                ),
                _ => tracing::warn!(
                    interface = %self.ifname,
                    "an earlier start left its HTB tree without a snapshot of what it replaced: \
                     the kernel's default qdisc comes back at exit"
                ),
            }
            return;
        }
        match TcSnapshot::take(&self.ifname) {
            Ok(snap) => {
                if let Some(path) = &self.save_path {
                    if let Err(e) = snap.save(path) {
                        tracing::warn!(
                            interface = %self.ifname,
                            "snapshot of the egress tree not written to {}: {e}",
                            path.display()
                        );
                    }
                }
                self.saved = Some(snap);
            }
            Err(e) => tracing::warn!(
                interface = %self.ifname,
                "the egress tree cannot be saved ({e}): the kernel's default qdisc comes back at \
                 exit"
            ),
        }
    }

    /// What the daemon may admit in all: `realtime_cap_percent` of the link.
    fn cap_share(&self) -> u64 {
        u64::try_from(u128::from(self.link_rate_bps) * u128::from(self.realtime_cap_percent) / 100)
            .unwrap_or(u64::MAX)
    }

    /// The default class: the link less what real-time traffic may take, then borrowing.
    fn default_class(&self) -> HtbClass {
        HtbClass {
            minor: DEFAULT_MINOR,
            rate_bps: self
                .link_rate_bps
                .saturating_sub(self.cap_share())
                .max(MIN_RATE),
            ceil_bps: self.link_rate_bps,
            burst: Some(link_burst(self.link_rate_bps)),
            prio: Some(1),
        }
    }

    /// The reserved class: the cap share less the kernel-shaped connections' own classes.
    fn reserved_class(&self) -> HtbClass {
        let kernel: u64 = self.classes.values().sum();
        let rate_bps = self.cap_share().saturating_sub(kernel).max(MIN_RATE);
        HtbClass {
            minor: RESERVED_MINOR,
            rate_bps,
            ceil_bps: self.link_rate_bps,
            burst: Some(
                (rate_bps / 8 / 1000 * RESERVED_BURST_MS).max(link_burst(self.link_rate_bps)),
            ),
            prio: Some(0),
        }
    }

    fn ensure_root(&mut self) -> Result<(), TcError> {
        if self.root_installed {
            return Ok(());
        }
        let link = self.link_rate_bps;
        self.save_tree();
        // A tree of the host's own is saved: remove it whole (`replace` would change an HTB
        // root in place and keep its classes and filters under ours).
        if self.saved.as_ref().is_some_and(|s| !s.kernel_default()) {
            run_tc(&args(&["qdisc", "del", "dev", &self.ifname, "root"]))?;
        }
        if let Err(error) = run_tc(&root_args(&self.ifname)) {
            // An earlier start of the daemon that was killed leaves its HTB root behind, which
            // `replace` cannot change into a new one (the size table differs in kind): remove
            // it and install ours. Any other root qdisc that refuses is an error.
            if !self.leftover_root() {
                return Err(error);
            }
            tracing::warn!(
                interface = %self.ifname,
                "removing the HTB root an earlier start of rtcd left behind"
            );
            run_tc(&args(&["qdisc", "del", "dev", &self.ifname, "root"]))?;
            run_tc(&root_args(&self.ifname))?;
        }
        self.root_installed = true;
        let top = HtbClass {
            minor: 1,
            rate_bps: link,
            ceil_bps: link,
            burst: Some(link_burst(link)),
            prio: None,
        };
        run_tc(&class_args("add", &self.ifname, "1:", &top))?;
        run_tc(&class_args(
            "add",
            &self.ifname,
            "1:1",
            &self.default_class(),
        ))?;
        if self.priority_queue {
            run_tc(&class_args(
                "add",
                &self.ifname,
                "1:1",
                &self.reserved_class(),
            ))?;
        }
        Ok(())
    }

    /// Whether the interface's root qdisc is an HTB with handle 1: and default class ffff — the
    /// tree this daemon installs, so one an earlier start left.
    fn leftover_root(&self) -> bool {
        let out = Command::new("tc")
            .args(["qdisc", "show", "dev", &self.ifname, "root"])
            .output();
        out.is_ok_and(|o| {
            let text = String::from_utf8_lossy(&o.stdout);
            o.status.success()
                && text.starts_with("qdisc htb 1: root")
                && text.contains(" default 0xffff ")
        })
    }

    fn update_reserved(&self) -> Result<(), TcError> {
        if !self.priority_queue {
            return Ok(());
        }
        run_tc(&class_args(
            "change",
            &self.ifname,
            "1:1",
            &self.reserved_class(),
        ))
    }

    /// Steers all traffic to `prefix` (the proxy route the daemon just installed) into the
    /// reserved class, building the tree first if needed. Nothing with `priority_queue` off.
    pub(super) fn prioritize(&mut self, prefix: ProxyPrefix) -> Result<(), TcError> {
        if !self.priority_queue || self.prefix == Some(prefix) {
            return Ok(());
        }
        self.ensure_root()?;
        if self.prefix.take().is_some() {
            run_tc(&filter_del_args(&self.ifname, PREFIX_PREF))?;
        }
        run_tc(&prefix_filter_args(&self.ifname, prefix))?;
        self.prefix = Some(prefix);
        Ok(())
    }

    /// Installs class `1:<id>` at `rate_bps` with bucket `max_burst` and its filter.
    pub(super) fn install(
        &mut self,
        id: u16,
        proxy_ip: Ipv4Addr,
        dst_port: Option<u16>,
        rate_bps: u64,
        max_burst: u32,
    ) -> Result<(), TcError> {
        if id == 0 || id == DEFAULT_MINOR || id == RESERVED_MINOR {
            return Err(TcError::BadId(id));
        }
        self.ensure_root()?;
        let class = HtbClass {
            minor: id,
            rate_bps,
            ceil_bps: rate_bps,
            burst: Some(u64::from(max_burst)),
            prio: Some(0),
        };
        run_tc(&class_args("add", &self.ifname, "1:1", &class))?;
        self.classes.insert(id, rate_bps);
        run_tc(&filter_add_args(&self.ifname, id, proxy_ip, dst_port))?;
        self.update_reserved()
    }

    /// Removes the filter and class of connection `id` (both attempted; the first error wins).
    /// Between the two, what the class still holds is given time to leave ([`KernelShaper::drain`]):
    /// the daemon sends the connection's TEARDOWN right after, and the switches release it once
    /// their queues are empty, so frames still here when the class went would be lost — the
    /// tail of a stream whose application closed right after sending it.
    pub(super) fn remove(&mut self, id: u16) -> Result<(), TcError> {
        let Some(rate_bps) = self.classes.remove(&id) else {
            return Ok(());
        };
        let filter = run_tc(&filter_del_args(&self.ifname, id));
        let left = self.drain(id, rate_bps);
        if left > 0 {
            tracing::warn!(
                id,
                bytes = left,
                "kernel-shaped connection closed with {left} bytes still queued after {DRAIN_LIMIT:?}: dropped"
            );
        }
        let class = run_tc(&args(&[
            "class",
            "del",
            "dev",
            &self.ifname,
            "classid",
            &format!("1:{id:x}"),
        ]));
        let reserved = self.update_reserved();
        filter.and(class).and(reserved)
    }

    /// Waits until class `1:<id>` has sent its backlog: polls `tc -s class show` every
    /// [`DRAIN_POLL`] for at most twice the backlog's time at `rate_bps` plus 10 ms, never more
    /// than [`DRAIN_LIMIT`] (an application that sent far over its reservation filled the
    /// class's queue: what does not leave by then is dropped with the class). Returns the bytes
    /// still queued (0: drained, or the backlog could not be read).
    fn drain(&self, id: u16, rate_bps: u64) -> u64 {
        let start = std::time::Instant::now();
        let Some(first) = self.backlog(id) else {
            return 0;
        };
        if first == 0 {
            return 0;
        }
        let expected = std::time::Duration::from_nanos(
            u64::try_from(u128::from(first) * 8_000_000_000 / u128::from(rate_bps.max(1)))
                .unwrap_or(u64::MAX),
        );
        let limit = expected
            .saturating_mul(2)
            .saturating_add(std::time::Duration::from_millis(10))
            .min(DRAIN_LIMIT);
        loop {
            std::thread::sleep(DRAIN_POLL);
            match self.backlog(id) {
                None | Some(0) => return 0,
                Some(left) if start.elapsed() >= limit => return left,
                Some(_) => {}
            }
        }
    }

    /// Bytes queued in class `1:<id>` (`tc -s class show`), `None` if it cannot be read.
    fn backlog(&self, id: u16) -> Option<u64> {
        let out = Command::new("tc")
            .args([
                "-s",
                "class",
                "show",
                "dev",
                &self.ifname,
                "classid",
                &format!("1:{id:x}"),
            ])
            .output()
            .ok()?;
        if !out.status.success() {
            return None;
        }
        parse_backlog(&String::from_utf8_lossy(&out.stdout))
    }

    /// Removes the daemon's tree if it installed one and puts back the tree it replaced
    /// (without a snapshot, the kernel's default comes back).
    pub(super) fn shutdown(&mut self) -> Result<(), TcError> {
        self.classes.clear();
        self.prefix = None;
        if !std::mem::take(&mut self.root_installed) {
            return Ok(());
        }
        let Some(saved) = self.saved.take() else {
            return run_tc(&args(&["qdisc", "del", "dev", &self.ifname, "root"]));
        };
        saved.restore().map_err(TcError::Restore)?;
        if let Some(path) = &self.save_path {
            let _ = std::fs::remove_file(path);
        }
        tracing::info!(interface = %self.ifname, "egress tree restored as it was before rtcd");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backlog_is_read_in_every_unit_tc_prints() {
        let shown = "class htb 1:10 root prio 0 rate 1Mbit ceil 1Mbit burst 1600b cburst 1600b \n \
                     Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n \
                     backlog 3126b 3p requeues 0\n lended: 0 borrowed: 0 giants: 0\n";
        assert_eq!(parse_backlog(shown), Some(3126));
        assert_eq!(parse_backlog(" backlog 0b 0p requeues 0"), Some(0));
        assert_eq!(
            parse_backlog(" backlog 12Kb 8p requeues 0"),
            Some(12 * 1024)
        );
        assert_eq!(
            parse_backlog(" backlog 2Mb 1400p requeues 0"),
            Some(2 * 1024 * 1024)
        );
        assert_eq!(parse_backlog("class htb 1:10 root"), None);
        assert_eq!(parse_backlog(" backlog lots"), None);
    }

    #[test]
    fn root_counts_whole_frames() {
        assert_eq!(
            root_args("eth0").join(" "),
            "qdisc replace dev eth0 root handle 1: stab overhead 24 mpu 84 mtu 2047 tsize 2048 htb \
             default ffff"
        );
    }

    #[test]
    fn connection_class_and_filter_use_hex_minor_and_exact_rate() {
        let class = HtbClass {
            minor: 0x1a,
            rate_bps: 10_000_000,
            ceil_bps: 10_000_000,
            burst: Some(3028),
            prio: Some(0),
        };
        assert_eq!(
            class_args("add", "eth0", "1:1", &class).join(" "),
            "class add dev eth0 parent 1:1 classid 1:1a htb rate 10000000bit ceil 10000000bit \
             burst 3028 cburst 3028 prio 0 quantum 1538"
        );
        assert_eq!(
            filter_add_args("eth0", 26, Ipv4Addr::new(198, 19, 0, 26), None).join(" "),
            "filter add dev eth0 parent 1: protocol ip pref 26 u32 match ip dst 198.19.0.26/32 \
             flowid 1:1a"
        );
        assert_eq!(
            filter_add_args("eth0", 26, Ipv4Addr::new(198, 18, 0, 2), Some(5004)).join(" "),
            "filter add dev eth0 parent 1: protocol ip pref 26 u32 match ip dst 198.18.0.2/32 \
             match ip protocol 17 0xff match ip dport 5004 0xffff flowid 1:1a"
        );
        assert_eq!(
            filter_del_args("eth0", 26).join(" "),
            "filter del dev eth0 parent 1: protocol ip pref 26 u32"
        );
    }

    #[test]
    fn proxy_prefix_feeds_the_reserved_class_after_every_connection_filter() {
        assert_eq!(
            prefix_filter_args("eth0", ProxyPrefix::DEFAULT).join(" "),
            "filter add dev eth0 parent 1: protocol ip pref 65535 u32 match ip dst 198.19.0.0/16 \
             flowid 1:fffe"
        );
    }

    #[test]
    fn reserved_class_goes_first_and_every_class_may_use_the_whole_link() {
        let mut k = KernelShaper::new("eth0".into(), 100_000_000, 60, true);
        let reserved = k.reserved_class();
        let default = k.default_class();
        assert_eq!((reserved.prio, default.prio), (Some(0), Some(1)));
        assert_eq!(
            (reserved.rate_bps, default.rate_bps),
            (60_000_000, 40_000_000)
        );
        assert_eq!(
            (reserved.ceil_bps, default.ceil_bps),
            (100_000_000, 100_000_000)
        );
        // 1 ms at 100 Mbit/s, as the lab's tbf; 10 ms at the reserved class's rate.
        assert_eq!(default.burst, Some(12_500));
        assert_eq!(reserved.burst, Some(75_000));
        assert_eq!(
            class_args("add", "eth0", "1:1", &default).join(" "),
            "class add dev eth0 parent 1:1 classid 1:ffff htb rate 40000000bit ceil 100000000bit \
             burst 12500 cburst 12500 prio 1 quantum 1538"
        );
        // Kernel-shaped connections have their own classes: the reserved class keeps the rest.
        k.classes.insert(1, 30_000_000);
        k.classes.insert(2, 20_000_000);
        assert_eq!(k.reserved_class().rate_bps, 10_000_000);
        assert_eq!(k.default_class().rate_bps, 40_000_000);
        k.classes.insert(3, 20_000_000);
        assert_eq!(k.reserved_class().rate_bps, MIN_RATE);
        // All of the link may be reserved: the default class keeps a rate above zero.
        assert_eq!(
            KernelShaper::new("eth0".into(), 1_000_000_000, 100, true)
                .default_class()
                .rate_bps,
            MIN_RATE
        );
    }

    #[test]
    fn reserved_ids_are_refused_without_running_tc() {
        let mut k = KernelShaper::new("nonexistent0".into(), 1_000_000, 60, true);
        for id in [0, 0xfffe, 0xffff] {
            assert!(matches!(
                k.install(id, Ipv4Addr::LOCALHOST, None, 1, 1),
                Err(TcError::BadId(i)) if i == id
            ));
        }
        assert!(!k.root_installed);
        assert!(k.remove(5).is_ok(), "removing an unknown id is a no-op");
    }

    #[test]
    fn priority_queue_off_installs_nothing_for_the_prefix() {
        let mut k = KernelShaper::new("nonexistent0".into(), 1_000_000, 60, false);
        assert!(k.prioritize(ProxyPrefix::DEFAULT).is_ok());
        assert!(!k.root_installed);
        assert_eq!(k.prefix, None);
    }
}
