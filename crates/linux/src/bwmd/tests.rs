//! The bandwidth manager over real TCP on 127.0.0.1: admit, refuse (delay, capacity), release,
//! garbage, restart with reload; the client cap, the idle time-out, tokens and ownership.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use rtlan_core::bwm::{ConnSpec, ErrorCode, Kind, Manager, ManagerConfig, Reply, Violation};

use super::*;

const NETWORK: &str = r#"
[[switch]]
name = "s1"
t_mux = "45us"
buffer = "128KiB"
[[link]]
ends = ["A", "s1"]
rate = "100mbit"
effective_rate = "98.6mbit"
[[link]]
ends = ["B", "s1"]
rate = "100mbit"
effective_rate = "98.6mbit"
[[link]]
ends = ["C", "s1"]
rate = "100mbit"
effective_rate = "98.6mbit"
"#;

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("rtlan-bwm-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        // Invariant: the system temp dir is writable in tests.
        std::fs::create_dir_all(&p).expect("temp dir");
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Running {
    addr: std::net::SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<(), ServerError>>>,
}

impl Running {
    fn start(state: PathBuf) -> Running {
        Running::start_with(state, ServerConfig::default())
    }

    fn start_with(state: PathBuf, config: ServerConfig) -> Running {
        let topo = parse_network(NETWORK, "network.toml").expect("valid network");
        let manager = Manager::new(topo, ManagerConfig::default()).expect("valid topology");
        let server = Server::bind_with(manager, "127.0.0.1:0", state, config).expect("binds");
        let addr = server.local_addr().expect("bound");
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = Some(std::thread::spawn(move || server.run(&flag)));
        Running { addr, stop, thread }
    }

    fn client(&self) -> BwmClient {
        BwmClient::connect(self.addr, Some(Duration::from_secs(10))).expect("connects")
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let joined = t.join();
            assert!(
                std::thread::panicking() || matches!(joined, Ok(Ok(()))),
                "server stops cleanly"
            );
        }
    }
}

fn spec(src: &str, mbit: u64, delay_us: Option<u64>) -> ConnSpec {
    ConnSpec {
        src: src.into(),
        dst: "B".into(),
        rate_bps: mbit * 1_000_000,
        max_packet: 1514,
        shaping_interval_us: Some(10_000),
        burst_bytes: None,
        delay_us,
        host_delay_us: None,
    }
}

fn conn_of(r: &Reply) -> u64 {
    match r {
        Reply::Admitted { conn, .. } => *conn,
        other => panic!("expected admitted, got {other:?}"),
    }
}

#[test]
fn bwm_over_tcp_admit_refuse_release_garbage_restart() {
    let dir = TempDir::new("tcp");
    let state = dir.0.join("state.json");
    let server = Running::start(state.clone());
    let mut c = server.client();

    let a = conn_of(&c.admit(spec("A", 40, None)).expect("reply").reply);
    let b = conn_of(&c.admit(spec("C", 32, Some(20_000))).expect("reply").reply);

    // Delay: a third 10 ms-burst flow would need > 9 ms.
    let r = c.admit(spec("A", 20, Some(9_000))).expect("reply");
    assert!(!r.ok);
    assert!(
        matches!(&r.reply, Reply::Error { code: ErrorCode::Refused, violations, .. }
        if matches!(violations[..], [Violation::Delay { conn: None, .. }]))
    );
    // Capacity: 40 + 32 + 30 > 98.6 Mbit/s on s1 -> B.
    let r = c.admit(spec("A", 30, None)).expect("reply");
    assert!(matches!(&r.reply, Reply::Error { violations, .. }
        if matches!(violations[..], [Violation::Capacity { .. }])));

    // Garbage, then an unknown op, then a well-formed request on the same connection.
    let r = c.raw("this is not json").expect("reply");
    assert!(matches!(
        r.reply,
        Reply::Error {
            code: ErrorCode::BadRequest,
            ..
        }
    ));
    assert_eq!(r.id, None);
    let r = c.raw(r#"{"id":99,"op":"explode"}"#).expect("reply");
    assert_eq!(r.id, Some(99));
    assert!(!r.ok);
    let Reply::List { connections } = c.list().expect("reply").reply else {
        panic!("list")
    };
    assert_eq!(connections.len(), 2);

    // Release frees the capacity: the 30 Mbit/s flow now fits.
    assert_eq!(
        c.release(a).expect("reply").reply,
        Reply::Released { conn: a }
    );
    let d = conn_of(&c.admit(spec("A", 30, None)).expect("reply").reply);
    assert!(d > b);
    // A second client is served concurrently.
    let mut c2 = server.client();
    assert!(c2.topology().expect("reply").ok);
    drop(server);
    assert!(c.list().is_err(), "the connection is closed on shutdown");

    // Restart: bookings come back from the state file with their ids and requirements.
    let server = Running::start(state);
    let mut c = server.client();
    let Reply::List { connections } = c.list().expect("reply").reply else {
        panic!("list")
    };
    let ids: Vec<u64> = connections.iter().map(|x| x.conn).collect();
    assert_eq!(ids, vec![b, d]);
    assert!(connections.iter().all(|x| x.kind == Kind::Guaranteed));
    assert_eq!(connections[0].delay_us, Some(20_000));
    let e = conn_of(&c.admit(spec("C", 1, None)).expect("reply").reply);
    assert!(e > d, "ids are not reused after a restart");
}

#[test]
fn bwm_state_file_round_trip_and_corruption() {
    let dir = TempDir::new("store");
    let path = dir.0.join("s.json");
    assert_eq!(
        load_state(&path).expect("missing = empty").bookings.len(),
        0
    );
    let mut m = Manager::new(
        parse_network(NETWORK, "network.toml").expect("valid"),
        ManagerConfig::default(),
    )
    .expect("valid");
    let r = m.handle_request(
        rtlan_core::Instant::ZERO,
        rtlan_core::bwm::Request {
            id: 1,
            op: rtlan_core::bwm::Op::Admit(spec("A", 10, None)),
        },
    );
    assert!(r.ok);
    save_state(&path, &m.snapshot()).expect("saved");
    assert_eq!(load_state(&path).expect("loads"), m.snapshot());
    assert!(!dir.0.join("s.json.tmp").exists());
    std::fs::write(&path, "{ nope").expect("write");
    assert!(matches!(load_state(&path), Err(StoreError::Corrupt { .. })));
}

#[test]
fn bwm_journal_replays_ignores_a_torn_tail_and_compacts() {
    use rtlan_core::bwm::{Booking, Change, State};
    let dir = TempDir::new("journal");
    let path = dir.0.join("s.json");
    let jpath = dir.0.join("s.json.journal");
    let booking = |conn| Booking {
        conn,
        spec: spec("A", 1, None),
        owner: "host-a".into(),
    };
    assert_eq!(
        Journal::load(&path).expect("missing = empty"),
        State::default()
    );
    let base = State {
        version: 1,
        next_conn: 3,
        bookings: vec![booking(1), booking(2)],
    };
    let mut j = Journal::create(&path, &base).expect("created");
    let unused = || panic!("no compaction yet");
    j.append(&[Change::Booked(booking(7)), Change::Released(1)], unused)
        .expect("appended");
    let loaded = Journal::load(&path).expect("replayed");
    let ids: Vec<u64> = loaded.bookings.iter().map(|b| b.conn).collect();
    assert_eq!(ids, vec![2, 7]);
    assert_eq!(loaded.next_conn, 8, "ids are never reused");
    assert!(std::fs::metadata(&path).expect("snapshot").len() > 0);
    // A crash in the middle of an append leaves a torn last line: ignored.
    let mut text = std::fs::read_to_string(&jpath).expect("journal");
    text.push_str("{\"booked\":{\"conn\":9,\"sp");
    std::fs::write(&jpath, &text).expect("write");
    let ids: Vec<u64> = Journal::load(&path)
        .expect("torn tail ignored")
        .bookings
        .iter()
        .map(|b| b.conn)
        .collect();
    assert_eq!(ids, vec![2, 7]);
    // A bad line that is not the last one is corruption (the files are left alone).
    text.push_str("\n{\"released\":2}\n");
    std::fs::write(&jpath, &text).expect("write");
    assert!(matches!(
        Journal::load(&path),
        Err(StoreError::Corrupt { .. })
    ));
    // Compaction: after COMPACT_EVERY lines the snapshot is rewritten and the journal emptied.
    let mut j = Journal::create(&path, &base).expect("created");
    let mut state = base.clone();
    for conn in 10..10 + COMPACT_EVERY as u64 - 1 {
        let c = Change::Booked(booking(conn));
        state.apply(c.clone());
        j.append(&[c], || unreachable!("not yet"))
            .expect("appended");
    }
    let last = Change::Released(10);
    state.apply(last.clone());
    let snap = state.clone();
    j.append(&[last], move || snap).expect("compacted");
    assert_eq!(std::fs::metadata(&jpath).expect("journal").len(), 0);
    assert_eq!(load_state(&path).expect("snapshot"), state);
    assert_eq!(Journal::load(&path).expect("loads"), state);
}

#[test]
fn bwm_restart_rebooks_connections_across_rtlan_switches() {
    use rtlan_core::bwm::{Op, Request};
    use rtlan_core::time::Instant;
    let network = "[[switch]]\nname = \"s1\"\nscheduler = \"wheel\"\n\
                   [[switch]]\nname = \"s2\"\nscheduler = \"wheel\"\n\
                   [[link]]\nends = [\"A\", \"s1\"]\nrate = \"100mbit\"\n\
                   [[link]]\nends = [\"s1\", \"s2\"]\nrate = \"100mbit\"\n\
                   [[link]]\nends = [\"s2\", \"B\"]\nrate = \"100mbit\"\n";
    let new_manager = || {
        let topo = parse_network(network, "rt.toml").expect("valid network");
        Manager::new(topo, ManagerConfig::default()).expect("valid topology")
    };
    let dir = TempDir::new("rt");
    let path = dir.0.join("s.json");
    let mut m = new_manager();
    let mut j = Journal::create(&path, &m.snapshot()).expect("created");
    let r = m.handle_request(
        Instant::ZERO,
        Request {
            id: 1,
            op: Op::AdmitPerHop(spec("A", 20, None)),
        },
    );
    let conn = conn_of(&r.reply);
    let bound = m.delay_bound_ns(conn).expect("booked");
    j.append(&m.take_changes(), || unreachable!("no compaction"))
        .expect("journalled");
    drop(m);
    // After a restart the journalled booking is re-admitted per hop with the same bound.
    let mut again = new_manager();
    let refused = again.restore(Journal::load(&path).expect("replayed"));
    assert!(refused.is_empty(), "{refused:?}");
    assert_eq!(again.delay_bound_ns(conn), Some(bound));
}

/// Reads one line from `stream` as JSON (`Null` at EOF or on a bad line).
fn read_json(reader: &mut impl std::io::BufRead) -> serde_json::Value {
    let mut line = String::new();
    match reader.read_line(&mut line) {
        Ok(n) if n > 0 => serde_json::from_str(&line).unwrap_or(serde_json::Value::Null),
        _ => serde_json::Value::Null,
    }
}

#[test]
fn bwm_client_cap_refuses_the_extra_client_with_an_error_and_keeps_serving() {
    let dir = TempDir::new("cap");
    let config = ServerConfig {
        max_clients: 2,
        ..ServerConfig::default()
    };
    let server = Running::start_with(dir.0.join("s.json"), config);
    let mut one = server.client();
    let mut two = server.client();
    assert!(one.list().expect("served").ok);
    assert!(two.list().expect("served").ok);
    // A third at once: a clear JSON error, then the connection closes; the server lives on.
    for _ in 0..3 {
        let mut three = server.client();
        match three.list() {
            Err(ClientError::Dropped(m)) => assert!(m.starts_with("too_many_clients"), "{m}"),
            other => panic!("expected too_many_clients, got {other:?}"),
        }
        assert!(three.list().is_err(), "closed after the refusal");
    }
    assert!(one.list().expect("still served").ok);
    // A slot freed is a slot again.
    drop(two);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let mut again = server.client();
        match again.list() {
            Ok(r) => {
                assert!(r.ok);
                break;
            }
            Err(ClientError::Dropped(_)) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("not served after a client left: {e}"),
        }
    }
}

#[test]
fn bwm_idle_clients_are_told_and_closed_busy_ones_stay() {
    use std::io::{BufReader, Write};
    let dir = TempDir::new("idle");
    let config = ServerConfig {
        idle_timeout: Some(Duration::from_millis(300)),
        ..ServerConfig::default()
    };
    let server = Running::start_with(dir.0.join("s.json"), config);
    let idle = std::net::TcpStream::connect(server.addr).expect("connect");
    idle.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let mut busy = server.client();
    let start = std::time::Instant::now();
    // The busy client asks every 100 ms for 900 ms: never idle for 300 ms.
    while start.elapsed() < Duration::from_millis(900) {
        assert!(busy.list().expect("busy client served").ok);
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut reader = BufReader::new(&idle);
    let told = read_json(&mut reader);
    assert_eq!(told["ok"], false, "{told}");
    assert_eq!(told["error"]["code"], "idle_timeout", "{told}");
    assert_eq!(
        read_json(&mut reader),
        serde_json::Value::Null,
        "then closed"
    );
    let _ = (&idle).write_all(b"{\"op\":\"list\"}\n");
    // A client that reconnects is served again.
    let mut back = server.client();
    assert!(back.list().expect("served").ok);
}

fn tokens() -> rtlan_core::bwm::Tokens {
    parse_tokens(
        "[[token]]\nprincipal = \"host-a\"\nrole = \"client\"\ntoken = \"tok-a\"\n\
         [[token]]\nprincipal = \"host-c\"\nrole = \"client\"\ntoken = \"tok-c\"\n\
         [[token]]\nprincipal = \"alice\"\nrole = \"operator\"\ntoken = \"tok-op\"\n",
        "tokens.toml",
    )
    .expect("valid tokens")
}

fn code_of(r: &rtlan_core::bwm::Response) -> Option<ErrorCode> {
    match &r.reply {
        Reply::Error { code, .. } => Some(*code),
        _ => None,
    }
}

#[test]
fn bwm_with_tokens_refuses_requests_without_a_valid_one() {
    let dir = TempDir::new("unauth");
    let config = ServerConfig {
        tokens: tokens(),
        ..ServerConfig::default()
    };
    let server = Running::start_with(dir.0.join("s.json"), config);
    for token in [None, Some("tok-x"), Some("tok-"), Some("")] {
        let mut c = server.client().with_token(token.map(str::to_string));
        for r in [
            c.admit(spec("A", 1, None)).expect("reply"),
            c.list().expect("reply"),
            c.release(1).expect("reply"),
        ] {
            assert_eq!(
                code_of(&r),
                Some(ErrorCode::Unauthenticated),
                "{token:?}: {r:?}"
            );
        }
    }
    // A token that is not a string is no token.
    let mut c = server.client();
    let r = c.raw(r#"{"id":3,"op":"list","token":7}"#).expect("reply");
    assert_eq!(code_of(&r), Some(ErrorCode::Unauthenticated));
    // Nothing was booked by all that; a valid token is served.
    let mut op = server.client().with_token(Some("tok-op".into()));
    let Reply::List { connections } = op.list().expect("reply").reply else {
        panic!("list")
    };
    assert!(connections.is_empty());
}

#[test]
fn bwm_clients_own_their_bookings_operators_manage_all_across_a_restart() {
    let dir = TempDir::new("owner");
    let state = dir.0.join("s.json");
    let config = || ServerConfig {
        tokens: tokens(),
        ..ServerConfig::default()
    };
    let server = Running::start_with(state.clone(), config());
    let mut a = server.client().with_token(Some("tok-a".into()));
    let mut c = server.client().with_token(Some("tok-c".into()));
    let ca = conn_of(&a.admit(spec("A", 10, None)).expect("reply").reply);
    let cc = conn_of(&c.admit(spec("C", 10, None)).expect("reply").reply);
    drop(server);

    // After a restart the owners come back from the journal.
    let server = Running::start_with(state, config());
    let mut a = server.client().with_token(Some("tok-a".into()));
    let mut op = server.client().with_token(Some("tok-op".into()));
    let Reply::List { connections } = a.list().expect("reply").reply else {
        panic!("list")
    };
    let mine: Vec<(u64, &str)> = connections
        .iter()
        .map(|x| (x.conn, x.owner.as_str()))
        .collect();
    assert_eq!(mine, vec![(ca, "host-a")], "a client lists only its own");
    let r = a.release(cc).expect("reply");
    assert_eq!(code_of(&r), Some(ErrorCode::Forbidden), "{r:?}");
    let r = a
        .request(rtlan_core::bwm::Op::Refresh { conns: vec![cc] })
        .expect("reply");
    assert_eq!(code_of(&r), Some(ErrorCode::Forbidden), "{r:?}");

    // The operator lists everything and may release another's booking.
    let Reply::List { connections } = op.list().expect("reply").reply else {
        panic!("list")
    };
    let all: Vec<(u64, &str)> = connections
        .iter()
        .map(|x| (x.conn, x.owner.as_str()))
        .collect();
    assert_eq!(all, vec![(ca, "host-a"), (cc, "host-c")]);
    assert_eq!(
        op.release(cc).expect("reply").reply,
        Reply::Released { conn: cc }
    );
    assert_eq!(
        a.release(ca).expect("reply").reply,
        Reply::Released { conn: ca }
    );
}

/// One manager per state: a second on the same state is refused, naming the first's PID; and a
/// manager that cannot bind its address writes nothing (its state file is not even created).
#[test]
fn a_second_manager_on_the_same_state_is_refused_and_a_failed_bind_writes_nothing() {
    let dir = TempDir::new("lock");
    let state = dir.0.join("s.json");
    let first = Running::start_with(state.clone(), ServerConfig::default());
    let manager = || {
        let topo = parse_network(NETWORK, "network.toml").expect("valid network");
        Manager::new(topo, ManagerConfig::default()).expect("valid topology")
    };
    match Server::bind_with(
        manager(),
        "127.0.0.1:0",
        state.clone(),
        ServerConfig::default(),
    ) {
        Err(ServerError::Lock(crate::bwmd::LockError::Held { holder, .. })) => {
            assert_eq!(holder, Some(std::process::id()));
        }
        Err(other) => panic!("expected the state held, got {other}"),
        Ok(_) => panic!("a second manager on one state started"),
    }
    let other = dir.0.join("t.json");
    match Server::bind_with(
        manager(),
        &first.addr.to_string(),
        other.clone(),
        ServerConfig::default(),
    ) {
        Err(ServerError::Listen { .. }) => {}
        Err(other) => panic!("expected the address in use, got {other}"),
        Ok(_) => panic!("bound an address in use"),
    }
    assert!(!other.exists(), "nothing written before the bind");
    drop(first);
    // Released with the first manager: the state can be served again.
    drop(Running::start_with(state, ServerConfig::default()));
}
