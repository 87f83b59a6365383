//! Big writes kept off the event loop's CPU.
//!
//! A big write's step copies a chunk into the page cache: the kernel keeps a CPU busy
//! for as long as that takes. On a machine with few cores the scheduler often wakes
//! the event loop on a CPU such a worker holds, and the loop then waits for the
//! worker's turn to end (up to a tick, 4 ms at `HZ=250`) even while another CPU is idle.
//! Beside ten looping 64 MiB writes on 2 cores, that was the whole of a small write's
//! tail: its time in the pool stayed under 0.25 ms, while the loop sat runnable and
//! unserved for up to 4.4 ms (`perf sched`; BENCHMARKS.md).
//!
//! So while big writes run beside other requests (a step of a large job that writes,
//! [`crate::job::Job::is_large`] with [`crate::job::Data::Written`], and a step of
//! anything else each began in the last [`BULK_WINDOW_MS`]), every worker takes the CPU the event loop last submitted
//! from ([`note_loop_cpu`]) out of its own CPU mask before its next step, and puts it
//! back at its first step after. Every worker, not only the writers: a worker that
//! wakes on the loop's CPU for a small request crowds the loop the same way, and
//! keeping only the writers off made the tail longer (a 1 KiB write's p99 went from
//! 4.5 ms to 9–11 ms, four writers crowding one CPU). The loop is not pinned: it keeps
//! every CPU, and finds the one the workers leave it idle. Big writes alone keep every
//! CPU: the loop then only waits for their outcomes, and ten 16 MiB writers copying on
//! one CPU of two ran at half their rate.
//!
//! With several event loops (worker_threads), the last one to submit is spared.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

/// How long after a bulk write's step began every worker still keeps off the loop's
/// CPU. Writers that loop come back within a millisecond or two; a pause this long
/// means the writes are over, and the loop's CPU is the pool's again.
pub const BULK_WINDOW_MS: u64 = 50;

/// The CPU the event loop last submitted from; `usize::MAX` until one has.
static LOOP_CPU: AtomicUsize = AtomicUsize::new(usize::MAX);

/// When the process's workers last began a step of each kind.
static STEPS: Steps = Steps::new();

/// Called on an event loop's thread as it submits a request: its CPU is the one
/// workers keep off while big writes run.
pub fn note_loop_cpu() {
    if let Some(cpu) = crate::sys::current_cpu() {
        LOOP_CPU.store(cpu, Ordering::Relaxed);
    }
}

/// The CPU noted last, if any.
pub fn loop_cpu() -> Option<usize> {
    Some(LOOP_CPU.load(Ordering::Relaxed)).filter(|&cpu| cpu != usize::MAX)
}

/// Milliseconds since the first call, for [`Steps`].
fn now_ms() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_millis() as u64
}

/// When a step of a bulk write, and one of anything else, last began (`now_ms()`
/// plus one; 0: never).
#[derive(Debug)]
struct Steps {
    bulk: AtomicU64,
    other: AtomicU64,
}

impl Steps {
    const fn new() -> Self {
        Steps { bulk: AtomicU64::new(0), other: AtomicU64::new(0) }
    }

    fn began_at(&self, bulk_write: bool, now: u64) {
        let last = if bulk_write { &self.bulk } else { &self.other };
        // Every worker's every step comes here: write the shared line only when the
        // millisecond changed, not once a step.
        if last.load(Ordering::Relaxed) != now + 1 {
            last.store(now + 1, Ordering::Relaxed);
        }
    }

    /// Big writes run beside other requests: a step of each began in the last
    /// [`BULK_WINDOW_MS`]. Big writes alone keep every CPU: then the loop only waits
    /// for their outcomes, and sparing it a CPU halved ten 16 MiB writers' rate on 2 cores.
    fn mixed_at(&self, now: u64) -> bool {
        let recent = |last: &AtomicU64| {
            let last = last.load(Ordering::Relaxed);
            last != 0 && (now + 1).saturating_sub(last) < BULK_WINDOW_MS
        };
        recent(&self.bulk) && recent(&self.other)
    }
}

/// Which CPU one worker keeps off. Each worker has its own: a thread sets only its
/// own CPU mask.
#[derive(Debug, Default)]
pub struct Placement {
    off: Option<usize>,
}

impl Placement {
    /// Before a step: off the loop's CPU while big writes run beside other requests
    /// (`Steps::mixed_at`), back on every CPU otherwise. Makes system calls only
    /// when that changes.
    pub fn before_step(&mut self, bulk_write: bool) {
        self.place(bulk_write, now_ms(), &STEPS, loop_cpu());
    }

    fn place(&mut self, bulk_write: bool, now: u64, steps: &Steps, loop_cpu: Option<usize>) {
        steps.began_at(bulk_write, now);
        let want = loop_cpu.filter(|_| steps.mixed_at(now));
        if want == self.off {
            return;
        }
        if let Some(cpu) = self.off.take() {
            crate::sys::set_thread_off_cpu(cpu, false);
        }
        if let Some(cpu) = want.filter(|&cpu| crate::sys::set_thread_off_cpu(cpu, true)) {
            self.off = Some(cpu);
        }
    }

    /// The CPU this worker keeps off now.
    pub fn keeps_off(&self) -> Option<usize> {
        self.off
    }
}

#[cfg(all(test, target_os = "linux", not(fairfs_portable)))]
mod tests {
    use super::*;

    /// The CPUs the calling thread may run on, from `/proc/thread-self/status`.
    fn allowed_cpus() -> Vec<usize> {
        let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
        let list = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap().trim().to_string();
        list.split(',')
            .flat_map(|part| {
                let (a, b) = part.split_once('-').unwrap_or((part, part));
                a.parse::<usize>().unwrap()..=b.parse::<usize>().unwrap()
            })
            .collect()
    }

    #[test]
    fn while_big_writes_run_beside_others_every_step_keeps_off_the_loop_cpu_then_gets_it_back() {
        std::thread::spawn(|| {
            let before = allowed_cpus();
            if before.len() < 2 {
                eprintln!("SKIP: one CPU allowed, no CPU to keep off");
                return;
            }
            let (steps, loop_cpu) = (Steps::new(), Some(before[0]));
            let mut placement = Placement::default();
            // Small requests alone, then big writes alone: every CPU.
            placement.place(false, 1_000, &steps, loop_cpu);
            assert_eq!((placement.keeps_off(), allowed_cpus()), (None, before.clone()));
            let alone = Steps::new();
            placement.place(true, 1_000, &alone, loop_cpu);
            placement.place(true, 1_010, &alone, loop_cpu);
            assert_eq!((placement.keeps_off(), allowed_cpus()), (None, before.clone()));
            // A big write beside the small request: off the loop's CPU.
            placement.place(true, 1_010, &steps, loop_cpu);
            assert_eq!(placement.keeps_off(), loop_cpu);
            let during = allowed_cpus();
            assert!(!during.contains(&before[0]), "{during:?} still has {}", before[0]);
            assert_eq!(during.len(), before.len() - 1);
            assert_ne!(crate::sys::current_cpu(), loop_cpu);
            // Another small step while the big writes run stays off too.
            placement.place(false, 1_000 + BULK_WINDOW_MS - 1, &steps, loop_cpu);
            assert_eq!(placement.keeps_off(), loop_cpu);
            // The loop moves: the worker follows it.
            placement.place(false, 1_000 + BULK_WINDOW_MS, &steps, Some(before[1]));
            let after_move = allowed_cpus();
            assert!(after_move.contains(&before[0]) && !after_move.contains(&before[1]), "{after_move:?}");
            // The big writes are over: every CPU again.
            placement.place(false, 1_010 + BULK_WINDOW_MS, &steps, Some(before[1]));
            assert_eq!((placement.keeps_off(), allowed_cpus()), (None, before));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn no_loop_cpu_noted_means_no_cpu_kept_off() {
        let (steps, mut placement) = (Steps::new(), Placement::default());
        placement.place(false, 5, &steps, None);
        placement.place(true, 5, &steps, None);
        assert_eq!(placement.keeps_off(), None);
    }

    #[test]
    fn the_last_cpu_is_never_taken_away() {
        std::thread::spawn(|| {
            let cpus = allowed_cpus();
            // Down to one CPU, then asked to keep off it.
            for &cpu in &cpus[1..] {
                assert!(crate::sys::set_thread_off_cpu(cpu, true));
            }
            assert!(!crate::sys::set_thread_off_cpu(cpus[0], true));
            assert_eq!(allowed_cpus(), vec![cpus[0]]);
        })
        .join()
        .unwrap();
    }
}
