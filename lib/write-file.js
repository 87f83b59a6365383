'use strict'
// The JS half of a whole-file write: fs.writeFile, fs.appendFile, their fs.promises
// forms and a FileHandle's writeFile()/appendFile(). node:fs's argument handling, in
// its order and with its errors; then one native request (open, a chunk per step on
// the pool, fsync with `flush`, close) that writes straight from the caller's Buffer
// (a string is encoded once, here), instead of node:fs's open, write and close trips
// through libuv's pool.
//
// node:fs's own function serves where fairfs would not do what it does:
// * node:fs's binding is mocked (mock-fs, lib/mocked.js);
// * the callback forms, when a caller replaced fs.open, fs.write, fs.fsync or fs.close
//   on the module since fairfs loaded: node:fs's writeFile calls them at each step, and
//   callers (Node's own tests, instrumentation) replace them to see or fail those steps;
// * the promise forms, for data that is an (async) iterable or a stream: node:fs
//   writes it item by item as it comes;
// * where the addon has no writes (Windows), and for a caller's fds there.

const { Buffer } = require('node:buffer')
const fsModule = require('node:fs')
const { binding: native, trackWrite: track, nativeError } = require('./native')
const { getOptions, stringToFlags, validatePath, parseFileMode, validateBoolean, isInt32, isFileHandle, copyOptions } = require('./args')
const { invalidArgType, outOfRange, AbortError, withCallerStack } = require('./errors')
const { watchSignal, unwatchSignal } = require('./signals')
const { hold } = require('./filehandle')
const { nodeServes } = require('./mocked')
const { isOurs } = require('./fd-writes')

/** node:fs's functions as they were when fairfs loaded, before install() patches them. */
const node = {
  writeFile: fsModule.writeFile,
  appendFile: fsModule.appendFile,
  promises: { writeFile: fsModule.promises.writeFile, appendFile: fsModule.promises.appendFile },
}

/** The module's functions node:fs's callback writeFile calls at each step, as at load. */
const kSteps = ['open', 'write', 'fsync', 'close']
const stepsAtLoad = kSteps.map((name) => fsModule[name])

/** Whether a caller replaced one of the steps node:fs's callback writeFile calls (fairfs's own are not a caller's). */
function stepsReplaced() {
  for (let i = 0; i < kSteps.length; i++) {
    const fn = fsModule[kSteps[i]]
    if (fn !== stepsAtLoad[i] && !isOurs(fn)) return true
  }
  return false
}

const kWriteDefaults = Object.freeze({ encoding: 'utf8', mode: 0o666, flag: 'w', flush: false })
const kAppendDefaults = Object.freeze({ encoding: 'utf8', mode: 0o666, flag: 'a' })

/** The addon writes (unix builds); on Windows node:fs does. */
const kNative = typeof native.writePath === 'function'

/** node:fs's check of `data`, then its bytes as a Buffer over the same memory (a string encoded once). */
function toBytes(data, encoding) {
  if (ArrayBuffer.isView(data)) {
    return Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength)
  }
  if (typeof data !== 'string') {
    throw invalidArgType('data', 'of type string or an instance of Buffer, TypedArray, or DataView', data)
  }
  return Buffer.from(data, encoding || 'utf8')
}

/** node:fs/promises's isCustomIterable: what its writeFile writes item by item. */
function isCustomIterable(data) {
  if (data == null || typeof data === 'string' || ArrayBuffer.isView(data)) return false
  return typeof data[Symbol.iterator] === 'function' || typeof data[Symbol.asyncIterator] === 'function'
}

function abortError(signal) {
  return new AbortError(undefined, { cause: signal?.reason })
}

/**
 * Submits the write and calls `done(err)` once with its outcome. `release` (a held
 * FileHandle's) runs first. `display` is the path errors name.
 */
function submit(id, signal, display, release, done, lateAbort = true) {
  track(id, (result) => {
    if (signal) unwatchSignal(signal, id)
    release?.()
    // undefined: written (and closed); null: cancelled by the signal; else the error.
    // A write that finished after its signal was aborted still ends as aborted: from
    // the caller's side it was in flight, and node:fs, which looks at the signal
    // between its trips (after the open, before each write), reports an abort made
    // then. As node:fs documents, an aborted write may have written some or all.
    // An fd's write is one trip in node:fs, issued before such an abort: it succeeds.
    if (result === null || (lateAbort && signal?.aborted && result === undefined)) return done(abortError(signal))
    done(result === undefined ? null : nativeError(result, display))
  })
  if (signal) watchSignal(signal, id)
}

/**
 * Writes `bytes` to the path (validated here, in node:fs's open's order: path, then
 * mode and flags in the order `pathFirst` names). `writeEmpty`: see writeFd.
 */
function writePath(path, bytes, options, flush, done, pathFirst, writeEmpty) {
  const { native: nativePath, display } = validatePath(path)
  let mode, flags
  if (pathFirst === 'mode') {
    mode = parseFileMode(options.mode, 'mode', 0o666)
    flags = stringToFlags(options.flag || 'w')
  } else {
    flags = stringToFlags(options.flag || 'w')
    mode = parseFileMode(options.mode, 'mode', 0o666)
  }
  submit(native.writePath(nativePath, flags, mode, bytes, flush, writeEmpty), options.signal, display, undefined, done)
}

/**
 * `fs.writeFile(file, data[, options], callback)`, as node:fs does it (lib/fs.js
 * writeFile): an fd is written at its position and left open; an aborted signal calls
 * back at once, as node:fs's checkAborted does.
 */
function writeFileCallback(path, data, options, callback) {
  callback ||= options
  if (typeof callback !== 'function') throw invalidArgType('cb', 'of type function', callback)
  if (!kNative || nodeServes() || stepsReplaced()) return node.writeFile(path, data, options, callback)
  options = getOptions(options, kWriteDefaults)
  const flush = options.flush ?? false
  validateBoolean(flush, 'options.flush')
  const bytes = toBytes(data, options.encoding)
  const done = (err) => callback(err)
  if (isInt32(path)) {
    if (options.signal?.aborted) return callback(abortError(options.signal))
    if (path < 0) throw outOfRange('fd', '>= 0 && <= 2147483647', path)
    // node:fs's callback form writes even nothing (one write(2), which fails on an fd
    // not open for writing); its promise form writes nothing then.
    submit(native.writeFd(path, bytes, flush, true), options.signal, undefined, undefined, done, false)
    return
  }
  if (options.signal?.aborted) return callback(abortError(options.signal))
  writePath(path, bytes, options, flush, done, 'mode', true)
}

/** `fs.appendFile(file, data[, options], callback)`: writeFile with flag 'a' (forced for an fd). */
function appendFileCallback(path, data, options, callback) {
  callback ||= options
  if (typeof callback !== 'function') throw invalidArgType('cb', 'of type function', callback)
  options = copyOptions(getOptions(options, kAppendDefaults))
  if (!options.flag || isInt32(path)) options.flag = 'a'
  // node:fs's appendFile calls the module's writeFile: a caller's replacement is called.
  const writeFile = fsModule.writeFile
  if (writeFile !== node.writeFile && writeFile !== api.writeFileCallback) return writeFile(path, data, options, callback)
  return writeFileCallback(path, data, options, callback)
}

/** `fs.promises.writeFile(file, data[, options])`, as node:fs/promises does it. */
async function writeFilePromise(path, data, options) {
  if (!kNative || nodeServes()) return node.promises.writeFile(path, data, options)
  const given = options
  options = getOptions(options, kWriteDefaults)
  const flush = options.flush ?? false
  validateBoolean(flush, 'options.flush')
  if (isCustomIterable(data)) return node.promises.writeFile(path, data, given)
  const bytes = toBytes(data, options.encoding)
  const { signal } = options
  if (isFileHandle(path)) return writeHandle(path, bytes, signal)
  if (signal?.aborted) throw abortError(signal)
  return await new Promise((resolve, reject) => {
    writePath(path, bytes, options, flush, (err) => (err ? reject(err) : resolve()), 'flags', false)
  }).then(undefined, withCallerStack)
}

/** `fs.promises.appendFile(file, data[, options])`: writeFile with flag 'a'. */
function appendFilePromise(path, data, options) {
  try {
    options = copyOptions(getOptions(options, kAppendDefaults))
  } catch (err) {
    return Promise.reject(err)
  }
  options.flag ||= 'a'
  return writeFilePromise(path, data, options)
}

/**
 * Writes to a FileHandle at its position, as node:fs/promises's writeFileHandle (no
 * flush: node:fs syncs only files it opened). The handle stays open until the write is
 * done: its close() waits (lib/filehandle.js).
 */
function writeHandle(handle, bytes, signal) {
  if (handle.fd === -1) return node.promises.writeFile(handle, bytes) // node:fs's error for a closed handle
  if (signal?.aborted) return Promise.reject(abortError(signal))
  if (bytes.byteLength === 0) return Promise.resolve()
  return new Promise((resolve, reject) => {
    const release = hold(handle)
    let id
    try {
      id = native.writeFd(handle.fd, bytes, false, false)
    } catch (err) {
      release()
      throw err
    }
    // One write in node:fs up to its 512 KiB chunk, after which it looks at the signal again.
    submit(id, signal, undefined, release, (err) => (err ? reject(err) : resolve()), bytes.byteLength > 512 * 1024)
  })
}

/**
 * fairfs's own `writeFile`/`appendFile`: with a callback as the last argument they
 * call it; otherwise they return a promise (an integer fd is accepted there too, as
 * readFile's promise form accepts one).
 */
function dual(callbackForm, promiseForm) {
  return function (path, data, options, callback) {
    if (typeof options === 'function' && callback === undefined) return callbackForm(path, data, undefined, options)
    if (callback !== undefined) return callbackForm(path, data, options, callback)
    if (isInt32(path)) {
      return new Promise((resolve, reject) => callbackForm(path, data, options, (err) => (err ? reject(err) : resolve())))
    }
    return promiseForm(path, data, options)
  }
}

/** `fs.writeFile`'s exact shape (callback required), for install(). */
function writeFileCallbackOnly(path, data, options, callback) {
  return writeFileCallback(path, data, options, callback)
}

/** `fs.appendFile`'s exact shape, for install(). */
function appendFileCallbackOnly(path, data, options, callback) {
  return appendFileCallback(path, data, options, callback)
}

/** FileHandle#writeFile / #appendFile: a closed handle gets node:fs's own error. */
function handleMethods(original) {
  return {
    writeFile(data, options) {
      if (this.fd === -1 || !kNative || nodeServes()) return original.writeFile.call(this, data, options)
      return writeFilePromise(this, data, options)
    },
    appendFile(data, options) {
      if (this.fd === -1 || !kNative || nodeServes()) return original.appendFile.call(this, data, options)
      return appendFilePromise(this, data, options)
    },
  }
}

const api = {
  writeFile: dual(writeFileCallback, writeFilePromise),
  appendFile: dual(appendFileCallback, appendFilePromise),
  writeFileCallback: writeFileCallbackOnly,
  appendFileCallback: appendFileCallbackOnly,
  promises: { writeFile: writeFilePromise, appendFile: appendFilePromise },
  handleMethods,
}

module.exports = api
