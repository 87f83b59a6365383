//! Where a metadata call is answered: `stat`, `lstat`, `fstat` and `access` as jobs of
//! one step on the fair pool. Each reads nothing, so it waits on the new list behind
//! no big read's chunks: a server's `fs.stat` before a download no longer queues on
//! libuv's threads behind crypto or zlib.

use std::ffi::CString;

use crate::error::ReadError;
use crate::job::Job;
use crate::jobs::once::OnceJob;
use crate::sys::{self, Fd, StatSlots, Target};

/// A metadata call.
#[derive(Debug)]
pub enum Query {
    /// `stat` (following a final symlink) or `lstat` (not).
    Stat { path: CString, follow: bool },
    /// `fstat`.
    Fstat(Fd),
    /// `access` with `fs.constants` mode bits.
    Access { path: CString, mode: i32 },
    /// `realpath`: the canonical path.
    Realpath(CString),
    /// `readdir`: a directory's entries.
    Scandir(CString),
}

/// What a metadata call delivers.
pub type Outcome = Result<Answer, ReadError>;

/// What a metadata call gives.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    /// The fields of an `fs.Stats`, in Node's order.
    Stats(StatSlots),
    /// `access` found the file and the permissions asked for.
    Allowed,
    /// The canonical path's bytes.
    Path(Vec<u8>),
    /// A directory's entries packed for JS: for each, its `UV_DIRENT_*` type byte,
    /// its name's bytes, and a NUL.
    Entries(Vec<u8>),
}

impl Query {
    /// Makes the call on this thread.
    pub fn run(&self) -> Result<Answer, ReadError> {
        Ok(match self {
            Query::Stat { path, follow: true } => Answer::Stats(sys::stat(Target::Path(path))?),
            Query::Stat { path, follow: false } => Answer::Stats(sys::stat(Target::Link(path))?),
            Query::Fstat(fd) => Answer::Stats(sys::stat(Target::Fd(*fd))?),
            Query::Access { path, mode } => {
                sys::access(path, *mode)?;
                Answer::Allowed
            }
            Query::Realpath(path) => Answer::Path(sys::realpath(path)?),
            Query::Scandir(path) => {
                let entries = sys::scandir(path)?;
                let mut packed = Vec::with_capacity(entries.iter().map(|(name, _)| name.len() + 2).sum());
                for (name, kind) in entries {
                    packed.push(kind);
                    packed.extend_from_slice(&name);
                    packed.push(0);
                }
                Answer::Entries(packed)
            }
        })
    }

    /// The call as a pool job: `on_done` gets its answer, or `None` if it was
    /// cancelled before it ran.
    pub fn into_job<D>(self, on_done: D) -> Box<dyn Job>
    where
        D: FnOnce(Option<Outcome>) + Send + 'static,
    {
        Box::new(OnceJob::new(move || (self.run(), 0), on_done))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Syscall;
    use crate::pool::Pool;

    #[test]
    fn stat_and_access_run_on_the_pool_with_node_fs_errors() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, b"abc").unwrap();
        let c = crate::read::tests::c_path;
        let pool = Pool::new(2, 64 * 1024);
        let ask = |q: Query| {
            let (tx, rx) = std::sync::mpsc::channel();
            pool.submit(q.into_job(move |a| tx.send(a).unwrap()));
            rx.recv().unwrap().expect("not cancelled")
        };
        let Answer::Stats(s) = ask(Query::Stat { path: c(&file), follow: true }).unwrap() else { panic!() };
        assert_eq!(s[8], 3, "size");
        let missing = ask(Query::Stat { path: c(&dir.path().join("x")), follow: false }).unwrap_err();
        assert!(matches!(missing, ReadError::Io(e) if e.syscall == Syscall::Lstat && e.os == libc::ENOENT));
        assert_eq!(ask(Query::Access { path: c(&file), mode: libc::R_OK }).unwrap(), Answer::Allowed);
        let denied = ask(Query::Access { path: c(&dir.path().join("x")), mode: libc::F_OK }).unwrap_err();
        assert!(matches!(denied, ReadError::Io(e) if e.syscall == Syscall::Access));
    }
}
