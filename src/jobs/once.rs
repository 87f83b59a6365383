//! A job of one step, for work that is not a read algorithm of its own (closing a
//! stream's fd on the pool, for one).

use crate::job::{Data, Job, Step};

/// A job of one step: runs `work` on a pool thread and hands its result to
/// `on_done`, or `None` if it was cancelled before it ran.
pub struct OnceJob<W, R, D> {
    work: Option<W>,
    result: Option<R>,
    on_done: D,
}

impl<W, R, D> OnceJob<W, R, D>
where
    W: FnOnce() -> (R, usize) + Send + 'static,
    R: Send + 'static,
    D: FnOnce(Option<R>) + Send + 'static,
{
    /// `work` returns its result and the bytes it read (charged to fairness).
    pub fn new(work: W, on_done: D) -> Self {
        OnceJob { work: Some(work), result: None, on_done }
    }
}

impl<W, R, D> Job for OnceJob<W, R, D>
where
    W: FnOnce() -> (R, usize) + Send + 'static,
    R: Send + 'static,
    D: FnOnce(Option<R>) + Send + 'static,
{
    fn step(&mut self) -> Step {
        let work = self.work.take().expect("a OnceJob runs once");
        let (result, bytes) = work();
        self.result = Some(result);
        Step { bytes, done: true }
    }

    /// Work of one step is not a read algorithm: a metadata call or a close reads no
    /// file data, and counts as a chunk read only if `work` reports bytes read.
    fn data(&self) -> Data {
        Data::Neither
    }

    fn complete(self: Box<Self>) {
        (self.on_done)(self.result);
    }

    fn cancel(self: Box<Self>) {
        (self.on_done)(None);
    }
}
