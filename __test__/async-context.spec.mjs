// Async context across fairfs's calls, differential against node:fs: a callback, a
// stream's events and a promise's continuations see the caller's AsyncLocalStorage
// store, run in a resource of their own that async_hooks saw made in the caller's
// context (executionAsyncResource() is that resource), and a throw from a callback in
// a domain reaches that domain; on the pool and on the fast path, in a worker_thread,
// and through node:fs's own functions under install(). The same call runs on node:fs
// and on fairfs and what each saw must match (fixtures/async-context-probe.mjs).
import test from 'ava'
import fs from 'node:fs'
import path from 'node:path'
import crypto from 'node:crypto'
import { execFile } from 'node:child_process'
import { Worker } from 'node:worker_threads'
import { fileURLToPath } from 'node:url'
import { fairfs, isNative, tmpPath, windows } from './helpers.mjs'
import { enableHook, probeCallback, probePromise, probeStream, probeConcurrentStreams, undestroyed } from './fixtures/async-context-probe.mjs'

enableHook()

const fixtures = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures')
const dir = fs.mkdtempSync(tmpPath('async-context'))
const small = path.join(dir, 'small')
const big = path.join(dir, 'big')
const sub = path.join(dir, 'sub')
const link = path.join(dir, 'link')
const missing = path.join(dir, 'missing')
fs.writeFileSync(small, 'a few bytes\n')
// 4 MiB: read on the pool, in parts, whatever the fast path.
fs.writeFileSync(big, crypto.randomBytes(4 * 1024 * 1024))
fs.mkdirSync(sub)
fs.writeFileSync(path.join(sub, 'x'), 'x')
if (windows) fs.copyFileSync(small, link)
else fs.symlinkSync(small, link)
// In the page cache, and their lookups cached: what the fast path answers.
fs.readFileSync(small)
fs.readFileSync(big)

/** The fast path's setting when this file started, restored after each test that changes it. */
const initialFastPath = isNative ? fairfs.stats().fastPath : true

/** Runs `body(fastPath)` with fairfs.configure({ fastPath }), once on and once off. */
function eachFastPath(title, body) {
  for (const fastPath of [true, false]) {
    test.serial(`${title} (fastPath: ${fastPath})`, async (t) => {
      fairfs.configure({ fastPath })
      t.teardown(() => fairfs.configure({ fastPath: initialFastPath }))
      await body(t, fastPath)
    })
  }
}

const callbackCases = (f) => ({
  'readFile small': (cb) => f.readFile(small, cb),
  'readFile small, utf8': (cb) => f.readFile(small, 'utf8', cb),
  'readFile missing': (cb) => f.readFile(missing, cb),
  'readFile big': (cb) => f.readFile(big, cb),
  stat: (cb) => f.stat(small, cb),
  'stat bigint': (cb) => f.stat(dir, { bigint: true }, cb),
  'stat missing': (cb) => f.stat(missing, cb),
  lstat: (cb) => f.lstat(link, cb),
  'lstat missing': (cb) => f.lstat(missing, cb),
  access: (cb) => f.access(small, cb),
  'access missing': (cb) => f.access(missing, cb),
  readdir: (cb) => f.readdir(dir, cb),
  'readdir withFileTypes': (cb) => f.readdir(dir, { withFileTypes: true }, cb),
  'readdir missing': (cb) => f.readdir(missing, cb),
})

/** node:fs's readFile calls back from its last request (close), made from the one before, not from the caller's. */
const fromALaterRequest = (name) => name.startsWith('readFile ') && name !== 'readFile missing'

eachFastPath("callbacks run in the caller's store, in a resource made in its context", async (t, fastPath) => {
  const node = callbackCases(fs)
  const ours = callbackCases(fairfs)
  const types = {}
  for (const name of Object.keys(node)) {
    const { type: nodeType, ...expected } = await probeCallback(node[name])
    const { type, ...got } = await probeCallback(ours[name])
    types[name] = type
    if (fromALaterRequest(name)) {
      // The native backend's is the caller's: one request, made by the call.
      if (isNative) t.true(got.triggerIsCaller, name)
      delete expected.triggerIsCaller
      delete got.triggerIsCaller
    }
    t.deepEqual(got, expected, name)
    t.like(got, { store: true, fresh: true, resource: true, fromCaller: true }, name)
  }
  t.log(fastPath ? 'fairfs resource types with the fast path:' : 'fairfs resource types:', JSON.stringify(types))
  if (isNative && !fastPath) {
    // Every one of them went to the pool (or to node:fs, where the addon has no metadata calls).
    for (const [name, type] of Object.entries(types)) t.is(type, 'FSREQCALLBACK', name)
  }
})

const promiseCases = (p) => ({
  'readFile small': () => p.readFile(small),
  'readFile missing': () => p.readFile(missing),
  'readFile big': () => p.readFile(big),
  stat: () => p.stat(small),
  'stat missing': () => p.stat(missing),
  lstat: () => p.lstat(link),
  access: () => p.access(small),
  'access missing': () => p.access(missing),
  readdir: () => p.readdir(sub),
  'readdir missing': () => p.readdir(missing),
  realpath: () => p.realpath(link),
  'realpath missing': () => p.realpath(missing),
})

eachFastPath("promise forms: then and await run in the caller's store; the request is made in its context", async (t) => {
  const node = promiseCases(fs.promises)
  const ours = promiseCases(fairfs.promises)
  for (const name of Object.keys(node)) {
    const expected = await probePromise(node[name])
    const got = await probePromise(ours[name])
    t.deepEqual(got, expected, name)
    t.like(got, { storeInThen: true, storeAfterAwait: true, requestFromCaller: true }, name)
  }
})

eachFastPath("readFiles (fairfs only): the batch's continuations run in the caller's store; its requests are made in its context", async (t) => {
  const cases = {
    'string paths, settled': [[small, big, missing], { settle: true }, 'ok'],
    'string paths, one missing': [[small, missing], undefined, 'ENOENT'],
    'Buffer paths': [[Buffer.from(small), Buffer.from(big)], undefined, 'ok'],
    'Buffer paths, one missing': [[Buffer.from(missing)], undefined, 'ENOENT'],
  }
  for (const [name, [paths, options, outcome]] of Object.entries(cases)) {
    t.deepEqual(await probePromise(() => fairfs.readFiles(paths, options)), { outcome, storeInThen: true, storeAfterAwait: true, requestFromCaller: true }, name)
  }
})

const streamCases = [
  ['4 MiB', big, 'inside'],
  ['4 MiB', big, 'made inside, consumed outside'],
  ['4 MiB', big, 'made outside, consumed later inside'],
  ['4 MiB, 1 KiB chunks', big, 'inside', { highWaterMark: 1024 }],
  ['4 MiB, from byte 100', big, 'inside', { start: 100 }],
  ['small', small, 'inside'],
  ['small', small, 'made outside, consumed later inside'],
  ['missing', missing, 'inside'],
  ['missing', missing, 'made inside, consumed outside'],
]

eachFastPath('createReadStream: each event runs in the store node:fs emits it in', async (t) => {
  for (const [what, file, mode, options] of streamCases) {
    const expected = await probeStream(fs, file, mode, options)
    const got = await probeStream(fairfs, file, mode, options)
    t.deepEqual(got, expected, `${what}, ${mode}`)
  }
  // As node:fs, for the plain cases: everything in the store the stream was made in.
  t.deepEqual(await probeStream(fairfs, big, 'inside'), { open: ['made'], ready: ['made'], data: ['made'], end: ['made'], close: ['made'] })
  t.deepEqual(await probeStream(fairfs, missing, 'inside'), { error: ['made'], close: ['made'] })
})

eachFastPath("createReadStream: streams read at once each emit in their own store, not another's", async (t) => {
  // Together they are held to a budget per event-loop turn (lib/turns.js), and a
  // stream waiting for its turn pushes on when another's turn ends.
  t.deepEqual(await probeConcurrentStreams(fs, big, 6), [], 'node:fs')
  t.deepEqual(await probeConcurrentStreams(fairfs, big, 6), [])
})

eachFastPath('async_hooks: every request resource made is destroyed once it has called back, as node:fs\'s are', async (t) => {
  const calls = async (f) => {
    for (const call of Object.values(callbackCases(f))) await probeCallback(call)
    for (const call of Object.values(promiseCases(f.promises))) await probePromise(call)
    await probeStream(f, big, 'inside')
    await probeConcurrentStreams(f, big, 3)
  }
  t.deepEqual(await undestroyed(['FSREQCALLBACK', 'FSREQPROMISE'], () => calls(fs)), [], 'node:fs')
  t.deepEqual(await undestroyed(['FSREQCALLBACK', 'FSREQPROMISE', 'FAIRFS_STREAM_TURN'], () => calls(fairfs)), [])
})

/** Runs scenario `scenario` of fixtures/async-context-child.mjs; resolves with its JSON. */
function runChild(t, scenario) {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [path.join(fixtures, 'async-context-child.mjs'), scenario, dir], { timeout: 60_000 }, (err, stdout, stderr) => {
      if (err) return reject(Object.assign(err, { stderr }))
      if (stderr) t.log(stderr)
      resolve(JSON.parse(stdout))
    })
  })
}

test.serial("domains: a throw from a callback or a stream's listener reaches the domain it was called in", async (t) => {
  const results = await runChild(t, 'domain')
  for (const fastPath of [true, false]) {
    const node = results[`node, fastPath ${fastPath}`]
    const ours = results[`fairfs, fastPath ${fastPath}`]
    t.deepEqual(ours, node, `fastPath ${fastPath}`)
    for (const [name, outcome] of Object.entries(ours)) {
      if (name === 'neighbours') t.deepEqual(outcome, { outcomes: ['d1 caught 1', 'd2 caught 2'], othersSawNoDomain: true }, name)
      else t.is(outcome, name === 'no domain' ? 'uncaught' : 'domain', `${name}, fastPath ${fastPath}`)
    }
  }
})

test.serial("install(): node:fs's fs.stat, realpath, exists and the rest call back in the caller's store (express's sendFile)", async (t) => {
  const results = await runChild(t, 'install')
  t.is(results.patched, isNative && !windows)
  t.true(results.restored)
  for (const [name, got] of Object.entries(results.node)) {
    if (name !== 'createReadStream') t.like(got, name.startsWith('promises.') ? { storeInThen: true } : { store: true, fromCaller: true }, `node:fs ${name}`)
  }
  for (const fastPath of [true, false]) t.deepEqual(results[`fairfs, fastPath ${fastPath}`], results.node, `fastPath ${fastPath}`)
})

eachFastPath("in a worker_thread, with AsyncLocalStorage alone: callbacks and stream events run in the caller's store", async (t, fastPath) => {
  const worker = new Worker(path.join(fixtures, 'async-context-worker.mjs'), { workerData: { small, big, missing, dir, fastPath } })
  const { node, fairfs: ours } = await new Promise((resolve, reject) => {
    worker.once('message', resolve)
    worker.once('error', reject)
  })
  await worker.terminate()
  t.deepEqual(ours, node)
  for (const [name, got] of Object.entries(ours)) {
    if (name.startsWith('stream ')) continue
    t.like(got, { store: true, fresh: true }, name)
  }
  t.deepEqual(ours['stream big'], { open: ['made'], ready: ['made'], data: ['made'], end: ['made'], close: ['made'] })
})
