//! The census of libuv's threads ([`crate::policy::host_threads`]), run on libuv's own pool.

use super::*;

/// One job of the census of libuv's threads ([`crate::policy::host_threads`]): queued on
/// libuv's pool (N-API async work runs there), it notes its thread and holds it until
/// `expected` distinct threads are known or the timeout passed. Resolves whether the
/// census is complete; while it is not, lib/native.js runs another round later.
pub struct CensusJob(usize);

impl Task for CensusJob {
    type Output = bool;
    type JsValue = bool;

    fn compute(&mut self) -> Result<bool> {
        Ok(crate::policy::host_threads::census(self.0))
    }

    fn resolve(&mut self, _env: Env, complete: bool) -> Result<bool> {
        Ok(complete)
    }
}

/// Queue `expected` of these at once, one per libuv thread (`UV_THREADPOOL_SIZE`).
#[napi]
pub fn census_host_pool(expected: u32) -> AsyncTask<CensusJob> {
    AsyncTask::new(CensusJob(expected as usize))
}
