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
    /// A directory's entries packed for JS ([`pack_entries`]).
    Entries(Vec<u8>),
}

/// The slots up to `blocks` are unsigned in libuv ([`StatSlots`]); after them, the times.
const UNSIGNED_SLOTS: usize = 10;

/// The numbers of an `fs.Stats` (not `BigIntStats`), as Node fills the Float64Array
/// behind one (`FillStatsArray` in src/node_file-inl.h, Node 20 to 24): each of the ten
/// unsigned fields converted from `uint64_t` to the nearest double, so an inode or
/// device number of 2^63 and above is a positive number; each time as a signed value.
///
/// A `BigIntStats` takes the slots as they are: Node's array for it is a BigInt64Array
/// that `static_cast<int64_t>` fills, so there the same number is negative, as in the
/// slots.
pub fn stat_numbers(slots: &StatSlots) -> [f64; 18] {
    std::array::from_fn(|i| if i < UNSIGNED_SLOTS { slots[i] as u64 as f64 } else { slots[i] as f64 })
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
            Query::Scandir(path) => Answer::Entries(pack_entries(&sys::scandir(path)?)),
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

/// A directory's entries packed for JS: their count (u32, little-endian), each one's
/// `UV_DIRENT_*` type byte, then their names joined by NUL (which no name holds), so
/// that JS decodes all the names with one `toString` and one `split`.
pub fn pack_entries(listing: &sys::Listing) -> Vec<u8> {
    let mut packed = Vec::with_capacity(4 + 2 * listing.len() + listing.name_bytes());
    packed.extend_from_slice(&(listing.len() as u32).to_le_bytes());
    packed.extend(listing.iter().map(|(_, kind)| kind));
    for (i, (name, _)) in listing.iter().enumerate() {
        if i > 0 {
            packed.push(0);
        }
        packed.extend_from_slice(name);
    }
    packed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Syscall;
    use crate::pool::Pool;

    #[test]
    fn entries_pack_as_a_count_the_types_and_the_names_joined_by_nul() {
        assert_eq!(pack_entries(&sys::Listing::default()), vec![0, 0, 0, 0]);
        let mut listing = sys::Listing::default();
        for (name, kind) in [(&b"a"[..], 1), (b"bc", 2), (&[0xc3], 0)] {
            listing.push(name, kind);
        }
        let packed = pack_entries(&listing);
        assert_eq!(packed, [&[3, 0, 0, 0, 1, 2, 0][..], b"a\0bc\0\xc3"].concat());
    }

    #[test]
    fn stat_and_access_run_on_the_pool_with_node_fs_errors() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, b"abc").unwrap();
        let c = crate::test_files::c_path;
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

    #[test]
    fn a_metadata_call_is_a_completed_request_but_no_chunk_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, b"abc").unwrap();
        let c = crate::test_files::c_path;
        let pool = Pool::new(2, 64 * 1024);
        let f = std::fs::File::open(&file).unwrap();
        use std::os::fd::AsRawFd;
        let queries = [
            Query::Stat { path: c(&file), follow: true },
            Query::Stat { path: c(&file), follow: false },
            Query::Stat { path: c(&dir.path().join("missing")), follow: true },
            Query::Fstat(f.as_raw_fd()),
            Query::Access { path: c(&file), mode: libc::R_OK },
            Query::Realpath(c(&file)),
            Query::Scandir(c(dir.path())),
        ];
        let asked = queries.len() as u64;
        let (tx, rx) = std::sync::mpsc::channel();
        for q in queries {
            let tx = tx.clone();
            pool.submit(q.into_job(move |a| tx.send(a.is_some()).unwrap()));
        }
        assert!((0..asked).all(|_| rx.recv().unwrap()), "none cancelled");
        let stats = pool.stats();
        assert_eq!((stats.completed, stats.chunks_read, stats.bytes_read), (asked, 0, 0));
    }

    #[test]
    fn stats_numbers_are_node_fs_numbers_for_64_bit_devices_inodes_and_old_times() {
        // What statx gives for a FUSE file with use_ino, or a file on NFS or a
        // network file system that numbers inodes from the top bit: the slots hold
        // the bits of libuv's uint64_t fields.
        let mut slots: StatSlots = [0; 18];
        slots[0] = (1u64 << 63) as i64; // dev
        slots[1] = 0o100644; // mode
        slots[5] = u64::MAX as i64; // rdev
        slots[7] = ((1u64 << 63) + 2049) as i64; // ino
        slots[8] = 12_345; // size
        slots[10] = -2; // atime, before 1970
        slots[11] = 500_000_000;
        slots[12] = 1_700_000_000;
        slots[13] = 999_999_999;
        let n = stat_numbers(&slots);
        // Node's static_cast<double>(uint64_t): unsigned, to the nearest double.
        assert_eq!(n[0], 9_223_372_036_854_775_808.0, "dev 2^63");
        assert_eq!(n[5], 18_446_744_073_709_551_616.0, "rdev 2^64 - 1, rounded up as Number(2n ** 64n - 1n) is");
        assert_eq!(n[7], 9_223_372_036_854_777_856.0, "ino 2^63 + 2049, the nearest double");
        assert!(n[..10].iter().all(|&v| v >= 0.0), "no count is negative");
        assert_eq!((n[1], n[8]), (0o100644 as f64, 12_345.0));
        // Times are signed: atimeMs = -2 * 1000 + 5e8 / 1e6 = -1500.
        assert_eq!((n[10], n[11], n[12], n[13]), (-2.0, 5e8, 1.7e9, 999_999_999.0));
        // The BigIntStats form is the slots themselves (Node's BigInt64Array): the same
        // inode is 2^63 + 2049 - 2^64 there.
        assert_eq!(slots[7], -9_223_372_036_854_773_759);
    }
}
