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

/** An object of `prototype` with the ten fields both kinds of Stats start with, in node's order. */
function withBaseFields(prototype, s) {
  const stats = Object.create(prototype)
  stats.dev = s[0]
  stats.mode = s[1]
  stats.nlink = s[2]
  stats.uid = s[3]
  stats.gid = s[4]
  stats.rdev = s[5]
  stats.blksize = s[6]
  stats.ino = s[7]
  stats.size = s[8]
  stats.blocks = s[9]
  return stats
}

/** An fs.Stats from a Float64Array of the slots. */
function statsFromSlots(s) {
  const stats = withBaseFields(Stats.prototype, s)
  stats.atimeMs = s[10] * 1000 + s[11] / 1e6
  stats.mtimeMs = s[12] * 1000 + s[13] / 1e6
  stats.ctimeMs = s[14] * 1000 + s[15] / 1e6
  stats.birthtimeMs = s[16] * 1000 + s[17] / 1e6
  if (!lazyDates) ownDates(stats)
  return stats
}

/** An fs.BigIntStats from a BigInt64Array of the slots. */
function bigIntStatsFromSlots(s) {
  const stats = withBaseFields(bigIntPrototype(), s)
  const atimeNs = s[10] * kNsPerSecBigInt + s[11]
  const mtimeNs = s[12] * kNsPerSecBigInt + s[13]
  const ctimeNs = s[14] * kNsPerSecBigInt + s[15]
  const birthtimeNs = s[16] * kNsPerSecBigInt + s[17]
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
