//! The shell side of the host's reservation policy (`rtlan_core::rtcd::policy`): who a client
//! is — the user and groups of the process at the other end of its socket — and the names of
//! the configuration (`[[policy]]` with `user` / `group`) resolved to ids.
//!
//! The user and primary group come from `SO_PEERCRED`, which the kernel fills in at `connect`
//! and a client cannot forge. Supplementary groups are not in `SO_PEERCRED`: they are read from
//! `/proc/<pid>/status` (`Groups:`), the peer's own at the time of its request. A peer whose PID
//! is not visible (another PID namespace) is judged by its primary group alone.

use rtlan_core::rtcd::policy::Principal;

/// The principal of a peer with `pid` (if visible), `uid` and primary `gid`.
pub(super) fn principal(pid: Option<u32>, uid: u32, gid: u32) -> Principal {
    let mut gids = vec![gid];
    if let Some(pid) = pid {
        if let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
            for g in supplementary_groups(&status) {
                if !gids.contains(&g) {
                    gids.push(g);
                }
            }
        }
    }
    Principal { uid, gids }
}

/// The `Groups:` line of a `/proc/<pid>/status` text (empty if absent or malformed).
fn supplementary_groups(status: &str) -> Vec<u32> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Groups:"))
        .map(|rest| {
            rest.split_whitespace()
                .map_while(|g| g.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The group id of the group `name` (or number), as `getent group NAME`.
pub(super) use super::clients::group_id;

/// The user id of the user `name` (the system's user database, as `id -u NAME`).
pub(super) fn user_id(name: &str) -> Option<u32> {
    let name = std::ffi::CString::new(name).ok()?;
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: all-zero bytes are a valid `passwd`.
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the call; `buf` is writable for its length.
    let rc = unsafe {
        libc::getpwnam_r(
            name.as_ptr(),
            &mut pwd,
            buf.as_mut_ptr(),
            buf.len(),
            &mut result,
        )
    };
    (rc == 0 && !result.is_null()).then_some(pwd.pw_uid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supplementary_groups_come_from_the_status_groups_line() {
        let status = "Name:\tx\nUid:\t1000\t1000\t1000\t1000\nGroups:\t4 24 29 1000 \nNgid:\t0\n";
        assert_eq!(supplementary_groups(status), vec![4, 24, 29, 1000]);
        assert_eq!(supplementary_groups("Groups:\t\n"), Vec::<u32>::new());
        assert_eq!(supplementary_groups("Name:\tx\n"), Vec::<u32>::new());
        assert_eq!(supplementary_groups("Groups:\t4 x 5\n"), vec![4]);
    }

    #[test]
    fn this_process_is_who_the_kernel_says() {
        // SAFETY: plain getters.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let me = principal(Some(std::process::id()), uid, gid);
        assert_eq!((me.uid, me.gids[0]), (uid, gid));
        assert_eq!(user_id("root"), Some(0));
        assert_eq!(group_id("root"), Some(0));
        assert_eq!(user_id("no-such-user-rtlan"), None);
        assert_eq!(group_id("no such group"), None);
    }
}
