//! Running the iproute2/ethtool/sysctl commands that build a lab, with errors that quote the
//! command line and its stderr so that a failed step can be replayed by hand.

use std::process::{Command, Stdio};

/// A command that could not be run or that failed.
#[derive(Debug, thiserror::Error)]
pub enum CmdError {
    /// The program is not installed (or not on `PATH`).
    #[error("`{program}` not found: install it (Debian package `{package}`)")]
    NotFound {
        /// The program that was looked up.
        program: String,
        /// The Debian package that provides it.
        package: &'static str,
    },
    /// The program could not be started for another reason.
    #[error("could not run `{command}`: {source}")]
    Spawn {
        /// The command line.
        command: String,
        /// The operating-system error.
        source: std::io::Error,
    },
    /// The program ran and reported failure.
    #[error("`{command}` failed ({status}): {stderr}")]
    Failed {
        /// The command line.
        command: String,
        /// How it exited.
        status: std::process::ExitStatus,
        /// What it wrote to stderr (trimmed).
        stderr: String,
    },
}

pub(crate) fn package_of(program: &str) -> &'static str {
    match program {
        "ip" | "tc" => "iproute2",
        "bird" => "bird2",
        "frr" => "frr",
        "ethtool" => "ethtool",
        "sysctl" => "procps",
        _ => "?",
    }
}

/// Renders a command line for messages (arguments are not quoted; ours contain no spaces).
pub(crate) fn render(program: &str, args: &[&str]) -> String {
    let mut s = program.to_string();
    for a in args {
        s.push(' ');
        s.push_str(a);
    }
    s
}

/// Runs `program args…` to completion and returns its stdout.
pub(crate) fn run(program: &str, args: &[&str]) -> Result<String, CmdError> {
    let command = render(program, args);
    tracing::debug!(%command, "lab");
    let output = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|source| {
            if source.kind() == std::io::ErrorKind::NotFound {
                CmdError::NotFound {
                    program: program.to_string(),
                    package: package_of(program),
                }
            } else {
                CmdError::Spawn {
                    command: command.clone(),
                    source,
                }
            }
        })?;
    if !output.status.success() {
        return Err(CmdError::Failed {
            command,
            status: output.status,
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Runs `ip args…`.
pub(crate) fn ip(args: &[&str]) -> Result<String, CmdError> {
    run("ip", args)
}

/// Runs `program args…` inside namespace `netns` (`ip netns exec NETNS program args…`).
pub(crate) fn in_netns(netns: &str, program: &str, args: &[&str]) -> Result<String, CmdError> {
    let mut full = vec!["netns", "exec", netns, program];
    full.extend_from_slice(args);
    run("ip", &full)
}

/// Lists the names of all network namespaces (`ip netns list`, first word of each line).
pub(crate) fn list_netns() -> Result<Vec<String>, CmdError> {
    Ok(parse_netns_list(&ip(&["netns", "list"])?))
}

fn parse_netns_list(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

/// The PIDs of all processes in namespace `netns` (`ip netns pids`).
pub(crate) fn netns_pids(netns: &str) -> Result<Vec<i32>, CmdError> {
    Ok(ip(&["netns", "pids", netns])?
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn netns_list_takes_first_word() {
        let text = "rtl-x-a (id: 3)\nrtl-x-b\n\nother (id: 0)\n";
        assert_eq!(parse_netns_list(text), ["rtl-x-a", "rtl-x-b", "other"]);
    }

    #[test]
    fn missing_program_is_reported_with_package() {
        let err = run("rtlan-no-such-program-xyz", &[]).unwrap_err();
        assert!(matches!(err, CmdError::NotFound { .. }), "{err}");
    }

    #[test]
    fn failure_quotes_command_and_stderr() {
        let err = run("sh", &["-c", "echo boom >&2; exit 3"]).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("sh -c"), "{text}");
        assert!(text.contains("boom"), "{text}");
    }
}
