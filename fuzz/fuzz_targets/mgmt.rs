//! Fuzzes the one management envelope (docs/mgmt.md) on both sides: a daemon reading a request
//! line (`parse_line`, then decoding the body as the switch socket's request), and a client
//! reading a reply or event line (`parse_incoming`). Neither may panic on any bytes; a reply the
//! daemon builds must read back, through the client's parser, as the same id and result.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtlan_linux::mgmt::{self, Incoming};
use rtlan_linux::switchd::Request;

fuzz_target!(|data: &[u8]| {
    let (id, result) = match mgmt::parse_line(data) {
        Ok(envelope) => {
            let decoded = envelope.decode::<Request>();
            (envelope.id, decoded.map(|req| serde_json::Value::String(format!("{req:?}"))))
        }
        Err((id, error)) => (id, Err(error)),
    };
    let line = mgmt::reply(id, result.clone()).to_string();
    match mgmt::parse_incoming(&line) {
        Ok(Incoming::Reply { id: back, result: read }) => {
            assert_eq!(back, id, "the reply echoes the request id");
            assert_eq!(read, result, "the reply reads back as built");
        }
        other => panic!("a reply we built does not read back as one: {other:?} from {line}"),
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = mgmt::parse_incoming(text);
    }
});
