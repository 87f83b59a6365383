// What may be done with a result's memory: keep it, transfer it, post it to another
// thread. fairfs never uses memory again while anything can still see it, every chunk
// is in memory of its own, and a stream's outcome does not depend on what its
// consumer does with the chunks. Differential against node:fs where it has an answer.
import test from 'ava'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Worker } from 'node:worker_threads'
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { fairfs, isNative, nativeOnly, needsTestHooks, testHooksAddon, makeFile, fdsOpenOn, wine, emulated } from './helpers.mjs'

const transferChild = fileURLToPath(new URL('./fixtures/transfer-child.mjs', import.meta.url))

function runTransferChild(mode, env = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fairfs-transfer-'))
  return new Promise((resolve) => {
    execFile(process.execPath, ['--expose-gc', transferChild, mode, dir, '2'], { env: { ...process.env, ...env }, timeout: 120_000, maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
      fs.rmSync(dir, { recursive: true, force: true })
      resolve({ code: err ? err.code : 0, signal: err?.signal ?? null, stdout, stderr })
    })
  })
}

/** Every round of the child: the views it was sent intact, and writes through them harmless. */
function assertIntact(t, run) {
  t.is(run.signal, null, run.stderr.slice(0, 600))
  t.is(run.code, 0, run.stderr.slice(0, 600))
  const out = JSON.parse(run.stdout)
  t.is(out.rounds.length, 2)
  for (const round of out.rounds) {
    t.deepEqual(round.intact, [true, true, true], `a readFile result, a stream chunk and a readFiles slab: ${run.stdout}`)
    t.true(round.laterUnchanged, `writing through a view changed a later result: ${run.stdout}`)
  }
  return out
}

for (const mode of ['reuse', 'trim']) {
  test(`memory moved out of a worker through a byte stream and posted stays the poster's after the worker ends (${mode})`, async (t) => {
    const out = assertIntact(t, await runTransferChild(mode))
    if (isNative) t.true(out.abandonedBytes >= 40 * 1024 * 1024, `the moved blocks were given up, not reused: ${JSON.stringify(out)}`)
  })
}

needsTestHooks(test)('memory moved out of a worker is never poisoned: the test-hooks build poisons every block that returns to the pool', async (t) => {
  assertIntact(t, await runTransferChild('trim', { NAPI_RS_NATIVE_LIBRARY_PATH: testHooksAddon }))
})

nativeOnly(test)('results a worker still holds when it ends go back to the pool: only memory that may be seen elsewhere is given up', async (t) => {
  const run = await runTransferChild('keep')
  t.is(run.code, 0, run.stderr.slice(0, 600))
  const out = JSON.parse(run.stdout)
  t.deepEqual(out.rounds, [{ kept: true }, { kept: true }])
  // Each round held a 40 MiB result: given up, it alone would count 40 MiB. (Blocks
  // V8 collected just before the end may be given up: nothing says whether their
  // memory was moved elsewhere first.)
  t.true(out.abandonedBytes < 40 * 1024 * 1024, run.stdout)
  t.is(out.outstanding, 0, run.stdout)
})

/** Streams `file` into a byte ReadableStream from 'data' (enqueue() transfers each chunk). */
async function throughByteStream(api, file, options) {
  const stream = api.createReadStream(file, options)
  let chunks = 0
  const readable = new ReadableStream({
    type: 'bytes',
    start(controller) {
      stream.on('data', (chunk) => {
        chunks++
        controller.enqueue(chunk)
        if (chunks > 10_000) stream.destroy(new Error('runaway stream'))
      })
      stream.on('end', () => controller.close())
      stream.on('error', (e) => controller.error(e))
    },
  })
  const parts = []
  for await (const part of readable) parts.push(Buffer.from(part))
  return { bytes: Buffer.concat(parts), chunks }
}

for (const [size, options] of [[10 * 1024, {}], [300 * 1024, {}], [3 * 1024 * 1024, {}], [300 * 1024, { highWaterMark: 16 * 1024 }], [100_000, { highWaterMark: 1000 }]]) {
  test(`a stream whose chunks a byte stream transfers ends with the file's bytes, as node:fs's (${size} bytes, ${JSON.stringify(options)})`, async (t) => {
    const { path: file, data } = makeFile(size)
    const ours = await throughByteStream(fairfs, file, options)
    const theirs = await throughByteStream(fs, file, options)
    t.true(ours.bytes.equals(data), `read ${ours.bytes.length} of ${data.length} bytes in ${ours.chunks} chunks`)
    t.is(ours.chunks, theirs.chunks)
  })
}

/** ArrayBuffer.prototype.transfer is on by default from Node 21: skipped, visibly, before. */
const withTransfer = typeof ArrayBuffer.prototype.transfer === 'function'
  ? test
  : (title, fn) => test.skip(`${title} [no ArrayBuffer.prototype.transfer in Node ${process.version}]`, fn)

withTransfer('chunks whose memory a data handler transfers away (ArrayBuffer.prototype.transfer) change nothing about the next ones', async (t) => {
  const { path: file, data } = makeFile(2 * 1024 * 1024 + 123)
  for (const api of [fairfs, fs]) {
    const parts = []
    await new Promise((resolve, reject) => {
      api.createReadStream(file, { highWaterMark: 32 * 1024 })
        .on('data', (chunk) => {
          const { byteOffset, length } = chunk
          parts.push(Buffer.from(chunk.buffer.transfer(), byteOffset, length))
        })
        .on('end', resolve)
        .on('error', reject)
    })
    t.true(Buffer.concat(parts).equals(data), api === fs ? 'node:fs' : 'fairfs')
  }
})

/** Every chunk of a stream over `file`, or the error, with whether its memory is its own. */
async function chunkOwnership(api, file, options) {
  const seen = []
  for await (const chunk of api.createReadStream(file, options)) {
    seen.push({ length: chunk.length, own: chunk.byteOffset === 0 && chunk.buffer.byteLength === chunk.length })
  }
  return seen
}

for (const [size, options] of [[100, {}], [3000, {}], [5000, { end: 2999 }], [100, { start: 10, end: 60 }], [5000, { highWaterMark: 1024 }], [50_000, { highWaterMark: 16 * 1024 }], [2 * 1024 * 1024 + 7, {}], [300_000, { highWaterMark: 5000 }]]) {
  test(`every chunk has an ArrayBuffer of its own, holding nothing else, as node:fs's (${size} bytes, ${JSON.stringify(options)})`, async (t) => {
    const { path: file } = makeFile(size)
    // Node's 8 KiB pool hands out small Buffers from one shared ArrayBuffer: use it.
    const neighbour = Buffer.from('an unrelated neighbour')
    const ours = await chunkOwnership(fairfs, file, options)
    t.deepEqual(ours, await chunkOwnership(fs, file, options))
    t.true(ours.every((c) => c.own), JSON.stringify(ours.slice(0, 5)))
    t.is(neighbour.toString(), 'an unrelated neighbour')
  })
}

for (const size of [100, 5000, 2 * 1024 * 1024, 40 * 1024 * 1024]) {
  test(`a readFile result of ${size} bytes has an ArrayBuffer of its own`, async (t) => {
    const { path: file, data } = makeFile(size)
    for (const buf of [await fairfs.promises.readFile(file), await new Promise((resolve, reject) => fairfs.readFile(file, (e, b) => (e ? reject(e) : resolve(b))))]) {
      t.true(buf.equals(data))
      t.is(buf.byteOffset, 0)
      t.is(buf.buffer.byteLength, size)
    }
  })
}

/**
 * How long a stream may take before it counts as hung. wine's ReadFile touches the whole
 * buffer it is given: node:fs's stream with highWaterMark 2 GiB - 1 takes seconds a read there.
 * Under qemu-user (arm64 CI) a stream of 600 one-byte chunks that ends in a second alone
 * took over 5 s beside this file's other tests.
 */
const patience = wine || emulated ? 30_000 : 5000

/** A stream's outcome within `patience`: its chunks and bytes and how it ended, or that it hung. */
function streamOutcome(api, file, highWaterMark) {
  return new Promise((resolve) => {
    let stream
    try {
      stream = api.createReadStream(file, { highWaterMark })
    } catch (e) {
      return resolve({ threw: e.code, message: e.message, name: e.name })
    }
    let chunks = 0
    let bytes = 0
    const timer = setTimeout(() => {
      stream.destroy()
      resolve({ hung: true, chunks, bytes })
    }, patience)
    stream.on('data', (c) => {
      chunks++
      bytes += c.length
    })
    stream.on('error', (e) => {
      clearTimeout(timer)
      resolve({ error: e.code, message: e.message, name: e.name, chunks, bytes })
    })
    stream.on('end', () => {
      clearTimeout(timer)
      resolve({ ended: true, chunks, bytes, highWaterMark: stream.readableHighWaterMark })
    })
  })
}

for (const hwm of [0, 0.5, 1.5, NaN, -1, Infinity, -Infinity, '16', 1, 7, 2 ** 31 - 1, null, undefined]) {
  test(`highWaterMark ${String(hwm)}: node:fs's result or error, without blocking the event loop`, async (t) => {
    // A byte per chunk is slow under qemu (arm64 CI): keep tiny chunks to a few hundred.
    const { path: file } = makeFile(typeof hwm === 'number' && hwm >= 1 && hwm < 100 ? 600 : 20_000)
    let ticks = 0
    const ticker = setInterval(() => ticks++, 10)
    const ours = await streamOutcome(fairfs, file, hwm)
    clearInterval(ticker)
    t.deepEqual(ours, await streamOutcome(fs, file, hwm))
    t.false(ours.hung === true)
    if (ours.ended && hwm === 0) t.is(ours.chunks, 0, 'node:fs asks for min(highWaterMark, what is left) bytes: none')
    t.true(ticks > 0 || !ours.ended || ours.chunks < 100, 'timers ran while it streamed')
  })
}

for (const hwm of [2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 5, 2 ** 53]) {
  test(`highWaterMark ${hwm}, past what one read can ask for: ERR_OUT_OF_RANGE, where node:fs hangs or reads a wrapped length`, async (t) => {
    const { path: file } = makeFile(20_000)
    const ours = await streamOutcome(fairfs, file, hwm)
    t.like(ours, { error: 'ERR_OUT_OF_RANGE', name: 'RangeError', chunks: 0, bytes: 0 })
    t.regex(ours.message, /^The value of "options.highWaterMark" is out of range\. It must be >= 0 && <= 2147483647\. Received [\d_]+$/)
  })
}

nativeOnly(test.serial)('workers that end mid-stream leave no stream flow, open fd or pooled block behind', async (t) => {
  const { path: file } = makeFile(8 * 1024 * 1024)
  const source = `
    const { parentPort, workerData } = require('node:worker_threads')
    const fairfs = require(${JSON.stringify(fileURLToPath(new URL('../index.js', import.meta.url)))})
    const stream = fairfs.createReadStream(workerData.file, { highWaterMark: 16 * 1024 })
    let n = 0
    stream.on('data', () => {
      if (++n !== 40) return
      stream.pause()
      parentPort.postMessage(fairfs.stats().streamFlows)
      if (workerData.exit) process.exit(0)
    })`
  const flowsBefore = fairfs.stats().streamFlows
  const seen = []
  for (let i = 0; i < 40; i++) {
    const worker = new Worker(source, { eval: true, workerData: { file, exit: i % 2 === 1 } })
    const exited = new Promise((resolve) => worker.once('exit', resolve))
    seen.push(await new Promise((resolve, reject) => worker.once('message', resolve).once('error', reject)))
    if (i % 2 === 0) await worker.terminate()
    await exited
  }
  t.true(seen.every((flows) => flows >= 1), 'each stream was a flow while it read')
  t.is(fairfs.stats().streamFlows, flowsBefore)
  // A torn-down environment's fds are closed by fairfs's closer thread, a moment later.
  for (let i = 0; i < 20 && fdsOpenOn(file) > 0; i++) await new Promise((resolve) => setTimeout(resolve, 50))
  t.is(fdsOpenOn(file), 0)
  for (let i = 0; i < 20 && fairfs.stats().pool.outstanding > 0; i++) await new Promise((resolve) => setTimeout(resolve, 50))
  t.is(fairfs.stats().pool.outstanding, 0)
  t.is(fairfs.stats().openFiles, 0)
})
