use std::fs::File;

use pcap_file::pcap::PcapReader;

use super::*;

fn ports() -> Vec<String> {
    vec!["p0".into(), "p1".into(), "p2".into()]
}

fn args(json: serde_json::Value) -> CaptureArgs {
    serde_json::from_value(json).expect("capture args parse")
}

fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("rtl-capture-{}-{name}.pcap", std::process::id()))
}

#[test]
fn a_port_is_found_by_name_index_or_index_as_text() {
    for port in [
        serde_json::json!("p1"),
        serde_json::json!(1),
        serde_json::json!("1"),
    ] {
        let plan = args(serde_json::json!({"port": port, "path": "/tmp/x.pcap", "frames": 5}))
            .check(&ports())
            .expect("valid");
        assert_eq!((plan.port, plan.ifname.as_str()), (1, "p1"), "{port}");
        assert_eq!(plan.frames, 5);
        assert_eq!(plan.duration, None);
    }
    for port in [
        serde_json::json!("eth9"),
        serde_json::json!(3),
        serde_json::json!("3"),
    ] {
        let err = args(serde_json::json!({"port": port, "path": "/tmp/x.pcap", "frames": 5}))
            .check(&ports())
            .expect_err("no such port");
        assert_eq!(err.code(), "no_such_port", "{port}");
    }
}

#[test]
fn unsafe_or_unbounded_requests_are_refused_with_their_code() {
    let cases = [
        (
            serde_json::json!({"port": 0, "path": "x.pcap", "frames": 5}),
            "relative_path",
        ),
        (
            serde_json::json!({"port": 0, "path": "/tmp/x.pcap"}),
            "no_stop_condition",
        ),
        (
            serde_json::json!({"port": 0, "path": "/tmp/x.pcap", "frames": 0}),
            "bad_limit",
        ),
        (
            serde_json::json!({"port": 0, "path": "/tmp/x.pcap", "frames": MAX_FRAMES + 1}),
            "bad_limit",
        ),
        (
            serde_json::json!({"port": 0, "path": "/tmp/x.pcap", "seconds": 0}),
            "bad_limit",
        ),
        (
            serde_json::json!({"port": 0, "path": "/tmp/x.pcap", "seconds": -1.5}),
            "bad_limit",
        ),
        (
            serde_json::json!({"port": 0, "path": "/tmp/x.pcap", "seconds": MAX_SECONDS + 1.0}),
            "bad_limit",
        ),
    ];
    for (json, code) in cases {
        let err = args(json.clone()).check(&ports()).expect_err("refused");
        assert_eq!(err.code(), code, "{json}");
    }
    let plan = args(serde_json::json!({"port": "p2", "path": "/tmp/x.pcap", "seconds": 0.5}))
        .check(&ports())
        .expect("a time limit alone is a stop condition");
    assert_eq!(plan.duration, Some(Duration::from_millis(500)));
    assert_eq!(plan.frames, u64::MAX);
    // Unknown arguments (a misspelt limit) are not silently ignored.
    assert!(serde_json::from_value::<CaptureArgs>(
        serde_json::json!({"port": 0, "path": "/tmp/x.pcap", "frame": 5})
    )
    .is_err());
}

#[test]
fn an_existing_file_is_kept_unless_overwrite() {
    let path = scratch("exists");
    std::fs::write(&path, b"precious").expect("write");
    let plan = args(serde_json::json!({"port": 0, "path": path, "frames": 1}))
        .check(&ports())
        .expect("valid");
    let err = CaptureHandle::start(plan.clone(), Instant::from_nanos(0)).expect_err("exists");
    assert_eq!(err.code(), "file_exists");
    assert_eq!(std::fs::read(&path).expect("read"), b"precious");

    let plan = CapturePlan {
        overwrite: true,
        ..plan
    };
    let (tap, mut handle) = CaptureHandle::start(plan, Instant::from_nanos(0)).expect("overwrite");
    drop(tap);
    handle.join();
    assert_eq!(handle.status().state, "done");
    assert_ne!(std::fs::read(&path).expect("read"), b"precious");
    let _ = std::fs::remove_file(&path);

    let missing = PathBuf::from("/nonexistent-rtl-dir/x.pcap");
    let plan = args(serde_json::json!({"port": 0, "path": missing, "frames": 1}))
        .check(&ports())
        .expect("valid");
    let err = CaptureHandle::start(plan, Instant::from_nanos(0)).expect_err("no directory");
    assert_eq!(err.code(), "create_failed");
}

#[test]
fn frames_are_written_until_the_frame_limit_and_counted_by_direction() {
    let path = scratch("limit");
    let _ = std::fs::remove_file(&path);
    let plan = args(serde_json::json!({"port": 1, "path": path, "frames": 3}))
        .check(&ports())
        .expect("valid");
    let start = Instant::from_nanos(1_000_000_000);
    let (mut tap, mut handle) = CaptureHandle::start(plan, start).expect("start");
    assert_eq!(tap.port(), 1);
    tap.record(start, false, &[1; 60]);
    tap.record(start + Duration::from_micros(5), true, &[2; 64]);
    assert!(!tap.finished());
    tap.record(start + Duration::from_micros(9), false, &[3; 70]);
    assert!(tap.finished(), "third frame reaches the limit");
    tap.record(start + Duration::from_micros(10), false, &[4; 80]);
    drop(tap);
    handle.join();
    let status = handle.status();
    assert_eq!(status.state, "done");
    assert_eq!(status.stop_reason, Some(StopReason::Frames));
    assert_eq!(
        (
            status.rx_frames,
            status.tx_frames,
            status.written,
            status.dropped
        ),
        (2, 1, 3, 0)
    );
    assert_eq!(status.bytes, 60 + 64 + 70);

    let mut reader = PcapReader::new(File::open(&path).expect("open")).expect("pcap header");
    assert_eq!(reader.header().datalink, DataLink::ETHERNET);
    assert_eq!(reader.header().ts_resolution, TsResolution::NanoSecond);
    let mut packets = Vec::new();
    while let Some(p) = reader.next_packet() {
        let p = p.expect("packet");
        packets.push((p.timestamp, p.data.to_vec()));
    }
    assert_eq!(packets.len(), 3);
    assert_eq!(packets[1].1, vec![2; 64]);
    assert_eq!(packets[1].0 - packets[0].0, Duration::from_micros(5));
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_full_queue_drops_and_counts_and_the_time_limit_ends_the_capture() {
    let path = scratch("full");
    let _ = std::fs::remove_file(&path);
    let plan = args(serde_json::json!({"port": 0, "path": path, "seconds": 0.3}))
        .check(&ports())
        .expect("valid");
    let now = Instant::from_nanos(0);
    let (mut tap, mut handle) = CaptureHandle::start(plan, now).expect("start");
    // Far more than the queue holds, faster than any disk: some are dropped, none waited for.
    let offered = QUEUE_FRAMES as u64 * 8;
    for _ in 0..offered {
        tap.record(now, false, &[0; 1500]);
    }
    let status = handle.status();
    assert_eq!(status.rx_frames + status.dropped, offered);
    // The time limit ends the writer even with the tap still in place; the tap then finishes at
    // its next frame.
    handle.join();
    let status = handle.status();
    assert_eq!(status.state, "done");
    assert_eq!(status.stop_reason, Some(StopReason::Seconds));
    assert_eq!(
        status.written, status.rx_frames,
        "every queued frame is written"
    );
    tap.record(now, true, &[0; 60]);
    assert!(tap.finished());
    let _ = std::fs::remove_file(&path);
}

#[test]
fn stop_reasons_round_trip_through_their_codes() {
    assert_eq!(StopReason::from_code(0), None, "0 is 'not stopped'");
    for reason in StopReason::ALL {
        assert_eq!(StopReason::from_code(reason.code()), Some(reason));
    }
    assert_eq!(StopReason::from_code(StopReason::ALL.len() as u8 + 1), None);
}
