//! One whole-file writer per file at a time, across every pool of the process: a
//! turn per file ([`super::write_flow::file_flow`]'s key), handed on in the order
//! the writers asked for it.
//!
//! Pools keep one spelling's writes in order (a keyed flow each), but two names of
//! one file may go to two pools (a symlink's lookup may stop where the kernel has no
//! cached answer, and such a path goes to a lane of its own), so the turn lives
//! outside them. A writer that finds the turn taken leaves its pool's queue
//! ([`crate::job::Wait::Turn`]) holding no worker, and is put back when the turn
//! comes to it.
//!
//! ```text
//!  enter(key) ─┬─ free: holds it ────────────────────────────► writes ─► drop: next
//!              └─ taken: waits ─► when_mine(resume) ─ turn comes ─► resume() ─┘
//! ```
//!
//! `resume` is called outside the lock, by whoever ends the turn before it; a waiter
//! that gives up (cancelled) leaves the line, or passes the turn on if it came to it
//! meanwhile.

use std::collections::{HashMap, VecDeque};

use crate::loom::sync::atomic::{AtomicU64, Ordering};
use crate::loom::sync::{Arc, Mutex, MutexGuard};

pub use crate::job::Resume;

/// The turns of every file being written.
pub struct FileTurns {
    files: Mutex<HashMap<u64, Line>>,
    next_id: AtomicU64,
}

/// One file's writer and those waiting behind it, oldest first.
struct Line {
    holder: u64,
    waiting: VecDeque<Waiter>,
}

struct Waiter {
    id: u64,
    /// Set once the writer has left its pool's queue ([`Turn::when_mine`]).
    resume: Option<Resume>,
}

/// A writer's place at one file: its turn, or its place in line. Dropping it ends the
/// turn (the next in line gets it) or leaves the line.
pub struct Turn {
    turns: Arc<FileTurns>,
    key: u64,
    id: u64,
}

/// The process's turns.
pub fn turns() -> &'static Arc<FileTurns> {
    static TURNS: std::sync::OnceLock<Arc<FileTurns>> = std::sync::OnceLock::new();
    TURNS.get_or_init(|| Arc::new(FileTurns::new()))
}

impl FileTurns {
    pub fn new() -> Self {
        FileTurns { files: Mutex::new(HashMap::new()), next_id: AtomicU64::new(0) }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Line>> {
        self.files.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Asks for the turn at file `key`: the place, and whether the turn is its now.
    pub fn enter(turns: &Arc<Self>, key: u64) -> (Turn, bool) {
        let id = turns.next_id.fetch_add(1, Ordering::Relaxed);
        let mut files = turns.lock();
        let mine = match files.get_mut(&key) {
            Some(line) => {
                line.waiting.push_back(Waiter { id, resume: None });
                false
            }
            None => {
                files.insert(key, Line { holder: id, waiting: VecDeque::new() });
                true
            }
        };
        drop(files);
        (Turn { turns: turns.clone(), key, id }, mine)
    }

    /// Files with a writer now.
    pub fn files(&self) -> usize {
        self.lock().len()
    }
}

impl Default for FileTurns {
    fn default() -> Self {
        Self::new()
    }
}

impl Turn {
    /// Whether the turn in `held` is the writer's now; the first time (`held` empty),
    /// asks for the turn at the file `key` names.
    pub fn ask(held: &mut Option<Turn>, turns: &Arc<FileTurns>, key: impl FnOnce() -> u64) -> bool {
        match held {
            Some(turn) => turn.is_mine(),
            None => {
                let (turn, mine) = FileTurns::enter(turns, key());
                *held = Some(turn);
                mine
            }
        }
    }

    /// Whether the turn is this writer's now.
    pub fn is_mine(&self) -> bool {
        self.turns.lock().get(&self.key).is_some_and(|line| line.holder == self.id)
    }

    /// The writer has left its pool's queue: `resume` is called once the turn comes
    /// to it. Handed back if it came meanwhile (the writer goes on at once).
    pub fn when_mine(&self, resume: Resume) -> Option<Resume> {
        let mut files = self.turns.lock();
        let line = files.get_mut(&self.key).expect("a place in line keeps its file's line");
        if line.holder == self.id {
            return Some(resume);
        }
        let waiter = line.waiting.iter_mut().find(|w| w.id == self.id).expect("in line");
        waiter.resume = Some(resume);
        None
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let mut files = self.turns.lock();
        let Some(line) = files.get_mut(&self.key) else { return };
        if line.holder != self.id {
            line.waiting.retain(|w| w.id != self.id);
            return;
        }
        let Some(next) = line.waiting.pop_front() else {
            files.remove(&self.key);
            return;
        };
        line.holder = next.id;
        drop(files);
        // Outside the lock: it takes its pool's lock. One not yet set aside finds
        // the turn its own in `when_mine`.
        if let Some(resume) = next.resume {
            resume();
        }
    }
}

#[cfg(all(test, not(fairfs_loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    fn counter() -> (Arc<AtomicUsize>, impl Fn() -> Resume) {
        let n = Arc::new(AtomicUsize::new(0));
        let make = {
            let n = n.clone();
            move || -> Resume {
                let n = n.clone();
                Box::new(move || _ = n.fetch_add(1, Ordering::SeqCst))
            }
        };
        (n, make)
    }

    #[test]
    fn turns_pass_in_the_order_asked_and_the_file_is_forgotten_after_the_last() {
        let turns = Arc::new(FileTurns::new());
        let (resumed, resume) = counter();
        let (a, mine_a) = FileTurns::enter(&turns, 7);
        let (b, mine_b) = FileTurns::enter(&turns, 7);
        let (c, mine_c) = FileTurns::enter(&turns, 7);
        let (other, mine_other) = FileTurns::enter(&turns, 8);
        assert_eq!((mine_a, mine_b, mine_c, mine_other), (true, false, false, true));
        assert!(b.when_mine(resume()).is_none());
        assert!(c.when_mine(resume()).is_none());
        drop(a);
        assert!(b.is_mine() && !c.is_mine());
        assert_eq!(resumed.load(Ordering::SeqCst), 1, "b was put back, once");
        drop(b);
        assert!(c.is_mine());
        assert_eq!(resumed.load(Ordering::SeqCst), 2);
        drop(c);
        drop(other);
        assert_eq!(turns.files(), 0);
    }

    #[test]
    fn a_waiter_that_gives_up_leaves_the_line_or_passes_on_the_turn_it_was_given() {
        let turns = Arc::new(FileTurns::new());
        let (resumed, resume) = counter();
        let (a, _) = FileTurns::enter(&turns, 1);
        let (b, _) = FileTurns::enter(&turns, 1);
        let (c, _) = FileTurns::enter(&turns, 1);
        assert!(c.when_mine(resume()).is_none());
        drop(b); // cancelled while waiting, before it was set aside
        drop(a);
        assert!(c.is_mine(), "the turn skips the one that left");
        assert_eq!(resumed.load(Ordering::SeqCst), 1);
        let (d, _) = FileTurns::enter(&turns, 1);
        drop(c);
        // d was not set aside yet: it is not called, and finds the turn its own.
        assert_eq!(resumed.load(Ordering::SeqCst), 1);
        assert!(d.when_mine(resume()).is_some(), "handed back: it goes on at once");
        drop(d);
        assert_eq!(turns.files(), 0);
    }
}

#[cfg(all(test, fairfs_loom))]
mod loom_tests {
    use super::*;
    use crate::loom::sync::atomic::AtomicUsize;

    /// The holder ends its turn while the next writer leaves its pool's queue: the
    /// waiter goes on exactly once, either handed back its resume or called by it.
    #[test]
    fn loom_a_turn_ending_as_the_next_writer_sets_itself_aside_wakes_it_once() {
        loom::model(|| {
            let turns = Arc::new(FileTurns::new());
            let (first, _) = FileTurns::enter(&turns, 1);
            let (second, mine) = FileTurns::enter(&turns, 1);
            assert!(!mine);
            let ender = loom::thread::spawn(move || drop(first));
            let resumed = Arc::new(AtomicUsize::new(0));
            let handed_back = {
                let resumed = resumed.clone();
                second.when_mine(Box::new(move || _ = resumed.fetch_add(1, Ordering::SeqCst))).is_some()
            };
            ender.join().unwrap();
            assert_eq!(resumed.load(Ordering::SeqCst) + handed_back as usize, 1);
            assert!(second.is_mine());
            drop(second);
            assert_eq!(turns.files(), 0);
        });
    }

    /// A waiter cancelled while the turn comes to it passes the turn on: the writer
    /// behind it gets it, and nothing is left once all are gone.
    #[test]
    fn loom_a_waiter_cancelled_as_its_turn_comes_passes_it_on() {
        loom::model(|| {
            let turns = Arc::new(FileTurns::new());
            let (first, _) = FileTurns::enter(&turns, 1);
            let (second, _) = FileTurns::enter(&turns, 1);
            let (third, _) = FileTurns::enter(&turns, 1);
            let resumed = Arc::new(AtomicUsize::new(0));
            let handed_back = {
                let resumed = resumed.clone();
                third.when_mine(Box::new(move || _ = resumed.fetch_add(1, Ordering::SeqCst))).is_some()
            };
            assert!(!handed_back);
            let ender = loom::thread::spawn(move || drop(first));
            drop(second);
            ender.join().unwrap();
            assert!(third.is_mine());
            assert_eq!(resumed.load(Ordering::SeqCst), 1);
            drop(third);
            assert_eq!(turns.files(), 0);
        });
    }
}
