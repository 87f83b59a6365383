'use strict'
// install() / uninstall(): route existing node:fs callers through fairfs.
//
// Patched: fs.readFile, fs.writeFile, fs.appendFile, the fd primitives of writing
// (fs.open for writing, fs.write, fs.writev, fs.fsync, fs.fdatasync, fs.close:
// lib/fd-writes.js), WriteStream's _write, _writev and _destroy (lib/write-stream.js), fs.unlink, fs.rename, fs.mkdir, fs.copyFile, fs.promises.readFile,
// writeFile, appendFile, unlink, rename, mkdir and copyFile (the same object as
// require('node:fs/promises')), fs.createReadStream / fs.ReadStream users, a
// FileHandle's readFile() and createReadStream(), and where the addon answers them
// the metadata calls a server makes per request: fs.stat, fs.lstat, fs.access, fs.readdir (and so
// fs.exists and fs.realpath, which call them), fs.realpath.native, and their
// fs.promises forms; and where node:fs's fs.realpath reads the stat array only its
// own stats fill (Node 20 and 22), fs.realpath itself (lib/realpath.js). ESM named
// imports of node:fs and node:fs/promises see the change too
// (module.syncBuiltinESMExports). Not patched:
// the sync APIs (readFileSync and friends), which must block the caller by
// definition and gain nothing from a pool, and the fs.read* primitives and fs.open
// for reading, whose callers manage fds and buffers themselves.
//
// A function a caller replaced since fairfs loaded is left alone, by install() and by
// uninstall() (see atLoad). While node:fs's binding is mocked (mock-fs), the
// replacements hand every call back to node:fs's own (lib/mocked.js).
//
// FileHandle is not exported by Node, so its prototype is learnt from a handle:
// install() opens one (this file) and fs.promises.open is wrapped while installed,
// so the prototype is patched before any caller holds a handle made after install().

const fs = require('node:fs')
const { syncBuiltinESMExports } = require('node:module')
const { methodNotImplemented } = require('./errors')
const { realpathFor } = require('./realpath')
const { nodeServes } = require('./mocked')
const { current } = require('./settings')

/** The metadata calls install() routes to the pool, callback and promise forms. */
const kMetadata = ['stat', 'lstat', 'access', 'readdir']

/**
 * node:fs's functions as they were when fairfs loaded (this file loads with it), by
 * key: install() replaces only these.
 *
 * Functions a caller put in place since (a test's memfs or unionfs patch, a stub, an
 * instrumentation wrapper) are left alone by install(): the caller chose what serves
 * that call, and replacing it would quietly send their in-memory files to the real
 * disk. Node's documentation says nothing of such stacking; this is what a caller
 * would want, and fs.realpath was already treated so (lib/realpath.js). Likewise
 * uninstall() puts node:fs's function back only where fairfs's is still in place: one a
 * caller put over fairfs's since install() is the caller's to restore (restoring ours
 * over it would drop their patch midway; their own restore later puts back what they
 * replaced). A function replaced before fairfs loaded cannot be told from node:fs's
 * own, and is replaced as node:fs's would be.
 */
const atLoad = {
  readFile: fs.readFile,
  'promises.readFile': fs.promises.readFile,
  createReadStream: fs.createReadStream,
  'promises.open': fs.promises.open,
  writeFile: fs.writeFile,
  appendFile: fs.appendFile,
  open: fs.open,
  write: fs.write,
  writev: fs.writev,
  fsync: fs.fsync,
  fdatasync: fs.fdatasync,
  close: fs.close,
  unlink: fs.unlink,
  rename: fs.rename,
  mkdir: fs.mkdir,
  'promises.unlink': fs.promises.unlink,
  'promises.rename': fs.promises.rename,
  'promises.mkdir': fs.promises.mkdir,
  copyFile: fs.copyFile,
  'promises.copyFile': fs.promises.copyFile,
  'promises.writeFile': fs.promises.writeFile,
  'promises.appendFile': fs.promises.appendFile,
  realpath: fs.realpath,
  'realpath.native': fs.realpath.native,
  'promises.realpath': fs.promises.realpath,
}
for (const name of kMetadata) {
  atLoad[name] = fs[name]
  atLoad[`promises.${name}`] = fs.promises[name]
}

/** What install() replaced, as `{ holder, name, original, replacement }`, or null when not installed. */
let originals = null
/** FileHandle.prototype's methods as node:fs has them, once learnt. */
let handleNode = null
/** FileHandle.prototype's methods that install() replaced, as originals' entries, or null. */
let handleOriginals = null
/** FileHandle.prototype, once learnt. */
let handleProto = null
/** The API install() was given, for the FileHandle methods. */
let api = null

/**
 * Puts `replacement` at `holder[name]` if what is there is node:fs's function `key`
 * as it was when fairfs loaded, and records it in `into`.
 */
function swap(into, holder, name, key, replacement) {
  const original = holder[name]
  if (original !== atLoad[key]) return
  into.push({ holder, name, original, replacement })
  holder[name] = replacement
}

/** Undoes the swaps in `done` where fairfs's function is still in place. */
function undo(done) {
  for (const { holder, name, original, replacement } of done) {
    if (holder[name] === replacement) holder[name] = original
  }
}

/** Patches node:fs. Calling it again changes nothing. */
function install(fairfs) {
  if (originals) return
  api = fairfs
  originals = []
  swap(originals, fs, 'readFile', 'readFile', api.readFileCallback)
  swap(originals, fs.promises, 'readFile', 'promises.readFile', api.promises.readFile)
  swap(originals, fs, 'createReadStream', 'createReadStream', api.createReadStream)
  if (api.writes) {
    swap(originals, fs, 'writeFile', 'writeFile', api.writes.writeFileCallback)
    swap(originals, fs, 'appendFile', 'appendFile', api.writes.appendFileCallback)
    swap(originals, fs.promises, 'writeFile', 'promises.writeFile', api.writes.promises.writeFile)
    swap(originals, fs.promises, 'appendFile', 'promises.appendFile', api.writes.promises.appendFile)
  }
  // The fd primitives node:fs's WriteStream and callback writeFile call through the
  // module, and loggers call themselves (lib/fd-writes.js).
  for (const [name, fn] of Object.entries(api.primitives ?? {})) swap(originals, fs, name, name, fn)
  // configure({ writeBehind: true }): a WriteStream's next chunk queued behind the
  // write running (lib/write-stream.js).
  if (current.writeBehind) api.writeStreams?.patch()
  if (api.copies) {
    swap(originals, fs, 'copyFile', 'copyFile', api.copies.copyFile)
    swap(originals, fs.promises, 'copyFile', 'promises.copyFile', api.copies.promises.copyFile)
  }
  if (api.mutate) {
    for (const name of ['unlink', 'rename', 'mkdir']) {
      swap(originals, fs, name, name, api.mutate[name])
      swap(originals, fs.promises, name, `promises.${name}`, api.mutate.promises[name])
    }
  }
  if (api.metadata) {
    for (const name of kMetadata) {
      swap(originals, fs, name, name, api.metadata[name])
      swap(originals, fs.promises, name, `promises.${name}`, api.metadata.promises[name])
    }
    swap(originals, fs.promises, 'realpath', 'promises.realpath', api.metadata.promises.realpath)
    const realpath = fs.realpath
    // A caller's fs.realpath is left alone, its .native too.
    if (realpath === atLoad.realpath) {
      const native = realpath.native === atLoad['realpath.native'] ? api.metadata.realpathNative : realpath.native
      const walk = realpathFor(realpath)
      if (walk === realpath) {
        swap(originals, realpath, 'native', 'realpath.native', native)
      } else {
        // The walk is fairfs's own function: its .native is the one that serves now.
        walk.native = native
        swap(originals, fs, 'realpath', 'realpath', walk)
      }
    }
  }
  // FileHandle's prototype is learnt from node:fs's own open only: a caller's open may
  // give handles of its own kind (memfs's), whose prototype is not node's to patch.
  const open = atLoad['promises.open']
  // FileHandle's prototype, learnt from `handle` while installed and not yet patched.
  const learn = (handle) => {
    if (originals && !handleOriginals) patchFileHandle(Object.getPrototypeOf(handle))
  }
  swap(originals, fs.promises, 'open', 'promises.open', {
    async open(...args) {
      const handle = await open.apply(this, args)
      learn(handle)
      return handle
    },
  }.open)
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

/**
 * Restores the functions install() replaced, where fairfs's are still in place (see
 * atLoad). Calling it again changes nothing.
 */
function uninstall() {
  if (!originals) return
  undo(originals)
  api.writeStreams?.unpatch()
  if (handleOriginals) {
    undo(handleOriginals)
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
  const readFile = handleNode && Object.getPrototypeOf(handle) === handleProto ? handleNode.readFile : handle.readFile
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
  // node:fs's own, from the first time the prototype is seen (before any patch of ours).
  handleNode ??= { readFile: proto.readFile, createReadStream: proto.createReadStream, stat: proto.stat, writeFile: proto.writeFile, appendFile: proto.appendFile }
  handleOriginals = []
  const { readFile: originalReadFile, stat: originalStat } = handleNode
  const patch = (name, fairfsMethod) => {
    if (proto[name] !== handleNode[name]) return // a caller's, left alone (see atLoad)
    const original = proto[name]
    // Called on something that is not a FileHandle (`handle.stat.call({})`): node's own
    // method, and so node's own error.
    const replacement = {
      [name](...args) {
        const handle = this != null && Object.getPrototypeOf(this) === proto
        return Reflect.apply(handle ? fairfsMethod : original, this, args)
      },
    }[name]
    Object.defineProperty(replacement, 'length', { value: fairfsMethod.length })
    handleOriginals.push({ holder: proto, name, original, replacement })
    proto[name] = replacement
  }
  if (api.metadata) {
    patch('stat', {
      stat(options) {
        // A closed handle, options node:fs must judge, or a mocked binding (whose fd
        // this is): node's own outcome.
        if (this.fd === -1 || options === null || nodeServes()) return originalStat.call(this, options)
        return api.metadata.handleStat(this, options)
      },
    }.stat)
  }

  patch('readFile', {
    readFile(options) {
      // A closed handle: node's own error (EBADF 'file closed', syscall readFile).
      if (this.fd === -1) return originalReadFile.call(this, options)
      // fairfs holds the handle while it reads (lib/filehandle.js): close() waits.
      return api.promises.readFile(this, options)
    },
  }.readFile)
  if (api.writes) {
    const methods = api.writes.handleMethods(handleNode)
    patch('writeFile', methods.writeFile)
    patch('appendFile', methods.appendFile)
  }
  patch('createReadStream', {
    createReadStream(options = undefined) {
      if (options?.fs !== undefined) throw methodNotImplemented('FileHandle with fs')
      return api.createReadStream(undefined, { ...options, fd: this })
    },
  }.createReadStream)
}

module.exports = { install, uninstall, isInstalled, nodeHandleReadFile }
