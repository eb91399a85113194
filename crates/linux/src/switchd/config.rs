//! The switch daemon's configuration file (TOML; documented in `docs/switch.md`).
//!
//! Parsed in two steps: serde reads a raw form that keeps the source span of every value
//! (`toml::Spanned`), then validation turns it into [`Config`], so that every error — syntax,
//! unknown key, bad unit, duplicate port — names the line it is on.

use std::net::Ipv4Addr;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rtlan_core::auth::KeyChain;
use rtlan_core::egress::SchedulerKind;
use rtlan_core::switch::rt::{
    DEFAULT_CPU_BUDGET_PERCENT, DEFAULT_CPU_COST_PER_CONNECTION, DEFAULT_RT_BUFFER_BYTES,
    DEFAULT_RT_CAP_PERCENT,
};
use rtlan_core::switch::sched::{DEFAULT_WINDOW, MAX_CYCLE, MIN_CYCLE};
use rtlan_core::switch::{
    PortConfig, PortRole, PortSecurity, ProtectConfig, RtConfig, SwitchConfig, UnknownUnicast,
    DEFAULT_LATENESS_BUDGET, DEFAULT_MAX_CONNECTIONS, DEFAULT_REFRESH_TIMEOUT,
    DEFAULT_RESHAPE_ALLOWANCE, DEFAULT_RESHAPE_BUFFER_BYTES, MAX_NRT_QUEUE_BYTES,
    MAX_PENDING_CAPACITY,
};
pub use rtlan_core::units::format_duration;
use rtlan_core::units::{format_rate, parse_duration, parse_rate};
use rtlan_core::Medium;
use rtlan_wire::ethernet::Address;
use serde::Deserialize;
use toml::Spanned;

/// Largest `max_connections`: a connection id is 16 bits per link, and each connection costs
/// scheduler and table memory up front.
const MAX_CONNECTIONS_LIMIT: usize = 1 << 20;

/// Default SCHED_FIFO priority of the data plane: above every normal process (compilers, traffic
/// tools), so a busy host cannot stall the switch for milliseconds; low among real-time ones. The
/// thread sleeps when idle, and the kernel's real-time throttling (95 % by default) still applies.
pub(crate) const DEFAULT_REALTIME_PRIORITY: u8 = 20;

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The system error.
        #[source]
        source: std::io::Error,
    },
    /// A syntax error or a bad value, at a place in the file.
    #[error("line {line}, column {column}: {message}")]
    Invalid {
        /// 1-based line.
        line: usize,
        /// 1-based column (in characters).
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// The file has no `[[port]]` table.
    #[error(
        "the configuration has no [[port]] tables; a switch or router needs at least one port"
    )]
    NoPorts,
}

/// One switch port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortSpec {
    /// The interface to open.
    pub ifname: String,
    /// Line rate output is paced at, in bits per second; `None` = unpaced.
    pub rate_bps: Option<u64>,
    /// Who sits at the other end: `auto` (learnt from HELLOs), `host` or `trunk`.
    pub role: PortRole,
    /// The link's keys (`crate::keys`); empty = control messages unauthenticated.
    pub keys: KeyChain,
}

/// How admission learns the scheduler's cost per connection per cycle (EtheReal §4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuCost {
    /// A configured cost.
    Fixed(Duration),
    /// Measured at start-up on a scratch scheduler (`cpu_cost_per_connection = "calibrate"`).
    Calibrate,
}

/// The switch daemon's configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Name used in logs.
    pub name: String,
    /// Management IP the switch answers ARP for.
    pub mgmt_ip: Option<Ipv4Addr>,
    /// The switch's own MAC; `None` = the first port's MAC.
    pub mac: Option<Address>,
    /// Unknown-unicast policy.
    pub unknown_unicast: UnknownUnicast,
    /// Scheduling cycle time.
    pub cycle_time: Duration,
    /// Learning-table ageing time.
    pub ageing_time: Duration,
    /// Frames held while their destination is probed.
    pub pending_capacity: usize,
    /// How long a held frame waits for its destination.
    pub pending_timeout: Duration,
    /// Non-real-time queue bound per port in bytes; `None` = the core's default.
    pub nrt_queue_bytes: Option<usize>,
    /// Path of the Unix control socket; `None` = no control socket.
    pub control_socket: Option<PathBuf>,
    /// Address of the Prometheus `GET /metrics` endpoint (docs/metrics.md); `None` = off.
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// CPU to pin the data-plane thread to.
    pub cpu: Option<usize>,
    /// Spin instead of sleeping in `epoll_wait` (benchmarks only).
    pub busy_poll: bool,
    /// Send with `PACKET_QDISC_BYPASS` (skips `tc` qdiscs on the ports).
    pub qdisc_bypass: bool,
    /// The ports' sockets (docs/afxdp.md); AF_XDP ports always bypass the qdiscs.
    pub data_plane: crate::xdp::DataPlane,
    /// Forward best-effort frames between open AF_XDP ports in their XDP programs
    /// (docs/fastpath.md); default on.
    pub fast_path: bool,
    /// Slots per RX and per TX ring of each port.
    pub ring_frames: usize,
    /// Kick each unpaced AF_PACKET port's TX ring from a thread of the port's own
    /// (docs/threads.md); paced ports always kick inline. Default off.
    pub tx_threads: bool,
    /// CPUs for those threads, given to the ports in turn; empty = any CPU but `cpu`'s.
    pub tx_cpus: Vec<usize>,
    /// Each unpaced port receives in a kernel thread of its own (threaded NAPI, with GRO on:
    /// docs/threads.md "Threaded receive"); paced ports keep the softirq. Default off.
    pub napi_threads: bool,
    /// A real-time connection with no REFRESH for this long is released; zero = never.
    pub refresh_timeout: Duration,
    /// Share of each output link real-time reservations may book, percent (paper: 60).
    pub realtime_cap_percent: u8,
    /// Backplane capacity for admission, bit/s; `None` = unlimited.
    pub backplane_bps: Option<u64>,
    /// Scheduler cost per connection per cycle, for CPU admission.
    pub cpu_cost_per_connection: CpuCost,
    /// Share of the cycle the scheduler may spend on connections, percent.
    pub cpu_budget_percent: u8,
    /// Memory for real-time connection queues, bytes.
    pub rt_buffer_bytes: usize,
    /// Size of the connection table (most connections through this switch).
    pub max_connections: usize,
    /// SCHED_FIFO priority of the data-plane thread (1..=99); 0 = normal scheduling.
    pub realtime_priority: u8,
    /// EtheReal §3.3 preemptive discard on host-facing ports.
    pub preemptive_discard: bool,
    /// Sliding window of the preemptive-discard meter.
    pub discard_window: Duration,
    /// How late a frame may be handed out at this hop through late wake-ups (receive and send
    /// together): part of every connection's delay bound (docs/delay.md §4).
    pub lateness_budget: Duration,
    /// How long the first switch may hold a frame that arrived ahead of its connection's
    /// T-SPEC until it conforms, instead of dropping it (docs/delay.md §3); zero = police.
    pub reshape_allowance: Duration,
    /// Bytes of such held frames the switch keeps at most.
    pub reshape_buffer_bytes: usize,
    /// Propagation delay of the output links, part of every hop's latency.
    pub link_delay: Duration,
    /// Real-time scheduler of every output port.
    pub scheduler: SchedulerKind,
    /// Control-plane protection (`[protect]`).
    pub protect: ProtectConfig,
    /// The ports, in `PortId` order.
    pub ports: Vec<PortSpec>,
    /// Spanning tree (`[stp]`, per-port `stp_cost` / `stp_priority`); off by default.
    pub stp: super::StpSpec,
}

/// Default [`Config::cycle_time`] (EtheReal: 10 ms).
pub const DEFAULT_CYCLE_TIME: Duration = Duration::from_millis(10);
/// Default [`Config::ageing_time`].
pub const DEFAULT_AGEING_TIME: Duration = Duration::from_secs(300);
/// Default [`Config::pending_capacity`].
pub const DEFAULT_PENDING_CAPACITY: usize = 256;
/// Default [`Config::pending_timeout`].
pub const DEFAULT_PENDING_TIMEOUT: Duration = Duration::from_millis(200);
/// Default [`Config::ring_frames`].
pub const DEFAULT_RING_FRAMES: usize = 2048;
/// Largest accepted [`Config::ring_frames`].
pub const MAX_RING_FRAMES: usize = 1 << 16;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    name: Option<String>,
    mgmt_ip: Option<Spanned<String>>,
    mac: Option<Spanned<String>>,
    unknown_unicast: Option<UnknownUnicast>,
    cycle_time: Option<Spanned<String>>,
    ageing_time: Option<Spanned<String>>,
    pending_capacity: Option<Spanned<usize>>,
    pending_timeout: Option<Spanned<String>>,
    nrt_queue_bytes: Option<Spanned<usize>>,
    control_socket: Option<PathBuf>,
    metrics_listen: Option<std::net::SocketAddr>,
    cpu: Option<usize>,
    busy_poll: Option<bool>,
    qdisc_bypass: Option<bool>,
    data_plane: Option<crate::xdp::DataPlane>,
    fast_path: Option<bool>,
    ring_frames: Option<Spanned<usize>>,
    tx_threads: Option<bool>,
    tx_cpus: Option<Vec<usize>>,
    napi_threads: Option<bool>,
    refresh_timeout: Option<Spanned<String>>,
    realtime_cap_percent: Option<Spanned<u8>>,
    backplane: Option<Spanned<String>>,
    cpu_cost_per_connection: Option<Spanned<String>>,
    cpu_budget_percent: Option<Spanned<u8>>,
    rt_buffer_bytes: Option<Spanned<usize>>,
    max_connections: Option<Spanned<usize>>,
    realtime_priority: Option<Spanned<u8>>,
    preemptive_discard: Option<bool>,
    discard_window: Option<Spanned<String>>,
    lateness_budget: Option<Spanned<String>>,
    reshape_allowance: Option<Spanned<String>>,
    reshape_buffer_bytes: Option<Spanned<usize>>,
    link_delay: Option<Spanned<String>>,
    scheduler: Option<SchedulerKind>,
    protect: Option<protect_toml::RawProtect>,
    stp: Option<Spanned<super::stp_config::RawStp>>,
    #[serde(default)]
    port: Vec<RawPort>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPort {
    ifname: Spanned<String>,
    rate: Option<Spanned<String>>,
    role: Option<PortRole>,
    keys: Option<Spanned<Vec<crate::keys::RawKey>>>,
    stp_cost: Option<Spanned<u32>>,
    stp_priority: Option<Spanned<u32>>,
}

/// 1-based line and column of byte `offset` in `text`.
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

pub(crate) struct Source<'a>(pub(crate) &'a str);

/// A daemon's config file as text ([`ConfigError::Read`] naming it when it cannot be read).
pub(crate) fn read_config(path: &Path) -> Result<String, ConfigError> {
    std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// A daemon's TOML file deserialized into `T`: a read error names the file, a syntax error or
/// an unknown key its line and column (for the commands' own configuration files, `rtlan bwm`).
pub fn parse_toml_file<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, ConfigError> {
    Source(&read_config(path)?).parse()
}

impl Source<'_> {
    /// The file deserialized into `T`, a syntax error or an unknown key at its `line:column`.
    pub(crate) fn parse<T: serde::de::DeserializeOwned>(&self) -> Result<T, ConfigError> {
        toml::from_str(self.0).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            self.error(span, e.message().to_string())
        })
    }

    pub(crate) fn error(&self, span: Range<usize>, message: impl Into<String>) -> ConfigError {
        let (line, column) = line_column(self.0, span.start);
        ConfigError::Invalid {
            line,
            column,
            message: message.into(),
        }
    }

    fn duration(
        &self,
        value: Option<Spanned<String>>,
        key: &str,
        default: Duration,
    ) -> Result<Duration, ConfigError> {
        let Some(v) = value else { return Ok(default) };
        match parse_duration(v.get_ref()) {
            Ok(d) if !d.is_zero() => Ok(d),
            Ok(_) => Err(self.error(v.span(), format!("{key} must be greater than zero"))),
            Err(e) => Err(self.error(v.span(), format!("{key}: {e}"))),
        }
    }

    /// [`Self::duration`], accepting zero.
    fn duration_or_zero(
        &self,
        value: Option<Spanned<String>>,
        key: &str,
        default: Duration,
    ) -> Result<Duration, ConfigError> {
        let Some(v) = value else { return Ok(default) };
        parse_duration(v.get_ref()).map_err(|e| self.error(v.span(), format!("{key}: {e}")))
    }

    /// The `realtime_priority` key of every data-plane daemon: 0 (normal scheduling) or
    /// 1..=99 (SCHED_FIFO); [`DEFAULT_REALTIME_PRIORITY`] when absent.
    pub(crate) fn realtime_priority(&self, value: Option<&Spanned<u8>>) -> Result<u8, ConfigError> {
        match value {
            None => Ok(DEFAULT_REALTIME_PRIORITY),
            Some(v) if *v.get_ref() > 99 => Err(self.error(
                v.span(),
                "realtime_priority must be 0 (normal scheduling) or 1..=99 (SCHED_FIFO)",
            )),
            Some(v) => Ok(*v.get_ref()),
        }
    }

    fn bounded(&self, value: &Spanned<usize>, key: &str, max: usize) -> Result<usize, ConfigError> {
        match *value.get_ref() {
            0 => Err(self.error(value.span(), format!("{key} must be greater than zero"))),
            n if n > max => Err(self.error(value.span(), format!("{key} must be at most {max}"))),
            n => Ok(n),
        }
    }
}

/// Parses `aa:bb:cc:dd:ee:ff` (or with `-` separators).
pub fn parse_mac(text: &str) -> Option<Address> {
    let mut mac = [0u8; 6];
    let mut parts = text.trim().split([':', '-']);
    for byte in &mut mac {
        let part = parts.next()?;
        if part.is_empty() || part.len() > 2 {
            return None;
        }
        *byte = u8::from_str_radix(part, 16).ok()?;
    }
    parts.next().is_none().then_some(Address(mac))
}

impl Config {
    /// Parses and validates a configuration file's text.
    pub fn from_toml_str(text: &str) -> Result<Config, ConfigError> {
        let src = Source(text);
        let raw: RawConfig = toml::from_str(text).map_err(|e| {
            let (line, column) = e.span().map_or((1, 1), |s| line_column(text, s.start));
            ConfigError::Invalid {
                line,
                column,
                message: e.message().to_string(),
            }
        })?;

        let mgmt_ip = match raw.mgmt_ip {
            None => None,
            Some(v) => Some(v.get_ref().parse::<Ipv4Addr>().map_err(|_| {
                src.error(
                    v.span(),
                    format!("mgmt_ip: `{}` is not an IPv4 address", v.get_ref()),
                )
            })?),
        };
        let mac = match raw.mac {
            None => None,
            Some(v) => match parse_mac(v.get_ref()) {
                Some(m) if m.is_unicast() => Some(m),
                Some(_) => {
                    return Err(
                        src.error(v.span(), "mac: must be a unicast address (group bit clear)")
                    )
                }
                None => {
                    return Err(src.error(
                        v.span(),
                        format!(
                            "mac: `{}` is not a MAC address like 02:00:00:00:00:01",
                            v.get_ref()
                        ),
                    ))
                }
            },
        };
        let cycle_span = raw.cycle_time.as_ref().map(|v| v.span());
        let cycle_time = src.duration(raw.cycle_time, "cycle_time", DEFAULT_CYCLE_TIME)?;
        if !(MIN_CYCLE..=MAX_CYCLE).contains(&cycle_time) {
            return Err(src.error(
                cycle_span.unwrap_or(0..0),
                "cycle_time must be between 100us and 1s",
            ));
        }
        let percent = |value: &Option<Spanned<u8>>, key: &str, default: u8| match value {
            None => Ok(default),
            Some(v) if (1..=100).contains(v.get_ref()) => Ok(*v.get_ref()),
            Some(v) => Err(src.error(v.span(), format!("{key} must be between 1 and 100"))),
        };
        let realtime_cap_percent = percent(
            &raw.realtime_cap_percent,
            "realtime_cap_percent",
            DEFAULT_RT_CAP_PERCENT,
        )?;
        let cpu_budget_percent = percent(
            &raw.cpu_budget_percent,
            "cpu_budget_percent",
            DEFAULT_CPU_BUDGET_PERCENT,
        )?;
        let backplane_bps = match &raw.backplane {
            None => None,
            Some(v) if v.get_ref() == "unlimited" => None,
            Some(v) => match parse_rate(v.get_ref()) {
                Ok(0) => return Err(src.error(v.span(), "backplane must be above 0 bit/s")),
                Ok(rate) => Some(rate),
                Err(e) => return Err(src.error(v.span(), format!("backplane: {e}"))),
            },
        };
        let cpu_cost_per_connection = match &raw.cpu_cost_per_connection {
            None => CpuCost::Fixed(DEFAULT_CPU_COST_PER_CONNECTION),
            Some(v) if v.get_ref() == "calibrate" => CpuCost::Calibrate,
            Some(v) => CpuCost::Fixed(parse_duration(v.get_ref()).map_err(|e| {
                src.error(
                    v.span(),
                    format!("cpu_cost_per_connection: {e} (or \"calibrate\")"),
                )
            })?),
        };
        let rt_buffer_bytes = match &raw.rt_buffer_bytes {
            None => DEFAULT_RT_BUFFER_BYTES,
            Some(v) => src.bounded(v, "rt_buffer_bytes", usize::MAX)?,
        };
        let max_connections = match &raw.max_connections {
            None => DEFAULT_MAX_CONNECTIONS,
            Some(v) => src.bounded(v, "max_connections", MAX_CONNECTIONS_LIMIT)?,
        };
        let realtime_priority = src.realtime_priority(raw.realtime_priority.as_ref())?;
        let discard_window = src.duration(raw.discard_window, "discard_window", DEFAULT_WINDOW)?;
        // Zero is allowed for both: an exact driver, a link without delay.
        let lateness_budget = src.duration_or_zero(
            raw.lateness_budget,
            "lateness_budget",
            DEFAULT_LATENESS_BUDGET,
        )?;
        let link_delay = src.duration_or_zero(raw.link_delay, "link_delay", Duration::ZERO)?;
        // Zero: police only.
        let reshape_allowance = src.duration_or_zero(
            raw.reshape_allowance,
            "reshape_allowance",
            DEFAULT_RESHAPE_ALLOWANCE,
        )?;
        let reshape_buffer_bytes = match &raw.reshape_buffer_bytes {
            None => DEFAULT_RESHAPE_BUFFER_BYTES,
            Some(v) => src.bounded(v, "reshape_buffer_bytes", usize::MAX)?,
        };
        let ageing_time = src.duration(raw.ageing_time, "ageing_time", DEFAULT_AGEING_TIME)?;
        let pending_timeout = src.duration(
            raw.pending_timeout,
            "pending_timeout",
            DEFAULT_PENDING_TIMEOUT,
        )?;
        // Zero is allowed here: it means "never expire".
        let refresh_timeout = match raw.refresh_timeout {
            None => DEFAULT_REFRESH_TIMEOUT,
            Some(v) => parse_duration(v.get_ref())
                .map_err(|e| src.error(v.span(), format!("refresh_timeout: {e}")))?,
        };
        let pending_capacity = match &raw.pending_capacity {
            None => DEFAULT_PENDING_CAPACITY,
            Some(v) => src.bounded(v, "pending_capacity", MAX_PENDING_CAPACITY)?,
        };
        let nrt_queue_bytes = match &raw.nrt_queue_bytes {
            None => None,
            Some(v) => Some(src.bounded(v, "nrt_queue_bytes", MAX_NRT_QUEUE_BYTES)?),
        };
        let ring_frames = match &raw.ring_frames {
            None => DEFAULT_RING_FRAMES,
            Some(v) => src.bounded(v, "ring_frames", MAX_RING_FRAMES)?,
        };

        if raw.port.is_empty() {
            return Err(ConfigError::NoPorts);
        }
        if raw.port.len() > usize::from(u16::MAX) {
            let span = raw.port[usize::from(u16::MAX)].ifname.span();
            return Err(src.error(span, "a switch has at most 65535 ports"));
        }
        let port_stp: Vec<_> = raw
            .port
            .iter()
            .map(|p| (p.stp_cost.clone(), p.stp_priority.clone()))
            .collect();
        let stp =
            super::stp_config::build(raw.stp, &port_stp, |span, message| src.error(span, message))?;
        let mut ports: Vec<PortSpec> = Vec::with_capacity(raw.port.len());
        for p in raw.port {
            let ifname = p.ifname.get_ref();
            if ifname.is_empty()
                || ifname.len() >= libc::IFNAMSIZ
                || ifname.contains(['/', ' ', '\0'])
            {
                return Err(src.error(
                    p.ifname.span(),
                    format!("`{ifname}` is not a valid interface name"),
                ));
            }
            if ports.iter().any(|q| &q.ifname == ifname) {
                return Err(src.error(
                    p.ifname.span(),
                    format!("interface `{ifname}` is listed twice"),
                ));
            }
            let rate_bps = match p.rate {
                None => None,
                Some(r) => Some(
                    parse_rate(r.get_ref())
                        .map_err(|e| src.error(r.span(), format!("rate: {e}")))?,
                ),
            };
            let keys = match &p.keys {
                None => KeyChain::default(),
                Some(k) => crate::keys::key_chain(k.get_ref())
                    .map_err(|e| src.error(k.span(), format!("keys: {e}")))?,
            };
            ports.push(PortSpec {
                ifname: ifname.clone(),
                rate_bps,
                role: p.role.unwrap_or_default(),
                keys,
            });
        }

        let protect = protect_toml::protect(&src, raw.protect, &ports)?;

        Ok(Config {
            name: raw.name.unwrap_or_else(|| "switch".to_string()),
            mgmt_ip,
            mac,
            unknown_unicast: raw.unknown_unicast.unwrap_or_default(),
            cycle_time,
            ageing_time,
            pending_capacity,
            pending_timeout,
            nrt_queue_bytes,
            control_socket: raw.control_socket,
            metrics_listen: raw.metrics_listen,
            cpu: raw.cpu,
            busy_poll: raw.busy_poll.unwrap_or(false),
            qdisc_bypass: raw.qdisc_bypass.unwrap_or(false),
            // AF_XDP where it opens, AF_PACKET elsewhere, with the reason logged (issue 16).
            data_plane: raw.data_plane.unwrap_or(crate::xdp::DataPlane::Auto),
            fast_path: raw.fast_path.unwrap_or(true),
            ring_frames,
            tx_threads: raw.tx_threads.unwrap_or(false),
            tx_cpus: raw.tx_cpus.unwrap_or_default(),
            napi_threads: raw.napi_threads.unwrap_or(false),
            refresh_timeout,
            realtime_cap_percent,
            backplane_bps,
            cpu_cost_per_connection,
            cpu_budget_percent,
            rt_buffer_bytes,
            max_connections,
            realtime_priority,
            preemptive_discard: raw.preemptive_discard.unwrap_or(true),
            discard_window,
            lateness_budget,
            reshape_allowance,
            reshape_buffer_bytes,
            link_delay,
            scheduler: raw.scheduler.unwrap_or_default(),
            protect,
            ports,
            stp,
        })
    }

    /// Reads and parses a configuration file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Config::from_toml_str(&text)
    }

    /// The core's configuration, given the MAC address of each port's interface (in port order).
    /// With `cpu_cost_per_connection = "calibrate"` the default cost stands in; the daemon
    /// replaces it with the measured one.
    pub fn switch_config(&self, port_macs: &[Address]) -> SwitchConfig {
        let ports: Vec<PortConfig> = self
            .ports
            .iter()
            .zip(port_macs)
            .map(|(p, &mac)| PortConfig {
                name: p.ifname.clone(),
                mac,
                medium: p
                    .rate_bps
                    .map_or(Medium::Unpaced, |rate_bps| Medium::FullDuplex { rate_bps }),
                security: PortSecurity {
                    role: p.role,
                    keys: p.keys.clone(),
                },
            })
            .collect();
        SwitchConfig {
            mac: self
                .mac
                .or_else(|| port_macs.first().copied())
                .unwrap_or_default(),
            mgmt_ip: self.mgmt_ip,
            ports,
            unknown_unicast: self.unknown_unicast,
            cycle_time: self.cycle_time,
            ageing_time: self.ageing_time,
            nrt_queue_bytes: self.nrt_queue_bytes,
            pending_capacity: self.pending_capacity,
            pending_timeout: self.pending_timeout,
            rt: RtConfig {
                refresh_timeout: self.refresh_timeout,
                cap_percent: self.realtime_cap_percent,
                backplane_bps: self.backplane_bps,
                cpu_cost_per_connection: match self.cpu_cost_per_connection {
                    CpuCost::Fixed(cost) => cost,
                    CpuCost::Calibrate => DEFAULT_CPU_COST_PER_CONNECTION,
                },
                cpu_budget_percent: self.cpu_budget_percent,
                rt_buffer_bytes: self.rt_buffer_bytes,
                max_connections: self.max_connections,
                preemptive_discard: self.preemptive_discard,
                discard_window: self.discard_window,
                lateness_budget: self.lateness_budget,
                reshape_allowance: self.reshape_allowance,
                reshape_buffer_bytes: self.reshape_buffer_bytes,
                link_delay: self.link_delay,
                scheduler: self.scheduler,
                protect: self.protect.clone(),
                ..RtConfig::default()
            },
            stp: self.stp.core_config(),
        }
    }
}

#[derive(serde::Serialize)]
struct PortView<'a> {
    ifname: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    rate: Option<String>,
    role: PortRole,
    #[serde(skip_serializing_if = "Option::is_none")]
    stp_cost: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stp_priority: Option<u8>,
    // Keys are never printed (secrets).
}

#[derive(serde::Serialize)]
struct ConfigView<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    mgmt_ip: Option<Ipv4Addr>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mac: Option<String>,
    unknown_unicast: UnknownUnicast,
    cycle_time: String,
    ageing_time: String,
    pending_capacity: usize,
    pending_timeout: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    nrt_queue_bytes: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    control_socket: Option<&'a Path>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metrics_listen: Option<std::net::SocketAddr>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cpu: Option<usize>,
    busy_poll: bool,
    qdisc_bypass: bool,
    data_plane: crate::xdp::DataPlane,
    fast_path: bool,
    ring_frames: usize,
    tx_threads: bool,
    #[serde(skip_serializing_if = "<[usize]>::is_empty")]
    tx_cpus: &'a [usize],
    napi_threads: bool,
    refresh_timeout: String,
    realtime_cap_percent: u8,
    backplane: String,
    cpu_cost_per_connection: String,
    cpu_budget_percent: u8,
    rt_buffer_bytes: usize,
    max_connections: usize,
    realtime_priority: u8,
    preemptive_discard: bool,
    discard_window: String,
    lateness_budget: String,
    reshape_allowance: String,
    reshape_buffer_bytes: usize,
    link_delay: String,
    scheduler: SchedulerKind,
    protect: protect_toml::ProtectView<'a>,
    stp: super::stp_config::StpView,
    port: Vec<PortView<'a>>,
}

/// Serializes in the file's own spelling (units as text), so the output is a valid config file.
impl serde::Serialize for Config {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        ConfigView {
            name: &self.name,
            mgmt_ip: self.mgmt_ip,
            mac: self.mac.map(|m| m.to_string()),
            unknown_unicast: self.unknown_unicast,
            cycle_time: format_duration(self.cycle_time),
            ageing_time: format_duration(self.ageing_time),
            pending_capacity: self.pending_capacity,
            pending_timeout: format_duration(self.pending_timeout),
            nrt_queue_bytes: self.nrt_queue_bytes,
            control_socket: self.control_socket.as_deref(),
            metrics_listen: self.metrics_listen,
            cpu: self.cpu,
            busy_poll: self.busy_poll,
            qdisc_bypass: self.qdisc_bypass,
            data_plane: self.data_plane,
            fast_path: self.fast_path,
            ring_frames: self.ring_frames,
            tx_threads: self.tx_threads,
            tx_cpus: &self.tx_cpus,
            napi_threads: self.napi_threads,
            refresh_timeout: format_duration(self.refresh_timeout),
            realtime_cap_percent: self.realtime_cap_percent,
            backplane: self
                .backplane_bps
                .map_or_else(|| "unlimited".to_string(), format_rate),
            cpu_cost_per_connection: match self.cpu_cost_per_connection {
                CpuCost::Fixed(cost) => format_duration(cost),
                CpuCost::Calibrate => "calibrate".to_string(),
            },
            cpu_budget_percent: self.cpu_budget_percent,
            rt_buffer_bytes: self.rt_buffer_bytes,
            max_connections: self.max_connections,
            realtime_priority: self.realtime_priority,
            preemptive_discard: self.preemptive_discard,
            discard_window: format_duration(self.discard_window),
            lateness_budget: format_duration(self.lateness_budget),
            reshape_allowance: format_duration(self.reshape_allowance),
            reshape_buffer_bytes: self.reshape_buffer_bytes,
            link_delay: format_duration(self.link_delay),
            scheduler: self.scheduler,
            protect: protect_toml::ProtectView::new(&self.protect, &self.ports),
            stp: (&self.stp).into(),
            port: self
                .ports
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let stp = self.stp.ports.get(i).copied().unwrap_or_default();
                    PortView {
                        ifname: &p.ifname,
                        rate: p.rate_bps.map(format_rate),
                        role: p.role,
                        stp_cost: stp.cost,
                        stp_priority: stp.priority,
                    }
                })
                .collect(),
        }
        .serialize(serializer)
    }
}

#[path = "protect_toml.rs"]
mod protect_toml;

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
