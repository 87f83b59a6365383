//! Memory that crosses between the pool and JS.
//!
//! * [`buffer_pool`]: reusable, already-faulted buffers in size classes;
//! * [`free_later`]: big buffers freed on a thread of their own, not the caller's;
//! * [`external_memory`]: what the JS engine is told of pooled memory JS holds;
//! * [`lent`]: memory the caller lends a read to fill (a JS Buffer), freed by its GC;
//! * [`borrowed`]: bytes a write takes from the caller's memory (a JS Buffer), no copy.

pub mod borrowed;
pub mod buffer_pool;
pub mod external_memory;
pub mod free_later;
pub mod lent;
