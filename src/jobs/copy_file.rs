//! `fs.copyFile` as a pool job: libuv's `uv__fs_copyfile`, but a chunk per step, so a
//! 1 GiB copy is interleaved with everything else instead of holding a thread for the
//! whole file (node:fs copies in one work item).
//!
//! ```text
//!   open src, fstat, open dst (O_EXCL with COPYFILE_EXCL, src's mode),
//!   [not EXCL: fstat dst (the same file: done), ftruncate], fchmod, [FICLONE]
//!   --> copy a chunk ... --> close both
//! ```
//!
//! Every error is reported as libuv reports it, `copyfile` with both paths; after an
//! error (or a cancel) the destination, once opened, is unlinked, as libuv does.

use std::ffi::CString;

use crate::at_exit::MustFinish;
use crate::error::{FsError, ReadError, Syscall};
use crate::job::{Data, Job, Step};
use crate::sys::{self, Fd};

/// `fs.constants.COPYFILE_EXCL`: fail if the destination exists.
pub const COPYFILE_EXCL: u32 = 1;
/// `COPYFILE_FICLONE`: clone copy-on-write where the file system can, else copy.
pub const COPYFILE_FICLONE: u32 = 2;
/// `COPYFILE_FICLONE_FORCE`: clone, or fail.
pub const COPYFILE_FICLONE_FORCE: u32 = 4;

/// Both files, open, and how far the copy got.
struct Open {
    src: Fd,
    dst: Fd,
    /// Bytes of the source to copy (its size at the open), and copied so far.
    size: u64,
    copied: u64,
}

impl Open {
    /// Closes both files, reporting the first close error, as libuv does.
    fn close(self) -> Result<(), FsError> {
        let src = sys::close(self.src);
        let dst = sys::close(self.dst);
        src.and(dst)
    }
}

/// The copy itself: what it holds, given back when it is dropped.
struct Copy {
    src: CString,
    dst: CString,
    mode: u32,
    chunk_size: usize,
    open: Option<Open>,
    /// The destination was opened by this copy and the copy is not done: dropping it
    /// unlinks the destination, as libuv does after an error.
    unlink: bool,
}

impl Drop for Copy {
    fn drop(&mut self) {
        if let Some(open) = self.open.take() {
            let _ = open.close();
        }
        if self.unlink {
            let _ = sys::write::unlink(&self.dst);
        }
    }
}

impl Copy {
    /// Opens both files; `Ok(None)` when there is nothing to copy (the same file, or
    /// a clone did it).
    fn start(&mut self) -> Result<Option<Open>, FsError> {
        let src = sys::open(&self.src, libc::O_RDONLY, 0)?;
        let src_st = match sys::stat(sys::Target::Fd(src)) {
            Ok(st) => st,
            Err(e) => {
                let _ = sys::close(src);
                return Err(e);
            }
        };
        let src_mode = src_st[1] as u32;
        let excl = if self.mode & COPYFILE_EXCL != 0 { libc::O_EXCL } else { 0 };
        let dst = match sys::open(&self.dst, libc::O_WRONLY | libc::O_CREAT | excl, src_mode) {
            Ok(fd) => fd,
            Err(e) => {
                let _ = sys::close(src);
                return Err(e);
            }
        };
        self.unlink = true;
        let open = Open { src, dst, size: src_st[8] as u64, copied: 0 };
        let fail = |open: Open, e: FsError| {
            let _ = open.close();
            Err(e)
        };
        if excl == 0 {
            let dst_st = match sys::stat(sys::Target::Fd(dst)) {
                Ok(st) => st,
                Err(e) => return fail(open, e),
            };
            if (src_st[0], src_st[7]) == (dst_st[0], dst_st[7]) {
                self.unlink = false; // the same file: nothing to copy or unlink
                open.close()?;
                return Ok(None);
            }
            // An existing destination is cut only now, once it is known not to be the
            // source. ceph-fuse refuses it (EACCES) on a new read-only file, where
            // there is nothing to cut.
            match sys::write::truncate(dst, 0) {
                Err(e) if e.os == libc::EACCES && dst_st[8] == 0 => {}
                Err(e) => return fail(open, e),
                Ok(()) => {}
            }
        }
        if let Err(e) = sys::write::fchmod_copy(dst, src_mode) {
            return fail(open, e);
        }
        if self.mode & (COPYFILE_FICLONE | COPYFILE_FICLONE_FORCE) != 0 {
            match sys::write::clone_file(dst, src) {
                Ok(()) => {
                    open.close()?;
                    self.unlink = false;
                    return Ok(None);
                }
                Err(e) if self.mode & COPYFILE_FICLONE_FORCE != 0 => return fail(open, e),
                Err(_) => {}
            }
        }
        Ok(Some(open))
    }

    /// Opens on the first call, then copies a chunk: the bytes copied, and whether
    /// the copy is done (both files closed).
    fn step(&mut self) -> Result<(usize, bool), FsError> {
        if self.open.is_none() {
            match self.start()? {
                Some(open) => self.open = Some(open),
                None => return Ok((0, true)),
            }
        }
        let open = self.open.as_mut().expect("opened above");
        let want = (open.size - open.copied).min(self.chunk_size as u64) as usize;
        let n = if want == 0 { 0 } else { sys::write::copy_range(open.src, open.dst, open.copied, want)? };
        open.copied += n as u64;
        // A source that shrank ends the copy where it ends.
        if n == 0 || open.copied >= open.size {
            let open = self.open.take().expect("opened above");
            open.close()?;
            self.unlink = false;
            return Ok((n, true));
        }
        Ok((n, false))
    }
}

/// One `copyFile` request, handing its outcome to `on_done` exactly once.
pub struct CopyFileJob<F> {
    copy: Copy,
    outcome: Option<Result<(), ReadError>>,
    on_done: F,
    /// Exit waits for it ([`crate::at_exit`]).
    _finish: MustFinish,
}

impl<F: FnOnce(Result<(), ReadError>) + Send + 'static> CopyFileJob<F> {
    /// Copies `src` to `dst` with `fs.constants.COPYFILE_*` `mode` bits, `chunk_size`
    /// bytes per step.
    pub fn new(src: CString, dst: CString, mode: u32, chunk_size: usize, on_done: F) -> Self {
        let chunk_size = chunk_size.clamp(1, crate::read::MAX_READ_SYSCALL);
        let copy = Copy { src, dst, mode, chunk_size, open: None, unlink: false };
        CopyFileJob { copy, outcome: None, on_done, _finish: MustFinish::new() }
    }
}

impl<F: FnOnce(Result<(), ReadError>) + Send + 'static> Job for CopyFileJob<F> {
    fn step(&mut self) -> Step {
        match self.copy.step() {
            Ok((bytes, done)) => {
                if done {
                    self.outcome = Some(Ok(()));
                }
                Step { bytes, done }
            }
            Err(e) => {
                // libuv names every step's error after the copy itself.
                self.outcome = Some(Err(ReadError::Io(FsError::new(e.os, Syscall::Copyfile))));
                Step { bytes: 0, done: true }
            }
        }
    }

    fn data(&self) -> Data {
        Data::Written
    }

    fn is_large(&self) -> bool {
        self.copy.open.as_ref().is_some_and(|o| o.size > self.copy.chunk_size as u64)
    }

    fn complete(self: Box<Self>) {
        let CopyFileJob { copy, outcome, on_done, .. } = *self;
        // Closed (and unlinked after an error) before anyone hears of it.
        drop(copy);
        on_done(outcome.unwrap_or(Err(ReadError::Panicked)));
    }

    fn cancel(self: Box<Self>) {
        let CopyFileJob { copy, on_done, .. } = *self;
        drop(copy);
        on_done(Err(ReadError::Cancelled));
    }
}

#[cfg(all(test, not(fairfs_loom)))]
mod tests {
    use super::*;
    use crate::test_files::{c_path, fds_open_on, pattern};

    fn copy(src: &std::path::Path, dst: &std::path::Path, mode: u32, chunk: usize) -> (Result<(), ReadError>, usize) {
        let (tx, rx) = std::sync::mpsc::channel();
        let mut job: Box<dyn Job> =
            Box::new(CopyFileJob::new(c_path(src), c_path(dst), mode, chunk, move |o| tx.send(o).unwrap()));
        let mut steps = 0;
        loop {
            steps += 1;
            if job.step().done {
                job.complete();
                return (rx.recv().unwrap(), steps);
            }
        }
    }

    #[test]
    fn copies_a_chunk_per_step_with_the_sources_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let (src, dst) = (dir.path().join("src"), dir.path().join("dst"));
        let data = pattern(10_000);
        std::fs::write(&src, &data).unwrap();
        std::fs::set_permissions(&src, std::fs::Permissions::from_mode(0o640)).unwrap();
        std::fs::write(&dst, vec![1u8; 20_000]).unwrap();
        let (outcome, steps) = copy(&src, &dst, 0, 4096);
        outcome.unwrap();
        assert_eq!(steps, 3);
        assert!(std::fs::read(&dst).unwrap() == data);
        assert_eq!(std::fs::metadata(&dst).unwrap().permissions().mode() & 0o777, 0o640);
        assert_eq!(fds_open_on(&src) + fds_open_on(&dst), 0);
        // FICLONE where it cannot clone (tmpfs, ext4) copies; an empty file is one step.
        std::fs::write(&src, b"").unwrap();
        assert_eq!(copy(&src, &dst, COPYFILE_FICLONE, 4096), (Ok(()), 1));
        assert_eq!(std::fs::read(&dst).unwrap(), b"");
    }

    #[test]
    fn errors_name_the_copy_and_leave_no_destination() {
        let dir = tempfile::tempdir().unwrap();
        let (src, dst) = (dir.path().join("src"), dir.path().join("dst"));
        let e = |os| Err(ReadError::Io(FsError::new(os, Syscall::Copyfile)));
        assert_eq!(copy(&src, &dst, 0, 4096).0, e(libc::ENOENT));
        assert!(!dst.exists());
        std::fs::write(&src, b"x").unwrap();
        std::fs::write(&dst, b"there").unwrap();
        assert_eq!(copy(&src, &dst, COPYFILE_EXCL, 4096).0, e(libc::EEXIST));
        assert_eq!(std::fs::read(&dst).unwrap(), b"there", "an existing destination is left alone");
        assert_eq!(copy(&src, dir.path(), 0, 4096).0, e(libc::EISDIR));
        // The same file is no error and no copy.
        assert_eq!(copy(&src, &src, 0, 4096).0, Ok(()));
        assert_eq!(std::fs::read(&src).unwrap(), b"x");
    }

    #[test]
    fn a_cancelled_copy_closes_and_unlinks_its_destination() {
        let dir = tempfile::tempdir().unwrap();
        let (src, dst) = (dir.path().join("src"), dir.path().join("dst"));
        std::fs::write(&src, pattern(50_000)).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let mut job: Box<dyn Job> =
            Box::new(CopyFileJob::new(c_path(&src), c_path(&dst), 0, 4096, move |o| tx.send(o).unwrap()));
        assert!(!job.step().done);
        assert!(dst.exists());
        job.cancel();
        assert_eq!(rx.recv().unwrap(), Err(ReadError::Cancelled));
        assert!(!dst.exists());
        assert_eq!(fds_open_on(&src), 0);
    }
}
