'use strict'
// node:fs's streams call fs.open, fs.read and fs.close through the module (and a
// FileHandle's read() through the handle) at each operation, so callers replace them
// to count or fail a stream's operations, as Node's own tests do. A fairfs stream
// calls a replacement too, in place of the pool, for the operations replaced; and a
// replaced ReadStream.prototype.open (deprecated, DEP0135) as node:fs does.

const { Buffer } = require('node:buffer')
const fsModule = require('node:fs')
const { isOurs } = require('./fd-writes')

/** fs's functions as they were when fairfs loaded. */
const fsAtLoad = { open: fsModule.open, read: fsModule.read, close: fsModule.close }

/**
 * fs[name] ('open', 'read' or 'close') if a caller replaced it since fairfs loaded,
 * else null. fairfs's own (install() puts its fs.open and fs.close there) is not a
 * caller's.
 */
function replaced(name) {
  const fn = fsModule[name]
  return fn !== fsAtLoad[name] && typeof fn === 'function' && !isOurs(fn) ? fn : null
}

/**
 * The read a caller put in place of node's for `stream` (its FileHandle's own `read`,
 * or fs.read), as `(buffer, length, position, callback(err, bytesRead))`; null if none.
 */
function replacedRead(stream) {
  const handle = stream._handle
  if (handle) {
    if (!Object.hasOwn(handle, 'read')) return null
    return (buf, length, position, cb) => {
      handle.read(buf, 0, length, position).then((r) => cb(null, r.bytesRead), cb)
    }
  }
  const read = replaced('read')
  return read && ((buf, length, position, cb) => read(stream.fd, buf, 0, length, position, cb))
}

/**
 * Reads `size` bytes at `position` (-1: the current one) through a replaced `read`,
 * then calls `done` with the chunks (none at the end, else one in memory of its own)
 * or the error.
 */
function readThrough(read, size, position, done) {
  const buf = Buffer.allocUnsafeSlow(size)
  read(buf, size, position < 0 ? null : position, (err, n) => done(err ?? (n === 0 ? [] : [filled(buf, n)])))
}

/**
 * The first `n` bytes of `buf`, which a read filled, in memory of their own: a chunk's
 * ArrayBuffer holds nothing but the chunk, as node:fs's do, so a consumer that
 * transfers it takes nothing else with it.
 */
function filled(buf, n) {
  if (n === buf.length) return buf
  const own = Buffer.allocUnsafeSlow(n)
  buf.copy(own, 0, 0, n)
  return own
}

/**
 * Calls a replaced `stream.open()`, and takes its 'open' (with stream.fd set) or
 * 'error' event as the end of construction, as node:fs does.
 */
function openPatched(stream, callback) {
  const emit = stream.emit
  stream.emit = function (name, ...args) {
    if (name === 'open') {
      this.emit = emit
      callback()
    } else if (name === 'error') {
      this.emit = emit
      return callback(args[0])
    }
    return Reflect.apply(emit, this, [name, ...args])
  }
  stream.open()
}

module.exports = { replaced, replacedRead, readThrough, openPatched }
