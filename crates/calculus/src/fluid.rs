//! Test support: an exact fluid simulation of the whole-network model of [`crate::analysis`], so
//! that tests can check every bound against a delay some trajectory actually reaches.
//!
//! Every port is "delay t_mux, then a fluid FIFO queue served at exactly C" — it offers exactly
//! β_{C, t_mux} to the aggregate, serves in FIFO order, and no flow leaves it faster than C (the
//! peak-rate line the analysis assumes at the next hop). Sources are greedy T-SPECs: from their
//! start, the burst min(M, b) at once, then the peak p until the bucket is exhausted, then r.
//! Data arriving together (a batch, or fluid within one window of constant rates) leaves in
//! proportion, which is one legitimate FIFO order. All arithmetic is exact ([`Q`]).

use std::collections::{BTreeMap, VecDeque};

use crate::analysis::{Flow, PortKey, Topology};
use crate::rational::{ArithError, Q};

/// `amount` bits of one flow over `[t0, t1]` at a constant rate; a batch if `t0 == t1`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Piece {
    pub t0: Q,
    pub t1: Q,
    pub amount: Q,
}

/// A greedy T-SPEC source `min(p·t + M, r·t + b)` from `start`, sending until `start + horizon`.
pub(crate) fn greedy(
    p: Q,
    m: Q,
    r: Q,
    b: Q,
    start: Q,
    horizon: Q,
) -> Result<Vec<Piece>, ArithError> {
    let end = start.add(horizon)?;
    let mut out = vec![Piece {
        t0: start,
        t1: start,
        amount: m.min(b),
    }];
    let mut t = start;
    if b > m && p > r {
        let g = b.sub(m)?.div(p.sub(r)?)?.min(horizon);
        t = start.add(g)?;
        out.push(Piece {
            t0: start,
            t1: t,
            amount: p.mul(g)?,
        });
    }
    if t < end {
        out.push(Piece {
            t0: t,
            t1: end,
            amount: r.mul(end.sub(t)?)?,
        });
    }
    out.retain(|x| x.amount.is_positive());
    Ok(out)
}

struct Block {
    total: Q,
    amounts: Vec<Q>,
}

struct Queue {
    c: Q,
    blocks: VecDeque<Block>,
    backlog: Q,
    out: Vec<Vec<Piece>>,
}

impl Queue {
    fn push(&mut self, amounts: Vec<Q>) -> Result<(), ArithError> {
        let total = crate::rational::sum(amounts.iter().copied())?;
        if total.is_positive() {
            self.backlog = self.backlog.add(total)?;
            self.blocks.push_back(Block { total, amounts });
        }
        Ok(())
    }

    /// Serves `c·dur` from the head, starting at `from`.
    fn serve(&mut self, from: Q, dur: Q) -> Result<(), ArithError> {
        let mut t = from;
        let mut left = self.c.mul(dur)?.min(self.backlog);
        while left.is_positive() {
            let Some(blk) = self.blocks.front_mut() else {
                break;
            };
            let take = left.min(blk.total);
            let dt = take.div(self.c)?;
            for (i, a) in blk.amounts.iter_mut().enumerate() {
                let share = a.mul(take)?.div(blk.total)?;
                if share.is_positive() {
                    self.out[i].push(Piece {
                        t0: t,
                        t1: t.add(dt)?,
                        amount: share,
                    });
                    *a = a.sub(share)?;
                }
            }
            blk.total = blk.total.sub(take)?;
            if !blk.total.is_positive() {
                self.blocks.pop_front();
            }
            left = left.sub(take)?;
            self.backlog = self.backlog.sub(take)?;
            t = t.add(dt)?;
        }
        Ok(())
    }
}

/// One port: the flows' input pieces → their output pieces.
pub(crate) fn port(c: Q, t_mux: Q, inputs: &[Vec<Piece>]) -> Result<Vec<Vec<Piece>>, ArithError> {
    let n = inputs.len();
    let shifted: Vec<Vec<Piece>> = inputs
        .iter()
        .map(|v| {
            v.iter()
                .map(|p| {
                    Ok(Piece {
                        t0: p.t0.add(t_mux)?,
                        t1: p.t1.add(t_mux)?,
                        amount: p.amount,
                    })
                })
                .collect::<Result<Vec<_>, ArithError>>()
        })
        .collect::<Result<_, _>>()?;
    let mut events: Vec<Q> = shifted
        .iter()
        .flatten()
        .flat_map(|p| [p.t0, p.t1])
        .collect();
    events.sort();
    events.dedup();
    let mut q = Queue {
        c,
        blocks: VecDeque::new(),
        backlog: Q::ZERO,
        out: vec![Vec::new(); n],
    };
    for (j, &e) in events.iter().enumerate() {
        let mut batch = vec![Q::ZERO; n];
        for (i, v) in shifted.iter().enumerate() {
            for p in v.iter().filter(|p| p.t0 == e && p.t1 == e) {
                batch[i] = batch[i].add(p.amount)?;
            }
        }
        q.push(batch)?;
        let Some(&next) = events.get(j + 1) else {
            break;
        };
        let mut rates = vec![Q::ZERO; n];
        for (i, v) in shifted.iter().enumerate() {
            for p in v
                .iter()
                .filter(|p| p.t0 <= e && p.t1 >= next && p.t0 < p.t1)
            {
                rates[i] = rates[i].add(p.amount.div(p.t1.sub(p.t0)?)?)?;
            }
        }
        let lambda = crate::rational::sum(rates.iter().copied())?;
        let mut a = e;
        loop {
            let arrivals = |to: Q| -> Result<Vec<Q>, ArithError> {
                rates.iter().map(|r| r.mul(to.sub(a)?)).collect()
            };
            if !q.backlog.is_positive() && lambda <= c {
                for (i, r) in rates.iter().enumerate() {
                    if r.is_positive() {
                        q.out[i].push(Piece {
                            t0: a,
                            t1: next,
                            amount: r.mul(next.sub(a)?)?,
                        });
                    }
                }
                break;
            }
            if lambda < c {
                let x = a.add(q.backlog.div(c.sub(lambda)?)?)?;
                if x < next {
                    q.push(arrivals(x)?)?;
                    q.serve(a, x.sub(a)?)?;
                    a = x;
                    continue;
                }
            }
            q.push(arrivals(next)?)?;
            q.serve(a, next.sub(a)?)?;
            break;
        }
    }
    if let Some(&last) = events.last() {
        let rest = q.backlog.div(c)?;
        q.serve(last, rest)?;
    }
    Ok(q.out)
}

/// The largest delay of any bit between two cumulative processes of one flow (pieces in time
/// order): the horizontal deviation, evaluated on both sides of every breakpoint.
pub(crate) fn worst_delay(arr: &[Piece], dep: &[Piece]) -> Result<Q, ArithError> {
    fn table(v: &[Piece]) -> Result<Vec<(Q, Q, Q, Q)>, ArithError> {
        let mut v = v.to_vec();
        v.sort_by(|a, b| a.t0.cmp(&b.t0).then(a.t1.cmp(&b.t1)));
        let mut x = Q::ZERO;
        let mut out = Vec::new();
        for p in v {
            let x1 = x.add(p.amount)?;
            out.push((x, x1, p.t0, p.t1));
            x = x1;
        }
        Ok(out)
    }
    fn time(t: &[(Q, Q, Q, Q)], x: Q, right: bool) -> Result<Option<Q>, ArithError> {
        for &(x0, x1, t0, t1) in t {
            let inside = if right {
                x0 <= x && x < x1
            } else {
                x0 < x && x <= x1
            };
            if inside {
                return Ok(Some(
                    t0.add(t1.sub(t0)?.mul(x.sub(x0)?)?.div(x1.sub(x0)?)?)?,
                ));
            }
        }
        Ok(None)
    }
    let (a, d) = (table(arr)?, table(dep)?);
    let mut best = Q::ZERO;
    for &(x0, x1, _, _) in a.iter().chain(&d) {
        for x in [x0, x1] {
            for right in [false, true] {
                if let (Some(ta), Some(td)) = (time(&a, x, right)?, time(&d, x, right)?) {
                    best = best.max(td.sub(ta)?);
                }
            }
        }
    }
    Ok(best)
}

/// Simulates every flow (greedy from `starts[f]` for `horizon`) through a feed-forward network;
/// returns each flow's worst delay from entering its first port to leaving its last (no host
/// delay), and checks that every bit sent comes out.
pub(crate) fn simulate(
    topo: &Topology,
    flows: &[Flow],
    starts: &[Q],
    horizon: Q,
) -> Result<Vec<Q>, ArithError> {
    Ok(simulate_hops(topo, flows, starts, horizon)?.0)
}

/// `[f][h]`: the arrivals of flow `f` at its `h`-th hop.
pub(crate) type HopPieces = Vec<Vec<Vec<Piece>>>;

/// [`simulate`], and every flow's arrivals at every hop (`[f][h]`, hop 0 the source).
pub(crate) fn simulate_hops(
    topo: &Topology,
    flows: &[Flow],
    starts: &[Q],
    horizon: Q,
) -> Result<(Vec<Q>, HopPieces), ArithError> {
    let mut input: Vec<Vec<Option<Vec<Piece>>>> =
        flows.iter().map(|f| vec![None; f.hops.len()]).collect();
    let mut departures: Vec<Vec<Piece>> = vec![Vec::new(); flows.len()];
    for (i, f) in flows.iter().enumerate() {
        input[i][0] = Some(greedy(
            f.hops[0].peak,
            f.max_packet,
            f.rate,
            f.burst,
            starts[i],
            horizon,
        )?);
    }
    let mut at: BTreeMap<PortKey, Vec<(usize, usize)>> = BTreeMap::new();
    for (i, f) in flows.iter().enumerate() {
        for (h, hop) in f.hops.iter().enumerate() {
            at.entry(hop.port).or_default().push((i, h));
        }
    }
    while !at.is_empty() {
        let ready = at
            .iter()
            .find(|(_, e)| e.iter().all(|&(i, h)| input[i][h].is_some()))
            .map(|(k, _)| *k)
            .expect("feed-forward network");
        let entries = at.remove(&ready).unwrap_or_default();
        let (c, t_mux, _) = topo.port(ready).expect("resolved ports exist");
        let ins: Vec<Vec<Piece>> = entries
            .iter()
            .map(|&(i, h)| input[i][h].clone().unwrap_or_default())
            .collect();
        let outs = port(c, t_mux, &ins)?;
        for (&(i, h), out) in entries.iter().zip(outs) {
            if h + 1 < flows[i].hops.len() {
                input[i][h + 1] = Some(out);
            } else {
                departures[i] = out;
            }
        }
    }
    let mut delays = Vec::with_capacity(flows.len());
    for (i, dep) in departures.iter().enumerate() {
        let arr = input[i][0].clone().unwrap_or_default();
        let sent = crate::rational::sum(arr.iter().map(|p| p.amount))?;
        let got = crate::rational::sum(dep.iter().map(|p| p.amount))?;
        assert_eq!(sent, got, "flow {i}: the simulation lost data");
        delays.push(worst_delay(&arr, dep)?);
    }
    let inputs = input
        .into_iter()
        .map(|v| v.into_iter().map(Option::unwrap_or_default).collect())
        .collect();
    Ok((delays, inputs))
}

/// The largest `D(t) − D(s) − r·(t − s)` over `s ≤ t` of a cumulative process: the smallest
/// burst of a token bucket of rate `r` it conforms to. Evaluated at every breakpoint (and on both
/// sides of a batch), where the supremum of a piecewise-linear difference lies.
pub(crate) fn burstiness(v: &[Piece], r: Q) -> Result<Q, ArithError> {
    // (time, cumulative just before, cumulative just after) at every breakpoint.
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.t0.cmp(&b.t0).then(a.t1.cmp(&b.t1)));
    let mut points: Vec<(Q, Q, Q)> = Vec::new();
    let mut x = Q::ZERO;
    for p in v {
        let x1 = x.add(p.amount)?;
        if p.t0 == p.t1 {
            points.push((p.t0, x, x1));
        } else {
            points.push((p.t0, x, x));
            points.push((p.t1, x1, x1));
        }
        x = x1;
    }
    let mut best = Q::ZERO;
    for (i, &(s, before_s, _)) in points.iter().enumerate() {
        for &(t, _, after_t) in &points[i..] {
            best = best.max(after_t.sub(before_s)?.sub(r.mul(t.sub(s)?)?)?);
        }
    }
    Ok(best)
}
