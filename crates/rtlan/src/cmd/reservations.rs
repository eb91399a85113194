//! `rtlan reservations`: every reservation on the network, one row each, with its path and delay
//! bound (docs/netview.md).
//!
//! Under per-hop admission (EtheReal §3.3: each switch holds one connection-table entry per
//! connection, keyed by input port and the id the frames carry on that link, and swaps the id
//! for the output link's) no node knows a whole path, so the view asks every switch's control
//! socket for `connections` and stitches the entries: an entry leaving switch S by port p with
//! id k continues at the entry of the switch at the far end of p's link whose input port is that
//! link's end and whose input id is k. The ends of links come from the topology. A chain that
//! stops before a last hop (the next switch has no matching entry, or the link leads nowhere
//! known) is shown as incomplete with the reason, never dropped; an entry nobody leads to starts
//! its own incomplete chain; a chain that comes back to an entry it has visited is a loop.
//!
//! The bound is the switches' own: each entry reports `bound_ns`, *b*/*r* + host delay + Σθ up
//! to that hop, computed at admission by `rtlan_core::switch::bound::hop_terms` (docs/delay.md
//! §2); the last switch's value is the end-to-end bound SETUP_OK returned to the sender.
//!
//! Under central admission (Löser/Härtig §3.2) the bandwidth manager knows every booking's path
//! and bound already: its `list` reply is rendered in the same shape.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use serde::{Deserialize, Serialize};

/// Arguments of `rtlan reservations`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["lab", "topology", "bwm"])))]
#[command(after_help = "\
Per-hop admission (the switches admit): --lab NAME asks every rtlan switch of a running lab for
its connection table and stitches the entries into end-to-end paths, using the lab's topology
for the link ends; outside a lab, --topology FILE and one --switch NAME=SOCKET per rtlan switch
do the same. Central admission: --bwm ADDR renders the bandwidth manager's bookings.

    rtlan reservations --lab demo
    rtlan reservations --topology net.toml --switch s1=/run/rtlan/s1.sock --switch s2=/run/rtlan/s2.sock
    rtlan reservations --bwm 127.0.0.1:7470 --json")]
pub(crate) struct ReservationsArgs {
    /// A running lab: its topology and its switches' control sockets (per-hop admission).
    #[arg(long, value_name = "NAME")]
    lab: Option<String>,
    /// A topology file (the lab's format) of a network outside the lab, with `--switch` for
    /// each rtlan switch's control socket (per-hop admission). A switch's ports are numbered in
    /// the order its links appear in the file — write them in the order of its `[[port]]`s.
    #[arg(long, value_name = "FILE", requires = "switch")]
    topology: Option<PathBuf>,
    /// `NAME=SOCKET`: the control socket of switch NAME of --topology (repeat per switch).
    #[arg(long = "switch", value_name = "NAME=SOCKET", requires = "topology", value_parser = parse_switch)]
    switch: Vec<(String, PathBuf)>,
    /// A bandwidth manager's address (central admission).
    #[arg(long, value_name = "ADDR")]
    bwm: Option<SocketAddr>,
    /// Token for the manager (else RTLAN_BWM_TOKEN).
    #[arg(long, requires = "bwm")]
    token: Option<String>,
    /// Print JSON (docs/netview.md) instead of a table.
    #[arg(long)]
    json: bool,
}

/// The view: where it came from and every reservation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct NetView {
    /// `per_hop` (stitched from the switches) or `manager` (the bandwidth manager's bookings).
    pub admission: String,
    /// One entry per reservation.
    pub reservations: Vec<Reservation>,
}

/// One reservation, end to end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Reservation {
    /// Ids naming it: the manager's booking id, or the connection id on every link of the path
    /// (first link first).
    pub ids: Vec<u64>,
    /// Sending host, by topology name (`null` when the chain does not reach back to a host).
    pub src: Option<String>,
    /// Receiving host (`null` when unknown).
    pub dst: Option<String>,
    /// Reserved rate, bit/s.
    pub rate_bps: u64,
    /// Burst, bytes.
    pub burst_bytes: u64,
    /// Largest packet, bytes.
    pub max_packet: u64,
    /// The switches crossed, in order.
    pub path: Vec<Hop>,
    /// End-to-end delay bound, µs (rounded up); `null` when the path is incomplete.
    pub delay_bound_us: Option<u64>,
    /// Whether the path runs from a first hop to a last hop.
    pub complete: bool,
    /// Why it is incomplete.
    pub problem: Option<String>,
}

/// One switch on a path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Hop {
    /// The switch.
    pub node: String,
    /// Input port index (`null` from the manager, which books by link).
    pub in_port: Option<u16>,
    /// Output port index.
    pub out_port: Option<u16>,
    /// Node the frames come from.
    pub from: Option<String>,
    /// Node they go to.
    pub to: Option<String>,
}

/// One entry of a switch's `connections` reply (docs/switch.md); only what the view uses.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct Entry {
    pub in_port: u16,
    pub in_id: u16,
    pub out_port: u16,
    pub out_id: Option<u16>,
    pub dst_ip: Ipv4Addr,
    pub rate_bps: u64,
    pub burst_bytes: u64,
    pub max_packet: u64,
    pub first_hop: bool,
    pub last_hop: bool,
    /// Missing from switches older than this field (then the bound is unknown).
    #[serde(default)]
    pub bound_ns: u64,
}

/// The wiring the stitching needs: for a switch's port, the node at the other end of its link
/// and, when that node is a switch, the port index there.
#[derive(Debug, Clone, Default)]
pub(crate) struct Wiring {
    /// (node, port index) → (peer node, peer port index).
    peer: HashMap<(String, u16), (String, u16)>,
    /// Host addresses → host names.
    hosts: HashMap<Ipv4Addr, String>,
}

impl Wiring {
    /// The wiring of a lab topology: ports are numbered in link order per node, as the lab
    /// builds them (`Topology::interfaces`).
    pub(crate) fn of(topo: &rtlan_lab::Topology) -> Wiring {
        let mut ports: HashMap<&str, Vec<(usize, usize)>> = HashMap::new();
        for (li, link) in topo.links.iter().enumerate() {
            for (ei, end) in link.ends.iter().enumerate() {
                ports.entry(end.node.as_str()).or_default().push((li, ei));
            }
        }
        let index = |node: &str, key: (usize, usize)| {
            ports
                .get(node)
                .and_then(|v| v.iter().position(|&k| k == key))
                .and_then(|i| u16::try_from(i).ok())
        };
        let mut wiring = Wiring::default();
        for (li, link) in topo.links.iter().enumerate() {
            for ei in 0..2 {
                let (own, peer) = (&link.ends[ei], &link.ends[1 - ei]);
                if let (Some(p), Some(q)) =
                    (index(&own.node, (li, ei)), index(&peer.node, (li, 1 - ei)))
                {
                    wiring
                        .peer
                        .insert((own.node.clone(), p), (peer.node.clone(), q));
                }
            }
        }
        for host in &topo.hosts {
            wiring.hosts.insert(host.ip, host.name.clone());
        }
        wiring
    }

    /// Declares a link end: `node`'s port `port` leads to `peer`'s port `peer_port` (both ways).
    #[cfg(test)]
    fn link(&mut self, node: &str, port: u16, peer: &str, peer_port: u16) {
        self.peer
            .insert((node.to_string(), port), (peer.to_string(), peer_port));
        self.peer
            .insert((peer.to_string(), peer_port), (node.to_string(), port));
    }

    fn peer(&self, node: &str, port: u16) -> Option<&(String, u16)> {
        self.peer.get(&(node.to_string(), port))
    }
}

/// Rounds nanoseconds up to whole microseconds.
fn ceil_us(ns: u64) -> u64 {
    ns.div_ceil(1000)
}

/// Stitches the switches' connection tables (`tables`: switch name → its `connections` entries)
/// into end-to-end reservations. Every entry appears in exactly one reservation.
pub(crate) fn stitch(tables: &BTreeMap<String, Vec<Entry>>, wiring: &Wiring) -> Vec<Reservation> {
    let key_of = |sw: &str, e: &Entry| (sw.to_string(), e.in_port, e.in_id);
    let mut by_key: BTreeMap<(String, u16, u16), &Entry> = BTreeMap::new();
    for (sw, entries) in tables {
        for e in entries {
            by_key.insert(key_of(sw, e), e);
        }
    }
    // The entry each entry leads to, when there is one.
    let next_of = |sw: &str, e: &Entry| -> Result<Option<(String, u16, u16)>, String> {
        if e.last_hop {
            return Ok(None);
        }
        let Some(out_id) = e.out_id else {
            return Err(format!("{sw} p{} has no output id", e.out_port));
        };
        let Some((peer, peer_port)) = wiring.peer(sw, e.out_port) else {
            return Err(format!(
                "{sw} p{} leads nowhere in the topology",
                e.out_port
            ));
        };
        if !tables.contains_key(peer) {
            return Err(format!("{peer} (after {sw} p{}) was not asked", e.out_port));
        }
        let key = (peer.clone(), *peer_port, out_id);
        if by_key.contains_key(&key) {
            Ok(Some(key))
        } else {
            Err(format!("{peer} has no entry for p{peer_port} id {out_id}"))
        }
    };
    let mut led_to: BTreeSet<(String, u16, u16)> = BTreeSet::new();
    for (key, e) in &by_key {
        if let Ok(Some(next)) = next_of(&key.0, e) {
            led_to.insert(next);
        }
    }
    // Heads first: first hops, then entries nothing leads to, then whatever is left (loops).
    let mut heads: Vec<&(String, u16, u16)> = by_key
        .iter()
        .filter(|(_, e)| e.first_hop)
        .map(|(k, _)| k)
        .collect();
    heads.extend(
        by_key
            .iter()
            .filter(|(k, e)| !e.first_hop && !led_to.contains(*k))
            .map(|(k, _)| k),
    );
    heads.extend(by_key.keys());
    let mut used: BTreeSet<(String, u16, u16)> = BTreeSet::new();
    let mut out = Vec::new();
    for head in heads {
        if used.contains(head) {
            continue;
        }
        let Some(first) = by_key.get(head) else {
            continue;
        };
        // An entry something leads to but no chain reached lies on a cycle: the loop check
        // below names it.
        let mut problem = if first.first_hop || led_to.contains(head) {
            None
        } else {
            Some(format!(
                "no upstream hop found for {} p{} id {}",
                head.0, head.1, head.2
            ))
        };
        let src = if first.first_hop {
            wiring
                .peer(&head.0, first.in_port)
                .map(|(n, _)| n.clone())
                .filter(|n| wiring.hosts.values().any(|h| h == n))
        } else {
            None
        };
        let mut ids = vec![u64::from(head.2)];
        let mut path = Vec::new();
        let mut seen: BTreeSet<(String, u16, u16)> = BTreeSet::new();
        let mut key = head.clone();
        let mut last: &Entry = first;
        let mut complete = false;
        while let Some(e) = by_key.get(&key).copied() {
            if !seen.insert(key.clone()) {
                problem.get_or_insert(format!("loop: {} p{} id {} again", key.0, key.1, key.2));
                break;
            }
            used.insert(key.clone());
            last = e;
            path.push(Hop {
                node: key.0.clone(),
                in_port: Some(e.in_port),
                out_port: Some(e.out_port),
                from: wiring.peer(&key.0, e.in_port).map(|(n, _)| n.clone()),
                to: wiring.peer(&key.0, e.out_port).map(|(n, _)| n.clone()),
            });
            match next_of(&key.0, e) {
                Ok(None) => {
                    complete = problem.is_none();
                    break;
                }
                Ok(Some(next)) => {
                    ids.push(u64::from(next.2));
                    key = next;
                }
                Err(why) => {
                    problem.get_or_insert(why);
                    break;
                }
            }
        }
        let dst = if last.last_hop {
            wiring.hosts.get(&last.dst_ip).cloned()
        } else {
            wiring.hosts.get(&first.dst_ip).cloned()
        };
        out.push(Reservation {
            ids,
            src,
            dst,
            rate_bps: first.rate_bps,
            burst_bytes: first.burst_bytes,
            max_packet: first.max_packet,
            path,
            delay_bound_us: (complete && last.bound_ns > 0).then(|| ceil_us(last.bound_ns)),
            complete,
            problem,
        });
    }
    out
}

/// The view of a bandwidth manager's bookings (its `list`): paths are node names, the bound
/// is the manager's.
pub(crate) fn from_manager(list: &[rtlan_core::bwm::ConnInfo]) -> Vec<Reservation> {
    list.iter()
        .filter(|c| c.dst.is_some())
        .map(|c| {
            let nodes = &c.path;
            let inner = nodes.len().saturating_sub(1);
            let path = (1..inner)
                .map(|i| Hop {
                    node: nodes[i].clone(),
                    in_port: None,
                    out_port: None,
                    from: nodes.get(i - 1).cloned(),
                    to: nodes.get(i + 1).cloned(),
                })
                .collect();
            Reservation {
                ids: vec![c.conn],
                src: Some(c.src.clone()),
                dst: c.dst.clone(),
                rate_bps: c.rate_bps,
                burst_bytes: c.bucket_bytes,
                max_packet: c.max_packet,
                path,
                delay_bound_us: c.delay_bound_us,
                complete: true,
                problem: None,
            }
        })
        .collect()
}

/// The text table of a view.
pub(crate) fn render(view: &NetView) -> String {
    let mut out = format!(
        "{:<14} {:<8} {:<8} {:>10} {:>9} {:>10}  path\n",
        "ids", "src", "dst", "rate", "burst B", "bound µs"
    );
    for r in &view.reservations {
        let ids: Vec<String> = r.ids.iter().map(u64::to_string).collect();
        let hops: Vec<String> = r
            .path
            .iter()
            .map(|h| match (h.in_port, h.out_port) {
                (Some(i), Some(o)) => format!("{}:p{i}→p{o}", h.node),
                _ => h.node.clone(),
            })
            .collect();
        let mut path = hops.join(" → ");
        if let Some(p) = &r.problem {
            path += &format!("  INCOMPLETE: {p}");
        }
        out += &format!(
            "{:<14} {:<8} {:<8} {:>10} {:>9} {:>10}  {}\n",
            ids.join(","),
            r.src.as_deref().unwrap_or("?"),
            r.dst.as_deref().unwrap_or("?"),
            rtlan_core::units::format_rate(r.rate_bps),
            r.burst_bytes,
            r.delay_bound_us
                .map_or_else(|| "-".to_string(), |b| b.to_string()),
            path
        );
    }
    out
}

/// `NAME=SOCKET` of `--switch`.
fn parse_switch(text: &str) -> Result<(String, PathBuf), String> {
    match text.split_once('=') {
        Some((name, path)) if !name.is_empty() && !path.is_empty() => {
            Ok((name.to_string(), PathBuf::from(path)))
        }
        _ => Err(format!("`{text}` is not NAME=SOCKET")),
    }
}

/// The per-hop view of the switches at `sockets` (name → control socket), wired as `topo`:
/// every switch's `connections`, stitched.
fn of_switches(
    topo: &rtlan_lab::Topology,
    sockets: impl IntoIterator<Item = (String, PathBuf)>,
) -> anyhow::Result<NetView> {
    let mut tables = BTreeMap::new();
    for (sw, socket) in sockets {
        let data = rtlan_linux::ctl::request(&socket, "connections")
            .with_context(|| format!("asking switch `{sw}` for its connections"))?;
        let entries: Vec<Entry> = serde_json::from_value(data)
            .with_context(|| format!("switch `{sw}`: unexpected `connections` reply"))?;
        tables.insert(sw, entries);
    }
    Ok(NetView {
        admission: "per_hop".to_string(),
        reservations: stitch(&tables, &Wiring::of(topo)),
    })
}

/// The per-hop view of a running lab: every rtlan switch's `connections`, stitched.
pub(crate) fn of_lab(name: &str) -> anyhow::Result<NetView> {
    let lab = rtlan_lab::Lab::open(name)?;
    let sockets: Vec<(String, PathBuf)> = lab
        .switches()
        .into_iter()
        .filter_map(|sw| lab.switch_socket(sw).map(|s| (sw.to_string(), s)))
        .collect();
    of_switches(lab.topology(), sockets)
}

/// The per-hop view of a network outside the lab: its topology file and the switches' sockets.
fn of_files(topology: &std::path::Path, sockets: &[(String, PathBuf)]) -> anyhow::Result<NetView> {
    let topo = rtlan_lab::Topology::from_file(topology)?;
    for (name, _) in sockets {
        anyhow::ensure!(
            topo.switches.iter().any(|s| &s.name == name),
            "--switch {name}: {} has no switch of that name",
            topology.display()
        );
    }
    of_switches(&topo, sockets.iter().cloned())
}

/// The central view: a bandwidth manager's bookings.
fn of_manager(addr: SocketAddr, token: Option<String>) -> anyhow::Result<NetView> {
    let token = token
        .or_else(|| std::env::var("RTLAN_BWM_TOKEN").ok())
        .filter(|t| !t.is_empty());
    let mut client =
        rtlan_linux::bwmd::client::BwmClient::connect_timeout(addr, Duration::from_secs(5))
            .with_context(|| format!("connecting to the bandwidth manager at {addr}"))?
            .with_token(token);
    let resp = client.list()?;
    match resp.reply {
        rtlan_core::bwm::Reply::List { connections } => Ok(NetView {
            admission: "manager".to_string(),
            reservations: from_manager(&connections),
        }),
        other => anyhow::bail!(
            "the manager refused `list`: {}",
            serde_json::to_string(&other).unwrap_or_default()
        ),
    }
}

pub(crate) fn run(args: ReservationsArgs) -> anyhow::Result<ExitCode> {
    let view = match (&args.lab, &args.topology, args.bwm) {
        (Some(lab), _, _) => of_lab(lab)?,
        (None, Some(topology), _) => of_files(topology, &args.switch)?,
        (None, None, Some(addr)) => of_manager(addr, args.token)?,
        (None, None, None) => {
            anyhow::bail!("give --lab NAME, --topology FILE --switch NAME=SOCKET…, or --bwm ADDR")
        }
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&view)?);
    } else {
        print!("{}", render(&view));
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(in_port: u16, in_id: u16, out_port: u16, out_id: Option<u16>) -> Entry {
        Entry {
            in_port,
            in_id,
            out_port,
            out_id,
            dst_ip: Ipv4Addr::new(198, 18, 0, 3),
            rate_bps: 1_000_000,
            burst_bytes: 3028,
            max_packet: 1514,
            first_hop: false,
            last_hop: out_id.is_none(),
            bound_ns: 0,
        }
    }

    /// chain3: a–s1 p0, s1 p1–s2 p0, b–s2 p1, s2 p2–s3 p0, c–s3 p1.
    fn chain3() -> Wiring {
        let mut w = Wiring::default();
        w.link("a", 0, "s1", 0);
        w.link("s1", 1, "s2", 0);
        w.link("b", 0, "s2", 1);
        w.link("s2", 2, "s3", 0);
        w.link("c", 0, "s3", 1);
        for (i, h) in ["a", "b", "c"].iter().enumerate() {
            w.hosts
                .insert(Ipv4Addr::new(198, 18, 0, i as u8 + 1), h.to_string());
        }
        w
    }

    fn tables(list: Vec<(&str, Vec<Entry>)>) -> BTreeMap<String, Vec<Entry>> {
        list.into_iter().map(|(s, e)| (s.to_string(), e)).collect()
    }

    #[test]
    fn stitches_two_reservations_sharing_a_link() {
        // a→c: s1 (p0 16 → p1 64), s2 (p0 64 → p2 65), s3 (p0 65 → p1, last).
        // b→c: s2 (p1 16 → p2 64), s3 (p0 64 → p1, last): shares s2–s3 with a→c.
        let mut a1 = entry(0, 16, 1, Some(64));
        a1.first_hop = true;
        let mut b1 = entry(1, 16, 2, Some(64));
        b1.first_hop = true;
        b1.rate_bps = 2_000_000;
        let mut a3 = entry(0, 65, 1, None);
        a3.bound_ns = 1_234_001;
        let mut b3 = entry(0, 64, 1, None);
        b3.bound_ns = 900_000;
        b3.rate_bps = 2_000_000;
        let t = tables(vec![
            ("s1", vec![a1]),
            ("s2", vec![entry(0, 64, 2, Some(65)), b1]),
            ("s3", vec![b3, a3]),
        ]);
        let mut got = stitch(&t, &chain3());
        got.sort_by_key(|r| r.src.clone());
        assert_eq!(got.len(), 2);
        let (ac, bc) = (&got[0], &got[1]);
        assert_eq!(
            (ac.src.as_deref(), ac.dst.as_deref()),
            (Some("a"), Some("c"))
        );
        assert_eq!(ac.ids, vec![16, 64, 65]);
        let nodes: Vec<_> = ac.path.iter().map(|h| h.node.as_str()).collect();
        assert_eq!(nodes, ["s1", "s2", "s3"]);
        assert_eq!(ac.path[1].from.as_deref(), Some("s1"));
        assert_eq!(ac.path[1].to.as_deref(), Some("s3"));
        assert!(ac.complete && ac.problem.is_none());
        assert_eq!(ac.delay_bound_us, Some(1235), "rounded up");
        assert_eq!(
            (bc.src.as_deref(), bc.dst.as_deref()),
            (Some("b"), Some("c"))
        );
        assert_eq!(bc.ids, vec![16, 64]);
        assert_eq!(bc.rate_bps, 2_000_000);
        assert_eq!(bc.delay_bound_us, Some(900));
        assert_eq!(bc.path[0].in_port, Some(1));
    }

    #[test]
    fn a_missing_next_hop_is_shown_incomplete_not_dropped() {
        let mut a1 = entry(0, 16, 1, Some(64));
        a1.first_hop = true;
        // s2 lost its entry; s3 still has the tail.
        let mut tail = entry(0, 65, 1, None);
        tail.bound_ns = 5000;
        let t = tables(vec![("s1", vec![a1]), ("s2", vec![]), ("s3", vec![tail])]);
        let got = stitch(&t, &chain3());
        assert_eq!(got.len(), 2, "head and orphan tail both shown");
        let head = got.iter().find(|r| r.src.is_some()).unwrap();
        assert!(!head.complete);
        assert_eq!(head.delay_bound_us, None);
        assert_eq!(
            head.dst.as_deref(),
            Some("c"),
            "from the first hop's dst_ip"
        );
        assert!(head
            .problem
            .as_deref()
            .unwrap()
            .contains("s2 has no entry for p0 id 64"));
        let tail = got.iter().find(|r| r.src.is_none()).unwrap();
        assert!(!tail.complete);
        assert!(tail.problem.as_deref().unwrap().contains("no upstream"));
        assert_eq!(tail.path[0].node, "s3");
    }

    #[test]
    fn a_switch_not_asked_or_an_unknown_port_is_named() {
        let mut a1 = entry(0, 16, 1, Some(64));
        a1.first_hop = true;
        let got = stitch(&tables(vec![("s1", vec![a1.clone()])]), &chain3());
        assert!(got[0]
            .problem
            .as_deref()
            .unwrap()
            .contains("s2 (after s1 p1) was not asked"));
        a1.out_port = 7;
        let got = stitch(&tables(vec![("s1", vec![a1])]), &chain3());
        assert!(got[0]
            .problem
            .as_deref()
            .unwrap()
            .contains("s1 p7 leads nowhere"));
    }

    #[test]
    fn a_loop_ends_and_is_reported() {
        // s1 p1 id 64 → s2 p0 id 64 → back out s2 p0 with id 64 → s1 p1 id 64 …
        let mut w = Wiring::default();
        w.link("s1", 1, "s2", 0);
        let t = tables(vec![
            ("s1", vec![entry(1, 64, 1, Some(64))]),
            ("s2", vec![entry(0, 64, 0, Some(64))]),
        ]);
        let got = stitch(&t, &w);
        assert_eq!(got.len(), 1, "each entry in one reservation");
        assert_eq!(got[0].path.len(), 2);
        assert!(!got[0].complete);
        assert!(got[0].problem.as_deref().unwrap().contains("loop"));
    }

    #[test]
    fn manager_bookings_render_in_the_same_shape() {
        let info: rtlan_core::bwm::ConnInfo = serde_json::from_value(serde_json::json!({
            "conn": 7, "kind": "guaranteed", "src": "a", "dst": "c", "rate_bps": 1000000,
            "max_packet": 1500, "burst_bytes": 3000, "delay_us": null, "delay_bound_us": 812,
            "path": ["a", "s1", "s2", "c"], "owner": "anonymous"
        }))
        .unwrap();
        let got = from_manager(&[info]);
        assert_eq!(got[0].ids, vec![7]);
        let nodes: Vec<_> = got[0].path.iter().map(|h| h.node.as_str()).collect();
        assert_eq!(nodes, ["s1", "s2"]);
        assert_eq!(got[0].path[0].from.as_deref(), Some("a"));
        assert_eq!(got[0].delay_bound_us, Some(812));
        let text = render(&NetView {
            admission: "manager".into(),
            reservations: got,
        });
        assert!(text.contains("s1 → s2"), "{text}");
    }

    #[test]
    fn lab_wiring_numbers_ports_in_link_order() {
        let topo = rtlan_lab::Topology::from_file(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../topologies/chain3.toml"),
        )
        .unwrap();
        let w = Wiring::of(&topo);
        assert_eq!(w.peer("s2", 2), Some(&("s3".to_string(), 0)));
        assert_eq!(w.peer("s1", 0), Some(&("a".to_string(), 0)));
        assert_eq!(w.peer("s2", 1), Some(&("b".to_string(), 0)));
        assert_eq!(
            w.hosts.get(&topo.host("c").unwrap().ip).map(String::as_str),
            Some("c")
        );
    }
}
