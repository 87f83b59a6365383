// The cache-hit fast path (small cached files read on the calling thread) and the
// pool path give the same results and errors; both are exercised.
import test from 'ava'
import fs from 'node:fs'
import path from 'node:path'
import os from 'node:os'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import { AsyncLocalStorage } from 'node:async_hooks'
import { skipping } from './fixtures/slowfs.mjs'
import { fairfs, nativeOnly, fastPathWorks, makeFile, tmpPath, bothCallback, bothPromise, fdsOpenOn } from './helpers.mjs'

const cases = () => {
  const { path } = makeFile(3000)
  fs.readFileSync(path) // cached
  const dir = fs.mkdtempSync(tmpPath('dir'))
  return [[path], [path, 'utf8'], [path, { encoding: 'base64' }], [path, { flag: 'a+' }], [tmpPath('missing')], [dir], [makeFile(0).path]]
}

for (const fastPath of [true, false]) {
  nativeOnly(test.serial)(`fastPath ${fastPath}: same results and errors as node:fs`, async (t) => {
    fairfs.configure({ fastPath })
    t.teardown(() => fairfs.configure({ fastPath: true }))
    const before = fairfs.stats()
    for (const args of cases()) {
      const cb = await bothCallback(...args)
      t.deepEqual(cb.ours, cb.node, JSON.stringify(args))
      t.true(cb.ours.async, 'callbacks stay asynchronous')
      const p = await bothPromise(...args)
      t.deepEqual(p.ours, p.node, JSON.stringify(args))
    }
    const tries = fairfs.stats().fastPathHits + fairfs.stats().fastPathMisses - before.fastPathHits - before.fastPathMisses
    // Every call with a string path and flag 'r' tries it: six cases, callback and promise.
    t.is(tries, fastPath ? 12 : 0, fastPath ? 'the fast path was tried by every eligible call' : 'the fast path is off')
    t.is(fairfs.stats().fastPath, fastPath)
  })
}

nativeOnly(test.serial)('on a kernel with openat2 (Linux 5.12+), small cached files are served by the fast path', async (t) => {
  const { path, data } = makeFile(1000)
  fs.readFileSync(path)
  const before = fairfs.stats()
  t.true((await fairfs.readFile(path)).equals(data))
  const after = fairfs.stats()
  if (fastPathWorks()) {
    t.is(after.fastPathHits, before.fastPathHits + 1)
    t.is(after.completed, before.completed, 'the pool was not involved')
  } else {
    t.is(after.fastPathMisses, before.fastPathMisses + 1)
  }
})

// A missing name the dentry cache knows is answered where a hit is (issue 52): the
// same error as node:fs, field by field, and no trip to the pool, so that a hit and a
// miss of one call complete in the order node:fs's would.
nativeOnly(test.serial)('stat and lstat of missing names the dentry cache knows: node:fs\'s errors, answered without the pool', async (t) => {
  const dir = fs.mkdtempSync(tmpPath('miss'))
  fs.writeFileSync(`${dir}/f`, 'x')
  fs.symlinkSync(`${dir}/gone`, `${dir}/dangling`)
  const paths = [`${dir}/nope`, `${dir}//nope`, `${dir}/f/under-a-file`, `${dir}/no-dir/x`, `${dir}/dangling`]
  const describe = (e) => ({ name: e.name, code: e.code, errno: e.errno, syscall: e.syscall, path: e.path, message: e.message, stackTop: e.stack.split('\n')[0] })
  for (const p of paths) {
    for (const kind of ['stat', 'lstat']) {
      fs.promises[kind](p).catch(() => {}) // the miss cached, as a server's second look finds it
      const node = await fs.promises[kind](p).then(() => 'found', describe)
      const before = fairfs.stats()
      const ours = await fairfs.promises[kind](p).then(() => 'found', describe)
      const cb = await new Promise((resolve) => fairfs[kind](p, (e) => resolve(e ? describe(e) : 'found')))
      const nodeCb = await new Promise((resolve) => fs[kind](p, (e) => resolve(e ? describe(e) : 'found')))
      t.deepEqual(ours, node, `${kind} ${p}`)
      t.deepEqual(cb, nodeCb, `${kind} ${p}, callback`)
      // The pool answers a dangling link's stat, and a name under a file (the kernel's
      // cached walk gives up there with EAGAIN instead of ENOTDIR).
      if (fastPathWorks() && !(kind === 'stat' && p.endsWith('dangling')) && !p.includes('under-a-file')) {
        t.is(fairfs.stats().completed, before.completed, `${kind} ${p}: answered without the pool`)
      }
    }
  }
})

nativeOnly(test.serial)('access of cached names, there or missing, every mode: node:fs\'s outcomes, answered without the pool', async (t) => {
  const dir = fs.mkdtempSync(tmpPath('access'))
  fs.writeFileSync(`${dir}/ro`, 'x', { mode: 0o444 })
  fs.writeFileSync(`${dir}/x`, 'x', { mode: 0o755 })
  const { F_OK, R_OK, W_OK, X_OK } = fs.constants
  const describe = (e) => ({ code: e.code, errno: e.errno, syscall: e.syscall, path: e.path, message: e.message })
  for (const p of [`${dir}/ro`, `${dir}/x`, dir, `${dir}/nope`, `${dir}/no-dir/x`]) {
    for (const mode of [F_OK, R_OK, W_OK, X_OK, R_OK | W_OK | X_OK]) {
      fs.accessSync(dir) // the names cached
      const node = await fs.promises.access(p, mode).then(() => 'ok', describe)
      const before = fairfs.stats()
      const ours = await fairfs.promises.access(p, mode).then(() => 'ok', describe)
      const cb = await new Promise((resolve) => fairfs.access(p, mode, (e) => resolve(e ? describe(e) : 'ok')))
      t.deepEqual(ours, node, `${p} ${mode}`)
      t.deepEqual(cb, node, `${p} ${mode}, callback`)
      if (fastPathWorks()) t.is(fairfs.stats().completed, before.completed, `${p} ${mode}: answered without the pool`)
    }
  }
})

test('configure({ fastPath }) takes a boolean', (t) => {
  t.throws(() => fairfs.configure({ fastPath: 'yes' }), { code: 'ERR_INVALID_ARG_TYPE' })
})

test.serial('a loop of cached reads does not starve timers and I/O', async (t) => {
  const { path } = makeFile(1000)
  fs.readFileSync(path)
  let timerFired = false
  const timer = setTimeout(() => (timerFired = true), 20)
  let reads = 0
  // Each read re-issues the next from its callback, as Node's readfile benchmark does.
  await new Promise((resolve) => {
    const next = () => {
      if (timerFired || reads >= 200_000) return resolve()
      reads++
      fairfs.readFile(path, next)
    }
    next()
  })
  clearTimeout(timer)
  t.true(timerFired, `the timer never fired during ${reads} reads`)
  t.true(reads > 0)
})

const withFastPath = fastPathWorks() ? nativeOnly(test.serial) : skipping(test.serial, 'no fast path here: it needs Linux 5.12+, not emulated, not portable')

withFastPath('a busy CPU does not turn the fast path off: a call preempted midway waited for no storage', async (t) => {
  const { path, data } = makeFile(1000)
  fs.readFileSync(path)
  // The mount earns the fast path's trust first (its first opens go to the pool).
  for (let i = 0; i < 8; i++) await fairfs.promises.readFile(path)
  // Twice as many spinning threads as cores: this thread is preempted, for a
  // timeslice of milliseconds, in the middle of some of its calls.
  const spinners = Array.from({ length: 2 * os.availableParallelism() }, () =>
    new Worker('const end = Date.now() + 1500; while (Date.now() < end);', { eval: true }))
  const before = fairfs.stats()
  let reads = 0
  let wrong = 0
  const end = Date.now() + 1500
  while (Date.now() < end) {
    const read = await new Promise((resolve, reject) => fairfs.readFile(path, (e, b) => (e ? reject(e) : resolve(b))))
    if (!read.equals(data)) wrong++
    reads++
  }
  await Promise.all(spinners.map((w) => new Promise((resolve) => w.on('exit', resolve))))
  const after = fairfs.stats()
  const slow = after.fastPathSlowCalls - before.fastPathSlowCalls
  const hits = after.fastPathHits - before.fastPathHits
  // Counted slow, a preempted call turned the fast path off for a second or more:
  // most of the reads went to the pool (checked on the build before).
  t.is(wrong, 0)
  t.true(hits >= reads * 0.99, `${hits} of ${reads} reads on the fast path, ${slow} calls counted slow`)
})

/** A stream's bytes and the names of its events, in order. */
async function streamEvents(stream) {
  const events = []
  const chunks = []
  for (const name of ['open', 'ready', 'end', 'close']) stream.on(name, () => events.push(name))
  stream.on('data', (chunk) => {
    events.push('data')
    chunks.push(chunk)
  })
  await new Promise((resolve, reject) => stream.on('close', resolve).on('error', reject))
  return { bytes: Buffer.concat(chunks), events }
}

for (const fastPath of [true, false]) {
  nativeOnly(test.serial)(`fastPath ${fastPath}: a small file's stream gives node:fs's bytes and events, through the pool only for what may wait`, async (t) => {
    fairfs.configure({ fastPath })
    t.teardown(() => fairfs.configure({ fastPath: true }))
    const { path, data } = makeFile(1000)
    fs.readFileSync(path)
    // As @fastify/send asks for a file: its whole range.
    for (const options of [{ start: 0, end: 999 }, { start: 10, end: 99 }, {}, { highWaterMark: 100 }]) {
      const before = fairfs.stats()
      const ours = await streamEvents(fairfs.createReadStream(path, options))
      const trips = fairfs.stats().completed - before.completed
      const node = await streamEvents(fs.createReadStream(path, options))
      t.deepEqual(ours, node, JSON.stringify(options))
      t.true(ours.bytes.equals(data.subarray(options.start ?? 0, (options.end ?? 999) + 1)))
      // A range within the file is one block: on the pool that is an open, a read and a
      // close. With the fast path all three stay on this thread, and so does a stream
      // with no end (koa-send's): its first read asks for what the fast path reads, and
      // the read that finds the end is answered here too. (Without the fast path and
      // `end`, read-ahead issues several blocks at once.)
      if (fastPath && fastPathWorks()) t.is(trips, 0, `${JSON.stringify(options)}: pool trips`)
      else if (options.end !== undefined) t.is(trips, 3, `${JSON.stringify(options)}: pool trips`)
    }
  })
}

nativeOnly(test.serial)('a stream with no end gives node:fs\'s chunks whatever its first read on this thread asks for', async (t) => {
  const { path, data } = makeFile(200_000)
  fs.readFileSync(path)
  // The first read asks for the whole highWaterMark chunks that fit the fast path's
  // 64 KiB, or a whole block where one chunk is larger: the chunks are node:fs's.
  for (const highWaterMark of [undefined, 1000, 16 * 1024, 40_000, 100_000, 1 << 20]) {
    const sizes = async (stream) => {
      const out = []
      for await (const chunk of stream) out.push(chunk.length)
      return out
    }
    const ours = await sizes(fairfs.createReadStream(path, { highWaterMark }))
    t.deepEqual(ours, await sizes(fs.createReadStream(path, { highWaterMark })), `highWaterMark ${highWaterMark}`)
  }
  const ours = []
  for await (const chunk of fairfs.createReadStream(path)) ours.push(chunk)
  t.true(Buffer.concat(ours).equals(data))
})

nativeOnly(test.serial)('a stream of a file unlinked meanwhile closes it on the pool, since its last close frees the blocks', async (t) => {
  t.teardown(() => fairfs.configure({ fastPath: true }))
  const { path, data } = makeFile(1000)
  fs.readFileSync(path)
  const before = fairfs.stats()
  const stream = fairfs.createReadStream(path, { start: 0, end: 999 })
  await new Promise((resolve) => stream.once('open', resolve))
  fs.unlinkSync(path)
  const ours = await streamEvents(stream)
  t.true(ours.bytes.equals(data))
  t.deepEqual(ours.events, ['data', 'end', 'close'])
  // The open and the read stay here; the close, of a file with no name left, does not.
  t.is(fairfs.stats().completed - before.completed, fastPathWorks() ? 1 : 3)
})

nativeOnly(test.serial)('a stream opened on this thread emits open after the caller\'s own code and microtasks, as node:fs', async (t) => {
  const { path } = makeFile(100)
  fs.readFileSync(path)
  for (const create of [fairfs.createReadStream, fs.createReadStream]) {
    const stream = create(path, { start: 0, end: 99 })
    await null
    await Promise.resolve()
    const fd = await new Promise((resolve) => stream.once('open', resolve))
    t.is(typeof fd, 'number')
    stream.resume()
    await new Promise((resolve) => stream.on('close', resolve))
  }
})

nativeOnly(test.serial)('a stream opened on this thread and destroyed at once closes its fd', async (t) => {
  const { path } = makeFile(100)
  fs.readFileSync(path)
  const streams = Array.from({ length: 20 }, () => fairfs.createReadStream(path, { start: 0, end: 99 }))
  for (const stream of streams) stream.destroy()
  await Promise.all(streams.map((s) => new Promise((resolve) => s.on('close', resolve))))
  t.is(fdsOpenOn(path), 0)
})

nativeOnly(test.serial)('configure({ fastPath: false }) turns the fast paths off in worker_threads too, and FAIRFS_FAST_PATH=0 from the start', async (t) => {
  const { Worker } = await import('node:worker_threads')
  const { execFileSync } = await import('node:child_process')
  const { path } = makeFile(100)
  fs.readFileSync(path)
  // A worker reports its own view of the setting and what its readFile counted.
  const inWorker = () =>
    new Promise((resolve, reject) => {
      const code = `
        const { parentPort, workerData } = require('node:worker_threads')
        const fairfs = require(workerData.index)
        fairfs.readFile(workerData.path, (err) => {
          if (err) throw err
          const { fastPath, fastPathHits } = fairfs.stats()
          parentPort.postMessage({ fastPath, fastPathHits })
        })`
      const index = fileURLToPath(new URL('../index.js', import.meta.url))
      const worker = new Worker(code, { eval: true, workerData: { index, path } })
      worker.once('message', resolve)
      worker.once('error', reject)
    })
  fairfs.configure({ fastPath: false })
  t.teardown(() => fairfs.configure({ fastPath: true }))
  const before = fairfs.stats().fastPathHits
  const off = await inWorker()
  t.false(off.fastPath, "the worker sees the main thread's setting")
  t.is(off.fastPathHits, before, 'no fast-path hit anywhere in the process')
  // Turned back on, it is on in workers too.
  fairfs.configure({ fastPath: true })
  t.true((await inWorker()).fastPath)
  const child = execFileSync(process.execPath, ['-e', `const f = require(${JSON.stringify(fileURLToPath(new URL('../index.js', import.meta.url)))}); console.log(JSON.stringify(f.stats().fastPath))`], {
    env: { ...process.env, FAIRFS_FAST_PATH: '0' },
  })
  t.is(String(child).trim(), 'false', 'FAIRFS_FAST_PATH=0 in the environment')
})

// Writes in flight are not calls piling up on this thread (lib/native.js, trackWrite).
withFastPath('a stat beside ten whole-file writes in flight is still answered on the calling thread', async (t) => {
  const { path: file } = makeFile(10)
  fs.statSync(file)
  const big = Buffer.alloc(4 << 20, 'b')
  const writes = Array.from({ length: 10 }, (_, i) => fairfs.promises.writeFile(tmpPath(`beside-${i}`), big))
  const before = fairfs.stats().fastPathHits
  const st = await fairfs.promises.stat(file)
  const hits = fairfs.stats().fastPathHits - before
  await Promise.all(writes)
  t.is(st.size, 10)
  t.is(hits, 1, 'on the fast path, not behind the writes on the pool')
})

// Two routes, node:fs's order: an answer made on the calling thread waits for the
// thread's queries on the pool made before it (lib/native.js, later).
withFastPath("an lstat of a name the kernel has not cached, then one of a cached folder: they complete in call order, as on node:fs's one pool (tar's unpack beside fs.rm)", async (t) => {
  const dir = path.dirname(makeFile(10).path)
  fs.statSync(dir)
  const store = new AsyncLocalStorage()
  const before = fairfs.stats()
  for (let round = 0; round < 20; round++) {
    const order = []
    const unseen = path.join(dir, `never-looked-up-${round}-${process.hrtime.bigint()}`)
    await Promise.all([
      new Promise((resolve) => fairfs.lstat(unseen, (err) => resolve(order.push(err?.code)))),
      // Held until the first is back, it still runs in its caller's store.
      new Promise((resolve) => store.run({ round }, () => fairfs.lstat(dir, (err, st) => resolve(order.push(st.isDirectory() && store.getStore()?.round === round ? 'dir' : err ?? 'another store'))))),
      fairfs.promises.stat(dir).then((st) => order.push(st.isDirectory() ? 'dir again' : 'no')),
    ])
    t.deepEqual(order, ['ENOENT', 'dir', 'dir again'], `round ${round}`)
  }
  const after = fairfs.stats()
  t.true(after.fastPathHits - before.fastPathHits >= 20, 'the folder answered on the calling thread')
  t.true(after.completed - before.completed >= 20, 'the unseen names on the pool')
})

// Many calls at once: past a few in flight the calling thread's fast path steps aside
// and the pool answers, hits and misses alike (lib/native.js, pilingUp).
withFastPath('64 stats, accesses and readFiles of a cached file at once: the pool answers most, each as node:fs, and one at a time the fast path does', async (t) => {
  const { path, data } = makeFile(1000)
  fs.readFileSync(path)
  const missing = tmpPath('missing')
  const expected = { size: fs.statSync(path).size, ino: fs.statSync(path).ino }
  const calls = {
    stat: () => fairfs.promises.stat(path).then((s) => ({ size: s.size, ino: s.ino })),
    // Number and BigInt stats in one batch: each reads its own slots.
    'stat, every other one bigint': (i = 0) => fairfs.promises.stat(path, { bigint: i % 2 === 1 })
      .then((s) => ({ size: Number(s.size), ino: Number(s.ino), bigint: typeof s.size === 'bigint' && i % 2 === 1 ? 'as asked' : typeof s.size === 'number' && i % 2 === 0 ? 'as asked' : 'not as asked' })),
    access: () => fairfs.promises.access(path).then(() => 'ok'),
    readFile: () => fairfs.promises.readFile(path).then((b) => b.equals(data)),
    'stat of a missing file': () => fairfs.promises.stat(missing).then(() => 'found', (e) => e.code),
  }
  const want = { stat: expected, 'stat, every other one bigint': { ...expected, bigint: 'as asked' }, access: 'ok', readFile: true, 'stat of a missing file': 'ENOENT' }
  for (const [name, call] of Object.entries(calls)) {
    const before = fairfs.stats()
    const results = await Promise.all(Array.from({ length: 64 }, (_, i) => call(i)))
    const mid = fairfs.stats()
    for (let i = 0; i < 4; i++) t.deepEqual(await call(), want[name], `${name}, one at a time`)
    const after = fairfs.stats()
    t.deepEqual(new Set(results.map((r) => JSON.stringify(r))), new Set([JSON.stringify(want[name])]), name)
    const fast = (a, b) => b.fastPathHits - a.fastPathHits
    t.true(fast(before, mid) <= 8, `${name}: ${fast(before, mid)} of 64 at once on the fast path`)
    t.true(mid.completed - before.completed >= 56, `${name}: ${mid.completed - before.completed} of 64 at once on the pool`)
    t.is(fast(mid, after), 4, `${name}: one at a time, each on the fast path`)
  }
})
