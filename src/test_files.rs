//! Files for the unit tests of every module: paths as the OS calls take them, temporary
//! files with recognisable bytes, and the fds open on a file.

use std::ffi::CString;
use std::path::Path;

/// `p` as the NUL-terminated path the OS calls take.
pub fn c_path(p: &Path) -> CString {
    CString::new(p.as_os_str().as_encoded_bytes()).unwrap()
}

/// A file holding `data`, removed when the returned path is dropped.
pub fn temp_file(name: &str, data: &[u8]) -> tempfile::TempPath {
    let mut file = tempfile::Builder::new().prefix(name).tempfile().unwrap();
    std::io::Write::write_all(&mut file, data).unwrap();
    file.into_temp_path()
}

/// `len` bytes that differ from their neighbours, so a misplaced byte shows.
pub fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 % 251) as u8).collect()
}

/// How many of this process's fds point at `path` (tests run in parallel, so
/// counting all fds would race with other tests).
pub fn fds_open_on(path: &Path) -> usize {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|target| target == path)
        .count()
}
