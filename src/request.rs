//! A `readFile` request as a pool [`Job`]: the read algorithm plus the code that
//! receives its outcome.

use crate::error::ReadError;
use crate::pool::{Job, Pool, Step, Ticket};
use crate::read::{FileRead, Progress, ReadLimits, Source};

/// What a read delivers: the bytes, or why there are none.
pub type Outcome = Result<Vec<u8>, ReadError>;

/// A [`FileRead`] run by the pool, handing its [`Outcome`] to `on_done` exactly once.
pub struct ReadFileJob<F> {
    read: FileRead,
    /// The error that ended the read early, if any.
    error: Option<ReadError>,
    on_done: F,
}

impl<F: FnOnce(Outcome) + Send + 'static> ReadFileJob<F> {
    pub fn new(source: Source, limits: ReadLimits, on_done: F) -> Self {
        ReadFileJob {
            read: FileRead::new(source, limits),
            error: None,
            on_done,
        }
    }
}

impl<F: FnOnce(Outcome) + Send + 'static> Job for ReadFileJob<F> {
    fn step(&mut self) -> Step {
        match self.read.step() {
            Ok(p) => Step {
                bytes: p.bytes(),
                done: matches!(p, Progress::Done { .. }),
            },
            Err(e) => {
                self.error = Some(e);
                Step {
                    bytes: 0,
                    done: true,
                }
            }
        }
    }

    fn complete(self: Box<Self>) {
        let this = *self;
        let outcome = match this.error {
            Some(e) => Err(e),
            None => this.read.finish(),
        };
        (this.on_done)(outcome);
    }

    fn cancel(self: Box<Self>) {
        let this = *self;
        // Closes the fd and frees the buffer before anyone hears of the cancellation.
        drop(this.read);
        (this.on_done)(Err(ReadError::Cancelled));
    }
}

/// Submits a read of `source` to `pool`; `on_done` runs on a pool thread (or on the
/// cancelling thread) with the outcome.
pub fn submit_read<F>(pool: &Pool, source: Source, limits: ReadLimits, on_done: F) -> Ticket
where
    F: FnOnce(Outcome) + Send + 'static,
{
    pool.submit(Box::new(ReadFileJob::new(source, limits, on_done)))
}

/// Reads a file through `pool` and waits for the result.
pub fn read_blocking(pool: &Pool, source: Source, limits: ReadLimits) -> Outcome {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    submit_read(pool, source, limits, move |outcome| {
        let _ = tx.send(outcome);
    });
    rx.recv().unwrap_or(Err(ReadError::Cancelled))
}
