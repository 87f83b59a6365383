'use strict'
// stat, lstat, access, realpath and readdir on fairfs's pool (src/jobs/metadata.rs), with node:fs's
// results and errors, in callback and promise forms. Metadata calls are small jobs:
// they wait behind no big read's chunks and never queue on libuv's threads behind
// crypto, zlib or dns.lookup.
//
// Arguments: a call fairfs takes as it is (a string, Buffer or file: URL path without
// NUL bytes, a callback, an access mode node:fs accepts) goes to the pool; any other
// goes to node:fs's own function, which throws or rejects exactly as node:fs does on
// this Node line (their messages differ between lines).

const { Buffer } = require('node:buffer')
const nodeFs = require('node:fs')

const { Dirent } = nodeFs
const { binding, trackQuery: track, nativeError, statsOfBatch, pilingUp, later } = require('./native')
const { acceptedPath } = require('./args')
const { statsFromSlots, bigIntStatsFromSlots } = require('./stats-object')
const { hold } = require('./filehandle')
const { current: settings } = require('./settings')
const { withCallerStack } = require('./errors')

const { F_OK, R_OK, W_OK, X_OK } = nodeFs.constants
/** node:fs's own functions, taken before install() replaces them. */
const node = {
  stat: nodeFs.stat,
  lstat: nodeFs.lstat,
  access: nodeFs.access,
  realpathNative: nodeFs.realpath.native,
  readdir: nodeFs.readdir,
  promises: {
    stat: nodeFs.promises.stat,
    lstat: nodeFs.promises.lstat,
    access: nodeFs.promises.access,
    realpath: nodeFs.promises.realpath,
    readdir: nodeFs.promises.readdir,
  },
}

/** Whether the addon answers metadata calls (every unix; not Windows yet). */
const supported = typeof binding.statPath === 'function'

const kMaxAccessMode = F_OK | R_OK | W_OK | X_OK

/** An access mode node:fs takes (its getValidMode), with its default. */
function acceptedMode(mode) {
  if (mode == null) return F_OK
  return Number.isInteger(mode) && mode >= 0 && mode <= kMaxAccessMode ? mode : null
}

/** Calls `done(error, stats)` with the outcome of stat request `id`. */
function trackStats(id, bigint, display, done) {
  track(id, (result) => {
    if (typeof result !== 'number') return done(nativeError(result, display))
    const [numbers, bigints] = statsOfBatch()
    done(undefined, bigint ? bigIntStatsFromSlots(bigints, 18 * result) : statsFromSlots(numbers, 18 * result))
  })
}

/**
 * The encoding of a realpath result that fairfs takes as it is (node:fs's getOptions
 * and assertEncoding would pass it): 'buffer' or one Buffer knows; null otherwise.
 */
function acceptedEncoding(options) {
  if (options == null || typeof options === 'function') return 'utf8'
  const encoding = typeof options === 'string' ? options : typeof options === 'object' ? options.encoding : null
  if (encoding === undefined) return 'utf8'
  return encoding === 'buffer' || (typeof encoding === 'string' && Buffer.isEncoding(encoding)) ? encoding : null
}

/** Submits a realpath of `target` and calls `done(error, path)` with it in `encoding`. */
function submitRealpath(target, encoding, done) {
  track(binding.realpathPath(target.native), (result) => {
    if (!Buffer.isBuffer(result)) return done(nativeError(result, target.display))
    done(undefined, encoding === 'buffer' ? result : result.toString(encoding))
  })
}

/**
 * readdir's options that fairfs takes as they are: `{ encoding, withFileTypes }`; null
 * for anything node:fs must judge or does itself (`recursive`).
 */
function acceptedReaddirOptions(options) {
  const encoding = acceptedEncoding(options)
  if (encoding === null) return null
  const object = options !== null && typeof options === 'object' ? options : {}
  if (object.recursive != null && object.recursive !== false) return null
  return { encoding, withFileTypes: Boolean(object.withFileTypes) }
}

/**
 * Submits a scan of directory `target` and calls `done(error, entries)`: names in
 * `encoding`, or fs.Dirent objects; `done(undefined, null)` where the file system
 * did not give every entry's type, which node:fs then finds itself.
 */
function submitScandir(target, { encoding, withFileTypes }, done) {
  track(binding.scandirPath(target.native), (result) => {
    if (!Buffer.isBuffer(result)) return done(nativeError(result, target.display))
    const entries = entryNames(result, encoding)
    if (!withFileTypes) return done(undefined, entries)
    for (let i = 0; i < entries.length; i++) {
      const type = result[4 + i]
      if (type === 0) return done(undefined, null)
      entries[i] = new Dirent(entries[i], type, target.path)
    }
    done(undefined, entries)
  })
}

/**
 * The names of a scan packed by src/jobs/metadata.rs's pack_entries (a u32 count, a
 * type byte each, the names joined by NUL), in `encoding`. UTF-8 (the default) and
 * latin1 decode all the names at once and split them: a NUL ends any unfinished UTF-8
 * sequence, so each name decodes as it would alone.
 */
function entryNames(packed, encoding) {
  const count = packed.readUInt32LE(0)
  const start = 4 + count
  if (count === 0) return []
  if (encoding === 'utf8' || encoding === 'utf-8' || encoding === 'latin1') return packed.toString(encoding, start).split('\0')
  const names = new Array(count)
  for (let i = 0, at = start; i < count; i++) {
    let end = packed.indexOf(0, at)
    if (end === -1) end = packed.length
    if (encoding === 'buffer') {
      names[i] = Buffer.allocUnsafeSlow(end - at)
      packed.copy(names[i], 0, at, end)
    } else {
      names[i] = packed.toString(encoding, at, end)
    }
    at = end + 1
  }
  return names
}

/** The slots binding.statCached fills, one array for every call (this thread's own). */
const kCachedNumbers = new Float64Array(18)
const kCachedBigInts = new BigInt64Array(18)

/**
 * A stat (`follow`) or lstat of `target`, answered on this thread where Linux can do
 * it without blocking (configure({ fastPath }), src/cached.rs), else by the pool:
 * `done(error, stats)` is called later either way, in a macrotask of its own, so
 * that a loop of cached stats still lets timers and I/O run. A miss the dentry cache
 * knows (`[errno, syscall]`) takes the route a hit takes, so that hits and misses
 * complete in the order node:fs's would.
 */
function submitStat(follow, target, bigint, done) {
  const slots = bigint ? kCachedBigInts : kCachedNumbers
  // pilingUp first: the setting is asked of the addon (a call into it).
  const answer = !pilingUp() && settings.fastPath ? binding.statCached(target.native, follow, slots) : null
  if (answer === true) {
    // Read at once: the next call fills the same slots.
    return later(done, undefined, bigint ? bigIntStatsFromSlots(slots) : statsFromSlots(slots))
  }
  if (answer !== null) return later(done, nativeError(answer, target.display))
  trackStats(binding.statPath(target.native, follow, bigint), bigint, target.display, done)
}

/**
 * An access check of `target`, answered on this thread where Linux can do it without
 * blocking (as submitStat's), else by the pool: `done(error)` in a macrotask of its own.
 */
function submitAccess(target, mode, done) {
  const answer = !pilingUp() && settings.fastPath ? binding.accessCached(target.native, mode) : null
  if (answer === true) return later(done)
  if (answer) return later(done, nativeError(answer, target.display))
  track(binding.accessPath(target.native, mode), (result) => done(result === undefined ? undefined : nativeError(result, target.display)))
}

/** `fn` named `name`, as node:fs's own function is. */
const named = (name, fn) => Object.defineProperty(fn, 'name', { value: name })

/** fs.stat / fs.lstat: `(path, options?, callback)`. */
function statCallback(kind) {
  const follow = kind === 'stat'
  return named(kind, function (path, options = { bigint: false }, callback) {
    if (typeof options === 'function') {
      callback = options
      options = {}
    }
    const target = typeof callback === 'function' && options !== null ? acceptedPath(path) : null
    if (target === null) return Reflect.apply(node[kind], undefined, arguments)
    // Called as node:fs calls it: with `this` undefined, and (null, stats) on success.
    submitStat(follow, target, Boolean(options.bigint), (error, stats) => (error ? callback(error) : callback(null, stats)))
  })
}

/** fs.access(path, mode?, callback). */
function access(path, mode, callback) {
  if (typeof mode === 'function') {
    callback = mode
    mode = F_OK
  }
  const valid = acceptedMode(mode)
  const target = typeof callback === 'function' && valid !== null ? acceptedPath(path) : null
  if (target === null) return Reflect.apply(node.access, undefined, arguments)
  submitAccess(target, valid, (error) => (error ? callback(error) : callback(null)))
}

/** fs.realpath.native(path, options?, callback): one realpath(3), as libuv makes it. */
function realpathNative(path, options, callback) {
  callback ||= options
  const encoding = typeof callback === 'function' ? acceptedEncoding(options) : null
  const target = encoding !== null ? acceptedPath(path) : null
  if (target === null) return Reflect.apply(node.realpathNative, undefined, arguments)
  submitRealpath(target, encoding, (error, resolved) => (error ? callback(error) : callback(null, resolved)))
}

/** fs.readdir(path, options?, callback). */
function readdir(path, options, callback) {
  if (typeof options === 'function') {
    callback = options
    options = undefined
  }
  const accepted = typeof callback === 'function' ? acceptedReaddirOptions(options) : null
  const target = accepted !== null ? acceptedPath(path) : null
  if (target === null) return Reflect.apply(node.readdir, undefined, arguments)
  submitScandir(target, accepted, (error, entries) => {
    if (error) return callback(error)
    if (entries === null) return node.readdir(path, options, callback)
    callback(null, entries)
  })
}

/** fs.promises.stat / lstat. */
function statPromise(kind) {
  const follow = kind === 'stat'
  return named(kind, async function (path, options = { bigint: false }) {
    const target = options !== null ? acceptedPath(path) : null
    if (target === null) return node.promises[kind](path, options)
    return await new Promise((resolve, reject) =>
      submitStat(follow, target, Boolean(options.bigint), (error, stats) => (error ? reject(error) : resolve(stats))),
    ).then(undefined, withCallerStack)
  })
}

/** fs.promises.access(path, mode?). */
async function accessPromise(path, mode = F_OK) {
  const valid = acceptedMode(mode)
  const target = valid !== null ? acceptedPath(path) : null
  if (target === null) return node.promises.access(path, mode)
  return await new Promise((resolve, reject) => submitAccess(target, valid, (error) => (error ? reject(error) : resolve()))).then(
    undefined,
    withCallerStack,
  )
}

/**
 * A FileHandle's stat(options): an fstat of its fd on the pool, holding the handle
 * open meanwhile (close() waits for it, as for node's own operations).
 */
async function handleStat(handle, options = { bigint: false }) {
  const bigint = Boolean(options.bigint)
  const release = hold(handle)
  try {
    return await new Promise((resolve, reject) =>
      trackStats(binding.fstatFd(handle.fd, bigint), bigint, undefined, (error, stats) => (error ? reject(error) : resolve(stats))),
    ).then(undefined, withCallerStack)
  } finally {
    release()
  }
}

/** fs.promises.realpath(path, options?). */
async function realpathPromise(path, options) {
  const encoding = acceptedEncoding(options)
  const target = encoding !== null ? acceptedPath(path) : null
  if (target === null) return node.promises.realpath(path, options)
  return await new Promise((resolve, reject) => submitRealpath(target, encoding, (error, p) => (error ? reject(error) : resolve(p)))).then(
    undefined,
    withCallerStack,
  )
}

/** fs.promises.readdir(path, options?). */
async function readdirPromise(path, options) {
  const accepted = acceptedReaddirOptions(options)
  const target = accepted !== null ? acceptedPath(path) : null
  if (target === null) return node.promises.readdir(path, options)
  const entries = await new Promise((resolve, reject) => submitScandir(target, accepted, (error, e) => (error ? reject(error) : resolve(e)))).then(
    undefined,
    withCallerStack,
  )
  return entries ?? node.promises.readdir(path, options)
}

module.exports = {
  /** node:fs's own functions, taken at load: what runs where the addon has none. */
  node,
  acceptedEncoding,
  handleStat,
  readdir: named('readdir', readdir),
  realpathNative: named('realpathNative', realpathNative),
  supported,
  stat: statCallback('stat'),
  lstat: statCallback('lstat'),
  access,
  promises: {
    stat: statPromise('stat'),
    lstat: statPromise('lstat'),
    access: named('access', accessPromise),
    realpath: named('realpath', realpathPromise),
    readdir: named('readdir', readdirPromise),
  },
}
