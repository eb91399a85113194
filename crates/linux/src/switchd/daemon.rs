//! The data-plane loop of the switch daemon (see the module doc of `switchd` for the order of
//! work in one iteration, and DESIGN.md §7 for why it sleeps rather than spins).

use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rtlan_core::switch::{PortId, Switch};
use rtlan_core::time::Instant;

use super::control::{ControlServer, Request};
use super::epoll::{Epoll, EMPTY_EVENT};
use super::{Config, Error, RunReport, ShellPortStats, ShellStats, RX_BATCH, RX_QUANTUM};
use crate::clock;
use crate::packet::{PacketPort, TxOutcome};
use crate::timer::Timer;

/// Epoll token of the timerfd; ports use their index as token.
const TIMER_TOKEN: u64 = 1 << 61;
/// Longest sleep, so that the shutdown flag is seen promptly.
const MAX_SLEEP_MS: i32 = 100;
/// Sleep while a flush failed and must be retried.
const FLUSH_RETRY_MS: i32 = 10;
/// Wait when the core's deadline is already past although everything due was done (a full TX
/// ring holds the frame back, or the core is confused): short, but not a spin.
const STALE_DEADLINE_BACKOFF: Duration = Duration::from_micros(100);

/// The switch daemon's state while it runs.
pub(super) struct Daemon {
    config: Config,
    ports: Vec<PacketPort>,
    switch: Switch,
    timer: Timer,
    epoll: Epoll,
    /// Declared after `epoll`; closed (and its socket file removed) when the daemon drops.
    control: Option<ControlServer>,
    /// Per port: whether EPOLLOUT is currently requested (the TX ring was full).
    out_interest: Vec<bool>,
    loop_iterations: u64,
    /// Frames taken from each port in the current [`Daemon::receive`] (preallocated).
    rx_taken: Vec<usize>,
    /// State of the xorshift generator that picks the first port of each receive (non-zero).
    rx_seed: u64,
    stale_deadlines: u64,
    started: Instant,
    stopped: Option<Instant>,
}

fn port_events(want_out: bool) -> u32 {
    let mut events = libc::EPOLLIN as u32;
    if want_out {
        events |= libc::EPOLLOUT as u32;
    }
    events
}

impl Daemon {
    pub(super) fn new(
        config: Config,
        ports: Vec<PacketPort>,
        control_path: Option<&Path>,
    ) -> Result<Self, Error> {
        let started = clock::now();
        let port_count = ports.len();
        let macs: Vec<_> = ports.iter().map(PacketPort::mac).collect();
        let mut switch_config = config.switch_config(&macs);
        if config.cpu_cost_per_connection == super::CpuCost::Calibrate {
            if let Some(cost) = super::calibrate::cpu_cost_per_connection() {
                tracing::info!(
                    cost_ns = u64::try_from(cost.as_nanos()).unwrap_or(u64::MAX),
                    "calibrated scheduler cost per connection per cycle"
                );
                switch_config.rt.cpu_cost_per_connection = cost;
            }
        }
        let switch = Switch::new(switch_config, started)?;
        let timer = Timer::new()?;
        let epoll = Epoll::new().map_err(Error::Epoll)?;
        for (i, port) in ports.iter().enumerate() {
            epoll
                .add(port.as_raw_fd(), port_events(false), i as u64)
                .map_err(Error::Epoll)?;
        }
        epoll
            .add(timer.as_raw_fd(), libc::EPOLLIN as u32, TIMER_TOKEN)
            .map_err(Error::Epoll)?;
        let control = match control_path {
            Some(path) => Some(ControlServer::bind(path, &epoll)?),
            None => None,
        };
        tracing::info!(
            name = %config.name,
            ports = ?config.ports.iter().map(|p| p.ifname.as_str()).collect::<Vec<_>>(),
            mac = %switch.config().mac,
            "switch running"
        );
        Ok(Daemon {
            out_interest: vec![false; ports.len()],
            config,
            ports,
            switch,
            timer,
            epoll,
            control,
            loop_iterations: 0,
            rx_taken: vec![0; port_count],
            rx_seed: 0x9e37_79b9_7f4a_7c15,
            stale_deadlines: 0,
            started,
            stopped: None,
        })
    }

    /// Runs until `shutdown` is set.
    pub(super) fn run(&mut self, shutdown: &AtomicBool) -> Result<(), Error> {
        let mut events = [EMPTY_EVENT; 64];
        let mut more_rx = false;
        while !shutdown.load(Ordering::Relaxed) {
            let timeout_ms = if self.config.busy_poll || more_rx {
                0
            } else if self.ports.iter().any(PacketPort::flush_pending) {
                FLUSH_RETRY_MS
            } else {
                MAX_SLEEP_MS
            };
            let n = self
                .epoll
                .wait(&mut events, timeout_ms)
                .map_err(Error::Epoll)?;
            self.loop_iterations += 1;
            for ev in &events[..n] {
                let (token, flags) = (ev.u64, ev.events);
                self.on_event(token, flags);
            }
            let now = clock::now();
            self.timer.check_expired(now);
            more_rx = self.receive(now);
            let now = clock::now();
            if self.switch.poll_timeout().is_some_and(|t| t <= now) {
                self.switch.handle_timeout(now);
            }
            self.transmit(now)?;
            self.arm_timer(now)?;
        }
        self.stopped = Some(clock::now());
        tracing::info!(name = %self.config.name, "switch stopped");
        Ok(())
    }

    fn on_event(&mut self, token: u64, flags: u32) {
        if token == TIMER_TOKEN {
            self.timer.drain();
        } else if ControlServer::owns(token) {
            for port in &mut self.ports {
                port.read_kernel_drops();
            }
            let now = clock::now();
            let shell = self.shell_stats();
            let Daemon {
                control,
                epoll,
                switch,
                config,
                timer,
                started,
                ..
            } = self;
            if let Some(control) = control {
                control.on_event(epoll, token, flags, |request| {
                    respond(request, switch, config, &shell, timer, now - *started)
                });
            }
        } else if let Some(port) = usize::try_from(token)
            .ok()
            .and_then(|i| self.ports.get_mut(i))
        {
            if flags & libc::EPOLLERR as u32 != 0 {
                if let Some(err) = port.take_error() {
                    tracing::warn!(ifname = port.ifname(), "port error: {err}");
                }
            }
            // EPOLLIN and EPOLLOUT need no action here: every iteration looks at all rings.
        }
    }

    /// Drains up to a batch per port into the core, interleaving the ports in rounds of
    /// [`RX_QUANTUM`] frames; returns whether any port may have more.
    ///
    /// Interleaving keeps ingress fair: with a whole batch per port in a fixed (or merely
    /// rotating) order, one port's batch would take all the room the last transmit freed in a full
    /// non-real-time queue, and another port flooding the same output would lose far more than
    /// its share.
    fn receive(&mut self, now: Instant) -> bool {
        let Daemon {
            switch,
            ports,
            rx_taken,
            rx_seed,
            ..
        } = self;
        let count = ports.len();
        if count == 0 {
            return false;
        }
        rx_taken.iter_mut().for_each(|t| *t = 0);
        // A pseudo-random first port (xorshift64): a rotation by the iteration count falls into
        // step with the wake-up pattern and hands the same port the freed room again and again
        // (measured: two equal 100 Mbit/s floods into one full 100 Mbit/s output got 74 % and
        // 26 % of it; 64 % and 36 % with the random start — what remains is the two paced
        // sources' phase against the drain, which a tail-drop FIFO cannot undo).
        *rx_seed ^= *rx_seed << 13;
        *rx_seed ^= *rx_seed >> 7;
        *rx_seed ^= *rx_seed << 17;
        // The remainder is below `count`, which is a usize.
        let start = (*rx_seed % count as u64) as usize;
        for _round in 0..RX_BATCH.div_ceil(RX_QUANTUM) {
            let mut any_full = false;
            for i in (start..count).chain(0..start) {
                let quantum = RX_QUANTUM.min(RX_BATCH - rx_taken[i]);
                if quantum == 0 {
                    continue;
                }
                // Port indices fit u16: the core refuses more than u16::MAX ports at construction.
                let id = PortId(i as u16);
                let consumed =
                    ports[i].receive(quantum, |frame| switch.handle_frame(now, id, frame));
                rx_taken[i] += consumed;
                any_full |= consumed == quantum;
            }
            if !any_full {
                // Every ring came up short of its quantum: all drained.
                return false;
            }
        }
        rx_taken.iter().any(|&t| t >= RX_BATCH)
    }

    /// Moves due frames from the core into free TX slots, flushes, and asks for EPOLLOUT on ports
    /// whose ring is full.
    fn transmit(&mut self, now: Instant) -> Result<(), Error> {
        let switch = &mut self.switch;
        for (i, port) in self.ports.iter_mut().enumerate() {
            let id = PortId(i as u16);
            while port.transmit_with(|buf| switch.poll_transmit(now, id, buf)) == TxOutcome::Queued
            {
            }
            if let Err(err) = port.flush() {
                tracing::debug!(ifname = port.ifname(), "flush: {err}");
            }
            let want_out = port.tx_blocked();
            if want_out != self.out_interest[i] {
                self.epoll
                    .modify(port.as_raw_fd(), port_events(want_out), i as u64)
                    .map_err(Error::Epoll)?;
                self.out_interest[i] = want_out;
            }
        }
        Ok(())
    }

    /// Arms the timerfd at the core's next deadline.
    fn arm_timer(&mut self, now: Instant) -> Result<(), Error> {
        if self.config.busy_poll {
            return Ok(());
        }
        let deadline = match self.switch.poll_timeout() {
            Some(t) if t <= now => {
                if !self.ports.iter().any(PacketPort::tx_blocked) {
                    self.stale_deadlines += 1;
                }
                Some(now + STALE_DEADLINE_BACKOFF)
            }
            other => other,
        };
        self.timer.arm(deadline)?;
        Ok(())
    }

    fn shell_stats(&self) -> ShellStats {
        ShellStats {
            ports: self
                .ports
                .iter()
                .map(|p| ShellPortStats {
                    ifname: p.ifname().to_string(),
                    ifindex: p.ifindex(),
                    mac: p.mac().to_string(),
                    counters: p.counters().clone(),
                })
                .collect(),
            loop_iterations: self.loop_iterations,
            stale_deadlines: self.stale_deadlines,
            control_requests: self.control.as_ref().map_or(0, |c| c.requests),
            control_errors: self.control.as_ref().map_or(0, |c| c.errors),
        }
    }

    /// The final report.
    pub(super) fn report(&mut self) -> RunReport {
        for port in &mut self.ports {
            port.read_kernel_drops();
        }
        let end = self.stopped.unwrap_or_else(clock::now);
        RunReport {
            name: self.config.name.clone(),
            uptime: end - self.started,
            switch: self.switch.stats().clone(),
            shell: self.shell_stats(),
            timer: self.timer.lateness().clone(),
        }
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
    timer: &Timer,
    uptime: Duration,
) -> Result<serde_json::Value, String> {
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
            timer: timer.lateness(),
        }),
        Request::Fdb => serde_json::to_value(switch.fdb(clock::now())),
        Request::Arp => serde_json::to_value(switch.arp_cache()),
        Request::Connections => serde_json::to_value(switch.connection_list(clock::now())),
        Request::FlushArp => serde_json::to_value(switch.flush_arp_cache()),
        Request::SetupLatency => serde_json::to_value(switch.setup_latency()),
        Request::Config => {
            let mut effective = config.clone();
            effective.mac = Some(switch.config().mac);
            // A calibrated cost is reported as the measured value.
            effective.cpu_cost_per_connection =
                super::CpuCost::Fixed(switch.config().rt.cpu_cost_per_connection);
            serde_json::to_value(&effective)
        }
    };
    value.map_err(|e| format!("internal error: {e}"))
}
