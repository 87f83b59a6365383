// configure() and stats(): the pool is resizable at runtime, bad values change
// nothing, and both match what index.d.ts declares (every stats() field, every option).
import os from 'node:os'
import zlib from 'node:zlib'
import test from 'ava'
import fs from 'node:fs'
import path from 'node:path'
import { execFile, execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { fairfs, isNative, nativeOnly, makeFile, portable, windows, posixOnly, noPoolMetadata, tmpPath } from './helpers.mjs'

/** Without a contention signal (the portable build) the big-read limit is fixed at
 *  one core left to the event loop and libuv, at least one. */
const fixedLargeLimit = (threads) => Math.max(1, Math.min(threads, os.availableParallelism() - 1))

/** Big-read limits: the current one within 1..largeLimitMax, which is `max`; without
 *  a signal, fixed at the cap the user set (`capSet`), else at cores − 1. */
function checkLargeLimits(t, stats, max, capSet = false) {
  t.is(stats.largeLimitMax, max)
  t.true(stats.largeLimit >= 1 && stats.largeLimit <= max, `largeLimit ${stats.largeLimit} within 1..${max}`)
  if (!stats.largeLimitAdaptive) t.is(stats.largeLimit, capSet ? max : Math.min(max, fixedLargeLimit(stats.threads)))
}

nativeOnly(test.serial)('stats() reports the pool and counts reads', async (t) => {
  const { path } = makeFile(3 * 512 * 1024 + 10)
  const before = fairfs.stats()
  for (const key of ['threads', 'queued', 'active', 'completed', 'cancelled', 'bytesRead', 'chunksRead', 'chunkSize', 'largeLimit',
    'largeLimitMax', 'largeBackoffs', 'largeProbes', 'libuvThreads']) {
    t.is(typeof before[key], 'number', key)
  }
  t.is(before.largeLimitAdaptive, !portable && !windows, 'the big-read limit adapts wherever /proc tells who uses the CPU')
  checkLargeLimits(t, before, before.threads)
  await fairfs.readFile(path)
  const after = fairfs.stats()
  t.is(after.completed, before.completed + 1)
  t.is(after.bytesRead, before.bytesRead + 3 * 512 * 1024 + 10)
  t.is(after.chunksRead, before.chunksRead + 4)
  t.is(after.queued, 0)
  t.is(after.active, 0)
})

posixOnly(noPoolMetadata, nativeOnly(test.serial))('stats(): a metadata call is a completed request, not a chunk read', async (t) => {
  const { path: file } = makeFile(1000)
  const dir = path.dirname(file)
  const missing = path.join(dir, 'missing')
  // Every stat to the pool (a cached one is otherwise answered on this thread, and is no request of the pool's).
  const fastPath = fairfs.stats().fastPath
  fairfs.configure({ fastPath: false })
  t.teardown(() => fairfs.configure({ fastPath }))
  const calls = [
    () => fairfs.promises.stat(file),
    () => fairfs.promises.lstat(file, { bigint: true }),
    () => fairfs.promises.stat(missing).catch(() => {}),
    () => new Promise((resolve) => fairfs.stat(file, resolve)),
    () => fairfs.promises.access(file),
    () => fairfs.promises.realpath(file),
    () => fairfs.promises.readdir(dir),
  ]
  const rounds = 20
  const before = fairfs.stats()
  await Promise.all(Array.from({ length: rounds }, () => calls.map((call) => call())).flat())
  const after = fairfs.stats()
  t.is(after.completed, before.completed + rounds * calls.length, 'each call is a request the pool completed')
  t.is(after.chunksRead, before.chunksRead, 'none read a chunk of file data')
  t.is(after.bytesRead, before.bytesRead)
  await fairfs.promises.readFile(file)
  t.is(fairfs.stats().chunksRead, after.chunksRead + 1, 'a read still counts its chunk')
})

const linuxSignal = isNative && process.platform === 'linux' && !portable ? test : (title, fn) => test.skip(`${title} [Linux, native, not portable]`, fn)

linuxSignal('libuv\'s threads are told apart from V8\'s, for the contention governor', async (t) => {
  // On libuv < 1.50 (Node 20) they are unnamed, and a census at load finds them; on
  // newer libuv their name tells. Either way, once libuv's pool has started, all of
  // its threads are watched (UV_THREADPOOL_SIZE, 4 unless set) and no other thread.
  await new Promise((resolve, reject) => zlib.deflate(Buffer.alloc(16), (err) => (err ? reject(err) : resolve())))
  const size = Number(process.env.UV_THREADPOOL_SIZE ?? 4)
  const end = Date.now() + 10_000
  while (fairfs.stats().libuvThreads < size && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 20))
  t.is(fairfs.stats().libuvThreads, size)
})

linuxSignal('libuv\'s threads busy when fairfs loads are found once they are free', async (t) => {
  // In a process of its own: two of libuv's four threads wait in open(2) of a FIFO with
  // no writer when fairfs loads (libuv's queue is first in, first out, so they take
  // those opens before the census's jobs). The census's first round sees only the other
  // two, and its jobs end there; it once stopped at that, and the two were neighbours
  // to the governor for good. Now later rounds run until they find the two, freed here.
  const fifos = [tmpPath('census-a'), tmpPath('census-b')]
  for (const fifo of fifos) execFileSync('mkfifo', [fifo])
  const script = `
    const fs = require('node:fs')
    const fifos = ${JSON.stringify(fifos)}
    const opened = fifos.map((fifo) => new Promise((resolve, reject) => fs.open(fifo, 'r', (e, fd) => (e ? reject(e) : resolve(fd)))))
    const fairfs = require(${JSON.stringify(fileURLToPath(new URL('../index.js', import.meta.url)))})
    const count = () => fairfs.stats().libuvThreads
    const until = async (ok) => { for (const end = Date.now() + 10000; !ok() && Date.now() < end;) await new Promise((r) => setTimeout(r, 10)) }
    ;(async () => {
      await until(() => count() >= 2)
      await new Promise((r) => setTimeout(r, 150)) // the first round and the first retry are over
      const whileBusy = count()
      // A writer that opens without waiting frees each reader's thread.
      const writers = fifos.map((fifo) => fs.openSync(fifo, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK))
      const readers = await Promise.all(opened)
      const t0 = Date.now()
      await until(() => count() === 4)
      console.log(JSON.stringify({ whileBusy, after: count(), ms: Date.now() - t0 }))
      for (const fd of [...writers, ...readers]) fs.closeSync(fd)
    })()`
  const { stdout } = await new Promise((resolve, reject) =>
    execFile(process.execPath, ['-e', script], { env: { ...process.env, UV_THREADPOOL_SIZE: '4' }, timeout: 30_000 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve({ stdout }),
    ),
  )
  const out = JSON.parse(stdout)
  const [major, minor] = process.versions.uv.split('.').map(Number)
  // libuv 1.50+ names its threads, busy or not; older libuv's are found by the census.
  if (major === 1 && minor < 50) t.is(out.whileBusy, 2, 'the census could not see the two busy threads')
  t.is(out.after, 4, `all four found (${out.ms} ms after they were freed)`)
})

nativeOnly(test.serial)('configure() resizes the pool while reads are in flight', async (t) => {
  const files = Array.from({ length: 20 }, () => makeFile(2 * 1024 * 1024))
  const reads = files.map(({ path, data }) => fairfs.readFile(path).then((got) => got.equals(data)))
  fairfs.configure({ threads: 1 })
  t.like(fairfs.stats(), { threads: 1, largeLimit: 1, largeLimitMax: 1 })
  fairfs.configure({ threads: 8, chunkSize: 64 * 1024 })
  t.like(fairfs.stats(), { threads: 8, chunkSize: 64 * 1024 })
  checkLargeLimits(t, fairfs.stats(), 8)
  t.deepEqual(await Promise.all(reads), files.map(() => true))
  fairfs.configure({ threads: 4, chunkSize: 512 * 1024 })
  t.like(fairfs.stats(), { threads: 4, chunkSize: 512 * 1024 })
})

nativeOnly(test.serial)('configure({ largeLimit }) caps how many big files are read at once, within the pool', async (t) => {
  fairfs.configure({ largeLimit: 3 })
  checkLargeLimits(t, fairfs.stats(), 3, true)
  fairfs.configure({ largeLimit: 1 })
  t.like(fairfs.stats(), { largeLimit: 1, largeLimitMax: 1 }, 'a cap of one is one')
  fairfs.configure({ largeLimit: 9 })
  checkLargeLimits(t, fairfs.stats(), 4, true) // never more than the threads
  const files = Array.from({ length: 6 }, () => makeFile(3 * 1024 * 1024))
  t.deepEqual(await Promise.all(files.map(({ path, data }) => fairfs.readFile(path).then((got) => got.equals(data)))), files.map(() => true))
  fairfs.configure({ largeLimit: 0 })
  checkLargeLimits(t, fairfs.stats(), 4) // 0: no cap but the threads again
})

const invalid = [
  [{ threads: 0 }, RangeError, 'ERR_OUT_OF_RANGE'],
  [{ threads: -1 }, RangeError, 'ERR_OUT_OF_RANGE'],
  [{ threads: 1.5 }, RangeError, 'ERR_OUT_OF_RANGE'],
  [{ threads: 1e9 }, RangeError, 'ERR_OUT_OF_RANGE'],
  [{ threads: '4' }, TypeError, 'ERR_INVALID_ARG_TYPE'],
  [{ chunkSize: 0 }, RangeError, 'ERR_OUT_OF_RANGE'],
  [{ chunkSize: 2 ** 31 }, RangeError, 'ERR_OUT_OF_RANGE'],
  [{ chunkSize: NaN }, RangeError, 'ERR_OUT_OF_RANGE'],
  [{ threads: 2, chunkSize: -5 }, RangeError, 'ERR_OUT_OF_RANGE'],
  [{ largeLimit: -1 }, RangeError, 'ERR_OUT_OF_RANGE'],
  [{ threads: 2, largeLimit: 2000 }, RangeError, 'ERR_OUT_OF_RANGE'],
  [{ largeLimit: '2' }, TypeError, 'ERR_INVALID_ARG_TYPE'],
  [null, TypeError, 'ERR_INVALID_ARG_TYPE'],
  [7, TypeError, 'ERR_INVALID_ARG_TYPE'],
]

/** The settings a failed configure() must leave alone (on the node backend: what it recorded). */
const settings = ({ threads, chunkSize, largeLimitMax, configured }) => (isNative ? { threads, chunkSize, largeLimitMax } : configured)

for (const [options, Class, code] of invalid) {
  test.serial(`configure(${JSON.stringify(options)}) throws ${code} and keeps the old settings`, (t) => {
    fairfs.configure({ threads: 4 })
    const before = settings(fairfs.stats())
    const err = t.throws(() => fairfs.configure(options), { instanceOf: Class })
    t.is(err.code, code)
    t.deepEqual(settings(fairfs.stats()), before)
    t.is(before.threads, 4)
  })
}

test.serial('configure() with valid values: in effect on the native backend, recorded on the node backend', (t) => {
  t.teardown(() => fairfs.configure({ threads: 4, chunkSize: 512 * 1024 }))
  fairfs.configure({ threads: 3, chunkSize: 64 * 1024 })
  fairfs.configure({ nice: 5 })
  const stats = fairfs.stats()
  t.is(stats.backend, isNative ? 'native' : 'node')
  if (isNative) t.like(stats, { threads: 3, chunkSize: 64 * 1024, nice: 5 })
  else t.like(stats, { maxLength: 2 ** 31 - 1, configured: { threads: 3, chunkSize: 64 * 1024, nice: 5 } })
})

const types = fs.readFileSync(new URL('../index.d.ts', import.meta.url), 'utf8')

/** The field names of `interface name { ... }` in index.d.ts (one level deep). */
function declared(name) {
  const body = types.slice(types.indexOf(`export interface ${name} {`))
  const end = body.indexOf('\n}')
  const fields = [...body.slice(0, end).matchAll(/^ {2}(\w+)\??:/gm)].map((m) => m[1])
  return fields.sort()
}

/** The field names of `pool: { ... }` inside NativeStats. */
function declaredPool() {
  const body = types.slice(types.indexOf('export interface NativeStats {'))
  const pool = body.slice(body.indexOf('  pool: {'), body.indexOf('\n  }', body.indexOf('  pool: {')))
  return [...pool.matchAll(/^ {4}(\w+)\??:/gm)].map((m) => m[1]).sort()
}

nativeOnly(test)('stats() returns exactly the fields index.d.ts declares for NativeStats, and pool the ones it declares there', (t) => {
  const stats = fairfs.stats()
  t.deepEqual(Object.keys(stats).sort(), declared('NativeStats'))
  t.deepEqual(Object.keys(stats.pool).sort(), declaredPool())
  t.true(declaredPool().length >= 7, 'the pool fields were found in index.d.ts')
})

nativeOnly(test)('awaitingMemory counts big reads waiting for memory their thread lends: none when idle', (t) => {
  t.is(fairfs.stats().awaitingMemory, 0)
})

test('every option index.d.ts declares for configure() is one configure() checks', (t) => {
  const options = declared('ConfigureOptions')
  t.true(options.length >= 10, 'options were found in index.d.ts')
  for (const option of options) {
    const value = option === 'fastPath' || option === 'writeBehind' ? 'yes' : 1.5 // no option takes a fraction
    const err = t.throws(() => fairfs.configure({ [option]: value }), undefined, option)
    t.regex(err.message, new RegExp(`"options\\.${option}"`), `${option} is checked by name`)
  }
})

test('configure() checks the admission limits as it checks the others', (t) => {
  t.throws(() => fairfs.configure({ maxOpenFiles: 0 }), { code: 'ERR_OUT_OF_RANGE', instanceOf: RangeError })
  t.throws(() => fairfs.configure({ maxOpenFiles: 2 ** 21 }), { code: 'ERR_OUT_OF_RANGE' })
  t.throws(() => fairfs.configure({ maxBytesInFlight: -1 }), { code: 'ERR_OUT_OF_RANGE' })
  t.throws(() => fairfs.configure({ maxBytesInFlight: '1' }), { code: 'ERR_INVALID_ARG_TYPE', instanceOf: TypeError })
})
