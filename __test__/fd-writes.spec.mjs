// The fd primitives of writing (lib/fd-writes.js): fs.open (for writing), fs.write,
// fs.writev, fs.fsync, fs.fdatasync and fs.close, differential against node:fs's own
// functions: every argument form (positional, an options object, null, undefined,
// left out), every kind of data (Buffers, typed arrays, DataViews, strings in every
// encoding), argument errors thrown as node:fs throws them, OS errors field by field,
// the callback's arguments (the buffer handed back by identity), util.promisify's
// shapes, the fd's position afterwards and the bytes on disk; then fairfs's order per
// fd (500 writes and a close issued without waiting), concurrent appends of whole
// records, storage errors (ENOSPC, EFBIG, EACCES: root only, skipped visibly
// elsewhere), and install(), through which node:fs's own WriteStream writes on the pool.
//
// Each case runs on node:fs on a fresh file, then on fairfs on another; what the call
// did, the fd afterwards and the file (bytes and mode) must be the same. Which calls
// fairfs takes (the addon's binding is counted) and hands to node:fs is tested too.
import avaTest from 'ava'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import util from 'node:util'
import crypto from 'node:crypto'
import { createRequire } from 'node:module'
import { execFile, spawnSync } from 'node:child_process'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { fairfs, isNative, nativeOnly, tmpPath, describeError, fdsOpenOn, windows } from './helpers.mjs'

// On Windows fairfs's writes are node:fs's own (no pool writes there), and these cases
// use POSIX fds, modes and tools: every case is registered skipped, with the reason.
const notOnWindows = "not on Windows: fairfs's writes are node:fs's there, and these cases use POSIX fds and tools"
function skipEverything(reason) {
  const skip = (title, ...rest) => avaTest.skip(`${title} [${reason}]`, ...rest)
  const none = () => {}
  return Object.assign(skip, { serial: skip, skip, before: none, beforeEach: none, after: Object.assign(none, { always: none }), afterEach: Object.assign(none, { always: none }) })
}
const test = windows ? skipEverything(notOnWindows) : avaTest

/** node:fs's own functions, taken before any install() in this file. */
const nodeFs = {
  open: fs.open,
  write: fs.write,
  writev: fs.writev,
  fsync: fs.fsync,
  fdatasync: fs.fdatasync,
  close: fs.close,
  createWriteStream: fs.createWriteStream,
}

/**
 * fairfs's primitives: lib/fd-writes.js's, where the native backend serves. (Required
 * only then: the module loads the addon itself, so on the node backend, where no addon
 * may load, it is left alone.)
 */
const primitives = isNative ? createRequire(import.meta.url)('../lib/fd-writes.js').primitives : null
const FNS = { node: nodeFs, ours: primitives }
const SIDES = ['node', 'ours']

/** `testFn` registering every test as skipped, with `[reason]` in its title (as helpers.mjs does). */
function skipping(testFn, reason) {
  const skip = (title, ...rest) => testFn.skip(`${title} [${reason}]`, ...rest)
  skip.skip = skip
  return skip
}

const primitivesReason = primitives
  ? null
  : isNative
    ? "lib/fd-writes.js's primitives are null here (no pool writes on this platform)"
    : `fairfs's fd primitives: native backend only (backend ${fairfs.backend})`
/** For tests of fairfs's primitives: skipped, visibly, where there are none. */
const primTest = primitivesReason ? skipping(test, primitivesReason) : test
const primSerial = primitivesReason ? skipping(test.serial, primitivesReason) : test.serial

// ---------------------------------------------------------------------------------
// The harness

/** Stands for the recording callback in a case's arguments. */
const CB = Symbol('callback')

const sha256 = (bytes) => crypto.createHash('sha256').update(bytes).digest('hex')
// (A view of a detached ArrayBuffer has byteLength 0, and no buffer to view.)
const bytesOf = (view) => (view.byteLength === 0 ? Buffer.alloc(0) : Buffer.from(view.buffer, view.byteOffset, view.byteLength))
/** Bytes as a test shows them: latin1 when short, else a digest. */
const showBytes = (bytes) => (bytes.length <= 300 ? bytes.toString('latin1') : `sha256 ${sha256(bytes)} (${bytes.length})`)

/**
 * A callback argument as a test compares it: errors by their fields, views and arrays by
 * content and kind, each with the index of the call's argument it is (-1: none), so
 * that the buffer handed back is seen to be the one passed.
 */
function describeArg(a, callArgs) {
  if (a instanceof Error) return { error: describeError(a) }
  if (ArrayBuffer.isView(a)) return { view: a.constructor.name, bytes: showBytes(bytesOf(a)), argument: callArgs.indexOf(a) }
  if (Array.isArray(a)) return { array: a.map((x) => describeArg(x, [])), argument: callArgs.indexOf(a) }
  if (typeof a === 'string') return { string: a.length <= 300 ? a : `sha256 ${sha256(a)} (${a.length})`, argument: callArgs.indexOf(a) }
  return a
}

/**
 * Calls `fn(...args)`, CB standing for a recording callback: a synchronous throw, or
 * what the callback got (its arguments, `this`, whether it came before the call
 * returned, and how often). With no CB in `args`, the return after a pause. `raw` is
 * the callback's arguments as they came.
 */
function callOutcome(fn, args) {
  return new Promise((resolve) => {
    let sync = true
    let calls = 0
    let returned
    let raw
    function callback(...given) {
      if (calls++ > 0) return
      raw = given
      const first = { sync, thisIsUndefined: this === undefined, args: given.map((a) => describeArg(a, args)) }
      // A second call of the callback would show in `calls`.
      setTimeout(() => resolve({ outcome: { ...first, calls, returned: typeof returned }, raw }), 20)
    }
    try {
      returned = fn(...args.map((a) => (a === CB ? callback : a)))
    } catch (e) {
      resolve({ outcome: { threw: describeError(e), calls } })
      return
    }
    sync = false
    if (!args.includes(CB)) setTimeout(() => resolve({ outcome: { returned: typeof returned, calls } }), 50)
  })
}

/** What `fn()` did: its value, its error's fields, or `{ threw }`. */
function attempt(fn) {
  try {
    return { value: fn() }
  } catch (e) {
    return { error: e.code ?? String(e) }
  }
}

/** A file as a test sees it: kind, mode, size and bytes. */
function describeFile(file) {
  let st
  try {
    st = fs.lstatSync(file)
  } catch (e) {
    return { missing: e.code }
  }
  if (!st.isFile()) return { kind: st.isDirectory() ? 'directory' : st.isSymbolicLink() ? 'symlink' : 'other' }
  const mode = (st.mode & 0o7777).toString(8)
  if (st.size <= 64 * 1024 * 1024) return { mode, size: st.size, bytes: showBytes(fs.readFileSync(file)) }
  // A sparse file far too big to read: its first and last bytes.
  const fd = fs.openSync(file, 'r')
  try {
    const head = Buffer.alloc(64)
    const tail = Buffer.alloc(64)
    fs.readSync(fd, head, 0, 64, 0)
    fs.readSync(fd, tail, 0, 64, st.size - 64)
    return { mode, size: st.size, head: head.toString('latin1'), tail: tail.toString('latin1') }
  } finally {
    fs.closeSync(fd)
  }
}

/** The open flags of `fd` (/proc/self/fdinfo), in octal. */
function fdFlags(fd) {
  try {
    return /^flags:\s*(\d+)$/m.exec(fs.readFileSync(`/proc/self/fdinfo/${fd}`, 'latin1'))?.[1] ?? 'unknown'
  } catch (e) {
    return e.code
  }
}

/** `value` with every `from` in its strings (and plain objects and arrays) replaced by `to`. */
function normalize(value, replacements) {
  if (typeof value === 'string') return replacements.reduce((s, [from, to]) => s.split(from).join(to), value)
  if (Array.isArray(value)) return value.map((v) => normalize(v, replacements))
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, normalize(v, replacements)]))
  }
  return value
}

let dirs = 0
/** A fresh, empty directory for one side of a case. */
function freshDir(side) {
  const dir = tmpPath(`fdw${dirs++}-${side}`)
  fs.mkdirSync(dir)
  return dir
}

const previous = 'previous contents, 0123456789\n'

/**
 * An fd that is open nowhere: a valid int32 above any fd limit, so that no concurrent
 * test's open can make it refer to a file (EBADF on every call).
 */
const NEVER_OPEN = 2 ** 31 - 1

/**
 * One side of an fd case `c`: a fresh file 'f' (holding `c.initial`, default
 * `previous`; null: none) in a fresh directory (or `c.dir(t, side)`), opened with
 * `c.flags` (default 'r+'), `c.before(fd)` run; then `c.op` on `side` with
 * `c.args(fd, file, dir)`. Afterwards, unless `c.mark` is false, '#' is written at the
 * fd's position (so where the call left it shows); the fd is closed (unless `c.closes`:
 * the call closed it, and whether it is still open is recorded). Resolves with the
 * outcome, the fd's state and the file.
 */
async function runSide(t, side, c) {
  const dir = c.dir ? await c.dir(t, side) : freshDir(side)
  const file = path.join(dir, 'f')
  const initial = c.initial === undefined ? previous : c.initial
  if (initial !== null) fs.writeFileSync(file, initial)
  const fd = fs.openSync(file, c.flags ?? 'r+')
  let result
  try {
    await c.before?.(fd, file)
    const fn = FNS[side][c.op]
    const { outcome } = await callOutcome(c.bind ? fn.bind(c.bind) : fn, c.args(fd, file, dir))
    const after = {}
    if (c.closes) after.fdOpen = attempt(() => fs.fstatSync(fd) && true)
    else if (c.mark !== false) after.mark = attempt(() => fs.writeSync(fd, '#'))
    result = { outcome, after }
  } finally {
    if (!c.closes) fs.closeSync(fd)
  }
  result.file = describeFile(file)
  result.fdsOpen = fdsOpenOn(file)
  return normalize(result, [[dir, '<dir>']])
}

/** Case `c` on node:fs and on fairfs, compared; resolves with both. */
async function compare(t, c, label = '') {
  const node = await runSide(t, 'node', c)
  const ours = await runSide(t, 'ours', c)
  t.deepEqual(ours, node, `${label}${c.op}`)
  return { node, ours }
}

/** Registers one test per case of `list` (title -> case, its `op` default `op`), on `testFn`. */
function cases(testFn, prefix, list, check, op) {
  for (const [what, c] of Object.entries(list)) {
    c.op ??= op
    testFn(`${prefix}: ${what}: as node:fs`, async (t) => {
      const results = await compare(t, c)
      check?.(t, results, c)
    })
  }
}

// ---------------------------------------------------------------------------------
// fs.write, a Buffer or a view

const b16 = () => Buffer.from('0123456789abcdef')
const u16 = () => new Uint16Array(Uint8Array.from({ length: 32 }, (_, i) => 65 + i).buffer, 4, 6)
const sharedBytes = () => {
  const bytes = new Uint8Array(new SharedArrayBuffer(8), 2, 5)
  bytes.set([5, 4, 3, 2, 1])
  return bytes
}
/** A Uint8Array whose ArrayBuffer was transferred away: byteLength 0. */
const detached = () => {
  const view = new Uint8Array([1, 2, 3, 4])
  structuredClone(view.buffer, { transfer: [view.buffer] })
  return view
}
/** A Uint8Array tracking the length of a resizable ArrayBuffer, grown after it was made. */
const resizable = () => {
  const buffer = new ArrayBuffer(4, { maxByteLength: 64 })
  const view = new Uint8Array(buffer)
  buffer.resize(10)
  view.set(Buffer.from('resizable!'))
  return view
}
// A small Buffer.from() is a slice of node's shared pool: its byteOffset is not 0.
const pooled = () => Buffer.from('a small buffer on the shared pool').subarray(2, 13)

/** fs.write(fd, buffer, ...) cases: `args(fd)` with CB for the callback. */
const writeBuffer = {
  'a Buffer, no offset (callback third)': { args: (fd) => [fd, b16(), CB] },
  'offset only': { args: (fd) => [fd, b16(), 3, CB] },
  'offset and length': { args: (fd) => [fd, b16(), 2, 5, CB] },
  'offset, length, position 3': { args: (fd) => [fd, b16(), 2, 5, 3, CB] },
  'offset, length, position 0': { args: (fd) => [fd, b16(), 0, 4, 0, CB] },
  'position null (the fd position)': { args: (fd) => [fd, b16(), 2, 5, null, CB], before: (fd) => fs.writeSync(fd, 'xyz') },
  'position undefined': { args: (fd) => [fd, b16(), 2, 5, undefined, CB], before: (fd) => fs.writeSync(fd, 'xyz') },
  'position a number after the fd position moved: the fd position stays': { args: (fd) => [fd, b16(), 0, 4, 20, CB], before: (fd) => fs.writeSync(fd, 'xyz') },
  'position past the end (a hole)': { args: (fd) => [fd, b16(), 0, 16, 100, CB] },
  'position past the end of an empty file': { initial: null, flags: 'w', args: (fd) => [fd, b16(), 0, 4, 4096, CB] },
  'offset, length, position all undefined': { args: (fd) => [fd, b16(), undefined, undefined, undefined, CB] },
  'offset null (read as an options object: length and position then ignored)': { args: (fd) => [fd, b16(), null, 4, 0, CB] },
  'offset null, callback fourth': { args: (fd) => [fd, b16(), null, CB] },
  'null, null, null': { args: (fd) => [fd, b16(), null, null, null, CB] },
  'offset as a function (the callback)': { args: (fd) => [fd, b16(), CB] },
  'length a string (ignored: the rest of the buffer)': { args: (fd) => [fd, b16(), 4, '3', CB] },
  'position a string (null)': { args: (fd) => [fd, b16(), 0, 4, '3', CB] },
  'position a bigint (null)': { args: (fd) => [fd, b16(), 0, 4, 3n, CB] },
  'position -1 (the fd position)': { args: (fd) => [fd, b16(), 0, 4, -1, CB], before: (fd) => fs.writeSync(fd, 'xyz') },
  'position -7': { args: (fd) => [fd, b16(), 0, 4, -7, CB] },
  'position 1.5': { args: (fd) => [fd, b16(), 0, 4, 1.5, CB] },
  'position NaN': { args: (fd) => [fd, b16(), 0, 4, NaN, CB] },
  'position -0': { args: (fd) => [fd, b16(), 0, 4, -0, CB], before: (fd) => fs.writeSync(fd, 'xyz') },
  'position Infinity': { args: (fd) => [fd, b16(), 0, 4, Infinity, CB] },
  'position 2 ** 53 - 1 (EFBIG)': { args: (fd) => [fd, b16(), 0, 4, 2 ** 53 - 1, CB] },
  'position 2 ** 53 (not a safe integer)': { args: (fd) => [fd, b16(), 0, 4, 2 ** 53, CB] },
  'position 2 ** 40': { args: (fd) => [fd, b16(), 0, 4, 2 ** 40, CB] },
  'length 0': { args: (fd) => [fd, b16(), 0, 0, CB] },
  'length 0 at a position past the end (no hole)': { args: (fd) => [fd, b16(), 0, 0, 100, CB] },
  'offset at the end (length 0)': { args: (fd) => [fd, b16(), 16, CB] },
  'an empty options object': { args: (fd) => [fd, b16(), {}, CB] },
  'options { offset }': { args: (fd) => [fd, b16(), { offset: 3 }, CB] },
  'options { offset, length }': { args: (fd) => [fd, b16(), { offset: 3, length: 4 }, CB] },
  'options { offset, length, position }': { args: (fd) => [fd, b16(), { offset: 3, length: 4, position: 1 }, CB] },
  'options { position }': { args: (fd) => [fd, b16(), { position: 5 }, CB] },
  'options { position: null }': { args: (fd) => [fd, b16(), { position: null }, CB], before: (fd) => fs.writeSync(fd, 'xyz') },
  'options { position: 2n }': { args: (fd) => [fd, b16(), { position: 2n }, CB] },
  'options { position: -1 }': { args: (fd) => [fd, b16(), { position: -1 }, CB] },
  'options { position } past the end': { args: (fd) => [fd, b16(), { position: 50 }, CB] },
  'options { length: 0 }': { args: (fd) => [fd, b16(), { length: 0 }, CB] },
  'options { offset: null }': { args: (fd) => [fd, b16(), { offset: null }, CB] },
  'options { offset: undefined, length: 2 }': { args: (fd) => [fd, b16(), { offset: undefined, length: 2 }, CB] },
  "options { length: '3' } (ignored)": { args: (fd) => [fd, b16(), { length: '3' }, CB] },
  'options, then a non-function length and position, callback sixth': { args: (fd) => [fd, b16(), { offset: 1, length: 2 }, 'x', 'y', CB] },
  'options, callback fifth': { args: (fd) => [fd, b16(), { offset: 1 }, undefined, CB] },
  'an array as options': { args: (fd) => [fd, b16(), [3], CB] },
  'a Uint8Array': { args: (fd) => [fd, new Uint8Array([1, 2, 3, 250]), CB] },
  'a Uint8Array over a SharedArrayBuffer, at an offset': { args: (fd) => [fd, sharedBytes(), 1, 3, CB] },
  'a Buffer on the shared pool (byteOffset not 0)': { args: (fd) => [fd, pooled(), 2, 5, CB] },
  'a Uint16Array viewing part of its buffer': { args: (fd) => [fd, u16(), CB] },
  'a Uint16Array, offset and length in bytes': { args: (fd) => [fd, u16(), 3, 7, 2, CB] },
  'a Float64Array': { args: (fd) => [fd, new Float64Array([Math.PI, -0, NaN]), CB] },
  'a BigInt64Array, options': { args: (fd) => [fd, new BigInt64Array([-1n, 2n ** 62n]), { offset: 4, length: 8 }, CB] },
  'an Int8Array': { args: (fd) => [fd, new Int8Array([-1, -128, 127]), CB] },
  'a DataView viewing part of its buffer': { args: (fd) => [fd, new DataView(Uint8Array.from({ length: 20 }, (_, i) => 97 + i).buffer, 3, 7), CB] },
  'a DataView, offset, length, position': { args: (fd) => [fd, new DataView(Uint8Array.from({ length: 20 }, (_, i) => 97 + i).buffer, 3, 7), 2, 3, 1, CB] },
  'an empty Buffer': { args: (fd) => [fd, Buffer.alloc(0), CB] },
  'a view of a detached ArrayBuffer (0 bytes)': { args: (fd) => [fd, detached(), CB] },
  'a view of a detached ArrayBuffer, options {}': { args: (fd) => [fd, detached(), {}, CB] },
  'a length-tracking view of a resizable ArrayBuffer': { args: (fd) => [fd, resizable(), CB] },
  'options with the callback fifth and a length between': { args: (fd) => [fd, b16(), { offset: 2 }, 3, CB] },
  'an empty DataView': { args: (fd) => [fd, new DataView(new ArrayBuffer(0)), CB] },
  "on an 'a' fd, position null": { flags: 'a', args: (fd) => [fd, b16(), 0, 4, null, CB] },
  "on an 'a' fd, position 0 (Linux appends anyway)": { flags: 'a', args: (fd) => [fd, b16(), 0, 4, 0, CB] },
  "on an 'a' fd, options { position: 2 }": { flags: 'a', args: (fd) => [fd, b16(), { position: 2 }, CB] },
  "on an 'a+' fd, position 1": { flags: 'a+', args: (fd) => [fd, b16(), 0, 4, 1, CB] },
  "on a 'w' fd": { flags: 'w', args: (fd) => [fd, b16(), CB] },
  "on a 'w+' fd, position 2": { flags: 'w+', args: (fd) => [fd, b16(), 0, 4, 2, CB] },
  'called with a this': { bind: { some: 'object' }, args: (fd) => [fd, b16(), CB] },
  // OS errors.
  "on an 'r' fd: EBADF": { flags: 'r', args: (fd) => [fd, b16(), CB] },
  "on an 'r' fd, at a position: EBADF": { flags: 'r', args: (fd) => [fd, b16(), 0, 4, 2, CB] },
  "an empty Buffer on an 'r' fd: EBADF (a write of nothing still asks)": { flags: 'r', args: (fd) => [fd, Buffer.alloc(0), CB] },
  [`on fd ${NEVER_OPEN}, open nowhere: EBADF`]: { args: () => [NEVER_OPEN, b16(), CB] },
  'on fd 1000000, open nowhere: EBADF': { args: () => [1_000_000, b16(), CB] },
}
// The 3 MiB case's data, made once per side.
const bigBytes = crypto.randomBytes(3 * 1024 * 1024 + 7)
function bigData() {
  return Buffer.from(bigBytes)
}
writeBuffer['3 MiB + 7 bytes'] = { args: (fd) => [fd, bigData(), CB] }
writeBuffer['3 MiB + 7 bytes at a position past the end'] = { args: (fd) => [fd, bigData(), 5, bigBytes.length - 5, 1000, CB] }

/** Argument errors: node:fs's, thrown, nothing written. */
const writeBufferThrows = {
  'no callback': { args: (fd) => [fd, b16()] },
  'no callback, offset and length': { args: (fd) => [fd, b16(), 0, 4] },
  'a non-function callback': { args: (fd) => [fd, b16(), 0, 4, 0, 'not a function'] },
  'a callback followed by another argument (that is taken as the callback)': { args: (fd) => [fd, b16(), 2, CB, 'x'] },
  'position a number where the callback is looked for': { args: (fd) => [fd, b16(), 0, 4, 5] },
  "offset a string '2'": { args: (fd) => [fd, b16(), '2', CB] },
  'offset -1': { args: (fd) => [fd, b16(), -1, CB] },
  'offset 1.5': { args: (fd) => [fd, b16(), 1.5, CB] },
  'offset past the end (17 of 16)': { args: (fd) => [fd, b16(), 17, CB] },
  'offset 2 ** 53': { args: (fd) => [fd, b16(), 2 ** 53, CB] },
  'offset NaN': { args: (fd) => [fd, b16(), NaN, CB] },
  'offset true': { args: (fd) => [fd, b16(), true, CB] },
  'offset a bigint': { args: (fd) => [fd, b16(), 2n, CB] },
  'length past the end (15 from 2 of 16)': { args: (fd) => [fd, b16(), 2, 15, CB] },
  'length -1': { args: (fd) => [fd, b16(), 0, -1, CB] },
  'length 1.5': { args: (fd) => [fd, b16(), 0, 1.5, CB] },
  'length NaN': { args: (fd) => [fd, b16(), 0, NaN, CB] },
  'length 2 ** 31': { args: (fd) => [fd, b16(), 0, 2 ** 31, CB] },
  'options { offset: -1 }': { args: (fd) => [fd, b16(), { offset: -1 }, CB] },
  "options { offset: '1' }": { args: (fd) => [fd, b16(), { offset: '1' }, CB] },
  'options { offset: 17 }': { args: (fd) => [fd, b16(), { offset: 17 }, CB] },
  'options { length: 17 }': { args: (fd) => [fd, b16(), { length: 17 }, CB] },
  'options { offset: 4, length: 13 }': { args: (fd) => [fd, b16(), { offset: 4, length: 13 }, CB] },
  'options { length: -1 }': { args: (fd) => [fd, b16(), { length: -1 }, CB] },
  "options { offset: 2n } (node:fs's own TypeError: BigInts mixed)": { args: (fd) => [fd, b16(), { offset: 2n }, CB] },
  "fd a string '1'": { args: () => ['1', b16(), CB] },
  'fd -1': { args: () => [-1, b16(), CB] },
  'fd 1.5': { args: () => [1.5, b16(), CB] },
  'fd 2 ** 31': { args: () => [2 ** 31, b16(), CB] },
  'fd null': { args: () => [null, b16(), CB] },
  'fd undefined': { args: () => [undefined, b16(), CB] },
  'fd an object': { args: () => [{}, b16(), CB] },
  'fd a bigint': { args: () => [3n, b16(), CB] },
  'fd NaN': { args: () => [NaN, b16(), CB] },
  'an ArrayBuffer': { args: (fd) => [fd, new ArrayBuffer(4), CB] },
  'a number': { args: (fd) => [fd, 1234, CB] },
  'an object with a toString': { args: (fd) => [fd, { toString: () => 'text' }, CB] },
  'a String object': { args: (fd) => [fd, new String('text'), CB] },
  'null': { args: (fd) => [fd, null, CB] },
  'an array of Buffers': { args: (fd) => [fd, [b16()], CB] },
}

cases(primTest, 'fs.write(fd, view, ...)', writeBuffer, (t, { ours }) => {
  t.false('threw' in ours.outcome, 'not an argument error')
  t.is(ours.outcome.calls, 1)
}, 'write')
cases(primTest, 'fs.write(fd, view, ...), bad arguments', writeBufferThrows, (t, { ours }) => {
  t.truthy(ours.outcome.threw, 'thrown')
  t.is(ours.file.bytes, `#${previous.slice(1)}`, "nothing written (but the '#' marking the fd position)")
}, 'write')

// ---------------------------------------------------------------------------------
// fs.write, a string

/** fs.write(fd, string, ...) cases. */
const writeString = {
  'utf8 (the default encoding), callback third': { args: (fd) => [fd, 'héllo wörld € 😀\n', CB] },
  'a position': { args: (fd) => [fd, 'héllo €', 3, CB] },
  'a position and utf8': { args: (fd) => [fd, 'héllo €', 3, 'utf8', CB] },
  "a position and 'utf-8'": { args: (fd) => [fd, 'héllo €', 3, 'utf-8', CB] },
  "a position and 'UTF8' (another spelling)": { args: (fd) => [fd, 'héllo €', 3, 'UTF8', CB] },
  'position null and utf8': { args: (fd) => [fd, 'héllo €', null, 'utf8', CB], before: (fd) => fs.writeSync(fd, 'xyz') },
  'position and encoding undefined': { args: (fd) => [fd, 'héllo €', undefined, undefined, CB], before: (fd) => fs.writeSync(fd, 'xyz') },
  'position 0, encoding null (utf8)': { args: (fd) => [fd, 'héllo €', 0, null, CB] },
  'position past the end (a hole)': { args: (fd) => [fd, 'héllo', 100, CB] },
  'position -1 (the fd position)': { args: (fd) => [fd, 'héllo', -1, CB], before: (fd) => fs.writeSync(fd, 'xyz') },
  'position 1.5': { args: (fd) => [fd, 'héllo', 1.5, CB] },
  'position -0': { args: (fd) => [fd, 'héllo', -0, CB], before: (fd) => fs.writeSync(fd, 'xyz') },
  'position null, callback fourth': { args: (fd) => [fd, 'héllo', null, CB], before: (fd) => fs.writeSync(fd, 'xyz') },
  'position an object (the fd position)': { args: (fd) => [fd, 'héllo', {}, CB], before: (fd) => fs.writeSync(fd, 'xyz') },
  'position 2n (the fd position)': { args: (fd) => [fd, 'héllo', 2n, CB] },
  "position '3' (the fd position)": { args: (fd) => [fd, 'héllo', '3', CB] },
  'position 2 ** 53 - 1 (EFBIG)': { args: (fd) => [fd, 'héllo', 2 ** 53 - 1, CB] },
  "position 'hex' and the callback fourth: 'hex' is a position here": { args: (fd) => [fd, 'abcd', 'hex', CB] },
  'an empty string': { args: (fd) => [fd, '', CB] },
  'an empty string at a position past the end': { args: (fd) => [fd, '', 100, CB] },
  'lone surrogates': { args: (fd) => [fd, 'a\ud800b\udc00c', CB] },
  "349,526 '€' (just over 1 MiB of UTF-8)": { args: (fd) => [fd, '€'.repeat(349_526), CB] },
  'hex': { args: (fd) => [fd, 'deadBEEF00', 0, 'hex', CB] },
  'hex, bad digits': { args: (fd) => [fd, 'abzz12', 0, 'hex', CB] },
  'latin1, position null': { args: (fd) => [fd, 'ÿþ\u0100Ā abc', null, 'latin1', CB] },
  'binary': { args: (fd) => [fd, 'ÿþ abc', 2, 'binary', CB] },
  'base64': { args: (fd) => [fd, 'aGVsbG8gd29ybGQ=', 0, 'base64', CB] },
  'base64url': { args: (fd) => [fd, 'aGVsbG8_-w', 0, 'base64url', CB] },
  'ucs2': { args: (fd) => [fd, 'abc€😀\ud800', 0, 'ucs2', CB] },
  'utf16le': { args: (fd) => [fd, 'abc€', undefined, 'utf16le', CB] },
  'ascii': { args: (fd) => [fd, 'abc é ÿ € \x80', 0, 'ascii', CB] },
  "an unknown encoding 'bogus' (utf8)": { args: (fd) => [fd, 'héllo', 0, 'bogus', CB] },
  "an encoding 'buffer'": { args: (fd) => [fd, 'héllo', 0, 'buffer', CB] },
  "on an 'a' fd": { flags: 'a', args: (fd) => [fd, 'héllo', CB] },
  "on an 'a' fd, position 0 (Linux appends anyway)": { flags: 'a', args: (fd) => [fd, 'héllo', 0, CB] },
  "on an 'a' fd, position 0, hex": { flags: 'a', args: (fd) => [fd, 'abcd', 0, 'hex', CB] },
  "on an 'r' fd: EBADF": { flags: 'r', args: (fd) => [fd, 'héllo', CB] },
  "an empty string on an 'r' fd: EBADF": { flags: 'r', args: (fd) => [fd, '', CB] },
  [`on fd ${NEVER_OPEN}: EBADF`]: { args: () => [NEVER_OPEN, 'héllo', 0, CB] },
}
const writeStringThrows = {
  'no callback': { args: (fd) => [fd, 'héllo'] },
  'no callback, a position and encoding (the encoding is taken as the callback)': { args: (fd) => [fd, 'héllo', 0, 'utf8'] },
  'a non-function callback': { args: (fd) => [fd, 'héllo', 0, 'utf8', 'x'] },
  'hex of odd length': { args: (fd) => [fd, 'abc', null, 'hex', CB] },
  "fd '1'": { args: () => ['1', 'héllo', CB] },
  'fd -1': { args: () => [-1, 'héllo', CB] },
  'fd 2 ** 31': { args: () => [2 ** 31, 'héllo', CB] },
  'fd null': { args: () => [null, 'héllo', CB] },
}
cases(primTest, 'fs.write(fd, string, ...)', writeString, (t, { ours }) => {
  t.false('threw' in ours.outcome, 'not an argument error')
  t.is(ours.outcome.calls, 1)
}, 'write')
cases(primTest, 'fs.write(fd, string, ...), bad arguments', writeStringThrows, (t, { ours }) => {
  t.truthy(ours.outcome.threw?.code, 'thrown')
  t.is(ours.file.bytes, `#${previous.slice(1)}`, "nothing written (but the '#' marking the fd position)")
}, 'write')

// ---------------------------------------------------------------------------------
// fs.writev

const three = () => [Buffer.from('one,'), new Uint8Array([116, 119, 111, 44]), new DataView(Buffer.from('xxthree,').buffer, 0, 0)]
const views = () => {
  const u8 = Uint8Array.from({ length: 24 }, (_, i) => 97 + i)
  return [new Uint16Array(u8.buffer, 2, 3), new DataView(u8.buffer, 10, 5), new Float32Array([1.5]), Buffer.from('!')]
}
// More buffers than IOV_MAX (1024): libuv writes them in rounds.
const many = () => Array.from({ length: 2500 }, (_, i) => Buffer.from(`${i},`))

const writevCases = {
  'three buffers': { args: (fd) => [fd, [Buffer.from('one,'), Buffer.from('two,'), Buffer.from('three,')], CB] },
  'typed arrays and DataViews of parts of their buffers': { args: (fd) => [fd, views(), CB] },
  'empty views among them': { args: (fd) => [fd, [Buffer.alloc(0), Buffer.from('a'), new Uint8Array(0), Buffer.from('b'), Buffer.alloc(0)], CB] },
  'one empty buffer': { args: (fd) => [fd, [Buffer.alloc(0)], CB] },
  'a view of nothing last': { args: (fd) => [fd, three(), CB] },
  'the same buffer three times': {
    args: (fd) => {
      const b = Buffer.from('same,')
      return [fd, [b, b, b], CB]
    },
  },
  'an empty array (node:fs answers on the next tick)': { args: (fd) => [fd, [], CB] },
  'an empty array, a position': { args: (fd) => [fd, [], 3, CB] },
  'a position': { args: (fd) => [fd, [Buffer.from('ab'), Buffer.from('cd')], 3, CB] },
  'position 0': { args: (fd) => [fd, [Buffer.from('ab'), Buffer.from('cd')], 0, CB], before: (fd) => fs.writeSync(fd, 'xyz') },
  'position null (the fd position)': { args: (fd) => [fd, [Buffer.from('ab'), Buffer.from('cd')], null, CB], before: (fd) => fs.writeSync(fd, 'xyz') },
  'position undefined': { args: (fd) => [fd, [Buffer.from('ab'), Buffer.from('cd')], undefined, CB], before: (fd) => fs.writeSync(fd, 'xyz') },
  'position past the end (a hole)': { args: (fd) => [fd, [Buffer.from('ab'), Buffer.from('cd')], 100, CB] },
  'position -1': { args: (fd) => [fd, [Buffer.from('ab'), Buffer.from('cd')], -1, CB], before: (fd) => fs.writeSync(fd, 'xyz') },
  'position 1.5': { args: (fd) => [fd, [Buffer.from('ab'), Buffer.from('cd')], 1.5, CB] },
  'position -0': { args: (fd) => [fd, [Buffer.from('ab'), Buffer.from('cd')], -0, CB], before: (fd) => fs.writeSync(fd, 'xyz') },
  'position 2n': { args: (fd) => [fd, [Buffer.from('ab'), Buffer.from('cd')], 2n, CB] },
  "position '2'": { args: (fd) => [fd, [Buffer.from('ab'), Buffer.from('cd')], '2', CB] },
  'position 2 ** 53 - 1 (EFBIG)': { args: (fd) => [fd, [Buffer.from('ab'), Buffer.from('cd')], 2 ** 53 - 1, CB] },
  '2,500 buffers (more than IOV_MAX)': { args: (fd) => [fd, many(), CB] },
  '2,500 buffers at a position': { args: (fd) => [fd, many(), 7, CB] },
  'a view of a detached ArrayBuffer among them': { args: (fd) => [fd, [Buffer.from('ab'), detached(), Buffer.from('cd')], CB] },
  'only a view of a detached ArrayBuffer': { args: (fd) => [fd, [detached()], CB] },
  'a length-tracking view of a resizable ArrayBuffer': { args: (fd) => [fd, [resizable(), Buffer.from('.')], CB] },
  '3 MiB + 7 bytes in two buffers': { args: (fd) => [fd, [bigData(), Buffer.from('tail')], CB] },
  "on an 'a' fd, position 0 (Linux appends anyway)": { flags: 'a', args: (fd) => [fd, [Buffer.from('ab'), Buffer.from('cd')], 0, CB] },
  "on an 'a' fd": { flags: 'a', args: (fd) => [fd, [Buffer.from('ab'), Buffer.from('cd')], CB] },
  "on an 'r' fd: EBADF": { flags: 'r', args: (fd) => [fd, [Buffer.from('ab')], CB] },
  "an empty buffer on an 'r' fd: EBADF": { flags: 'r', args: (fd) => [fd, [Buffer.alloc(0)], CB] },
  [`on fd ${NEVER_OPEN}: EBADF`]: { args: () => [NEVER_OPEN, [Buffer.from('ab')], CB] },
  [`an empty array on fd ${NEVER_OPEN}: success, nothing asked`]: { args: () => [NEVER_OPEN, [], CB] },
}
const writevThrows = {
  'no callback': { args: (fd) => [fd, [Buffer.from('ab')]] },
  'no callback, a position': { args: (fd) => [fd, [Buffer.from('ab')], 0] },
  'a non-function callback': { args: (fd) => [fd, [Buffer.from('ab')], 0, 'x'] },
  'a Buffer, not an array': { args: (fd) => [fd, Buffer.from('ab'), CB] },
  'a string': { args: (fd) => [fd, 'ab', CB] },
  'an array of strings': { args: (fd) => [fd, ['ab', 'cd'], CB] },
  'an array with an ArrayBuffer': { args: (fd) => [fd, [Buffer.from('ab'), new ArrayBuffer(2)], CB] },
  'an array with null': { args: (fd) => [fd, [Buffer.from('ab'), null], CB] },
  'a sparse array, [b, , b]': { args: (fd) => [fd, [Buffer.from('ab'), , Buffer.from('cd')], CB] }, // eslint-disable-line no-sparse-arrays
  'new Array(2) (holes only)': { args: (fd) => [fd, new Array(2), CB] },
  'an array-like object': { args: (fd) => [fd, { length: 1, 0: Buffer.from('ab') }, CB] },
  "fd '1'": { args: () => ['1', [Buffer.from('ab')], CB] },
  'fd -1': { args: () => [-1, [Buffer.from('ab')], CB] },
  'fd 1.5': { args: () => [1.5, [Buffer.from('ab')], CB] },
  'fd null': { args: () => [null, [Buffer.from('ab')], CB] },
  'fd -1, an empty array': { args: () => [-1, [], CB] },
}
cases(primTest, 'fs.writev', writevCases, (t, { ours }) => {
  t.false('threw' in ours.outcome, 'not an argument error')
  t.is(ours.outcome.calls, 1)
}, 'writev')
cases(primTest, 'fs.writev, bad arguments', writevThrows, (t, { ours }) => {
  t.truthy(ours.outcome.threw?.code, 'thrown')
  t.is(ours.file.bytes, `#${previous.slice(1)}`, "nothing written (but the '#' marking the fd position)")
}, 'writev')

// ---------------------------------------------------------------------------------
// fs.fsync, fs.fdatasync, fs.close

for (const op of ['fsync', 'fdatasync']) {
  cases(primTest, `fs.${op}`, {
    'an fd written to': { op, before: (fd) => fs.writeSync(fd, 'data'), args: (fd) => [fd, CB] },
    "an 'r' fd": { op, flags: 'r', args: (fd) => [fd, CB] },
    "an 'a' fd": { op, flags: 'a', args: (fd) => [fd, CB] },
    'called with a this': { op, bind: { some: 'object' }, args: (fd) => [fd, CB] },
    [`fd ${NEVER_OPEN}: EBADF`]: { op, args: () => [NEVER_OPEN, CB] },
    'fd 1000000: EBADF': { op, args: () => [1_000_000, CB] },
  }, (t, { ours }) => t.is(ours.outcome.calls, 1))
  cases(primTest, `fs.${op}, bad arguments`, {
    'no callback': { op, args: (fd) => [fd] },
    'a non-function callback': { op, args: (fd) => [fd, 'x'] },
    'callback null': { op, args: (fd) => [fd, null] },
    "fd '1'": { op, args: () => ['1', CB] },
    'fd -1': { op, args: () => [-1, CB] },
    'fd 1.5': { op, args: () => [1.5, CB] },
    'fd 2 ** 31': { op, args: () => [2 ** 31, CB] },
    'fd null': { op, args: () => [null, CB] },
    'fd undefined': { op, args: () => [undefined, CB] },
    'fd -1, no callback': { op, args: () => [-1] },
  }, (t, { ours }) => t.truthy(ours.outcome.threw?.code, 'thrown'))
}

// A FIFO's fd, opened for reading and writing (which does not wait for a peer): fsync
// and fdatasync fail with EINVAL, a write lands in the pipe.
const fifoReason = (() => {
  if (!primitives) return primitivesReason
  const probe = tmpPath('fifo-probe')
  const r = spawnSync('mkfifo', [probe], { encoding: 'utf8', timeout: 10_000 })
  if (r.error || r.status !== 0) return `no mkfifo: ${(r.error?.message ?? r.stderr).trim()}`
  return null
})()
const fifoTest = fifoReason ? skipping(test, fifoReason) : test
fifoTest('a FIFO: fsync and fdatasync give EINVAL, write and writev land in the pipe, as node:fs', async (t) => {
  for (const [label, op, args] of [
    ['fsync', 'fsync', (fd) => [fd, CB]],
    ['fdatasync', 'fdatasync', (fd) => [fd, CB]],
    ['write', 'write', (fd) => [fd, Buffer.from('into the pipe'), CB]],
    ['write at a position: ESPIPE', 'write', (fd) => [fd, Buffer.from('into the pipe'), 0, 4, 0, CB]],
    ['writev', 'writev', (fd) => [fd, [Buffer.from('in'), Buffer.from('to')], CB]],
    ['writev at a position: ESPIPE', 'writev', (fd) => [fd, [Buffer.from('in'), Buffer.from('to')], 2, CB]],
  ]) {
    const results = {}
    for (const side of SIDES) {
      const fifo = tmpPath(`fifo-${side}`)
      spawnSync('mkfifo', [fifo])
      const fd = fs.openSync(fifo, 'r+')
      const { outcome } = await callOutcome(FNS[side][op], args(fd))
      let inPipe = Buffer.alloc(0)
      const rfd = fs.openSync(fifo, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK)
      try {
        const buf = Buffer.alloc(100)
        inPipe = buf.subarray(0, fs.readSync(rfd, buf))
      } catch (e) {
        inPipe = e.code
      }
      fs.closeSync(rfd)
      fs.closeSync(fd)
      results[side] = { outcome, inPipe: typeof inPipe === 'string' ? inPipe : inPipe.toString('latin1') }
    }
    t.deepEqual(results.ours, results.node, label)
  }
})

// Closing: serial, since a closed fd's number may be taken by the next open of any test
// running at the same time, which a later check of it (or a second close) would hit.
const closeCases = {
  'an open fd': { closes: true, args: (fd) => [fd, CB] },
  'an open fd, no callback (the default callback)': { closes: true, args: (fd) => [fd] },
  'an open fd, callback undefined (the default callback)': { closes: true, args: (fd) => [fd, undefined] },
  'called with a this': { closes: true, bind: { some: 'object' }, args: (fd) => [fd, CB] },
  'an fd written to, with the write not waited for': {
    closes: true,
    before: (fd) => fs.writeSync(fd, 'x'),
    args: (fd) => [fd, CB],
  },
  'a closed fd: EBADF': { closes: true, before: (fd) => fs.closeSync(fd), args: (fd) => [fd, CB] },
  [`fd ${NEVER_OPEN}: EBADF`]: { mark: false, args: () => [NEVER_OPEN, CB] },
}
const closeThrows = {
  'callback null': { args: (fd) => [fd, null] },
  'a non-function callback': { args: (fd) => [fd, 'x'] },
  "fd '1'": { args: () => ['1', CB] },
  'fd -1': { args: () => [-1, CB] },
  'fd 1.5': { args: () => [1.5, CB] },
  'fd 2 ** 31': { args: () => [2 ** 31, CB] },
  'fd null': { args: () => [null, CB] },
  'fd undefined': { args: () => [undefined, CB] },
  'fd -1, no callback': { args: () => [-1] },
}
for (const c of [...Object.values(closeCases), ...Object.values(closeThrows)]) c.op = 'close'
cases(primSerial, 'fs.close', closeCases, (t, { ours }, c) => {
  if (c.closes) t.deepEqual(ours.after.fdOpen, { error: 'EBADF' }, 'the fd is closed')
})
cases(primSerial, 'fs.close, bad arguments', closeThrows, (t, { ours }) => {
  t.truthy(ours.outcome.threw?.code, 'thrown')
  t.deepEqual(ours.after.mark, { value: 1 }, 'the fd is still open')
})

primSerial('fs.close twice: the second gets EBADF, as node:fs', async (t) => {
  const results = {}
  for (const side of SIDES) {
    const file = tmpPath(`close-twice-${side}`)
    const fd = fs.openSync(file, 'w')
    const first = await callOutcome(FNS[side].close, [fd, CB])
    const second = await callOutcome(FNS[side].close, [fd, CB])
    results[side] = { first: first.outcome, second: second.outcome, fdsOpen: fdsOpenOn(file) }
  }
  t.deepEqual(results.ours, results.node)
  t.like(results.ours.second.args[0].error, { code: 'EBADF', syscall: 'close', message: 'EBADF: bad file descriptor, close' })
})

primSerial('fs.write, writev, fsync, fdatasync on an fd just closed: EBADF with node:fs fields', async (t) => {
  const calls = {
    write: (fd) => [fd, Buffer.from('ab'), CB],
    'write, a string': (fd) => [fd, 'ab', 0, CB],
    writev: (fd) => [fd, [Buffer.from('ab')], CB],
    fsync: (fd) => [fd, CB],
    fdatasync: (fd) => [fd, CB],
  }
  for (const [label, args] of Object.entries(calls)) {
    const op = label.split(',')[0]
    const results = {}
    for (const side of SIDES) {
      const fd = fs.openSync(tmpPath(`closed-${side}`), 'w')
      fs.closeSync(fd)
      results[side] = (await callOutcome(FNS[side][op], args(fd))).outcome
    }
    t.deepEqual(results.ours, results.node, label)
    t.like(results.ours.args?.[0]?.error, { code: 'EBADF', errno: os.constants.errno.EBADF * -1 }, label)
  }
})

// fs.close(fd) without a callback: node:fs's default callback throws its error, which
// nothing catches. In a child process of its own.
const fixture = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'fd-writes-child.mjs')

/** Runs fixtures/fd-writes-child.mjs (`command` before it, `options` for the spawn). */
function child(request, { command = [], options = {} } = {}) {
  return new Promise((resolve) => {
    const [file, ...args] = [...command, process.execPath, fixture, JSON.stringify(request)]
    execFile(file, args, { timeout: 60_000, encoding: 'utf8', ...options }, (err, stdout, stderr) => {
      let printed = null
      try {
        printed = JSON.parse(stdout)
      } catch {}
      resolve({ exit: err ? err.code : 0, signal: err?.signal ?? null, printed, stderr })
    })
  })
}

/**
 * The lines of a dying process's report that name the error, not its stack (an error
 * without frames is shown as `[Error: ...] {`: see the stack test below).
 */
const errorLines = (stderr) =>
  stderr
    .split('\n')
    .map((line) => line.replace(/^\[(\w*Error: .*)\] \{$/, '$1'))
    .filter((line) => /^(\w*Error: |  (errno|code|syscall|path): )/.test(line))

primTest('fs.close(fd) without a callback, fd not open: the error is thrown uncaught, as node:fs', async (t) => {
  const results = {}
  for (const api of SIDES) {
    const handled = await child({ scenario: 'close-default', api, file: tmpPath(`close-default-${api}`), handler: true })
    const dies = await child({ scenario: 'close-default', api, file: tmpPath(`close-default-${api}`) })
    results[api] = { handled: { exit: handled.exit, printed: handled.printed }, dies: { exit: dies.exit, signal: dies.signal, error: errorLines(dies.stderr) } }
  }
  t.deepEqual(results.ours, results.node)
  t.like(results.ours.handled.printed, { backend: 'native', outcome: { origin: 'uncaughtException', error: { code: 'EBADF', syscall: 'close' } } })
  t.is(results.ours.dies.exit, 1)
  t.true(results.ours.dies.error.includes('Error: EBADF: bad file descriptor, close'), results.ours.dies.error.join('\n'))
})

// What fairfs takes goes to the addon (one request each: the binding's call is counted),
// and a write or sync runs on its pool (stats().completed); what it hands to node:fs's
// own does neither. Serial: nothing else uses the pool meanwhile.
const kBindingCalls = { write: 'writeBuffers', writev: 'writeBuffers', fsync: 'syncFd', fdatasync: 'syncFd', close: 'closeInOrder', open: 'openPath' }
primSerial('the calls fairfs takes go to the addon and its pool; the ones it hands to node:fs do not', async (t) => {
  const binding = createRequire(import.meta.url)('../binding.js')
  const counts = {}
  const saved = {}
  for (const name of new Set(Object.values(kBindingCalls))) {
    saved[name] = binding[name]
    counts[name] = 0
    binding[name] = function (...args) {
      counts[name]++
      return Reflect.apply(saved[name], this, args)
    }
  }
  t.teardown(() => Object.assign(binding, saved))
  const file = tmpPath('pool-use')
  const dir = freshDir('pool-use')
  const fd = fs.openSync(file, 'w')
  const rfd = fs.openSync(file, 'r')
  const calls = {
    'write(fd, buffer)': [true, 'write', [fd, b16(), CB]],
    'write(fd, buffer, options)': [true, 'write', [fd, b16(), { offset: 2, position: 1 }, CB]],
    'write(fd, uint16array, 2, 4, 0)': [true, 'write', [fd, u16(), 2, 4, 0, CB]],
    'write(fd, string)': [true, 'write', [fd, 'héllo', CB]],
    "write(fd, string, 0, 'utf-8')": [true, 'write', [fd, 'héllo', 0, 'utf-8', CB]],
    "write(fd, string, 0, 'hex')": [false, 'write', [fd, 'abcd', 0, 'hex', CB]],
    'write(fd, buffer, 0, 4, -1)': [false, 'write', [fd, b16(), 0, 4, -1, CB]],
    'writev(fd, buffers, 3)': [true, 'writev', [fd, [Buffer.from('ab'), Buffer.from('cd')], 3, CB]],
    'writev(fd, [])': [false, 'writev', [fd, [], CB]],
    'fsync(fd)': [true, 'fsync', [fd, CB]],
    'fdatasync(fd)': [true, 'fdatasync', [fd, CB]],
    "open(path, 'w')": [true, 'open', [at(dir, 'w'), 'w', CB]],
    "open(path, 'a', 0o600)": [true, 'open', [at(dir, 'a'), 'a', 0o600, CB]],
    "open(path, 'r')": [false, 'open', [file, 'r', CB]],
    'open(path) (no flags)': [false, 'open', [file, CB]],
    'close(fd of the read open)': [true, 'close', [rfd, CB]],
  }
  for (const [label, [ours, op, args]] of Object.entries(calls)) {
    const name = kBindingCalls[op]
    const before = { completed: fairfs.stats().completed, calls: counts[name] }
    const { raw } = await callOutcome(primitives[op], args)
    t.is(raw?.[0], null, `${label} succeeded`)
    if (op === 'open') fs.closeSync(raw[1])
    t.is(counts[name] - before.calls, ours ? 1 : 0, `${label}: ${ours ? "fairfs's" : "node:fs's"}`)
    // fs.open's job is not counted in stats().completed: only the others are checked there.
    if (op !== 'open') t.is(fairfs.stats().completed - before.completed, ours ? 1 : 0, `${label}: ${ours ? 'on the pool' : 'not on the pool'}`)
  }
  fs.closeSync(fd)
})

// The callback runs in its caller's async context, as node:fs's does.
primTest("callbacks see their caller's AsyncLocalStorage store, as node:fs's do", async (t) => {
  const { AsyncLocalStorage } = await import('node:async_hooks')
  const als = new AsyncLocalStorage()
  const file = tmpPath('als')
  const fd = fs.openSync(file, 'w')
  const dir = freshDir('als')
  const calls = {
    write: ['write', () => [fd, b16(), CB]],
    'write, a string': ['write', () => [fd, 'ab', CB]],
    writev: ['writev', () => [fd, [b16()], CB]],
    fsync: ['fsync', () => [fd, CB]],
    fdatasync: ['fdatasync', () => [fd, CB]],
    open: ['open', (side) => [at(dir, side), 'w', CB]],
  }
  for (const [label, [op, args]] of Object.entries(calls)) {
    const seen = {}
    for (const side of SIDES) {
      seen[side] = await new Promise((resolve) => {
        als.run({ side }, () =>
          FNS[side][op](...args(side).map((a) => (a === CB ? (err, opened) => {
            if (op === 'open' && typeof opened === 'number') fs.closeSync(opened)
            resolve({ err: err?.code ?? null, store: als.getStore() })
          } : a))),
        )
      })
    }
    t.deepEqual(seen.ours, { ...seen.node, store: { side: 'ours' } }, label)
    t.deepEqual(seen.node.store, { side: 'node' }, label)
  }
  fs.closeSync(fd)
})

// An OS error from node:fs's binding is made in C++ with no JavaScript frames: its stack
// is its first line alone, which is what a log or an uncaught report shows.
primTest("an OS error's stack is node:fs's: the message line alone, no frames", async (t) => {
  const calls = {
    write: ['write', [NEVER_OPEN, Buffer.from('ab'), CB]],
    writev: ['writev', [NEVER_OPEN, [Buffer.from('ab')], CB]],
    fsync: ['fsync', [NEVER_OPEN, CB]],
    close: ['close', [NEVER_OPEN, CB]],
  }
  for (const [label, [op, args]] of Object.entries(calls)) {
    const stacks = {}
    for (const side of SIDES) stacks[side] = (await callOutcome(FNS[side][op], args)).raw?.[0]?.stack
    t.is(stacks.ours, stacks.node, label)
  }
  const dir = freshDir('stack')
  fs.writeFileSync(at(dir), '')
  const stacks = {}
  for (const side of SIDES) stacks[side] = (await callOutcome(FNS[side].open, [at(dir), 'wx', CB])).raw?.[0]?.stack?.split(dir).join('<dir>')
  t.is(stacks.ours, stacks.node, 'open')
})

primTest('a process with writes, an fsync and a close pending stays alive until they are done, as with node:fs', async (t) => {
  const results = {}
  for (const api of SIDES) {
    const file = tmpPath(`keeps-alive-${api}`)
    const r = await child({ scenario: 'keeps-alive', api, file })
    results[api] = { exit: r.exit, printed: r.printed, file: describeFile(file) }
  }
  t.deepEqual(results.ours, results.node)
  t.like(results.ours.printed, { backend: 'native', outcome: { events: ['write 8388608', 'writev 6', 'fsync', 'close'] } })
})

primTest("a write's callback that throws: the error is uncaught, the other writes' callbacks still run, as node:fs", async (t) => {
  const results = {}
  for (const api of SIDES) {
    const file = tmpPath(`callback-throws-${api}`)
    const r = await child({ scenario: 'callback-throws', api, file })
    results[api] = { exit: r.exit, printed: r.printed, file: describeFile(file) }
  }
  t.deepEqual(results.ours, results.node)
  t.like(results.ours.printed, { backend: 'native', outcome: { uncaught: ['from callback 3'] } })
})

// ---------------------------------------------------------------------------------
// fs.open

/**
 * One side of an open case: `c.setup(dir)` makes the starting state, `c.args(dir)` the
 * arguments (CB for the callback); `open` is the side's fs.open unless given. An fd it gives is looked at (its flags, the file's
 * mode), written to ('#') and closed.
 */
async function openSide(side, c, open = FNS[side].open) {
  const dir = freshDir(side)
  await c.setup?.(dir)
  const args = c.args(dir)
  const { outcome, raw } = await callOutcome(open, args)
  const result = { outcome }
  const fd = raw?.[1]
  if (typeof fd === 'number') {
    outcome.args[1] = { fd: Number.isInteger(fd) && fd >= 0 ? 'an fd' : fd }
    result.flags = fdFlags(fd)
    result.mode = (fs.fstatSync(fd).mode & 0o7777).toString(8)
    result.mark = attempt(() => fs.writeSync(fd, '#'))
    fs.closeSync(fd)
  }
  const listing = {}
  for (const name of fs.readdirSync(dir)) listing[name] = describeFile(path.join(dir, name))
  result.dir = listing
  const rel = path.relative(process.cwd(), dir)
  return normalize(result, [[dir, '<dir>'], [rel, '<rel>']])
}

const at = (dir, name = 'f') => path.join(dir, name)
const existing = (dir) => fs.writeFileSync(at(dir), previous)
const { O_WRONLY, O_RDWR, O_CREAT, O_TRUNC, O_APPEND, O_EXCL, O_NOFOLLOW, O_DIRECTORY, O_SYNC } = fs.constants

const openCases = {
  "'w', a new file": { args: (dir) => [at(dir), 'w', CB] },
  "'w', an existing file (truncated)": { setup: existing, args: (dir) => [at(dir), 'w', CB] },
  "'w', mode 0o600": { args: (dir) => [at(dir), 'w', 0o600, CB] },
  "'w', mode '640' (a string)": { args: (dir) => [at(dir), 'w', '640', CB] },
  "'w', mode 0o777 (the umask applies)": { args: (dir) => [at(dir), 'w', 0o777, CB] },
  "'w', mode 0o4755": { args: (dir) => [at(dir), 'w', 0o4755, CB] },
  "'w', mode undefined": { args: (dir) => [at(dir), 'w', undefined, CB] },
  "'w', mode null": { args: (dir) => [at(dir), 'w', null, CB] },
  "'w', mode on an existing file (not changed)": { setup: existing, args: (dir) => [at(dir), 'w', 0o600, CB] },
  "'a', an existing file": { setup: existing, args: (dir) => [at(dir), 'a', CB] },
  "'a', a new file": { args: (dir) => [at(dir), 'a', CB] },
  "'a+'": { setup: existing, args: (dir) => [at(dir), 'a+', CB] },
  "'as'": { setup: existing, args: (dir) => [at(dir), 'as', CB] },
  "'as+'": { setup: existing, args: (dir) => [at(dir), 'as+', CB] },
  "'r+'": { setup: existing, args: (dir) => [at(dir), 'r+', CB] },
  "'rs+'": { setup: existing, args: (dir) => [at(dir), 'rs+', CB] },
  "'w+'": { setup: existing, args: (dir) => [at(dir), 'w+', CB] },
  "'wx', a new file": { args: (dir) => [at(dir), 'wx', CB] },
  "'wx', an existing file: EEXIST": { setup: existing, args: (dir) => [at(dir), 'wx', CB] },
  "'xw+', an existing file: EEXIST": { setup: existing, args: (dir) => [at(dir), 'xw+', CB] },
  "'ax', an existing file: EEXIST": { setup: existing, args: (dir) => [at(dir), 'ax', CB] },
  "'wx', a dangling symlink: EEXIST": { setup: (dir) => fs.symlinkSync('nowhere', at(dir)), args: (dir) => [at(dir), 'wx', CB] },
  "'w', a dangling symlink (its target created)": { setup: (dir) => fs.symlinkSync('target', at(dir)), args: (dir) => [at(dir), 'w', CB] },
  "'w', in a missing directory: ENOENT": { args: (dir) => [at(dir, 'missing/f'), 'w', CB] },
  "'r+', a missing file: ENOENT": { args: (dir) => [at(dir), 'r+', CB] },
  "'w', a directory: EISDIR": { args: (dir) => [dir, 'w', CB] },
  "'a', a directory: EISDIR": { args: (dir) => [dir, 'a', CB] },
  "'w', a path with a trailing slash: EISDIR": { args: (dir) => [`${at(dir)}/`, 'w', CB] },
  "'w', under a regular file: ENOTDIR": { setup: existing, args: (dir) => [at(dir, 'f/g'), 'w', CB] },
  "'w', a name of 300 bytes: ENAMETOOLONG": { args: (dir) => [at(dir, 'n'.repeat(300)), 'w', CB] },
  "'w', a relative path": { args: (dir) => [path.relative(process.cwd(), at(dir)), 'w', CB] },
  "'wx', a relative path, existing: EEXIST (the path as given)": { setup: existing, args: (dir) => [path.relative(process.cwd(), at(dir)), 'wx', CB] },
  "'w', a Buffer path": { args: (dir) => [Buffer.from(at(dir)), 'w', CB] },
  "'w', a Buffer path of bytes that are not UTF-8": { args: (dir) => [Buffer.concat([Buffer.from(`${dir}/`), Buffer.from([0xff, 0xfe, 0x41])]), 'w', CB] },
  "'wx', a Buffer path of bytes that are not UTF-8, existing: EEXIST": {
    setup: (dir) => fs.writeFileSync(Buffer.concat([Buffer.from(`${dir}/`), Buffer.from([0xff, 0x41])]), 'x'),
    args: (dir) => [Buffer.concat([Buffer.from(`${dir}/`), Buffer.from([0xff, 0x41])]), 'wx', CB],
  },
  "'w', a file: URL": { args: (dir) => [pathToFileURL(at(dir, 'a file with spaces %')), 'w', CB] },
  "'wx', a file: URL, existing: EEXIST": { setup: existing, args: (dir) => [pathToFileURL(at(dir)), 'wx', CB] },
  'numeric flags O_WRONLY | O_CREAT | O_TRUNC': { setup: existing, args: (dir) => [at(dir), O_WRONLY | O_CREAT | O_TRUNC, CB] },
  'numeric flags O_RDWR | O_APPEND': { setup: existing, args: (dir) => [at(dir), O_RDWR | O_APPEND, CB] },
  'numeric flags O_WRONLY | O_SYNC': { setup: existing, args: (dir) => [at(dir), O_WRONLY | O_SYNC, CB] },
  'numeric flags O_WRONLY | O_CREAT | O_EXCL, existing: EEXIST': { setup: existing, args: (dir) => [at(dir), O_WRONLY | O_CREAT | O_EXCL, CB] },
  'numeric flags O_WRONLY | O_NOFOLLOW on a symlink: ELOOP': {
    setup: (dir) => {
      existing(dir)
      fs.symlinkSync('f', at(dir, 'link'))
    },
    args: (dir) => [at(dir, 'link'), O_WRONLY | O_NOFOLLOW, CB],
  },
  'numeric flags O_RDWR | O_DIRECTORY on a file: ENOTDIR': { setup: existing, args: (dir) => [at(dir), O_RDWR | O_DIRECTORY, CB] },
  // Opens for reading: node:fs's own.
  "'r'": { setup: existing, args: (dir) => [at(dir), 'r', CB] },
  "'r', a missing file: ENOENT": { args: (dir) => [at(dir), 'r', CB] },
  "'r', a directory": { args: (dir) => [dir, 'r', CB] },
  'no flags (callback second)': { setup: existing, args: (dir) => [at(dir), CB] },
  'flags undefined': { setup: existing, args: (dir) => [at(dir), undefined, CB] },
  'flags null, mode 0o600': { setup: existing, args: (dir) => [at(dir), null, 0o600, CB] },
  "'rs'": { setup: existing, args: (dir) => [at(dir), 'rs', CB] },
}
const openThrows = {
  "flags 'bogus'": { args: (dir) => [at(dir), 'bogus', CB] },
  'flags 1.5': { args: (dir) => [at(dir), 1.5, CB] },
  'flags 2 ** 32': { args: (dir) => [at(dir), 2 ** 32, CB] },
  'flags an object': { args: (dir) => [at(dir), {}, CB] },
  'mode -1': { args: (dir) => [at(dir), 'w', -1, CB] },
  "mode 'abc'": { args: (dir) => [at(dir), 'w', 'abc', CB] },
  'mode 2 ** 32': { args: (dir) => [at(dir), 'w', 2 ** 32, CB] },
  'mode an object': { args: (dir) => [at(dir), 'w', {}, CB] },
  'no callback': { args: (dir) => [at(dir), 'w'] },
  'no callback, a mode': { args: (dir) => [at(dir), 'w', 0o666] },
  'a non-function callback': { args: (dir) => [at(dir), 'w', 0o666, 'x'] },
  'a path with a null byte': { args: (dir) => [`${at(dir)}\0x`, 'w', CB] },
  'a path a number': { args: () => [123, 'w', CB] },
  'a path undefined': { args: () => [undefined, 'w', CB] },
  'an http: URL': { args: () => [new URL('http://example.invalid/f'), 'w', CB] },
  'a file: URL with an encoded slash': { args: (dir) => [new URL(`${pathToFileURL(dir)}/a%2Fb`), 'w', CB] },
}
for (const [what, c] of Object.entries({ ...openCases, ...openThrows })) {
  const throws = what in openThrows
  primTest(`fs.open${throws ? ', bad arguments' : ''}: ${what}: as node:fs`, async (t) => {
    const node = await openSide('node', c)
    const ours = await openSide('ours', c)
    t.deepEqual(ours, node)
    if (throws) {
      t.truthy(ours.outcome.threw?.code, 'thrown')
      t.deepEqual(ours.dir, {}, 'nothing made')
    } else t.is(ours.outcome.calls, 1)
  })
}

// ---------------------------------------------------------------------------------
// util.promisify

primTest('util.promisify(write), (writev), (fsync), (fdatasync), (close), (open): node:fs shapes', async (t) => {
  /** What the promise came to: its value (views and arrays by content, the one passed by identity) or its error. */
  const settle = async (p, callArgs) => {
    try {
      const value = await p
      if (value === null || typeof value !== 'object') return { value: typeof value === 'number' ? typeof value : value }
      return { value: Object.fromEntries(Object.entries(value).map(([k, v]) => [k, describeArg(v, callArgs)])), keys: Object.keys(value) }
    } catch (e) {
      return { error: describeError(e) }
    }
  }
  const calls = {
    'write(fd, buffer)': ['write', (fd) => [fd, b16()]],
    'write(fd, buffer, 2, 5, 1)': ['write', (fd) => [fd, b16(), 2, 5, 1]],
    'write(fd, buffer, { offset: 1 })': ['write', (fd) => [fd, b16(), { offset: 1 }]],
    'write(fd, Uint16Array)': ['write', (fd) => [fd, u16()]],
    'write(fd, string)': ['write', (fd) => [fd, 'héllo']],
    'write(fd, string, 3)': ['write', (fd) => [fd, 'héllo', 3]],
    "write(fd, string, 0, 'hex')": ['write', (fd) => [fd, 'abcd', 0, 'hex']],
    'write(fd not open, buffer): EBADF': ['write', () => [NEVER_OPEN, b16()]],
    'write(fd not open, string): EBADF': ['write', () => [NEVER_OPEN, 'ab']],
    'write(-1, buffer): thrown, rejected': ['write', () => [-1, b16()]],
    'writev(fd, buffers)': ['writev', (fd) => [fd, [Buffer.from('ab'), Buffer.from('cd')]]],
    'writev(fd, buffers, 2)': ['writev', (fd) => [fd, [Buffer.from('ab'), Buffer.from('cd')], 2]],
    'writev(fd, [])': ['writev', (fd) => [fd, []]],
    'writev(fd not open, buffers): EBADF': ['writev', () => [NEVER_OPEN, [Buffer.from('ab')]]],
    'fsync(fd)': ['fsync', (fd) => [fd]],
    'fdatasync(fd)': ['fdatasync', (fd) => [fd]],
    'fsync(fd not open): EBADF': ['fsync', () => [NEVER_OPEN]],
    [`close(${NEVER_OPEN}): EBADF`]: ['close', () => [NEVER_OPEN]],
  }
  for (const [label, [op, args]] of Object.entries(calls)) {
    const results = {}
    for (const side of SIDES) {
      const file = tmpPath(`promisify-${side}`)
      fs.writeFileSync(file, previous)
      const fd = fs.openSync(file, 'r+')
      const callArgs = args(fd)
      let outcome
      try {
        outcome = await settle(util.promisify(FNS[side][op])(...callArgs), callArgs)
      } catch (e) {
        outcome = { threw: describeError(e) }
      }
      fs.closeSync(fd)
      results[side] = { outcome, file: describeFile(file) }
    }
    t.deepEqual(results.ours, results.node, label)
  }
  t.is(primitives.write[util.promisify.custom], nodeFs.write[util.promisify.custom], 'no custom promisify on either')

  // open and close, promisified.
  const results = {}
  for (const side of SIDES) {
    const dir = freshDir(side)
    const open = util.promisify(FNS[side].open)
    const close = util.promisify(FNS[side].close)
    const fd = await open(at(dir), 'w', 0o640)
    const closed = await close(fd)
    const eexist = await settle(open(at(dir), 'wx'), [])
    results[side] = normalize({ fd: typeof fd, closed, eexist, file: describeFile(at(dir)) }, [[dir, '<dir>']])
  }
  t.deepEqual(results.ours, results.node, 'open, close')
})

// ---------------------------------------------------------------------------------
// Order and many at once

/** `count` records of `length` bytes, each different: a tag and its number, then filler. */
function records(count, length, tag) {
  return Array.from({ length: count }, (_, i) => {
    const record = Buffer.alloc(length, 0x61 + (i % 26))
    record.write(`${tag}${String(i).padStart(6, '0')}:`)
    record[length - 1] = 0x0a
    return record
  })
}

// node:fs makes no such promise: its writes may run on libuv's threads in any order,
// and a close may overtake them.
primTest('500 fs.writes on one fd not waited for, then fs.close: every write lands, in call order, then the close', async (t) => {
  const file = tmpPath('ordered')
  const fd = fs.openSync(file, 'w')
  const list = records(500, 37, 'o')
  const done = []
  await new Promise((resolve) => {
    list.forEach((record, i) => {
      const args = i % 3 === 0 ? [fd, record] : i % 3 === 1 ? [fd, record, 0, record.length, null] : [fd, record, { position: null }]
      primitives.write(...args, (err, n, buffer) => done.push({ i, err: err?.code ?? null, n, same: buffer === record }))
    })
    primitives.close(fd, (err) => {
      done.push({ close: err?.code ?? null })
      resolve()
    })
  })
  t.is(done.length, 501)
  t.deepEqual(done.slice(0, 500), list.map((record, i) => ({ i, err: null, n: record.length, same: true })), 'callbacks in call order, each whole')
  t.deepEqual(done[500], { close: null }, 'the close last, successful')
  t.true(fs.readFileSync(file).equals(Buffer.concat(list)), 'the file is the records in call order')
  t.is(fdsOpenOn(file), 0, 'the fd is closed')
})

primTest('writes, writev, fsync, fdatasync and close on one fd not waited for, mixed: in call order', async (t) => {
  const file = tmpPath('ordered-mixed')
  const fd = fs.openSync(file, 'w')
  const order = []
  const expected = []
  await new Promise((resolve) => {
    for (let i = 0; i < 100; i++) {
      const s = `${String(i).padStart(3, '0')},`
      expected.push(s)
      if (i % 4 === 0) primitives.write(fd, s, () => order.push(`write ${i}`))
      else if (i % 4 === 1) primitives.writev(fd, [Buffer.from(s.slice(0, 2)), Buffer.from(s.slice(2))], () => order.push(`writev ${i}`))
      else if (i % 4 === 2) primitives.write(fd, Buffer.from(s), () => order.push(`write ${i}`))
      else {
        primitives.write(fd, s, null, 'utf8', () => order.push(`write ${i}`))
        primitives[i % 8 === 3 ? 'fsync' : 'fdatasync'](fd, () => order.push(`sync ${i}`))
      }
    }
    primitives.close(fd, () => {
      order.push('close')
      resolve()
    })
  })
  const want = []
  for (let i = 0; i < 100; i++) {
    want.push(`${i % 4 === 1 ? 'writev' : 'write'} ${i}`)
    if (i % 4 === 3) want.push(`sync ${i}`)
  }
  want.push('close')
  t.deepEqual(order, want)
  t.is(fs.readFileSync(file, 'latin1'), expected.join(''))
})

primTest('fs.open then writes then close, none waited for past the open: the file whole', async (t) => {
  const file = tmpPath('open-write-close')
  const list = records(200, 50, 'w')
  const outcome = await new Promise((resolve) => {
    primitives.open(file, 'w', (err, fd) => {
      if (err) return resolve({ open: err.code })
      let failed = 0
      for (const record of list) primitives.write(fd, record, (e) => e && failed++)
      primitives.close(fd, (e) => resolve({ failed, close: e?.code ?? null }))
    })
  })
  t.deepEqual(outcome, { failed: 0, close: null })
  t.true(fs.readFileSync(file).equals(Buffer.concat(list)))
})

// A logger's pattern (pino's sonic-boom): an 'a' fd, written by many loops each waiting
// for its own write. O_APPEND makes each write(2) land whole at the end.
for (const side of SIDES) {
  const testFn = side === 'ours' ? primTest : test
  testFn(`a logger on an 'a' fd, 20 loops of fs.write of 1,000-byte records at once (${side === 'node' ? 'node:fs' : 'fairfs'}): every record whole, once`, async (t) => {
    const file = tmpPath(`logger-${side}`)
    fs.writeFileSync(file, '')
    const fd = fs.openSync(file, 'a')
    const loops = Array.from({ length: 20 }, (_, l) => records(50, 1000, `L${String(l).padStart(2, '0')}-`))
    const write = FNS[side].write
    const failures = []
    await Promise.all(
      loops.map(
        (list) =>
          new Promise((resolve) => {
            let i = 0
            const next = () => {
              if (i === list.length) return resolve()
              const record = list[i++]
              write(fd, record, 0, record.length, null, (err, n) => {
                if (err || n !== record.length) failures.push(err?.code ?? n)
                next()
              })
            }
            next()
          }),
      ),
    )
    fs.closeSync(fd)
    t.deepEqual(failures, [])
    const got = fs.readFileSync(file)
    const all = loops.flat()
    t.is(got.length, all.length * 1000)
    const left = new Set(all.map((r) => r.toString('latin1')))
    let bad = null
    for (let i = 0; i < got.length && bad === null; i += 1000) {
      const chunk = got.subarray(i, i + 1000).toString('latin1')
      if (!left.delete(chunk)) bad = `at ${i}: ${JSON.stringify(chunk.slice(0, 20))}… is not a whole record not yet seen`
    }
    t.is(bad, null)
    t.is(left.size, 0)
    // Each loop's records in its own order.
    const positions = new Map(Array.from({ length: got.length / 1000 }, (_, k) => [got.subarray(k * 1000, k * 1000 + 12).toString('latin1'), k]))
    for (const list of loops) {
      const at = list.map((r) => positions.get(r.subarray(0, 12).toString('latin1')))
      t.deepEqual(at, [...at].sort((x, y) => x - y))
    }
  })
}

primTest('writes on different fds at once: each file whole', async (t) => {
  const jobs = Array.from({ length: 50 }, (_, i) => ({ file: tmpPath(`fds-${i}`), list: records(20, 100 + i, `f${i}-`) }))
  await Promise.all(
    jobs.map(
      ({ file, list }) =>
        new Promise((resolve, reject) => {
          primitives.open(file, 'w', (err, fd) => {
            if (err) return reject(err)
            for (const record of list) primitives.write(fd, record, (e) => e && reject(e))
            primitives.close(fd, (e) => (e ? reject(e) : resolve()))
          })
        }),
    ),
  )
  t.deepEqual(jobs.filter(({ file, list }) => !fs.readFileSync(file).equals(Buffer.concat(list))).map(({ file }) => path.basename(file)), [])
})

// ---------------------------------------------------------------------------------
// Storage errors. Root only: tmpfs mounts, a file size limit, another user.

// Mount points and the directories another user writes in: outside the test's temp dir,
// which is root's alone (0700).
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'fairfs-fdw-'))
fs.chmodSync(scratch, 0o755)
const mounts = new Set()
process.on('exit', () => {
  for (const dir of mounts) spawnSync('umount', ['-l', dir], { stdio: 'ignore', timeout: 5000 })
  try {
    fs.rmSync(scratch, { recursive: true, force: true })
  } catch {}
})

/** Mounts a tmpfs with `options` on a fresh directory, unmounted when the test ends. */
function mountTmpfs(t, options) {
  const dir = fs.mkdtempSync(path.join(scratch, 'mnt-'))
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', options, 'tmpfs', dir], { encoding: 'utf8', timeout: 10_000 })
  if (r.status !== 0) throw new Error(`mount -t tmpfs -o ${options} failed: ${r.error?.message ?? r.stderr}`)
  mounts.add(dir)
  t.teardown(() => {
    // A busy mount (an fd left open on it) fails a plain umount.
    const done = spawnSync('umount', [dir], { encoding: 'utf8', timeout: 10_000 })
    if (done.status !== 0) spawnSync('umount', ['-l', dir], { stdio: 'ignore', timeout: 10_000 })
    mounts.delete(dir)
  })
  return dir
}

const tmpfsReason = (() => {
  if (process.platform !== 'linux') return 'tmpfs mounts: Linux only'
  if (process.getuid() !== 0) return 'mounting a tmpfs needs root'
  const probe = fs.mkdtempSync(path.join(scratch, 'probe-'))
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', probe], { encoding: 'utf8', timeout: 10_000 })
  if (r.error || r.status !== 0) return `cannot mount a tmpfs: ${(r.error?.message ?? r.stderr).trim()}`
  spawnSync('umount', [probe], { stdio: 'ignore', timeout: 10_000 })
  return null
})()
const tmpfsTest = tmpfsReason ? skipping(test, tmpfsReason) : test
/** Both: a tmpfs and fairfs's primitives. */
const tmpfsPrimTest = tmpfsReason ? tmpfsTest : primTest

const MiB = 1024 * 1024
/** `size` bytes, each set by its offset. */
function pattern(size) {
  const data = Buffer.allocUnsafe(size)
  for (let i = 0; i < size; i++) data[i] = (i * 7 + (i >> 12)) % 251
  return data
}

tmpfsPrimTest('ENOSPC on a 64 KiB tmpfs: fs.write and fs.writev report what they wrote, then the error, as node:fs', async (t) => {
  const dir = (t) => mountTmpfs(t, 'size=64k')
  const full = { dir, initial: null, flags: 'w' }
  const { ours } = await compare(t, { ...full, op: 'write', mark: false, args: (fd) => [fd, pattern(MiB), CB] }, 'a 1 MiB write: ')
  t.like(ours.outcome.args, [null], 'the bytes that fit, no error')
  t.true(ours.outcome.args[1] > 0 && ours.outcome.args[1] < MiB, `${ours.outcome.args[1]} bytes`)
  const afterFull = (fd) => fs.writeSync(fd, pattern(MiB))
  const enospc = await compare(t, { ...full, op: 'write', mark: false, before: afterFull, args: (fd) => [fd, Buffer.from('more'), CB] }, 'a write on a full tmpfs: ')
  t.like(enospc.ours.outcome.args?.[0]?.error, { code: 'ENOSPC', syscall: 'write' })
  await compare(t, { ...full, op: 'write', mark: false, before: afterFull, args: (fd) => [fd, 'more', 0, CB] }, 'a string written over the start of a full file: ')
  await compare(t, { ...full, op: 'writev', mark: false, args: (fd) => [fd, [pattern(40_000), pattern(40_000), pattern(40_000)], CB] }, 'writev across the end: ')
  await compare(t, { ...full, op: 'writev', mark: false, before: afterFull, args: (fd) => [fd, [Buffer.from('a'), Buffer.from('b')], CB] }, 'writev on a full tmpfs: ')
  await compare(t, { ...full, op: 'write', mark: false, args: (fd) => [fd, pattern(1000), 0, 1000, MiB, CB] }, 'a write at a position past the room (a hole): ')
})

const prlimitReason = (() => {
  if (!primitives) return primitivesReason
  if (process.platform !== 'linux') return 'prlimit: Linux only'
  const r = spawnSync('prlimit', ['--fsize=65536', process.execPath, '-e', ''], { encoding: 'utf8', timeout: 30_000 })
  if (r.error) return `no prlimit (util-linux): ${r.error.message}`
  if (r.status !== 0) return `prlimit --fsize fails here: ${r.stderr.trim()}`
  return null
})()
const prlimitTest = prlimitReason ? skipping(test, prlimitReason) : test

prlimitTest('EFBIG under a 64 KiB file size limit (prlimit): fs.write and writev, as node:fs, the same file', async (t) => {
  const results = {}
  for (const api of SIDES) {
    const file = path.join(fs.mkdtempSync(path.join(scratch, 'efbig-')), 'f')
    const r = await child({ scenario: 'efbig', api, file }, { command: ['prlimit', '--fsize=65536'] })
    results[api] = { exit: r.exit, signal: r.signal, printed: r.printed, stderr: r.stderr, file: describeFile(file) }
  }
  t.deepEqual(results.ours, results.node)
  t.like(results.ours.printed, { backend: 'native', outcome: { first: { args: [null, 65536] }, second: { args: [{ error: { code: 'EFBIG', syscall: 'write' } }, 0] } } })
  t.is(results.ours.file.size, 65536)
})

const NOBODY = 65534
const indexJs = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'index.js')
const nobodyReason = (() => {
  if (!primitives) return primitivesReason
  if (process.getuid() !== 0) return 'running a child as another user needs root'
  const check = `require(${JSON.stringify(indexJs)}); require('fs').readdirSync(${JSON.stringify(scratch)})`
  const r = spawnSync(process.execPath, ['-e', check], { uid: NOBODY, gid: NOBODY, encoding: 'utf8', timeout: 30_000 })
  if (r.error || r.status !== 0) return `uid ${NOBODY} cannot load fairfs or reach ${os.tmpdir()}: ${(r.error?.message ?? r.stderr).trim().split('\n')[0]}`
  return null
})()
const nobodyTest = nobodyReason ? skipping(test, nobodyReason) : test

nobodyTest(`EACCES as uid ${NOBODY}: fs.open for writing of a 0o444 file, and a WriteStream on it after install(), as node:fs`, async (t) => {
  const results = {}
  for (const api of SIDES) {
    const dir = fs.mkdtempSync(path.join(scratch, 'acc-'))
    fs.chmodSync(dir, 0o755)
    const file = path.join(dir, 'f')
    fs.writeFileSync(file, previous)
    fs.chmodSync(file, 0o444)
    const r = await child({ scenario: 'eacces', api, file }, { options: { uid: NOBODY, gid: NOBODY } })
    results[api] = normalize({ exit: r.exit, printed: r.printed && { ...r.printed, outcome: { ...r.printed.outcome, installed: undefined } }, stderr: r.stderr, file: describeFile(file) }, [[dir, '<dir>']])
    if (api === 'ours') t.true(r.printed?.outcome?.installed, 'install() put fairfs.open on node:fs in the child')
  }
  t.deepEqual(results.ours, results.node)
  t.like(results.ours.printed.outcome.open.args[0].error, { code: 'EACCES', syscall: 'open', path: '<dir>/f' })
  t.is(results.ours.file.bytes, previous)
})

// ---------------------------------------------------------------------------------
// install(): node:fs's own WriteStream on the pool

/**
 * A node:fs WriteStream on `file` with `options`, fed by `feed(ws)`: the events in order
 * ('open' and 'ready' by name, an error by its fields), bytesWritten, and whether the
 * fd given by 'open' is a number. Resolves a little after 'close' (a late event would
 * show), or after 10 s without one.
 */
function streamRun(file, options, feed, until = 'close') {
  return new Promise((resolve) => {
    const events = []
    let fdKind
    const ws = fs.createWriteStream(file, options)
    const finish = (extra) => resolve({ events, bytesWritten: ws.bytesWritten, fdKind, destroyed: ws.destroyed, ...extra })
    const timer = setTimeout(() => finish({ timedOut: true }), 10_000)
    for (const name of ['open', 'ready', 'finish', 'close', 'error']) {
      ws.on(name, (arg) => {
        if (name === 'open') fdKind = typeof arg
        events.push(name === 'error' ? { error: describeError(arg) } : name)
        if (name === until) {
          clearTimeout(timer)
          setTimeout(finish, 30)
        }
      })
    }
    feed(ws)
  })
}

const chunk = (i, size = 1000) => Buffer.alloc(size, 0x41 + (i % 26))
const streamCases = {
  'one end(data)': { feed: (ws) => ws.end('hello from a WriteStream\n'), bytes: 25 },
  '100 writes not waited for (writev), then end()': {
    feed: (ws) => {
      for (let i = 0; i < 100; i++) ws.write(chunk(i))
      ws.end()
    },
    bytes: 100_000,
  },
  '3 MiB in 64 KiB writes, each waited for': {
    feed: (ws) => {
      let i = 0
      const next = () => {
        if (i === 48) return ws.end()
        ws.write(chunk(i++, 65536), next)
      }
      next()
    },
    bytes: 48 * 65536,
  },
  'strings in utf8 and hex (the stream encodes them)': {
    feed: (ws) => {
      ws.write('héllo €, ')
      ws.write('deadbeef', 'hex')
      ws.end('😀')
    },
    bytes: Buffer.byteLength('héllo €, ') + 4 + 4,
  },
  'flush: true (fsync before the close)': { options: { flush: true }, feed: (ws) => ws.end('flushed\n'), bytes: 8 },
  "flags: 'a', on an existing file": { initial: previous, options: { flags: 'a' }, feed: (ws) => ws.end('appended\n'), bytes: 9 },
  "flags: 'a', start 2 (Linux appends anyway)": { initial: previous, options: { flags: 'a', start: 2 }, feed: (ws) => ws.end('appended\n'), bytes: 9 },
  "start: 5, flags 'r+'": { initial: previous, options: { flags: 'r+', start: 5 }, feed: (ws) => ws.end('XYZ'), bytes: 3 },
  'start: 100 (a hole)': { options: { start: 100 }, feed: (ws) => ws.end('after a hole'), bytes: 12 },
  "start: 3, two writes (the position moves on), flags 'r+'": {
    initial: previous,
    options: { flags: 'r+', start: 3 },
    feed: (ws) => {
      ws.write('ab')
      ws.end('cd')
    },
    bytes: 4,
  },
  'mode 0o600': { options: { mode: 0o600 }, feed: (ws) => ws.end('x'), bytes: 1 },
  "flags 'wx' on an existing file: EEXIST": { initial: previous, options: { flags: 'wx' }, feed: (ws) => ws.end('x'), bytes: 0 },
  'in a missing directory: ENOENT': { file: 'missing/f', feed: (ws) => ws.end('x'), bytes: 0 },
  'destroy() before open': { feed: (ws) => ws.destroy(), bytes: 0 },
  'destroy(error) before open': { feed: (ws) => ws.destroy(new Error('gone')), bytes: 0 },
  'destroy() after a write': {
    feed: (ws) => {
      ws.write('first', () => ws.destroy())
    },
    bytes: 5,
  },
  'end() with nothing written': { feed: (ws) => ws.end(), bytes: 0 },
  'autoClose: false (no close: the run ends at finish)': { options: { autoClose: false }, feed: (ws) => ws.end('kept open'), bytes: 9, keepsOpen: true, until: 'finish' },
  "a read-only target (flags 'r'): the write's EBADF": { initial: previous, options: { flags: 'r' }, feed: (ws) => ws.end('x'), bytes: 0 },
  "a read-only target (an 'r' fd given): the write's EBADF": {
    initial: previous,
    fd: 'r',
    feed: (ws) => ws.end('x'),
    bytes: 0,
  },
  "an fd given ('r+')": { initial: previous, fd: 'r+', feed: (ws) => ws.end('XY'), bytes: 2 },
}

/**
 * One side of a stream case in a fresh directory: before install() for node:fs, after
 * it for fairfs (the caller's business). Resolves with the run and the file.
 */
async function streamSide(side, c, dir = freshDir(side)) {
  const file = path.join(dir, c.file ?? 'f')
  if (c.initial !== undefined) fs.writeFileSync(file, c.initial)
  const options = { ...c.options }
  let givenFd
  if (c.fd) options.fd = givenFd = fs.openSync(file, c.fd)
  const run = await streamRun(c.fd ? null : file, options, c.feed, c.until)
  const result = { run, file: describeFile(file), fdsOpen: fdsOpenOn(file) }
  if (c.keepsOpen || (givenFd !== undefined && result.fdsOpen > 0)) {
    for (const fd of fs.readdirSync('/proc/self/fd')) {
      try {
        if (fs.readlinkSync(`/proc/self/fd/${fd}`) === file) fs.closeSync(Number(fd))
      } catch {}
    }
  }
  return normalize(result, [[dir, '<dir>']])
}

/** Runs `fn` with fairfs installed, uninstalled after (also when the test fails). */
async function installed(t, fn) {
  fairfs.install()
  t.teardown(() => fairfs.uninstall())
  try {
    return await fn()
  } finally {
    fairfs.uninstall()
  }
}

for (const [what, c] of Object.entries(streamCases)) {
  test.serial(`install(): fs.createWriteStream, ${what}: events, bytesWritten and the file as node:fs's own`, async (t) => {
    const node = await streamSide('node', c)
    const ours = await installed(t, async () => {
      if (primitives) t.is(fs.write, primitives.write, 'install() put fairfs.write on node:fs')
      return streamSide('ours', c)
    })
    t.deepEqual(ours, node)
    t.is(ours.run.bytesWritten, c.bytes)
    t.falsy(ours.run.timedOut)
  })
}

nativeOnly(test.serial)('install(): fs.createWriteStream writes on the pool: stats().bytesWritten grows by the bytes written', async (t) => {
  const file = tmpPath('stats-stream')
  const data = crypto.randomBytes(300_000)
  const { before, after, run } = await installed(t, async () => {
    const before = fairfs.stats().bytesWritten
    const run = await streamRun(file, {}, (ws) => {
      for (let i = 0; i < data.length; i += 30_000) ws.write(data.subarray(i, i + 30_000))
      ws.end()
    })
    return { before, after: fairfs.stats().bytesWritten, run }
  })
  t.deepEqual(run.events, ['open', 'ready', 'finish', 'close'])
  t.is(after - before, data.length)
  t.true(fs.readFileSync(file).equals(data))
  // Uninstalled, node:fs's own: nothing more counted.
  const again = fairfs.stats().bytesWritten
  await streamRun(tmpPath('stats-stream-node'), {}, (ws) => ws.end(data))
  t.is(fairfs.stats().bytesWritten, again)
})

nativeOnly(test.serial)('install() puts the primitives on node:fs (the ESM named exports too); uninstall() puts node:fs\'s back', async (t) => {
  const ns = await import('node:fs')
  await installed(t, async () => {
    for (const name of ['open', 'write', 'writev', 'fsync', 'fdatasync', 'close']) {
      t.is(fs[name], primitives[name], `fs.${name}`)
      t.is(ns[name], primitives[name], `the ESM named export ${name}`)
    }
    t.is(fs.createWriteStream, nodeFs.createWriteStream, 'createWriteStream itself is node:fs\'s')
  })
  for (const name of ['open', 'write', 'writev', 'fsync', 'fdatasync', 'close']) {
    t.is(fs[name], nodeFs[name], `fs.${name} restored`)
    t.is(ns[name], nodeFs[name], `the ESM named export ${name} restored`)
  }
})

tmpfsTest.serial('install(): fs.createWriteStream on a full 64 KiB tmpfs: ENOSPC, bytesWritten and the file as node:fs\'s own; no finish, a close', async (t) => {
  const c = {
    feed: (ws) => {
      for (let i = 0; i < 64; i++) ws.write(pattern(16 * 1024))
      ws.end()
    },
  }
  const node = await streamSide('node', c, mountTmpfs(t, 'size=64k'))
  const ours = await installed(t, () => streamSide('ours', c, mountTmpfs(t, 'size=64k')))
  t.deepEqual(ours, node)
  t.like(ours.run.events.find((e) => e.error), { error: { code: 'ENOSPC', syscall: 'write' } })
  t.false(ours.run.events.includes('finish'))
  t.is(ours.run.events.at(-1), 'close')
  t.true(ours.file.size > 0 && ours.file.size < MiB)
})

test(`the backend is ${fairfs.backend}${primitives ? '' : ": fairfs's primitives are not there, node:fs's serve"}`, (t) => {
  if (primitives) {
    for (const name of ['open', 'write', 'writev', 'fsync', 'fdatasync', 'close']) t.is(typeof primitives[name], 'function', name)
  } else t.is(fairfs.backend, 'node')
})
