//! Accepted writes finish before the process exits.
//!
//! node:fs's queued work outlives `process.exit()`: Node's exit calls
//! `uv_library_shutdown()`, which queues an exit message behind every request already
//! on libuv's pool and joins its threads. So a `writeFile`, `fs.write`, `copyFile`,
//! `rename` or `mkdir` made just before `process.exit()` (or before an uncaught
//! throw, or the natural end of the loop) is done when the process is gone. fairfs's
//! pool threads are never joined (a read stuck on a hung mount must not hold exit),
//! so each write-class job carries a [`MustFinish`] token from the moment it is made,
//! and an `atexit` hook ([`finish_at_exit`]) waits until no token is left. Reads and
//! metadata calls carry none: they may be dropped at exit. A write stuck on a hung
//! mount holds exit, as it holds node:fs's.

use crate::loom::sync::{Condvar, Mutex};

/// Write-class jobs made and not yet done with, and what [`wait_for_all`] sleeps on.
struct Unfinished {
    count: Mutex<usize>,
    none_left: Condvar,
}

#[cfg(not(fairfs_loom))]
fn unfinished() -> &'static Unfinished {
    static UNFINISHED: std::sync::OnceLock<Unfinished> = std::sync::OnceLock::new();
    UNFINISHED.get_or_init(|| Unfinished { count: Mutex::new(0), none_left: Condvar::new() })
}

#[cfg(fairfs_loom)]
fn unfinished() -> &'static Unfinished {
    // loom's primitives belong to one model run: a fresh set per run, leaked.
    loom::lazy_static! {
        static ref UNFINISHED: Unfinished = Unfinished { count: Mutex::new(0), none_left: Condvar::new() };
    }
    &UNFINISHED
}

/// Held by a write-class job from the moment it is made until it is dropped (done,
/// failed or cancelled): exit waits for it.
#[derive(Debug)]
pub struct MustFinish(());

impl MustFinish {
    pub fn new() -> Self {
        *unfinished().count.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        MustFinish(())
    }
}

impl Default for MustFinish {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for MustFinish {
    fn drop(&mut self) {
        let u = unfinished();
        let mut count = u.count.lock().unwrap_or_else(|p| p.into_inner());
        *count -= 1;
        if *count == 0 {
            u.none_left.notify_all();
        }
    }
}

/// Write-class jobs not yet finished.
pub fn unfinished_count() -> usize {
    *unfinished().count.lock().unwrap_or_else(|p| p.into_inner())
}

/// Blocks until every write-class job made so far (and any made meanwhile) is done.
pub fn wait_for_all() {
    let u = unfinished();
    let mut count = u.count.lock().unwrap_or_else(|p| p.into_inner());
    while *count > 0 {
        count = u.none_left.wait(count).unwrap_or_else(|p| p.into_inner());
    }
}

/// Registers, once per process, the `atexit` hook that waits for the write-class jobs:
/// `exit(3)` runs it after Node's own exit steps (`process.exit()`, an uncaught
/// exception, the loop's natural end), before the process is gone.
#[cfg(not(fairfs_loom))]
pub fn finish_at_exit() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    extern "C" fn at_exit() {
        wait_for_all();
    }
    ONCE.call_once(|| {
        // SAFETY: `at_exit` is a plain function that lives as long as the process (an
        // addon is never unloaded); atexit only stores its address.
        unsafe { libc::atexit(at_exit) };
    });
}

#[cfg(all(test, not(fairfs_loom)))]
mod tests {
    use super::*;

    #[test]
    fn waiting_returns_once_every_token_is_dropped() {
        let token = MustFinish::new();
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || {
            wait_for_all();
            tx.send(()).unwrap();
        });
        // Not a timing: the waiter cannot return while the token lives.
        assert!(
            rx.recv_timeout(std::time::Duration::from_millis(50)).is_err(),
            "returned while a write was unfinished"
        );
        drop(token);
        rx.recv().unwrap();
        waiter.join().unwrap();
    }
}

#[cfg(all(test, fairfs_loom))]
mod loom_tests {
    use super::*;
    use loom::sync::atomic::{AtomicBool, Ordering};
    use loom::sync::Arc;

    /// Whichever order a job's end and the exit hook's wait take, the wait returns
    /// only after the job is done with.
    #[test]
    fn loom_exit_waits_for_a_write_made_before_it() {
        loom::model(|| {
            let done = Arc::new(AtomicBool::new(false));
            let token = MustFinish::new();
            let worker = {
                let done = done.clone();
                loom::thread::spawn(move || {
                    done.store(true, Ordering::SeqCst);
                    drop(token);
                })
            };
            wait_for_all();
            assert!(done.load(Ordering::SeqCst), "exit went ahead of an unfinished write");
            worker.join().unwrap();
        });
    }
}
