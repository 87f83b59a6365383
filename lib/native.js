'use strict'
// The JS end of the native binding: every request returns an id, and its result
// arrives later in a batch through `onComplete`. Handlers are keyed by id.

const { constants: { MAX_LENGTH } } = require('node:buffer')
const { AsyncResource } = require('node:async_hooks')
const binding = require('../binding.js')
const { uvError, fileTooLarge, internalError } = require('./errors')

/**
 * Requests in flight from this thread: id -> Request. One entry (id -1, never a
 * request's) stays, so that removing the last request does not make V8 shrink and
 * reallocate the table, as it does on every round trip of a lone caller.
 */
const inFlight = new Map([[-1, null]])

/** A Request emits its async_hooks destroy once its handler has run, as node:fs's do. */
const kManualDestroy = { requireManualDestroy: true }

/**
 * A request in flight: its handler, and the async context of the call that made it,
 * which the handler runs in, as node:fs runs a callback in its FSReqCallback's. The
 * batches arrive in the threadsafe function's context, so without this a callback
 * would see none of its caller's AsyncLocalStorage stores, domain or async ids.
 *
 * One AsyncResource per request, made at submit time (track) and entered at delivery
 * (runInAsyncScope): the handler sees the caller's stores (AsyncLocalStorage, with
 * async hooks on Node 20 and 22, AsyncContextFrame on 24), its domain, and a resource
 * of node:fs's type 'FSREQCALLBACK' whose trigger is the caller's executionAsyncId; hook
 * users see its init in the caller's context and its destroy once the handler has run.
 * It is made for every request, observed or not: nothing public tells whether a hook, a
 * store or a domain is watching, and executionAsyncId() is always there to be read. A
 * subclass, so that a request costs one object (AsyncResource.bind costs more).
 */
class Request extends AsyncResource {
  constructor(handler, write = false) {
    super('FSREQCALLBACK', kManualDestroy)
    this.handler = handler
    /** A write (trackWrite): not counted by pilingUp. */
    this.write = write
  }
}

binding.init(onComplete, MAX_LENGTH)
censusLibuvThreads()

/**
 * Lets the pool's contention governor tell libuv's threads (zlib, crypto, node:fs)
 * from V8's: libuv before 1.50 (Node 20) leaves them unnamed, so one job per thread is
 * queued on libuv's pool, each noting the thread it runs on (src/policy/host_threads.rs).
 * A job holds its thread for at most 20 ms while it waits for the others; newer libuv
 * names its threads and needs none.
 *
 * A thread busy with other work (or not scheduled within those 20 ms) misses a round,
 * and the round's jobs end on the threads it did see. So while the census has not seen
 * every thread, another round runs later, off the hot path (unref'd timers, jobs on
 * libuv's pool), at most kCensusRetries times, a tenth of a second first, then twice as
 * long each time (about 100 s in all); the census keeps the threads of every round.
 */
function censusLibuvThreads() {
  const [major, minor] = process.versions.uv.split('.').map(Number)
  if (process.platform !== 'linux' || major > 1 || minor >= 50) return
  // As libuv reads it: a number from 1 to 1024, 4 when unset.
  const size = Math.min(Math.max(Number.parseInt(process.env.UV_THREADPOOL_SIZE ?? '4', 10) || 1, 1), 1024)
  const kCensusRetries = 10
  let retries = 0
  const round = () => {
    const jobs = []
    for (let i = 0; i < size; i++) jobs.push(binding.censusHostPool(size))
    Promise.all(jobs).then((complete) => {
      if (complete.includes(true) || retries >= kCensusRetries) return
      setTimeout(round, 100 * 2 ** retries++).unref()
    }, () => {})
  }
  round()
}

/**
 * With this many of this thread's calls in flight (on the pool, or answered here and
 * waiting for their macrotask), the calling-thread fast paths step aside and calls go
 * to the pool: one at a time a call is quickest answered here, but many at once would
 * queue on this one thread (a cached stat costs it about 6 µs here, on the pool about
 * 3), while the pool's threads use the other cores and deliver in batches. Hits and
 * misses step aside alike, so one call's route never depends on its answer.
 */
const kPileUp = 8
/** Calls answered on this thread whose callbacks wait for their macrotask (later). */
let answeredHere = 0
/** Calls fairfs handed to node:fs's own functions (an open of a file not known cached), in flight. */
let withNode = 0
/** Writes in flight (trackWrite): a big one does not queue on this thread, nor make its small calls do. */
let writesInFlight = 0
const pilingUp = () => inFlight.size - 1 - writesInFlight + answeredHere + withNode >= kPileUp

/** `callback` counted as a call in flight (for pilingUp) until node:fs calls it. */
function countedUntilCalled(callback) {
  withNode++
  return function () {
    withNode--
    return Reflect.apply(callback, this, arguments)
  }
}

/**
 * `fn(a, b)` in a macrotask of its own, as a pool completion comes: a loop of calls
 * answered here must not starve timers and I/O. Counted for pilingUp meanwhile.
 *
 * An answer made here while this thread's queries made before it are on the
 * process-wide pool (a stat of a name the kernel has not cached, say) waits for them,
 * for kHoldAtMost ms at most: on node:fs's one pool the earlier call would complete
 * first, and code racing a walk of its own (tar's unpack beside `fs.rm`) depends on
 * that order. Queries in a lane (slow and hung mounts) hold nothing up, and the bound
 * keeps a slow local disk from holding answers about cached files for long.
 */
function later(fn, a, b) {
  answeredHere++
  if (queriesInFlight.size === 0 && held.length === 0) return void setImmediate(runLater, fn, a, b)
  // Run in the caller's context when released, as setImmediate would have.
  held.push(lastQuery, new Request(() => setImmediate(runLater, fn, a, b)))
  holdTimer ??= setTimeout(releaseHeld, kHoldAtMost, true)
}
// Past a worker's wake-up on a busy machine (SCHED_BATCH, nice 5), short beside a slow disk's read.
const kHoldAtMost = 20
/** This thread's queries on the pool (trackQuery), oldest first, and the newest one's id. */
const queriesInFlight = new Set()
let lastQuery = -1
/** Answers made here that wait for earlier queries: [last query before it, Request, ...]. */
const held = []
let holdTimer = null

/** Releases, oldest first, the held answers no query in flight is older than (all of them once `timedOut`). */
function releaseHeld(timedOut = false) {
  if (timedOut === true) holdTimer = null
  const oldest = queriesInFlight.size === 0 ? Infinity : queriesInFlight.values().next().value
  let n = 0
  while (n < held.length && (timedOut === true || held[n] < oldest)) n += 2
  const released = held.splice(0, n)
  if (held.length === 0 && holdTimer !== null) {
    clearTimeout(holdTimer)
    holdTimer = null
  }
  for (let i = 1; i < released.length; i += 2) {
    released[i].runInAsyncScope(complete, released[i], undefined)
    released[i].emitDestroy()
  }
}
function runLater(fn, a, b) {
  answeredHere--
  fn(a, b)
}

const kNoStats = [null, null]
/** The stats of the batch being delivered: `[Float64Array | null, BigInt64Array | null]`. */
let batchStats = kNoStats
const statsOfBatch = () => batchStats

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
  let request
  // A batch's stats end it as the pair -2, [numbers, bigints]; a stat's result is the
  // index of its slots there (src/node/results.rs), read by its handler at once.
  batchStats = batch[batch.length - 2] === -2 ? batch[batch.length - 1] : kNoStats
  try {
    for (; i < batch.length; i += 2) {
      request = inFlight.get(batch[i])
      if (request === undefined) continue
      inFlight.delete(batch[i])
      if (queriesInFlight.size !== 0) queriesInFlight.delete(batch[i])
      if (request.write) writesInFlight--
      request.runInAsyncScope(complete, request, batch[i + 1])
      request.emitDestroy()
    }
  } finally {
    if (held.length !== 0) releaseHeld()
    if (i < batch.length) {
      request.emitDestroy()
      // A handler that threw in a domain left it active (see complete), for its error
      // handler: the rest of the batch is queued outside it, not paired with it.
      const domain = process.domain
      domain?.exit()
      process.nextTick(deliver, batch, i + 2)
      domain?.enter()
    }
  }
}

/**
 * Runs a request's handler (`this`) in its caller's context, entered already. In a
 * domain, the domain is entered once more around the handler: runInAsyncScope leaves
 * the context on the way out, even when the handler throws, which would leave the
 * domain too before its error handler could catch the throw (node:fs's callbacks leave
 * only once the throw has been handled). Entered twice, the domain stays active until
 * its error handler has run, as domain.run() does.
 */
function complete(result) {
  const handler = this.handler
  const domain = process.domain
  if (domain == null) return handler(result)
  domain.enter()
  handler(result)
  domain.exit()
}

/**
 * Registers `handler` for the request `id` returned by a binding call; it will run in
 * the async context of this call (see Request).
 */
function track(id, handler) {
  inFlight.set(id, new Request(handler))
  return id
}

/**
 * track() for a write (writeFile, appendFile, an fd's write or sync, a stream's chunk,
 * copyFile): ten big writers in flight are not calls piling up on this thread, and a
 * stat beside them stays on the fast path (sent to the pool, it waited behind their
 * chunks: a p99 of 5–8 ms).
 */
function trackWrite(id, handler) {
  writesInFlight++
  inFlight.set(id, new Request(handler, true))
  return id
}

/**
 * track() for a query (stat, access, realpath, readdir): the binding queued it without
 * waking the pool, which is woken once, after this turn's calls (binding.nudgePool),
 * for all of them: 64 stats made in one turn cost one wake-up, not 64. The binding
 * negates the id of a query it sent to a lane (a slow or hung mount's pool): answers
 * made here do not wait for those.
 */
function trackQuery(id, handler) {
  if (!nudgeOwed) {
    nudgeOwed = true
    process.nextTick(nudgePool)
  }
  if (id < 0) return track(-id, handler)
  queriesInFlight.add(id)
  lastQuery = id
  return track(id, handler)
}
let nudgeOwed = false
function nudgePool() {
  nudgeOwed = false
  binding.nudgePool()
}

/**
 * The error a native failure stands for: `[errno, syscall]` is an OS error (errno is
 * libuv's negative error number, named by uvError; node:fs adds `path` to `open`
 * errors), `[size, limit]` a file over the limit, `['panic']` a pool thread that panicked.
 */
function nativeError(result, path, dest) {
  if (result[0] === 'panic') return internalError(path)
  // [size, limit]: over the limit that applied; [uvErrno, syscall]: an OS error.
  return typeof result[1] === 'number' ? fileTooLarge(result[0], result[1]) : uvError(result, path, dest)
}

module.exports = { binding, track, trackQuery, trackWrite, nativeError, statsOfBatch, pilingUp, later, countedUntilCalled }
