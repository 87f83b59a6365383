//! Keeping the mount table current: a thread of its own waits for the kernel to say
//! the mounts changed (`POLLPRI` on `/proc/self/mountinfo`) and reads the table again.
//! Between the change and the new table, no mount counts as local ([`DIRTY`]), so a
//! mount id that an unmount freed and a new mount took is never trusted from the old
//! table.

use std::io::{Read, Seek, SeekFrom};
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

use super::table::Table;

static TABLE: RwLock<Option<Arc<Table>>> = RwLock::new(None);
static DIRTY: AtomicBool = AtomicBool::new(false);

/// The current table, or `None` while it is being read again (or where there is no
/// `/proc`). The first call reads it (procfs text, no storage) and starts the watcher.
pub fn current() -> Option<Arc<Table>> {
    static STARTED: OnceLock<()> = OnceLock::new();
    STARTED.get_or_init(start);
    if DIRTY.load(Ordering::Acquire) {
        return None;
    }
    TABLE.read().unwrap_or_else(|e| e.into_inner()).clone()
}

fn start() {
    let Ok(file) = std::fs::File::open("/proc/self/mountinfo") else { return };
    // Kept for the process's life: above the numbers the application's files take.
    // SAFETY: `move_fd_high` returns an fd that is ours alone (the one given, or its
    // duplicate with the original closed), and `file` let go of the original.
    let mut file = unsafe { std::fs::File::from_raw_fd(crate::sys::move_fd_high(file.into_raw_fd())) };
    // Opened before the first read, so a change after that read wakes the watcher.
    if !reload(&mut file) {
        return;
    }
    let spawned = std::thread::Builder::new().name("fairfs-mounts".into()).spawn(move || loop {
        let mut pfd = libc::pollfd { fd: file.as_raw_fd(), events: libc::POLLPRI, revents: 0 };
        // SAFETY: one valid pollfd, read and written by the kernel during the call.
        let ready = unsafe { libc::poll(&mut pfd, 1, -1) };
        if ready < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            break;
        }
        if ready > 0 {
            DIRTY.store(true, Ordering::Release);
            if !reload(&mut file) {
                break;
            }
        }
    });
    if spawned.is_err() {
        // Nobody would notice changes: trust no table.
        *TABLE.write().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

/// Reads the table again from `file`; false (and no table) where that fails.
fn reload(file: &mut std::fs::File) -> bool {
    let mut text = String::new();
    let read = file.seek(SeekFrom::Start(0)).and_then(|_| file.read_to_string(&mut text));
    let table = read.ok().map(|_| Arc::new(Table::parse(&text)));
    let ok = table.is_some();
    *TABLE.write().unwrap_or_else(|e| e.into_inner()) = table;
    DIRTY.store(false, Ordering::Release);
    ok
}
