//! Runs a scenario file and prints the table (or the JSON with `--json`): the library without
//! the `rtlan` binary, for quick checks while developing.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: run SCENARIO.toml [--json]")?;
    let json = args.next().as_deref() == Some("--json");
    let start = std::time::Instant::now();
    let outcome = rtlan_sim::run_file(
        std::path::Path::new(&path),
        &rtlan_sim::RunOptions::default(),
    )?;
    if json {
        print!("{}", outcome.results.to_json());
    } else {
        print!("{}", outcome.results.table());
    }
    eprintln!("wall time {:.2} s", start.elapsed().as_secs_f64());
    Ok(())
}
