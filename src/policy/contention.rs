//! How many big files the pool reads at once: every worker while nothing else wants
//! the CPU, fewer while something does.
//!
//! Copying a cached file is pure CPU and memory bandwidth. On a small machine, workers
//! that all copy at once take the cores from the event loop, from libuv's threads
//! (zlib, crypto, `dns.lookup`) and from other processes; a fixed limit of `cores − 1`
//! gave those their share back, but also halved big-file throughput when nothing else
//! ran. The [`Governor`] sets the limit at run time instead.
//!
//! **The signal.** While big reads run, a worker takes a `CpuSnapshot` every
//! [`WINDOW`] (a directory listing and a few small `/proc` files) and the governor
//! looks at what happened in between ([`Demand`]):
//!
//! * *the host pool*: CPU that libuv's threads (zlib, crypto, `dns.lookup`, node:fs;
//!   told apart by [`crate::policy::host_threads`]) used or waited for, in cores. They are
//!   idle unless someone gives them work, so any steady demand there is a neighbour,
//!   however little CPU it takes: a loop of small deflates is latency-bound (each one a
//!   round trip through the event loop and a libuv thread), and workers copying
//!   beside it take most of its speed while it uses little CPU (docs/tuning.md).
//! * *neighbours*: CPU used by everyone else but the pool: this process's other
//!   threads (worker_threads, libraries' threads) and other processes, in cores. The
//!   event loop is not counted here, nor V8's helpers: much of their work is taking
//!   our results and collecting them, which backing off does not quiet.
//! * *the event loop waiting*: the share of the window the main thread was runnable
//!   but had no CPU, in the share of the CPU the pool's workers took among all it
//!   competed with (V8's helpers collecting a big heap crowd it too, and backing off
//!   does not quiet them). Busy with our results it waits little (it runs at a higher
//!   priority than the workers, nice 0 against 5); a loop with JS work of its own
//!   that the workers crowd out waits much.
//!
//! **The rule** (additive increase; decrease straight to one for the host pool,
//! additive otherwise; with a hold):
//!
//! * the host pool above [`HOST_POOL_BACK_OFF_ABOVE`] cores: one big read at a time
//!   (even two workers copying leave a deflate loop little of its speed),
//!   and no increase for the next [`HOLD_WINDOWS`] windows;
//! * neighbours above [`BACK_OFF_ABOVE`] cores or the event loop waiting above
//!   [`LOOP_BACK_OFF_ABOVE`]: one fewer big read at once (at least one), and no
//!   increase for the next [`HOLD_WINDOWS`] windows;
//! * all three below [`HOST_POOL_PROBE_BELOW`], [`PROBE_BELOW`] and
//!   [`LOOP_PROBE_BELOW`], once the hold is over: one more (at most `max`);
//! * in between: keep the limit. The gap between the thresholds is the hysteresis
//!   that keeps it from flapping.
//!
//! A burst of big reads after a pause ([`STALE_AFTER`]) starts again at `max`
//! ([`Governor::restart`]): what others did before says little about now, and one
//! window is enough to back off, while climbing back takes the hold and a window a step.
//! A window in which big reads ran less than [`MIN_BUSY_SHARE`] of the time
//! ([`BusyClock`]) may raise the limit but never lower it.
//!
//! **Why it is not bistable.** The signal is the neighbours' *demand*, not our own
//! CPU time: the host pool's threads want more once the workers back off, not less,
//! and want nothing only when their work stops. Our own GC helpers, busy with our
//! results, are kept out of the host pool's count. ARCHITECTURE.md tells the attempts
//! that taught this.
//!
//! Where the OS gives no such count (not Linux, or `--cfg fairfs_portable`) the
//! limit stays fixed at [`fixed_limit`], as before.

use std::time::{Duration, Instant};

use crate::sys::CpuSnapshot;

/// How often the governor looks, while big reads run.
pub const WINDOW: Duration = Duration::from_millis(100);
/// Neighbours' CPU, in cores, above which the pool reads one fewer big file at once:
/// well below one busy thread (docs/tuning.md).
pub const BACK_OFF_ABOVE: f64 = 0.6;
/// Below which (with a quiet event loop) it tries one more.
pub const PROBE_BELOW: f64 = 0.45;
/// The event loop's waiting share above which the pool reads one fewer big file.
/// It lies above what a loop that only takes big reads' results waits (docs/tuning.md).
pub const LOOP_BACK_OFF_ABOVE: f64 = 0.5;
/// Below which (with quiet neighbours) it tries one more.
pub const LOOP_PROBE_BELOW: f64 = 0.4;
/// CPU the host's pool (libuv's threads: zlib, crypto, `dns.lookup`, node:fs) used
/// or waited for, in cores, above which the pool reads one big file at a time. Any
/// steady work there counts: a small deflate loop beside workers copying uses little
/// CPU yet loses most of its speed (docs/tuning.md). Idle, the threads want nothing.
pub const HOST_POOL_BACK_OFF_ABOVE: f64 = 0.05;
/// Below which (with the other signals quiet) it tries one more.
pub const HOST_POOL_PROBE_BELOW: f64 = 0.02;
/// Weight of the newest window in the smoothed demand: one GC cycle or one burst of
/// callbacks should not move the limit by itself.
pub const SMOOTHING: f64 = 0.5;
/// A snapshot older than this is a new baseline, not the start of a window: the pool
/// read no big file meanwhile, and what others did then says little about now.
pub const STALE_AFTER: Duration = Duration::from_millis(300);
/// Windows after a back-off during which the limit does not rise.
pub const HOLD_WINDOWS: u32 = 5;
/// The least share of a window big reads must have run in for the governor to judge
/// it in full; a window mostly spent without them may only raise the limit
/// ([`Governor::observe_window`]). What others did while the pool read no big file did
/// not compete with it: two worker_threads reading with node:fs, then with fairfs,
/// left the first fairfs window full of libuv's reads, and the limit fell to one for a
/// round in which nothing else ran.
pub const MIN_BUSY_SHARE: f64 = 0.5;

/// How long big reads ran, one or more at a time: the time a window's demand competed
/// with them.
#[derive(Clone, Copy, Debug, Default)]
pub struct BusyClock {
    /// When the running stretch began; `None` while no big read runs.
    since: Option<Instant>,
    /// The stretches that ended, summed.
    ended: Duration,
}

impl BusyClock {
    /// A big read started with none running.
    pub fn start(&mut self, now: Instant) {
        self.since.get_or_insert(now);
    }

    /// The last running big read stopped.
    pub fn stop(&mut self, now: Instant) {
        if let Some(since) = self.since.take() {
            self.ended += now.saturating_duration_since(since);
        }
    }

    /// Time big reads have run so far.
    pub fn total(&self, now: Instant) -> Duration {
        self.ended + self.since.map_or(Duration::ZERO, |since| now.saturating_duration_since(since))
    }
}

/// What others wanted of the CPU over one window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Demand {
    /// CPU used by everyone but the pool and the event loop, in cores.
    pub neighbours: f64,
    /// Share of the window the event loop was runnable but waiting, for the pool's
    /// workers: the waiting in the share of the CPU they used among everyone the loop
    /// shared it with (the workers, V8's helpers, neighbours).
    pub loop_waiting: f64,
    /// CPU the host's pool (libuv's threads) used or waited for, in cores.
    pub host_pool: f64,
}

/// `USER_HZ`: the unit of `/proc/stat` ticks on every Linux architecture we build for.
const TICKS_PER_SECOND: f64 = 100.0;

impl Demand {
    /// Low enough on every count to try one more big read at once.
    pub fn is_quiet(&self) -> bool {
        self.neighbours < PROBE_BELOW && self.loop_waiting < LOOP_PROBE_BELOW && self.host_pool < HOST_POOL_PROBE_BELOW
    }

    /// Demand between two snapshots taken `wall` apart.
    pub fn between(before: &CpuSnapshot, after: &CpuSnapshot, wall: Duration) -> Demand {
        let secs = wall.as_secs_f64().max(1e-3);
        let in_process = after.neighbours_cpu_ns.saturating_sub(before.neighbours_cpu_ns) as f64 / 1e9;
        let machine = after.machine_busy_ticks.saturating_sub(before.machine_busy_ticks);
        let ours = after.process_ticks.saturating_sub(before.process_ticks);
        let other_processes = machine.saturating_sub(ours) as f64 / TICKS_PER_SECOND;
        let waiting = after.main_waiting_ns.saturating_sub(before.main_waiting_ns) as f64 / 1e9;
        let host_pool = after.host_pool_wanted_ns.saturating_sub(before.host_pool_wanted_ns) as f64 / 1e9;
        let pool = after.pool_cpu_ns.saturating_sub(before.pool_cpu_ns) as f64 / 1e9;
        let runtime = after.runtime_cpu_ns.saturating_sub(before.runtime_cpu_ns) as f64 / 1e9;
        // The scheduler shares the CPU among runnable threads by weight, so the loop's
        // waiting is put down to each competitor in proportion to the CPU it used.
        let competitors = pool + runtime + in_process + other_processes + host_pool;
        let ours = if competitors > 0.0 { pool / competitors } else { 0.0 };
        Demand {
            neighbours: (in_process + other_processes) / secs,
            loop_waiting: waiting * ours / secs,
            host_pool: host_pool / secs,
        }
    }
}

/// The limit where there is no signal: all cores but one, at least one, at most
/// `threads`, so that a neighbour we cannot see keeps a core (docs/tuning.md).
pub fn fixed_limit(threads: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    threads.min(cores.saturating_sub(1)).max(1)
}

/// The big-read limit and what it is learning from.
#[derive(Debug)]
pub struct Governor {
    /// Big reads (steps or parts of big files) that may run at once, in `1..=max`.
    limit: usize,
    /// The most it may reach: the pool's threads, or the user's `largeLimit`.
    max: usize,
    /// Whether the limit adapts (a signal exists); else it stays at `limit`.
    adaptive: bool,
    /// Windows left before the limit may rise again.
    hold: u32,
    /// Demand smoothed over windows ([`SMOOTHING`]); `None` before the first.
    smoothed: Option<Demand>,
    /// Back-offs and probes so far (for stats and tests).
    pub backed_off: u64,
    pub probed: u64,
}

impl Governor {
    /// Adapts within `1..=max`, starting at `start`, if `adaptive`; otherwise stays
    /// at `start`.
    pub fn new(start: usize, max: usize, adaptive: bool) -> Governor {
        let max = max.max(1);
        Governor { limit: start.clamp(1, max), max, adaptive, hold: 0, smoothed: None, backed_off: 0, probed: 0 }
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    pub fn max(&self) -> usize {
        self.max
    }

    pub fn is_adaptive(&self) -> bool {
        self.adaptive
    }

    /// Sets the most big reads at once (the pool resized, or `largeLimit` set); a fixed
    /// governor also moves its limit there.
    pub fn set_max(&mut self, max: usize, fixed_at: usize) {
        let raised = max > self.max;
        self.max = max.max(1);
        self.limit = match self.adaptive {
            // Optimistic: every worker at once, until a window shows others want the
            // CPU (a back-off takes one or two windows). Starting low cost the first
            // few hundred milliseconds of every burst of big reads.
            true if raised => self.max,
            true => self.limit.clamp(1, self.max),
            false => fixed_at.clamp(1, self.max),
        };
        if raised {
            // Learning anew: a neighbour's smoothed demand from before would take the
            // raised limit back down at the first look.
            (self.hold, self.smoothed) = (0, None);
        }
    }

    /// Forgets what it learnt, for a burst of big reads after a pause
    /// ([`STALE_AFTER`]): who wanted the CPU then says little about now, and starting
    /// low would cost the first windows of every burst, while a back-off takes one.
    pub fn restart(&mut self) {
        if self.adaptive {
            (self.limit, self.hold, self.smoothed) = (self.max, 0, None);
        }
    }

    /// Takes one window's demand (smoothed with the windows before); returns whether
    /// the limit changed.
    pub fn observe(&mut self, demand: Demand) -> bool {
        self.judge(demand, true)
    }

    /// Takes one window of `wall` in which big reads ran for `busy`: in full
    /// ([`Governor::observe`]) if that is at least [`MIN_BUSY_SHARE`] of it, else only
    /// to raise the limit (`observe_idle`).
    pub fn observe_window(&mut self, demand: Demand, busy: Duration, wall: Duration) -> bool {
        if busy.as_secs_f64() >= MIN_BUSY_SHARE * wall.as_secs_f64() {
            self.observe(demand)
        } else {
            self.observe_idle(demand)
        }
    }

    /// Takes a window in which big reads mostly did not run ([`MIN_BUSY_SHARE`]). What
    /// others did then did not compete with them, so it cannot lower the limit; a quiet
    /// one still counts towards raising it, or a sequential reader that leaves gaps
    /// between its reads would stay at a limit some earlier neighbour set.
    fn observe_idle(&mut self, demand: Demand) -> bool {
        demand.is_quiet() && self.judge(demand, false)
    }

    fn judge(&mut self, demand: Demand, may_lower: bool) -> bool {
        if !self.adaptive {
            return false;
        }
        let before = self.limit;
        let demand = match self.smoothed {
            None => demand,
            Some(old) => Demand {
                neighbours: old.neighbours + SMOOTHING * (demand.neighbours - old.neighbours),
                loop_waiting: old.loop_waiting + SMOOTHING * (demand.loop_waiting - old.loop_waiting),
                host_pool: old.host_pool + SMOOTHING * (demand.host_pool - old.host_pool),
            },
        };
        self.smoothed = Some(demand);
        if may_lower && demand.host_pool > HOST_POOL_BACK_OFF_ABOVE {
            self.limit = 1;
            self.hold = HOLD_WINDOWS;
            self.backed_off += (self.limit < before) as u64;
        } else if may_lower && (demand.neighbours > BACK_OFF_ABOVE || demand.loop_waiting > LOOP_BACK_OFF_ABOVE) {
            self.limit = (self.limit - 1).max(1);
            self.hold = HOLD_WINDOWS;
            self.backed_off += (self.limit < before) as u64;
        } else if self.hold > 0 {
            self.hold -= 1;
        } else if demand.is_quiet() && self.limit < self.max {
            self.limit += 1;
            self.probed += 1;
        }
        self.limit != before
    }

    /// The stock rule: what the buffer pool is told to keep in stock for big reads, given
    /// the bytes admission granted them (`granted`, at most `max_bytes` counted). While
    /// this governor holds big reads back for a neighbour it is none: stock would make
    /// the big reads cheaper for the workers, but each result still costs the event
    /// loop, which is what a neighbour such as zlib waits for (docs/tuning.md, "stock").
    pub fn bytes_to_stock(&self, granted: u64, max_bytes: u64) -> u64 {
        let held_back = self.is_adaptive() && self.limit() < self.max();
        if held_back {
            0
        } else {
            granted.min(max_bytes)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_buffer_pool_stocks_for_big_reads_in_flight_unless_the_governor_holds_them_back() {
        let free = Governor::new(4, 4, true);
        assert_eq!(free.bytes_to_stock(48, 64), 48);
        assert_eq!(free.bytes_to_stock(100, 64), 64, "a file past the limit, read alone, counts as the limit");
        assert_eq!(Governor::new(1, 4, true).bytes_to_stock(48, 64), 0, "held back for a neighbour");
        assert_eq!(Governor::new(3, 4, false).bytes_to_stock(48, 64), 48, "a fixed limit holds nothing back");
    }

    const QUIET: Demand = Demand { neighbours: 0.05, loop_waiting: 0.05, host_pool: 0.0 };

    fn feed(g: &mut Governor, windows: usize, demand: Demand) {
        for _ in 0..windows {
            g.observe(demand);
        }
    }

    #[test]
    fn it_climbs_to_every_worker_while_nothing_else_runs() {
        let mut g = Governor::new(1, 4, true);
        feed(&mut g, 3, QUIET);
        assert_eq!(g.limit(), 4, "one more per quiet window");
        feed(&mut g, 5, QUIET);
        assert_eq!(g.limit(), 4, "never past max");
    }

    #[test]
    fn a_busy_neighbour_brings_it_down_to_one_and_keeps_it_there() {
        let mut g = Governor::new(4, 4, true);
        // A zlib loop next to four workers still gets most of a core (nice 0 against
        // 5): the signal is loud while the workers crowd it...
        feed(&mut g, 3, Demand { neighbours: 0.8, loop_waiting: 0.1, host_pool: 0.0 });
        assert_eq!(g.limit(), 1);
        // ...and louder once they have backed off; it never creeps back up.
        feed(&mut g, 50, Demand { neighbours: 0.95, loop_waiting: 0.1, host_pool: 0.0 });
        assert_eq!(g.limit(), 1);
    }

    #[test]
    fn a_crowded_event_loop_brings_it_down_too() {
        let mut g = Governor::new(3, 4, true);
        g.observe(Demand { neighbours: 0.0, loop_waiting: 0.6, host_pool: 0.0 });
        assert_eq!(g.limit(), 2);
    }

    #[test]
    fn after_a_back_off_it_holds_then_probes_again() {
        let mut g = Governor::new(2, 4, true);
        g.observe(Demand { neighbours: 0.9, loop_waiting: 0.0, host_pool: 0.0 });
        assert_eq!(g.limit(), 1);
        feed(&mut g, HOLD_WINDOWS as usize, QUIET);
        assert_eq!(g.limit(), 1, "held");
        g.observe(QUIET);
        assert_eq!(g.limit(), 2, "probes once the hold is over");
        assert_eq!((g.backed_off, g.probed), (1, 1));
    }

    #[test]
    fn work_on_the_host_pool_brings_it_straight_to_one_until_it_stops() {
        // A latency-bound zlib loop: little CPU, but any steady use of libuv's threads.
        let zlib = Demand { neighbours: 0.2, loop_waiting: 0.2, host_pool: 0.19 };
        let mut g = Governor::new(4, 4, true);
        g.observe(zlib);
        assert_eq!(g.limit(), 1, "one window is enough: at two workers zlib kept 11%");
        // Backed off, zlib runs faster and wants more: it stays at one.
        feed(&mut g, 50, Demand { host_pool: 0.36, ..zlib });
        assert_eq!(g.limit(), 1);
        // Once the pool is idle, the hold runs out and it climbs back.
        feed(&mut g, HOLD_WINDOWS as usize + 8, QUIET);
        assert_eq!(g.limit(), 4);
        // A trickle (a stat now and then) is not a neighbour.
        g.observe(Demand { host_pool: HOST_POOL_PROBE_BELOW / 2.0, ..QUIET });
        assert_eq!(g.limit(), 4);
    }

    #[test]
    fn a_new_burst_starts_at_max_with_no_memory_of_the_last() {
        let mut g = Governor::new(4, 4, true);
        g.observe(Demand { neighbours: 0.0, loop_waiting: 0.0, host_pool: 0.3 });
        assert_eq!(g.limit(), 1);
        g.restart();
        assert_eq!(g.limit(), 4);
        g.observe(QUIET);
        assert_eq!(g.limit(), 4, "no hold, no smoothed demand carried over");
        let mut fixed = Governor::new(2, 4, false);
        fixed.restart();
        assert_eq!(fixed.limit(), 2, "a fixed limit stays");
    }

    #[test]
    fn between_the_thresholds_it_keeps_the_limit() {
        let mut g = Governor::new(2, 4, true);
        feed(
            &mut g,
            30,
            Demand { neighbours: (PROBE_BELOW + BACK_OFF_ABOVE) / 2.0, loop_waiting: 0.0, host_pool: 0.0 },
        );
        assert_eq!(g.limit(), 2);
        let mut g = Governor::new(2, 4, true);
        feed(
            &mut g,
            30,
            Demand { neighbours: 0.0, loop_waiting: (LOOP_PROBE_BELOW + LOOP_BACK_OFF_ABOVE) / 2.0, host_pool: 0.0 },
        );
        assert_eq!(g.limit(), 2);
    }

    #[test]
    fn one_loud_window_alone_does_not_move_it() {
        let mut g = Governor::new(2, 2, true);
        feed(&mut g, 5, Demand { neighbours: 0.3, loop_waiting: 0.3, host_pool: 0.0 });
        g.observe(Demand { neighbours: 0.85, loop_waiting: 0.3, host_pool: 0.0 }); // smoothed: 0.575
        assert_eq!(g.limit(), 2);
        g.observe(Demand { neighbours: 0.85, loop_waiting: 0.3, host_pool: 0.0 }); // a second: 0.71
        assert_eq!(g.limit(), 1);
    }

    #[test]
    fn without_a_signal_it_stays_fixed() {
        let mut g = Governor::new(1, 4, false);
        feed(&mut g, 10, QUIET);
        assert_eq!(g.limit(), 1);
        g.set_max(8, 3);
        assert_eq!(g.limit(), 3, "a fixed governor moves to the fixed limit");
        let mut g = Governor::new(4, 4, true);
        g.set_max(2, 1);
        assert_eq!(g.limit(), 2, "an adaptive one is clamped under a lower max");
        g.observe(Demand { neighbours: 0.9, loop_waiting: 0.0, host_pool: 0.0 });
        assert_eq!(g.limit(), 1);
        g.set_max(6, 1);
        assert_eq!(g.limit(), 6, "and starts at a raised max (every thread), backing off as it learns");
        g.observe(Demand { neighbours: 0.0, loop_waiting: 0.0, host_pool: 0.3 });
        assert_eq!(g.limit(), 1);
        g.set_max(8, 1);
        g.observe(QUIET);
        assert_eq!(g.limit(), 8, "what it learnt before a raise does not take the limit back down");
    }

    #[test]
    fn a_window_without_big_reads_never_lowers_the_limit_but_a_quiet_one_raises_it() {
        let mut g = Governor::new(4, 4, true);
        let busy_libuv = Demand { neighbours: 0.0, loop_waiting: 0.0, host_pool: 0.9 };
        let ms = Duration::from_millis;
        assert!(!g.observe_window(busy_libuv, ms(40), ms(100)));
        assert_eq!(g.limit(), 4, "what libuv did while the pool read no big file does not count");
        g.observe_window(busy_libuv, ms(50), ms(100));
        assert_eq!(g.limit(), 1, "while it read, half the window or more, it does");
        feed_idle(&mut g, HOLD_WINDOWS as usize, QUIET);
        assert_eq!(g.limit(), 1, "held");
        g.observe_idle(Demand { neighbours: 0.9, loop_waiting: 0.0, host_pool: 0.0 });
        assert_eq!(g.limit(), 1, "a loud idle window is ignored");
        feed_idle(&mut g, 4, QUIET);
        assert_eq!(g.limit(), 4, "quiet ones raise it, a step each, as busy ones would");
    }

    fn feed_idle(g: &mut Governor, windows: usize, demand: Demand) {
        for _ in 0..windows {
            g.observe_idle(demand);
        }
    }

    #[test]
    fn the_busy_clock_counts_only_while_big_reads_run() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut clock = BusyClock::default();
        assert_eq!(clock.total(t0 + ms(50)), Duration::ZERO);
        clock.start(t0);
        clock.start(t0 + ms(10)); // a second big read: the stretch goes on
        clock.stop(t0 + ms(30));
        clock.stop(t0 + ms(40)); // nothing ran
        assert_eq!(clock.total(t0 + ms(60)), ms(30));
        clock.start(t0 + ms(60));
        assert_eq!(clock.total(t0 + ms(100)), ms(70), "a stretch under way counts up to now");
    }

    #[test]
    fn demand_counts_neighbours_in_cores_and_leaves_our_process_out() {
        let before = CpuSnapshot::default();
        let after = CpuSnapshot {
            neighbours_cpu_ns: 50_000_000, // 0.05 s of a worker_thread
            runtime_cpu_ns: 700_000_000,   // V8's helpers: not a neighbour
            pool_cpu_ns: 1_000_000_000,
            main_cpu_ns: 900_000_000,
            main_waiting_ns: 250_000_000,
            host_pool_wanted_ns: 400_000_000,
            machine_busy_ticks: 300, // 3 s busy, of which 2 s ours
            process_ticks: 200,
        };
        let d = Demand::between(&before, &after, Duration::from_secs(1));
        assert!((d.neighbours - 1.05).abs() < 1e-9, "{d:?}");
        // The loop waited 0.25 s among 3.15 cores of competitors, 1 of them the pool's.
        assert!((d.loop_waiting - 0.25 / 3.15).abs() < 1e-9, "{d:?}");
        assert!((d.host_pool - 0.4).abs() < 1e-9);
    }

    #[test]
    fn the_loop_s_waiting_counts_for_the_share_of_the_cpu_the_workers_took() {
        let before = CpuSnapshot::default();
        let waiting_half = |pool_ms: u64, runtime_ms: u64| {
            let after = CpuSnapshot {
                pool_cpu_ns: pool_ms * 1_000_000,
                runtime_cpu_ns: runtime_ms * 1_000_000,
                main_waiting_ns: 50_000_000,
                ..CpuSnapshot::default()
            };
            Demand::between(&before, &after, Duration::from_millis(100)).loop_waiting
        };
        assert!((waiting_half(100, 0) - 0.5).abs() < 1e-9, "only the workers ran beside the loop");
        // V8's helpers collecting a big heap took most of the CPU: backing off would
        // not give the loop much of it back.
        assert!(waiting_half(25, 125) < LOOP_PROBE_BELOW);
        assert_eq!(waiting_half(0, 150), 0.0, "no worker ran");
    }

    #[cfg(all(target_os = "linux", not(fairfs_portable)))]
    #[test]
    fn a_busy_thread_of_this_process_shows_as_a_neighbour() {
        // A thread of another test that ends inside the window takes its CPU time out of
        // the sum (the test harness runs tests in parallel): three tries.
        let mut seen = Vec::new();
        for _ in 0..3 {
            let before = crate::policy::host_threads::cpu_snapshot().expect("Linux has /proc");
            let started = std::time::Instant::now();
            let (spun, exit) = (std::sync::mpsc::channel(), std::sync::mpsc::channel::<()>());
            let spin = std::thread::spawn(move || {
                let t = std::time::Instant::now();
                let mut x = 0u64;
                while t.elapsed() < Duration::from_millis(300) {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
                spun.0.send(()).unwrap();
                // A thread's own count goes when it exits: stay for the snapshot.
                let _ = exit.1.recv();
            });
            spun.1.recv().unwrap();
            let after = crate::policy::host_threads::cpu_snapshot().unwrap();
            exit.0.send(()).unwrap();
            spin.join().unwrap();
            let d = Demand::between(&before, &after, started.elapsed());
            // It spun for 0.3 s of a 0.3 s window (less if the machine was busy).
            if d.neighbours > 0.3 {
                return;
            }
            seen.push(d);
        }
        panic!("the spinning thread never showed as a neighbour: {seen:?}");
    }
}
