//! Configuration of the host daemon (`rtlan rtcd --config FILE` or flags), TOML as documented in
//! `docs/rtcd.md`. Everything but the interface has a default; the host's MAC and IPv4 address
//! are read from the interface when the daemon starts unless given here.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rtlan_core::rtcd::{Admission, ProxyPrefix};
use rtlan_core::units::{parse_duration, parse_rate};
use rtlan_wire::ethernet::Address;
use serde::Deserialize;

use crate::switchd::parse_mac;

/// Default client socket path.
pub const DEFAULT_SOCKET: &str = "/run/rtlan/rtcd.sock";
/// Default wait for the bandwidth manager (connecting, and each reply).
pub const DEFAULT_MANAGER_TIMEOUT: Duration = Duration::from_secs(2);

/// The configuration is unreadable or invalid.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The system error.
        #[source]
        source: std::io::Error,
    },
    /// A value is out of range or malformed (the text names the key).
    #[error("{0}")]
    Value(String),
    /// A syntax error or a bad value, at a place in the file.
    #[error("line {line}, column {column}: {message}")]
    At {
        /// 1-based line.
        line: usize,
        /// 1-based column (in characters).
        column: usize,
        /// What is wrong.
        message: String,
    },
}

/// Where each `[[policy]]` table is in the file.
#[derive(Deserialize)]
struct PolicySpans {
    policy: Option<Vec<toml::Spanned<toml::Table>>>,
}

/// `error` at its place in `text`: a syntax error at the parser's span, a bad value at its
/// key's value (the message starts with the key, `policy[N]` for the N-th rule, from 1); an
/// error no key names stays as it is.
fn locate(text: &str, error: ConfigError) -> ConfigError {
    let at = |offset: usize, message: String| {
        let (line, column) = crate::switchd::config::line_column(text, offset);
        ConfigError::At {
            line,
            column,
            message,
        }
    };
    let ConfigError::Value(message) = error else {
        return error;
    };
    let key = message.split(':').next().unwrap_or_default().trim();
    if let Some(n) = key
        .strip_prefix("policy[")
        .and_then(|r| r.strip_suffix(']'))
        .and_then(|n| n.parse::<usize>().ok())
    {
        let rule = toml::from_str::<PolicySpans>(text)
            .ok()
            .and_then(|p| p.policy)
            .and_then(|rules| rules.get(n.wrapping_sub(1)).map(|r| r.span().start));
        if let Some(offset) = rule {
            return at(offset, message);
        }
    }
    let span =
        toml::from_str::<std::collections::BTreeMap<String, toml::Spanned<toml::Value>>>(text)
            .ok()
            .and_then(|keys| keys.get(key).map(|v| v.span().start));
    match span {
        Some(offset) => at(offset, message),
        None => ConfigError::Value(message),
    }
}

/// The daemon's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The host's interface towards the first switch.
    pub interface: String,
    /// Path of the clients' Unix stream socket.
    pub socket: PathBuf,
    /// The socket file's permission bits (`socket_mode = "0660"`); `None` = what the umask
    /// leaves (root only, under the usual 022).
    pub socket_mode: Option<u32>,
    /// The socket file's group (`socket_group = "rtlan"`, a name or a number): with a mode that
    /// lets the group write, its members may reserve. `None` = root's.
    pub socket_group: Option<String>,
    /// Paper-compatible addressing (proxy IPs 1.1.X.Y, proxy MACs FF:FF:FF:FF:X:Y).
    pub paper: bool,
    /// Source IP of SETUP; `None` = the interface's IPv4 address.
    pub host_ip: Option<Ipv4Addr>,
    /// Source MAC of control frames; `None` = the interface's MAC.
    pub host_mac: Option<Address>,
    /// Rate of the host's link, bit/s; `None` = read from the interface at start
    /// ([`crate::rtcd::link_speed`]).
    pub link_rate_bps: Option<u64>,
    /// Proxy prefix; `None` = 198.19.0.0/16 (1.1.0.0/16 with `paper`).
    pub proxy_prefix: Option<ProxyPrefix>,
    /// Share of the link real-time reservations may take, percent.
    pub realtime_cap_percent: u8,
    /// Wait before the first SETUP/TEARDOWN retransmission.
    pub retransmit_initial: Duration,
    /// Transmissions of a request in all.
    pub max_attempts: u8,
    /// Period of the orphan (dead PID) check.
    pub reclaim_period: Duration,
    /// Hop limit written into SETUP.
    pub hop_limit: u8,
    /// Period of REFRESH for open connections; zero = none.
    pub refresh_period: Duration,
    /// How long a connection torn down by a spanning-tree topology change is re-signalled on
    /// NO_ROUTE before it is reported revoked.
    pub topology_resignal: Duration,
    /// Per-hop (`local`, default), `central` (bandwidth manager only) or `both`.
    pub admission: Admission,
    /// The bandwidth manager's TCP address (required unless admission is local).
    pub manager: Option<SocketAddr>,
    /// Wait for the manager: connecting, and each reply.
    pub manager_timeout: Duration,
    /// The token presented to the manager in every request (`docs/bwm.md` § Tokens); none =
    /// none sent (an open manager).
    pub manager_token: Option<String>,
    /// Give traffic to the proxy prefix its own HTB class, served before the host's other
    /// traffic, on the interface's egress (replaces its root qdisc while the daemon runs).
    pub priority_queue: bool,
    /// The host's term in every per-hop bound (`docs/delay.md` § "The host's term").
    pub host_delay: Duration,
    /// The host's wake-up lateness budget, part of `host_delay`.
    pub lateness_budget: Duration,
    /// Keys of the link to the first switch (`crate::keys`); empty = unauthenticated.
    pub keys: rtlan_core::auth::KeyChain,
    /// EtheReal SETUP (`"ethereal"`, default) or RSVP across routers (`"rsvp"`).
    pub signalling: rtlan_core::rtcd::Signalling,
    /// RSVP's refresh period R.
    pub rsvp_refresh: Duration,
    /// Under RSVP, whether this host reserves for every sender whose Path reaches it.
    pub rsvp_accept: bool,
    /// Under RSVP, the service it reserves (`guaranteed` or `controlled-load`).
    pub rsvp_service: rtlan_core::rtcd::RsvpService,
    /// Who may reserve what (`[[policy]]`, names resolved to ids); empty = no policy.
    pub policy: rtlan_core::rtcd::policy::Policy,
    /// The Prometheus endpoint's address (`GET /metrics`, docs/metrics.md); `None` = off.
    pub metrics_listen: Option<std::net::SocketAddr>,
}

/// One `[[policy]]` table: exactly one of `user`, `group`, `everyone`, and the limits.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    /// A user name or number.
    user: Option<toml::Value>,
    /// A group name or number.
    group: Option<toml::Value>,
    everyone: Option<bool>,
    deny: Option<bool>,
    max_rate: Option<String>,
    max_total_rate: Option<String>,
    max_connections: Option<u32>,
}

/// A user or group given by name or number, resolved with `lookup`.
fn principal_id(
    value: &toml::Value,
    what: &str,
    lookup: fn(&str) -> Option<u32>,
) -> Result<(u32, String), ConfigError> {
    match value {
        toml::Value::Integer(n) => u32::try_from(*n)
            .map(|id| (id, format!("{what} {id}")))
            .map_err(|_| ConfigError::Value(format!("policy: {what} {n} is not an id"))),
        toml::Value::String(name) => lookup(name.trim())
            .map(|id| (id, format!("{what} {}", name.trim())))
            .ok_or_else(|| ConfigError::Value(format!("policy: no {what} named `{name}`"))),
        _ => Err(ConfigError::Value(format!(
            "policy: {what} is a name or a number"
        ))),
    }
}

impl RawRule {
    fn resolve(self) -> Result<rtlan_core::rtcd::policy::Rule, ConfigError> {
        use rtlan_core::rtcd::policy::{Rule, Who};
        let (who, label) = match (&self.user, &self.group, self.everyone) {
            (Some(u), None, None | Some(false)) => {
                let (uid, label) = principal_id(u, "user", super::policy::user_id)?;
                (Who::Uid(uid), label)
            }
            (None, Some(g), None | Some(false)) => {
                let (gid, label) = principal_id(g, "group", super::policy::group_id)?;
                (Who::Gid(gid), label)
            }
            (None, None, Some(true)) => (Who::Everyone, "everyone".to_string()),
            _ => {
                return Err(ConfigError::Value(
                    "policy: each rule names exactly one of user, group or everyone = true".into(),
                ))
            }
        };
        let rate = |key: &str, text: Option<String>| {
            text.map(|t| {
                parse_rate(&t).map_err(|e| ConfigError::Value(format!("policy: {key}: {e}")))
            })
            .transpose()
        };
        Ok(Rule {
            who,
            deny: self.deny.unwrap_or(false),
            max_rate_bps: rate("max_rate", self.max_rate)?,
            max_total_bps: rate("max_total_rate", self.max_total_rate)?,
            max_connections: self.max_connections,
            label,
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    interface: String,
    socket: Option<PathBuf>,
    socket_mode: Option<String>,
    socket_group: Option<String>,
    paper: Option<bool>,
    host_ip: Option<String>,
    host_mac: Option<String>,
    link_rate: Option<String>,
    proxy_prefix: Option<String>,
    realtime_cap_percent: Option<u8>,
    retransmit_initial: Option<String>,
    max_attempts: Option<u8>,
    reclaim_period: Option<String>,
    hop_limit: Option<u8>,
    refresh_period: Option<String>,
    topology_resignal: Option<String>,
    admission: Option<String>,
    manager: Option<String>,
    manager_timeout: Option<String>,
    manager_token: Option<String>,
    priority_queue: Option<bool>,
    host_delay: Option<String>,
    lateness_budget: Option<String>,
    keys: Option<Vec<crate::keys::RawKey>>,
    signalling: Option<String>,
    rsvp_refresh: Option<String>,
    rsvp_accept: Option<bool>,
    rsvp_service: Option<String>,
    policy: Option<Vec<RawRule>>,
    metrics_listen: Option<std::net::SocketAddr>,
}

/// Parses `local`, `central` or `both`.
pub fn parse_admission(text: &str) -> Result<Admission, ConfigError> {
    match text.trim() {
        "local" => Ok(Admission::Local),
        "central" => Ok(Admission::Central),
        "both" => Ok(Admission::Both),
        other => Err(ConfigError::Value(format!(
            "admission: `{other}` is not local, central or both"
        ))),
    }
}

/// Parses `a.b.c.d/len` into a [`ProxyPrefix`].
pub fn parse_prefix(text: &str) -> Result<ProxyPrefix, ConfigError> {
    let bad = || ConfigError::Value(format!("proxy_prefix: `{text}` is not like 198.19.0.0/16"));
    let (ip, len) = text.trim().split_once('/').ok_or_else(bad)?;
    let ip: Ipv4Addr = ip.parse().map_err(|_| bad())?;
    let len: u8 = len.parse().map_err(|_| bad())?;
    ProxyPrefix::new(ip, len).map_err(|e| ConfigError::Value(format!("proxy_prefix: {e}")))
}

impl Config {
    /// Defaults for `interface` and `socket` (docs/rtcd.md lists them).
    pub fn new(interface: &str, socket: &Path) -> Config {
        let core = rtlan_core::rtcd::Config::new(Address([0; 6]), Ipv4Addr::UNSPECIFIED, 1);
        Config {
            interface: interface.to_string(),
            socket: socket.to_path_buf(),
            socket_mode: None,
            socket_group: None,
            paper: false,
            host_ip: None,
            host_mac: None,
            link_rate_bps: None,
            proxy_prefix: None,
            realtime_cap_percent: core.realtime_cap_percent,
            retransmit_initial: core.retransmit_initial,
            max_attempts: core.max_attempts,
            reclaim_period: core.reclaim_period,
            hop_limit: core.hop_limit,
            refresh_period: core.refresh_period,
            topology_resignal: core.topology_resignal,
            admission: Admission::Local,
            manager: None,
            manager_timeout: DEFAULT_MANAGER_TIMEOUT,
            manager_token: None,
            priority_queue: true,
            host_delay: core.host_delay,
            lateness_budget: core.lateness_budget,
            keys: rtlan_core::auth::KeyChain::default(),
            signalling: core.signalling,
            rsvp_refresh: core.rsvp_refresh,
            rsvp_accept: core.rsvp_accept,
            rsvp_service: core.rsvp_service,
            policy: rtlan_core::rtcd::policy::Policy::default(),
            metrics_listen: None,
        }
    }

    /// Reads and validates a TOML file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Config::from_toml_str(&text)
    }

    /// Parses and validates TOML text; every error names its line and column where it has one.
    pub fn from_toml_str(text: &str) -> Result<Config, ConfigError> {
        Config::parse_toml(text).map_err(|e| locate(text, e))
    }

    fn parse_toml(text: &str) -> Result<Config, ConfigError> {
        let raw: RawConfig = toml::from_str(text).map_err(|e| {
            let (line, column) =
                crate::switchd::config::line_column(text, e.span().map_or(0, |s| s.start));
            ConfigError::At {
                line,
                column,
                message: e.message().to_string(),
            }
        })?;
        check_ifname(&raw.interface)?;
        let socket = raw.socket.unwrap_or_else(|| PathBuf::from(DEFAULT_SOCKET));
        let mut config = Config::new(&raw.interface, &socket);
        config.paper = raw.paper.unwrap_or(false);
        if let Some(mode) = raw.socket_mode {
            let bits = u32::from_str_radix(mode.trim().trim_start_matches("0o"), 8)
                .ok()
                .filter(|m| *m <= 0o777)
                .ok_or_else(|| {
                    ConfigError::Value(format!(
                        "socket_mode: `{mode}` is not an octal mode like \"0660\""
                    ))
                })?;
            config.socket_mode = Some(bits);
        }
        if let Some(group) = raw.socket_group {
            if group.trim().is_empty() {
                return Err(ConfigError::Value(
                    "socket_group: a group name or number".into(),
                ));
            }
            config.socket_group = Some(group.trim().to_string());
        }
        if let Some(ip) = raw.host_ip {
            let ip = ip.parse().map_err(|_| {
                ConfigError::Value(format!("host_ip: `{ip}` is not an IPv4 address"))
            })?;
            config.host_ip = Some(ip);
        }
        if let Some(mac) = raw.host_mac {
            match parse_mac(&mac) {
                Some(m) if m.is_unicast() => config.host_mac = Some(m),
                _ => {
                    return Err(ConfigError::Value(format!(
                        "host_mac: `{mac}` is not a unicast MAC address"
                    )))
                }
            }
        }
        if let Some(rate) = raw.link_rate {
            config.link_rate_bps =
                Some(parse_rate(&rate).map_err(|e| ConfigError::Value(format!("link_rate: {e}")))?);
        }
        if let Some(prefix) = raw.proxy_prefix {
            config.proxy_prefix = Some(parse_prefix(&prefix)?);
        }
        if let Some(cap) = raw.realtime_cap_percent {
            config.realtime_cap_percent = cap;
        }
        if let Some(d) = raw.retransmit_initial {
            config.retransmit_initial = parse_duration(&d)
                .map_err(|e| ConfigError::Value(format!("retransmit_initial: {e}")))?;
        }
        if let Some(n) = raw.max_attempts {
            config.max_attempts = n;
        }
        if let Some(d) = raw.reclaim_period {
            config.reclaim_period = parse_duration(&d)
                .map_err(|e| ConfigError::Value(format!("reclaim_period: {e}")))?;
        }
        if let Some(h) = raw.hop_limit {
            config.hop_limit = h;
        }
        if let Some(d) = raw.refresh_period {
            config.refresh_period = parse_duration(&d)
                .map_err(|e| ConfigError::Value(format!("refresh_period: {e}")))?;
        }
        if let Some(d) = raw.topology_resignal {
            config.topology_resignal = parse_duration(&d)
                .map_err(|e| ConfigError::Value(format!("topology_resignal: {e}")))?;
        }
        if let Some(a) = raw.admission {
            config.admission = parse_admission(&a)?;
        }
        if let Some(m) = raw.manager {
            config.manager = Some(m.trim().parse().map_err(|_| {
                ConfigError::Value(format!("manager: `{m}` is not like 198.18.0.1:7470"))
            })?);
        }
        if let Some(d) = raw.manager_timeout {
            config.manager_timeout = parse_duration(&d)
                .ok()
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    ConfigError::Value(format!("manager_timeout: `{d}` is not a positive duration"))
                })?;
        }
        if let Some(t) = raw.manager_token {
            if t.is_empty() {
                return Err(ConfigError::Value(
                    "manager_token: must not be empty".to_string(),
                ));
            }
            config.manager_token = Some(t);
        }
        if let Some(p) = raw.priority_queue {
            config.priority_queue = p;
        }
        if let Some(d) = raw.host_delay {
            config.host_delay =
                parse_duration(&d).map_err(|e| ConfigError::Value(format!("host_delay: {e}")))?;
        }
        if let Some(d) = raw.lateness_budget {
            config.lateness_budget = parse_duration(&d)
                .map_err(|e| ConfigError::Value(format!("lateness_budget: {e}")))?;
        }
        if let Some(keys) = raw.keys {
            config.keys = crate::keys::key_chain(&keys)
                .map_err(|e| ConfigError::Value(format!("keys: {e}")))?;
        }
        if let Some(s) = raw.signalling {
            config.signalling = match s.trim() {
                "ethereal" => rtlan_core::rtcd::Signalling::Ethereal,
                "rsvp" => rtlan_core::rtcd::Signalling::Rsvp,
                other => {
                    return Err(ConfigError::Value(format!(
                        "signalling: `{other}` is not ethereal or rsvp"
                    )))
                }
            };
        }
        if let Some(d) = raw.rsvp_refresh {
            config.rsvp_refresh = parse_duration(&d)
                .ok()
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    ConfigError::Value(format!("rsvp_refresh: `{d}` is not a positive duration"))
                })?;
        }
        if let Some(a) = raw.rsvp_accept {
            config.rsvp_accept = a;
        }
        config.metrics_listen = raw.metrics_listen;
        if let Some(rules) = raw.policy {
            config.policy.rules = rules
                .into_iter()
                .enumerate()
                .map(|(i, rule)| {
                    rule.resolve().map_err(|e| match e {
                        ConfigError::Value(m) => ConfigError::Value(m.replacen(
                            "policy:",
                            &format!("policy[{}]:", i + 1),
                            1,
                        )),
                        other => other,
                    })
                })
                .collect::<Result<_, _>>()?;
        }
        if let Some(s) = raw.rsvp_service {
            config.rsvp_service = match s.trim() {
                "guaranteed" => rtlan_core::rtcd::RsvpService::Guaranteed,
                "controlled-load" => rtlan_core::rtcd::RsvpService::ControlledLoad,
                other => {
                    return Err(ConfigError::Value(format!(
                        "rsvp_service: `{other}` is not guaranteed or controlled-load"
                    )))
                }
            };
        }
        config.check_manager()?;
        // Catch what the core would refuse now, with the file in mind (a 1 Gbit/s link where
        // the file leaves the rate to the interface).
        config.core_config(
            Address([2, 0, 0, 0, 0, 1]),
            Ipv4Addr::new(198, 18, 0, 1),
            1_000_000_000,
        )?;
        Ok(config)
    }

    /// Central admission needs a manager address; per-hop admission takes none.
    pub fn check_manager(&self) -> Result<(), ConfigError> {
        match (self.admission, self.manager) {
            (Admission::Central | Admission::Both, None) => Err(ConfigError::Value(
                "manager: admission = central or both needs the manager's address".to_string(),
            )),
            (Admission::Local, Some(_)) => Err(ConfigError::Value(
                "manager: only used with admission = central or both".to_string(),
            )),
            _ => Ok(()),
        }
    }

    /// The core's configuration for a host with `host_mac`, `host_ip` and a link of
    /// `link_rate_bps` (the configured values win over these), validated by the core.
    pub fn core_config(
        &self,
        host_mac: Address,
        host_ip: Ipv4Addr,
        link_rate_bps: u64,
    ) -> Result<rtlan_core::rtcd::Config, ConfigError> {
        let mac = self.host_mac.unwrap_or(host_mac);
        let ip = self.host_ip.unwrap_or(host_ip);
        let link = self.link_rate_bps.unwrap_or(link_rate_bps);
        let mut core = if self.paper {
            rtlan_core::rtcd::Config::paper(mac, ip, link)
        } else {
            rtlan_core::rtcd::Config::new(mac, ip, link)
        };
        if let Some(prefix) = self.proxy_prefix {
            core.proxy_prefix = prefix;
        }
        core.realtime_cap_percent = self.realtime_cap_percent;
        core.retransmit_initial = self.retransmit_initial;
        core.max_attempts = self.max_attempts;
        core.reclaim_period = self.reclaim_period;
        core.hop_limit = self.hop_limit;
        core.refresh_period = self.refresh_period;
        core.topology_resignal = self.topology_resignal;
        core.admission = self.admission;
        core.host_delay = self.host_delay;
        core.lateness_budget = self.lateness_budget;
        core.keys = self.keys.clone();
        core.signalling = self.signalling;
        core.rsvp_refresh = self.rsvp_refresh;
        core.rsvp_accept = self.rsvp_accept;
        core.rsvp_service = self.rsvp_service;
        core.policy = self.policy.clone();
        // Validate by construction; the instant does not matter.
        rtlan_core::rtcd::Rtcd::new(core.clone(), rtlan_core::time::Instant::from_nanos(0))
            .map_err(|e| ConfigError::Value(e.to_string()))?;
        Ok(core)
    }
}

/// Refuses names that cannot be Linux interface names.
fn check_ifname(name: &str) -> Result<(), ConfigError> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ || name.contains(['/', ' ', '\0']) {
        return Err(ConfigError::Value(format!(
            "interface: `{name}` is not a valid interface name"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The core configuration of `c` for host `02:00:00:00:00:0N` / `198.18.0.N` on a
    /// 100 Mbit/s link.
    fn core_of(c: &Config, n: u8) -> rtlan_core::rtcd::Config {
        c.core_config(
            Address([2, 0, 0, 0, 0, n]),
            Ipv4Addr::new(198, 18, 0, n),
            100_000_000,
        )
        .expect("valid")
    }

    #[test]
    fn the_socket_mode_and_group_are_read() {
        let c = Config::from_toml_str(
            "interface = \"eth0\"\nsocket_mode = \"0660\"\nsocket_group = \"rtlan\"\n",
        )
        .expect("valid");
        assert_eq!(c.socket_mode, Some(0o660));
        assert_eq!(c.socket_group.as_deref(), Some("rtlan"));
        let plain = Config::from_toml_str("interface = \"eth0\"\n").expect("valid");
        assert_eq!((plain.socket_mode, plain.socket_group), (None, None));
        for bad in [
            "socket_mode = \"0999\"",
            "socket_mode = \"rw\"",
            "socket_mode = \"1777\"",
            "socket_group = \" \"",
        ] {
            let text = format!("interface = \"eth0\"\n{bad}\n");
            assert!(Config::from_toml_str(&text).is_err(), "{bad}");
        }
    }

    #[test]
    fn keys_reach_the_core() {
        let c = Config::from_toml_str(
            "interface = \"eth0\"\nkeys = [{ id = 3, secret = \"000102030405060708090a0b0c0d0e0f\" }]\n",
        )
        .expect("valid");
        let core = core_of(&c, 1);
        assert_eq!(core.keys.keys()[0].id, 3);
        assert!(Config::from_toml_str("interface = \"eth0\"\n")
            .expect("valid")
            .keys
            .is_empty());
        let error =
            Config::from_toml_str("interface = \"eth0\"\nkeys = [{ id = 3, secret = \"00\" }]\n")
                .expect_err("short secret");
        assert!(error.to_string().contains("keys: key 3"), "{error}");
    }

    #[test]
    fn every_error_names_its_line_and_column() {
        let at = |text: &str| match Config::from_toml_str(text).expect_err(text) {
            ConfigError::At {
                line,
                column,
                message,
            } => (line, column, message),
            other => panic!("{text}: no place in {other}"),
        };
        // Syntax and unknown keys: where the parser stopped.
        assert_eq!(at("interface = \"eth0\"\nlink_rat = \"1gbit\"\n").0, 2);
        assert_eq!(at("interface = \"eth0\"\n\nlink_rate = \n").0, 3);
        // A bad value: at the value.
        let (line, column, message) = at("interface = \"eth0\"\nlink_rate = \"fast\"\n");
        assert_eq!((line, column), (2, 13));
        assert!(message.starts_with("link_rate:"), "{message}");
        // A bad rule: at its table.
        let text = "interface = \"eth0\"\n[[policy]]\neveryone = true\n\n[[policy]]\nuser = \"no-such-user-rtlan\"\n";
        let (line, _, message) = at(text);
        assert_eq!(line, 5, "{message}");
        assert!(message.starts_with("policy[2]:"), "{message}");
    }

    #[test]
    fn policy_rules_resolve_names_and_reach_the_core_in_order() {
        use rtlan_core::rtcd::policy::Who;
        let text = r#"
            interface = "eth0"
            [[policy]]
            user = "root"
            deny = true
            [[policy]]
            group = 29
            max_rate = "20mbit"
            max_total_rate = "40mbit"
            max_connections = 4
            [[policy]]
            everyone = true
            max_rate = "1mbit"
        "#;
        let c = Config::from_toml_str(text).expect("valid");
        let core = core_of(&c, 1);
        let rules = &core.policy.rules;
        assert_eq!(rules.len(), 3);
        assert_eq!(
            (rules[0].who, rules[0].deny, rules[0].label.as_str()),
            (Who::Uid(0), true, "user root")
        );
        assert_eq!(rules[1].who, Who::Gid(29));
        assert_eq!(
            (
                rules[1].max_rate_bps,
                rules[1].max_total_bps,
                rules[1].max_connections
            ),
            (Some(20_000_000), Some(40_000_000), Some(4))
        );
        assert_eq!(
            (rules[2].who, rules[2].max_rate_bps),
            (Who::Everyone, Some(1_000_000))
        );
        for (bad, names) in [
            (
                "[[policy]]\nuser = \"no-such-user-rtlan\"\n",
                "no user named",
            ),
            (
                "[[policy]]\ngroup = \"root\"\nuser = \"root\"\n",
                "exactly one",
            ),
            ("[[policy]]\nmax_rate = \"1mbit\"\n", "exactly one"),
            (
                "[[policy]]\neveryone = true\nmax_rate = \"fast\"\n",
                "max_rate",
            ),
            ("[[policy]]\nuser = -1\n", "not an id"),
            (
                "[[policy]]\nuser = \"root\"\nmax_rat = \"1mbit\"\n",
                "max_rat",
            ),
        ] {
            let text = format!("interface = \"eth0\"\n{bad}");
            let error = Config::from_toml_str(&text).expect_err(bad);
            assert!(error.to_string().contains(names), "{bad}: {error}");
        }
    }

    #[test]
    fn the_rsvp_service_reaches_the_core() {
        use rtlan_core::rtcd::RsvpService;
        let base = "interface = \"eth0\"\nsignalling = \"rsvp\"\n";
        let core =
            |text: &str| core_of(&Config::from_toml_str(text).expect("valid"), 1).rsvp_service;
        assert_eq!(core(base), RsvpService::Guaranteed);
        let cl = format!("{base}rsvp_service = \"controlled-load\"\n");
        assert_eq!(core(&cl), RsvpService::ControlledLoad);
        let bad = format!("{base}rsvp_service = \"best-effort\"\n");
        let error = Config::from_toml_str(&bad).expect_err("unknown service");
        assert!(error.to_string().contains("rsvp_service"), "{error}");
    }

    #[test]
    fn minimal_file_takes_defaults() {
        let c = Config::from_toml_str("interface = \"eth0\"\n").expect("valid");
        assert_eq!(c.interface, "eth0");
        assert_eq!(c.socket, PathBuf::from(DEFAULT_SOCKET));
        assert_eq!(c.link_rate_bps, None, "read from the interface");
        assert!(!c.paper);
        assert_eq!(
            (c.host_delay, c.lateness_budget),
            (
                rtlan_core::rtcd::DEFAULT_HOST_DELAY,
                rtlan_core::rtcd::DEFAULT_LATENESS_BUDGET
            )
        );
        let c = Config::from_toml_str(
            "interface = \"eth0\"\nhost_delay = \"5ms\"\nlateness_budget = \"1ms\"\n",
        )
        .expect("valid");
        let core = core_of(&c, 1);
        assert_eq!(
            (core.host_delay, core.lateness_budget),
            (Duration::from_millis(5), Duration::from_millis(1))
        );
        let core = core_of(&c, 9);
        assert_eq!(core.proxy_prefix, ProxyPrefix::DEFAULT);
        assert_eq!(core.host_ip, Ipv4Addr::new(198, 18, 0, 9));
        assert_eq!(core.realtime_cap_percent, 60);
        assert_eq!(core.refresh_period, Duration::from_secs(10));
    }

    #[test]
    fn full_file_overrides_everything() {
        let text = r#"
            interface = "eth1"
            socket = "/tmp/x.sock"
            paper = true
            host_ip = "198.18.0.7"
            host_mac = "02:00:00:00:00:07"
            link_rate = "1gbit"
            proxy_prefix = "198.19.4.0/22"
            realtime_cap_percent = 50
            retransmit_initial = "20ms"
            max_attempts = 3
            reclaim_period = "5s"
            hop_limit = 4
            refresh_period = "2s"
            topology_resignal = "14s"
            admission = "central"
            manager = "198.18.0.1:7470"
            manager_timeout = "500ms"
            manager_token = "tok-a"
        "#;
        let c = Config::from_toml_str(text).expect("valid");
        let core = core_of(&c, 9);
        assert_eq!(core.host_ip, Ipv4Addr::new(198, 18, 0, 7));
        assert_eq!(core.host_mac, Address([2, 0, 0, 0, 0, 7]));
        assert_eq!(core.link_rate_bps, 1_000_000_000);
        assert_eq!(core.proxy_prefix.to_string(), "198.19.4.0/22");
        assert_eq!(core.plan, rtlan_wire::control::ProxyMacPlan::paper());
        assert_eq!(core.retransmit_initial, Duration::from_millis(20));
        assert_eq!(core.max_attempts, 3);
        assert_eq!(core.reclaim_period, Duration::from_secs(5));
        assert_eq!(core.hop_limit, 4);
        assert_eq!(core.refresh_period, Duration::from_secs(2));
        assert_eq!(core.topology_resignal, Duration::from_secs(14));
        assert_eq!(core.realtime_cap_percent, 50);
        assert_eq!(core.admission, Admission::Central);
        assert_eq!(c.manager, Some("198.18.0.1:7470".parse().expect("literal")));
        assert_eq!(c.manager_timeout, Duration::from_millis(500));
        assert_eq!(c.manager_token.as_deref(), Some("tok-a"));
    }

    #[test]
    fn paper_mode_uses_paper_prefix() {
        let c = Config::from_toml_str("interface = \"eth0\"\npaper = true\n").expect("valid");
        let core = core_of(&c, 9);
        assert_eq!(core.proxy_prefix, ProxyPrefix::PAPER);
    }

    #[test]
    fn bad_files_are_refused_with_the_key_named() {
        for (text, key) in [
            ("", "interface"),
            ("interface = \"eth0\"\nbogus = 1\n", "bogus"),
            ("interface = \"a/b\"\n", "interface"),
            ("interface = \"eth0\"\nhost_ip = \"1.2.3\"\n", "host_ip"),
            (
                "interface = \"eth0\"\nhost_mac = \"01:00:00:00:00:01\"\n",
                "host_mac",
            ),
            ("interface = \"eth0\"\nlink_rate = \"fast\"\n", "link_rate"),
            (
                "interface = \"eth0\"\nrefresh_period = \"soon\"\n",
                "refresh_period",
            ),
            (
                "interface = \"eth0\"\nproxy_prefix = \"198.19.0.0\"\n",
                "proxy_prefix",
            ),
            (
                "interface = \"eth0\"\nproxy_prefix = \"198.19.0.0/31\"\n",
                "proxy_prefix",
            ),
            (
                "interface = \"eth0\"\nreclaim_period = \"soon\"\n",
                "reclaim_period",
            ),
            ("interface = \"eth0\"\nrealtime_cap_percent = 101\n", "cap"),
            ("interface = \"eth0\"\nmax_attempts = 0\n", "attempts"),
            ("interface = \"eth0\"\nadmission = \"global\"\n", "admission"),
            ("interface = \"eth0\"\nadmission = \"central\"\n", "manager"),
            (
                "interface = \"eth0\"\nmanager = \"198.18.0.1:7470\"\n",
                "manager",
            ),
            (
                "interface = \"eth0\"\nadmission = \"both\"\nmanager = \"198.18.0.1\"\n",
                "manager",
            ),
            (
                "interface = \"eth0\"\nadmission = \"central\"\nmanager = \"198.18.0.1:1\"\nmanager_timeout = \"0s\"\n",
                "manager_timeout",
            ),
            ("interface = \"eth0\"\nhost_delay = \"2\"\n", "host_delay"),
            (
                "interface = \"eth0\"\nadmission = \"central\"\nmanager = \"198.18.0.1:1\"\nmanager_token = \"\"\n",
                "manager_token",
            ),
            (
                "interface = \"eth0\"\nhost_delay = \"300us\"\nlateness_budget = \"400us\"\n",
                "lateness_budget must not exceed host_delay",
            ),
        ] {
            let err = Config::from_toml_str(text).expect_err(text).to_string();
            assert!(err.contains(key), "{text:?}: {err}");
        }
    }
}
