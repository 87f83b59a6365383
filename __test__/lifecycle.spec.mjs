// A process's life with reads in flight: worker_threads ending mid-read, exit,
// uncaught exceptions, keep-alive, and a bug (a panic) failing only its own read.
import test from 'ava'
import fs from 'node:fs'
import { Worker } from 'node:worker_threads'
import { execFile, execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import crypto from 'node:crypto'
import { fairfs, nativeOnly, needsTestHooks, testHooksAddon, makeFile, tmpPath, runChild, emulated, wine } from './helpers.mjs'

const workerScript = new URL('./fixtures/worker-reader.mjs', import.meta.url)

function bigSparseFile(bytes) {
  const path = tmpPath('sparse')
  fs.closeSync(fs.openSync(path, 'w'))
  fs.truncateSync(path, bytes)
  return path
}

test('4 worker_threads read at once, one terminated mid-read; the rest and the main thread carry on', async (t) => {
  const { path, data } = makeFile(8 * 1024 * 1024)
  const digest = crypto.createHash('sha256').update(data).digest('hex')
  // The one to terminate reads on and on: with 10 rounds it once finished all of them
  // (under qemu) before the terminate took effect, and exited 0.
  const workers = Array.from({ length: 4 }, (_, i) => new Worker(workerScript, { workerData: { file: path, rounds: i === 0 ? 100_000 : 10 } }))
  const results = workers.map(
    (w) =>
      new Promise((resolve, reject) => {
        const seen = []
        w.on('message', (d) => seen.push(d))
        w.on('error', reject)
        w.on('exit', (code) => resolve({ code, seen }))
      }),
  )
  workers[0].once('message', () => workers[0].terminate())
  const done = await Promise.all(results)
  t.is(done[0].code, 1, 'terminated')
  for (const { seen } of done) t.true(seen.every((d) => d === digest))
  for (const { code, seen } of done.slice(1)) {
    t.is(code, 0)
    t.is(seen.length, 10)
  }
  t.true((await fairfs.readFile(path)).equals(data))
})

test('worker_threads streaming big files, two terminated mid-stream; the rest carry on and read right', async (t) => {
  // Stream blocks after the first read into Buffers the worker lends: its teardown
  // must wait for a block still writing into one (src/node/mod.rs, LentBlocks).
  const { path, data } = makeFile(24 * 1024 * 1024)
  const digest = crypto.createHash('sha256').update(data).digest('hex')
  // The two to terminate stream on and on, as in the test above: with 4 rounds both once
  // finished them (under wine) before the terminate took effect, and exited 0.
  const workers = Array.from({ length: 4 }, (_, i) => new Worker(workerScript, { workerData: { file: path, rounds: i < 2 ? 100_000 : 4, stream: true } }))
  const results = workers.map(
    (w) =>
      new Promise((resolve, reject) => {
        const seen = []
        w.on('message', (d) => d !== 'streaming' && seen.push(d))
        w.on('error', reject)
        w.on('exit', (code) => resolve({ code, seen }))
      }),
  )
  for (const w of workers.slice(0, 2)) w.once('message', () => w.terminate())
  const done = await Promise.all(results)
  for (const { seen } of done) t.true(seen.every((d) => d === digest))
  t.deepEqual(done.map((d) => d.code), [1, 1, 0, 0])
  for (const { seen } of done.slice(2)) t.is(seen.length, 4)
  const chunks = await fairfs.createReadStream(path).toArray()
  t.true(Buffer.concat(chunks).equals(data))
})

test('process.exit() during a big read exits cleanly with its code', async (t) => {
  const path = bigSparseFile(512 * 1024 * 1024)
  t.teardown(() => fs.rmSync(path))
  const r = await runChild('exit-during-read', path)
  t.is(r.signal, null)
  t.is(r.code, 7)
  t.is(r.stderr, '')
  t.is(r.stdout, '')
})

test('an uncaught exception during a read exits like any uncaught exception', async (t) => {
  const path = bigSparseFile(512 * 1024 * 1024)
  t.teardown(() => fs.rmSync(path))
  const r = await runChild('throw-during-read', path)
  t.is(r.signal, null)
  t.is(r.code, 1)
  t.regex(r.stderr, /Error: boom/)
})

test('a pending read keeps the process alive until it settles, and no longer', async (t) => {
  const path = bigSparseFile(64 * 1024 * 1024)
  t.teardown(() => fs.rmSync(path))
  const started = Date.now()
  const r = await runChild('keep-alive', path)
  t.is(r.code, 0)
  t.is(r.stdout, `read ${64 * 1024 * 1024}\n`)
  // Under qemu-user this child alone takes about 25 s (Node starting and reading,
  // emulated), and longer beside the rest of the suite.
  t.true(Date.now() - started < (emulated || wine ? 60_000 : 30_000))
  const missing = await runChild('keep-alive', tmpPath('missing'))
  t.is(missing.stdout, 'ENOENT\n')
})

test('a callback that throws does not stop the other reads of its batch', async (t) => {
  const { path } = makeFile(100)
  const r = await runChild('callback-throws', path)
  t.regex(r.stdout, /uncaught from callback/)
  t.regex(r.stdout, /settled 5/)
})

test('an exception from a callback is reported from the line that threw it, as node:fs reports it', async (t) => {
  // Node's own test-fs-readfile-error.js: the report names the user's file and line.
  const script = tmpPath('throws-here.js')
  const index = fileURLToPath(new URL('../index.js', import.meta.url))
  fs.writeFileSync(script, `require(${JSON.stringify(index)}).readFile('/', function (err) {\n  if (err) throw err\n})\n`)
  const r = await new Promise((resolve) =>
    execFile(process.execPath, [script], { timeout: 60_000 }, (err, stdout, stderr) => resolve({ code: err?.code, stderr })),
  )
  t.is(r.code, 1)
  // Node prints the report with C stdio, which on Windows ends lines with \r\n.
  const stderr = r.stderr.replaceAll('\r\n', '\n')
  t.true(stderr.startsWith(`${script}:2\n  if (err) throw err\n`), stderr.slice(0, 300))
  t.regex(stderr, /EISDIR: illegal operation on a directory, read/)
})

nativeOnly(test)('the release addon carries no test hook: FAIRFS_TEST_PANIC_PATH changes nothing', async (t) => {
  const abi = { linux: '-gnu', win32: '-msvc' }[process.platform] ?? ''
  const addon = process.env.NAPI_RS_NATIVE_LIBRARY_PATH ??
    fileURLToPath(new URL(`../fairfs.${process.platform}-${process.arch}${abi}.node`, import.meta.url))
  t.false(fs.readFileSync(addon).includes('FAIRFS_TEST_'), `${addon} names a FAIRFS_TEST_ variable`)
  const { path: file, data } = makeFile(100_000, 'panics-here')
  const script = `
    const fairfs = require(${JSON.stringify(fileURLToPath(new URL('../index.js', import.meta.url)))})
    fairfs.promises.readFile(${JSON.stringify(file)}).then((b) => console.log(b.length), (e) => console.log(e.code))`
  const out = execFileSync(process.execPath, ['-e', script], { env: { ...process.env, FAIRFS_TEST_PANIC_PATH: 'panics-here' }, timeout: 60_000 })
  t.is(String(out).trim(), String(data.length))
})

needsTestHooks(test)('a panic in a pool thread fails only its own read, with a clear error; the pool and the process go on', async (t) => {
  const { path: bad } = makeFile(100_000, 'panics-here')
  const { path: good, data } = makeFile(100_000)
  const script = `
    const fairfs = require(${JSON.stringify(fileURLToPath(new URL('../index.js', import.meta.url)))})
    const describe = (e) => ({ code: e.code, message: e.message })
    ;(async () => {
      const failed = await fairfs.promises.readFile(${JSON.stringify(bad)}).then(() => null, describe)
      const batch = await fairfs.readFiles([${JSON.stringify(good)}, ${JSON.stringify(bad)}], { settle: true })
      const after = await Promise.all(Array.from({ length: 8 }, () => fairfs.promises.readFile(${JSON.stringify(good)})))
      console.log(JSON.stringify({ failed, batch: batch.map((r) => r.status), after: after.map((b) => b.length), threads: fairfs.stats().threads }))
    })()`
  const out = await new Promise((resolve, reject) =>
    execFile(process.execPath, ['-e', script], { env: { ...process.env, FAIRFS_TEST_PANIC_PATH: 'panics-here', NAPI_RS_NATIVE_LIBRARY_PATH: testHooksAddon }, timeout: 60_000 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve({ ...JSON.parse(stdout), stderr }),
    ),
  )
  t.is(out.failed.code, 'ERR_FAIRFS_INTERNAL')
  t.regex(out.failed.message, /panicked while reading '.*panics-here'/)
  t.deepEqual(out.batch, ['fulfilled', 'rejected'])
  t.deepEqual(out.after, Array(8).fill(data.length))
  t.is(out.threads, 4)
  t.regex(out.stderr, /fairfs test fault/, 'the panic itself is on stderr')
})
