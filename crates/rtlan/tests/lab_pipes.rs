//! Provisioned pipes in the lab (QSR paper §5; docs/router.md "Provisioned pipes"), operated the
//! way the paper's operator did — through the router's web page, here in headless Chromium
//! (`chromium`, `scripts/install-deps`) running in host a's namespace:
//!
//! ```text
//!   a ── r1 ── r2 ── r3 ── b        100 Mbit/s
//!   c ──┘                           1 Gbit/s: the blaster
//! ```
//!
//! The page creates a Controlled-Load pipe at r1 from a's subnet to b's; r1 signals it with RSVP
//! to r3, where b's subnet is attached, and r3 books it and answers. Then a's 8 Mbit/s UDP
//! stream — an unmodified iperf3, no reservation of its own — crosses the pipe while c blasts
//! b at 150 Mbit/s into the same 100 Mbit/s r1–r2 link, and the page deletes the pipe again.
//! Needs root and chromium; skips without root, fails without chromium.
//!
//! Tolerances and why:
//! - **stream loss ≤ 0.1 %** of what kept to the pipe's T-SPEC, the issue's "≥ 99.9 %" (the
//!   reserved stream of `lab_router.rs` loses 0 of 4000 in every run, as here). What r1
//!   demotes as excess over the T-SPEC travels best effort (Controlled-Load, RFC 2211 §3.3)
//!   through the overloaded link and may be lost: iperf3 runs under normal scheduling beside
//!   three SCHED_FIFO routers and a browser, and a stall of more than the 15,000-byte burst's
//!   15 ms makes it send a burst the pipe does not cover (one CI rehearsal: 9 datagrams
//!   demoted, 6 of 3,995 lost, every reserved queue without a drop). So the stream may lose
//!   what was demoted plus 0.1 %, and at most 1 % may be demoted.
//! - **the blast loses more than 5 % of what it sends**, so the link the pipe crosses was
//!   really overloaded. The routers run under SCHED_FIFO ahead of iperf3 and the browser, so
//!   on this 2-core machine the blaster reaches 95–116 Mbit/s of its 150, losing 14–25 %; a
//!   blast below the link's rate lost 0.4–0.7 % (measured at 72–77 Mbit/s).
//! - **the page shows the pipe up within 10 s**: signalling across three routers takes
//!   milliseconds; the rest is a loaded 2-core machine running a browser.
//! - **≥ 90 % of the stream classified into the pipe at r1**: iperf3's own control connection
//!   and the first datagrams before the next page poll are the only others; a classifier that
//!   misses the pipe counts none.

mod common;

use std::net::Ipv4Addr;
use std::time::Duration;

use common::*;
use rtlan_lab::tools::{self, Browser, Iperf3Opts, Iperf3Server, Page};
use rtlan_lab::{Lab, PSIP_HTTP_PORT};

const TOPOLOGY: &str = r#"
[[host]]
name = "a"
[[host]]
name = "c"
[[host]]
name = "b"
[[router]]
name = "r1"
[[router]]
name = "r2"
[[router]]
name = "r3"
[[link]]
ends = ["a", "r1"]
rate = "100mbit"
[[link]]
ends = ["c", "r1"]
rate = "1gbit"
[[link]]
ends = ["r1", "r2"]
rate = "100mbit"
[[link]]
ends = ["r2", "r3"]
rate = "100mbit"
[[link]]
ends = ["r3", "b"]
rate = "100mbit"
"#;

/// The /24 of a host (every lab segment is one).
fn subnet(lab: &Lab, host: &str) -> String {
    let ip = lab.host_ip(host).expect("host");
    let o = ip.octets();
    format!("{}.{}.{}.0/24", o[0], o[1], o[2])
}

/// r1's address on a's segment: a's gateway, where a's browser finds the page.
fn gateway(lab: &Lab, host: &str) -> Ipv4Addr {
    let o = lab.host_ip(host).expect("host").octets();
    Ipv4Addr::new(o[0], o[1], o[2], 1)
}

/// The JavaScript that fills the page's form and presses "Create pipe".
fn fill_and_create(name: &str, from: &str, to: &str, rate: &str, burst: &str) -> String {
    format!(
        "(() => {{ const set = (id, v) => {{ document.getElementById(id).value = v; }};\
         set('name', {name:?}); set('from', {from:?}); set('to', {to:?});\
         set('rate', {rate:?}); set('burst', {burst:?});\
         document.getElementById('create').click(); return true; }})()"
    )
}

/// The state shown in the page's row of pipe `name`, `null` without one.
fn row_state(name: &str) -> String {
    format!(
        "(() => {{ const r = document.querySelector('#pipes tr[data-name={name:?}]');\
         return r ? r.dataset.state : null; }})()"
    )
}

fn page_text(browser: &mut Browser, page: &Page, selector: &str) -> String {
    browser
        .eval(
            page,
            &format!("document.querySelector({selector:?}).textContent"),
        )
        .expect("page evaluates")
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_pipe_made_on_the_routers_web_page_carries_a_stream_whole_under_a_blast() {
    if !root_or_skip("a_pipe_made_on_the_routers_web_page_carries_a_stream_whole_under_a_blast") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = up_str(TOPOLOGY, "pipe");
    for host in ["a", "c"] {
        ping_ok(&lab, host, "b");
    }
    let (from, to) = (subnet(&lab, "a"), subnet(&lab, "b"));
    let url = format!("http://{}:{PSIP_HTTP_PORT}/", gateway(&lab, "a"));

    let mut browser = Browser::start(lab.netns("a").unwrap()).expect("chromium starts");
    let page = browser.open(&url).expect("page opens");
    browser
        .wait_for(
            &page,
            "document.body.dataset.loaded === 'yes'",
            Duration::from_secs(20),
        )
        .expect("the page loads and lists the pipes");
    let header = page_text(&mut browser, &page, "#router");
    assert!(header.contains("router r1"), "{header}");
    assert!(
        page_text(&mut browser, &page, "#pipes tbody").contains("no pipes"),
        "an empty router says so"
    );

    // Create the pipe with the form.
    browser
        .eval(
            &page,
            &fill_and_create("video", &from, &to, "10mbit", "15000B"),
        )
        .expect("form filled");
    browser
        .wait_for(
            &page,
            &format!("{} === 'up'", row_state("video")),
            Duration::from_secs(10),
        )
        .unwrap_or_else(|e| panic!("{e}\nr1 {}", ctl_router(&lab, "r1", "pipes")));
    let r1 = ctl_router(&lab, "r1", "pipes");
    let r3 = ctl_router(&lab, "r3", "pipes");
    assert_eq!(r1[0]["role"], "ingress");
    assert_eq!(r1[0]["state"], "up");
    assert_eq!(r1[0]["to"], to.as_str());
    assert_eq!(
        r3[0]["role"], "egress",
        "the pipe ends where b's subnet is: {r3}"
    );
    assert_eq!(r3[0]["state"], "up");
    assert_eq!(r3[0]["rate_bps"], 10_000_000);
    assert!(
        ctl_router(&lab, "r2", "pipes")
            .as_array()
            .unwrap()
            .is_empty(),
        "r2 only switches the pipe's label"
    );

    // A second pipe of the same name: the page shows the API's refusal.
    browser
        .eval(
            &page,
            &fill_and_create("video", &from, &to, "1mbit", "3000B"),
        )
        .expect("form filled");
    let message = browser
        .wait_for(
            &page,
            "(() => { const m = document.getElementById('message');\
             return m.className === 'error' ? m.textContent : null; })()",
            Duration::from_secs(5),
        )
        .expect("the refusal is shown");
    assert!(
        message.as_str().unwrap().contains("name_exists"),
        "{message}"
    );

    // The stream through the pipe, under a blast into the r1–r2 link.
    let b = lab.host_ip("b").unwrap();
    let ns = |n| lab.netns(n).unwrap();
    let _video_server = Iperf3Server::start(ns("b"), 5004).unwrap();
    let _blast_server = Iperf3Server::start(ns("b"), 5201).unwrap();
    let opts = Iperf3Opts {
        length: Some(1000),
        ..Iperf3Opts::default()
    };
    // The blast in the largest datagrams a 1,500-byte MTU carries: the routers run under
    // SCHED_FIFO ahead of iperf3 on this 2-core machine, and in 1,000-byte datagrams the
    // CPU-bound blaster reached only 77.5 Mbit/s, too little to overload the r1–r2 link.
    let blast_opts = Iperf3Opts {
        length: Some(1472),
        ..Iperf3Opts::default()
    };
    let (video, blast) = std::thread::scope(|s| {
        let blast =
            s.spawn(|| tools::iperf3_udp(ns("c"), b, 5201, 6, 150_000_000, &blast_opts).unwrap());
        std::thread::sleep(Duration::from_millis(500));
        let video = tools::iperf3_udp(ns("a"), b, 5004, 4, 8_000_000, &opts).unwrap();
        (video, blast.join().unwrap())
    });
    eprintln!(
        "stream {} of {} lost ({:.3} %), blast {:.1} Mbit/s sent, {:.1} received",
        video.lost_packets,
        video.packets,
        video.loss_percent,
        blast.sender_bps / 1e6,
        blast.receiver_bps / 1e6
    );
    for r in ["r1", "r2", "r3"] {
        let s = ctl_router(&lab, r, "stats");
        let kernel_drops: u64 = s["shell"]["ports"]
            .as_array()
            .map(|ports| {
                ports
                    .iter()
                    .filter_map(|p| p["rx_kernel_drops"].as_u64())
                    .sum()
            })
            .unwrap_or(0);
        eprintln!(
            "{r}: reserved-queue drops {}, receive-ring drops {kernel_drops}",
            s["router"]["drop_reserved_queue"],
        );
    }
    assert!(
        blast.receiver_bps < 0.95 * blast.sender_bps,
        "the blast overloads the r1–r2 link: {blast:?}"
    );
    let r1 = ctl_router(&lab, "r1", "pipes");
    let r3 = ctl_router(&lab, "r3", "pipes");
    let into = r1[0]["counters"]["packets"].as_u64().unwrap_or(0);
    assert!(
        into >= video.packets * 9 / 10,
        "r1 put the stream into the pipe: {into} of {} ({r1})",
        video.packets
    );
    assert!(
        r3[0]["counters"]["packets"].as_u64().unwrap_or(0) >= video.packets * 9 / 10,
        "and r3 took it out: {r3}"
    );
    let r1_stats = ctl_router(&lab, "r1", "stats");
    let demoted = r1_stats["router"]["demoted_excess"].as_u64().unwrap_or(0);
    assert!(
        demoted <= video.packets / 100,
        "the stream kept to the pipe's T-SPEC but for {demoted} of {} datagrams: {r1_stats}",
        video.packets
    );
    assert!(
        video.lost_packets <= demoted + video.packets / 1000,
        "the pipe's stream lost {} of {} datagrams under the blast, {demoted} demoted as \
         excess at r1\nr1 {}\nr3 {}",
        video.lost_packets,
        video.packets,
        r1_stats["router"],
        ctl_router(&lab, "r3", "stats")["router"]
    );
    // The page shows what the pipe carried.
    browser
        .wait_for(
            &page,
            "(() => { const c = document.querySelector('#pipes tr[data-name=\"video\"] .packets');\
             return c && Number(c.textContent) > 0; })()",
            Duration::from_secs(5),
        )
        .expect("the page counts the pipe's packets");

    // Delete it with its row's button: gone from the page and from both ends.
    browser
        .eval(
            &page,
            "document.querySelector('#pipes tr[data-name=\"video\"] button.delete').click()",
        )
        .expect("delete pressed");
    browser
        .wait_for(
            &page,
            &format!("{} === null", row_state("video")),
            Duration::from_secs(10),
        )
        .expect("the row goes");
    let (gone, _) = wait_until(Duration::from_secs(3), || {
        ["r1", "r3"].iter().all(|r| {
            ctl_router(&lab, r, "pipes")
                .as_array()
                .is_some_and(Vec::is_empty)
        })
    });
    assert!(gone, "a router still holds the pipe after delete");
    drop(browser);
    down_clean(lab);
}
