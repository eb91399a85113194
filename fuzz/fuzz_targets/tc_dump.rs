//! Fuzzes the host daemon's reading of rtnetlink traffic-control dumps and saved snapshots
//! (`crates/linux/src/rtcd/tc_save.rs`, issue 15 item 2): the messages of one `recv` walked
//! bounds-checked, each object stripped of its dump-only attributes, its size table rebuilt and
//! its options fixed for the request that replays it. Nothing may panic, and every object the
//! walker accepted must still be walkable once made ready for its request.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    rtlan_linux::rtcd::fuzz_tc_dump(data);
});
