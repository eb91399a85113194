//! Labs and their processes for the runners (DESIGN.md §5): building a lab from a topology file
//! or the two-host topology several EtheReal figures use, addresses, commands and guarded
//! processes in a node's namespace, and restarting the rtlan switch with configuration keys the
//! topology format cannot set. The caller holds the lab serial lock.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::Context;
use rtlan_lab::{Lab, LabOptions, Topology};
use serde_json::Value;

use crate::labkit::{self, Guarded};

/// Builds a lab from the topology file `topology`, named `name` plus a per-process suffix.
pub fn up_file(exe: &Path, topology: &Path, name: &str) -> anyhow::Result<Lab> {
    let topology = Topology::from_file(topology)?;
    let name = format!("{name}{}", std::process::id() % 10_000);
    Ok(Lab::up(&topology, &name, &LabOptions::new(exe))?)
}

/// The topology of hosts a (198.18.0.1) and b (198.18.0.2) on switch s1 of `kind`, links at
/// `rate` (EtheReal §4.2's set-up for Figs. 5, 6 and Table 1).
pub fn pair_topology(kind: &str, rate: &str) -> String {
    format!(
        "[[host]]\nname = \"a\"\nip = \"198.18.0.1/16\"\n\n[[host]]\nname = \"b\"\n\
         ip = \"198.18.0.2/16\"\n\n[[switch]]\nname = \"s1\"\nkind = \"{kind}\"\n\n\
         [[link]]\nends = [\"a\", \"s1\"]\nrate = \"{rate}\"\n\n\
         [[link]]\nends = [\"b\", \"s1\"]\nrate = \"{rate}\"\n"
    )
}

/// Builds the lab `name` of [`pair_topology`].
pub fn up_pair(exe: &Path, name: &str, kind: &str, rate: &str) -> anyhow::Result<Lab> {
    let topology = Topology::from_str(&pair_topology(kind, rate), name)?;
    Ok(Lab::up(&topology, name, &LabOptions::new(exe))?)
}

/// `host:port` of a lab host.
pub fn addr(lab: &Lab, host: &str, port: u16) -> anyhow::Result<String> {
    Ok(format!("{}:{port}", lab.host_ip(host)?))
}

/// Runs a command in a lab node and fails unless it succeeds.
pub fn exec_ok(lab: &Lab, node: &str, args: &[&str]) -> anyhow::Result<()> {
    let out = lab
        .exec(node, args)?
        .output()
        .with_context(|| format!("running {args:?} in {node}"))?;
    anyhow::ensure!(
        out.status.success(),
        "{args:?} in {node} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

/// Spawns `args` in `node`'s namespace under a guard (stdout piped, stderr discarded), described
/// by its arguments.
pub fn spawn(lab: &Lab, node: &str, args: &[String]) -> anyhow::Result<Guarded> {
    Ok(labkit::spawn(
        lab,
        node,
        args,
        format!("{args:?} on {node}"),
    )?)
}

/// `iperf3 -c SERVER -p 5201 -t SECONDS -J`: a TCP flow's client arguments.
pub fn iperf3_client(server: std::net::Ipv4Addr, seconds: f64) -> Vec<String> {
    [
        "iperf3".to_string(),
        "-c".to_string(),
        server.to_string(),
        "-p".to_string(),
        "5201".to_string(),
        "-t".to_string(),
        format!("{seconds}"),
        "-J".to_string(),
    ]
    .to_vec()
}

/// `iperf3 -s -1 -p 5201`: the server for one [`iperf3_client`] run.
pub fn iperf3_server() -> Vec<String> {
    ["iperf3", "-s", "-1", "-p", "5201"]
        .map(String::from)
        .to_vec()
}

/// Removes JSON nulls (TOML has none) recursively.
fn strip_nulls(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.retain(|_, x| !x.is_null());
            map.values_mut().for_each(strip_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

/// Restarts the lab's rtlan switch `s1` with configuration keys the topology format cannot set:
/// reads its configuration in force (`config` on its control socket), lets `edit` change it,
/// writes `<state>/s1-<tag>.toml`, stops the switch the lab started and starts `rtlan switch` on
/// the new file in s1's namespace. Returns once the new switch answers (start-up calibration
/// included); the guard stops it, and lab teardown would too.
pub fn restart_switch(
    exe: &Path,
    lab: &Lab,
    tag: &str,
    edit: impl FnOnce(&mut Value),
) -> anyhow::Result<Guarded> {
    let socket = lab.switch_socket("s1").context("s1 is an rtlan switch")?;
    let mut config = rtlan_linux::ctl::request(&socket, "config")?;
    strip_nulls(&mut config);
    edit(&mut config);
    let path = lab.state_dir().join(format!("s1-{tag}.toml"));
    std::fs::write(
        &path,
        toml::to_string(&config).context("configuration as TOML")?,
    )?;
    let pid = lab.switch_pid("s1").context("s1 runs")?;
    // SAFETY: kill(2) has no memory-safety preconditions; the lab started this switch and
    // recorded its PID; it is still running (its socket answered just now).
    unsafe { libc::kill(libc::pid_t::try_from(pid)?, libc::SIGTERM) };
    // The switch removes its socket when it stops.
    let deadline = Instant::now() + Duration::from_secs(5);
    while socket.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    anyhow::ensure!(!socket.exists(), "s1 did not stop");
    let log = std::fs::File::create(lab.state_dir().join(format!("s1-{tag}.log")))?;
    let args = [
        exe.display().to_string(),
        "switch".to_string(),
        "--config".to_string(),
        path.display().to_string(),
    ];
    let child = lab
        .exec("s1", &args)?
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .context("starting s1")?;
    let process = Guarded::from_child(child, format!("rtlan switch s1 ({tag})"));
    let deadline = Instant::now() + Duration::from_secs(30);
    while !(socket.exists() && rtlan_linux::ctl::request(&socket, "ping").is_ok()) {
        anyhow::ensure!(Instant::now() < deadline, "s1 did not come back");
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(process)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn config_without_nulls_becomes_toml() {
        let mut config = json!({"name": "s1", "cpu": null, "cpu_budget_percent": 50,
            "port": [{"ifname": "p0", "rate": null}]});
        assert!(toml::to_string(&config).is_err(), "TOML has no null");
        strip_nulls(&mut config);
        let text = toml::to_string(&config).expect("no nulls left");
        assert!(text.contains("cpu_budget_percent = 50"));
        assert!(!text.contains("cpu ="));
        assert!(text.contains("ifname = \"p0\"") && !text.contains("rate"));
    }

    #[test]
    fn the_pair_topology_parses_with_both_switch_kinds() {
        for kind in ["rtlan", "linux-bridge"] {
            let t = Topology::from_str(&pair_topology(kind, "100mbit"), "pair")
                .expect("the pair topology parses");
            assert_eq!(t.switch_ports("s1").len(), 2, "{kind}");
        }
        assert!(pair_topology("linux-bridge", "1gbit").contains("kind = \"linux-bridge\""));
    }
}
