'use strict'
// install() / uninstall(): route existing node:fs callers through fairfs.
//
// Patched: fs.readFile, fs.promises.readFile (the same object as
// require('node:fs/promises')), fs.createReadStream / fs.ReadStream users, a
// FileHandle's readFile() and createReadStream(), and where the addon answers them
// the metadata calls a server makes per request: fs.stat, fs.lstat, fs.access, fs.readdir (and so
// fs.exists and fs.realpath, which call them), fs.realpath.native, and their
// fs.promises forms; and where node:fs's fs.realpath reads the stat array only its
// own stats fill (Node 20 and 22), fs.realpath itself (lib/realpath.js). ESM named
// imports of node:fs and node:fs/promises see the change too
// (module.syncBuiltinESMExports). Not patched:
// the sync APIs (readFileSync and friends), which must block the caller by
// definition and gain nothing from a pool, and the fs.read*/open primitives, whose
// callers manage fds and buffers themselves.
//
// FileHandle is not exported by Node, so its prototype is learnt from a handle:
// install() opens one (this file) and fs.promises.open is wrapped while installed,
// so the prototype is patched before any caller holds a handle made after install().

const fs = require('node:fs')
const { syncBuiltinESMExports } = require('node:module')
const { methodNotImplemented } = require('./errors')
const { realpathFor } = require('./realpath')

/** The metadata calls install() routes to the pool, callback and promise forms. */
const kMetadata = ['stat', 'lstat', 'access', 'readdir']

/** The node:fs functions install() replaced, or null when not installed. */
let originals = null
/** FileHandle.prototype's own methods that install() replaced, or null. */
let handleOriginals = null
/** FileHandle.prototype, once learnt. */
let handleProto = null
/** The API install() was given, for the FileHandle methods. */
let api = null

/** Patches node:fs. Calling it again changes nothing. */
function install(fairfs) {
  if (originals) return
  api = fairfs
  originals = {
    readFile: fs.readFile,
    promisesReadFile: fs.promises.readFile,
    createReadStream: fs.createReadStream,
    promisesOpen: fs.promises.open,
  }
  fs.readFile = api.readFileCallback
  fs.promises.readFile = api.promises.readFile
  fs.createReadStream = api.createReadStream
  if (api.metadata) {
    for (const name of kMetadata) {
      originals[name] = fs[name]
      originals[`promises.${name}`] = fs.promises[name]
      fs[name] = api.metadata[name]
      fs.promises[name] = api.metadata.promises[name]
    }
    originals.realpath = fs.realpath
    originals.realpathNative = fs.realpath.native
    originals.promisesRealpath = fs.promises.realpath
    fs.realpath = realpathFor(fs.realpath)
    fs.realpath.native = api.metadata.realpathNative
    fs.promises.realpath = api.metadata.promises.realpath
  }
  const open = originals.promisesOpen
  // FileHandle's prototype, learnt from `handle` while installed and not yet patched.
  const learn = (handle) => {
    if (originals && !handleOriginals) patchFileHandle(Object.getPrototypeOf(handle))
  }
  fs.promises.open = {
    async open(...args) {
      const handle = await open.apply(this, args)
      learn(handle)
      return handle
    },
  }.open
  if (handleProto) {
    patchFileHandle(handleProto)
  } else {
    open(__filename, 'r').then(
      (handle) => {
        learn(handle)
        return handle.close()
      },
      () => {},
    )
  }
  syncBuiltinESMExports()
}

/** Restores exactly the functions install() replaced. Calling it again changes nothing. */
function uninstall() {
  if (!originals) return
  fs.readFile = originals.readFile
  fs.promises.readFile = originals.promisesReadFile
  fs.createReadStream = originals.createReadStream
  fs.promises.open = originals.promisesOpen
  for (const name of kMetadata) {
    if (name in originals) {
      fs[name] = originals[name]
      fs.promises[name] = originals[`promises.${name}`]
    }
  }
  if ('realpathNative' in originals) {
    fs.realpath = originals.realpath
    fs.realpath.native = originals.realpathNative
    fs.promises.realpath = originals.promisesRealpath
  }
  if (handleOriginals) {
    for (const [name, fn] of Object.entries(handleOriginals)) handleProto[name] = fn
    handleOriginals = null
  }
  originals = null
  syncBuiltinESMExports()
}

function isInstalled() {
  return originals !== null
}

/**
 * `handle.readFile(options)` as node:fs has it, whether or not install() replaced it:
 * where fairfs hands a FileHandle's read to node:fs (Windows), the replacement would
 * only come back to fairfs.
 */
function nodeHandleReadFile(handle, options) {
  const readFile = handleOriginals && Object.getPrototypeOf(handle) === handleProto ? handleOriginals.readFile : handle.readFile
  return Reflect.apply(readFile, handle, [options])
}

/**
 * Routes a FileHandle's readFile(), createReadStream() and (with the metadata calls)
 * stat() through fairfs. close()
 * waits for fairfs reads in flight on the handle, as Node's own close() waits for its
 * operations, so a closed (and reused) fd is never read.
 */
function patchFileHandle(proto) {
  handleProto = proto
  handleOriginals = { readFile: proto.readFile, createReadStream: proto.createReadStream }
  const originalReadFile = handleOriginals.readFile
  if (api.metadata) {
    const originalStat = (handleOriginals.stat = proto.stat)
    proto.stat = {
      stat(options) {
        // A closed handle, or options node:fs must judge: node's own outcome.
        if (this.fd === -1 || options === null) return originalStat.call(this, options)
        return api.metadata.handleStat(this, options)
      },
    }.stat
  }

  proto.readFile = {
    readFile(options) {
      // A closed handle: node's own error (EBADF 'file closed', syscall readFile).
      if (this.fd === -1) return originalReadFile.call(this, options)
      // fairfs holds the handle while it reads (lib/filehandle.js): close() waits.
      return api.promises.readFile(this, options)
    },
  }.readFile
  proto.createReadStream = {
    createReadStream(options = undefined) {
      if (options?.fs !== undefined) throw methodNotImplemented('FileHandle with fs')
      return api.createReadStream(undefined, { ...options, fd: this })
    },
  }.createReadStream
}

module.exports = { install, uninstall, isInstalled, nodeHandleReadFile }
