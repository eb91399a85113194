//! `rtlan completions SHELL` and `rtlan man --out-dir DIR`: shell completions and man pages
//! generated from the CLI definition itself (clap_complete, clap_mangen), so that they never
//! drift from the flags the binary accepts.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, CommandFactory};
use clap_complete::Shell;

/// Arguments of `rtlan completions`.
#[derive(Debug, Args)]
#[command(after_help = "\
Install, for example:
    rtlan completions bash > /etc/bash_completion.d/rtlan
    rtlan completions zsh > \"${fpath[1]}/_rtlan\"
    rtlan completions fish > ~/.config/fish/completions/rtlan.fish")]
pub(crate) struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    shell: Shell,
}

/// Arguments of `rtlan man`.
#[derive(Debug, Args)]
pub(crate) struct ManArgs {
    /// Where to write the pages: `rtlan.1` and one `rtlan-<subcommand>.1` per subcommand (nested
    /// ones as `rtlan-lab-up.1`). Created if missing.
    #[arg(long, value_name = "DIR")]
    out_dir: PathBuf,
}

pub(crate) fn completions(args: CompletionsArgs) -> anyhow::Result<ExitCode> {
    use std::io::Write;

    let mut cli = crate::Cli::command();
    // Into memory first: the generator panics on a failed write (a closed pipe).
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cli, "rtlan", &mut script);
    match std::io::stdout().lock().write_all(&script) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        other => other
            .context("writing the completion script")
            .map(|()| ExitCode::SUCCESS),
    }
}

pub(crate) fn man(args: ManArgs) -> anyhow::Result<ExitCode> {
    std::fs::create_dir_all(&args.out_dir)
        .with_context(|| format!("creating {}", args.out_dir.display()))?;
    let cli = crate::Cli::command();
    let written = write_pages(&cli, "rtlan", &args.out_dir)?;
    println!("{written} man pages in {}", args.out_dir.display());
    Ok(ExitCode::SUCCESS)
}

/// Writes `name.1` for `cmd` and, recursively, `name-<sub>.1` for each visible subcommand;
/// returns how many pages were written.
fn write_pages(cmd: &clap::Command, name: &str, dir: &Path) -> anyhow::Result<usize> {
    // The page is `rtlan-lab-up(1)`; its synopsis says `rtlan lab up`.
    let cmd = cmd
        .clone()
        .name(name.to_string())
        .bin_name(name.replace('-', " "));
    let path = dir.join(format!("{name}.1"));
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .render(&mut page)
        .with_context(|| format!("rendering {name}"))?;
    std::fs::write(&path, page).with_context(|| format!("writing {}", path.display()))?;
    let mut written = 1;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        if sub.get_name() == "help" {
            continue;
        }
        written += write_pages(sub, &format!("{name}-{}", sub.get_name()), dir)?;
    }
    Ok(written)
}
