//! Property test of the read algorithm against a simple model: random file sizes,
//! chunk sizes, files that shrink or grow mid-read, and reads dropped midway.

use std::ffi::CString;
use std::io::Write;
use std::path::Path;

use fairfs::read::{pooled_only, FileRead, Progress, ReadLimits, Source};
use proptest::prelude::*;

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

fn source(p: &Path) -> Source {
    Source::Path { path: CString::new(p.as_os_str().as_encoded_bytes()).unwrap(), flags: libc::O_RDONLY, mode: 0 }
}

fn fds_open_on(path: &Path) -> usize {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|t| t == path)
        .count()
}

/// A path of an empty file, removed when the returned path is dropped (also when a
/// case fails).
fn temp_path(tag: &str) -> tempfile::TempPath {
    tempfile::Builder::new().prefix(tag).tempfile().unwrap().into_temp_path()
}

/// Something that happens to the file (or the read) between two steps, after the
/// first step has opened and stated it.
#[derive(Debug, Clone)]
enum Change {
    None,
    /// Truncate to this many bytes before step `at`.
    Shrink {
        at: usize,
        to: usize,
    },
    /// Append this many bytes before step `at`.
    Grow {
        at: usize,
        by: usize,
    },
    /// Drop the read before step `at`.
    Cancel {
        at: usize,
    },
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        Just(Change::None),
        (1..20usize, 0..100_000usize).prop_map(|(at, to)| Change::Shrink { at, to }),
        (1..20usize, 1..50_000usize).prop_map(|(at, by)| Change::Grow { at, by }),
        (1..20usize).prop_map(|at| Change::Cancel { at }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn reads_match_the_model(size in 0..100_000usize, chunk in 1..40_000usize, seed: u8, change in change()) {
        let data = pattern(size, seed);
        let path = temp_path("model");
        std::fs::write(&path, &data).unwrap();
        let mut read = Some(FileRead::new(source(&path), ReadLimits { chunk_size: chunk, ..ReadLimits::default() }));
        // Bytes read before the file changed (a shrink keeps what was read already).
        let mut filled = 0usize;
        let mut step = 0usize;
        let mut cancelled = false;
        loop {
            match change {
                Change::Shrink { at, to } if at == step => {
                    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(to as u64).unwrap();
                }
                Change::Grow { at, by } if at == step => {
                    std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(&vec![0xEE; by]).unwrap();
                }
                Change::Cancel { at } if at == step => {
                    drop(read.take());
                    cancelled = true;
                    break;
                }
                _ => {}
            }
            let progress = read.as_mut().unwrap().step().unwrap();
            prop_assert!(progress.bytes() <= chunk, "a step read {} > chunk {}", progress.bytes(), chunk);
            step += 1;
            if let Change::Shrink { at, .. } = change {
                if step <= at { filled += progress.bytes(); }
            }
            if let Progress::Done { .. } = progress { break; }
        }
        if cancelled {
            prop_assert_eq!(fds_open_on(&path), 0, "a dropped read closes its fd");
        } else {
            let got = pooled_only(read.take().unwrap().finish().unwrap());
            let expected_len = match change {
                // Stops at the fstat size; a file that grew is cut there.
                Change::None | Change::Grow { .. } | Change::Cancel { .. } => size,
                // What was read before the shrink stays; then it reads up to the new end.
                Change::Shrink { to, .. } => filled.max(to.min(size)),
            };
            prop_assert_eq!(got.len(), expected_len);
            prop_assert!(got == data[..expected_len].to_vec(), "content differs");
            prop_assert_eq!(fds_open_on(&path), 0);
        }
    }
}
