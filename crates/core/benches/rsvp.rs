//! The RSVP engine at 10⁵ sessions on one router (issue 13's target: "100,000 RSVP sessions per
//! router … with refresh cost measured"; docs/rsvp.md §7). A router with an input port towards
//! the senders and an output port towards the receivers holds 10⁵ reserved sessions (Path and
//! Fixed-Filter Resv each). Before timing, the benchmark prints the engine's heap bytes per
//! session, counted by this binary's global allocator.
//!
//! * `rsvp/refresh_period`: one refresh period R of the whole router in steady state — every
//!   session's Path and Resv refresh arrives (unchanged), and every refresh timer that falls due
//!   sends the router's own Path downstream and Resv upstream. Throughput is sessions per
//!   second: how many sessions one core keeps alive per second of CPU.

use std::alloc::{GlobalAlloc, Layout, System};
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use criterion::{criterion_main, Criterion, Throughput};
use rtlan_core::rsvp::{NoResources, Received, Role, RouteTo, Routing, Rsvp, RsvpConfig};
use rtlan_core::{Instant, PortId};
use rtlan_wire::rsvp::{
    Adspec, F32Bits, FilterSpec, FlowDescriptors, Flowspec, Message, Path, Resv, Rspec, RsvpHop,
    SenderDescriptor, Session, TimeValues, TokenBucket,
};

/// Counts the bytes currently allocated through it, then hands every call to the system
/// allocator.
struct Counting;

static LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so `System`'s
// guarantees are ours; the counter is only arithmetic on the side.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, which is `System`'s.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            LIVE_BYTES.fetch_add(layout.size(), Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` (through us) with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const SESSIONS: u32 = 100_000;
const R: Duration = Duration::from_secs(30);
const SENDER_HOP: Ipv4Addr = Ipv4Addr::new(198, 18, 1, 2);
const RECEIVER_HOP: Ipv4Addr = Ipv4Addr::new(198, 18, 12, 2);

/// Every receiver is behind the next router on port 1.
struct Downstream;

impl Routing for Downstream {
    fn route(&self, _dst: Ipv4Addr) -> Option<RouteTo> {
        Some(RouteTo {
            port: PortId(1),
            gateway: Some(RECEIVER_HOP),
        })
    }
}

fn tspec() -> TokenBucket {
    TokenBucket {
        rate: F32Bits::from_f32(125.0),
        size: F32Bits::from_f32(1500.0),
        peak: F32Bits::from_f32(f32::INFINITY),
        min_policed_unit: 64,
        max_packet_size: 1500,
    }
}

/// Session `i`: 4 receivers × 25,000 ports, one sender each.
fn ids(i: u32) -> (Session, FilterSpec) {
    (
        Session {
            dst_addr: Ipv4Addr::new(198, 18, 2, 2 + (i / 25_000) as u8),
            protocol_id: 17,
            flags: 0,
            dst_port: 1 + (i % 25_000) as u16,
        },
        FilterSpec {
            src_addr: SENDER_HOP,
            src_port: 5000,
        },
    )
}

fn path(i: u32) -> Message {
    let (session, sender) = ids(i);
    Message::Path(Path {
        session,
        hop: RsvpHop {
            address: SENDER_HOP,
            lih: 0,
        },
        time_values: TimeValues {
            refresh_period_ms: R.as_millis() as u32,
        },
        sender: SenderDescriptor {
            sender_template: sender,
            sender_tspec: tspec(),
            adspec: Some(Adspec::sender_initial(1500)),
        },
    })
}

fn resv(i: u32) -> Message {
    let (session, sender) = ids(i);
    Message::Resv(Resv {
        session,
        hop: RsvpHop {
            address: RECEIVER_HOP,
            lih: 0,
        },
        time_values: TimeValues {
            refresh_period_ms: R.as_millis() as u32,
        },
        resv_confirm: None,
        descriptors: FlowDescriptors::FixedFilter(vec![(
            Flowspec::Guaranteed {
                tspec: tspec(),
                rspec: Rspec {
                    rate: F32Bits::from_f32(125.0),
                    slack: 0,
                },
            },
            sender,
        )]),
    })
}

fn from_sender() -> Received {
    Received {
        port: PortId(0),
        src: SENDER_HOP,
        ttl: 64,
    }
}

fn from_receiver() -> Received {
    Received {
        port: PortId(1),
        src: RECEIVER_HOP,
        ttl: 64,
    }
}

/// Feeds every session's Path and Resv at `now` and drains what the engine asks.
fn refresh_all(engine: &mut Rsvp, now: Instant, paths: &[Message], resvs: &[Message]) -> usize {
    let mut out = 0;
    for m in paths {
        engine.handle_message(now, from_sender(), m.clone(), &Downstream, &mut NoResources);
    }
    for m in resvs {
        engine.handle_message(
            now,
            from_receiver(),
            m.clone(),
            &Downstream,
            &mut NoResources,
        );
    }
    while engine.poll_output().is_some() {
        out += 1;
    }
    out
}

fn bench(c: &mut Criterion) {
    let paths: Vec<Message> = (0..SESSIONS).map(path).collect();
    let resvs: Vec<Message> = (0..SESSIONS).map(resv).collect();
    let before = LIVE_BYTES.load(Ordering::Relaxed);
    let mut config = RsvpConfig::new(
        Role::Router,
        vec![Ipv4Addr::new(198, 18, 1, 1), Ipv4Addr::new(198, 18, 12, 1)],
    );
    config.refresh = R;
    let mut engine = Rsvp::new(config);
    let mut now = Instant::ZERO;
    refresh_all(&mut engine, now, &paths, &resvs);
    let stats = engine.stats();
    assert_eq!(
        (stats.paths, stats.resvs),
        (u64::from(SESSIONS), u64::from(SESSIONS))
    );
    let bytes = LIVE_BYTES.load(Ordering::Relaxed) - before;
    println!(
        "rsvp: {SESSIONS} sessions (Path + FF Resv each) hold {:.1} MB of heap, {} bytes per session",
        bytes as f64 / 1e6,
        bytes / SESSIONS as usize
    );

    let mut group = c.benchmark_group("rsvp");
    group.sample_size(10);
    group.throughput(Throughput::Elements(u64::from(SESSIONS)));
    group.bench_function("refresh_period", |b| {
        b.iter(|| {
            // One period: the refreshes arrive, then the router's own refreshes fall due (each
            // R × U(0.5, 1.5) after the last: all within 1.5 R).
            now += R;
            let sent = refresh_all(&mut engine, now, &paths, &resvs);
            engine.handle_timeout(now + R / 2, &mut NoResources);
            let mut own = 0;
            while engine.poll_output().is_some() {
                own += 1;
            }
            std::hint::black_box((sent, own))
        });
    });
    group.finish();
    let stats = engine.stats();
    assert_eq!(
        (stats.paths, stats.resvs),
        (u64::from(SESSIONS), u64::from(SESSIONS))
    );
    assert_eq!((stats.path_timeouts, stats.resv_timeouts), (0, 0));
}

fn benches() {
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c);
}

criterion_main!(benches);
