//! Buffer pool acquire/release against a `Vec` and against fresh pages, each with
//! first touch: what reading into reused, already-faulted memory saves, at 64 KiB
//! and 1 MiB. (The only `unsafe` outside src/: the mmap baseline.)

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use fairfs::memory::buffer_pool::BufferPool;

/// Writes one byte per 4 KiB page, as a read into the buffer would fault each page in.
fn touch(buf: &mut Vec<u8>, len: usize) {
    let spare = buf.spare_capacity_mut();
    for i in (0..len).step_by(4096) {
        spare[i].write(1);
    }
}

fn bench_pool(c: &mut Criterion) {
    let mut group = c.benchmark_group("buffer_pool");
    group.sample_size(20).measurement_time(Duration::from_secs(3));
    let pool = BufferPool::new(64 << 20);
    for len in [64 * 1024, 1024 * 1024] {
        group.throughput(Throughput::Bytes(len as u64));
        group.bench_with_input(BenchmarkId::new("pool acquire+touch+release", len), &len, |b, &len| {
            b.iter(|| {
                let mut buf = pool.acquire(len);
                touch(&mut buf, len);
                pool.release(black_box(buf));
            })
        });
        group.bench_with_input(BenchmarkId::new("Vec::with_capacity+touch+drop", len), &len, |b, &len| {
            b.iter(|| {
                let mut buf = Vec::<u8>::with_capacity(len);
                touch(&mut buf, len);
                drop(black_box(buf));
            })
        });
        // What fresh memory costs when the allocator cannot hand back recently freed
        // pages (glibc often can in a tight loop, which hides the first-touch cost).
        group.bench_with_input(BenchmarkId::new("fresh mmap+touch+munmap", len), &len, |b, &len| {
            b.iter(|| {
                // SAFETY: an anonymous private mapping of `len` bytes, written only
                // within its bounds and unmapped once.
                unsafe {
                    let p = libc::mmap(
                        std::ptr::null_mut(),
                        len,
                        libc::PROT_READ | libc::PROT_WRITE,
                        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                        -1,
                        0,
                    );
                    assert_ne!(p, libc::MAP_FAILED);
                    for i in (0..len).step_by(4096) {
                        *(p as *mut u8).add(i) = 1;
                    }
                    libc::munmap(black_box(p), len);
                }
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_pool);
criterion_main!(benches);
