//! `stat`, `lstat`, `fstat`, `access` and `realpath` as libuv makes them, with every
//! field node:fs puts in an `fs.Stats`.
//!
//! On Linux libuv asks `statx` for the basic fields and the birth time, and falls
//! back to `fstatat` for good where the kernel or the file system refuses `statx`
//! (birth time is then the change time). It goes through `syscall(2)`: glibc's
//! wrapper needs glibc 2.28, and the release binary must load on 2.17. `statx` is
//! what node:fs itself calls on Linux, not an accelerator, so `--cfg fairfs_portable`
//! keeps it. Elsewhere it is `fstatat`/`fstat`, with the birth time where the
//! platform keeps one.

use std::ffi::CStr;
use std::mem::MaybeUninit;

use super::Fd;
use crate::error::{FsError, Syscall};

/// What an `fs.Stats` is made of, in Node's order: dev, mode, nlink, uid, gid, rdev,
/// blksize, ino, size, blocks, then (seconds, nanoseconds) of atime, mtime, ctime and
/// birthtime.
///
/// The first ten are libuv's `uv_stat_t` fields, unsigned 64-bit, kept here as their
/// bits (`as i64`): a device or inode number of 2^63 and above is a negative slot.
/// That is what Node's BigInt64Array holds for a `BigIntStats`; the numbers of a
/// `Stats` take them unsigned ([`crate::jobs::metadata::stat_numbers`]). The times
/// are signed: before 1970 is negative.
pub type StatSlots = [i64; 18];

/// What to ask about.
#[derive(Clone, Copy, Debug)]
pub enum Target<'a> {
    /// `stat`: a path, following a final symlink.
    Path(&'a CStr),
    /// `lstat`: a path, about a final symlink itself.
    Link(&'a CStr),
    /// `fstat`: an open fd.
    Fd(Fd),
}

impl Target<'_> {
    fn syscall(&self) -> Syscall {
        match self {
            Target::Path(_) => Syscall::Stat,
            Target::Link(_) => Syscall::Lstat,
            Target::Fd(_) => Syscall::Fstat,
        }
    }
}

/// The `fs.Stats` fields of `target`, or node:fs's error.
pub fn stat(target: Target) -> Result<StatSlots, FsError> {
    #[cfg(target_os = "linux")]
    if let Some(slots) = statx(target)? {
        return Ok(slots);
    }
    fstatat(target)
}

/// `access(2)` with `mode` (`fs.constants.F_OK`, `R_OK`, `W_OK`, `X_OK`).
pub fn access(path: &CStr, mode: i32) -> Result<(), FsError> {
    // SAFETY: `path` is NUL-terminated for the duration of the call.
    if unsafe { libc::access(path.as_ptr(), mode) } < 0 {
        return Err(FsError::last(Syscall::Access));
    }
    Ok(())
}

/// The canonical path's bytes, as libuv's `realpath(3)` gives them, or its error.
///
/// On Linux the path is walked once: opened `O_PATH` (the kernel resolves every
/// component and symlink, and opens nothing), then `/proc/self/fd` names what it
/// found. glibc's `realpath(3)` calls `readlink` on every prefix, and each call walks
/// the prefix again: on a network or FUSE mount that keeps no names (NFS revalidating,
/// `entry_timeout=0`), a path of n components costs n²/2 lookups instead of n. Where
/// the two could differ (an input past `PATH_MAX`, no `/proc`, no descriptor left, a
/// file unlinked meanwhile) it is `realpath(3)` after all.
pub fn realpath(path: &CStr) -> Result<Vec<u8>, FsError> {
    #[cfg(all(target_os = "linux", not(fairfs_portable)))]
    if let Some(resolved) = realpath_in_one_walk(path) {
        return resolved;
    }
    realpath_by_libc(path)
}

/// [`realpath`] by `open(O_PATH)` and `/proc/self/fd`; `None`: ask `realpath(3)`.
#[cfg(all(target_os = "linux", not(fairfs_portable)))]
fn realpath_in_one_walk(path: &CStr) -> Option<Result<Vec<u8>, FsError>> {
    use std::os::unix::ffi::OsStringExt;
    let fd = match super::open(path, libc::O_PATH, 0) {
        Ok(fd) => fd,
        // The errors a walk meets the same way as realpath(3)'s readlinks do.
        Err(e) => {
            let same = [libc::ENOENT, libc::ENOTDIR, libc::EACCES, libc::ELOOP].contains(&e.os);
            return same.then_some(Err(FsError::new(e.os, Syscall::Realpath)));
        }
    };
    let found = std::fs::read_link(format!("/proc/self/fd/{fd}"));
    // An O_PATH fd's close calls no file system.
    let _ = super::close(fd);
    let found = found.ok()?.into_os_string().into_vec();
    // One as long as PATH_MAX (realpath(3) fails ENAMETOOLONG), not from the root (a
    // file outside this process's root) or marked unlinked is for realpath(3) to judge.
    let judged_here = !found.is_empty()
        && found.len() < libc::PATH_MAX as usize - 1
        && found[0] == b'/'
        && !found.ends_with(b" (deleted)");
    judged_here.then_some(Ok(found))
}

/// `realpath(3)`, as libuv calls it.
fn realpath_by_libc(path: &CStr) -> Result<Vec<u8>, FsError> {
    // SAFETY: `path` is NUL-terminated; with a null buffer, realpath allocates the
    // result with malloc, which is copied and freed here.
    unsafe {
        let resolved = libc::realpath(path.as_ptr(), std::ptr::null_mut());
        if resolved.is_null() {
            return Err(FsError::last(Syscall::Realpath));
        }
        let bytes = CStr::from_ptr(resolved).to_bytes().to_vec();
        libc::free(resolved.cast());
        Ok(bytes)
    }
}

/// A directory's entries as libuv's `uv_fs_scandir` gives them: without `.` and `..`,
/// sorted by their bytes, each with libuv's `UV_DIRENT_*` type from `d_type` (0,
/// unknown, where the file system does not say).
pub fn scandir(path: &CStr) -> Result<Listing, FsError> {
    // SAFETY: `path` is NUL-terminated. The stream is used only here and closed
    // before returning; each entry is read before the next readdir call.
    unsafe {
        let dir = libc::opendir(path.as_ptr());
        if dir.is_null() {
            return Err(FsError::last(Syscall::Scandir));
        }
        let mut listing = Listing::default();
        let result = loop {
            // readdir returns null at the end and on an error; only errno tells them apart.
            *errno_ptr() = 0;
            let entry = libc::readdir(dir);
            if entry.is_null() {
                let errno = *errno_ptr();
                break if errno == 0 { Ok(()) } else { Err(FsError::new(errno, Syscall::Scandir)) };
            }
            let name = CStr::from_ptr((*entry).d_name.as_ptr()).to_bytes();
            if name != b"." && name != b".." {
                listing.push(name, dirent_type((*entry).d_type));
            }
        };
        libc::closedir(dir);
        result?;
        listing.sort();
        Ok(listing)
    }
}

/// A directory's names, held in one buffer: a listing of a hundred names costs the
/// worker a few allocations (two growing buffers), not one per name.
#[derive(Debug, Default)]
pub struct Listing {
    names: Vec<u8>,
    /// Each entry's name (`start..end` of `names`) and type, in order.
    entries: Vec<(u32, u32, u8)>,
}

impl Listing {
    pub(crate) fn push(&mut self, name: &[u8], kind: u8) {
        let start = self.names.len() as u32;
        self.names.extend_from_slice(name);
        self.entries.push((start, self.names.len() as u32, kind));
    }

    fn sort(&mut self) {
        let names = &self.names;
        self.entries.sort_unstable_by(|a, b| names[a.0 as usize..a.1 as usize].cmp(&names[b.0 as usize..b.1 as usize]));
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The bytes of every name, without separators.
    pub fn name_bytes(&self) -> usize {
        self.names.len()
    }

    /// Each entry's name and type, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], u8)> + '_ {
        self.entries.iter().map(|&(start, end, kind)| (&self.names[start as usize..end as usize], kind))
    }
}

/// This thread's `errno`.
#[cfg(any(target_os = "linux", target_os = "android"))]
unsafe fn errno_ptr() -> *mut libc::c_int {
    libc::__errno_location()
}
#[cfg(not(any(target_os = "linux", target_os = "android")))]
unsafe fn errno_ptr() -> *mut libc::c_int {
    libc::__error()
}

/// libuv's `UV_DIRENT_*` for a `d_type`.
fn dirent_type(d_type: u8) -> u8 {
    match d_type {
        libc::DT_REG => 1,
        libc::DT_DIR => 2,
        libc::DT_LNK => 3,
        libc::DT_FIFO => 4,
        libc::DT_SOCK => 5,
        libc::DT_CHR => 6,
        libc::DT_BLK => 7,
        _ => 0,
    }
}

/// `fstatat` (or `fstat` for an fd), as libuv calls it where there is no `statx`.
fn fstatat(target: Target) -> Result<StatSlots, FsError> {
    let mut st = MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `st` is writable memory of stat's size and any path is NUL-terminated;
    // the calls only write into `st`.
    let r = unsafe {
        match target {
            Target::Path(p) => libc::stat(p.as_ptr(), st.as_mut_ptr()),
            Target::Link(p) => libc::lstat(p.as_ptr(), st.as_mut_ptr()),
            Target::Fd(fd) => libc::fstat(fd, st.as_mut_ptr()),
        }
    };
    if r < 0 {
        return Err(FsError::last(target.syscall()));
    }
    // SAFETY: the call returned 0, so it filled `st`.
    let st = unsafe { st.assume_init() };
    let (birth, birth_ns) = birth_time(&st);
    #[allow(clippy::unnecessary_cast)] // the field types differ between platforms
    Ok([
        st.st_dev as i64,
        st.st_mode as i64,
        st.st_nlink as i64,
        st.st_uid as i64,
        st.st_gid as i64,
        st.st_rdev as i64,
        st.st_blksize as i64,
        st.st_ino as i64,
        st.st_size as i64,
        st.st_blocks as i64,
        st.st_atime as i64,
        st.st_atime_nsec as i64,
        st.st_mtime as i64,
        st.st_mtime_nsec as i64,
        st.st_ctime as i64,
        st.st_ctime_nsec as i64,
        birth,
        birth_ns,
    ])
}

/// The birth time where the platform keeps one; libuv gives the change time elsewhere.
#[allow(clippy::unnecessary_cast)]
fn birth_time(st: &libc::stat) -> (i64, i64) {
    #[cfg(any(target_os = "macos", target_os = "ios", target_os = "freebsd"))]
    return (st.st_birthtime as i64, st.st_birthtime_nsec as i64);
    #[cfg(not(any(target_os = "macos", target_os = "ios", target_os = "freebsd")))]
    (st.st_ctime as i64, st.st_ctime_nsec as i64)
}

/// `statx` as libuv calls it; `None` where the kernel or file system refuses it, after
/// which every call goes to [`fstatat`], as libuv's does.
#[cfg(target_os = "linux")]
fn statx(target: Target) -> Result<Option<StatSlots>, FsError> {
    use std::sync::atomic::{AtomicBool, Ordering};
    static NO_STATX: AtomicBool = AtomicBool::new(false);
    if NO_STATX.load(Ordering::Relaxed) {
        return Ok(None);
    }
    const EMPTY: &CStr = c"";
    let (dirfd, path, flags) = match target {
        Target::Path(p) => (libc::AT_FDCWD, p, 0),
        Target::Link(p) => (libc::AT_FDCWD, p, libc::AT_SYMLINK_NOFOLLOW),
        Target::Fd(fd) => (fd, EMPTY, libc::AT_EMPTY_PATH),
    };
    match statx_call(dirfd, path, flags, STATX_AS_LIBUV) {
        Ok(sx) => Ok(Some(slots_of(&sx))),
        Err(libc::ENOSYS | libc::EINVAL | libc::EPERM | libc::EOPNOTSUPP) => {
            NO_STATX.store(true, Ordering::Relaxed);
            Ok(None)
        }
        Err(e) => Err(FsError::new(e, target.syscall())),
    }
}

/// STATX_BASIC_STATS | STATX_BTIME, as libuv asks.
#[cfg(target_os = "linux")]
const STATX_AS_LIBUV: libc::c_uint = 0xFFF;

/// `fd`'s [`stat`] and its mount's id in one `statx`, asked with `AT_STATX_DONT_SYNC`,
/// which local file systems answer as they answer a plain stat (only network and FUSE
/// mounts tell the two apart). `None` where either is refused.
#[cfg(target_os = "linux")]
pub fn stat_fd_and_mount(fd: Fd) -> Option<(StatSlots, u64)> {
    let flags = libc::AT_EMPTY_PATH | libc::AT_STATX_DONT_SYNC;
    let sx = statx_call(fd, c"", flags, STATX_AS_LIBUV | libc::STATX_MNT_ID).ok()?;
    (sx.stx_mask & libc::STATX_MNT_ID != 0).then(|| (slots_of(&sx), sx.stx_mnt_id))
}

/// One `statx(2)`: what it filled, or its errno.
#[cfg(target_os = "linux")]
fn statx_call(dirfd: Fd, path: &CStr, flags: i32, mask: libc::c_uint) -> Result<libc::statx, i32> {
    let mut sx = MaybeUninit::<libc::statx>::zeroed();
    // SAFETY: `path` is NUL-terminated and `sx` is writable memory of statx's size;
    // the kernel only reads the path and writes `sx`.
    let r = unsafe { libc::syscall(libc::SYS_statx, dirfd, path.as_ptr(), flags, mask, sx.as_mut_ptr()) };
    if r < 0 {
        return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO));
    }
    // SAFETY: statx returned 0, so it filled `sx` (and it was zeroed before).
    Ok(unsafe { sx.assume_init() })
}

/// The slots of what `statx` filled.
#[cfg(target_os = "linux")]
fn slots_of(sx: &libc::statx) -> StatSlots {
    let dev = libc::makedev(sx.stx_dev_major, sx.stx_dev_minor);
    let rdev = libc::makedev(sx.stx_rdev_major, sx.stx_rdev_minor);
    [
        dev as i64,
        sx.stx_mode as i64,
        sx.stx_nlink as i64,
        sx.stx_uid as i64,
        sx.stx_gid as i64,
        rdev as i64,
        sx.stx_blksize as i64,
        sx.stx_ino as i64,
        sx.stx_size as i64,
        sx.stx_blocks as i64,
        sx.stx_atime.tv_sec,
        sx.stx_atime.tv_nsec as i64,
        sx.stx_mtime.tv_sec,
        sx.stx_mtime.tv_nsec as i64,
        sx.stx_ctime.tv_sec,
        sx.stx_ctime.tv_nsec as i64,
        sx.stx_btime.tv_sec,
        sx.stx_btime.tv_nsec as i64,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lstat_and_fstat_agree_with_std() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, b"hello").unwrap();
        let link = dir.path().join("l");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let c = crate::test_files::c_path;
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(&file).unwrap();
        let s = stat(Target::Path(&c(&link))).unwrap();
        assert_eq!((s[7] as u64, s[8], s[1] as u32), (meta.ino(), 5, meta.mode()), "stat follows the link");
        assert_eq!((s[12], s[13]), (meta.mtime(), meta.mtime_nsec()));
        let l = stat(Target::Link(&c(&link))).unwrap();
        assert_eq!(l[1] as u32 & libc::S_IFMT, libc::S_IFLNK, "lstat is about the link");
        let f = std::fs::File::open(&file).unwrap();
        use std::os::fd::AsRawFd;
        assert_eq!(stat(Target::Fd(f.as_raw_fd())).unwrap()[..16], s[..16]);
        let missing = stat(Target::Path(&c(&dir.path().join("none")))).unwrap_err();
        assert_eq!((missing.os, missing.syscall), (libc::ENOENT, Syscall::Stat));
        assert_eq!(stat(Target::Fd(-1)).unwrap_err().syscall, Syscall::Fstat);
        assert!(access(&c(&file), libc::R_OK).is_ok());
        let real = std::fs::canonicalize(&file).unwrap();
        assert_eq!(realpath(&c(&link)).unwrap(), real.as_os_str().as_encoded_bytes());
        assert_eq!(realpath(&c(&dir.path().join("none"))).unwrap_err().syscall, Syscall::Realpath);
        let listing = scandir(&c(dir.path())).unwrap();
        let names: Vec<_> = listing.iter().map(|(name, kind)| (name.to_vec(), kind)).collect();
        assert_eq!(names, vec![(b"f".to_vec(), 1), (b"l".to_vec(), 3)], "sorted, typed, without . and ..");
        assert_eq!(scandir(&c(&file)).unwrap_err().os, libc::ENOTDIR);
        assert_eq!(access(&c(&dir.path().join("none")), libc::F_OK).unwrap_err().syscall, Syscall::Access);
    }

    /// The fast path's one statx gives the pool's stat and the mount id the lanes ask.
    #[test]
    #[cfg(all(target_os = "linux", not(fairfs_portable)))]
    fn one_statx_gives_the_stat_and_the_mount() {
        use std::os::fd::AsRawFd;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, b"hello").unwrap();
        let f = std::fs::File::open(&file).unwrap();
        let (slots, mount) = stat_fd_and_mount(f.as_raw_fd()).expect("Linux 5.8+ names mounts");
        assert_eq!(slots, stat(Target::Fd(f.as_raw_fd())).unwrap());
        assert_eq!(Some(mount), crate::sys::mount_id(f.as_raw_fd()));
        assert_eq!(stat_fd_and_mount(-1), None);
    }

    /// The one-walk realpath gives what realpath(3) gives, result or error, on every
    /// kind of path either may meet.
    #[test]
    #[cfg(all(target_os = "linux", not(fairfs_portable)))]
    fn realpath_in_one_walk_agrees_with_realpath_3() {
        use std::ffi::CString;
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("a/b/c")).unwrap();
        std::fs::write(root.join("a/b/c/file"), b"x").unwrap();
        symlink("b/c", root.join("a/rel")).unwrap();
        symlink(root.join("a/b"), root.join("abs")).unwrap();
        symlink("../a/rel", root.join("a/b/up")).unwrap();
        symlink("nowhere", root.join("dangling")).unwrap();
        symlink("loop2", root.join("loop1")).unwrap();
        symlink("loop1", root.join("loop2")).unwrap();
        std::fs::write(root.join("with (deleted)"), b"x").unwrap();
        let unix_socket = std::os::unix::net::UnixListener::bind(root.join("sock")).unwrap();
        let cases: Vec<String> = [
            "a/b/c/file",
            "a/rel/file",
            "abs/c/../c/./file",
            "a/b/up/file",
            "a/b/up/..",
            "abs/..",
            "dangling",
            "loop1",
            "loop1/x",
            "a/b/c/file/",
            "a/b/c/file/x",
            "a/b/c/file/..",
            "a/missing/..",
            "a//b///c/",
            "with (deleted)",
            "sock",
        ]
        .iter()
        .map(|rel| format!("{}/{rel}", root.display()))
        .chain(["/", "/proc/self", "/proc/self/fd/0", "/dev/stdin", ".", "..", "/tmp/../tmp"].map(String::from))
        .collect();
        let mut walked = 0;
        for case in &cases {
            let path = CString::new(case.as_str()).unwrap();
            let libc = realpath_by_libc(&path);
            if let Some(ours) = realpath_in_one_walk(&path) {
                walked += 1;
                assert_eq!(ours, libc, "{case}");
            }
        }
        assert!(walked >= cases.len() - 4, "most cases take the one walk ({walked} of {})", cases.len());
        drop(unix_socket);
    }
}
