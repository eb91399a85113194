//! Simulated events per second: a generated leaf–spine (small enough for a benchmark loop)
//! with reserved connections and Poisson floods, 50 ms of network time per iteration.
//! Criterion reports the throughput in events (`Throughput::Elements`).

use criterion::{criterion_main, Criterion, Throughput};
use rtlan_sim::{run, RunOptions, Scenario};

const SCENARIO: &str = r#"
[sim]
duration = "50ms"
warmup = "10ms"
drain = "10ms"
seed = 1

[generate]
kind = "leaf-spine"
leaves = 8
hosts_per_leaf = 16
spines = 2
host_rate = "1gbit"
leaf_rate = "10gbit"
spine_rate = "10gbit"
reserved = 1000
reserved_rate = "200kbit"
reserved_size = 200
floods = 32
flood_rate = "100mbit"
flood_size = 1000
setup_spread = "5ms"
"#;

fn bench(c: &mut Criterion) {
    // A scenario that does not parse is a bug in this file.
    let scenario = Scenario::from_str(SCENARIO, "bench").expect("the benchmark scenario parses");
    let events = run(&scenario, &RunOptions::default(), &mut |_, _| {})
        .expect("the benchmark scenario runs")
        .results
        .engine
        .events;
    let mut group = c.benchmark_group("sim");
    group.sample_size(10);
    group.throughput(Throughput::Elements(events));
    group.bench_function("leafspine_128_hosts_50ms", |b| {
        b.iter(|| {
            run(&scenario, &RunOptions::default(), &mut |_, _| {}).map(|o| o.results.engine.events)
        })
    });
    group.finish();
}

/// The benchmark group (in its own module because `criterion_group!` writes an undocumented
/// public function).
pub mod group {
    #![allow(missing_docs)]
    criterion::criterion_group!(benches, super::bench);
}

criterion_main!(group::benches);
