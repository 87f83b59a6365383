//! EMFILE from the rest of the process: a read whose open fails because other code
//! holds every descriptor waits and retries instead of failing, and fails with the
//! open's error only when the pool holds no file of its own and a bounded wait has
//! passed. Its own test binary, since it lowers the process's descriptor limit.
#![cfg(unix)]

use std::ffi::CString;
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use fairfs::pool::{Pool, EMFILE_GIVE_UP_AFTER};
use fairfs::read::{ReadLimits, Source};
use fairfs::{submit_read, FsError, ReadError, Syscall};

fn source(p: &Path) -> Source {
    Source::Path { path: CString::new(p.as_os_str().as_encoded_bytes()).unwrap(), flags: libc::O_RDONLY, mode: 0 }
}

/// Opens `/dev/null` until the process has no descriptor left.
fn take_every_descriptor() -> Vec<std::fs::File> {
    let mut held = Vec::new();
    loop {
        match std::fs::File::open("/dev/null") {
            Ok(f) => held.push(f),
            Err(e) if e.raw_os_error() == Some(libc::EMFILE) => return held,
            Err(e) => panic!("{e}"),
        }
    }
}

type Outcome = Result<Vec<u8>, ReadError>;

fn read(pool: &Pool, p: &Path, tx: &mpsc::Sender<Outcome>) {
    let tx = tx.clone();
    let limits = ReadLimits { chunk_size: 4096, admitted: true, ..Default::default() };
    submit_read(pool, source(p), limits, move |o| tx.send(o.map(|b| b.to_vec())).unwrap());
}

#[test]
fn reads_wait_out_emfile_caused_by_other_code() {
    // SAFETY: getrlimit/setrlimit with a valid struct; this binary runs this one test.
    unsafe {
        let mut lim = std::mem::zeroed::<libc::rlimit>();
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim), 0);
        lim.rlim_cur = 64;
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lim), 0);
    }
    let dir = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..10_000).map(|i| (i % 251) as u8).collect();
    let file = dir.path().join("data");
    std::fs::write(&file, &data).unwrap();
    let pool = Pool::new(2, 4096);
    assert_eq!(pool.stats().max_open_files, 16, "a quarter of the 64 descriptors");
    let (tx, rx) = mpsc::channel();

    // Other code holds every descriptor for a while: the reads wait, then all succeed.
    let held = take_every_descriptor();
    for _ in 0..5 {
        read(&pool, &file, &tx);
    }
    assert!(rx.recv_timeout(Duration::from_millis(200)).is_err(), "a read ended while no descriptor was free");
    assert_eq!(pool.stats().waiting, 5);
    drop(held);
    for _ in 0..5 {
        let outcome = rx.recv_timeout(Duration::from_secs(2)).unwrap();
        assert!(outcome.as_ref().is_ok_and(|b| *b == data), "{:?}", outcome.map(|b| b.len()));
    }

    // Other code keeps them: with none of the pool's own files open, the read fails
    // with the open's EMFILE once the bounded wait has passed.
    let held = take_every_descriptor();
    let start = Instant::now();
    read(&pool, &file, &tx);
    let outcome = rx.recv_timeout(EMFILE_GIVE_UP_AFTER + Duration::from_secs(3)).unwrap();
    assert_eq!(outcome, Err(ReadError::Io(FsError::new(libc::EMFILE, Syscall::Open))));
    assert!(start.elapsed() >= EMFILE_GIVE_UP_AFTER, "gave up after {:?}", start.elapsed());
    drop(held);

    // The pool holds a file of its own (a FIFO being read): a read meeting EMFILE
    // waits for that file to close, past the bounded wait, and then succeeds.
    let fifo = dir.path().join("fifo");
    let c = CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let (opened_tx, opened) = mpsc::channel();
    let (finish_tx, finish) = mpsc::channel::<()>();
    let writer = std::thread::spawn({
        let fifo = fifo.clone();
        move || {
            let mut w = std::fs::OpenOptions::new().write(true).open(fifo).unwrap();
            std::io::Write::write_all(&mut w, b"fifo").unwrap();
            opened_tx.send(()).unwrap();
            finish.recv().unwrap();
        }
    });
    read(&pool, &fifo, &tx);
    opened.recv_timeout(Duration::from_secs(2)).unwrap();
    let held = take_every_descriptor();
    read(&pool, &file, &tx);
    assert!(
        rx.recv_timeout(EMFILE_GIVE_UP_AFTER + Duration::from_millis(500)).is_err(),
        "no giving up while one of the pool's files is open"
    );
    assert_eq!(pool.stats().waiting, 1);
    finish_tx.send(()).unwrap();
    writer.join().unwrap();
    // Either may be delivered first: the FIFO read gives its slot back just before
    // its delivery, and the waiting read goes at once.
    let mut outcomes: Vec<_> = (0..2)
        .map(|_| match rx.recv_timeout(Duration::from_secs(2)).unwrap() {
            Ok(bytes) if bytes == b"fifo" => "fifo",
            Ok(bytes) if bytes == data => "data",
            other => panic!("unexpected outcome {:?}", other.map(|b| b.len())),
        })
        .collect();
    outcomes.sort_unstable();
    assert_eq!(outcomes, ["data", "fifo"]);
    drop(held);
    dir.close().unwrap();
}
