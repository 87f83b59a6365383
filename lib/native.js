'use strict'
// The JS end of the native binding: every request returns an id, and its result
// arrives later in a batch through `onComplete`. Handlers are keyed by id.

const { constants: { MAX_LENGTH } } = require('node:buffer')
const binding = require('../binding.js')
const { uvError, fileTooLarge, internalError } = require('./errors')

/** Requests in flight from this thread: id -> handler(result). */
const inFlight = new Map()

binding.init(onComplete, MAX_LENGTH)
censusLibuvThreads()

/**
 * Lets the pool's contention governor tell libuv's threads (zlib, crypto, node:fs)
 * from V8's: libuv before 1.50 (Node 20) leaves them unnamed, so one job per thread is
 * queued on libuv's pool, each noting the thread it runs on (src/policy/host_threads.rs). The
 * jobs wait for each other for at most 20 ms, once per process; newer libuv names its
 * threads and needs none.
 */
function censusLibuvThreads() {
  const [major, minor] = process.versions.uv.split('.').map(Number)
  if (process.platform !== 'linux' || major > 1 || minor >= 50) return
  // As libuv reads it: a number from 1 to 1024, 4 when unset.
  const size = Math.min(Math.max(Number.parseInt(process.env.UV_THREADPOOL_SIZE ?? '4', 10) || 1, 1), 1024)
  for (let i = 0; i < size; i++) binding.censusHostPool(size).catch(() => {})
}

/**
 * Receives `[id, result, id, result, ...]` from the native side. The results are
 * delivered on the next tick, outside the addon's call, so that an exception from a
 * user's callback is reported from where the user threw it, as node:fs's are.
 */
function onComplete(batch) {
  process.nextTick(deliver, batch, 0)
}

/**
 * Hands each result from `start` on to its handler. A handler that throws (a user's
 * callback) is not caught: the exception leaves from the user's own frame, as from
 * node:fs, and the rest of the batch is delivered on the next tick.
 */
function deliver(batch, start) {
  let i = start
  try {
    for (; i < batch.length; i += 2) {
      const handler = inFlight.get(batch[i])
      if (handler === undefined) continue
      inFlight.delete(batch[i])
      handler(batch[i + 1])
    }
  } finally {
    if (i < batch.length) process.nextTick(deliver, batch, i + 2)
  }
}

/** Registers `handler` for the request `id` returned by a binding call. */
function track(id, handler) {
  inFlight.set(id, handler)
  return id
}

/**
 * The error a native failure stands for: `[errno, syscall]` is an OS error (errno is
 * libuv's negative error number, named by uvError; node:fs adds `path` to `open`
 * errors), `[size, limit]` a file over the limit, `['panic']` a pool thread that panicked.
 */
function nativeError(result, path) {
  if (result[0] === 'panic') return internalError(path)
  // [size, limit]: over the limit that applied; [uvErrno, syscall]: an OS error.
  return typeof result[1] === 'number' ? fileTooLarge(result[0], result[1]) : uvError(result, path)
}

module.exports = { binding, track, nativeError }
