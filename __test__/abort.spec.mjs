// AbortSignal: an AbortError with code ABORT_ERR and cause = signal.reason, and a
// cancelled read leaves no fd open.
import test from 'ava'
import fs from 'node:fs'
import { getEventListeners } from 'node:events'
import { setImmediate as nextLoopTurn, setTimeout as sleep } from 'node:timers/promises'
import { fairfs, isNative, makeFile, tmpPath, bothCallback, bothPromise, fdsOpenOn, describeError, windows } from './helpers.mjs'

const alreadyAborted = isNative ? 'an already-aborted signal rejects without opening anything' : 'an already-aborted signal fails as in node:fs (node backend)'
test.serial(alreadyAborted, async (t) => {
  const reason = new Error('stop')
  const missing = tmpPath('never-opened')
  const before = isNative && fairfs.stats()
  const cb = await bothCallback(missing, { signal: AbortSignal.abort(reason) })
  // node:fs calls back synchronously here; fairfs's callbacks are always asynchronous
  // (the node backend's callback form is node:fs's).
  t.false(cb.node.async)
  if (isNative) {
    t.true(cb.ours.async)
    t.deepEqual({ ...cb.ours, async: false }, cb.node)
  } else {
    t.deepEqual(cb.ours, cb.node)
  }
  t.is(cb.ours.error.code, 'ABORT_ERR')
  t.is(cb.ours.error.name, 'AbortError')
  t.is(cb.ours.error.cause, reason)
  const p = await bothPromise(missing, { signal: AbortSignal.abort('why') })
  t.deepEqual(p.ours, p.node)
  if (isNative) {
    // Nothing reached the pool: ENOENT would have been reported otherwise.
    const after = fairfs.stats()
    t.is(after.completed + after.cancelled, before.completed + before.cancelled)
  }
  t.false(fs.existsSync(missing))
})

test.serial('aborting during a 256 MiB read rejects with the reason and closes the fd', async (t) => {
  const path = tmpPath('big')
  fs.closeSync(fs.openSync(path, 'w'))
  fs.truncateSync(path, 256 * 1024 * 1024)
  t.teardown(() => fs.rmSync(path))
  for (const form of ['promise', 'callback']) {
    const controller = new AbortController()
    const reason = { why: form }
    const before = isNative && fairfs.stats().cancelled
    const read =
      form === 'promise'
        ? fairfs.readFile(path, { signal: controller.signal })
        : new Promise((resolve, reject) => fairfs.readFile(path, { signal: controller.signal }, (e, d) => (e ? reject(e) : resolve(d))))
    // Let the read open the file and get going (or end: then the checks below fail).
    let ended = false
    read.then(() => (ended = true), () => (ended = true))
    await opened(path, () => ended)
    controller.abort(reason)
    const err = await read.catch((e) => e)
    t.true(err instanceof Error, `${form}: rejected`)
    t.is(err.name, 'AbortError')
    t.is(err.code, 'ABORT_ERR')
    t.is(err.cause, reason)
    t.is(fdsOpenOn(path), 0, `${form}: fd closed by the time the error arrives`)
    if (isNative) t.is(fairfs.stats().cancelled, before + 1, 'the pool counted it')
  }
})

/**
 * Resolves once a read has `path` open (or `ended()`). Windows' probe (fdsOpenOn) would
 * make the read's own open fail if they met: there the pool's count of open files tells
 * (native), or node:fs is given a moment.
 */
async function opened(path, ended) {
  if (!windows) {
    while (fdsOpenOn(path) === 0 && !ended()) await nextLoopTurn()
  } else if (isNative) {
    while (fairfs.stats().openFiles === 0 && !ended()) await nextLoopTurn()
  } else {
    await sleep(50)
  }
}

test.serial('an abort after the read finished changes nothing', async (t) => {
  const { path, data } = makeFile(1000)
  const controller = new AbortController()
  const got = await fairfs.readFile(path, { signal: controller.signal })
  controller.abort()
  t.true(got.equals(data))
})

test.serial('many reads aborted at random points leak no fds', async (t) => {
  const files = Array.from({ length: 8 }, (_, i) => makeFile(64 * 1024 * (i + 1)))
  fairfs.configure({ chunkSize: 16 * 1024 })
  t.teardown(() => fairfs.configure({ chunkSize: 512 * 1024 }))
  let aborted = 0
  let completed = 0
  const reads = []
  for (let i = 0; i < 400; i++) {
    const { path, data } = files[i % files.length]
    const controller = new AbortController()
    reads.push(
      fairfs.readFile(path, { signal: controller.signal }).then(
        (got) => {
          t.true(got.equals(data))
          completed++
        },
        (err) => {
          t.is(err.code, 'ABORT_ERR')
          aborted++
        },
      ),
    )
    if (i % 3 === 0) controller.abort()
    else if (i % 3 === 1) setImmediate(() => controller.abort())
  }
  await Promise.all(reads)
  t.is(aborted + completed, 400)
  t.true(aborted >= 134, `aborted ${aborted}`)
  for (const { path } of files) t.is(fdsOpenOn(path), 0)
})

test.serial('reads sharing one AbortSignal add one listener, removed when the last settles; abort cancels them all', async (t) => {
  const { path, data } = makeFile(2 * 1024 * 1024)
  const warnings = []
  const onWarning = (w) => warnings.push(w.name)
  process.on('warning', onWarning)
  t.teardown(() => process.off('warning', onWarning))
  const shared = new AbortController()
  const reads = Array.from({ length: 20 }, () => fairfs.promises.readFile(path, { signal: shared.signal }))
  const listening = getEventListeners(shared.signal, 'abort').length
  const results = await Promise.all(reads)
  t.true(results.every((b) => b.equals(data)))
  await nextLoopTurn()
  t.deepEqual(warnings, [], 'no MaxListenersExceededWarning')
  if (isNative) {
    t.is(listening, 1, 'one listener for twenty reads')
    t.is(getEventListeners(shared.signal, 'abort').length, 0, 'removed once they settled')
  }
  // An abort ends every read still sharing the signal, whichever API started it.
  const abort = new AbortController()
  const many = [
    ...Array.from({ length: 10 }, () => fairfs.promises.readFile(path, { signal: abort.signal })),
    fairfs.readFiles([path, path, Buffer.from(path)], { signal: abort.signal }),
    fairfs.readFiles(Array(1000).fill(path), { signal: abort.signal }),
  ]
  abort.abort()
  const outcomes = await Promise.allSettled(many)
  t.true(outcomes.every((o) => o.status === 'rejected' && o.reason.name === 'AbortError'), JSON.stringify(outcomes.map((o) => o.status)))
  if (isNative) t.is(getEventListeners(abort.signal, 'abort').length, 0)
})

/** Node's test helper mustNotMutateObjectDeep, in short: a Proxy that throws on any write, all the way down. */
function mustNotMutate(target) {
  if (target === null || (typeof target !== 'object' && typeof target !== 'function')) return target
  return new Proxy(target, {
    get: (obj, key) => mustNotMutate(Reflect.get(obj, key)),
    set: () => { throw new Error('mutated') },
    defineProperty: () => { throw new Error('mutated') },
    deleteProperty: () => { throw new Error('mutated') },
  })
}

test('a signal behind a write-proof Proxy is read, never written to, as node:fs does', async (t) => {
  const { path } = makeFile(4 * 1024 * 1024)
  const handle = await fs.promises.open(path)
  try {
    const run = async (readFile, target) => {
      const controller = new AbortController()
      const p = readFile(target, mustNotMutate({ signal: controller.signal }))
      process.nextTick(() => controller.abort())
      return describeError(await p.then(() => null, (e) => e))
    }
    const node = await run(fs.promises.readFile, path)
    t.is(node.name, 'AbortError')
    t.deepEqual(await run(fairfs.promises.readFile, path), node)
    t.deepEqual(await run(fairfs.promises.readFile, handle), node)
    // Aborted already: rejected without touching the signal.
    const aborted = mustNotMutate({ signal: AbortSignal.abort() })
    t.deepEqual(describeError(await fairfs.promises.readFile(path, aborted).catch((e) => e)), describeError(await fs.promises.readFile(path, aborted).catch((e) => e)))
  } finally {
    await handle.close()
  }
})
