//! A server's per-request changes to names, each one step on the fair pool: `unlink`
//! (an upload's cleanup), `rename` (an atomic write's last step, a log's rotation) and
//! `mkdir` (a cache's directory). Each reads and writes no file data, so it waits
//! behind no big read's or write's chunks, and never on libuv's threads behind crypto.

use std::ffi::CString;

use crate::at_exit::MustFinish;
use crate::error::ReadError;
use crate::job::Job;
use crate::jobs::once::OnceJob;
use crate::sys;

/// A change to a name.
#[derive(Debug)]
pub enum Mutation {
    Unlink(CString),
    Rename {
        from: CString,
        to: CString,
    },
    /// `mkdir` of one directory (node:fs's `recursive` walk is not this).
    Mkdir {
        path: CString,
        mode: u32,
    },
}

impl Mutation {
    /// The path it changes (the first, for a rename).
    pub fn path(&self) -> &CString {
        match self {
            Mutation::Unlink(path) | Mutation::Rename { from: path, .. } | Mutation::Mkdir { path, .. } => path,
        }
    }

    /// Makes the change on this thread.
    pub fn run(&self) -> Result<(), ReadError> {
        let done = match self {
            Mutation::Unlink(path) => sys::write::unlink(path),
            Mutation::Rename { from, to } => sys::write::rename(from, to),
            Mutation::Mkdir { path, mode } => sys::write::mkdir(path, *mode),
        };
        Ok(done?)
    }

    /// The change as a pool job; `on_done` gets its outcome, or `None` if cancelled
    /// before it ran.
    pub fn into_job(self, on_done: impl FnOnce(Option<Result<(), ReadError>>) + Send + 'static) -> Box<dyn Job> {
        // Exit waits for the change ([`crate::at_exit`]), until it ran or was cancelled.
        let finish = MustFinish::new();
        Box::new(OnceJob::new(
            move || {
                let _finish = finish;
                (self.run(), 0)
            },
            on_done,
        ))
    }
}

#[cfg(all(test, not(fairfs_loom)))]
mod tests {
    use super::*;
    use crate::error::{FsError, Syscall};
    use crate::test_files::c_path;

    #[test]
    fn changes_names_with_nodes_errors() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, d) = (dir.path().join("a"), dir.path().join("b"), dir.path().join("d"));
        std::fs::write(&a, b"x").unwrap();
        Mutation::Rename { from: c_path(&a), to: c_path(&b) }.run().unwrap();
        assert!(!a.exists() && b.exists());
        let e = Mutation::Rename { from: c_path(&a), to: c_path(&b) }.run();
        assert_eq!(e, Err(ReadError::Io(FsError::new(libc::ENOENT, Syscall::Rename))));
        Mutation::Mkdir { path: c_path(&d), mode: 0o755 }.run().unwrap();
        assert!(d.is_dir());
        let e = Mutation::Mkdir { path: c_path(&d), mode: 0o755 }.run();
        assert_eq!(e, Err(ReadError::Io(FsError::new(libc::EEXIST, Syscall::Mkdir))));
        Mutation::Unlink(c_path(&b)).run().unwrap();
        assert!(!b.exists());
        let e = Mutation::Unlink(c_path(&d)).run();
        assert_eq!(e, Err(ReadError::Io(FsError::new(libc::EISDIR, Syscall::Unlink))));
    }
}
