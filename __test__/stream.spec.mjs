// createReadStream, differential against fs.createReadStream: bytes, chunk sizes,
// ranges, encodings, fds, FIFOs, events and their order, errors, destroy and abort.
import test from 'ava'
import fs from 'node:fs'
import { execFileSync, spawn } from 'node:child_process'
import { setImmediate as nextLoopTurn } from 'node:timers/promises'
import { Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import net from 'node:net'
import { fairfs, isNative, nativeOnly, makeFile, tmpPath, describeError, fdsOpenOn, posixOnly, noFifo, windows } from './helpers.mjs'

const kEvents = ['open', 'ready', 'end', 'close', 'error', 'pause', 'resume']

/** Consumes a stream and records what a user can observe of it. */
function observe(stream, { maxChunks = Infinity } = {}) {
  return new Promise((resolve) => {
    const events = []
    const chunks = []
    for (const name of kEvents) {
      stream.on(name, (arg) => {
        events.push(name)
        if (name === 'error') stream.errorSeen = describeError(arg)
      })
    }
    stream.on('data', (chunk) => {
      if (events.at(-1) !== 'data') events.push('data')
      chunks.push(chunk)
      if (chunks.length >= maxChunks) stream.destroy()
    })
    // With emitClose false there is no 'close' to wait for: take the picture a while
    // after 'end', so that a 'close' that should not come would be seen.
    const done = () =>
      resolve({
        events,
        error: stream.errorSeen,
        data: chunks.length && typeof chunks[0] === 'string' ? chunks.join('') : Buffer.concat(chunks).toString('base64'),
        sizes: chunks.map((c) => c.length),
        bytesRead: stream.bytesRead,
        pending: stream.pending,
        destroyed: stream.destroyed,
      })
    if (stream._readableState?.emitClose === false) stream.on('end', () => setTimeout(done, 50))
    else stream.on('close', done)
  })
}

async function both(path, options, how) {
  const node = await observe(fs.createReadStream(path, options), how)
  const ours = await observe(fairfs.createReadStream(path, options), how)
  return { node, ours }
}

const { path: big, data: bigData } = makeFile(3 * 1024 * 1024 + 777)

const cases = [
  ['defaults', undefined],
  ['highWaterMark 1 KiB', { highWaterMark: 1024 }],
  ['highWaterMark 1000 (not a power of two)', { highWaterMark: 1000 }],
  ['highWaterMark 1 MiB', { highWaterMark: 1024 * 1024 }],
  ['start and end', { start: 100_000, end: 2_000_000 }],
  ['start only', { start: 3 * 1024 * 1024 }],
  ['end only', { end: 70_000 }],
  ['start 0 end 0', { start: 0, end: 0 }],
  ['start past the end of the file', { start: 10 * 1024 * 1024 }],
  ['encoding utf8', { encoding: 'utf8' }],
  ['encoding hex as a string option', 'hex'],
  ['encoding base64 with a small highWaterMark', { encoding: 'base64', highWaterMark: 1000 }],
  ['autoClose false', { autoClose: false }],
  ['emitClose false: no close event', { emitClose: false }],
]

for (const [what, options] of cases) {
  test(`stream ${what}: same bytes, chunks and events as node:fs`, async (t) => {
    const { node, ours } = await bothWithClose(big, options)
    t.deepEqual(ours, node)
  })
}

/** autoClose:false streams never close on their own; destroy them after 'end'. */
async function bothWithClose(path, options) {
  const run = async (create) => {
    const s = create(path, options)
    if (options?.autoClose === false) s.on('end', () => setImmediate(() => s.destroy()))
    return observe(s)
  }
  return { node: await run(fs.createReadStream), ours: await run(fairfs.createReadStream) }
}

test('utf8 characters split across chunk boundaries decode like node:fs', async (t) => {
  const path = tmpPath('utf8')
  fs.writeFileSync(path, 'ü€😀…'.repeat(5000))
  const { node, ours } = await both(path, { encoding: 'utf8', highWaterMark: 1001 })
  t.deepEqual(ours, node)
  t.is(ours.data, 'ü€😀…'.repeat(5000))
})

test('chunks are never larger than highWaterMark', async (t) => {
  for (const highWaterMark of [1, 7, 4096, 65_536, 100_000]) {
    const end = Math.min(highWaterMark * 1000, 500_000)
    const r = await observe(fairfs.createReadStream(big, { highWaterMark, end }))
    t.true(r.sizes.every((n) => n <= highWaterMark), `hwm ${highWaterMark}`)
    t.is(r.bytesRead, end + 1)
  }
})

/**
 * Every way of consuming a stream, each returning the chunks it saw. node:fs pushes one
 * chunk per read, asynchronously; a stream that pushed several at once would have them
 * joined by read() in the paused modes (larger chunks, and a copy).
 */
const consumers = {
  data: (s) => new Promise((resolve, reject) => {
    const chunks = []
    s.on('data', (c) => chunks.push(c)).on('end', () => resolve(chunks)).on('error', reject)
  }),
  readable: (s) => new Promise((resolve, reject) => {
    const chunks = []
    s.on('readable', () => {
      let c
      while ((c = s.read()) !== null) chunks.push(c)
    })
    s.on('end', () => resolve(chunks)).on('error', reject)
  }),
  'async iteration': async (s) => {
    const chunks = []
    for await (const c of s) chunks.push(c)
    return chunks
  },
  'toArray()': (s) => s.toArray(),
  pipeline: async (s) => {
    const { sink, chunks } = collector()
    await pipeline(s, sink)
    return chunks
  },
  'pipe()': (s) => new Promise((resolve, reject) => {
    const { sink, chunks } = collector()
    sink.on('finish', () => resolve(chunks))
    s.on('error', reject).pipe(sink)
  }),
}

/** A Writable that keeps every chunk it is given, as it was given. */
function collector() {
  const chunks = []
  const sink = new Writable({
    objectMode: true,
    write(c, _, cb) {
      chunks.push(c)
      cb()
    },
  })
  return { sink, chunks }
}

const consumedCases = [
  ['defaults', undefined],
  ['highWaterMark 1000 with start and end', { highWaterMark: 1000, start: 5, end: 200_000 }],
  ['encoding utf8 (highWaterMark counts characters)', { encoding: 'utf8' }],
  ['highWaterMark 1 MiB', { highWaterMark: 1024 * 1024 }],
]

for (const [mode, consume] of Object.entries(consumers)) {
  for (const [what, options] of consumedCases) {
    test(`consumed by ${mode}, ${what}: the same chunk sizes and content as node:fs`, async (t) => {
      const picture = (chunks) => ({
        sizes: chunks.map((c) => c.length),
        data: typeof chunks[0] === 'string' ? chunks.join('') : Buffer.concat(chunks).toString('base64'),
      })
      const node = picture(await consume(fs.createReadStream(big, options)))
      const ours = picture(await consume(fairfs.createReadStream(big, options)))
      t.true(node.sizes.length > 1)
      t.deepEqual(ours, node)
    })
  }
}

test('an fd option reads from its position and leaves the fd per autoClose', async (t) => {
  const fd = fs.openSync(big, 'r')
  fs.readSync(fd, Buffer.alloc(1000), 0, 1000, null)
  const r = await observe(fairfs.createReadStream(null, { fd, autoClose: false, end: 49_999 }).on('end', function () {
    setImmediate(() => this.destroy())
  }))
  t.is(r.data, bigData.subarray(1000, 51_000).toString('base64'))
  t.false(r.events.includes('open'), "no 'open' for a given fd")
  // destroy() closed it as node:fs does; a second fd stays open with autoClose false + no destroy
  const fd2 = fs.openSync(big, 'r')
  const s = fairfs.createReadStream(null, { fd: fd2, autoClose: false, start: 5, end: 9 })
  const chunks = []
  await new Promise((resolve) => s.on('data', (c) => chunks.push(c)).on('end', resolve))
  t.deepEqual(Buffer.concat(chunks), bigData.subarray(5, 10))
  t.is(fs.fstatSync(fd2).size, bigData.length, 'still open')
  fs.closeSync(fd2)
})

test('a FileHandle as fd is read and closed through the handle', async (t) => {
  const handle = await fs.promises.open(big, 'r')
  const r = await observe(fairfs.createReadStream(null, { fd: handle, start: 10, end: 100_009 }))
  t.is(r.data, bigData.subarray(10, 100_010).toString('base64'))
  t.is(handle.fd, -1, 'closed with the stream')
})

posixOnly(noFifo, test)('a FIFO streams to EOF, reading at the current position', async (t) => {
  const fifo = tmpPath('fifo')
  execFileSync('mkfifo', [fifo])
  const { path: source, data } = makeFile(200_000)
  const writer = spawn('sh', ['-c', `cat "${source}" > "${fifo}"`])
  const writerDone = new Promise((resolve) => writer.on('exit', resolve))
  const r = await observe(fairfs.createReadStream(fifo, { highWaterMark: 16 * 1024 }))
  t.is(r.data, data.toString('base64'))
  t.true(r.sizes.every((n) => n <= 16 * 1024))
  await writerDone
})

posixOnly(noFifo, test)('a FIFO with end:1 reads two bytes (no positioned reads)', async (t) => {
  const fifo = tmpPath('fifo-end')
  execFileSync('mkfifo', [fifo])
  const writer = spawn('sh', ['-c', `printf 'xyz' > "${fifo}"`])
  const writerDone = new Promise((resolve) => writer.on('exit', resolve))
  const r = await observe(fairfs.createReadStream(fifo, { end: 1, encoding: 'latin1' }))
  t.is(r.data, 'xy')
  await writerDone
})

// Windows' counterpart of the FIFO tests: a named pipe has no positions, so positional
// reads (read-ahead on several workers) would take its bytes out of order; it must be
// read at its current position to its end, where its writer closes it.
const windowsOnly = windows ? test : (title, fn) => test.skip(`${title} [Windows only: the FIFO tests above are unix's]`, fn)
windowsOnly('a named pipe streams to EOF in order, with node:fs\'s bytes', async (t) => {
  const { data } = makeFile(3 * 1024 * 1024 + 5)
  const name = `\\\\.\\pipe\\fairfs-stream-${process.pid}`
  const server = net.createServer((socket) => {
    socket.on('error', () => {})
    // In pieces, so the reader sees the pipe empty now and then.
    let at = 0
    const next = () => {
      if (at >= data.length) return socket.end()
      socket.write(data.subarray(at, (at += 100_000)), next)
    }
    next()
  })
  await new Promise((resolve) => server.listen(name, resolve))
  t.teardown(() => server.close())
  for (const options of [undefined, { highWaterMark: 16 * 1024 }]) {
    const { node, ours } = await both(name, options)
    t.is(node.data, data.toString('base64'), 'node:fs reads it whole')
    t.deepEqual(ours.events, node.events)
    t.is(ours.data, node.data)
  }
})

for (const [what, target] of [['ENOENT', () => tmpPath('missing')], ['EISDIR', () => fs.mkdtempSync(tmpPath('dir'))]]) {
  test(`${what}: same error event and event order as node:fs`, async (t) => {
    const path = target()
    const { node, ours } = await both(path)
    t.deepEqual(ours, node)
    t.is(ours.error.code, what)
  })
}

test('destroy() mid-read stops the stream and closes the fd', async (t) => {
  const { path } = makeFile(1024 * 1024)
  const { node, ours } = await both(path, { highWaterMark: 1024 }, { maxChunks: 3 })
  t.deepEqual(ours.events, node.events)
  t.is(ours.sizes.length, 3)
  t.true(ours.destroyed)
  t.is(fdsOpenOn(path), 0, "closed by the time 'close' is emitted")
})

for (const [what, existing] of [['a file', true], ['a missing file', false]]) {
  test(`destroy() before the open: ${what} is still opened (or fails), then closed, as node:fs (Node's test-fs-stream-double-close)`, async (t) => {
    const path = existing ? makeFile(100).path : tmpPath('never-made')
    const events = async (create) => {
      const s = create(path)
      const seen = []
      for (const name of ['open', 'ready', 'close']) s.on(name, () => seen.push(name))
      s.on('error', (e) => seen.push(`error ${e.code}`))
      s.destroy()
      await new Promise((resolve) => s.on('close', resolve))
      return { seen, fd: s.fd, destroyed: s.destroyed }
    }
    const ours = await events(fairfs.createReadStream)
    t.deepEqual(ours, await events(fs.createReadStream))
    t.deepEqual(ours.seen, existing ? ['open', 'ready', 'close'] : ['error ENOENT', 'close'])
    if (existing) t.is(fdsOpenOn(path), 0)
  })
}

nativeOnly(test)('a signal aborted before the start: AbortError and close, and no file is opened', async (t) => {
  const { path } = makeFile(100)
  const s = fairfs.createReadStream(path, { signal: AbortSignal.abort() })
  const seen = []
  for (const name of ['open', 'ready', 'close']) s.on(name, () => seen.push(name))
  s.on('error', (e) => seen.push(e.name))
  await new Promise((resolve) => s.on('close', resolve))
  await nextLoopTurn()
  // node:fs emits the same two, then opens the file anyway and keeps it open.
  t.deepEqual(seen, ['AbortError', 'close'])
  t.is(fdsOpenOn(path), 0)
})

test('abort via signal gives an AbortError and closes the fd', async (t) => {
  const { path } = makeFile(1024 * 1024)
  const controller = new AbortController()
  const s = fairfs.createReadStream(path, { signal: controller.signal, highWaterMark: 1024 })
  s.once('data', () => controller.abort())
  const r = await observe(s)
  t.is(r.error.name, 'AbortError')
  t.is(r.error.code, 'ABORT_ERR')
  t.is(fdsOpenOn(path), 0)
})

nativeOnly(test.serial)('a paused stream stops reading ahead', async (t) => {
  const s = fairfs.createReadStream(big, { highWaterMark: 16 * 1024, readAhead: 4 })
  let received = 0
  s.on('data', (chunk) => {
    received += chunk.length
    s.pause()
  })
  // Let it pause, and the reads already in flight by then finish.
  do await nextLoopTurn()
  while (received === 0 || fairfs.stats().active + fairfs.stats().queued > 0)
  for (let i = 0; i < 5; i++) await nextLoopTurn()
  // Buffered: at most the read-ahead in flight when it paused, 4 blocks of 16 chunks.
  t.true(s.readableLength <= 4 * 16 * 16 * 1024, `buffered ${s.readableLength}`)
  const before = fairfs.stats().chunksRead
  for (let i = 0; i < 20; i++) await nextLoopTurn()
  t.is(fairfs.stats().chunksRead, before, 'no reads while nobody consumes')
  t.true(received + s.readableLength < bigData.length, 'it stopped short of the whole file')
  s.destroy()
})

test('invalid options throw node:fs errors', (t) => {
  for (const options of [{ start: -1 }, { start: 'x' }, { start: 'x'.repeat(40) }, { end: () => {} }, { start: 5, end: 2 }, { end: 1.5 }, { fd: 'x' }, { encoding: 'nope' }, { highWaterMark: -1 }]) {
    const node = t.throws(() => fs.createReadStream(big, options))
    const ours = t.throws(() => fairfs.createReadStream(big, options))
    t.is(ours.code, node.code, JSON.stringify(options))
    t.is(ours.message, node.message, JSON.stringify(options))
  }
  // readAhead is the native backend's option; node:fs's streams ignore it.
  if (isNative) t.throws(() => fairfs.createReadStream(big, { readAhead: 0 }), { code: 'ERR_OUT_OF_RANGE' })
})

test('pending is true until the file is open; path is kept', async (t) => {
  const s = fairfs.createReadStream(big)
  t.true(s.pending)
  t.is(s.path, big)
  await new Promise((resolve) => s.once('ready', resolve))
  t.false(s.pending)
  t.is(typeof s.fd, 'number')
  s.destroy()
})

posixOnly(noFifo, test.serial)('a FileHandle stream holds the handle: close() waits for the read in flight, as for node\'s own reads', async (t) => {
  t.timeout(30_000, 'the stream hung')
  const fifo = tmpPath('handle-fifo')
  execFileSync('mkfifo', [fifo])
  // A writer that opens at once and writes after a while: the stream's first read
  // waits for it (on a thread of its own with fairfs).
  const writer = spawn('sh', ['-c', 'exec 3>"$1"; sleep 4; printf data >&3', 'sh', fifo])
  const writerExited = new Promise((resolve) => writer.on('exit', resolve))
  const handle = await fs.promises.open(fifo, 'r')
  const stream = fairfs.createReadStream(null, { fd: handle })
  const chunks = []
  stream.on('data', (c) => chunks.push(c))
  stream.on('error', () => {})
  const streamClosed = new Promise((resolve) => stream.on('close', resolve))
  // Until the stream's first read is in flight, waiting for the writer (node:fs's
  // own stream on the node backend: a while).
  if (isNative) {
    for (let i = 0; i < 200 && fairfs.stats().active === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10))
    t.true(fairfs.stats().active > 0, 'a read of the handle is in flight')
  } else {
    await new Promise((resolve) => setTimeout(resolve, 500))
  }
  // close() destroys the stream (the handle's 'close' event). node:fs's read goes on
  // until the writer writes, fairfs's ends within its cancel check; either way the
  // fd closes only after the read has ended, so it cannot be reused under it.
  await handle.close()
  if (isNative) t.is(fairfs.stats().active, 0, 'no read of the fd is in flight once it is closed')
  t.is(handle.fd, -1)
  await streamClosed
  await writerExited
  t.true(Buffer.concat(chunks).toString() === 'data' || chunks.length === 0, 'nothing but the FIFO\'s bytes')
})

nativeOnly(test.serial)('a stream\'s blocks are one flow in the pool, forgotten when it ends, fails or is destroyed', async (t) => {
  const { path, data } = makeFile(3 * 1024 * 1024 + 5)
  const whole = async () => Buffer.concat(await fairfs.createReadStream(path).toArray())
  const destroyedEarly = () => new Promise((resolve) => {
    const s = fairfs.createReadStream(path)
    s.once('data', () => s.destroy())
    s.on('close', resolve)
  })
  const failing = () => new Promise((resolve) => fairfs.createReadStream(path + '.missing').on('error', resolve))
  const results = await Promise.all([whole(), whole(), destroyedEarly(), destroyedEarly(), failing()])
  t.true(results[0].equals(data) && results[1].equals(data))
  t.is(results[4].code, 'ENOENT')
  for (let i = 0; i < 100 && fairfs.stats().streamFlows > 0; i++) await new Promise((resolve) => setTimeout(resolve, 10))
  t.is(fairfs.stats().streamFlows, 0)
})

/**
 * Samples `count()` in every check phase (one per event-loop iteration) until
 * stopped; `increases` holds how much it grew between samples.
 */
function sampleEachTurn(count) {
  const increases = []
  let last = count()
  let stopped = false
  const sample = () => {
    const now = count()
    increases.push(now - last)
    last = now
    if (!stopped) setImmediate(sample)
  }
  setImmediate(sample)
  return { increases, stop: () => { stopped = true } }
}

nativeOnly(test.serial)('streams share a byte budget per event-loop turn, so big streams cannot hold the loop', async (t) => {
  const files = Array.from({ length: 3 }, () => makeFile(8 * 1024 * 1024))
  let bytes = 0
  const { increases: perTurn, stop } = sampleEachTurn(() => bytes)
  await Promise.all(files.map(({ path, data }) => new Promise((resolve, reject) => {
    const chunks = []
    fairfs.createReadStream(path).on('data', (c) => { bytes += c.length; chunks.push(c) }).on('error', reject)
      .on('end', () => resolve(t.true(Buffer.concat(chunks).equals(data))))
  })))
  stop()
  // 256 KiB a turn for all, plus each stream's first 64 KiB chunk; a loop iteration
  // may hold two turns (poll, then check). Without the budget a turn pushed whole 1 MiB
  // blocks of each stream.
  const most = Math.max(...perTurn)
  t.true(most <= 2 * (256 * 1024 + 3 * 64 * 1024), `at most ${most} bytes in one turn`)
  t.true(perTurn.length > (3 * 8 * 1024 * 1024) / (2 * (256 * 1024 + 3 * 64 * 1024)) / 2, 'the reads took many turns')
})

/**
 * Streams `files` at once with 16 KiB chunks (as @fastify/static asks), each to its
 * end. Each pauses once past its first MiB until all are, so that they go on together
 * however the pool ordered their first blocks. Counts, per check-phase sample, the
 * chunks of streams past their first MiB pushed while at least `together` streams
 * were past theirs and not yet through.
 */
async function longChunksPerSample(t, files, together) {
  let counted = 0
  let long = 0
  const { increases: perSample, stop } = sampleEachTurn(() => counted)
  const streams = files.map(({ path }) => fairfs.createReadStream(path, { highWaterMark: 16 * 1024 }))
  await Promise.all(streams.map((stream, i) => new Promise((resolve, reject) => {
    const { data } = files[i]
    let seen = 0
    stream.on('error', reject).on('data', (c) => {
      t.true(c.equals(data.subarray(seen, seen + c.length)))
      if (seen >= 1024 * 1024 && long >= together) counted++
      if (seen < 1024 * 1024 && seen + c.length >= 1024 * 1024) {
        long++
        if (long < files.length) stream.pause()
        else for (const s of streams) s.resume()
      }
      seen += c.length
      // Through: fairfs forgets it as long once it has read to the end, after this.
      if (seen === data.length) long--
    }).on('end', () => resolve(t.is(seen, data.length)))
  })))
  stop()
  return perSample
}

nativeOnly(test.serial)('long streams reading at once share four chunks a turn; a lone one is not held', async (t) => {
  const files = Array.from({ length: 3 }, () => makeFile(8 * 1024 * 1024))
  // By bytes alone they could push 16 chunks a turn between them. Held to four (a loop
  // iteration may hold two turns, poll then check):
  const shared = await longChunksPerSample(t, files, 2)
  t.true(shared.some((n) => n > 0), 'chunks were counted')
  t.true(Math.max(...shared) <= 2 * 4, `at most ${Math.max(...shared)} chunks in one sample`)
  // Alone, a long stream is held only by the byte budget.
  const alone = await longChunksPerSample(t, files.slice(0, 1), 1)
  t.true(Math.max(...alone) > 2 * 4, `a lone stream pushed at most ${Math.max(...alone)} chunks in one sample`)
})

test.serial('a patched ReadStream.prototype.open is called and its fd read, as node:fs does (DEP0135)', async (t) => {
  const { path, data } = makeFile(300_000)
  const original = fs.ReadStream.prototype.open
  const opened = []
  fs.ReadStream.prototype.open = function () {
    fs.open(this.path, 'r', (err, fd) => {
      if (err) return this.emit('error', err)
      opened.push(fd)
      this.fd = fd
      this.emit('open', fd)
    })
  }
  try {
    const read = async (create, file) => {
      const s = create(file)
      const events = []
      s.on('open', () => events.push('open'))
      try {
        const chunks = await s.toArray()
        return { events, data: Buffer.concat(chunks).toString('base64') }
      } catch (err) {
        return { events, error: describeError(err) }
      }
    }
    const node = await read(fs.createReadStream, path)
    const ours = await read(fairfs.createReadStream, path)
    t.deepEqual(ours, node)
    t.is(ours.data, data.toString('base64'))
    t.is(opened.length, 2)
    // An 'error' from the patched open fails the stream with it.
    t.deepEqual(await read(fairfs.createReadStream, `${path}-missing`), await read(fs.createReadStream, `${path}-missing`))
  } finally {
    fs.ReadStream.prototype.open = original
  }
})

test('options.fs: its open, read and close are called, as node:fs does', async (t) => {
  const { path, data } = makeFile(200_000)
  const calls = new Set()
  const custom = {}
  for (const name of ['open', 'read', 'close']) {
    custom[name] = (...args) => {
      calls.add(name)
      return fs[name](...args)
    }
  }
  const chunks = await fairfs.createReadStream(path, { fs: custom }).toArray()
  t.deepEqual(Buffer.concat(chunks), data)
  t.deepEqual([...calls].sort(), ['close', 'open', 'read'])
  // node:fs's checks of the custom fs apply too.
  const err = (create) => describeError(t.throws(() => create(path, { fs: { open: custom.open, read: 1, close: custom.close } })))
  t.deepEqual(err(fairfs.createReadStream), err(fs.createReadStream))
})

test('inherited options count, as node:fs copies them with a for-in loop', async (t) => {
  const options = { __proto__: { start: 1000, end: 70_000, highWaterMark: 1000 } }
  const { node, ours } = await both(big, options)
  t.deepEqual(ours, node)
  t.is(ours.bytesRead, 69_001)
})

for (const [what, make] of [
  ['a path', () => [big, {}]],
  ['a FileHandle', async () => [null, { fd: await fs.promises.open(big) }]],
]) {
  test(`a signal aborted already, on a stream of ${what}: AbortError, and nothing is read`, async (t) => {
    const run = async (create) => {
      const [path, options] = await make()
      const s = create(path, { ...options, signal: AbortSignal.abort() })
      const r = await observe(s)
      return { ...r, closed: options.fd ? options.fd.fd === -1 : undefined }
    }
    const node = await run(fs.createReadStream)
    const ours = await run(fairfs.createReadStream)
    t.deepEqual(ours, node)
    t.is(ours.error.name, 'AbortError')
    t.is(ours.sizes.length, 0)
  })
}

/** Replaces fs[name] for the length of `fn`, counting calls; the replacement calls node's. */
async function withReplaced(names, fn, wrap = (original) => original) {
  const saved = {}
  const calls = Object.fromEntries(names.map((n) => [n, 0]))
  for (const name of names) {
    saved[name] = fs[name]
    const original = wrap(saved[name], name)
    fs[name] = function (...args) {
      calls[name]++
      return original.apply(this, args)
    }
  }
  try {
    return await fn(calls)
  } finally {
    Object.assign(fs, saved)
  }
}

test.serial('fs.open, fs.read and fs.close replaced by a caller are called, as node:fs\'s stream calls them', async (t) => {
  const { path } = makeFile(200_000)
  const seen = {}
  for (const [side, create] of [['node', fs.createReadStream], ['ours', fairfs.createReadStream]]) {
    seen[side] = await withReplaced(['open', 'read', 'close'], async (calls) => {
      const r = await observe(create(path, { highWaterMark: 50_000 }))
      return { ...r, calls: { ...calls } }
    })
  }
  t.deepEqual(seen.ours, seen.node)
  t.true(seen.ours.calls.read >= 4)
})

test.serial('a replaced fs.read that fails: the error reaches the stream, and the replaced close gets the fd', async (t) => {
  const { path } = makeFile(100_000)
  const boom = new Error('BAM')
  const seen = {}
  for (const [side, create] of [['node', fs.createReadStream], ['ours', fairfs.createReadStream]]) {
    let n = 0
    const failSecond = (original, name) =>
      name === 'read'
        ? (...args) => (++n === 2 ? process.nextTick(args.at(-1), boom) : original(...args))
        : original
    seen[side] = await withReplaced(['read', 'close'], async (calls) => {
      const s = create(path, { highWaterMark: 10_000 })
      const r = await observe(s)
      return { ...r, sameError: s.errored === boom, calls: { ...calls } }
    }, failSecond)
  }
  t.deepEqual(seen.ours, seen.node)
  t.true(seen.ours.sameError)
  t.is(seen.ours.calls.close, 1)
})

test('a FileHandle whose read() was replaced: the stream reads through it', async (t) => {
  const { path, data } = makeFile(300_000)
  const handle = await fs.promises.open(path)
  let calls = 0
  const original = handle.read
  handle.read = function (...args) {
    calls++
    return original.apply(this, args)
  }
  const chunks = await fairfs.createReadStream(null, { fd: handle }).toArray()
  t.deepEqual(Buffer.concat(chunks), data)
  t.is(calls, Math.ceil(data.length / 65_536) + 1)
})
