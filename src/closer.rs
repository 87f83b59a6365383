//! Closing off the calling thread.
//!
//! A `close` can wait on storage: FUSE sends the daemon a `FLUSH` and waits for its
//! answer, NFS writes back what the file has dirty, and the last close of an unlinked
//! file frees its blocks. An abort (`ac.abort()`), a stream destroyed before its
//! open's result arrived and an environment's teardown all release fds on the JS
//! thread, where node:fs never waits for storage, so they hand that release to
//! [`later`]: one of a few `fairfs-close` threads runs it. A thread stuck on a hung
//! mount holds only itself: when no closer is free another starts, up to [`MAX`].

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock};

type Work = Box<dyn FnOnce() + Send>;

/// Closer threads at most; past that, releases wait for one to come free.
pub const MAX: usize = 8;

struct Closers {
    tx: Sender<Work>,
    rx: Arc<Mutex<Receiver<Work>>>,
    threads: AtomicUsize,
    idle: Arc<AtomicUsize>,
}

fn closers() -> &'static Closers {
    static CLOSERS: OnceLock<Closers> = OnceLock::new();
    CLOSERS.get_or_init(|| {
        let (tx, rx) = channel();
        Closers { tx, rx: Arc::new(Mutex::new(rx)), threads: AtomicUsize::new(0), idle: Arc::default() }
    })
}

/// Runs `release` (closing fds, dropping what holds them) on a closer thread; here,
/// where none can be started.
pub fn later(release: impl FnOnce() + Send + 'static) {
    if cfg!(fairfs_loom) {
        return release();
    }
    let closers = closers();
    if closers.idle.load(Ordering::Acquire) == 0 && closers.threads.load(Ordering::Relaxed) < MAX && !start(closers) {
        return release();
    }
    if let Err(unsent) = closers.tx.send(Box::new(release)) {
        (unsent.0)();
    }
}

/// Starts a closer thread; false if it could not be started and none runs.
fn start(closers: &'static Closers) -> bool {
    let (rx, idle) = (closers.rx.clone(), closers.idle.clone());
    idle.fetch_add(1, Ordering::AcqRel);
    let spawned = std::thread::Builder::new().name("fairfs-close".into()).spawn(move || loop {
        let work = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
        let Ok(work) = work else { return };
        idle.fetch_sub(1, Ordering::AcqRel);
        work();
        idle.fetch_add(1, Ordering::AcqRel);
    });
    match spawned {
        Ok(_) => {
            closers.threads.fetch_add(1, Ordering::Relaxed);
            true
        }
        Err(_) => {
            closers.idle.fetch_sub(1, Ordering::AcqRel);
            closers.threads.load(Ordering::Relaxed) > 0
        }
    }
}

#[cfg(all(test, not(fairfs_loom)))]
mod tests {
    use super::*;
    use std::sync::mpsc::channel;
    use std::time::Duration;

    #[test]
    fn a_release_that_hangs_holds_only_its_own_thread() {
        let (hung_tx, hung_rx) = channel::<()>();
        let (done_tx, done_rx) = channel();
        let caller = std::thread::current().id();
        // A release stuck on a hung mount...
        later(move || {
            let _ = hung_rx.recv();
        });
        // ...and the next ones still run, elsewhere.
        for i in 0..3 {
            let done_tx = done_tx.clone();
            later(move || done_tx.send((i, std::thread::current().id())).unwrap());
        }
        for _ in 0..3 {
            let (_, thread) = done_rx.recv_timeout(Duration::from_secs(10)).expect("not held by the hung one");
            assert_ne!(thread, caller, "run off the calling thread");
        }
        hung_tx.send(()).unwrap();
        assert!(closers().threads.load(Ordering::Relaxed) <= MAX);
    }
}
