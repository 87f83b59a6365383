'use strict'
// The node backend: fairfs's API on node:fs, for where the native addon does not
// load (or FAIRFS_BACKEND=node). Every read is node:fs's own, so results and errors
// are node:fs's; what fairfs adds on top is its API: readFile's promise form (which,
// unlike fs.promises.readFile, takes an integer fd), readFiles, configure, stats.
// There is no pool, so no fairness and none of the native backend's speed.

const fs = require('node:fs')
const { getOptions, isInt32 } = require('./args')
const { invalidArgType, outOfRange, AbortError } = require('./errors')
const { validateConfigure, kIoMaxLength } = require('./settings')

// node:fs as it was when fairfs loaded, so that code patching node:fs later (with
// fairfs's functions, say) cannot send our calls back to us.
const { readFile: fsReadFile, createReadStream: fsCreateReadStream, ReadStream } = fs
const { readFile: fsPromisesReadFile } = fs.promises


/**
 * readFiles keeps at most this many reads in flight. Each holds an fd from open to
 * close, and a batch of 100,000 paths started at once would run out of them
 * (EMFILE: macOS's default soft limit is 256 fds, Linux's often 1,024). A read is
 * several trips through libuv's threadpool (4 threads by default: open, fstat, reads,
 * close), so 32 in flight keep it busy; more would only wait in its queue.
 */
const kReadFilesConcurrency = 32

/**
 * A negative fd makes node:fs throw ERR_OUT_OF_RANGE from a later tick, where no caller
 * can catch it (Node 20 to 24). As on the native backend, it is delivered instead;
 * everything else is node:fs's.
 */
const negativeFd = (path) => isInt32(path) && path < 0
const fdOutOfRange = (fd) => outOfRange('fd', '>= 0 && <= 2147483647', fd)

/** fs.readFile, callback required. */
function readFileCallback(path, options, callback) {
  if (typeof callback === 'function' && negativeFd(path)) {
    getOptions(options)
    process.nextTick(callback, fdOutOfRange(path))
    return
  }
  fsReadFile(path, options, callback)
}

/**
 * readFile's promise form: fs.promises.readFile, except that an integer fd is read
 * (with fs.readFile) rather than refused, as on the native backend.
 */
function readFilePromise(path, options) {
  if (!isInt32(path)) return fsPromisesReadFile(path, options)
  return new Promise((resolve, reject) => {
    getOptions(options)
    if (path < 0) throw fdOutOfRange(path)
    fsReadFile(path, options, (err, data) => (err ? reject(err) : resolve(data)))
  })
}

/** See index.d.ts: fs.readFile with a callback, a promise without. */
function readFile(path, options, callback) {
  if (typeof options === 'function' && callback === undefined) return readFileCallback(path, undefined, options)
  if (callback !== undefined) return readFileCallback(path, options, callback)
  return readFilePromise(path, options)
}

/**
 * readFiles on node:fs: the same checks, results in order, `settle`; at most
 * kReadFilesConcurrency reads at once. The first error rejects at once (without
 * `settle`); an abort rejects once the reads in flight have stopped and closed their
 * fds, as on the native backend.
 */
function readFiles(paths, options) {
  return new Promise((resolve, reject) => {
    if (paths == null || typeof paths[Symbol.iterator] !== 'function' || typeof paths === 'string') {
      throw invalidArgType('paths', 'an instance of Array', paths)
    }
    const list = Array.isArray(paths) ? paths : Array.from(paths)
    const opts = getOptions(options)
    const settleAll = opts.settle === true
    const { signal } = opts
    if (signal?.aborted) throw new AbortError(undefined, { cause: signal.reason })
    const results = new Array(list.length)
    if (list.length === 0) return resolve(results)
    let next = 0
    let done = 0
    let inFlight = 0
    let over = false
    let aborted = null
    const end = (err) => {
      over = true
      signal?.removeEventListener('abort', onAbort)
      if (err) reject(err)
      else resolve(results)
    }
    const onAbort = () => {
      over = true
      aborted = new AbortError(undefined, { cause: signal.reason })
    }
    const finished = (i, ok, outcome) => {
      inFlight--
      if (aborted) {
        if (inFlight === 0) reject(aborted)
        return
      }
      if (over) return
      if (!ok && !settleAll) return end(outcome)
      if (settleAll) results[i] = ok ? { status: 'fulfilled', value: outcome } : { status: 'rejected', reason: outcome }
      else results[i] = outcome
      if (++done === list.length) return end()
      if (next < list.length) start()
    }
    const start = () => {
      const i = next++
      inFlight++
      readFilePromise(list[i], opts).then(
        (value) => finished(i, true, value),
        (reason) => finished(i, false, reason),
      )
    }
    signal?.addEventListener('abort', onAbort, { once: true })
    while (next < list.length && inFlight < kReadFilesConcurrency) start()
  })
}

/** fs.promises.readFile itself: a FileHandle is accepted, a plain fd is not. */
const promises = {
  readFile: fsPromisesReadFile,
  writeFile: fs.promises.writeFile,
  appendFile: fs.promises.appendFile,
  unlink: fs.promises.unlink,
  rename: fs.promises.rename,
  mkdir: fs.promises.mkdir,
  copyFile: fs.promises.copyFile,
  stat: fs.promises.stat,
  lstat: fs.promises.lstat,
  access: fs.promises.access,
  realpath: fs.promises.realpath,
  readdir: fs.promises.readdir,
}

/**
 * node:fs's `write` (fs.writeFile or fs.appendFile) in fairfs's shape: with a callback
 * as the last argument it is node's; without, a promise, of fs.promises's form except
 * that an integer fd is written too (with the callback form), as on the native backend.
 */
function writeLike(callbackForm, promiseForm) {
  return function (path, data, options, callback) {
    if (typeof options === 'function' && callback === undefined) return callbackForm(path, data, options)
    if (callback !== undefined) return callbackForm(path, data, options, callback)
    if (typeof path === 'number' && path === (path | 0)) {
      return new Promise((resolve, reject) => callbackForm(path, data, options, (err) => (err ? reject(err) : resolve())))
    }
    return promiseForm(path, data, options)
  }
}

const writeFile = writeLike(fs.writeFile, fs.promises.writeFile)
const appendFile = writeLike(fs.appendFile, fs.promises.appendFile)

/**
 * What configure() was given (the last valid value of each option). It is kept and
 * shown by stats(), but no option has an effect here: there is no pool to size or
 * prioritise, no chunking, read-ahead or fast path, and `maxLength` is not enforced
 * (node:fs's own limit, stats().maxLength, applies).
 */
const configured = {}

/** Checks `options` exactly as the native backend does (same errors), and records them. */
function configure(options) {
  const valid = validateConfigure(options)
  for (const [key, value] of Object.entries(valid)) {
    if (value !== undefined) configured[key] = value
  }
}

/** `backend: 'node'`, the largest result node:fs reads, and what configure() recorded. */
function stats() {
  return { backend: 'node', maxLength: kIoMaxLength, configured: { ...configured } }
}

/**
 * fs.createReadStream, but a highWaterMark past kIoMaxLength fails the stream with
 * ERR_OUT_OF_RANGE, as on the native backend, where node:fs itself hangs or reads a
 * wrapped length (Node 20 to 24). ReadStream stays node:fs's own class, unchanged.
 */
function createReadStream(path, options) {
  const stream = fsCreateReadStream(path, options)
  const hwm = stream.readableHighWaterMark
  if (hwm > kIoMaxLength) {
    // Own property: node's Readable calls this._read(); the open still runs and is closed by destroy.
    stream._read = function () {
      this.destroy(outOfRange('options.highWaterMark', `>= 0 && <= ${kIoMaxLength}`, hwm))
    }
  }
  return stream
}

/** Does nothing: node:fs is already what runs. */
function install() {}

/** Does nothing: install() changed nothing. */
function uninstall() {}

/** Always false: install() never patches node:fs on this backend. */
function isInstalled() {
  return false
}

module.exports = {
  readFile,
  readFiles,
  writeFile,
  appendFile,
  unlink: fs.unlink,
  rename: fs.rename,
  mkdir: fs.mkdir,
  copyFile: fs.copyFile,
  stat: fs.stat,
  lstat: fs.lstat,
  access: fs.access,
  readdir: fs.readdir,
  promises,
  createReadStream,
  ReadStream,
  configure,
  stats,
  install,
  uninstall,
  isInstalled,
}
