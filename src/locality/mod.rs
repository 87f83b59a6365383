//! Whether a file is on a local mount, decided without asking its file system.
//!
//! The calling-thread fast paths ([`crate::cached`]) may only touch files whose every
//! call is answered from memory. Asking a file system whether it is local is itself a
//! call into it: `fstatfs` on FUSE asks the daemon, on NFS, CIFS or 9p the server, and
//! a hung server would then freeze the event loop on a name the kernel had cached. So
//! the file's mount is found by its id, which the VFS knows without the file system
//! ([`crate::sys::mount_id`]), and looked up in a table of the mounts read from
//! `/proc/self/mountinfo` ([`table`]) and kept current by a thread of its own
//! ([`watch`]). What no table can see (a scanner answering fanotify, a stalled
//! journal) is caught by timing the calls ([`guard`]), and files are opened on the
//! calling thread only on mounts where the pool's opens have been quick
//! ([`probation`]).
//!
//! Linux only, like the fast paths themselves.

// Under loom only the pool is built: lanes, which ask where files are, are not.
#![cfg_attr(fairfs_loom, allow(dead_code))]

mod guard;
mod probation;
mod table;
mod watch;

pub use guard::{timed, Stopwatch, SLOW_CALLS};

use crate::sys::{self, Fd};
use table::Probe;

/// What the calling thread means to do with a file: read its metadata (`statx`, the
/// `close` of an fd it opened), or open it or read its contents, which an on-access
/// scanner holds up (fanotify's open and access permission events).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Use {
    Metadata,
    Content,
}

/// The id of `fd`'s mount if the calling thread may use files there as `to` says: the
/// mount is local, not paused by the guard, and for contents trusted ([`probation`]).
/// The calls are then made through [`timed`]. `None` for anything else, and where the
/// mounts are unknown or changing.
pub fn local_mount(fd: Fd, to: Use) -> Option<u64> {
    let mount = local_id(fd)?;
    (guard::allows(mount) && (to == Use::Metadata || probation::trusted(mount))).then_some(mount)
}

/// `fd`'s [`crate::sys::stat`] if the calling thread may use it as [`local_mount`]
/// says, timed as [`timed`] times: where the table lets `statx` name mounts, one call
/// asks both, the mount id and the stat (a local mount answers `AT_STATX_DONT_SYNC`
/// as it answers a stat, and a remote one's answer is not used); else the mount first.
pub fn stat_if_local(fd: Fd) -> Option<sys::StatSlots> {
    let table = watch::current()?;
    if table.probe == Probe::Statx {
        let watch = Stopwatch::start();
        if let Some((slots, mount)) = sys::stat_fd_and_mount(fd) {
            if !(table.is_local(mount) && guard::allows(mount)) {
                return None;
            }
            watch.stop(mount);
            return Some(slots);
        }
    }
    drop(table);
    let mount = local_mount(fd, Use::Metadata)?;
    timed(mount, || sys::stat(sys::Target::Fd(fd)).ok())
}

/// A pool thread opened `fd`, which took `took`: quick opens on a local mount earn it
/// the calling thread's trust ([`probation`]).
pub fn observe_open(fd: Fd, took: std::time::Duration) {
    if probation::pending() {
        if let Some(mount) = local_id(fd) {
            probation::observe(mount, took);
        }
    }
}

/// Reads the mount table and starts its watcher, if not done yet.
pub fn prepare() {
    let _ = watch::current();
}

/// `fd`'s mount id if the table says that mount is local.
fn local_id(fd: Fd) -> Option<u64> {
    let table = watch::current()?;
    let mount = mount_of(&table, fd)?;
    table.is_local(mount).then_some(mount)
}

/// `fd`'s mount id, asked as `table` says it may be without calling out.
fn mount_of(table: &table::Table, fd: Fd) -> Option<u64> {
    match table.probe {
        Probe::Statx => sys::mount_id(fd),
        Probe::FdInfo => sys::mount_id_from_fdinfo(fd),
    }
}

/// Where mount `id` is mounted, as the current table has it.
pub fn mount_point(id: u64) -> Option<Vec<u8>> {
    watch::current()?.mount_point(id).map(<[u8]>::to_vec)
}

/// The remote mount (one whose calls wait on a server or daemon: [`crate::lanes`]) that
/// `fd`'s file is on, if any. Nothing is asked of the file system.
pub fn remote_of_fd(fd: Fd) -> Option<u64> {
    fd_mount(fd).and_then(|(mount, remote)| remote.then_some(mount))
}

/// `fd`'s mount id and whether it is remote, where any mount is remote (else `None`:
/// nothing needs a lane). Nothing is asked of the file system.
pub fn fd_mount(fd: Fd) -> Option<(u64, bool)> {
    let table = watch::current()?;
    if !table.has_remote() {
        return None;
    }
    mount_of(&table, fd).map(|mount| (mount, table.is_remote(mount)))
}

/// The lane for a path whose lookup stops at a name the kernel cannot follow from
/// memory (a symlink, or a directory not cached on a local disk, which may be one): where
/// it leads is not known without reading the disk, so its request gets a lane of its
/// own, apart from both the local pool and every mount's lane. Only while some mount
/// is remote. No mount has this id.
pub const UNRESOLVED: u64 = u64::MAX;

/// The remote mount a call on `path` would wait on, if any, found where the path leads
/// (symlinks, `..`, `//` as the kernel resolves them), without waiting on any file
/// system: from the name's lookup where the kernel has all of it cached
/// (`openat2(O_PATH, RESOLVE_CACHED)`), else from where that lookup stops
/// ([`where_lookup_stops`]). Where no mount is remote, this is one look at the table.
pub fn remote_of_path(path: &std::ffi::CStr) -> Option<u64> {
    let table = watch::current()?;
    if !table.has_remote() {
        return None;
    }
    match sys::open_cached(path, libc::O_PATH) {
        Ok(fd) => remote_of_lookup(&table, fd),
        // A kernel without RESOLVE_CACHED (before 5.12): the mount points alone, by
        // prefix (a symlink out of a remote mount is then missed).
        Err(e) if matches!(e.os, libc::ENOSYS | libc::EINVAL) => {
            let bytes = path.to_bytes();
            if bytes.first() == Some(&b'/') {
                return table.remote_holder(bytes);
            }
            let mut absolute = std::env::current_dir().ok()?.into_os_string().into_encoded_bytes();
            absolute.push(b'/');
            absolute.extend_from_slice(bytes);
            table.remote_holder(&absolute)
        }
        Err(_) => where_lookup_stops(&table, path.to_bytes(), 0),
    }
}

/// The remote mount of `fd` (an `O_PATH` fd, closed here: its close calls no file
/// system), if it is remote.
fn remote_of_lookup(table: &table::Table, fd: Fd) -> Option<u64> {
    let mount = mount_of(table, fd);
    let _ = sys::close(fd);
    mount.filter(|&mount| table.is_remote(mount))
}

/// Where a call on `path`, whose lookup the kernel could not finish from memory (a
/// name not cached, or absent, or a link not followed), would go on looking: the
/// directory that holds its last name, found from memory, whose mount then does the
/// rest (a create, a lookup). A parent that is not cached itself is resolved the same
/// way, one name up. [`UNRESOLVED`] where what the name is cannot be known from
/// memory: a cached symlink the kernel would have to read, or, on a local mount, a
/// directory on the way that is not cached at all (it may be a symlink into a hung
/// mount, and only a read of the disk would tell).
fn where_lookup_stops(table: &table::Table, path: &[u8], depth: usize) -> Option<u64> {
    let (parent, last) = split_last(path)?;
    let parent = std::ffi::CString::new(parent).ok()?;
    match sys::open_cached(&parent, libc::O_PATH) {
        Ok(dir) => {
            let last = std::ffi::CString::new(last).ok()?;
            let looked = sys::open_cached_at(dir, &last, libc::O_PATH | libc::O_NOFOLLOW);
            if let Ok(fd) = looked {
                let _ = sys::close(fd);
                let _ = sys::close(dir);
                return Some(UNRESOLVED);
            }
            let remote = remote_of_lookup(table, dir);
            // A directory on the way that is not cached (EAGAIN), on a local mount: it is
            // read from the disk, and may be a symlink leading anywhere. (Its lane would
            // hold it on a remote mount, whatever it is.) A last name not cached stays
            // its directory's: most are files about to be made, and a symlink there is
            // left unseen.
            match looked {
                Err(e) if remote.is_none() && e.os == libc::EAGAIN && depth > 0 => Some(UNRESOLVED),
                _ => remote,
            }
        }
        // A path has at most PATH_MAX / 2 names.
        Err(_) if depth < 4096 => where_lookup_stops(table, parent.as_bytes(), depth + 1),
        Err(_) => None,
    }
}

/// Whether `error`, which the kernel's cached lookup of `path` answered by itself
/// (`ENOENT`, `ENOTDIR`: the dentry cache knows a name is absent, or not a directory),
/// is the answer a call on `path` would get, and may be given on the calling thread:
/// the directory where the lookup stopped is found from memory, on a local mount the
/// guard allows, and the last name is not a link left unfollowed (a dangling symlink:
/// the pool answers those). A missing directory on the way is followed up the same way.
pub fn local_miss(path: &std::ffi::CStr, error: i32) -> bool {
    local_miss_at(path.to_bytes(), error, 0)
}

fn local_miss_at(path: &[u8], error: i32, depth: usize) -> bool {
    if !matches!(error, libc::ENOENT | libc::ENOTDIR) || depth > 4096 {
        return false;
    }
    let Some((parent, last)) = split_last(path) else { return false };
    let (Ok(parent), Ok(last)) = (std::ffi::CString::new(parent), std::ffi::CString::new(last)) else { return false };
    match sys::open_cached(&parent, libc::O_PATH) {
        Ok(dir) => {
            let answered = match sys::open_cached_at(dir, &last, libc::O_PATH | libc::O_NOFOLLOW) {
                Ok(fd) => {
                    let _ = sys::close(fd);
                    false
                }
                Err(e) => e.os == error && local_mount(dir, Use::Metadata).is_some(),
            };
            let _ = sys::close(dir);
            answered
        }
        Err(e) => local_miss_at(parent.as_bytes(), e.os, depth + 1),
    }
}

/// `path` split into the directory that holds its last name and that name, lexically:
/// `a/b/c` → (`a/b`, `c`), `/c` → (`/`, `c`), `c` → (`.`, `c`), trailing slashes
/// dropped. `None` for `/` and the empty path.
fn split_last(path: &[u8]) -> Option<(&[u8], &[u8])> {
    let end = path.iter().rposition(|&b| b != b'/')? + 1;
    let path = &path[..end];
    match path.iter().rposition(|&b| b == b'/') {
        None => Some((b".", path)),
        Some(slash) => {
            let parent_end = path[..slash].iter().rposition(|&b| b != b'/').map_or(1, |i| i + 1);
            Some((&path[..parent_end], &path[slash + 1..]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn files_on_this_machines_disk_and_tmpfs_are_local_and_proc_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let file = std::fs::File::create(dir.path().join("f")).unwrap();
        let on_tmp = local_mount(file.as_raw_fd(), Use::Metadata);
        let in_memory = std::fs::File::open("/dev/shm").ok();
        let proc_file = std::fs::File::open("/proc/self/status").unwrap();
        assert_eq!(local_mount(proc_file.as_raw_fd(), Use::Metadata), None, "procfs is not a local file system");
        // The fdinfo probe and the statx probe agree on the id.
        let id = sys::mount_id(file.as_raw_fd());
        if id.is_none() {
            return; // before Linux 5.8: no mount ids, no fast paths
        }
        assert_eq!(sys::mount_id_from_fdinfo(file.as_raw_fd()), id);
        let kind = std::process::Command::new("stat").args(["-f", "-c", "%T"]).arg(dir.path()).output().unwrap();
        let kind = String::from_utf8_lossy(&kind.stdout).trim().to_owned();
        if ["ext2/ext3", "xfs", "btrfs", "tmpfs", "f2fs"].contains(&kind.as_str()) {
            assert_eq!(on_tmp, id, "the temp dir is on {kind}");
        }
        if let Some(shm) = in_memory {
            assert!(local_mount(shm.as_raw_fd(), Use::Metadata).is_some(), "/dev/shm is tmpfs");
        }
    }

    #[test]
    fn a_path_splits_into_the_directory_that_holds_its_last_name_and_that_name() {
        let split = |p: &str| {
            split_last(p.as_bytes())
                .map(|(d, n)| (String::from_utf8_lossy(d).into_owned(), String::from_utf8_lossy(n).into_owned()))
        };
        let pair = |d: &str, n: &str| Some((d.to_owned(), n.to_owned()));
        assert_eq!(split("/a/b/c"), pair("/a/b", "c"));
        assert_eq!(split("/a//b//"), pair("/a", "b"));
        assert_eq!(split("//c"), pair("/", "c"));
        assert_eq!(split("c"), pair(".", "c"));
        assert_eq!(split("a/.."), pair("a", ".."));
        assert_eq!(split("/"), None);
        assert_eq!(split(""), None);
    }
}
