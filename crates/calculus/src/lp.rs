//! The LP delay bound: the worst-case delay of a flow through a tandem of FIFO rate-latency
//! servers as the optimum of one linear program, after Bouillard & Stea, "Exact worst-case delay
//! in FIFO-multiplexing feed-forward networks" (IEEE/ACM ToN 2015, §IV–V), in the form of
//! Bouillard's `panco` ("Trade-off between accuracy and tractability of network calculus in FIFO
//! networks", Performance Evaluation 153, 2022, the "ELP" constraints of a sink tree).
//!
//! **The program.** The flow of interest crosses servers `0..n` (its switch output ports). Time
//! variables are built backwards from `t₀ = 0`, the departure of the bit of interest from the
//! last server: every time `θ` at the output of server `j` gives two times at its input, `u(θ)`
//! (the arrival of the bit that leaves at `θ`, FIFO) and `s(θ)` (the start of the backlogged
//! period, service curve), with `s ≤ u ≤ θ`; `θ' ≤ θ` implies `u(θ') ≤ u(θ)` and `s(θ') ≤ s(θ)`.
//! So server `j` has `2^(n−j)` input times, and the partial order between them is known. The
//! cumulative traffic of every *run* (the cross flows that join the path at the same server and
//! leave it after the same server, summed; the flow of interest is one of them) is a variable at
//! every time of every server of its run and at the output of its last server, constrained by:
//! monotony and the arrival curves between comparable times at every server of the run (the
//! T-SPECs with the FIFO-aware bursts of [`crate::methods`], summed over the run's flows), FIFO
//! (`D(θ) = A(u(θ))` for every run at the server), and the service curve
//! (`Σ D(θ) − Σ A(s(θ)) ≥ C·(θ − s(θ) − T)`). The objective is `t₀ − u₀`, the delay of the bit
//! of interest. Every constraint holds for every trajectory of the network model, so the
//! optimum bounds every delay it allows; where arrival constraints between incomparable times
//! are missing the program is a relaxation, still sound.
//!
//! **Bounded variables.** The program has the rows `θ − s(θ) ≤ B_j`, with `B_j` the longest
//! backlogged period of server `j` (`C·(θ − s − T) ≤ A(u) − A(s) ≤ Σb + Σr·(θ − s)`, true of
//! every trajectory), so its times lie in `[−H, 0]`, `H = Σ_j B_j`. Every input time of a server
//! is at or before its first one, `u₀` (by induction from `t₀`), so a run's traffic, pinned to 0
//! at `u₀` of its first server, lies in `[−(b + r·H), 0]` there (monotony and the arrival curve
//! against `u₀`), and by the FIFO equalities everywhere else. These implied boxes are what the
//! certificate below needs; they are not rows of the program.
//!
//! **Why the bound is exact although the solver is not.** The program is solved in floating
//! point by `clarabel` (interior point). Its answer is used only through its dual `z`: by weak
//! duality, for every feasible `x`, `cᵀx ≤ bᵀz + Σ_j max(−r_j·l_j, −r_j·u_j)` with
//! `r = q + Aᵀz` and `l ≤ x ≤ u` the boxes above (Neumaier & Shcherbina, "Safe bounds in linear
//! and mixed-integer linear programming", Math. Programming 99, 2004). We round `z` to a dyadic
//! grid, clamp the inequality duals at 0, and evaluate that bound in exact rational arithmetic:
//! whatever the solver returns, the result is a sound bound, and with a good dual it is the
//! optimum to about 1e-8. No Rust crate solves LPs exactly in rationals at this speed, hence the
//! certificate; the rest of the program's construction is ours because it is the method.
//!
//! "Where it fits": the number of times doubles per hop, so the program is built for paths of at
//! most [`MAX_HOPS`] servers, and each run keeps at most `MAX_LINES` (16) lines of its summed
//! curve per server (dropping constraints only relaxes the program).

use std::collections::BTreeMap;

use clarabel::algebra::CscMatrix;
use clarabel::solver::{
    DefaultSettingsBuilder, DefaultSolver, IPSolver, SolverStatus, SupportedConeT,
};

use crate::methods::PortView;
use crate::network::GRID;
use crate::rational::{ArithError, Q};

/// The longest path (in switch output ports) the program is built for: its time variables
/// double at every hop upstream (`2^(n+1) − 1` for `n` hops).
pub const MAX_HOPS: usize = 4;

/// The most lines of a run's summed arrival curve kept per server.
const MAX_LINES: usize = 16;

/// The grid (in the program's units) the right-hand sides are rounded up to, and the dyadic
/// grid of the dual; they keep the exact certificate's denominators small.
const RHS_GRID: i128 = 1 << 30;
const DUAL_GRID: i128 = 1 << 40;

/// A T-SPEC `min(p·t + M, r·t + b)` at one server.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tspec {
    pub p: Q,
    pub m: Q,
    pub r: Q,
    pub b: Q,
}

/// The tandem of a flow of interest: its servers and its traffic by run.
#[derive(Debug, Clone)]
pub(crate) struct Tandem {
    /// The servers (switch output ports), with Σr and Σb of every flow at each (for the
    /// backlogged period).
    servers: Vec<PortView>,
    /// `(first, last)` server of a run → per server of the run, the T-SPECs of its flows.
    runs: BTreeMap<(usize, usize), Vec<Vec<Tspec>>>,
}

impl Tandem {
    /// An empty tandem over `servers` (at most [`MAX_HOPS`] of them for a bound).
    pub(crate) fn new(servers: Vec<PortView>) -> Tandem {
        Tandem {
            servers,
            runs: BTreeMap::new(),
        }
    }

    /// Adds a flow that joins at server `first` with `specs[i]` its T-SPEC at server
    /// `first + i` (one per server until it leaves).
    pub(crate) fn add(&mut self, first: usize, specs: &[Tspec]) {
        if specs.is_empty() {
            return;
        }
        let last = first + specs.len() - 1;
        let run = self
            .runs
            .entry((first, last))
            .or_insert_with(|| vec![Vec::new(); specs.len()]);
        for (v, s) in run.iter_mut().zip(specs) {
            v.push(*s);
        }
    }

    /// The LP bound on the delay through the tandem (s, rounded up to [`GRID`]; no host delay),
    /// `None` where it does not fit, a server has no leftover, or the solver gives no usable
    /// dual.
    pub(crate) fn delay_bound(&self) -> Result<Option<Q>, ArithError> {
        let n = self.servers.len();
        if n == 0 || n > MAX_HOPS {
            return Ok(None);
        }
        let Some(lp) = Program::build(self)? else {
            return Ok(None);
        };
        let Some(z) = lp.solve() else {
            return Ok(None);
        };
        // The certificate is in units of τ; an overflow leaves the method out.
        let Ok(d) = lp.certificate(&z) else {
            return Ok(None);
        };
        Ok(Some(d.mul(lp.tau)?.round_up(GRID)?.max(Q::ZERO)))
    }
}

/// The units of a program: time in `tau` seconds, data in `delta` bits.
#[derive(Debug, Clone, Copy)]
struct Scale {
    tau: Q,
    delta: Q,
}

/// The power of ten `10^k` with `x / 10^k` in `[1, 10)` (1 for `x ≤ 0`).
fn decade(x: Q) -> Result<Q, ArithError> {
    if !x.is_positive() {
        return Ok(Q::ONE);
    }
    let ten = Q::int(10);
    let mut d = Q::ONE;
    while x.div(d)? >= ten {
        d = d.mul(ten)?;
    }
    while x.div(d)? < Q::ONE {
        d = d.div(ten)?;
    }
    Ok(d)
}

/// The lines `(σ, ρ)` (in the units of `scale`) whose minimum is the sum of `specs` on `t ≥ 0`;
/// at most [`MAX_LINES`] kept (the first, the last and evenly between: a relaxation).
fn summed_lines(specs: &[Tspec], scale: Scale) -> Result<Vec<(Q, Q)>, ArithError> {
    let (tau, delta) = (scale.tau, scale.delta);
    let mut start = (Q::ZERO, Q::ZERO);
    // (breakpoint, change of σ, change of ρ) when a curve switches lines.
    let mut switches: Vec<(Q, Q, Q)> = Vec::new();
    for s in specs {
        let (a, b) = (
            (s.m.div(delta)?, s.p.mul(tau)?.div(delta)?),
            (s.b.div(delta)?, s.r.mul(tau)?.div(delta)?),
        );
        // The line that is lower at 0+ first (smaller σ, then smaller ρ).
        let (first, second) = if (a.0, a.1) <= (b.0, b.1) {
            (a, b)
        } else {
            (b, a)
        };
        start = (start.0.add(first.0)?, start.1.add(first.1)?);
        if second.1 < first.1 {
            // They cross at g > 0 (or at 0 when σ ties): from there the second is lower.
            let g = second.0.sub(first.0)?.div(first.1.sub(second.1)?)?;
            switches.push((g, second.0.sub(first.0)?, second.1.sub(first.1)?));
        }
    }
    switches.sort_by_key(|x| x.0);
    let mut lines = vec![start];
    let mut cur = start;
    let mut i = 0;
    while i < switches.len() {
        let g = switches[i].0;
        while i < switches.len() && switches[i].0 == g {
            cur = (cur.0.add(switches[i].1)?, cur.1.add(switches[i].2)?);
            i += 1;
        }
        lines.push(cur);
    }
    if lines.len() > MAX_LINES {
        let k = lines.len() - 1;
        let keep: Vec<usize> = (0..MAX_LINES).map(|j| j * k / (MAX_LINES - 1)).collect();
        lines = keep.into_iter().map(|j| lines[j]).collect();
    }
    Ok(lines)
}

/// A linear program `min qᵀx` subject to `A x + s = b`, `s` in `{0}^eq × ℝ₊^rest`, with every
/// variable in a box; exact coefficients in the units of [`Scale`].
struct Program {
    vars: usize,
    /// Equality rows first, then `≤` rows: (coefficients, right-hand side).
    eq: Vec<(Vec<(usize, Q)>, Q)>,
    le: Vec<(Vec<(usize, Q)>, Q)>,
    /// The objective's variable (minimised: the arrival time of the bit of interest).
    objective: usize,
    /// Per variable, `[lo, hi]`.
    boxes: Vec<(Q, Q)>,
    /// The time unit (s).
    tau: Q,
}

impl Program {
    fn var(&mut self, lo: Q, hi: Q) -> usize {
        self.vars += 1;
        self.boxes.push((lo, hi));
        self.vars - 1
    }

    fn build(t: &Tandem) -> Result<Option<Program>, ArithError> {
        let n = t.servers.len();
        // Longest backlogged period per server (s), and H.
        let mut busy = Vec::with_capacity(n);
        let mut h = Q::ZERO;
        let mut c_max = Q::ZERO;
        for s in &t.servers {
            let left = s.c.sub(s.sum_r)?;
            if !left.is_positive() {
                return Ok(None);
            }
            let b = s.sum_b.add(s.c.mul(s.t_mux)?)?.div(left)?;
            h = h.add(b)?;
            busy.push(b);
            c_max = c_max.max(s.c);
        }
        // Units: powers of ten that bring H and C·H to between 1 and 10 (exact, and the
        // floating-point program well scaled).
        let tau = decade(h)?;
        let delta = decade(c_max.mul(tau)?)?;
        let scale = Scale { tau, delta };
        let busy: Vec<Q> = busy
            .iter()
            .map(|b| b.div(tau)?.round_up(RHS_GRID))
            .collect::<Result<_, _>>()?;
        let h = crate::rational::sum(busy.iter().copied())?.round_up(RHS_GRID)?;
        let mut p = Program {
            vars: 0,
            eq: Vec::new(),
            le: Vec::new(),
            objective: 0,
            boxes: Vec::new(),
            tau,
        };
        // times[j]: the input times of server j (times[n] = [t₀]); before[j][k]: the indices
        // i < k with times[j][k] ≤ times[j][i].
        let mut times: Vec<Vec<usize>> = vec![Vec::new(); n + 1];
        let mut before: Vec<Vec<Vec<usize>>> = vec![Vec::new(); n + 1];
        let t0 = p.var(Q::ZERO, Q::ZERO);
        times[n] = vec![t0];
        before[n] = vec![Vec::new()];
        for j in (0..n).rev() {
            let out = times[j + 1].clone();
            let mut ins = Vec::with_capacity(2 * out.len());
            let mut bef: Vec<Vec<usize>> = vec![Vec::new(); 2 * out.len()];
            for (i, &theta) in out.iter().enumerate() {
                let u = p.var(h.neg(), Q::ZERO);
                let s = p.var(h.neg(), Q::ZERO);
                ins.push(u);
                ins.push(s);
                // s ≤ u ≤ θ, θ − s ≤ B_j.
                p.le.push((vec![(u, Q::ONE), (theta, Q::ONE.neg())], Q::ZERO));
                p.le.push((vec![(s, Q::ONE), (u, Q::ONE.neg())], Q::ZERO));
                p.le.push((vec![(theta, Q::ONE), (s, Q::ONE.neg())], busy[j]));
                bef[2 * i + 1].push(2 * i);
                for &k in &before[j + 1][i] {
                    // θ_i ≤ θ_k (k < i): u_i ≤ u_k, s_i ≤ s_k, s_i ≤ u_k.
                    bef[2 * i].push(2 * k);
                    bef[2 * i + 1].push(2 * k + 1);
                    bef[2 * i + 1].push(2 * k);
                    p.le.push((
                        vec![(ins[2 * i], Q::ONE), (ins[2 * k], Q::ONE.neg())],
                        Q::ZERO,
                    ));
                    p.le.push((
                        vec![(ins[2 * i + 1], Q::ONE), (ins[2 * k + 1], Q::ONE.neg())],
                        Q::ZERO,
                    ));
                }
            }
            times[j] = ins;
            before[j] = bef;
        }
        p.objective = times[0][0];
        p.eq.push((vec![(t0, Q::ONE)], Q::ZERO));
        // Runs: traffic variables at the input times of each server of the run and at the
        // output of its last.
        // at[j]: per run present at server j, (input vars, output vars).
        let mut at: Vec<Vec<(Vec<usize>, Vec<usize>)>> = vec![Vec::new(); n];
        for (&(first, last), specs) in &t.runs {
            if last >= n {
                return Ok(None);
            }
            let entry = summed_lines(&specs[0], scale)?;
            // Long-term line of the run at its entry: the last (smallest ρ).
            let (sig, rho) = *entry.last().ok_or(ArithError::Overflow)?;
            // As the rows have it: σ rounded up, then ρ·H (the box must hold what they imply).
            let reach = sig
                .round_up(RHS_GRID)?
                .add(rho.mul(h)?)?
                .round_up(RHS_GRID)?;
            let mut vars: Vec<Vec<usize>> = Vec::new();
            for ts in &times[first..=last + 1] {
                let v: Vec<usize> = ts.iter().map(|_| p.var(reach.neg(), Q::ZERO)).collect();
                vars.push(v);
            }
            p.eq.push((vec![(vars[0][0], Q::ONE)], Q::ZERO));
            for (o, j) in (first..=last + 1).enumerate() {
                let lines = if j <= last {
                    summed_lines(&specs[j - first], scale)?
                } else {
                    Vec::new()
                };
                for (k, bef) in before[j].iter().enumerate() {
                    for &i in bef {
                        // times[j][k] ≤ times[j][i]: 0 ≤ F(i) − F(k) ≤ σ + ρ·(t_i − t_k).
                        let (fi, fk) = (vars[o][i], vars[o][k]);
                        p.le.push((vec![(fk, Q::ONE), (fi, Q::ONE.neg())], Q::ZERO));
                        for &(sg, rh) in &lines {
                            p.le.push((
                                vec![
                                    (fi, Q::ONE),
                                    (fk, Q::ONE.neg()),
                                    (times[j][i], rh.neg()),
                                    (times[j][k], rh),
                                ],
                                sg.round_up(RHS_GRID)?,
                            ));
                        }
                    }
                }
            }
            for (o, at_j) in at[first..=last].iter_mut().enumerate() {
                at_j.push((vars[o].clone(), vars[o + 1].clone()));
            }
        }
        for (j, s) in t.servers.iter().enumerate() {
            let c = s.c.mul(tau)?.div(delta)?;
            let ct = s.c.mul(s.t_mux)?.div(delta)?.round_up(RHS_GRID)?;
            for (i, &theta) in times[j + 1].iter().enumerate() {
                let sv = times[j][2 * i + 1];
                // FIFO: D(θ) = A(u(θ)) for every run at the server.
                for (ins, outs) in &at[j] {
                    p.eq.push((vec![(outs[i], Q::ONE), (ins[2 * i], Q::ONE.neg())], Q::ZERO));
                }
                // Service: Σ A(s) − Σ D(θ) + C·θ − C·s ≤ C·T.
                let mut row = vec![(theta, c), (sv, c.neg())];
                for (ins, outs) in &at[j] {
                    row.push((ins[2 * i + 1], Q::ONE));
                    row.push((outs[i], Q::ONE.neg()));
                }
                p.le.push((row, ct));
            }
        }
        p.tau = tau;
        Ok(Some(p))
    }

    /// Solves in floating point; the dual of every row (equalities first), or `None`.
    fn solve(&self) -> Option<Vec<f64>> {
        let m = self.eq.len() + self.le.len();
        let (mut ri, mut ci, mut vals) = (Vec::new(), Vec::new(), Vec::new());
        let mut b = Vec::with_capacity(m);
        for (r, (row, rhs)) in self.eq.iter().chain(&self.le).enumerate() {
            for &(v, a) in row {
                ri.push(r);
                ci.push(v);
                vals.push(a.to_f64());
            }
            b.push(rhs.to_f64());
        }
        let a = CscMatrix::new_from_triplets(m, self.vars, ri, ci, vals);
        let pm = CscMatrix::zeros((self.vars, self.vars));
        let mut q = vec![0.0; self.vars];
        q[self.objective] = 1.0;
        let cones = [
            SupportedConeT::ZeroConeT(self.eq.len()),
            SupportedConeT::NonnegativeConeT(self.le.len()),
        ];
        let settings = DefaultSettingsBuilder::default()
            .verbose(false)
            .max_iter(100)
            .tol_gap_abs(1e-10)
            .tol_gap_rel(1e-10)
            .tol_feas(1e-10)
            .build()
            .ok()?;
        let mut solver = DefaultSolver::new(&pm, &q, &a, &b, &cones, settings).ok()?;
        solver.solve();
        match solver.solution.status {
            SolverStatus::Solved | SolverStatus::AlmostSolved => Some(solver.solution.z.clone()),
            _ => None,
        }
    }

    /// The sound upper bound on `−x_objective` (the delay, in units of τ) from the dual `z`, in exact
    /// arithmetic (module doc).
    fn certificate(&self, z: &[f64]) -> Result<Q, ArithError> {
        let ne = self.eq.len();
        let mut r = vec![Q::ZERO; self.vars];
        r[self.objective] = Q::ONE;
        let mut bound = Q::ZERO;
        for (k, (row, rhs)) in self.eq.iter().chain(&self.le).enumerate() {
            let mut y = dyadic(*z.get(k).ok_or(ArithError::Overflow)?)?;
            if k >= ne && y.is_negative() {
                y = Q::ZERO;
            }
            if y == Q::ZERO {
                continue;
            }
            for &(v, a) in row {
                r[v] = r[v].add(a.mul(y)?)?;
            }
            bound = bound.add(rhs.mul(y)?)?;
        }
        for (rv, (lo, hi)) in r.iter().zip(&self.boxes) {
            if *rv == Q::ZERO {
                continue;
            }
            let neg = rv.neg();
            bound = bound.add(neg.mul(*lo)?.max(neg.mul(*hi)?))?;
        }
        Ok(bound)
    }
}

/// `x` rounded to the nearest multiple of 2⁻⁴⁰.
fn dyadic(x: f64) -> Result<Q, ArithError> {
    if !x.is_finite() || x.abs() > 1e18 {
        return Err(ArithError::Overflow);
    }
    Q::new((x * DUAL_GRID as f64).round() as i128, DUAL_GRID)
}

#[cfg(test)]
#[path = "lp_tests.rs"]
mod tests;
