//! fairfs: fast and fair file reads.
//!
//! The core is plain Rust and knows nothing of Node:
//!
//! * [`read`]: node:fs's `readFile` algorithm as a state machine, one chunk per step;
//! * [`cached`]: the fast path that reads small cached files on the calling thread;
//! * [`scheduler`]: deficit round robin over the requests in flight;
//! * [`pool`]: a bounded pool of worker threads that runs the steps fairly;
//! * [`admission`]: how many reads may hold open files and result memory at once;
//! * [`contention`]: how many big files are read at once, from whether others want the CPU;
//! * [`host_threads`]: which threads are libuv's pool, whose demand the governor watches;
//! * [`buffer_pool`]: reusable, already-faulted buffers in size classes;
//! * [`external_memory`]: what the JS engine is told of pooled memory JS holds;
//! * [`lent`]: memory the caller lends a read to fill (a JS Buffer), freed by its GC;
//! * [`pack`]: the small results of a batch packed into shared slabs;
//! * [`error`]: OS errors as node:fs reports them (libuv's error numbers);
//! * `sys`: the OS calls, through libc on unix and std on Windows.
//!
//! With the `node` feature, `node` adds the N-API binding used by the npm package.
//! See ARCHITECTURE.md for how a read flows from JS through the pool and back.

pub mod admission;
pub mod batch;
pub mod buffer_pool;
pub mod cached;
pub mod chunk;
pub mod contention;
pub mod error;
pub mod external_memory;
pub mod host_threads;
pub mod lent;
mod loom;
pub mod pack;
pub mod parts;
pub mod pool;
pub mod read;
pub mod request;
pub mod scheduler;
mod sys;

#[cfg(feature = "node")]
mod node;

pub use buffer_pool::BufferPool;
pub use error::{FsError, ReadError, Syscall};
#[cfg(not(fairfs_loom))]
pub use pool::global;
pub use pool::{Job, Piece, Pool, Stats, Step, Ticket};
pub use read::{FileRead, Progress, ReadLimits, Source};
pub use request::{read_blocking, submit_read, OnceJob, Outcome};
/// A file descriptor as Node hands them out (a C runtime fd on Windows).
pub use sys::Fd;
