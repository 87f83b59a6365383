'use strict'
// The fd primitives of writing on the pool: fs.open (for writing), fs.write,
// fs.writev, fs.fsync, fs.fdatasync and fs.close. node:fs's WriteStream, its callback
// writeFile, and loggers such as sonic-boom (pino) call them through the node:fs
// module at each operation, so once install() puts these there, a WriteStream held by
// multer, formidable or winston writes on fairfs's pool, as does a logger's fs.write.
//
// Requests on one fd run on the pool one at a time in the order they were made (a
// keyed flow, src/jobs/write.rs), after which a close ends the fd's flow.
//
// These take the calls node:fs's own callers make. A call fairfs does not take as it
// is goes to node:fs's own function, which validates and answers it exactly as
// node:fs does on this Node line: arguments of the wrong type or range, a string in an
// encoding other than utf8, an open for reading (its FIFO and lease waits are
// node:fs's), the permission model, a mocked binding, and Windows.

const { Buffer } = require('node:buffer')
const fsModule = require('node:fs')
const { binding: native, track, trackWrite, nativeError, pilingUp, later, countedUntilCalled } = require('./native')
const { validatePath, parseFileMode, stringToFlags, isInt32 } = require('./args')
const { nodeServes } = require('./mocked')
const { current: settings } = require('./settings')

// Opened for reading only: neither write bit (fs.constants has no O_ACCMODE on Node 20).
const { constants: { O_WRONLY, O_RDWR } } = fsModule
const readOnly = (flags) => (flags & (O_WRONLY | O_RDWR)) === 0

/** node:fs's functions as they were when fairfs loaded. */
const node = {
  open: fsModule.open,
  write: fsModule.write,
  writev: fsModule.writev,
  fsync: fsModule.fsync,
  fdatasync: fsModule.fdatasync,
  close: fsModule.close,
}

/** The addon writes here (unix builds), and nothing makes node:fs's own answer the call. */
function serves() {
  return kNative && !process.permission && !nodeServes()
}
const kNative = typeof native.writeBuffers === 'function'

const isFd = (fd) => isInt32(fd) && fd >= 0
const isPosition = (p) => Number.isSafeInteger(p) && p >= 0

/**
 * Hands request `id`'s outcome on: `value(result)` on success, else `callback(err,
 * ...failed)` (node:fs's write callbacks get `(err, 0, buffer)`).
 */
function submit(id, callback, display, value, ...failed) {
  track(id, (result) => outcome(result, callback, display, value, failed))
}

function outcome(result, callback, display, value, failed) {
  if (result === null) return callback(cancelled(), ...failed)
  if (Array.isArray(result)) return callback(nativeError(result, display), ...failed)
  return value(result)
}

/**
 * fd -> how many of fairfs's requests on it are in flight. A close on the pool runs
 * after them in the fd's flow; only an fd with none may be closed on this thread.
 */
const busy = new Map()

/** submit() of a request on `fd`, counted in `busy` until its outcome is handed on. */
function submitOn(fd, id, callback, display, value, ...failed) {
  busy.set(fd, (busy.get(fd) ?? 0) + 1)
  trackWrite(id, (result) => {
    const left = busy.get(fd) - 1
    if (left === 0) busy.delete(fd)
    else busy.set(fd, left)
    outcome(result, callback, display, value, failed)
  })
}

/** A request cancelled by the environment's teardown: nobody is left to tell. */
function cancelled() {
  const err = new Error('ECANCELED: operation canceled')
  err.code = 'ECANCELED'
  return err
}

/** `fs.write(fd, buffer[, offset[, length[, position]]], callback)` and `fs.write(fd, string[, position[, encoding]], callback)`. */
function write(fd, buffer, offsetOrOptions, length, position, callback) {
  if (!serves() || !isFd(fd)) return Reflect.apply(node.write, this, arguments)
  let offset = offsetOrOptions
  // A view of nothing (or of a detached buffer): node:fs's own answer.
  if (ArrayBuffer.isView(buffer) && buffer.byteLength > 0) {
    callback ||= position || length || offset
    if (typeof callback !== 'function') return Reflect.apply(node.write, this, arguments)
    if (offset != null && typeof offset !== 'number' && typeof offset !== 'object' && typeof offset !== 'function') {
      return Reflect.apply(node.write, this, arguments) // node:fs's error for it
    }
    if (typeof offset === 'object') {
      ({ offset = 0, length = buffer.byteLength - offset, position = null } = offsetOrOptions ?? {})
    }
    if (offset == null || typeof offset === 'function') offset = 0
    if (typeof length !== 'number') length = buffer.byteLength - offset
    if (typeof position !== 'number') position = null
    if (!Number.isSafeInteger(offset) || offset < 0 || offset > buffer.byteLength || !isInt32(length) || length < 0 ||
        length > buffer.byteLength - offset || (position !== null && !isPosition(position))) {
      return Reflect.apply(node.write, this, arguments) // node:fs's error for it
    }
    // The caller's Buffer itself when the write takes all of it (no view to make).
    const view = Buffer.isBuffer(buffer) && offset === 0 && length === buffer.length ? buffer : Buffer.from(buffer.buffer, buffer.byteOffset + offset, length)
    submitOn(fd, native.writeBuffers(fd, [view], position ?? -1), callback, undefined, (n) => callback(null, n, buffer), 0, buffer)
    return
  }
  if (typeof buffer !== 'string' || buffer.length === 0) return Reflect.apply(node.write, this, arguments)
  // node:fs's reading of the string form's arguments.
  if (typeof position !== 'function') {
    if (typeof offset === 'function') {
      position = offset
      offset = null
    } else {
      position = length
    }
    length = 'utf8'
  }
  const encoding = length ?? 'utf8'
  callback = position
  if (typeof callback !== 'function' || (encoding !== 'utf8' && encoding !== 'utf-8') ||
      (offset != null && typeof offset === 'number' && !isPosition(offset))) {
    return Reflect.apply(node.write, this, arguments)
  }
  const bytes = Buffer.from(buffer, 'utf8')
  const at = typeof offset === 'number' ? offset : -1
  submitOn(fd, native.writeBuffers(fd, [bytes], at), callback, undefined, (n) => callback(null, n, buffer), 0, buffer)
}

/** Views of bytes fairfs writes as they are: no holes, nothing empty or detached. */
function writable(buffers) {
  if (!Array.isArray(buffers)) return false
  for (let i = 0; i < buffers.length; i++) {
    const b = buffers[i]
    if (!ArrayBuffer.isView(b) || b.byteLength === 0) return false
  }
  return true
}

/** `fs.writev(fd, buffers[, position], callback)`. */
function writev(fd, buffers, position, callback) {
  callback ||= position
  if (!serves() || !isFd(fd) || !writable(buffers) ||
      typeof callback !== 'function' || buffers.length === 0 || (typeof position === 'number' && !isPosition(position))) {
    return Reflect.apply(node.writev, this, arguments)
  }
  const views = buffers.map((b) => (Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength)))
  const at = typeof position === 'number' ? position : -1
  submitOn(fd, native.writeBuffers(fd, views, at), callback, undefined, (n) => callback(null, n, buffers), 0, buffers)
}

/** `fs.fsync(fd, callback)` and `fs.fdatasync(fd, callback)`. */
function syncer(name, dataOnly) {
  return {
    [name](fd, callback) {
      if (!serves() || !isFd(fd) || typeof callback !== 'function') return Reflect.apply(node[name], this, arguments)
      submitOn(fd, native.syncFd(fd, dataOnly), callback, undefined, () => callback(null))
    },
  }[name]
}

// close's callbacks, as node:fs calls them: `(null)` or `(err)`, one argument.
const callOnlyNull = (callback) => callback(null)
const callWithError = (callback, err) => callback(err)

/** node:fs's default callback of `fs.close`: an error is thrown, uncaught. */
function defaultCloseCallback(err) {
  if (err != null) throw err
}

/**
 * `fs.close(fd[, callback])`: after the fd's earlier writes. An fd opened for reading
 * only, of a file on a local mount, with none of fairfs's requests in flight, is
 * closed on this thread (a close that cannot wait, as a read stream's); the callback
 * still comes in a macrotask of its own, as node:fs's does. With many calls in flight
 * (pilingUp), one with none of fairfs's requests on it is node:fs's own close, on
 * libuv's threads (at c=64 the pool's close cost the JS thread a submit and a delivery:
 * 75k open + close pairs/s against 133k).
 */
function close(fd, callback = defaultCloseCallback) {
  if (!serves() || !isFd(fd) || typeof callback !== 'function') return Reflect.apply(node.close, this, arguments)
  if (!busy.has(fd) && pilingUp()) return Reflect.apply(node.close, this, [fd, countedUntilCalled(callback)])
  const closed = !busy.has(fd) && settings.fastPath ? native.closeReadOnlyCached(fd) : false
  if (closed === true) return void later(callOnlyNull, callback)
  if (closed) return void later(callWithError, callback, nativeError(closed))
  submit(native.closeInOrder(fd), callback, undefined, () => callback(null))
}

/** `fs.open(path[, flags[, mode]], callback)`: for writing on the pool; for reading, see below. */
function open(path, flags, mode, callback) {
  if (!serves() || arguments.length < 2) return Reflect.apply(node.open, this, arguments)
  if (arguments.length === 2) {
    // fs.open(path, callback): for reading.
    if (typeof flags !== 'function') return Reflect.apply(node.open, this, arguments)
    callback = flags
    flags = undefined
    mode = undefined
  } else if (typeof mode === 'function') {
    callback = mode
    mode = 0o666
  }
  let target, flagsNumber
  try {
    target = validatePath(path)
    mode = parseFileMode(mode, 'mode', 0o666)
    flagsNumber = stringToFlags(flags)
  } catch {
    return Reflect.apply(node.open, this, arguments) // node:fs's error for it
  }
  if (typeof callback !== 'function') return Reflect.apply(node.open, this, arguments)
  if (readOnly(flagsNumber)) {
    // A regular file whose lookup is cached, on a local mount: opened on this thread,
    // the callback in a macrotask of its own. Anything else (a FIFO waits for a
    // writer, a leased file for its lease), and every open while many calls are in
    // flight (they would queue on this thread), is node:fs's own open.
    // That open is untimed while calls pile up: the time would be mostly libuv's
    // queue, and timing it and reporting it cost this thread a third of the open.
    if (pilingUp()) return node.open(path, flags, mode, countedUntilCalled(callback))
    if (!settings.fastPath) return Reflect.apply(node.open, this, arguments)
    const fd = native.openForCallerCached(target.native, flagsNumber)
    if (fd !== null) return void later(callback, null, fd)
    // node:fs's open, timed: quick ones earn the mount this thread's opens.
    const started = performance.now()
    const args = [...arguments]
    args[args.length - 1] = countedUntilCalled(function (err, opened) {
      if (err == null) native.observeOpen(opened, performance.now() - started)
      return Reflect.apply(callback, this, arguments)
    })
    return Reflect.apply(node.open, this, args)
  }
  submit(native.openPath(target.native, flagsNumber, mode), callback, target.display, (fd) => {
    // The caller's fd now: an environment's teardown leaves it open, as node:fs does.
    native.forgetFd(fd)
    callback(null, fd)
  })
}

// util.promisify gives node:fs's { bytesWritten, buffer } for these: the same marker.
for (const [name, ours] of [['write', write], ['writev', writev]]) {
  for (const symbol of Object.getOwnPropertySymbols(node[name])) {
    Object.defineProperty(ours, symbol, Object.getOwnPropertyDescriptor(node[name], symbol))
  }
}

const primitives = {
  open,
  write,
  writev,
  fsync: syncer('fsync', false),
  fdatasync: syncer('fdatasync', true),
  close,
}

/** Whether `fn` is one of fairfs's primitives (install() puts them on node:fs). */
function isOurs(fn) {
  return Object.values(primitives).includes(fn)
}

module.exports = { primitives: kNative ? primitives : null, node, isOurs }
