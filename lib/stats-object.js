'use strict'
// fs.Stats and fs.BigIntStats objects as node:fs makes them, from the 18 slots the
// native side fills (dev, mode, nlink, uid, gid, rdev, blksize, ino, size, blocks, then
// seconds and nanoseconds of atime, mtime, ctime, birthtime). `new fs.Stats()` is
// deprecated (DEP0180), so each object gets node's own prototype and its own fields in
// node's order: `instanceof fs.Stats` holds, and methods such as isFile() are node's.
// From Node 22 the Dates are lazy getters on that prototype; before, own fields.

const fs = require('node:fs')

const { Stats } = fs
/** Node 22+ defines atime & co. as getters on the prototype; Node 20 sets own Dates. */
const lazyDates = typeof Object.getOwnPropertyDescriptor(Stats.prototype, 'atime')?.get === 'function'

const kNsPerMsBigInt = 10n ** 6n
const kNsPerSecBigInt = 10n ** 9n

/** BigIntStats' prototype: not exported by node:fs, taken once from a real one. */
let bigIntStatsPrototype = null
function bigIntPrototype() {
  bigIntStatsPrototype ??= Object.getPrototypeOf(fs.statSync(__filename, { bigint: true }))
  return bigIntStatsPrototype
}

/** Node 20's dateFromMs: the Date of a millisecond count, rounded (Math.round). */
function dateFromMs(ms) {
  return new Date(Math.round(Number(ms)))
}

/** An object of `prototype` with the ten fields both kinds of Stats start with, in node's order, from slots `s[at..]`. */
function withBaseFields(prototype, s, at) {
  const stats = Object.create(prototype)
  stats.dev = s[at]
  stats.mode = s[at + 1]
  stats.nlink = s[at + 2]
  stats.uid = s[at + 3]
  stats.gid = s[at + 4]
  stats.rdev = s[at + 5]
  stats.blksize = s[at + 6]
  stats.ino = s[at + 7]
  stats.size = s[at + 8]
  stats.blocks = s[at + 9]
  return stats
}

/** An fs.Stats from the 18 slots at `at` of a Float64Array. */
function statsFromSlots(s, at = 0) {
  const stats = withBaseFields(Stats.prototype, s, at)
  stats.atimeMs = s[at + 10] * 1000 + s[at + 11] / 1e6
  stats.mtimeMs = s[at + 12] * 1000 + s[at + 13] / 1e6
  stats.ctimeMs = s[at + 14] * 1000 + s[at + 15] / 1e6
  stats.birthtimeMs = s[at + 16] * 1000 + s[at + 17] / 1e6
  if (!lazyDates) ownDates(stats)
  return stats
}

/** An fs.BigIntStats from the 18 slots at `at` of a BigInt64Array. */
function bigIntStatsFromSlots(s, at = 0) {
  const stats = withBaseFields(bigIntPrototype(), s, at)
  const atimeNs = s[at + 10] * kNsPerSecBigInt + s[at + 11]
  const mtimeNs = s[at + 12] * kNsPerSecBigInt + s[at + 13]
  const ctimeNs = s[at + 14] * kNsPerSecBigInt + s[at + 15]
  const birthtimeNs = s[at + 16] * kNsPerSecBigInt + s[at + 17]
  stats.atimeMs = atimeNs / kNsPerMsBigInt
  stats.mtimeMs = mtimeNs / kNsPerMsBigInt
  stats.ctimeMs = ctimeNs / kNsPerMsBigInt
  stats.birthtimeMs = birthtimeNs / kNsPerMsBigInt
  stats.atimeNs = atimeNs
  stats.mtimeNs = mtimeNs
  stats.ctimeNs = ctimeNs
  stats.birthtimeNs = birthtimeNs
  if (!lazyDates) ownDates(stats)
  return stats
}

function ownDates(stats) {
  stats.atime = dateFromMs(stats.atimeMs)
  stats.mtime = dateFromMs(stats.mtimeMs)
  stats.ctime = dateFromMs(stats.ctimeMs)
  stats.birthtime = dateFromMs(stats.birthtimeMs)
}

module.exports = { statsFromSlots, bigIntStatsFromSlots }
