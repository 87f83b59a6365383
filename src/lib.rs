//! fairfs: fast and fair file reads.
//!
//! The core is plain Rust and knows nothing of Node:
//!
//! * [`read`]: node:fs's `readFile` algorithm as a state machine, one chunk per step;
//! * `write`: its `writeFile`/`appendFile` algorithm, one chunk (or one whole append) per step;
//! * [`cached`]: the fast path that reads small cached files on the calling thread,
//!   on mounts `locality` (Linux) knows to be local;
//! * [`scheduler`]: deficit round robin over the requests in flight;
//! * [`pool`]: a bounded pool of worker threads that runs the steps fairly;
//! * [`lanes`]: a pool of its own for each mount that waits on a server or daemon;
//! * [`job`]: the contract between the pool and the work it runs;
//! * [`policy`]: admission (open files and result memory), contention (how many big
//!   files at once) and which threads are libuv's;
//! * [`memory`]: reusable, already-faulted buffers in size classes, what the JS engine
//!   is told of them, memory a caller lends a read to fill and bytes a write borrows;
//! * [`jobs`]: the work the pool runs: whole-file reads, a stream's open, block and
//!   close, `readFiles` batches (small results packed into shared slabs);
//! * [`closer`]: closes that may wait on storage, moved off the calling thread;
//! * [`error`]: OS errors as node:fs reports them (libuv's error numbers);
//! * `sys`: the OS calls, through libc on unix and std on Windows.
//!
//! With the `node` feature, `node` adds the N-API binding used by the npm package.
//! See ARCHITECTURE.md for how a read flows from JS through the pool and back.

pub mod at_exit;
pub mod cached;
pub mod closer;
pub mod error;
pub mod job;
pub mod jobs;
#[cfg(not(fairfs_loom))]
pub mod lanes;
#[cfg(all(target_os = "linux", not(fairfs_portable)))]
mod locality;
mod loom;
pub mod memory;
pub mod parts;
pub mod policy;
pub mod pool;
pub mod read;
pub mod scheduler;
mod sys;
#[cfg(unix)]
pub mod write;

#[cfg(test)]
mod test_files;

#[cfg(feature = "node")]
mod node;

pub use error::{FsError, ReadError, Syscall};
pub use job::{Data, Job, Piece, Step};
pub use jobs::once::OnceJob;
pub use jobs::read_file::{read_blocking, submit_read, Outcome};
pub use memory::buffer_pool::BufferPool;
#[cfg(not(fairfs_loom))]
pub use pool::global;
pub use pool::{Pool, Stats, Ticket};
pub use read::{FileRead, Progress, ReadLimits, Source};
/// A file descriptor as Node hands them out (a C runtime fd on Windows).
pub use sys::Fd;
