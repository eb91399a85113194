//! The RETHER station's protocol processing per token visit (RETHER §4.2, Table 2: "RETHER
//! protocol processing 15 µs" of the 247 µs a visit cost on a 66 MHz i486): one token frame in
//! through `handle_frame` (parse, the admission/close/join edits, the visit) and the pass out of
//! `poll_transmit` (emit), on a segment of 20 stations with a 40-session RT-set — the paper's
//! 40 MPEG-I streams on 100 Mbit/s (§5.2). The station has nothing queued, so this is the bare
//! cost of taking and passing the token.

#![allow(missing_docs)]

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use rtlan_core::rether::{Config, Station, MAX_FRAME};
use rtlan_core::{Instant, Node, PortId};
use rtlan_wire::ethernet::Address;
use rtlan_wire::rether::{
    emit_frame, Dest, Member, Message, NodeId, Phase, Repr, SessionEntry, SwitchRepr, TokenRepr,
    GROUP,
};

fn id(n: u16) -> NodeId {
    NodeId::new(n).expect("valid id")
}

fn frame(repr: &Repr, from: u16) -> Vec<u8> {
    let mut buf = vec![0u8; MAX_FRAME];
    let len = emit_frame(
        repr,
        Address([2, 0, 0, 0, 0, from as u8]),
        GROUP,
        &[],
        &mut buf,
    )
    .expect("fits");
    buf.truncate(len);
    buf
}

fn bench(c: &mut Criterion) {
    let me = 5;
    let mut station = Station::new(Config::new(
        id(me),
        Address([2, 0, 0, 0, 0, 5]),
        100_000_000,
    ));
    let mut buf = vec![0u8; MAX_FRAME];
    let mut now = Instant::ZERO;
    // Station 1 switches the segment to RETHER mode (generation 1); ours acknowledges.
    let switch = Repr {
        generation: 1,
        source: id(1),
        dest: Dest::All,
        message: Message::Switch(SwitchRepr {
            trt_ns: 33_333_333,
            t_nrt_ns: 3_333_333,
            attempt: 0,
            regenerate: false,
        }),
    };
    station.handle_frame(now, PortId(0), &frame(&switch, 1));
    while station.poll_transmit(now, PortId(0), &mut buf).is_some() {}
    // Tokens from station 4 for an NRT visit of ours, each with its own pass number.
    let token = |pass: u16| Repr {
        generation: 1,
        source: id(4),
        dest: Dest::Node(id(me)),
        message: Message::Token(TokenRepr {
            residual_ns: 20_000_000,
            trt_ns: 33_333_333,
            t_nrt_ns: 3_333_333,
            cycle: 1,
            phase: Phase::NonRealTime,
            rt_next: 0,
            nrt_next: None,
            pass,
            members: (1..=20)
                .map(|n| Member {
                    id: id(n),
                    dead: false,
                })
                .collect(),
            sessions: (0..40)
                .map(|k| SessionEntry {
                    session: k,
                    sender: id(1 + (k % 20) + u16::from(k % 20 == me - 1)),
                    receiver: Some(id(20 - k % 20)),
                    closing: false,
                    tht_ns: 600_000,
                    bytes_per_trt: 6_250,
                })
                .collect(),
        }),
    };
    let frames: Vec<Vec<u8>> = (0..1024u16).map(|p| frame(&token(p * 2 + 1), 4)).collect();
    assert!(frames[0].len() <= 1500 + 14);
    let mut i = 0usize;
    c.bench_function("rether/token_visit_20_stations_40_sessions", |b| {
        b.iter(|| {
            now += Duration::from_micros(50);
            station.handle_frame(now, PortId(0), &frames[i % frames.len()]);
            let mut passed = 0;
            while let Some(len) = station.poll_transmit(now, PortId(0), &mut buf) {
                passed += len;
            }
            assert!(passed > 0, "the token was passed on");
            i += 1;
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
