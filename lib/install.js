'use strict'
// install() / uninstall(): route existing node:fs callers through fairfs.
//
// Patched: fs.readFile, fs.promises.readFile (the same object as
// require('node:fs/promises')), fs.createReadStream / fs.ReadStream users, and a
// FileHandle's readFile() and createReadStream(). ESM named imports of node:fs and
// node:fs/promises see the change too (module.syncBuiltinESMExports). Not patched:
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

/** The node:fs functions install() replaced, or null when not installed. */
let originals = null
/** FileHandle.prototype's own methods that install() replaced, or null. */
let handleOriginals = null
/** FileHandle.prototype, once learnt. */
let handleProto = null
/** The API install() was given, for the FileHandle methods. */
let api = null

/**
 * FileHandle's own reference count (the `kRef`/`kUnref` methods node:fs/promises
 * wraps around each operation on a handle, so that close() waits for them). Not
 * exported, so found by name; null if a Node line renames them, and then close() is
 * wrapped per handle instead (see holdOpen).
 */
let handleRefs = null
/** Handles whose close() was wrapped by holdOpen -> the fairfs reads in flight on them. */
const readsInFlight = new WeakMap()

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
  const open = originals.promisesOpen
  fs.promises.open = {
    async open(...args) {
      const handle = await open.apply(this, args)
      if (originals && !handleOriginals) patchFileHandle(Object.getPrototypeOf(handle))
      return handle
    },
  }.open
  if (handleProto) {
    patchFileHandle(handleProto)
  } else {
    open(__filename, 'r').then(
      (handle) => {
        if (originals && !handleOriginals) patchFileHandle(Object.getPrototypeOf(handle))
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
 * Routes a FileHandle's readFile() and createReadStream() through fairfs. close()
 * waits for fairfs reads in flight on the handle, as Node's own close() waits for its
 * operations, so a closed (and reused) fd is never read.
 */
function patchFileHandle(proto) {
  handleProto = proto
  handleOriginals = { readFile: proto.readFile, createReadStream: proto.createReadStream }
  const originalReadFile = handleOriginals.readFile
  const symbol = (name) => Object.getOwnPropertySymbols(proto).find((s) => s.description === name && typeof proto[s] === 'function')
  const [ref, unref] = [symbol('kRef'), symbol('kUnref')]
  handleRefs = ref && unref ? { ref, unref } : null

  proto.readFile = {
    readFile(options) {
      // A closed handle: node's own error (EBADF 'file closed', syscall readFile).
      if (this.fd === -1) return originalReadFile.call(this, options)
      const read = api.promises.readFile(this, options)
      holdOpen(this, read)
      return read
    },
  }.readFile
  proto.createReadStream = {
    createReadStream(options = undefined) {
      if (options?.fs !== undefined) throw methodNotImplemented('FileHandle with fs')
      return api.createReadStream(undefined, { ...options, fd: this })
    },
  }.createReadStream
}

/** Keeps `handle`'s fd open until `read` settles: close() waits for it, as for node's own operations. */
function holdOpen(handle, read) {
  if (handleRefs) {
    handle[handleRefs.ref]()
    const release = () => handle[handleRefs.unref]()
    read.then(release, release)
    return
  }
  // close is an own property of each handle (a class field), not on the prototype.
  let reads = readsInFlight.get(handle)
  if (!reads) {
    readsInFlight.set(handle, (reads = new Set()))
    const close = handle.close
    handle.close = () => Promise.allSettled([...reads]).then(() => close.call(handle))
  }
  reads.add(read)
  const forget = () => reads.delete(read)
  read.then(forget, forget)
}

module.exports = { install, uninstall, isInstalled }
