'use strict'
// The fast path for streams (configure({ fastPath })): a regular file whose lookup is
// cached is opened on the JS thread, and a first block of up to kFastPathMax bytes that
// is in the page cache is read there, neither of which can wait for the disk
// (src/cached.rs). A small file's stream then needs no trip through the pool, which
// under load costs more than all of a small file's syscalls (BENCHMARKS.md). Callers
// still deliver outcomes as macrotasks, as the pool's arrive.

const { Buffer } = require('node:buffer')
const { binding } = require('./native')
const { kFastPathMax } = require('./settings')

/** A stream's open on this thread: the fd, or null where the pool must open it. */
function openCached(nativePath, flags) {
  try {
    return binding.openCached(nativePath, flags)
  } catch {
    return null // a path the pool's open reports as an error
  }
}

/** Where a block is read before it is cut into chunks of their own. */
let scratch = null

/**
 * A block of `size` (at most kFastPathMax) bytes at `position`, read on this thread
 * if the page cache holds it: its chunks of at most `piece` bytes, or null.
 */
function readCached(fd, position, size, piece) {
  scratch ??= Buffer.allocUnsafeSlow(kFastPathMax)
  const n = binding.readCachedInto(fd, position, scratch.subarray(0, size))
  if (n === null) return null
  return n === 0 ? [] : cut(scratch.subarray(0, n), piece)
}

/** Copies of `bytes` cut into chunks of at most `piece` bytes, each in memory of its own. */
function cut(bytes, piece) {
  const chunks = []
  for (let at = 0; at < bytes.length; at += piece) {
    const chunk = Buffer.allocUnsafeSlow(Math.min(piece, bytes.length - at))
    bytes.copy(chunk, 0, at, at + chunk.length)
    chunks.push(chunk)
  }
  return chunks
}

module.exports = { openCached, readCached }
