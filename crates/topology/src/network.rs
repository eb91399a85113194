//! The model as the network calculus's input ([`NetFile`]): switches with `t_mux` and buffer
//! memory, links with their effective rate `C`, flows with their T-SPEC — the quantities of
//! Löser/Härtig, "Low-latency hard real-time communication over switched Ethernet", §2.2 and §3 —
//! converted exactly (nanoseconds and bytes become exact seconds and bits; nothing is rounded).

use rtlan_calculus::netfile::{FlowSpec, HostSpec, LinkSpec, NetFile, SwitchSpec};
use rtlan_calculus::{ArithError, Q};

use crate::flows::burst_bits;
use crate::{Bucket, Topology};

/// Why a topology is not a complete network for the analysis (a lab file without the values a
/// network file must have, or a network file's rtlan real-time switch, which has a `scheduler`
/// instead of `t_mux`; [`crate::Profile::Network`] refuses the others while reading).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetworkError {
    /// A switch without `t_mux` or `buffer`.
    #[error("{origin}: switch `{switch}` has no `{field}`, which the analysis needs")]
    MissingSwitchValue {
        /// The file.
        origin: String,
        /// The switch.
        switch: String,
        /// `t_mux` or `buffer`.
        field: &'static str,
    },
    /// A link without `rate`.
    #[error("{origin}: link {a}–{b} has no `rate`, which the analysis needs")]
    MissingRate {
        /// The file.
        origin: String,
        /// One end.
        a: String,
        /// The other end.
        b: String,
    },
    /// A value does not fit the exact arithmetic.
    #[error("{origin}: {what}: {source}")]
    Arith {
        /// The file.
        origin: String,
        /// Which value.
        what: String,
        /// The arithmetic error.
        source: ArithError,
    },
}

fn int(v: u64) -> Q {
    // Every u64 fits i128 and the denominator 1 is valid.
    Q::new(i128::from(v), 1).unwrap_or(Q::ZERO)
}

fn seconds(d: std::time::Duration) -> Result<Q, ArithError> {
    Q::new(
        i128::try_from(d.as_nanos()).map_err(|_| ArithError::Overflow)?,
        1_000_000_000,
    )
}

impl Topology {
    /// The network the calculus analyses: switches (`t_mux` in s, buffer in bits) in file order,
    /// links (rate and effective rate in bit/s) in file order, flows with `b = r·Ts + M` when
    /// given by `shaping_interval`, and the declared hosts' addresses.
    pub fn network(&self) -> Result<NetFile, NetworkError> {
        let origin = &self.origin;
        // The error's text is formatted only when a value does not fit, not for every value.
        let arith = |what: String, source| NetworkError::Arith {
            origin: origin.clone(),
            what,
            source,
        };
        let mut out = NetFile::default();
        for s in &self.switches {
            let missing = |field| NetworkError::MissingSwitchValue {
                origin: origin.clone(),
                switch: s.name.clone(),
                field,
            };
            let t_mux = s.t_mux.ok_or_else(|| missing("t_mux"))?;
            let buffer = s.buffer_bytes.ok_or_else(|| missing("buffer"))?;
            out.switches.push(SwitchSpec {
                name: s.name.clone(),
                t_mux: seconds(t_mux)
                    .map_err(|e| arith(format!("switch `{}` t_mux", s.name), e))?,
                buffer: int(buffer)
                    .mul(Q::int(8))
                    .map_err(|e| arith(format!("switch `{}` buffer", s.name), e))?,
            });
        }
        for l in &self.links {
            let [a, b] = &l.ends;
            let rate = l.rate_bps.ok_or_else(|| NetworkError::MissingRate {
                origin: origin.clone(),
                a: a.node.clone(),
                b: b.node.clone(),
            })?;
            out.links.push(LinkSpec {
                ends: [a.node.clone(), b.node.clone()],
                rate: int(rate),
                effective_rate: int(l.effective_rate_bps.unwrap_or(rate)),
            });
        }
        for f in &self.flows {
            let what = |v: &'static str| move |e| arith(format!("flow `{}` {v}", f.name), e);
            let max_packet = int(f.max_packet_bytes)
                .mul(Q::int(8))
                .map_err(what("max_packet"))?;
            let burst = match f.bucket {
                Bucket::ShapingInterval(ts) => burst_bits(f.rate_bps, f.max_packet_bytes, ts)
                    .map_err(what("shaping_interval"))?,
                Bucket::Burst(bytes) => int(bytes).mul(Q::int(8)).map_err(what("burst"))?,
            };
            out.flows.push(FlowSpec {
                name: f.name.clone(),
                path: f.path.clone(),
                rate: int(f.rate_bps),
                max_packet,
                burst,
                host_delay: seconds(f.host_delay).map_err(what("host_delay"))?,
                deadline: f
                    .deadline
                    .map(seconds)
                    .transpose()
                    .map_err(what("deadline"))?,
            });
        }
        out.hosts = self
            .hosts
            .iter()
            .map(|h| HostSpec {
                name: h.name.clone(),
                ip: h.ip,
            })
            .collect();
        Ok(out)
    }
}
