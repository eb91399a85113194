//! The switch daemon's use of the data-plane driver: the switch core as the
//! [`Driver`](crate::driver::Driver)'s node, plus the control socket served from the same
//! `epoll` (requests are rare, so they share the thread rather than needing locks).

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use rtlan_core::switch::Switch;

use super::control::{ControlServer, Request};
use super::{Config, Error, RunReport, ShellStats};
use crate::capture::{CaptureArgs, CaptureError, CaptureHandle, Tap};
use crate::clock;
use crate::driver::{Driver, DriverOptions};
use crate::mgmt::MgmtError;
use crate::timer::LatenessStats;
use crate::xdp::AnyPort;

/// The switch daemon's state while it runs.
pub(super) struct Daemon {
    config: Config,
    driver: Driver<Switch, AnyPort>,
    /// Closed (and its socket file removed) when the daemon drops.
    control: Option<ControlServer>,
    /// The running or last capture (`capture` op).
    capture: Option<CaptureHandle>,
    /// The `GET /metrics` endpoint (`metrics_listen`), bound before the switch reports running.
    metrics: Option<crate::metrics::Exporter>,
    /// The best-effort fast path's maps, kept equal to the core's decisions (docs/fastpath.md).
    mirror: Option<super::fastpath::Mirror>,
}

impl Daemon {
    pub(super) fn new(
        config: Config,
        ports: Vec<AnyPort>,
        mut mirror: Option<super::fastpath::Mirror>,
        control_path: Option<&Path>,
    ) -> Result<Self, Error> {
        let macs: Vec<_> = ports.iter().map(crate::driver::Port::mac).collect();
        let mut switch_config = config.switch_config(&macs);
        // Signed sequence numbers keep growing across restarts (RFC 2747 §3).
        switch_config.rt.auth_seq_base = crate::keys::sequence_base();
        if config.cpu_cost_per_connection == super::CpuCost::Calibrate {
            if let Some(cost) = super::calibrate::cpu_cost_per_connection() {
                tracing::info!(
                    cost_ns = u64::try_from(cost.as_nanos()).unwrap_or(u64::MAX),
                    "calibrated scheduler cost per connection per cycle"
                );
                switch_config.rt.cpu_cost_per_connection = cost;
            }
        }
        // A new boot epoch every start: neighbours release what the previous start held.
        switch_config.rt.epoch = crate::epoch::boot_epoch();
        let epoch = switch_config.rt.epoch;
        let switch = Switch::new(switch_config, clock::now())?;
        let options = DriverOptions {
            busy_poll: config.busy_poll,
        };
        let mut driver = Driver::new(switch, ports, options)?;
        if let Some(mirror) = mirror.as_mut() {
            mirror.start(driver.node_mut(), clock::now());
        }
        let control = match control_path {
            Some(path) => Some(ControlServer::bind(path, driver.epoll())?),
            None => None,
        };
        let metrics = match config.metrics_listen {
            Some(addr) => Some(crate::metrics::Exporter::bind(addr)?),
            None => None,
        };
        tracing::info!(
            name = %config.name,
            ports = ?config.ports.iter().map(|p| p.ifname.as_str()).collect::<Vec<_>>(),
            mac = %driver.node().config().mac,
            epoch = format_args!("{epoch:#018x}"),
            "switch running"
        );
        Ok(Daemon {
            config,
            driver,
            control,
            capture: None,
            metrics,
            mirror,
        })
    }

    /// Runs until `shutdown` is set.
    pub(super) fn run(&mut self, shutdown: &AtomicBool) -> Result<(), Error> {
        let Daemon {
            config,
            driver,
            control,
            capture,
            metrics,
            mirror,
        } = self;
        // Read by the control socket and the metrics, written before each transmit: the hooks
        // run one after another on this thread, so a run-time borrow never conflicts.
        let mirror = std::cell::RefCell::new(mirror);
        crate::service::ready(&format!("switch {} forwarding", config.name));
        let ifnames: Vec<String> = config.ports.iter().map(|p| p.ifname.clone()).collect();
        let on_event = |driver: &mut Driver<Switch, AnyPort>, token, flags| {
            let Some(control) = control.as_mut() else {
                return;
            };
            driver.read_kernel_drops();
            let shell = shell_stats(driver, Some(&*control), mirror.borrow().as_ref());
            let timer = driver.lateness().clone();
            let uptime = driver.uptime();
            let (epoll, switch, tap) = driver.epoll_node_and_tap();
            control.on_event(epoll, token, flags, |request| match request {
                Request::Capture(args) => start_capture(&args, config, tap, capture),
                Request::CaptureStop => stop_capture(tap, capture.as_ref()),
                Request::CaptureStatus => capture_status(capture.as_ref()),
                other => respond(other, switch, config, &shell, &timer, uptime),
            });
        };
        // A scrape is rendered here, between iterations, only when one waits (module doc of
        // crate::metrics): the data plane never blocks on it. SIGHUP: nothing of the switch's
        // configuration changes while it forwards; a reload checks the file and names each
        // change that needs a restart.
        let after_io = |driver: &mut Driver<Switch, AnyPort>| {
            if let Some(mirror) = mirror.borrow_mut().as_mut() {
                mirror.sample(driver.node(), driver.ports());
            }
            if crate::service::take_reload() {
                crate::service::reload_nothing_live("switch", |path| {
                    super::Config::load(path)
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                });
            }
            let Some(metrics) = metrics.as_ref().filter(|m| m.wanted()) else {
                return;
            };
            driver.read_kernel_drops();
            // The control socket's request counts are not exported (and it is borrowed by
            // `on_event`).
            let shell = shell_stats(driver, None, mirror.borrow().as_ref());
            let page = crate::metrics::switch::render(
                driver.node(),
                &shell,
                driver.lateness(),
                &ifnames,
                clock::now(),
            );
            metrics.publish(page);
        };
        // Before anything the core queued goes out, the fast path learns what it decided: a
        // port a SETUP was just booked through closes before the SETUP is forwarded.
        let before_tx = |driver: &mut Driver<Switch, AnyPort>| {
            if let Some(mirror) = mirror.borrow_mut().as_mut() {
                let captured = driver.captured_port();
                mirror.sync(driver.node_mut(), clock::now(), captured);
            }
        };
        driver.run_hooked(shutdown, on_event, before_tx, after_io)?;
        crate::service::stopping();
        // A capture still running ends with the daemon: its writer closes the file.
        self.driver.set_tap(None);
        if let Some(capture) = self.capture.as_mut() {
            capture.stop();
            capture.join();
        }
        tracing::info!(name = %self.config.name, "switch stopped");
        Ok(())
    }

    /// The final report.
    pub(super) fn report(&mut self) -> RunReport {
        self.driver.read_kernel_drops();
        RunReport {
            name: self.config.name.clone(),
            uptime: self.driver.uptime(),
            switch: self.driver.node().stats().clone(),
            shell: shell_stats(&self.driver, self.control.as_ref(), self.mirror.as_ref()),
            timer: self.driver.lateness().clone(),
        }
    }
}

/// Starts a capture (`capture` op), unless one is running or still writing.
fn start_capture(
    args: &CaptureArgs,
    config: &Config,
    tap: &mut Option<Tap>,
    capture: &mut Option<CaptureHandle>,
) -> Result<serde_json::Value, MgmtError> {
    if let Some(running) = capture.as_ref().filter(|c| !c.done()) {
        return Err(CaptureError::Running(running.status().ifname).into());
    }
    let ifnames: Vec<String> = config.ports.iter().map(|p| p.ifname.clone()).collect();
    let plan = args.check(&ifnames)?;
    let (new_tap, handle) = CaptureHandle::start(plan, clock::now())?;
    if let Some(mut old) = capture.take() {
        // Done: its writer has ended, so this does not wait.
        old.join();
    }
    tracing::info!(port = %handle.status().ifname, path = %args.path.display(), "capture started");
    *tap = Some(new_tap);
    let status = handle.status();
    *capture = Some(handle);
    to_json(&status)
}

/// Stops the running capture (`capture-stop` op): the tap is dropped, the writer writes what
/// is queued and closes the file (`state` `done` in a later `capture-status`).
fn stop_capture(
    tap: &mut Option<Tap>,
    capture: Option<&CaptureHandle>,
) -> Result<serde_json::Value, MgmtError> {
    let capture = capture.ok_or(CaptureError::NoCapture)?;
    capture.stop();
    *tap = None;
    to_json(&capture.status())
}

/// The running or last capture's status (`capture-status` op).
fn capture_status(capture: Option<&CaptureHandle>) -> Result<serde_json::Value, MgmtError> {
    to_json(&capture.ok_or(CaptureError::NoCapture)?.status())
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<serde_json::Value, MgmtError> {
    serde_json::to_value(value).map_err(|e| MgmtError::new("internal", e.to_string()))
}

fn shell_stats(
    driver: &Driver<Switch, AnyPort>,
    control: Option<&ControlServer>,
    mirror: Option<&super::fastpath::Mirror>,
) -> ShellStats {
    ShellStats {
        fast_path: mirror.map_or_else(Vec::new, |m| m.stats(driver.node())),
        fast_path_errors: mirror.map_or(0, super::fastpath::Mirror::errors),
        ports: driver.port_stats(),
        loop_iterations: driver.loop_iterations(),
        stale_deadlines: driver.stale_deadlines(),
        link_changes: driver.link_changes(),
        control_requests: control.map_or(0, ControlServer::requests),
        control_errors: control.map_or(0, ControlServer::errors),
    }
}
/// The `data` of a `stats` reply.
#[derive(serde::Serialize)]
struct StatsReply<'a> {
    name: &'a str,
    uptime_ns: u64,
    /// Real-time connections installed.
    connections: usize,
    /// SETUPs in progress.
    setups_in_progress: usize,
    /// Per output port: booked real-time bandwidth, ids in use, admitted FIFO bytes.
    rt_ports: Vec<rtlan_core::switch::RtPortInfo>,
    /// Per port: cyclic-scheduler counters and preemptive-discard state.
    sched_ports: Vec<rtlan_core::switch::SchedPortInfo>,
    /// Switch-wide admission: backplane, connections (CPU), queue memory in use and limits.
    admission: AdmissionReply,
    switch: &'a rtlan_core::switch::SwitchStats,
    shell: &'a ShellStats,
    timer: &'a crate::timer::LatenessStats,
    /// Spanning tree: port states, root, root port and cost, TC flag, BPDU counters (absent
    /// when off).
    #[serde(skip_serializing_if = "Option::is_none")]
    stp: Option<rtlan_core::switch::StpStatus>,
}

/// Switch-wide admission state in a `stats` reply.
#[derive(serde::Serialize)]
struct AdmissionReply {
    #[serde(flatten)]
    usage: rtlan_core::switch::rt::SwitchUsage,
    /// Configured limits (backplane, cycle, CPU cost per connection, CPU budget, buffer).
    limits: rtlan_core::switch::rt::SwitchLimits,
    /// The CPU cost per connection per cycle in force (configured or calibrated), ns.
    cpu_cost_per_connection_ns: u64,
}

/// Answers one control request.
fn respond(
    request: Request,
    switch: &mut Switch,
    config: &Config,
    shell: &ShellStats,
    timer: &LatenessStats,
    uptime: Duration,
) -> Result<serde_json::Value, MgmtError> {
    let value = match request {
        Request::Ping => Ok(serde_json::Value::String("pong".to_string())),
        Request::Stats => serde_json::to_value(StatsReply {
            name: &config.name,
            uptime_ns: u64::try_from(uptime.as_nanos()).unwrap_or(u64::MAX),
            connections: switch.connections().len(),
            setups_in_progress: switch.setups_in_progress(),
            rt_ports: switch.rt_ports(),
            sched_ports: switch.sched_ports(clock::now()),
            admission: AdmissionReply {
                usage: switch.admission_usage(),
                limits: *switch.admission().limits(),
                cpu_cost_per_connection_ns: u64::try_from(
                    switch.config().rt.cpu_cost_per_connection.as_nanos(),
                )
                .unwrap_or(u64::MAX),
            },
            switch: switch.stats(),
            shell,
            timer,
            stp: switch.stp_status(),
        }),
        Request::Fdb => serde_json::to_value(switch.fdb(clock::now())),
        Request::Arp => serde_json::to_value(switch.arp_cache()),
        Request::Connections => serde_json::to_value(switch.connection_list(clock::now())),
        Request::FlushArp => serde_json::to_value(switch.flush_arp_cache()),
        Request::SetupLatency => serde_json::to_value(switch.setup_latency()),
        Request::Capture(_) | Request::CaptureStop | Request::CaptureStatus => {
            // Served by `Daemon::run`, which holds the capture.
            Err(MgmtError::new(
                "internal",
                "capture requests are served by the daemon",
            ))?
        }
        Request::Config => {
            let mut effective = config.clone();
            effective.mac = Some(switch.config().mac);
            // A calibrated cost is reported as the measured value.
            effective.cpu_cost_per_connection =
                super::CpuCost::Fixed(switch.config().rt.cpu_cost_per_connection);
            serde_json::to_value(&effective)
        }
    };
    value.map_err(|e| MgmtError::new("internal", e.to_string()))
}
