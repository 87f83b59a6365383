// Sources that are not regular files. FIFOs, writer first or reader first, through
// every API, with the fast path on and off: the result is node:fs's, the writer is
// never killed, nothing hangs, and FIFOs waiting for writers stall no other read.
import test from 'ava'
import fs from 'node:fs'
import { spawn, execFileSync } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import { fairfs, isNative, portable, makeFile, tmpPath, posixOnly, noFifo } from './helpers.mjs'

// Every case here needs FIFOs (mkfifo), which Windows does not have.
const fifoTest = posixOnly(noFifo, test)
const fifoSerial = posixOnly(noFifo, test.serial)

/** A shell that writes `text` into `fifo`; resolves with how it ended. */
function writer(fifo, text) {
  const sh = spawn('sh', ['-c', `printf '%s' "$1" > "$2"`, 'sh', text, fifo])
  return new Promise((resolve) => sh.on('exit', (code, signal) => resolve({ code, signal })))
}

/** Starts a writer of `text`, lets it wait in open() for a reader, then reads with `read`. */
async function writerFirst(fifo, text, read) {
  const wrote = writer(fifo, text)
  await sleep(100) // the writer waits in open() for a reader
  const got = await read(fifo)
  return { got, wrote: await wrote }
}

const apis = {
  readFile: (p) => new Promise((resolve, reject) => fairfs.readFile(p, 'utf8', (e, d) => (e ? reject(e) : resolve(d)))),
  'promises.readFile': (p) => fairfs.promises.readFile(p, 'utf8'),
  readFiles: async (p) => (await fairfs.readFiles([p], 'utf8'))[0],
  createReadStream: async (p) => {
    let text = ''
    for await (const chunk of fairfs.createReadStream(p, 'utf8')) text += chunk
    return text
  },
}

for (const fastPath of [true, false]) {
  for (const [api, read] of Object.entries(apis)) {
    for (const order of ['writer first', 'reader first']) {
      fifoSerial(`FIFO, ${order}, ${api}, fast path ${fastPath ? 'on' : 'off'}`, async (t) => {
        t.timeout(20_000, 'a FIFO read hung')
        fairfs.configure({ fastPath })
        t.teardown(() => fairfs.configure({ fastPath: true }))
        const fifo = tmpPath('fifo')
        execFileSync('mkfifo', [fifo])
        let outcome
        if (order === 'writer first') {
          outcome = await writerFirst(fifo, 'hello', read)
        } else {
          const reading = read(fifo)
          await sleep(100) // the reader waits for a writer
          const wrote = writer(fifo, 'hello')
          outcome = { got: await reading, wrote: await wrote }
        }
        t.is(outcome.got, 'hello')
        t.deepEqual(outcome.wrote, { code: 0, signal: null }, 'the writer finished, not killed by SIGPIPE')
        fs.rmSync(fifo)
      })
    }
  }
}

fifoSerial('node:fs gives the same for a FIFO, writer first', async (t) => {
  const fifo = tmpPath('fifo-node')
  execFileSync('mkfifo', [fifo])
  const { got, wrote } = await writerFirst(fifo, 'hello', (p) => fs.promises.readFile(p, 'utf8'))
  t.is(got, 'hello')
  t.deepEqual(wrote, { code: 0, signal: null })
})

if (isNative) {
  fifoSerial('a FIFO whose writer writes nothing reads as empty', async (t) => {
    t.timeout(20_000, 'a FIFO read hung')
    const fifo = tmpPath('fifo-empty')
    execFileSync('mkfifo', [fifo])
    const { got, wrote } = await writerFirst(fifo, '', (p) => fairfs.promises.readFile(p, 'utf8'))
    t.is(got, '')
    t.deepEqual(wrote, { code: 0, signal: null })
  })
}

// The portable build (std::fs, what Windows gets; run on Linux with --cfg
// fairfs_portable) cannot open without waiting, so its FIFO reads wait in open() on
// pool threads: the case is reported as skipped there, not passed.
const wedge = 'FIFOs waiting for writers, more than the pool has threads, stall no regular read; an abort ends one at once'
if (isNative && portable) test.skip(`${wedge} [portable build: FIFOs open blocking]`, () => {})
if (isNative && !portable) {
  fifoSerial(wedge, async (t) => {
    t.timeout(30_000, 'a read hung')
    for (const fastPath of [true, false]) {
      fairfs.configure({ fastPath })
      const fifos = Array.from({ length: 8 }, (_, i) => {
        const fifo = tmpPath(`wedge-${fastPath}-${i}`)
        execFileSync('mkfifo', [fifo])
        return fifo
      })
      const controllers = fifos.map(() => new AbortController())
      const waiting = fifos.map((f, i) => fairfs.promises.readFile(f, { encoding: 'utf8', signal: controllers[i].signal }))
      // Each FIFO read opens, then moves to a thread of its own (slowly under qemu).
      for (let i = 0; i < 250 && fairfs.stats().ownThreads < 8; i++) await sleep(20)
      t.is(fairfs.stats().ownThreads, 8, 'each FIFO read waits on a thread of its own')
      const big = makeFile(16 * 1024 * 1024)
      const got = await Promise.race([fairfs.promises.readFile(big.path), sleep(10_000).then(() => 'stalled')])
      t.true(Buffer.isBuffer(got) && got.equals(big.data), 'a 16 MiB file read while eight FIFOs wait')
      // Abort half while they wait for a writer; give the other half one.
      for (const c of controllers.slice(0, 4)) c.abort()
      const aborted = await Promise.allSettled(waiting.slice(0, 4))
      t.true(aborted.every((o) => o.status === 'rejected' && o.reason.name === 'AbortError'))
      const wrote = fifos.slice(4).map((f) => writer(f, 'late'))
      t.deepEqual(await Promise.all(waiting.slice(4)), Array(4).fill('late'))
      await Promise.all(wrote)
      for (let i = 0; i < 500 && fairfs.stats().ownThreads > 0; i++) await sleep(20)
      t.is(fairfs.stats().ownThreads, 0, 'their threads ended')
    }
    fairfs.configure({ fastPath: true })
  })
}

const streamWedge = 'streams of FIFOs waiting for writers, more than the pool has threads, stall no regular read; destroy() ends one at once'
if (isNative && portable) test.skip(`${streamWedge} [portable build: FIFOs open blocking]`, () => {})
if (isNative && !portable) {
  fifoSerial(streamWedge, async (t) => {
    t.timeout(30_000, 'a read hung')
    const fifos = Array.from({ length: 8 }, (_, i) => {
      const fifo = tmpPath(`stream-wedge-${i}`)
      execFileSync('mkfifo', [fifo])
      return fifo
    })
    const streams = fifos.map((f) => fairfs.createReadStream(f, 'utf8'))
    const texts = streams.map(async (s) => {
      let text = ''
      for await (const chunk of s) text += chunk
      return text
    })
    // Each stream's open waits for its writer on a thread of its own.
    for (let i = 0; i < 250 && fairfs.stats().ownThreads < 8; i++) await sleep(20)
    t.is(fairfs.stats().ownThreads, 8, 'each FIFO stream waits on a thread of its own')
    const big = makeFile(16 * 1024 * 1024)
    const got = await Promise.race([fairfs.promises.readFile(big.path), sleep(10_000).then(() => 'stalled')])
    t.true(Buffer.isBuffer(got) && got.equals(big.data), 'a 16 MiB file read while eight FIFO streams wait')
    // Destroy half while they wait for a writer: they close within the cancel check.
    const started = Date.now()
    for (const s of streams.slice(0, 4)) s.destroy()
    const destroyed = await Promise.allSettled(texts.slice(0, 4))
    t.true(destroyed.every((o) => o.status === 'rejected' && o.reason.code === 'ERR_STREAM_PREMATURE_CLOSE'))
    await Promise.all(streams.slice(0, 4).map((s) => (s.closed ? null : new Promise((resolve) => s.on('close', resolve)))))
    t.true(Date.now() - started < 5_000, 'destroy() did not wait for a writer')
    // The other half get writers: their data is read on threads of their own too.
    const wrote = fifos.slice(4).map((f) => writer(f, 'late'))
    t.deepEqual(await Promise.all(texts.slice(4)), Array(4).fill('late'))
    t.deepEqual(await Promise.all(wrote), Array(4).fill({ code: 0, signal: null }))
    for (let i = 0; i < 500 && fairfs.stats().ownThreads > 0; i++) await sleep(20)
    t.is(fairfs.stats().ownThreads, 0, 'their threads ended')
    t.is(fairfs.stats().streamFlows, 0, 'every stream\'s flow is forgotten')
  })
}

fifoTest('a FIFO with a writer is read to EOF', async (t) => {
  const fifo = tmpPath('fifo')
  execFileSync('mkfifo', [fifo])
  const { path: source, data } = makeFile(300_000)
  // The read blocks in open() until the writer opens the FIFO: on a pool thread,
  // never on the event loop.
  const read = fairfs.readFile(fifo)
  const writer = spawn('sh', ['-c', `sleep 0.1; cat "${source}" > "${fifo}"`])
  const [got] = await Promise.all([read, new Promise((resolve) => writer.on('exit', resolve))])
  t.true(got.equals(data))
})
