//! `stats()`: the pool's and the buffer pool's counters as one JS object.

use super::*;

#[napi(object)]
pub struct PoolStats {
    pub threads: u32,
    pub queued: u32,
    pub active: u32,
    pub completed: f64,
    pub cancelled: f64,
    pub bytes_read: f64,
    pub chunks_read: f64,
    /// Bytes whole-file writes wrote, and their steps that wrote some.
    pub bytes_written: f64,
    pub chunks_written: f64,
    pub chunk_size: u32,
    pub nice: i32,
    /// Big files read at once now: every thread while no thread waits for a CPU, fewer
    /// while some do (Linux; elsewhere cores - 1); and the most it may reach.
    pub large_limit: u32,
    pub large_limit_max: u32,
    /// Whether the limit adapts; else it is fixed at cores - 1.
    pub large_limit_adaptive: bool,
    /// Times the big-read limit went down (threads waited for a CPU) and up.
    pub large_backoffs: f64,
    pub large_probes: f64,
    /// libuv's threads the governor tells apart (named by libuv 1.50+, or found by the
    /// census at load), whose demand for the CPU makes it back off.
    pub libuv_threads: u32,
    /// Files held open by admitted reads, and the most allowed.
    pub open_files: u32,
    pub max_open_files: u32,
    /// Bytes of result buffers granted to big reads in flight, and the most allowed.
    pub bytes_in_flight: f64,
    pub max_bytes_in_flight: f64,
    /// Reads waiting for admission.
    pub waiting: u32,
    /// Admitted big reads waiting for a Buffer their thread lends them.
    pub awaiting_memory: u32,
    /// Reads of FIFOs and devices, each on a thread of its own outside the pool.
    pub own_threads: u32,
    /// Read streams whose blocks the fair queue keeps as one flow (each is forgotten
    /// when its stream ends or is destroyed).
    pub stream_flows: u32,
    /// `readFile`s and `stat`s served by the fast path, and tries that fell back to
    /// the pool.
    pub fast_path_hits: f64,
    pub fast_path_misses: f64,
    /// Calling-thread calls slower than a call answered from memory, each pausing the
    /// fast paths on its mount for a while (`crate::locality`).
    pub fast_path_slow_calls: f64,
    pub pool: BufferStats,
    /// The lanes of mounts that wait on a server or daemon ([`crate::lanes`]), one each.
    pub lanes: Vec<LaneStats>,
}

/// One lane: its mount, its workers, and its requests waiting, running (on a slow
/// mount: mostly blocked there) and completed.
#[napi(object)]
pub struct LaneStats {
    pub mount_id: f64,
    pub mount_point: String,
    pub threads: u32,
    pub queued: u32,
    pub active: u32,
    pub completed: f64,
}

#[napi(object)]
pub struct BufferStats {
    pub hits: f64,
    pub misses: f64,
    pub pooled_bytes: f64,
    pub outstanding: f64,
    pub max_pooled_bytes: f64,
    /// Pooled bytes lent to this thread's Buffers that V8 does not count now
    /// ([`crate::memory::external_memory`]).
    pub untold_bytes: f64,
    /// Pooled bytes given up because another thread might still see them: Buffers
    /// whose memory was transferred away, alive when their worker exited ([`views`]).
    pub abandoned_bytes: f64,
    /// Acquires served by a buffer that came back while a worker waited for it
    /// ([`buffer_pool::STOCK_PATIENCE`]).
    pub waited: f64,
}

#[napi]
pub fn stats() -> PoolStats {
    let s = global().stats();
    let lanes = crate::lanes::stats();
    PoolStats {
        threads: s.threads as u32,
        queued: s.queued as u32,
        active: s.active as u32,
        // Every pool's: where a request runs (this pool or a lane) depends on where its
        // path leads and what the kernel has cached, not on what the caller asked.
        completed: (s.completed + lanes.iter().map(|l| l.completed).sum::<u64>()) as f64,
        cancelled: s.cancelled as f64,
        bytes_read: s.bytes_read as f64,
        chunks_read: s.chunks_read as f64,
        bytes_written: s.bytes_written as f64,
        chunks_written: s.chunks_written as f64,
        chunk_size: s.chunk_size as u32,
        nice: s.nice,
        large_limit: s.large_limit as u32,
        large_limit_max: s.large_limit_max as u32,
        large_limit_adaptive: s.large_limit_adaptive,
        large_backoffs: s.large_backoffs as f64,
        large_probes: s.large_probes as f64,
        libuv_threads: crate::policy::host_threads::count() as u32,
        open_files: s.open_files as u32,
        max_open_files: s.max_open_files as u32,
        bytes_in_flight: s.bytes_in_flight as f64,
        max_bytes_in_flight: s.max_bytes_in_flight as f64,
        waiting: s.waiting as u32,
        awaiting_memory: s.awaiting_memory as u32,
        own_threads: s.own_threads as u32,
        stream_flows: s.stream_flows as u32,
        fast_path_hits: crate::cached::HITS.load(std::sync::atomic::Ordering::Relaxed) as f64,
        fast_path_misses: crate::cached::MISSES.load(std::sync::atomic::Ordering::Relaxed) as f64,
        fast_path_slow_calls: crate::cached::slow_calls() as f64,
        lanes: lanes
            .into_iter()
            .map(|l| LaneStats {
                mount_id: l.mount as f64,
                mount_point: String::from_utf8_lossy(&l.mount_point).into_owned(),
                threads: l.threads as u32,
                queued: l.queued as u32,
                active: l.active as u32,
                completed: l.completed as f64,
            })
            .collect(),
        pool: {
            let buffers = buffer_pool::global();
            let b = buffers.stats();
            BufferStats {
                hits: b.hits as f64,
                misses: b.misses as f64,
                pooled_bytes: b.pooled_bytes as f64,
                outstanding: b.outstanding as f64,
                max_pooled_bytes: buffers.max_pooled_bytes() as f64,
                untold_bytes: LEDGER.try_with(|ledger| ledger.borrow().untold()).unwrap_or(0) as f64,
                abandoned_bytes: views::abandoned_bytes() as f64,
                waited: b.waited as f64,
            }
        },
    }
}
