// Admission control (CONTRIBUTING.md, "What the tests check"): a burst never fails with EMFILE and never
// holds more result memory than the limit; waiting reads hold nothing and cancel at once.
import test from 'ava'
import fs from 'node:fs'
import { execFile, execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { fairfs, nativeOnly, makeFile, tmpPath, describeError, fdsOpenOn, posixOnly, noUlimit, windows } from './helpers.mjs'

const child = fileURLToPath(new URL('./fixtures/child.mjs', import.meta.url))
const MiB = 1024 * 1024

function runChild(limit, scenario, file) {
  return new Promise((resolve, reject) =>
    execFile('sh', ['-c', `ulimit -n ${limit} && exec "${process.execPath}" "${child}" ${scenario} "${file}"`], { maxBuffer: 1 << 20 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(JSON.parse(stdout)),
    ),
  )
}

nativeOnly(test.serial)('stats() shows admission and its defaults', (t) => {
  const s = fairfs.stats()
  t.is(s.maxBytesInFlight, 64 * MiB)
  // A quarter of RLIMIT_NOFILE (which Node raises to the hard limit), 4..1024; on
  // Windows, of the C runtime's 512 (its default _getmaxstdio), whose fds libuv's are.
  const hard = windows ? 512 : Number(execFileSync('sh', ['-c', 'ulimit -Hn'], { encoding: 'utf8' }).trim())
  t.is(s.maxOpenFiles, Number.isFinite(hard) ? Math.min(1024, Math.max(4, Math.floor(hard / 4))) : 1024)
  t.like(s, { openFiles: 0, bytesInFlight: 0, waiting: 0 })
})

posixOnly(noUlimit, nativeOnly(test))('2,000 concurrent reads under ulimit -n 256: every one succeeds, where node:fs runs out', async (t) => {
  const { path } = makeFile(256 * 1024)
  const out = await runChild(256, 'burst', path)
  t.deepEqual(out.promises, { ok: 2000 })
  t.deepEqual(out.callbacks, { ok: 2000 })
  t.true(out.node.EMFILE > 0, `node:fs without admission: ${JSON.stringify(out.node)}`)
  t.is(out.maxOpenFiles, 64)
  t.like(out, { openFiles: 0, waiting: 0 })
})

posixOnly(noUlimit, nativeOnly(test))('2,000 concurrent writes under ulimit -n 256: every one succeeds and is whole, where node:fs runs out', async (t) => {
  const dir = tmpPath('write-burst')
  fs.mkdirSync(dir)
  const out = await runChild(256, 'write-burst', dir)
  t.deepEqual(out.promises, { ok: 2000 })
  t.deepEqual(out.callbacks, { ok: 2000 })
  t.true(out.whole)
  t.true(out.node.EMFILE > 0, `node:fs without admission: ${JSON.stringify(out.node)}`)
  t.like(out, { openFiles: 0, waiting: 0, bytesInFlight: 0 })
})

posixOnly(noUlimit, nativeOnly(test))('EMFILE caused by other code: reads wait for descriptors, and fail as node:fs does only after a bounded wait', async (t) => {
  const { path } = makeFile(100_000)
  const out = await runChild(128, 'emfile-other', path)
  t.is(out.early.settled, 0, 'no read failed while the descriptors were taken')
  // Waiting for a descriptor, bar one a worker may be retrying at that moment.
  t.true(out.early.waiting >= 19, `waiting: ${out.early.waiting}`)
  t.deepEqual(out.waited, Array(20).fill(true))
  t.is(out.node.code, 'EMFILE')
  t.deepEqual(out.ours, out.node)
  t.true(out.gaveUpAfterMs >= 2000, `gave up after ${out.gaveUpAfterMs} ms`)
})

nativeOnly(test.serial)('big reads past maxBytesInFlight wait, and their results are whole', async (t) => {
  const { path, data } = makeFile(4 * MiB)
  fairfs.configure({ maxBytesInFlight: 8 * MiB })
  t.teardown(() => fairfs.configure({ maxBytesInFlight: 64 * MiB }))
  let most = 0
  let waited = 0
  let sampling = true
  const sample = () => {
    const s = fairfs.stats()
    most = Math.max(most, s.bytesInFlight)
    waited = Math.max(waited, s.waiting)
    if (sampling) setImmediate(sample)
  }
  sample()
  const results = await Promise.all(Array.from({ length: 24 }, () => fairfs.promises.readFile(path)))
  sampling = false
  t.true(results.every((b) => b.equals(data)))
  t.true(most > 0 && most <= 8 * MiB, `bytes in flight reached ${most}`)
  t.true(waited > 0, 'some reads waited for their bytes')
  t.like(fairfs.stats(), { bytesInFlight: 0, waiting: 0 })
})

nativeOnly(test.serial)('a big file over the byte limit still reads, alone', async (t) => {
  const { path, data } = makeFile(3 * MiB)
  fairfs.configure({ maxBytesInFlight: MiB })
  t.teardown(() => fairfs.configure({ maxBytesInFlight: 64 * MiB }))
  const results = await Promise.all([fairfs.promises.readFile(path), fairfs.promises.readFile(path)])
  t.true(results.every((b) => b.equals(data)))
})

nativeOnly(test.serial)('a read waiting for admission holds no descriptor and aborts at once', async (t) => {
  // A 1 GiB read holds every byte in flight for a while; a 2 MiB read then waits.
  const huge = tmpPath('admission-huge')
  fs.closeSync(fs.openSync(huge, 'w'))
  fs.truncateSync(huge, 1024 * MiB)
  t.teardown(() => fs.rmSync(huge))
  fairfs.configure({ maxBytesInFlight: MiB })
  t.teardown(() => fairfs.configure({ maxBytesInFlight: 64 * MiB }))
  const { path } = makeFile(2 * MiB)
  let hugeDone = false
  const first = fairfs.promises.readFile(huge).then((b) => { hugeDone = true; return b.length })
  while (fairfs.stats().bytesInFlight === 0 && !hugeDone) await new Promise(setImmediate)
  const controller = new AbortController()
  const waiting = fairfs.promises.readFile(path, { signal: controller.signal })
  while (fairfs.stats().waiting === 0 && !hugeDone) await new Promise(setImmediate)
  t.false(hugeDone, 'the 1 GiB read was still in flight')
  t.like(fairfs.stats(), { waiting: 1 })
  t.is(fdsOpenOn(path), 0, 'the waiting read holds no fd')
  controller.abort()
  const err = await waiting.catch((e) => e)
  t.like(describeError(err), { name: 'AbortError', code: 'ABORT_ERR' })
  t.is(fairfs.stats().waiting, 0)
  t.is(await first, 1024 * MiB)
})
