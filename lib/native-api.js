'use strict'
// The native backend's front end: node:fs-compatible file reads on a fair, bounded
// native pool (index.js chooses it when the addon loads; lib/fallback.js otherwise).
//
// This file is the JS half of a read: argument handling (identical to node:fs),
// callbacks and promises, AbortSignal wiring, and turning native outcomes into
// node:fs results and errors. The native half (binding.js, generated) runs the
// read on fairfs's own threads and reports back once per batch of finished reads.

const { Buffer } = require('node:buffer')
const { constants: { O_RDONLY }, readFile: nodeReadFile } = require('node:fs') // before install() patches it
const { binding: native, track, nativeError, pilingUp, later } = require('./native')
const { getOptions, stringToFlags, validatePath, isInt32, isFileHandle } = require('./args')
const { invalidArgType, outOfRange, AbortError } = require('./errors')
const { validateConfigure, current, kFastPathMax } = require('./settings')
const { ReadStream, createReadStream } = require('./read-stream')
const { hold } = require('./filehandle')
const { watchSignal, unwatchSignal } = require('./signals')
const metadata = require('./metadata')
const writes = require('./write-file')
const { primitives } = require('./fd-writes')
const mutate = require('./mutate')
const copies = require('./copy-file')
const { nodeServes } = require('./mocked')
// node:fs's own functions behind fairfs's API (the node backend's), taken now, before
// install() patches node:fs: what serves every call while node:fs's binding is mocked
// (lib/mocked.js).
const nodeApi = require('./fallback')

// The fast paths are on or off for the whole process (worker_threads included), so
// this thread's setting is the addon's: configure({ fastPath }) sets it there, and
// FAIRFS_FAST_PATH=0 in the environment turns it off from the start.
Object.defineProperty(current, 'fastPath', {
  get: () => native.fastPathEnabled(),
  set: (on) => native.setFastPath(on),
  enumerable: true,
})

/** The metadata calls: on the pool where the addon answers them, else node:fs's own. */
const meta = metadata.supported ? metadata : metadata.node

/**
 * What a native outcome means for one read: `[err]` or `[null, data]`. An outcome
 * that arrives after an abort ends as aborted: from the caller's side the read was
 * still in flight, as node:fs's would be.
 */
function interpret(result, encoding, signal, path) {
  if (result === null || (signal?.aborted && (Buffer.isBuffer(result) || typeof result === 'string'))) {
    return [new AbortError(undefined, signal ? { cause: signal.reason } : undefined)]
  }
  // Text that needed no decoding arrives as a string already (see textWanted).
  if (typeof result === 'string') return [null, result]
  if (!Buffer.isBuffer(result)) return [nativeError(result, path)]
  if (!encoding) return [null, result]
  try {
    return [null, result.toString(encoding)]
  } catch (err) {
    return [err]
  }
}

function settle(req, result) {
  if (req.signal && req.id !== undefined) unwatchSignal(req.signal, req.id)
  req.release?.()
  const [err, data] = interpret(result, req.encoding, req.signal, req.path)
  return err ? req.done(err) : req.done(null, data)
}

/**
 * What the native side may hand back as a string instead of a Buffer: 1 for latin1
 * (every byte is one character), 2 for utf-8 and ascii (a file that is all ASCII is
 * the same string in latin1, checked on the pool thread); 0 for a Buffer.
 */
function textWanted(encoding) {
  switch (encoding) {
    case 'latin1': case 'binary': return 1
    case 'utf8': case 'utf-8': case 'ascii': return 2
    default: return 0
  }
}

/**
 * Starts a read of `path` with validated `options`; `done(err, data)` runs once,
 * always asynchronously. Throws for invalid arguments, like node:fs.
 * `allowFd`: integer fds are accepted (fs.readFile) or rejected (fs.promises.readFile).
 */
/**
 * On Windows a caller's integer fd indexes node.exe's own C runtime, which Node links
 * statically, so the addon's C runtime cannot resolve it (and aborts on an fd it does
 * not know). Reads of the caller's fds and FileHandles go to node:fs there; fds the
 * addon opens itself (paths, streams) stay in its own runtime.
 */
const kWindows = process.platform === 'win32'
const kForeignFds = kWindows

function start(path, options, done, allowFd) {
  const { signal, encoding } = options
  let fd = -1
  const handle = isFileHandle(path)
  if (handle || (allowFd && isInt32(path))) {
    fd = handle ? path.fd : path
    if (fd < 0) {
      // node:fs fails this from a later tick (uncatchably, in Node 20 to 24); we report it.
      process.nextTick(done, outOfRange('fd', '>= 0 && <= 2147483647', fd))
      return
    }
  }
  if (signal?.aborted) {
    process.nextTick(done, new AbortError(undefined, { cause: signal.reason }))
    return
  }
  if (fd >= 0 && kForeignFds) {
    const read = handle ? patcher.nodeHandleReadFile(path, options) : new Promise((resolve, reject) => nodeReadFile(fd, options, (err, data) => (err ? reject(err) : resolve(data))))
    read.then((data) => done(null, data), done)
    return
  }
  const req = { done, encoding, path: undefined, signal, id: undefined, release: undefined }
  let id
  if (fd >= 0) {
    // A FileHandle stays open until the read is done: its close() waits (lib/filehandle.js).
    if (handle) req.release = hold(path)
    id = native.readFd(fd, textWanted(encoding))
  } else {
    const flags = stringToFlags(options.flag, 'options.flag')
    const { native: nativePath, display } = validatePath(path)
    req.path = display
    if (flags === O_RDONLY && typeof nativePath === 'string' && !pilingUp() && current.fastPath) {
      const data = native.readCached(nativePath, flags, kFastPathMax, textWanted(encoding))
      if (typeof data === 'number') {
        // A FIFO or device it opened: the pool reads that fd (request `data`).
        id = data
      } else if (data !== null) {
        // A macrotask, like a completion from the pool: a loop of cached reads must
        // not starve I/O and timers the way a chain of nextTicks would.
        later(settle, req, data)
        return
      }
    }
    id ??= native.readPath(nativePath, flags, 0o666, textWanted(encoding))
  }
  req.id = id
  track(id, (result) => settle(req, result))
  if (signal) watchSignal(signal, id)
}

function readFileCallback(path, options, callback) {
  if (typeof callback !== 'function') throw invalidArgType('cb', 'of type function', callback)
  if (nodeServes()) return nodeApi.readFile(path, options, callback)
  start(path, getOptions(options), callback, true)
}

function readFilePromise(path, options, allowFd) {
  if (nodeServes()) return allowFd ? nodeApi.readFile(path, options) : nodeApi.promises.readFile(path, options)
  return new Promise((resolve, reject) => {
    start(path, getOptions(options), (err, data) => (err ? reject(err) : resolve(data)), allowFd)
  })
}

/**
 * Reads a whole file, like `fs.readFile`. With a callback as the last argument it
 * calls `callback(err, data)`; otherwise it returns a promise.
 *
 * @param {string | Buffer | URL | number | import('node:fs/promises').FileHandle} path
 *   A path, a `file:` URL, or an open fd / FileHandle (read from its position, not closed).
 * @param {string | { encoding?: BufferEncoding | null, flag?: string | number, signal?: AbortSignal }} [options]
 * @param {(err: Error | null, data?: Buffer | string) => void} [callback]
 * @returns {Promise<Buffer | string> | undefined}
 */
function readFile(path, options, callback) {
  if (typeof options === 'function' && callback === undefined) return readFileCallback(path, undefined, options)
  if (callback !== undefined) return readFileCallback(path, options, callback)
  return readFilePromise(path, options, true)
}

/**
 * Reads many files in one call; the results come in the order of `paths`. The reads
 * share the pool fairly with all other traffic.
 *
 * @param {Iterable<string | Buffer | URL | number>} paths
 * @param {string | { encoding?: BufferEncoding | null, flag?: string | number, signal?: AbortSignal, settle?: boolean }} [options]
 *   `settle: true` resolves with `{ status: 'fulfilled', value }` or
 *   `{ status: 'rejected', reason }` per file (like `Promise.allSettled`), so one bad
 *   path does not lose the others; otherwise the first error rejects the batch.
 * @returns {Promise<Array<Buffer | string> | Array<PromiseSettledResult<Buffer | string>>>}
 */
function readFiles(paths, options) {
  if (nodeServes()) return nodeApi.readFiles(paths, options)
  return new Promise((resolve, reject) => {
    if (paths == null || typeof paths[Symbol.iterator] !== 'function' || typeof paths === 'string') {
      throw invalidArgType('paths', 'an instance of Array', paths)
    }
    const list = Array.isArray(paths) ? paths : Array.from(paths)
    const opts = getOptions(options)
    const settleAll = opts.settle === true
    if (opts.signal?.aborted) throw new AbortError(undefined, { cause: opts.signal.reason })
    if (list.every((p) => typeof p === 'string' && !p.includes('\u0000'))) {
      return readStringPaths(list, opts, settleAll, resolve, reject)
    }
    const results = new Array(list.length)
    let left = list.length
    let failed = false
    if (left === 0) return resolve(results)
    for (let i = 0; i < list.length; i++) {
      const done = (err, data) => {
        if (failed) return
        if (settleAll) results[i] = err ? { status: 'rejected', reason: err } : { status: 'fulfilled', value: data }
        else if (err) {
          failed = true
          return reject(err)
        } else results[i] = data
        if (--left === 0) resolve(results)
      }
      try {
        start(list[i], opts, done, true)
      } catch (err) {
        done(err)
      }
    }
  })
}

/**
 * readFiles for plain string paths: the whole batch is one native request, so the
 * JS thread pays one call and one completion for all of it.
 */
function readStringPaths(list, options, settleAll, resolve, reject) {
  const { signal, encoding } = options
  // On Windows each path goes namespaced, and errors show it as node:fs's do (validatePath).
  const targets = kWindows ? list.map(validatePath) : null
  const id = native.readPaths(targets ? targets.map((target) => target.native) : list, stringToFlags(options.flag), 0o666)
  track(id, ([slabs, spans, others]) => {
    if (signal) unwatchSignal(signal, id)
    if (signal?.aborted) return reject(new AbortError(undefined, { cause: signal.reason }))
    const results = new Array(others.length)
    for (let i = 0; i < others.length; i++) {
      // Small results are views of shared slabs (see src/jobs/pack.rs); others[i] holds the rest.
      const slab = spans[3 * i]
      const outcome = slab < 0 ? others[i] : slabs[slab].subarray(spans[3 * i + 1], spans[3 * i + 1] + spans[3 * i + 2])
      const [err, value] = interpret(outcome, encoding, undefined, targets ? targets[i].display : list[i])
      if (settleAll) results[i] = err ? { status: 'rejected', reason: err } : { status: 'fulfilled', value }
      else if (err) return reject(err)
      else results[i] = value
    }
    resolve(results)
  })
  if (signal) watchSignal(signal, id)
}

/**
 * The promise API, like `fs.promises`. As in node:fs/promises, `path` may be a
 * FileHandle but not an integer fd.
 */
const promises = {
  /** @returns {Promise<Buffer | string>} */
  readFile(path, options) {
    return readFilePromise(path, options, false)
  },
  writeFile: writes.promises.writeFile,
  appendFile: writes.promises.appendFile,
  unlink: mutate.promises.unlink,
  rename: mutate.promises.rename,
  mkdir: mutate.promises.mkdir,
  copyFile: copies.promises.copyFile,
  stat: meta.promises.stat,
  lstat: meta.promises.lstat,
  access: meta.promises.access,
  realpath: meta.promises.realpath,
  readdir: meta.promises.readdir,
}

/**
 * Changes the pool and this thread's settings; index.d.ts (`ConfigureOptions`) says
 * what each option does and its range. Invalid values throw and change nothing.
 */
function configure(options) {
  const { threads, chunkSize, maxPooledBytes, readAhead, nice, maxLength, maxUnsizedLength, largeLimit, fastPath, maxOpenFiles, maxBytesInFlight, laneThreads, writeBehind } =
    validateConfigure(options)
  native.configure(threads, chunkSize, maxPooledBytes, nice, largeLimit, maxOpenFiles, maxBytesInFlight, laneThreads)
  if (maxLength !== undefined) native.setMaxLength(maxLength)
  if (maxUnsizedLength !== undefined) native.setMaxUnsizedLength(maxUnsizedLength)
  for (const [key, value] of Object.entries({ readAhead, maxLength, maxUnsizedLength, fastPath, writeBehind })) {
    if (value !== undefined) current[key] = value
  }
  if (writeBehind !== undefined && patcher.isInstalled()) writeBehind ? writeStreams.patch() : writeStreams.unpatch()
}

/**
 * `backend: 'native'`, the pool's counters and the buffer pool's (`pool`); index.d.ts
 * (`NativeStats`) says what each field counts.
 */
function stats() {
  const { readAhead, maxLength, maxUnsizedLength, fastPath, writeBehind } = current
  return { backend: 'native', ...native.stats(), readAhead, maxLength, maxUnsizedLength, fastPath, writeBehind }
}

/**
 * `fs.readFile`'s exact shape (callback required), for patching node:fs.
 * @param {string | Buffer | URL | number} path
 * @param {string | object | Function} options
 * @param {Function} [callback]
 */
function readFileCallbackOnly(path, options, callback) {
  if (typeof options === 'function' && callback === undefined) return readFileCallback(path, undefined, options)
  return readFileCallback(path, options, callback)
}

const patcher = require('./install')
const writeStreams = require('./write-stream')

/**
 * Makes node:fs use fairfs: `fs.readFile`, `fs.promises.readFile` and
 * `fs.createReadStream` are replaced. Idempotent; see `uninstall()`.
 */
function install() {
  patcher.install({ readFileCallback: readFileCallbackOnly, promises, createReadStream, metadata: metadata.supported ? meta : null, writes, primitives, writeStreams, mutate: mutate.supported ? mutate : null, copies: copies.supported ? copies : null })
}

/** Restores the node:fs functions `install()` replaced. */
function uninstall() {
  patcher.uninstall()
}

module.exports = {
  readFile,
  readFiles,
  writeFile: writes.writeFile,
  appendFile: writes.appendFile,
  unlink: mutate.unlink,
  rename: mutate.rename,
  mkdir: mutate.mkdir,
  copyFile: copies.copyFile,
  stat: meta.stat,
  lstat: meta.lstat,
  access: meta.access,
  readdir: meta.readdir,
  promises,
  createReadStream,
  ReadStream,
  configure,
  stats,
  install,
  uninstall,
  isInstalled: patcher.isInstalled,
}
