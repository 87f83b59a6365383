//! Benchmarks for the fair pool (run with `cargo bench --bench scheduler`).
//!
//! * `read_16MiB`: one cached 16 MiB read through the pool, against reading it on the
//!   calling thread, `std::fs::read` and `tokio::fs::read`.
//! * `small_read_under_load`: latency of a 1 KiB read while 10 reads of 64–256 MiB keep
//!   4 workers busy, on our DRR pool and on a FIFO baseline pool. Criterion reports the
//!   mean per read; p50/p99 are printed to stderr.
//! * `chunk_size_16MiB`: throughput of one 16 MiB read by chunk size (the DRR quantum).
//!
//! Every file is cached before it is measured: these benches measure scheduling and
//! copying, not the disk. Sample counts are small so the run fits in a few minutes on
//! a noisy 2-core VM; compare results within one run.

use std::collections::VecDeque;
use std::ffi::CString;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Barrier, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput};
use fairfs::jobs::read_file::{FilledOutcome, ReadFileJob};
use fairfs::pool::DEFAULT_CHUNK_SIZE;
use fairfs::read::pooled_only;
use fairfs::{read_blocking, Job, Outcome, Pool, ReadLimits, Source};

const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;
/// Worker threads in every pool, as in libuv.
const THREADS: usize = 4;
const MEDIUM: usize = 16 * MIB;
const SMALL: usize = KIB;
/// Big reads kept in flight by the background load.
const LOAD_READS: usize = 10;
const BIG_SIZES: [usize; 3] = [64 * MIB, 128 * MIB, 256 * MIB];

fn main() {
    let dir = TempDir::new();
    let mut c = Criterion::default().configure_from_args();
    bench_read_16mib(&mut c, &dir);
    bench_small_read_under_load(&mut c, &dir);
    bench_chunk_size(&mut c, &dir);
    c.final_summary();
    // `dir` is removed here (and on panic, by unwinding).
}

fn bench_read_16mib(c: &mut Criterion, dir: &TempDir) {
    let path = dir.file("medium", MEDIUM);
    let pool = Pool::new(THREADS, DEFAULT_CHUNK_SIZE);
    // Built once: only the read is measured, not runtime start-up.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut g = c.benchmark_group("read_16MiB");
    g.throughput(Throughput::Bytes(MEDIUM as u64))
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    g.bench_function("fairfs_pool", |b| b.iter(|| read_blocking(&pool, source(&path), ReadLimits::default()).unwrap()));
    // The same read algorithm without the pool: the difference is the hand-off cost.
    g.bench_function("fairfs_inline", |b| {
        b.iter(|| fairfs::read::read_to_end(source(&path), ReadLimits::default()).unwrap())
    });
    g.bench_function("std_fs_read", |b| b.iter(|| std::fs::read(&path).unwrap()));
    g.bench_function("tokio_fs_read", |b| b.iter(|| rt.block_on(tokio::fs::read(&path)).unwrap()));
    g.finish();
}

fn bench_small_read_under_load(c: &mut Criterion, dir: &TempDir) {
    let small = dir.file("small", SMALL);
    let big: Vec<PathBuf> = BIG_SIZES.iter().map(|&n| dir.file(&format!("big-{}MiB", n / MIB), n)).collect();
    let mut g = c.benchmark_group("small_read_under_load");
    // One read takes up to ~1 s on the whole-file FIFO baseline: flat sampling keeps
    // the iteration count (and the run time) low.
    g.sampling_mode(SamplingMode::Flat).warm_up_time(Duration::from_secs(1));

    let fair = |chunk| -> Box<dyn Submit> { Box::new(Pool::new(THREADS, chunk)) };
    let fifo = |per_chunk| -> Box<dyn Submit> { Box::new(FifoPool::new(THREADS, per_chunk)) };
    let d = DEFAULT_CHUNK_SIZE;
    // (name, pool, chunk size, with background load)
    let cases = [
        ("fair_idle", fair(d), d, false),
        ("fair_drr_512KiB", fair(d), d, true),
        // The latency side of the chunk-size trade-off.
        ("fair_drr_64KiB", fair(64 * KIB), 64 * KIB, true),
        ("fair_drr_4MiB", fair(4 * MIB), 4 * MIB, true),
        // Node's readFile on libuv today: each chunk goes to the back of one FIFO.
        ("fifo_chunked_512KiB", fifo(true), d, true),
        // Whole-file jobs, as `std::fs::read` on a FIFO pool (e.g. tokio::fs::read).
        ("fifo_whole_file", fifo(false), d, true),
    ];
    let mut summary = Vec::new();
    for (name, pool, chunk, loaded) in cases {
        // Fewer, longer samples where a single read takes most of a second.
        let slow = name == "fifo_whole_file";
        g.sample_size(if slow { 10 } else { 20 }).measurement_time(Duration::from_secs(if slow { 8 } else { 4 }));
        let pool: &dyn Submit = &*pool;
        let mut latencies = Vec::new();
        let stop = AtomicBool::new(false);
        let ready = Barrier::new(2);
        let load = thread::scope(|s| {
            let load = loaded.then(|| s.spawn(|| run_load(pool, &big, chunk, &ready, &stop)));
            if loaded {
                // Measure only once the big reads are queued.
                ready.wait();
            }
            g.bench_function(name, |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let t = small_read(pool, &small, chunk);
                        latencies.push(t);
                        total += t;
                    }
                    total
                })
            });
            stop.store(true, Ordering::Relaxed);
            load.map(|h| h.join().unwrap())
        });
        summary.push((name, percentiles(latencies), load));
    }
    g.finish();
    // Criterion reports means per sample; tail latency is the point of fairness.
    eprintln!("\nsmall_read_under_load: 1 KiB read latency (all timed reads, warm-up included)");
    for (name, (n, p50, p99, max), load) in summary {
        let load = load.map_or(String::from("none"), |gbs| format!("{gbs:.2} GB/s"));
        eprintln!("  {name:<20} n={n:<6} p50={p50:>10.3?} p99={p99:>10.3?} max={max:>10.3?}  big-read load {load}");
    }
}

fn bench_chunk_size(c: &mut Criterion, dir: &TempDir) {
    let path = dir.file("medium", MEDIUM);
    let mut g = c.benchmark_group("chunk_size_16MiB");
    g.throughput(Throughput::Bytes(MEDIUM as u64))
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for chunk in [64, 128, 256, 512, 1024, 2048, 4096].map(|k| k * KIB) {
        // Pool chunk size = DRR quantum = bytes per read syscall.
        let pool = Pool::new(THREADS, chunk);
        let limits = ReadLimits { chunk_size: chunk, ..ReadLimits::default() };
        let label = if chunk < MIB { format!("{}KiB", chunk / KIB) } else { format!("{}MiB", chunk / MIB) };
        g.bench_with_input(BenchmarkId::from_parameter(label), &limits, |b, &l| {
            b.iter(|| read_blocking(&pool, source(&path), l).unwrap())
        });
    }
    g.finish();
}

/// A pool that runs read jobs: ours, or the FIFO baseline.
trait Submit: Sync {
    fn submit_job(&self, job: Box<dyn Job>);
}

impl Submit for Pool {
    fn submit_job(&self, job: Box<dyn Job>) {
        self.submit(job);
    }
}

/// Both pools run the same `ReadFileJob`, so only the scheduling differs.
fn read_job(path: &Path, chunk: usize, on_done: impl FnOnce(Outcome) + Send + 'static) -> Box<dyn Job> {
    let limits = ReadLimits { chunk_size: chunk, ..ReadLimits::default() };
    Box::new(ReadFileJob::new(source(path), limits, move |outcome: FilledOutcome| on_done(outcome.map(pooled_only))))
}

/// Times one small read from submission until the caller has its bytes.
fn small_read(pool: &dyn Submit, path: &Path, chunk: usize) -> Duration {
    let (tx, rx) = mpsc::sync_channel(1);
    let start = Instant::now();
    pool.submit_job(read_job(path, chunk, move |r| {
        let _ = tx.send(r);
    }));
    let bytes = rx.recv().unwrap().unwrap();
    let elapsed = start.elapsed();
    assert_eq!(bytes.len(), SMALL);
    elapsed
}

/// Keeps `LOAD_READS` big reads in flight until `stop`, then waits for them to
/// finish so the next case starts on an idle machine. Meets `ready` once the first
/// reads are queued. Returns the load's GB/s.
fn run_load(pool: &dyn Submit, files: &[PathBuf], chunk: usize, ready: &Barrier, stop: &AtomicBool) -> f64 {
    let (tx, rx) = mpsc::channel();
    let start = Instant::now();
    let (mut in_flight, mut next, mut bytes) = (0, 0, 0);
    loop {
        let stopping = stop.load(Ordering::Relaxed);
        while !stopping && in_flight < LOAD_READS {
            let tx = tx.clone();
            // The buffer is freed on the worker, like a caller dropping its result.
            pool.submit_job(read_job(&files[next % files.len()], chunk, move |r| {
                let _ = tx.send(r.map_or(0, |v| v.len()));
            }));
            next += 1;
            in_flight += 1;
            if next == LOAD_READS {
                ready.wait();
            }
        }
        if stopping && in_flight == 0 {
            return bytes as f64 / start.elapsed().as_secs_f64() / 1e9;
        }
        // Time out now and then to notice `stop`.
        if let Ok(n) = rx.recv_timeout(Duration::from_millis(50)) {
            in_flight -= 1;
            bytes += n;
        }
    }
}

/// BASELINE ONLY, not part of fairfs: a libuv-style pool, one `Mutex<VecDeque>` +
/// `Condvar`, first in first out. With `per_chunk` a job goes to the back of the
/// queue after every chunk; without it a worker reads a whole file before the next job.
struct FifoPool {
    shared: Arc<FifoShared>,
    workers: Vec<thread::JoinHandle<()>>,
}

struct FifoShared {
    /// The queue, and whether the pool is shutting down.
    queue: Mutex<(VecDeque<Box<dyn Job>>, bool)>,
    ready: Condvar,
    per_chunk: bool,
}

impl FifoPool {
    fn new(threads: usize, per_chunk: bool) -> FifoPool {
        let shared =
            Arc::new(FifoShared { queue: Mutex::new((VecDeque::new(), false)), ready: Condvar::new(), per_chunk });
        let workers = (0..threads)
            .map(|_| {
                let shared = shared.clone();
                thread::spawn(move || fifo_worker(&shared))
            })
            .collect();
        FifoPool { shared, workers }
    }
}

fn fifo_worker(shared: &FifoShared) {
    loop {
        let mut job = {
            let mut q = shared.queue.lock().unwrap();
            loop {
                if q.1 {
                    return;
                }
                if let Some(job) = q.0.pop_front() {
                    break job;
                }
                q = shared.ready.wait(q).unwrap();
            }
        };
        if shared.per_chunk {
            if job.step().done {
                job.complete();
            } else {
                shared.queue.lock().unwrap().0.push_back(job);
                shared.ready.notify_one();
            }
        } else {
            while !job.step().done {}
            job.complete();
        }
    }
}

impl Submit for FifoPool {
    fn submit_job(&self, job: Box<dyn Job>) {
        self.shared.queue.lock().unwrap().0.push_back(job);
        self.shared.ready.notify_one();
    }
}

impl Drop for FifoPool {
    fn drop(&mut self) {
        self.shared.queue.lock().unwrap().1 = true;
        self.shared.ready.notify_all();
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
        let left = std::mem::take(&mut self.shared.queue.lock().unwrap().0);
        left.into_iter().for_each(|job| job.cancel());
    }
}

/// (count, p50, p99, max) of the latencies.
fn percentiles(mut v: Vec<Duration>) -> (usize, Duration, Duration, Duration) {
    if v.is_empty() {
        return (0, Duration::ZERO, Duration::ZERO, Duration::ZERO);
    }
    v.sort_unstable();
    let at = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
    (v.len(), at(0.50), at(0.99), at(1.0))
}

fn source(path: &Path) -> Source {
    Source::Path {
        path: CString::new(path.as_os_str().as_bytes()).unwrap(),
        flags: libc::O_RDONLY | libc::O_CLOEXEC,
        mode: 0o666,
    }
}

/// A scratch directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        let dir = std::env::temp_dir().join(format!("fairfs-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    /// Creates (once) a file of `len` non-zero bytes and reads it back, so it is in
    /// the page cache.
    fn file(&self, name: &str, len: usize) -> PathBuf {
        let path = self.0.join(name);
        let mut block: Vec<u8> = (0..MIB).map(|i| (i % 251) as u8 + 1).collect();
        if std::fs::metadata(&path).ok().map(|m| m.len()) != Some(len as u64) {
            let mut f = std::fs::File::create(&path).unwrap();
            let mut left = len;
            while left > 0 {
                let n = left.min(MIB);
                f.write_all(&block[..n]).unwrap();
                left -= n;
            }
            // Written back now, so writeback does not compete with the first bench.
            f.sync_all().unwrap();
        }
        let mut f = std::fs::File::open(&path).unwrap();
        while f.read(&mut block).unwrap() > 0 {}
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
