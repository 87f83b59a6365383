'use strict'
// node:fs's WriteStream with its next write queued on the pool behind the one running.
//
// node:fs's WriteStream keeps one write in flight: each chunk waits for the round trip
// of the one before (to the pool, the kernel, and back through the event loop), so a
// stream that waits for 'drain' writes at one chunk per round trip. Once install()
// points fs.write and fs.writev at the pool (lib/fd-writes.js), these methods take a
// WriteStream's chunks: a chunk that arrives while none is in flight is taken at once
// (its callback comes without waiting for the write), and one that arrives while a
// write runs is queued on the pool behind it, its callback coming when the write ahead
// has reached the kernel. So the pool always has the next chunk and writes the two back
// to back, and a stream holds at most one chunk more than node:fs's does.
//
// What stays node:fs's: 'finish' means every byte reached the kernel (_final waits for
// the writes in flight); the fd closes, with `flush` after fsync, only once they are
// done; writes reach the fd in the order made, and none runs after one that failed or
// fell short (a WriteChain, src/jobs/write_chain.rs): the rest of a short write is written
// again, as node:fs's writeAll does, and the writes behind it follow. A failed write
// destroys the stream with node:fs's error ('error', then 'close'); the callback it
// reaches is the queued chunk's, where node:fs's reaches the failed chunk's own.
//
// Streams that are not on the pool keep node:fs's methods: a custom `fs`, a
// FileHandle's stream, and any stream while fs.write or fs.writev is not fairfs's
// (a caller's replacement, a mocked binding, uninstall()).

const { Buffer } = require('node:buffer')
const fsModule = require('node:fs')
const { binding: native, trackWrite: track, nativeError } = require('./native')
const { primitives } = require('./fd-writes')
const { nodeServes } = require('./mocked')
const { withCode } = require('./errors')

const proto = fsModule.WriteStream.prototype
/** node:fs's methods, as they were when fairfs loaded. */
const node = { _write: proto._write, _writev: proto._writev, _destroy: proto._destroy }

/** A stream's writes on the pool (see Queue). */
const kQueue = Symbol('fairfs.writeQueue')
/** node:fs's private key of the stream's `fs` (the module, the `fs` option, or a FileHandle's operations), once seen. */
let kFs = null

/** The `fs` object node:fs's WriteStream `stream` calls, or undefined. */
function fsOf(stream) {
  kFs ??= Object.getOwnPropertySymbols(stream).find((s) => s.description === 'kFs') ?? null
  return kFs === null ? undefined : stream[kFs]
}

/** Whether `stream`'s writes go to the pool now: it calls node:fs's module, whose write and writev are fairfs's. */
function onPool(stream) {
  return primitives !== null && typeof stream.fd === 'number' && !process.permission && !nodeServes() &&
    fsOf(stream) === fsModule && fsModule.write === primitives.write && fsModule.writev === primitives.writev
}

/**
 * One stream's writes in flight, oldest first: at most two, the first taken (its
 * callback given) and the second with its callback held until the first is done.
 */
class Queue {
  /** The chain the next write joins; a new one after a break. */
  chain = null
  /** `{ bufs, size, pos, ack, token }`; `ack`: the callback not yet given; `token`: the live submission's. */
  writes = []
  /** Numbers the submissions: a completion whose token is not its write's is of a submission given up. */
  seq = 0
  /** The writes behind the first were skipped by a break and go again once it is whole. */
  resubmit = false
  /** What waits for no write in flight: _final, _destroy, or a write off the pool. */
  idle = []
  failed = null
}

function queueOf(stream) {
  let q = stream[kQueue]
  if (q === undefined) {
    q = new Queue()
    Object.defineProperty(stream, kQueue, { value: q })
    // 'finish' waits for the writes in flight. An own method, so that streams that
    // never write on the pool keep node:fs's finish exactly.
    stream._final = final
  }
  return q
}

function submit(stream, q, w) {
  q.chain ??= native.writeChain()
  const token = ++q.seq
  w.token = token
  track(native.writeChained(q.chain, stream.fd, w.bufs, w.pos ?? -1), (result) => written(stream, q, w, token, result))
}

/** Takes a chunk (or several, from _writev) of `size` bytes for the pool. */
function take(stream, bufs, size, cb) {
  const q = queueOf(stream)
  const w = { bufs, size, pos: stream.pos, ack: cb, token: 0 }
  submit(stream, q, w)
  if (stream.pos !== undefined) stream.pos += size
  q.writes.push(w)
  // Taken at once when nothing is ahead of it, and the stream is whole (Writable does
  // not write to a destroyed stream, but `destroyed` is a property a caller may change).
  if (q.writes.length === 1 && !stream.destroyed) {
    w.ack = null
    cb()
  }
}

function written(stream, q, w, token, result) {
  if (w.token !== token) return // skipped behind a break, and resubmitted or failed since
  // Destroyed before this write's callback was given: node:fs's writeAll gives such a
  // write ERR_STREAM_DESTROYED, uncounted, and the destroy reports it. One whose
  // callback was given is done for the caller, who may have destroyed the stream in it.
  if (stream.destroyed && w.ack) return fail(stream, q, destroyedError())
  if (typeof result === 'number') {
    stream.bytesWritten += result
    if (result === w.size) return done(stream, q)
    return again(stream, q, w, result)
  }
  const err = result === null ? withCode(new Error('ECANCELED: operation canceled'), 'ECANCELED') : nativeError(result)
  // node:fs's writeAll reads EAGAIN as nothing written yet, and tries again.
  if (err.code === 'EAGAIN') return again(stream, q, w, 0)
  fail(stream, q, err)
}

/** The first write is whole: the next one's callback is due, or nothing is in flight. */
function done(stream, q) {
  q.writes.shift()
  if (q.resubmit) {
    q.resubmit = false
    for (const w of q.writes) submit(stream, q, w)
  }
  const next = q.writes[0]
  // Its callback is due, but the stream was destroyed meanwhile: as above.
  if (next?.ack && stream.destroyed) return fail(stream, q, destroyedError())
  if (next?.ack) {
    const ack = next.ack
    next.ack = null
    ack()
  }
  if (q.writes.length === 0) drained(q)
}

/**
 * `w` wrote `n` of its bytes: the chain broke, and the writes behind it came back
 * unwritten. The rest goes again, as node:fs's writeAll writes the rest (giving up
 * after five tries that write nothing), and the writes behind it follow once it is whole.
 */
function again(stream, q, w, n) {
  for (const other of q.writes) if (other !== w) other.token = 0
  q.resubmit = q.writes.length > 1
  q.chain = null
  w.retries = n > 0 ? 0 : (w.retries ?? 0) + 1
  if (w.retries > 5) return fail(stream, q, withCode(new Error('A system error occurred: write failed'), 'ERR_SYSTEM_ERROR'))
  const all = w.bufs.length === 1 ? w.bufs[0] : Buffer.concat(w.bufs)
  w.bufs = [all.subarray(n)]
  w.size -= n
  if (w.pos !== undefined) w.pos += n
  submit(stream, q, w)
}

/**
 * A write failed: the stream is destroyed with its error, through the held callback
 * if there is one (as node:fs's failed write's callback does), else directly.
 */
function fail(stream, q, err) {
  q.failed = err
  const held = q.writes.find((w) => w.ack)
  for (const w of q.writes) w.token = 0
  q.writes.length = 0
  q.resubmit = false
  q.chain = null
  if (held) held.ack(err)
  else if (q.idle.length === 0 && !stream.destroyed) stream.destroy(err)
  drained(q)
}

function drained(q) {
  const waiting = q.idle
  q.idle = []
  for (const fn of waiting) fn()
}

function destroyedError() {
  return withCode(new Error('Cannot call write after a stream was destroyed'), 'ERR_STREAM_DESTROYED')
}

/** Runs `fn` once none of the stream's writes is on the pool. */
function afterPool(stream, fn) {
  const q = stream[kQueue]
  if (q === undefined || q.writes.length === 0) return fn()
  q.idle.push(fn)
}

const methods = {
  _write(data, encoding, cb) {
    if (!onPool(this)) return afterPool(this, () => Reflect.apply(node._write, this, [data, encoding, cb]))
    take(this, [data], data.length, cb)
  },
  _writev(data, cb) {
    if (!onPool(this)) return afterPool(this, () => Reflect.apply(node._writev, this, [data, cb]))
    const bufs = new Array(data.length)
    let size = 0
    for (let i = 0; i < data.length; i++) {
      bufs[i] = data[i].chunk
      size += bufs[i].length
    }
    take(this, bufs, size, cb)
  },
  // The fd closes (after fsync with `flush`) once the writes in flight are done, and a
  // write's error is the destroy's if it had none, as node:fs's waits for its write.
  _destroy(err, cb) {
    afterPool(this, () => Reflect.apply(node._destroy, this, [err ?? this[kQueue]?.failed ?? null, cb]))
  },
}

/** 'finish' once every write is in the kernel, or the error of one that failed. */
function final(cb) {
  afterPool(this, () => cb(this[kQueue].failed ?? undefined))
}

/** What patch() replaced. */
let patched = null

/** Puts these methods on WriteStream.prototype where node:fs's are still there. */
function patch() {
  if (patched || primitives === null) return
  patched = []
  for (const [name, fn] of Object.entries(methods)) {
    if (proto[name] !== node[name]) continue // a caller's, left alone
    patched.push([name, fn])
    proto[name] = fn
  }
}

/** Puts node:fs's methods back where these are still in place. */
function unpatch() {
  if (!patched) return
  for (const [name, fn] of patched) if (proto[name] === fn) proto[name] = node[name]
  patched = null
}

module.exports = { patch, unpatch }
