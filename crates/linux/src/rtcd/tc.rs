//! Kernel shaping of real-time connections with the `tc` binary (the daemon's side of RTTR's
//! `Shaping::Kernel`; EtheReal §3.2 shapes in a user-level library, this is the in-kernel
//! alternative for applications that cannot link it).
//!
//! On first use the interface's root qdisc is replaced by an HTB tree whose size table counts
//! whole frames exactly like the switch's `wire_bits` (`stab overhead 24 mpu 84`: FCS 4 +
//! preamble/SFD 8 + inter-frame gap 12 on top of the skb's Ethernet frame, at least 84 bytes):
//!
//! ```text
//! 1:      htb default ffff (stab overhead 24 mpu 84)
//! └ 1:1     rate = ceil = link rate
//!   ├ 1:ffff  everything else: rate = link − reserved, ceil = link
//!   └ 1:<id>  one per connection: rate = ceil = reserved rate, burst = cburst = max_burst
//!             fed by `u32 match ip dst <proxy_ip>/32` at pref <id>
//! ```
//!
//! This replaces whatever root qdisc was there (a lab's `tbf` link emulation becomes an HTB tree
//! of the same rate). The root qdisc is deleted again when the daemon exits, if it installed it.
//! Commands run with an argument vector (no shell); a failure is returned, the caller logs and
//! counts it.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::process::Command;

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
    /// The connection id cannot name an HTB class (0 is the qdisc, `ffff` the default class).
    #[error("connection id {0} cannot name an htb class")]
    BadId(u16),
}

/// Minor class id of the default (non-real-time) class.
const DEFAULT_MINOR: u16 = 0xffff;
/// Lowest rate given to the default class when reservations fill the link (HTB needs > 0).
const MIN_DEFAULT_RATE: u64 = 8_000;

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_string()).collect()
}

/// `tc` arguments that install the root HTB with the whole-frame size table.
fn root_args(ifname: &str) -> Vec<String> {
    args(&[
        "qdisc", "replace", "dev", ifname, "root", "handle", "1:", "stab", "overhead", "24", "mpu",
        "84", "htb", "default", "ffff",
    ])
}

/// `tc` arguments for an HTB class `1:<minor>` under `parent` (`add` or `change`).
fn class_args(
    verb: &str,
    ifname: &str,
    parent: &str,
    minor: u16,
    rate_bps: u64,
    ceil_bps: u64,
    burst: Option<u32>,
) -> Vec<String> {
    let mut v = args(&["class", verb, "dev", ifname, "parent", parent]);
    v.push("classid".into());
    v.push(format!("1:{minor:x}"));
    v.extend(args(&["htb", "rate"]));
    v.push(format!("{rate_bps}bit"));
    v.push("ceil".into());
    v.push(format!("{ceil_bps}bit"));
    if let Some(b) = burst {
        v.extend([
            "burst".into(),
            b.to_string(),
            "cburst".into(),
            b.to_string(),
        ]);
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
    root_installed: bool,
    /// Reserved rate per shaped connection id.
    classes: BTreeMap<u16, u64>,
}

impl KernelShaper {
    pub(super) fn new(ifname: String, link_rate_bps: u64) -> KernelShaper {
        KernelShaper {
            ifname,
            link_rate_bps,
            root_installed: false,
            classes: BTreeMap::new(),
        }
    }

    fn default_rate(&self) -> u64 {
        let reserved: u64 = self.classes.values().sum();
        self.link_rate_bps
            .saturating_sub(reserved)
            .max(MIN_DEFAULT_RATE)
    }

    fn ensure_root(&mut self) -> Result<(), TcError> {
        if self.root_installed {
            return Ok(());
        }
        let link = self.link_rate_bps;
        run_tc(&root_args(&self.ifname))?;
        self.root_installed = true;
        run_tc(&class_args("add", &self.ifname, "1:", 1, link, link, None))?;
        let rate = self.default_rate();
        run_tc(&class_args(
            "add",
            &self.ifname,
            "1:1",
            DEFAULT_MINOR,
            rate,
            link,
            None,
        ))
    }

    fn update_default(&self) -> Result<(), TcError> {
        run_tc(&class_args(
            "change",
            &self.ifname,
            "1:1",
            DEFAULT_MINOR,
            self.default_rate(),
            self.link_rate_bps,
            None,
        ))
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
        if id == 0 || id == DEFAULT_MINOR {
            return Err(TcError::BadId(id));
        }
        self.ensure_root()?;
        let ifname = &self.ifname;
        run_tc(&class_args(
            "add",
            ifname,
            "1:1",
            id,
            rate_bps,
            rate_bps,
            Some(max_burst),
        ))?;
        self.classes.insert(id, rate_bps);
        run_tc(&filter_add_args(ifname, id, proxy_ip, dst_port))?;
        self.update_default()
    }

    /// Removes the filter and class of connection `id` (both attempted; the first error wins).
    pub(super) fn remove(&mut self, id: u16) -> Result<(), TcError> {
        if self.classes.remove(&id).is_none() {
            return Ok(());
        }
        let filter = run_tc(&filter_del_args(&self.ifname, id));
        let class = run_tc(&args(&[
            "class",
            "del",
            "dev",
            &self.ifname,
            "classid",
            &format!("1:{id:x}"),
        ]));
        let default = self.update_default();
        filter.and(class).and(default)
    }

    /// Deletes the root qdisc if this daemon installed it (the kernel's default comes back).
    pub(super) fn shutdown(&mut self) -> Result<(), TcError> {
        self.classes.clear();
        if !std::mem::take(&mut self.root_installed) {
            return Ok(());
        }
        run_tc(&args(&["qdisc", "del", "dev", &self.ifname, "root"]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_counts_whole_frames() {
        assert_eq!(
            root_args("eth0").join(" "),
            "qdisc replace dev eth0 root handle 1: stab overhead 24 mpu 84 htb default ffff"
        );
    }

    #[test]
    fn connection_class_and_filter_use_hex_minor_and_exact_rate() {
        assert_eq!(
            class_args(
                "add",
                "eth0",
                "1:1",
                0x1a,
                10_000_000,
                10_000_000,
                Some(3028)
            )
            .join(" "),
            "class add dev eth0 parent 1:1 classid 1:1a htb rate 10000000bit ceil 10000000bit \
             burst 3028 cburst 3028"
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
    fn default_class_gets_what_is_left_but_never_zero() {
        let mut k = KernelShaper::new("eth0".into(), 100_000_000);
        assert_eq!(k.default_rate(), 100_000_000);
        k.classes.insert(1, 30_000_000);
        k.classes.insert(2, 20_000_000);
        assert_eq!(k.default_rate(), 50_000_000);
        k.classes.insert(3, 60_000_000);
        assert_eq!(k.default_rate(), MIN_DEFAULT_RATE);
    }

    #[test]
    fn reserved_ids_are_refused_without_running_tc() {
        let mut k = KernelShaper::new("nonexistent0".into(), 1_000_000);
        assert!(matches!(
            k.install(0xffff, Ipv4Addr::LOCALHOST, None, 1, 1),
            Err(TcError::BadId(0xffff))
        ));
        assert!(!k.root_installed);
        assert!(k.remove(5).is_ok(), "removing an unknown id is a no-op");
    }
}
