'use strict'
// unlink, rename and mkdir on fairfs's pool (src/jobs/mutate.rs), callback and promise
// forms, with node:fs's results and errors: a server's per-request changes to names
// (an upload's cleanup, an atomic write's rename, a cache's directory) no longer queue
// on libuv's threads behind crypto, zlib or dns.lookup.
//
// A call fairfs takes as it is (string, Buffer or file: URL paths without NUL bytes, a
// callback, a mode node:fs accepts) goes to the pool; any other goes to node:fs's own
// function, which throws or rejects exactly as node:fs does on this Node line. So does
// `mkdir` with `recursive` (node:fs's walk, its result the first directory made).

const nodeFs = require('node:fs')
const { binding, track, nativeError } = require('./native')
const { acceptedPath, parseFileMode } = require('./args')
const { withCallerStack } = require('./errors')

/** node:fs's own functions, taken before install() replaces them. */
const node = {
  unlink: nodeFs.unlink,
  rename: nodeFs.rename,
  mkdir: nodeFs.mkdir,
  promises: { unlink: nodeFs.promises.unlink, rename: nodeFs.promises.rename, mkdir: nodeFs.promises.mkdir },
}

/** Whether the addon makes these changes (every unix; not Windows yet). */
const supported = typeof binding.mutatePath === 'function'

const kUnlink = 0
const kRename = 1
const kMkdir = 2

/** Runs a change; `done(err)` once. */
function submit(kind, target, dest, mode, done) {
  const id = binding.mutatePath(kind, target.native, dest?.native ?? null, mode)
  track(id, (result) => done(result === undefined ? null : nativeError(result, target.display, dest?.display)))
}

/** mkdir's options as node:fs reads them: `{ mode, recursive }`, or null where node:fs must judge them. */
function mkdirOptions(options) {
  let mode = 0o777
  let recursive = false
  try {
    if (typeof options === 'number' || typeof options === 'string') {
      mode = parseFileMode(options, 'mode')
    } else if (options && typeof options !== 'function') {
      if (options.recursive !== undefined) recursive = options.recursive
      if (options.mode !== undefined) mode = parseFileMode(options.mode, 'options.mode')
    }
  } catch {
    return null
  }
  return recursive === false ? { mode } : null
}

function unlink(path, callback) {
  const target = acceptedPath(path)
  if (!target || typeof callback !== 'function') return Reflect.apply(node.unlink, this, arguments)
  submit(kUnlink, target, undefined, 0, (err) => callback(err))
}

function rename(oldPath, newPath, callback) {
  const [from, to] = [acceptedPath(oldPath), acceptedPath(newPath)]
  if (!from || !to || typeof callback !== 'function') return Reflect.apply(node.rename, this, arguments)
  submit(kRename, from, to, 0, (err) => callback(err))
}

function mkdir(path, options, callback) {
  if (typeof options === 'function') callback = options
  const target = acceptedPath(path)
  const opts = mkdirOptions(options)
  if (!target || !opts || typeof callback !== 'function') return Reflect.apply(node.mkdir, this, arguments)
  submit(kMkdir, target, undefined, opts.mode, (err) => callback(err))
}

/** A change as a promise whose error shows its caller (lib/errors.js withCallerStack). */
const promise = (start) => new Promise((resolve, reject) => start((err) => (err ? reject(err) : resolve()))).then(undefined, withCallerStack)

const promises = {
  unlink(path) {
    const target = acceptedPath(path)
    if (!target) return node.promises.unlink(path)
    return promise((done) => submit(kUnlink, target, undefined, 0, done))
  },
  rename(oldPath, newPath) {
    const [from, to] = [acceptedPath(oldPath), acceptedPath(newPath)]
    if (!from || !to) return node.promises.rename(oldPath, newPath)
    return promise((done) => submit(kRename, from, to, 0, done))
  },
  mkdir(path, options) {
    const target = acceptedPath(path)
    const opts = mkdirOptions(options)
    if (!target || !opts) return node.promises.mkdir(path, options)
    return promise((done) => submit(kMkdir, target, undefined, opts.mode, done))
  },
}

module.exports = supported ? { supported, unlink, rename, mkdir, promises } : { supported, ...node }
