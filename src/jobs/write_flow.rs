//! Which file a whole-file write writes: its spelling's keyed flow when it is made,
//! and where its path leads once a worker looks.
//!
//! ```text
//!  submit ─► the keyed flow of its spelling ─► first step, on a worker: where the path
//!            (call order per spelling)         leads ─► that file's turn (file_turns)
//! ```
//!
//! A write joins the flow of its path as spelled when it is made, so writes through one
//! spelling keep their call order within a pool. Its first step, on a worker (it may
//! wait on the file system), finds where the path leads: the directory resolved by
//! `realpath(3)`, plus the last name, followed through symlinks as `open(2)` follows
//! them; that file's turn ([`super::file_turns`]) then orders it with writes through
//! any other name, in any pool. The key is found by the write itself, before its open,
//! so it cannot change with a cache, as a key taken on the calling thread did (an RCU
//! walk gives up beside renames).
//!
//! Two hard links of one file are two names and so two turns: the key names where a
//! path leads, not the inode (a file not made yet has none, and keys by inode and by
//! name would not meet).

use std::ffi::{CStr, OsStr};
use std::hash::{Hash, Hasher};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Symlinks followed before giving up, as Linux's `MAXSYMLINKS`.
const MAX_SYMLINKS: usize = 40;

/// The flow of `path` as spelled: a hash of its absolute, lexically normalised
/// spelling (`//` and `.` dropped; `..` kept, since a symlink may precede it). A path
/// that is already where it leads has the key [`file_flow`] finds for it.
pub fn spelling_flow(path: &CStr) -> u64 {
    let bytes = path.to_bytes();
    let cwd = if bytes.first() == Some(&b'/') { None } else { std::env::current_dir().ok() };
    let cwd = cwd.as_ref().map_or(&[][..], |c| c.as_os_str().as_bytes());
    key_of(cwd, bytes)
}

/// The key of the file `path` leads to, found on a worker: `None` where that cannot be
/// told (a directory that is not there, a symlink loop), and the write keys by its
/// spelling (its open then fails, or meets only writes through that spelling).
pub fn file_flow(path: &CStr) -> Option<u64> {
    let mut path = PathBuf::from(OsStr::from_bytes(path.to_bytes()));
    for _ in 0..MAX_SYMLINKS {
        // `a/b/` and `a/b/.` end in `b` here, which the open then refuses or takes;
        // a path ending in `..` (a directory) has no flow of its own.
        let name = path.file_name()?.to_owned();
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        let dir = std::fs::canonicalize(dir).ok()?;
        let full = dir.join(&name);
        match std::fs::symlink_metadata(&full) {
            Ok(meta) if meta.file_type().is_symlink() => {
                // A relative target is relative to the link's directory; an absolute
                // one replaces it (`join`).
                path = dir.join(std::fs::read_link(&full).ok()?);
            }
            _ => return Some(key_of(&[], full.as_os_str().as_bytes())),
        }
    }
    None
}

/// A hash of `base` and then `path`'s names, `//` and `.` dropped, with bit 62 set so
/// that it meets neither a stream's flow (counted up from 1) nor an fd's (bit 63). A
/// hash that collides only orders two writes that need not be.
fn key_of(base: &[u8], path: &[u8]) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for part in base.split(|&b| b == b'/').chain(path.split(|&b| b == b'/')) {
        if !part.is_empty() && part != b"." {
            part.hash(&mut hasher);
        }
    }
    (1 << 62) | (hasher.finish() & ((1 << 62) - 1))
}

#[cfg(all(test, not(fairfs_loom)))]
mod tests {
    use super::*;
    use crate::test_files::c_path;

    #[test]
    fn one_spelling_is_one_flow_and_a_canonical_path_keys_alike_both_ways() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        let p = real.join("f");
        assert_eq!(spelling_flow(&c_path(&p)), spelling_flow(&c_path(&real.join("./f"))));
        assert_ne!(spelling_flow(&c_path(&p)), spelling_flow(&c_path(&real.join("g"))));
        // Not made yet, and made: the same key, which is its spelling's.
        assert_eq!(file_flow(&c_path(&p)), Some(spelling_flow(&c_path(&p))));
        std::fs::write(&p, b"x").unwrap();
        assert_eq!(file_flow(&c_path(&p)), Some(spelling_flow(&c_path(&p))));
    }

    #[test]
    fn other_names_of_one_file_lead_to_its_flow() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(real.join("d")).unwrap();
        let p = real.join("d/f");
        let key = spelling_flow(&c_path(&p));
        std::os::unix::fs::symlink(&p, real.join("abs")).unwrap(); // dangling until f is made
        std::os::unix::fs::symlink("d/f", real.join("rel")).unwrap();
        std::os::unix::fs::symlink("rel", real.join("chain")).unwrap();
        std::os::unix::fs::symlink(real.join("d"), real.join("dirlink")).unwrap();
        for name in ["abs", "rel", "chain", "dirlink//f", "d/../d/./f", "dirlink/../d/f"] {
            let spelled = c_path(&real.join(name));
            assert_eq!(file_flow(&spelled), Some(key), "{name}, before f is made");
            std::fs::write(&p, b"x").unwrap();
            assert_eq!(file_flow(&spelled), Some(key), "{name}, after");
            std::fs::remove_file(&p).unwrap();
        }
        assert_ne!(spelling_flow(&c_path(&real.join("abs"))), key, "the spelling alone does not know");
    }

    #[test]
    fn where_nothing_can_be_told_there_is_no_file_flow() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(file_flow(&c_path(&real.join("no/such/f"))), None);
        std::os::unix::fs::symlink("loop", real.join("loop")).unwrap();
        assert_eq!(file_flow(&c_path(&real.join("loop"))), None);
        assert_eq!(file_flow(&c_path(&real.join(".."))), None);
    }
}
