//! Link keys for labs whose rtlan switches authenticate their control messages (`auth = true`
//! on a switch; `docs/protocol.md` §8, after RFC 2747's per-interface keys): one random 256-bit
//! secret per authenticated link, written as hex to `<state dir>/keys/<a>--<b>.key` (ends in
//! name order, so both ends find the same file), mode 0600 — the daemons refuse a key file its
//! group or others may read. The switch at either end and a host's daemon name the file as key
//! id 1 of that link. The files go with the state directory when the lab is taken down.

use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::topology::Topology;

/// Secret length, bytes: SHA-256's block-sized key would be 64; 32 is the hash's output, RFC
/// 2104 §3's recommended minimum L.
const SECRET_BYTES: usize = 32;

/// The key id every lab link uses.
pub(crate) const LAB_KEY_ID: u32 = 1;

/// The key file of the link between `a` and `b` under the lab's state directory `dir`.
pub(crate) fn key_path(dir: &Path, a: &str, b: &str) -> PathBuf {
    let (first, second) = if a <= b { (a, b) } else { (b, a) };
    dir.join("keys").join(format!("{first}--{second}.key"))
}

/// Writes a fresh secret for every authenticated link of `topology` under `dir`.
pub(crate) fn write_link_keys(topology: &Topology, dir: &Path) -> std::io::Result<()> {
    let mut random = std::fs::File::open("/dev/urandom")?;
    for link in &topology.links {
        let [a, b] = &link.ends;
        if !topology.link_authenticated(&a.node, &b.node) {
            continue;
        }
        let path = key_path(dir, &a.node, &b.node);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let mut secret = [0u8; SECRET_BYTES];
        random.read_exact(&mut secret)?;
        let hex: String = secret.iter().map(|b| format!("{b:02x}")).collect();
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)?;
        writeln!(file, "{hex}")?;
    }
    Ok(())
}

/// The TOML value of a `keys` setting naming the key file of link `a`–`b`.
pub(crate) fn keys_value(dir: &Path, a: &str, b: &str) -> String {
    format!(
        "[{{ id = {LAB_KEY_ID}, file = \"{}\" }}]",
        key_path(dir, a, b).display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_ends_name_the_same_file() {
        let dir = Path::new("/run/lab");
        assert_eq!(key_path(dir, "s1", "a"), key_path(dir, "a", "s1"));
        assert_eq!(
            key_path(dir, "a", "s1"),
            Path::new("/run/lab/keys/a--s1.key")
        );
        assert_eq!(
            keys_value(dir, "s1", "s2"),
            "[{ id = 1, file = \"/run/lab/keys/s1--s2.key\" }]"
        );
    }

    #[test]
    fn only_authenticated_links_get_a_private_key_file() {
        use std::os::unix::fs::PermissionsExt;
        let topology = Topology::from_str(
            "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n\
             [[switch]]\nname = \"s1\"\nauth = true\n\
             [[switch]]\nname = \"br\"\nkind = \"linux-bridge\"\n\
             [[link]]\nends = [\"a\", \"s1\"]\n\
             [[link]]\nends = [\"s1\", \"br\"]\n\
             [[link]]\nends = [\"br\", \"b\"]\n",
            "t.toml",
        )
        .expect("valid");
        let dir = std::env::temp_dir().join(format!("rtlan-keys-test-{}", std::process::id()));
        write_link_keys(&topology, &dir).expect("written");
        let key = key_path(&dir, "a", "s1");
        let mode = std::fs::metadata(&key)
            .expect("a–s1 key")
            .permissions()
            .mode();
        let text = std::fs::read_to_string(&key).expect("readable");
        let other = key_path(&dir, "s1", "br").exists();
        std::fs::remove_dir_all(&dir).expect("cleaned");
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(text.trim().len(), 2 * SECRET_BYTES);
        assert!(text.trim().bytes().all(|c| c.is_ascii_hexdigit()));
        assert!(!other, "a link to a kernel bridge carries no keys");
    }
}
