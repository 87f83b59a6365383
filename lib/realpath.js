'use strict'
// Callback fs.realpath for install(), where node:fs's own would go wrong over fairfs.
//
// node:fs's fs.realpath walks a path one component at a time with fs.lstat, fs.stat and
// fs.readlink, called through the module, so once installed they are fairfs's. On
// Node 20 and 22 it learns whether the last link it followed led to a pipe or a
// socket (where the walk must stop: `/proc/self/fd/0` of a piped stdin) not from the
// stat it asked for but from the stat array node:fs's binding fills on each of its own
// stat calls. fairfs's stats do not fill it, so the walk went on into
// `/proc/<pid>/fd/pipe:[N]` and failed with ENOENT (Node's test-fs-realpath-pipe.js).
//
// Why a walk of our own rather than filling that array: the array is reachable only
// through process.binding('fs') (DEP0111: a warning under --pending-deprecation, a
// throw with --throw-deprecation too, ERR_ACCESS_DENIED under the permission model),
// and it holds the last stat made anywhere in the process, so even node:fs's own walk
// can read another call's file type. Node 24 stopped reading it: its walk takes the
// type from the fs.stat result it asked for. This is that walk (the same steps,
// callbacks and errors), and install() uses it only where node:fs's fs.realpath still
// reads the shared array; elsewhere node:fs's own runs.

const { Buffer } = require('node:buffer')
const nodeFs = require('node:fs')
const pathModule = require('node:path')
const { acceptedEncoding } = require('./metadata')
const { acceptedPath } = require('./args')

/** node:fs's fs.realpath, taken at load, before install() replaces it. */
const nodeRealpath = nodeFs.realpath

/**
 * Whether node:fs's walk reads the binding's shared stat array (`statValues`, Node 20
 * and 22): it then needs replacing while fairfs answers fs.stat.
 */
const nodeReadsSharedStats = /\bstatValues\b/.test(Function.prototype.toString.call(nodeRealpath))

/** The result in the encoding asked for, as node:fs's encodeRealpathResult makes it. */
function encoded(resolved, encoding) {
  if (encoding === 'utf8') return resolved
  const bytes = Buffer.from(resolved)
  return encoding === 'buffer' ? bytes : bytes.toString(encoding)
}

/** The leading slashes of an absolute path (its root, on POSIX). */
function rootOf(p) {
  let i = 0
  while (i < p.length && p[i] === '/') i++
  return p.slice(0, i)
}

/**
 * fs.realpath(path, options?, callback). Arguments it does not take as they are (no
 * callback, a bad encoding, a path that is not a string, Buffer or file: URL without
 * NUL bytes) go to node:fs's own function, which throws or coerces exactly as it does.
 */
function realpath(p, options, callback) {
  if (typeof options === 'function') callback = options
  const encoding = typeof callback === 'function' ? acceptedEncoding(options) : null
  const target = encoding !== null ? acceptedPath(p) : null
  if (target === null || !(typeof target.path === 'string' || Buffer.isBuffer(target.path))) {
    return Reflect.apply(nodeRealpath, undefined, arguments)
  }
  // A Buffer path is taken as UTF-8 text, as node:fs's `p += ''` does.
  walk(pathModule.resolve(String(target.path)), encoding, callback)
}

/** Resolves the absolute path `p` component by component and calls `callback` once. */
function walk(p, encoding, callback) {
  /** Links already read, by `dev:ino`, and their targets. */
  const seenLinks = new Map()
  /** Prefixes known not to be links. */
  const knownHard = new Set()
  /** The last link followed led to a pipe or a socket: the walk ends at the next known prefix. */
  let reachedPipeOrSocket = false
  // The path scanned so far with its trailing slash, the same without it, the one
  // before the current component, and where the next component starts.
  let current
  let base
  let previous
  let pos

  const restartAt = (start) => {
    p = start
    current = base = rootOf(p)
    pos = current.length
    process.nextTick(next)
  }

  const next = () => {
    if (pos >= p.length) return callback(null, encoded(p, encoding))
    const slash = p.indexOf('/', pos)
    previous = current
    const end = slash === -1 ? p.length : slash
    const part = p.slice(pos, end)
    current += slash === -1 ? part : `${part}/`
    base = previous + part
    pos = slash === -1 ? p.length : slash + 1
    if (knownHard.has(base)) {
      if (reachedPipeOrSocket) return callback(null, encoded(p, encoding))
      return process.nextTick(next)
    }
    nodeFs.lstat(base, { bigint: true }, gotLstat)
  }

  const gotLstat = (err, stats) => {
    if (err) return callback(err)
    if (!stats.isSymbolicLink()) {
      knownHard.add(base)
      return process.nextTick(next)
    }
    const id = `${stats.dev.toString(32)}:${stats.ino.toString(32)}`
    if (seenLinks.has(id)) return gotTarget(null, seenLinks.get(id))
    nodeFs.stat(base, (err, targetStats) => {
      if (err) return callback(err)
      reachedPipeOrSocket = targetStats.isFIFO() || targetStats.isSocket()
      nodeFs.readlink(base, (err, target) => {
        seenLinks.set(id, target)
        gotTarget(err, target)
      })
    })
  }

  const gotTarget = (err, target) => {
    if (err) return callback(err)
    restartAt(pathModule.resolve(pathModule.resolve(previous, target), p.slice(pos)))
  }

  restartAt(p)
}

/**
 * What install() puts in place of fs.realpath, now `current`: this walk where `current`
 * is node:fs's own and reads the shared array; else `current` itself (node:fs's right
 * one, or a caller's replacement, left alone).
 */
function realpathFor(current) {
  return current === nodeRealpath && nodeReadsSharedStats ? realpath : current
}

module.exports = { realpathFor, realpath: Object.defineProperty(realpath, 'name', { value: 'realpath' }) }
