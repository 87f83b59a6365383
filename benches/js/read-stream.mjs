// read-stream-throughput: Node's benchmark/fs/read-stream-throughput.js. One big
// file streamed with several highWaterMarks, as Buffers or utf8 strings, with
// the GC time of each run taken from PerformanceObserver 'gc' entries (small
// chunks mean many short-lived buffers, and that churn is what this exposes).

import path from 'node:path'
import { PerformanceObserver } from 'node:perf_hooks'
import { setImmediate as tick } from 'node:timers/promises'
import {
  KiB, MiB, fs, fairfs, interleave, median, makeTmpDir, removeTmpDir, writeFilled,
  fmtSize, fmtNum, fmtRatio, NOT_IMPLEMENTED,
} from './common.mjs'

export const name = 'read-stream'
export const title = 'read-stream-throughput: createReadStream MiB/s and GC time (Node benchmark/fs/read-stream-throughput.js)'

/**
 * Streams `file` to the end or until `capMs` has passed, whichever comes first.
 * Resolves `{ mibPerSec, gcMs, runMs }`.
 */
async function streamOnce(createReadStream, file, size, highWaterMark, encoding, capMs) {
  const gcEntries = []
  const observer = new PerformanceObserver((list) => gcEntries.push(...list.getEntries()))
  observer.observe({ entryTypes: ['gc'] })
  const start = performance.now()
  const deadline = start + capMs
  let bytes = 0
  let stopped = false
  const stream = createReadStream(file, { highWaterMark, encoding })
  await new Promise((resolve, reject) => {
    stream.on('data', (chunk) => {
      // The file is all 'ü' (2 bytes in utf-8), so a string chunk is 2 bytes per char.
      bytes += encoding ? chunk.length * 2 : chunk.length
      if (performance.now() > deadline && !stopped) {
        stopped = true
        stream.destroy()
      }
    })
    stream.on('error', reject)
    stream.on('close', resolve)
  })
  const end = performance.now()
  if (stopped ? bytes > size : bytes !== size) throw new Error(`streamed ${bytes} bytes of ${size}`)
  // gc entries are delivered asynchronously; collect the stragglers before disconnecting.
  await tick()
  gcEntries.push(...observer.takeRecords())
  observer.disconnect()
  const gcMs = gcEntries.filter((e) => e.startTime >= start && e.startTime < end).reduce((sum, e) => sum + e.duration, 0)
  return { mibPerSec: bytes / MiB / ((end - start) / 1000), gcMs, gcMsPerGiB: bytes ? (gcMs * 1024 * MiB) / bytes : 0, runMs: end - start }
}

/**
 * The one-thread read() limit: `readSync` into one reused buffer of `chunk` bytes
 * (hot in the CPU's cache, as `dd bs=1M` reads), for the same time cap.
 */
function readLimitOnce(file, size, chunk, capMs) {
  const fd = fs.openSync(file, 'r')
  const buf = Buffer.allocUnsafeSlow(chunk)
  const start = performance.now()
  const deadline = start + capMs
  let pos = 0
  try {
    for (let n; pos < size && (n = fs.readSync(fd, buf, 0, chunk, pos)) > 0; ) {
      pos += n
      if (performance.now() > deadline) break
    }
  } finally {
    fs.closeSync(fd)
  }
  return { mibPerSec: pos / MiB / ((performance.now() - start) / 1000) }
}

export async function run({ quick, progress }) {
  const size = quick ? 128 * MiB : 1024 * MiB
  const capMs = quick ? 250 : 3000
  const rounds = quick ? 2 : 3
  const implementations = { node: fs.createReadStream }
  if (typeof fairfs.createReadStream === 'function') implementations.fairfs = fairfs.createReadStream
  const sides = Object.keys(implementations)
  const dir = makeTmpDir(name)
  const rows = []
  const limitRows = []
  const ratios = []
  const raw = []
  try {
    const file = path.join(dir, 'big.bin')
    progress(`writing ${fmtSize(size)} file`)
    writeFilled(file, size, 'ü')
    for (const highWaterMark of [KiB, 4 * KiB, 64 * KiB, MiB]) {
      for (const encoding of [null, 'utf8']) {
        const label = `hwm=${fmtSize(highWaterMark)} enc=${encoding ?? 'buffer'}`
        const samples = await interleave(
          sides, rounds,
          (side) => streamOnce(implementations[side], file, size, highWaterMark, encoding, capMs),
          (p) => progress(`${label} ${p}`),
        )
        const m = Object.fromEntries(sides.map((s) => [s, {
          mibPerSec: median(samples[s].map((x) => x.mibPerSec)),
          gcMs: median(samples[s].map((x) => x.gcMs)),
          gcShare: median(samples[s].map((x) => x.gcMs / x.runMs)),
        }]))
        const cells = (s) => (m[s]
          ? [fmtNum(m[s].mibPerSec), fmtNum(m[s].gcMs), `${(m[s].gcShare * 100).toFixed(1)}%`]
          : [NOT_IMPLEMENTED, '—', '—'])
        const ratio = m.fairfs ? m.fairfs.mibPerSec / m.node.mibPerSec : NaN
        const gcPerByte = (s) => median(samples[s].map((x) => x.gcMsPerGiB))
        // GC time per byte streamed, fairfs ÷ node (a side with no GC at all reads 0).
        const gcRatio = m.fairfs && gcPerByte('node') > 0 ? gcPerByte('fairfs') / gcPerByte('node') : NaN
        raw.push({ highWaterMark, encoding, samples })
        rows.push([fmtSize(highWaterMark), encoding ?? 'buffer', ...cells('node'), ...cells('fairfs'), fmtRatio(ratio), fmtRatio(gcRatio)])
        if (m.fairfs) {
          ratios.push({ label: `hwm=${fmtSize(highWaterMark)} ${encoding ?? 'buffer'}: fairfs ÷ node MiB/s`, value: ratio })
          if (!encoding) ratios.push({ label: `hwm=${fmtSize(highWaterMark)} buffer: fairfs ÷ node GC ms per byte`, value: gcRatio })
        }
      }
    }
    if (implementations.fairfs) {
      // A stream against the fastest one thread can read the file: 1 MiB reads into one
      // reused (cache-hot) buffer, interleaved with the two streams.
      const limitSides = ['read() limit', ...sides]
      const samples = await interleave(
        limitSides, rounds,
        (side) => side === 'read() limit'
          ? readLimitOnce(file, size, MiB, capMs)
          : streamOnce(implementations[side], file, size, MiB, null, capMs),
        (p) => progress(`read() limit ${p}`),
      )
      const mib = Object.fromEntries(limitSides.map((s) => [s, median(samples[s].map((x) => x.mibPerSec))]))
      const limit = mib['read() limit']
      limitRows.push(...limitSides.map((s) => [s, fmtNum(mib[s]), fmtRatio(mib[s] / limit)]))
      ratios.push({ label: 'hwm=1MiB buffer: fairfs stream ÷ one-thread read() limit', value: mib.fairfs / limit })
      raw.push({ readLimit: samples })
    }
  } finally {
    removeTmpDir(dir)
  }
  return {
    notes: [
      `File: ${fmtSize(size)} of 'ü' (0xC3 0xBC), in page cache. Each run streams until EOF or ${capMs} ms, whichever is first (a 1 KiB highWaterMark would need minutes for the whole file); MiB/s = bytes seen ÷ time from createReadStream to 'close'.`,
      `${rounds} interleaved rounds; GC = sum of PerformanceObserver 'gc' entry durations during the run.`,
      typeof fairfs.createReadStream === 'function' ? 'fairfs.createReadStream is measured.' : `fairfs.createReadStream: ${NOT_IMPLEMENTED}; node:fs rows only.`,
    ],
    tables: [{
      caption: 'MiB/s and GC (medians); ratio > 1 = fairfs faster',
      columns: ['highWaterMark', 'encoding', 'node MiB/s', 'node GC ms', 'node GC %', 'fairfs MiB/s', 'fairfs GC ms', 'fairfs GC %', 'fairfs ÷ node', 'GC per byte, fairfs ÷ node'],
      rows,
    }, {
      caption: '1 MiB highWaterMark against the one-thread read() limit (readSync of 1 MiB into one reused buffer), same rounds',
      columns: ['reader', 'MiB/s', '÷ read() limit'],
      rows: limitRows,
    }],
    ratios,
    raw,
  }
}
