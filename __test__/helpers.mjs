// Shared helpers for the differential specs: every case runs on node:fs and on
// fairfs, and the outcomes (bytes, strings, or the error's fields) must match.
import { createRequire } from 'node:module'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import crypto from 'node:crypto'
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const require = createRequire(import.meta.url)
export const fairfs = require('../index.js')

/**
 * The backend the suite runs on: the native one, unless FAIRFS_BACKEND=node (or no
 * addon loads), which runs every spec on node:fs (lib/fallback.js).
 */
export const isNative = fairfs.backend === 'native'

/**
 * For tests of what only the native backend does (pool counters, the fast path, chunk
 * scheduling, pooled memory, maxLength, install()): `nativeOnly(test)(title, fn)` or
 * `nativeOnly(test.serial)(title, fn)`. On the node backend the test is registered as
 * skipped, marked in its title, so that ava reports it as skipped, not as passed.
 */
export function nativeOnly(testFn) {
  return isNative ? testFn : skipping(testFn, 'native backend only')
}

/**
 * `testFn` registering every test as skipped, with `[note]` in its title. It has `.skip`
 * too, so that these wrappers compose: `posixOnly(reason, nativeOnly(test))`.
 */
function skipping(testFn, note) {
  const skip = (title, ...rest) => testFn.skip(`${title} [${note}]`, ...rest)
  skip.skip = skip
  return skip
}

/**
 * Set by the runners that change what the platform can do (scripts/test-arm64.sh,
 * the portable build in .ci/run): 'qemu-user' (no openat2, and no RSS in
 * /proc/self/statm) or 'portable' (built with --cfg fairfs_portable: no fast path).
 */
export const emulated = process.env.FAIRFS_TEST_EMULATED === 'qemu-user'
export const portable = process.env.FAIRFS_TEST_PORTABLE === '1'
/**
 * Whether the calling thread's fast paths can work here: Linux 5.12+ (openat2 with
 * RESOLVE_CACHED), which qemu-user does not emulate, in a build that is not portable.
 * Elsewhere (Windows, macOS) every try is a miss.
 */
export const fastPathWorks = () => {
  const [major, minor] = os.release().split('.').map(Number)
  return process.platform === 'linux' && (major > 5 || (major === 5 && minor >= 12)) && !emulated && !portable
}
/** V8 before 13 (Node 20 and 22): external memory dies in young collections there. */
export const v8Before13 = Number(process.versions.v8.split('.')[0]) < 13

/**
 * The addon built with the cargo feature `test-hooks` (`npm run build:test-hooks`, run
 * by `npm test`): fault hooks that release builds leave out. Load it in a child
 * process with `NAPI_RS_NATIVE_LIBRARY_PATH`.
 */
export const testHooksAddon = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'target', 'test-hooks', 'fairfs.linux-x64-gnu.node')

/**
 * For tests that need the test-hooks addon: skipped, visibly, where it is not built for
 * this platform (the arm64 run under qemu, the node backend).
 */
export function needsTestHooks(testFn) {
  const usable = isNative && process.platform === 'linux' && process.arch === 'x64' && fs.existsSync(testHooksAddon)
  return usable ? testFn : skipping(testFn, 'needs the linux-x64 test-hooks build: npm run build:test-hooks')
}

/** For tests that measure RSS, which qemu-user reports as 0: skipped there, visibly. */
export function needsRss(testFn) {
  return emulated ? skipping(testFn, 'RSS is not measurable under qemu-user') : testFn
}

/**
 * Windows (scripts/test-windows.sh runs the suite there under wine) lacks some of
 * what tests lean on. `posixOnly(reason, test)(title, fn)` registers such a test as
 * skipped on Windows with `[not on Windows: reason]` in its title, which the script
 * counts per reason.
 */
export const windows = process.platform === 'win32'
export function posixOnly(reason, testFn) {
  return windows ? skipping(testFn, `not on Windows: ${reason}`) : testFn
}
/** Windows emulated by wine (scripts/test-windows.sh), which sets WINELOADER in every process it runs. */
export const wine = windows && process.env.WINELOADER !== undefined
/** The reasons, one wording each. */
export const noFifo = 'no FIFOs'
export const noProc = 'no /proc (open fds, RSS, /dev/zero)'
export const noUlimit = 'no ulimit (fd limits)'
/** Windows names files in UTF-16: a path's bytes must be UTF-8, so no name holds others. */
export const noByteNames = 'file names are UTF-16, not bytes'
/** lib/metadata.js: the addon answers stat, access, realpath and readdir on unix only. */
export const noPoolMetadata = "the addon has no metadata calls there; node:fs's run"
/** The glibc floor a Linux binary keeps. */
export const noGlibc = 'no glibc'
/** lib/native-api.js, kForeignFds: an fd the caller opened belongs to node.exe's C runtime, which the addon's cannot resolve. */
export const callerFds = "a caller's fds and FileHandles are read by node:fs"

export const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'fairfs-test-'))
process.on('exit', () => {
  try {
    fs.rmSync(tmpRoot, { recursive: true, force: true })
  } catch (e) {
    // Windows refuses to remove a file that is still open (a stream a test left
    // mid-read when its process ends); the temp dir is then left behind.
    if (!windows) throw e
  }
})

let counter = 0
/** A fresh path under the test's temp dir. */
export function tmpPath(name = 'f') {
  return path.join(tmpRoot, `${process.pid}-${counter++}-${name}`)
}

/**
 * A file of `len` bytes where every 512-byte block is different, so a chunk read
 * twice or at the wrong offset is caught (as in Node's test-fs-readfile.js).
 */
export function makeFile(len, name = 'data') {
  const p = tmpPath(name)
  const data = crypto.randomBytes(len)
  fs.writeFileSync(p, data)
  return { path: p, data }
}

/** The fields of an error that node:fs users can observe. */
export function describeError(e) {
  if (!(e instanceof Error)) return { notAnError: e }
  return {
    ctor: e.constructor.name,
    name: e.name,
    code: e.code,
    errno: e.errno,
    syscall: e.syscall,
    path: e.path,
    message: e.message,
    cause: e.cause,
    ownKeys: Object.keys(e).sort(),
  }
}

function describeValue(v) {
  // A digest keeps failure diffs readable for big files.
  if (Buffer.isBuffer(v)) return { buffer: crypto.createHash('sha256').update(v).digest('hex'), length: v.length }
  return { value: v }
}

/** Runs a callback-style call; records a synchronous throw or what the callback got. */
export function viaCallback(fn) {
  return new Promise((resolve) => {
    let sync = true
    try {
      fn((err, data) => {
        resolve(err ? { async: !sync, error: describeError(err) } : { async: !sync, ...describeValue(data) })
      })
    } catch (err) {
      resolve({ threw: describeError(err) })
    }
    sync = false
  })
}

/**
 * Runs a promise-returning call; records a synchronous throw, a rejection or the value
 * (as `describeResult` tells it).
 */
export async function viaPromise(fn, describeResult = describeValue) {
  let p
  try {
    p = fn()
  } catch (err) {
    return { threw: describeError(err) }
  }
  try {
    return describeResult(await p)
  } catch (err) {
    return { error: describeError(err) }
  }
}

/** The outcome of `fs.readFile(...args, cb)` on node:fs and on fairfs. */
export async function bothCallback(...args) {
  const node = await viaCallback((cb) => fs.readFile(...args, cb))
  const ours = await viaCallback((cb) => fairfs.readFile(...args, cb))
  return { node, ours }
}

/** The outcome of `fs.promises.readFile(...args)` on node:fs and on fairfs. */
export async function bothPromise(...args) {
  const node = await viaPromise(() => fs.promises.readFile(...args))
  const ours = await viaPromise(() => fairfs.promises.readFile(...args))
  return { node, ours }
}

/** Number of open fds of this process. */
export function openFdCount() {
  return fs.readdirSync('/proc/self/fd').length
}

/**
 * How many of this process's fds point at `file`.
 *
 * Windows has no /proc: there it is 1 when any handle has the file open, else 0. The
 * probe opens the file with no sharing (libuv's UV_FS_O_EXLOCK), which fails with EBUSY
 * while another handle is open; for as long as it holds the file, any other open of it
 * fails, so a test must not call it while an open of the file may be under way.
 */
export function fdsOpenOn(file) {
  if (windows) return openElsewhere(file) ? 1 : 0
  let n = 0
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    try {
      if (fs.readlinkSync(`/proc/self/fd/${fd}`) === file) n++
    } catch {}
  }
  return n
}

/** libuv's flag for an open that shares nothing (uv/win.h); Node passes it through. */
const UV_FS_O_EXLOCK = 0x10000000

function openElsewhere(file) {
  let fd
  try {
    fd = fs.openSync(file, UV_FS_O_EXLOCK)
  } catch (e) {
    if (e.code === 'EBUSY') return true
    if (e.code === 'ENOENT') return false
    throw e
  }
  fs.closeSync(fd)
  return false
}

const childScript = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'child.mjs')

/**
 * Runs scenario `scenario` of fixtures/child.mjs on `file` in a process of its own;
 * resolves with its exit code, signal and output.
 */
export function runChild(scenario, file, env = {}, nodeArgs = []) {
  return new Promise((resolve) => {
    const options = { timeout: 60_000, env: { ...process.env, ...env } }
    execFile(process.execPath, [...nodeArgs, childScript, scenario, file], options, (err, stdout, stderr) => {
      resolve({ code: err ? err.code : 0, signal: err?.signal ?? null, stdout, stderr })
    })
  })
}
