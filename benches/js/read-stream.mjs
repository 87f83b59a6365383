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
  return { mibPerSec: bytes / MiB / ((end - start) / 1000), gcMs, runMs: end - start }
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
        raw.push({ highWaterMark, encoding, samples })
        rows.push([fmtSize(highWaterMark), encoding ?? 'buffer', ...cells('node'), ...cells('fairfs'), fmtRatio(ratio)])
        if (m.fairfs) ratios.push({ label: `hwm=${fmtSize(highWaterMark)} ${encoding ?? 'buffer'}: fairfs ÷ node MiB/s`, value: ratio })
      }
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
      columns: ['highWaterMark', 'encoding', 'node MiB/s', 'node GC ms', 'node GC %', 'fairfs MiB/s', 'fairfs GC ms', 'fairfs GC %', 'fairfs ÷ node'],
      rows,
    }],
    ratios,
    raw,
  }
}
