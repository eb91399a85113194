//! Link keys in the daemons' configuration files (`[[port]] keys` of the switch, `keys` of the
//! host daemon), and the boot value their sequence numbers start from (RFC 2747 §3;
//! `docs/protocol.md` "Authentication").
//!
//! A key is `{ id = 1, secret = "<hex>" }` or `{ id = 1, file = "/etc/rtlan/keys/p1.key" }`
//! (the file holds the hex secret; surrounding whitespace is ignored), optionally with
//! `not_before` / `not_after` durations counted from the daemon's start (`"0s"`, `"3600s"`).
//! Secrets are at least [`MIN_SECRET_BYTES`] bytes.
//!
//! Where secrets may live: inline secrets make the configuration file itself a secret (keep it
//! mode 0600, owned by the daemon's user, out of version control); a key file is the better
//! place and is refused if its mode lets its group or others read it (like ssh's private
//! keys). Secrets are never printed: the keys' `Debug` shows only their length, and the
//! switch's printed configuration leaves keys out.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use rtlan_core::auth::{Key, KeyChain};
use rtlan_core::units::parse_duration;
use serde::Deserialize;

/// Shortest secret accepted, bytes (half of SHA-256's output, RFC 2104 §3's minimum L/2).
pub const MIN_SECRET_BYTES: usize = 16;

/// One key as written in a configuration file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawKey {
    id: u32,
    secret: Option<String>,
    file: Option<PathBuf>,
    not_before: Option<String>,
    not_after: Option<String>,
}

/// Decodes a hex secret (pairs of hex digits, no separators).
fn parse_hex(text: &str) -> Option<Vec<u8>> {
    let text = text.trim();
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Reads a key file holding a hex secret; refuses a file its group or others may read.
fn read_key_file(path: &Path) -> Result<Vec<u8>, String> {
    use std::os::unix::fs::PermissionsExt;
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| format!("key file {shown}: {e}"))?;
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(format!(
            "key file {shown} may be read by its group or others (chmod 600 it)"
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("key file {shown}: {e}"))?;
    parse_hex(&text).ok_or_else(|| format!("key file {shown} does not hold a hex secret"))
}

/// The key chain of `raw` keys; the error text names the key.
pub(crate) fn key_chain(raw: &[RawKey]) -> Result<KeyChain, String> {
    let mut keys = Vec::with_capacity(raw.len());
    for k in raw {
        let secret = match (&k.secret, &k.file) {
            (Some(hex), None) => {
                parse_hex(hex).ok_or_else(|| format!("key {}: secret is not a hex string", k.id))?
            }
            (None, Some(path)) => read_key_file(path)?,
            _ => {
                return Err(format!(
                    "key {}: give exactly one of `secret` and `file`",
                    k.id
                ))
            }
        };
        if secret.len() < MIN_SECRET_BYTES {
            return Err(format!(
                "key {}: secret of {} bytes, at least {MIN_SECRET_BYTES} needed",
                k.id,
                secret.len()
            ));
        }
        let duration = |name: &str, text: &Option<String>| {
            text.as_deref()
                .map(|t| parse_duration(t).map_err(|e| format!("key {}: {name}: {e}", k.id)))
                .transpose()
        };
        keys.push(Key {
            id: k.id,
            secret,
            not_before: duration("not_before", &k.not_before)?,
            not_after: duration("not_after", &k.not_after)?,
        });
    }
    KeyChain::new(keys).map_err(|e| e.to_string())
}

/// The boot value of the send sequence numbers: wall-clock nanoseconds now, so that a restarted
/// daemon's numbers are above those it sent before (RFC 2747 §3). 0 before 1970.
pub fn sequence_base() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;
    use std::time::Duration;

    use super::*;

    fn raw(text: &str) -> Vec<RawKey> {
        #[derive(Deserialize)]
        struct Wrap {
            keys: Vec<RawKey>,
        }
        toml::from_str::<Wrap>(text).expect("toml").keys
    }

    #[test]
    fn inline_keys_with_windows() {
        let chain = key_chain(&raw(r#"keys = [
                { id = 1, secret = "000102030405060708090a0b0c0d0e0f", not_after = "3600s" },
                { id = 2, secret = "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF", not_before = "3000s" },
            ]"#))
        .expect("valid");
        let keys = chain.keys();
        assert_eq!(keys[0].secret, (0..16).collect::<Vec<u8>>());
        assert_eq!(keys[0].not_after, Some(Duration::from_secs(3600)));
        assert_eq!(keys[1].secret, vec![0xff; 17]);
        assert_eq!(keys[1].not_before, Some(Duration::from_secs(3000)));
    }

    #[test]
    fn bad_keys_are_refused_with_their_id() {
        let cases = [
            (
                r#"keys = [{ id = 3, secret = "abc" }]"#,
                "key 3: secret is not",
            ),
            (r#"keys = [{ id = 4, secret = "00ff" }]"#, "at least 16"),
            (r#"keys = [{ id = 5 }]"#, "exactly one of"),
            (
                r#"keys = [{ id = 6, secret = "00000000000000000000000000000000", not_after = "soon" }]"#,
                "key 6: not_after",
            ),
            (
                r#"keys = [{ id = 7, secret = "00000000000000000000000000000000" },
                           { id = 7, secret = "11111111111111111111111111111111" }]"#,
                "key id 7 appears twice",
            ),
            (
                r#"keys = [{ id = 8, file = "/nonexistent/k" }]"#,
                "key file /nonexistent/k",
            ),
        ];
        for (text, expected) in cases {
            let error = key_chain(&raw(text)).expect_err(text);
            assert!(error.contains(expected), "{text}: {error}");
        }
    }

    #[test]
    fn key_files_must_be_private() {
        let dir = std::env::temp_dir().join(format!("rtlan-keys-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("p1.key");
        std::fs::write(&path, "  00112233445566778899aabbccddeeff\n").expect("write");
        let text = format!(
            "keys = [{{ id = 9, file = {:?} }}]",
            path.display().to_string()
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let error = key_chain(&raw(&text)).expect_err("world-readable");
        assert!(error.contains("chmod 600"), "{error}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let chain = key_chain(&raw(&text)).expect("private file");
        assert_eq!(chain.keys()[0].secret[..2], [0x00, 0x11]);
        std::fs::remove_dir_all(&dir).expect("clean up");
    }

    #[test]
    fn the_sequence_base_is_wall_clock_time() {
        // After 2020-01-01 and increasing.
        let a = sequence_base();
        assert!(a > 1_577_836_800_000_000_000);
        assert!(sequence_base() >= a);
    }
}
