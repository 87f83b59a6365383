//! The work the pool runs, one [`crate::job::Job`] per kind of request:
//!
//! * [`read_file`]: a whole-file read (`readFile`, each file of `readFiles`);
//! * [`stream`]: a read stream's open, block and close;
//! * [`batch`] and [`pack`]: a `readFiles` batch, heard about once, its small results
//!   packed into shared slabs;
//! * [`metadata`]: `stat`, `lstat`, `fstat` and `access`, one step each;
//! * [`write_file`]: a whole-file write (`writeFile`, `appendFile`), in its spelling's
//!   [`write_flow`] and its file's turn ([`file_turns`]);
//! * [`write`](mod@write): `fs.write`, `writev`, `fsync`, `fdatasync` and `close`, in order per fd;
//!   a WriteStream's writes in a [`write_chain`];
//! * [`copy_file`]: `copyFile`, a chunk per step;
//! * [`mutate`]: `unlink`, `rename` and `mkdir`, one step each;
//! * [`once`]: one step of other work.

pub mod batch;
#[cfg(unix)]
pub mod copy_file;
pub mod file_turns;
#[cfg(unix)]
pub mod metadata;
#[cfg(unix)]
pub mod mutate;
pub mod once;
pub mod pack;
pub mod read_file;
pub mod stream;
#[cfg(unix)]
pub mod write;
pub mod write_chain;
#[cfg(unix)]
pub mod write_file;
#[cfg(unix)]
pub mod write_flow;
