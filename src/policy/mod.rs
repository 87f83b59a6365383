//! The pool's policies: pure decisions, kept apart from the pool that applies them
//! so that each can be tested (and property-tested) alone.
//!
//! * [`admission`]: which reads may start now, within open files and result bytes;
//! * [`contention`]: how many big files are read at once, from whether others want
//!   the CPU, and what the buffer pool keeps in stock for them;
//! * [`give_way`]: big writes held while a small truncating write is in the kernel;
//! * [`host_threads`]: which of the process's threads are libuv's pool, whose demand
//!   the governor watches;
//! * [`loop_cpu`]: big writes kept off the CPU the event loop runs on.

pub mod admission;
pub mod contention;
pub mod give_way;
pub mod host_threads;
pub mod loop_cpu;
