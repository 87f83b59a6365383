//! Swaps std's synchronisation primitives for loom's in model tests
//! (`RUSTFLAGS="--cfg fairfs_loom" cargo test --release --lib loom`), as tokio does.

#[cfg(fairfs_loom)]
pub(crate) use ::loom::{sync, thread};

#[cfg(not(fairfs_loom))]
pub(crate) use std::{sync, thread};
