//! The manager's tokens file (`docs/bwm.md` § "Tokens"): TOML, one `[[token]]` table per
//! principal, read into the core's [`Tokens`] table:
//!
//! ```toml
//! [[token]]
//! principal = "host-a"       # recorded as the owner of its bookings
//! role = "client"            # or "operator"
//! token = "9f2c…"            # the secret the client sends in every request's `token` field
//! ```
//!
//! A file that others than its owner may read is loaded with a warning.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use rtlan_core::bwm::{TokenEntry, Tokens, TokensError};
use serde::Deserialize;

/// The tokens file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TokensFileError {
    /// The file could not be read.
    #[error("tokens file {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The TOML does not parse, or has unknown keys or roles.
    #[error("tokens file {path}: {message}")]
    Toml {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The entries do not make a token table.
    #[error("tokens file {path}: {source}")]
    Table {
        /// The file.
        path: String,
        /// What is wrong.
        source: TokensError,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    token: Vec<TokenEntry>,
}

/// Parses the text of a tokens file (`origin` names it in errors).
pub fn parse_tokens(text: &str, origin: &str) -> Result<Tokens, TokensFileError> {
    let raw: RawFile = toml::from_str(text).map_err(|e| TokensFileError::Toml {
        path: origin.to_string(),
        message: e.to_string(),
    })?;
    Tokens::new(raw.token).map_err(|source| TokensFileError::Table {
        path: origin.to_string(),
        source,
    })
}

/// Reads a tokens file; warns if anyone but its owner may read it.
pub fn load_tokens(path: &Path) -> Result<Tokens, TokensFileError> {
    let io = |source| TokensFileError::Io {
        path: path.display().to_string(),
        source,
    };
    let text = std::fs::read_to_string(path).map_err(io)?;
    let mode = std::fs::metadata(path).map_err(io)?.permissions().mode();
    if mode & 0o077 != 0 {
        tracing::warn!(
            "bwm: tokens file {} is readable by others (mode {:o}); chmod 600 it",
            path.display(),
            mode & 0o777
        );
    }
    parse_tokens(&text, &path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtlan_core::bwm::Role;

    #[test]
    fn documented_file_loads_and_bad_ones_name_the_problem() {
        let t = parse_tokens(
            "[[token]]\nprincipal = \"host-a\"\nrole = \"client\"\ntoken = \"ta\"\n\
             [[token]]\nprincipal = \"alice\"\nrole = \"operator\"\ntoken = \"to\"\n",
            "t.toml",
        )
        .expect("valid");
        assert_eq!(t.len(), 2);
        let op = t.authenticate(Some("to")).expect("known");
        assert_eq!((op.principal.as_str(), op.role), ("alice", Role::Operator));
        assert!(parse_tokens("", "t.toml").expect("empty").is_open());
        for (text, says) in [
            (
                "[[token]]\nprincipal = \"a\"\nrole = \"root\"\ntoken = \"x\"\n",
                "root",
            ),
            ("[[token]]\nprincipal = \"a\"\nrole = \"client\"\n", "token"),
            (
                "[[token]]\nprincipal = \"a\"\nrole = \"client\"\ntoken = \"\"\n",
                "empty",
            ),
            ("bogus = 1\n", "bogus"),
        ] {
            let e = parse_tokens(text, "t.toml").expect_err(text).to_string();
            assert!(
                e.contains(says) && e.starts_with("tokens file t.toml"),
                "{e}"
            );
        }
    }
}
