//! The write algorithm: node:fs's whole-file write (`writeFile`, `appendFile`) as one
//! small state machine.
//!
//! ```text
//!   Unopened --open--> Writing --write chunk--> Writing ... --all written--> [fsync] --> done
//! ```
//!
//! * A path is opened with the caller's flags and mode; an fd is written at its
//!   current position and never closed (node:fs passes `position: null`).
//! * Each step writes at most one chunk with `write(2)`, so the scheduler interleaves
//!   a big write with everything else, charged by bytes as reads are. The first step
//!   also opens, so a small file takes one step: open, write, close.
//! * **Appends land whole.** On an `O_APPEND` fd the kernel appends each `write(2)`
//!   in one piece; a caller's bytes cut into chunks would let another writer's
//!   append land between them. So an append is one step of one `write(2)` (more
//!   only after a short write), charged all its bytes.
//! * Errors are libuv's: a write that fails after a short one leaves the bytes the
//!   kernel took (a full disk, a file size limit), and reports the error.
//! * With `flush`, `fsync` runs after the last byte, before the close.
//! * **Truncates at open**, as node:fs does: `w` opens with `O_TRUNC`. The file
//!   states a crash, an exit, a full disk or a second writer can leave are then the
//!   ones node:fs leaves (empty, or a prefix of the new bytes), and file systems that
//!   act on `O_TRUNC` itself (tracefs, overlayfs's copy-up, FUSE) see what they expect.
//!   A rewrite in place (no `O_TRUNC`, then cut) was faster on ext4 and was removed: a
//!   crash or a racing writer could leave new bytes over a stale old tail.
//! * **Small truncating writes first at the disk queue:** while one's open or close is
//!   in the kernel, big writes hold their next step a moment
//!   ([`crate::policy::give_way`]).
//! * **Short writes count.** Bytes the kernel took before an error stay counted and
//!   on disk; nothing is cut back.

use std::ffi::CString;

use crate::error::{FsError, ReadError};
use crate::job::{Wait, Waits};
use crate::memory::borrowed::Borrowed;
use crate::policy::give_way::{at_open_or_close, give_way};
use crate::sys::{self, Fd};

/// Where to write.
#[derive(Debug)]
pub enum Target {
    /// Open this path with `flags` and `mode`, and close it when done.
    Path { path: CString, flags: i32, mode: u32 },
    /// Write to this caller-owned fd at its current position; never close it.
    Fd(Fd),
}

/// How to write.
#[derive(Clone, Copy, Debug)]
pub struct WriteLimits {
    /// Bytes per `write(2)`, except for appends, which go whole.
    pub chunk_size: usize,
    /// `fsync` before closing (node:fs's `flush`).
    pub flush: bool,
    /// Makes one `write(2)` of nothing when there are no bytes, as node:fs's callback
    /// `writeFile` does: it fails on an fd or flag not open for writing (`EBADF`).
    pub write_empty: bool,
    /// Under the pool's admission control ([`crate::policy::admission`]): a write of
    /// more than one chunk asks for its bytes before it opens (they are pinned until
    /// it is done), and an open that meets EMFILE/ENFILE waits for a file to close.
    pub admitted: bool,
}

impl Default for WriteLimits {
    fn default() -> Self {
        WriteLimits { chunk_size: crate::read::DEFAULT_CHUNK_SIZE, flush: false, write_empty: false, admitted: false }
    }
}

#[derive(Debug)]
enum State {
    Unopened,
    Writing(OpenFile),
    Finished,
}

#[derive(Debug)]
struct OpenFile {
    fd: Fd,
    /// We opened it, so we close it.
    owned: bool,
    /// Opened for appending: the rest goes in one step.
    append: bool,
}

impl Drop for OpenFile {
    fn drop(&mut self) {
        // Failed and cancelled writes end here, leaving what the kernel took, as
        // node:fs's do. A close error has nobody to go to.
        if self.owned {
            let _ = sys::close(self.fd);
        }
    }
}

/// One whole-file write, advanced one chunk at a time by [`FileWrite::step`].
#[derive(Debug)]
pub struct FileWrite {
    target: Target,
    /// The bytes, until the write is done with them.
    data: Option<Borrowed>,
    written: usize,
    state: State,
    limits: WriteLimits,
    /// Under admission control: its bytes were granted.
    granted: bool,
    /// Under admission control: its last open failed with EMFILE/ENFILE.
    out_of_descriptors: bool,
    /// Waiting for descriptors is over: the next open's error is final.
    gave_up: bool,
}

impl FileWrite {
    pub fn new(target: Target, data: Borrowed, limits: WriteLimits) -> Self {
        let chunk_size = limits.chunk_size.clamp(1, crate::read::MAX_READ_SYSCALL);
        FileWrite {
            target,
            data: Some(data),
            written: 0,
            state: State::Unopened,
            limits: WriteLimits { chunk_size, ..limits },
            granted: false,
            out_of_descriptors: false,
            gave_up: false,
        }
    }

    fn len(&self) -> usize {
        self.data.as_ref().map_or(0, Borrowed::len)
    }

    /// The path it opens, if it writes to one.
    pub fn path(&self) -> Option<&std::ffi::CStr> {
        match &self.target {
            Target::Path { path, .. } => Some(path),
            Target::Fd(_) => None,
        }
    }

    /// A path opened with `O_TRUNC` for at most one chunk: its open and close wait on
    /// the disk queue, where big writes give way to it ([`crate::policy::give_way`]).
    fn small_truncating(&self) -> bool {
        matches!(self.target, Target::Path { flags, .. } if flags & libc::O_TRUNC != 0) && !self.is_large()
    }

    /// More than one chunk: under admission control, it is granted its bytes first.
    pub fn is_large(&self) -> bool {
        self.len() > self.limits.chunk_size
    }

    /// Does the next piece of work: opening on the first call, then one chunk (or a
    /// whole append), then `fsync` with `flush`. Returns the bytes written and whether
    /// all is written. After an error the write is finished and its fd closed.
    pub fn step(&mut self) -> Result<(usize, bool), ReadError> {
        let result = self.try_step();
        if result.is_err() {
            self.state = State::Finished;
            self.data = None;
        }
        result
    }

    fn try_step(&mut self) -> Result<(usize, bool), ReadError> {
        if let State::Unopened = self.state {
            if self.limits.admitted && self.is_large() && !self.granted {
                return Ok((0, false)); // asks for its bytes (Waits::wait) holding no fd
            }
            self.out_of_descriptors = false;
            let opened = {
                let _small = at_open_or_close(self.small_truncating(), self.is_large());
                open(&self.target)
            };
            match opened {
                Ok(file) => self.state = State::Writing(file),
                Err(e) if self.limits.admitted && !self.gave_up && sys::is_out_of_descriptors(&e) => {
                    self.out_of_descriptors = true;
                    return Ok((0, false));
                }
                Err(e) => return Err(e.into()),
            }
        }
        let large = self.is_large();
        let State::Writing(file) = &mut self.state else { return Ok((0, true)) };
        let data = self.data.as_ref().map_or(&[][..], Borrowed::as_slice);
        let rest = &data[self.written..];
        let want = if file.append { rest.len() } else { rest.len().min(self.limits.chunk_size) };
        if data.is_empty() && self.limits.write_empty {
            sys::write::write(file.fd, &[])?;
        }
        if large {
            give_way();
        }
        let mut done = 0;
        while done < want {
            match sys::write::write(file.fd, &rest[done..want]) {
                // Nothing taken and no error (not seen from regular files): try again
                // next step, as node:fs's writeAll calls write again.
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) => {
                    // A short write, then the error (ENOSPC, EFBIG, EDQUOT): the bytes
                    // taken stay written, as after node:fs's writeAll.
                    self.written += done;
                    return Err(e.into());
                }
            }
        }
        self.written += done;
        if self.written < data.len() {
            return Ok((done, false));
        }
        if self.limits.flush {
            sys::write::fsync(file.fd)?;
        }
        Ok((done, true))
    }

    /// Lets the bytes go and closes the fd if we opened it; the close's error is the
    /// outcome then, as node:fs reports it. Call after [`FileWrite::step`] said all is
    /// written.
    pub fn finish(mut self) -> Result<(), ReadError> {
        let (small, large) = (self.small_truncating(), self.is_large());
        self.data = None;
        if let State::Writing(mut file) = std::mem::replace(&mut self.state, State::Finished) {
            if file.owned {
                file.owned = false; // closed here, so its Drop must not close again
                                    // The close after a truncate starts the writeback the next truncate of
                                    // this file waits for ([`crate::policy::give_way`]).
                let _small = at_open_or_close(small, large);
                sys::close(file.fd)?;
            }
        }
        Ok(())
    }
}

fn open(target: &Target) -> Result<OpenFile, FsError> {
    match target {
        Target::Path { path, flags, mode } => {
            let fd = sys::open(path, *flags, *mode)?;
            Ok(OpenFile { fd, owned: true, append: flags & libc::O_APPEND != 0 })
        }
        Target::Fd(fd) => Ok(OpenFile { fd: *fd, owned: false, append: sys::write::is_append(*fd)? }),
    }
}

/// What the pool asks of a write under admission control, and tells it.
impl Waits for FileWrite {
    fn opens_file(&self) -> bool {
        self.limits.admitted && matches!(self.target, Target::Path { .. })
    }

    fn wait(&self) -> Wait {
        match self.state {
            State::Unopened if self.out_of_descriptors => Wait::FileClosed,
            State::Unopened if self.limits.admitted && self.is_large() && !self.granted => {
                Wait::Bytes(self.len() as u64)
            }
            _ => Wait::No,
        }
    }

    fn grant(&mut self) {
        self.granted = true;
    }

    fn give_up(&mut self) {
        self.gave_up = true;
    }
}

#[cfg(all(test, not(fairfs_loom)))]
mod tests {
    use super::*;
    use crate::test_files::{c_path, fds_open_on, pattern};

    fn write_all(target: Target, data: &[u8], limits: WriteLimits) -> (Result<(), ReadError>, usize) {
        let mut w = FileWrite::new(target, Borrowed::owned(data.to_vec()), limits);
        let mut steps = 0;
        loop {
            steps += 1;
            match w.step() {
                Ok((_, true)) => return (w.finish(), steps),
                Ok(_) => {}
                Err(e) => return (Err(e), steps),
            }
        }
    }

    fn path_target(p: &std::path::Path, flags: i32) -> Target {
        Target::Path { path: c_path(p), flags, mode: 0o666 }
    }

    const W: i32 = libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC;
    const A: i32 = libc::O_WRONLY | libc::O_CREAT | libc::O_APPEND;

    #[test]
    fn writes_files_of_many_sizes_in_chunks_and_closes_them() {
        let dir = tempfile::tempdir().unwrap();
        let limits = WriteLimits { chunk_size: 4096, ..Default::default() };
        for len in [0usize, 1, 4096, 4097, 100_000] {
            let p = dir.path().join(format!("{len}"));
            std::fs::write(&p, vec![7u8; 200_000]).unwrap(); // truncated by 'w'
            let data = pattern(len);
            let (outcome, steps) = write_all(path_target(&p, W), &data, limits);
            outcome.unwrap();
            assert_eq!(std::fs::read(&p).unwrap(), data, "len {len}");
            assert_eq!(steps, len.div_ceil(4096).max(1), "one step per chunk, the first also opens");
            assert_eq!(fds_open_on(&p), 0);
        }
    }

    #[test]
    fn a_truncating_write_truncates_at_open_and_a_stopped_one_leaves_a_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let limits = WriteLimits { chunk_size: 4, ..Default::default() };
        std::fs::write(&p, b"old old old old old").unwrap();
        write_all(path_target(&p, W), b"new", limits).0.unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        std::fs::write(&p, b"old old old old old").unwrap();
        let mut w = FileWrite::new(path_target(&p, W), Borrowed::owned(b"abcdefgh".to_vec()), limits);
        assert_eq!(w.step().unwrap(), (4, false));
        // What a crash or a second writer would find now: node:fs's state, a prefix of
        // the new bytes with nothing of the old file after it.
        assert_eq!(std::fs::read(&p).unwrap(), b"abcd", "truncated at open, never written over in place");
        drop(w); // cancelled
        assert_eq!(std::fs::read(&p).unwrap(), b"abcd", "what was written stays, as node:fs's would");
        // O_EXCL still refuses an existing file.
        let excl = W | libc::O_EXCL;
        let (outcome, _) = write_all(path_target(&p, excl), b"x", limits);
        assert_eq!(outcome, Err(ReadError::Io(FsError::new(libc::EEXIST, crate::Syscall::Open))));
    }

    #[test]
    fn an_append_is_one_step_whatever_its_size() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log");
        std::fs::write(&p, b"head ").unwrap();
        let limits = WriteLimits { chunk_size: 4096, ..Default::default() };
        let data = pattern(50_000);
        let (outcome, steps) = write_all(path_target(&p, A), &data, limits);
        outcome.unwrap();
        assert_eq!(steps, 1);
        assert_eq!(std::fs::read(&p).unwrap(), [&b"head "[..], &data].concat());
    }

    #[test]
    fn an_fd_is_written_at_its_position_and_left_open() {
        use std::io::{Seek, SeekFrom, Write};
        use std::os::fd::AsRawFd;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let mut file = std::fs::OpenOptions::new().create(true).truncate(true).read(true).write(true).open(&p).unwrap();
        file.write_all(b"0123456789").unwrap();
        file.seek(SeekFrom::Start(4)).unwrap();
        let limits = WriteLimits { chunk_size: 3, ..Default::default() };
        let (outcome, steps) = write_all(Target::Fd(file.as_raw_fd()), b"abcdefg", limits);
        outcome.unwrap();
        assert_eq!(steps, 3);
        assert_eq!(std::fs::read(&p).unwrap(), b"0123abcdefg");
        assert_eq!(file.stream_position().unwrap(), 11, "the fd is still open, at the end of what was written");
    }

    #[test]
    fn errors_are_nodes() {
        let dir = tempfile::tempdir().unwrap();
        let (outcome, _) = write_all(path_target(&dir.path().join("no/such"), W), b"x", WriteLimits::default());
        assert_eq!(outcome, Err(ReadError::Io(FsError::new(libc::ENOENT, crate::Syscall::Open))));
        let (outcome, _) = write_all(path_target(dir.path(), W), b"x", WriteLimits::default());
        assert_eq!(outcome, Err(ReadError::Io(FsError::new(libc::EISDIR, crate::Syscall::Open))));
        let (outcome, _) = write_all(Target::Fd(1_000_000), b"x", WriteLimits::default());
        assert_eq!(outcome, Err(ReadError::Io(FsError::new(libc::EBADF, crate::Syscall::Write))));
        // Nothing to write to a file opened read-only: fine, unless asked to write anyway.
        let p = dir.path().join("f");
        std::fs::write(&p, b"x").unwrap();
        assert_eq!(write_all(path_target(&p, libc::O_RDONLY), b"", WriteLimits::default()).0, Ok(()));
        let limits = WriteLimits { write_empty: true, ..Default::default() };
        let (outcome, _) = write_all(path_target(&p, libc::O_RDONLY), b"", limits);
        assert_eq!(outcome, Err(ReadError::Io(FsError::new(libc::EBADF, crate::Syscall::Write))));
    }

    #[test]
    fn flush_syncs_and_a_cancelled_write_closes_its_fd() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let limits = WriteLimits { chunk_size: 4, flush: true, ..Default::default() };
        let (outcome, _) = write_all(path_target(&p, W), b"0123456789", limits);
        outcome.unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"0123456789");
        let mut w = FileWrite::new(path_target(&p, W), Borrowed::owned(b"abcdefgh".to_vec()), limits);
        assert_eq!(w.step().unwrap(), (4, false));
        assert_eq!(fds_open_on(&p), 1);
        drop(w);
        assert_eq!(fds_open_on(&p), 0);
        assert_eq!(std::fs::read(&p).unwrap(), b"abcd", "what was written stays, as node:fs's would");
    }

    #[test]
    fn under_admission_a_big_write_asks_for_its_bytes_before_it_opens() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("excl");
        let limits = WriteLimits { chunk_size: 4, admitted: true, ..Default::default() };
        let excl = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL;
        let mut w = FileWrite::new(path_target(&p, excl), Borrowed::owned(b"0123456789".to_vec()), limits);
        assert!(w.opens_file());
        assert_eq!(w.step().unwrap(), (0, false));
        assert_eq!(w.wait(), Wait::Bytes(10));
        assert!(!p.exists(), "nothing opened yet: an O_EXCL open happens once");
        w.grant();
        assert_eq!(w.wait(), Wait::No);
        while !w.step().unwrap().1 {}
        w.finish().unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"0123456789");
    }
}
