//! The QSR router at scale in the simulator (issue 13: "the same scenarios in the simulator at
//! 100 routers"): a ring of 100 rtlan routers, a host on each, 100 Mbit/s links; 100 streams
//! of 1 Mbit/s, each reserved with RSVP from host i to host i + 37 (mod 100) — paths of up to
//! 37 routers, both directions of the ring in use, labels swapped at every router between the
//! first and the last. Every reservation must open and every reserved stream arrive whole.

mod common;

use rtlan_sim::RunOptions;

const ROUTERS: usize = 100;
const HOP: usize = 37;

fn ring() -> String {
    let mut s = String::new();
    for i in 0..ROUTERS {
        s += &format!("[[host]]\nname = \"h{i}\"\n[[router]]\nname = \"r{i}\"\n");
    }
    for i in 0..ROUTERS {
        s += &format!("[[link]]\nends = [\"h{i}\", \"r{i}\"]\nrate = \"100mbit\"\n");
        let next = (i + 1) % ROUTERS;
        s += &format!("[[link]]\nends = [\"r{i}\", \"r{next}\"]\nrate = \"100mbit\"\n");
    }
    s += "[sim]\nduration = \"1500ms\"\nwarmup = \"800ms\"\n";
    for i in 0..ROUTERS {
        let dst = (i + HOP) % ROUTERS;
        s += &format!(
            "[[traffic]]\nname = \"s{i}\"\nsrc = \"h{i}\"\ndst = \"h{dst}\"\nkind = \"constant\"\n\
             rate = \"1mbit\"\nsize = 500\nreserve = {{ rate = \"1mbit\" }}\n"
        );
    }
    s
}

#[test]
fn a_ring_of_100_routers_carries_100_reserved_streams_across_up_to_37_routers() {
    let scenario = common::parse(&ring());
    assert_eq!(scenario.topology.routers.len(), ROUTERS);
    let results = common::simulate(&scenario, &RunOptions::default()).results;
    let opened = results
        .flows
        .iter()
        .filter(|f| f.reservation == "opened")
        .count();
    assert_eq!(opened, ROUTERS, "every reservation opens");
    for f in &results.flows {
        assert_eq!(f.loss_frames, Some(0), "{}: {f:?}", f.name);
    }
    // Labels were switched along the way: every stream crosses at least 36 routers that switch
    // it by label (all but its first and last), spread over the ring.
    let switched: u64 = results
        .routers
        .iter()
        .map(|r| r.stats.labelled_switched)
        .sum();
    let reserved_in: u64 = results.routers.iter().map(|r| r.stats.reserved_in).sum();
    assert!(reserved_in > 0);
    assert!(
        switched >= reserved_in * 36,
        "labels switched {switched} times for {reserved_in} packets classified"
    );
    let sessions: u64 = results.routers.iter().map(|r| r.stats.rsvp.resvs).sum();
    eprintln!(
        "ring: {opened} reservations, {sessions} reservation states in all routers, \
         {reserved_in} packets classified, {switched} label switches"
    );
    assert!(sessions >= ROUTERS as u64 * 37);
}
