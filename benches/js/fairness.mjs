// fairness: latency of small reads issued one after another, idle and while ten
// big reads loop through the same library. With FIFO scheduling a small read
// queues behind the big reads' chunks; a fair scheduler should keep it short.

import path from 'node:path'
import {
  fairfs, fs, KiB, MiB, readers, checkLength, interleave, loops, msSince, percentile, median, sleep,
  makeTmpDir, removeTmpDir, writeFilled, fmtSize, fmtNum, fmtRatio,
} from './common.mjs'

export const name = 'fairness'
export const title = 'fairness: 1 KiB readFile latency, idle and next to ten looping big reads'

const SIDES = ['fairfs-cb', 'node-cb', 'node-promises']
const BIG_LOOPS = 10

/** Issues small reads back to back for `probeMs`; resolves their latencies in ms. */
function probe(issueSmall, probeMs) {
  const latencies = []
  const end = performance.now() + probeMs
  return new Promise((resolve, reject) => {
    const next = () => {
      const t0 = process.hrtime.bigint()
      issueSmall((err) => {
        if (err) return reject(err)
        latencies.push(msSince(t0))
        if (performance.now() < end) next()
        else resolve(latencies)
      })
    }
    next()
  })
}

const STREAM_READERS = 4
// Small enough that all four readFiles fit under admission's default 64 MiB of bytes
// in flight at once, so that every reader is in the rotation all the time.
const STREAM_READ_SIZE = 8 * MiB
const streamers = {
  'fairfs-cb': (file, options) => fairfs.createReadStream(file, options),
  'node-cb': (file, options) => fs.createReadStream(file, options),
}

/**
 * One stream reads `file` over and over next to STREAM_READERS loops of readFile of
 * `big`, for `ms`. Resolves the stream's MiB/s and each readFile loop's MiB/s: with
 * one flow per reader, a fair scheduler gives the stream one loop's share.
 */
async function streamBeside(side, file, big, bigSize, ms) {
  let on = true
  const load = loops(STREAM_READERS, readers[side](big, null, (d) => checkLength(d, bigSize)), () => on)
  const t0 = process.hrtime.bigint()
  let streamed = 0
  while (on) {
    await new Promise((resolve, reject) => {
      const s = streamers[side](file)
      s.on('data', (c) => {
        streamed += c.length
        if (msSince(t0) >= ms) {
          on = false
          s.destroy()
          resolve()
        }
      })
      s.on('error', reject)
      s.on('end', resolve)
    })
  }
  const streamSeconds = msSince(t0) / 1000
  const { ops, seconds } = await load
  return { streamMiBPerSec: streamed / MiB / streamSeconds, readerMiBPerSec: (ops * bigSize) / MiB / seconds / STREAM_READERS }
}

const summarize = (xs) => ({ n: xs.length, p50: percentile(xs, 50), p90: percentile(xs, 90), p99: percentile(xs, 99), max: percentile(xs, 100) })

export async function run({ quick, progress }) {
  const bigSize = quick ? 32 * MiB : 256 * MiB
  const probeMs = quick ? 300 : 1500
  const rounds = quick ? 2 : 5
  const dir = makeTmpDir(name)
  const small = path.join(dir, 'small.bin')
  const big = path.join(dir, 'big.bin')
  const latencies = {}
  let loadMiBPerSec
  let shares
  try {
    writeFilled(small, KiB, 's')
    progress(`writing ${fmtSize(bigSize)} file`)
    writeFilled(big, bigSize, 'b')
    for (const loaded of [false, true]) {
      const condition = loaded ? 'loaded' : 'idle'
      const samples = await interleave(SIDES, rounds, async (side) => {
        const issueSmall = readers[side](small, null, (d) => checkLength(d, KiB))
        if (!loaded) return { latencies: await probe(issueSmall, probeMs) }
        let on = true
        const load = loops(BIG_LOOPS, readers[side](big, null, (d) => checkLength(d, bigSize)), () => on)
        await sleep(20) // let every big read get past open/fstat into its chunks
        const lat = await probe(issueSmall, probeMs)
        on = false
        const { ops, seconds } = await load
        return { latencies: lat, loadMiBPerSec: (ops * bigSize) / MiB / seconds }
      }, (p) => progress(`${condition} ${p}`))
      // Percentiles over all samples pooled from the interleaved rounds: one round has too few for a p99.
      latencies[condition] = Object.fromEntries(SIDES.map((s) => [s, samples[s].flatMap((x) => x.latencies)]))
      if (loaded) loadMiBPerSec = Object.fromEntries(SIDES.map((s) => [s, samples[s].map((x) => x.loadMiBPerSec)]))
    }
    const streamed = path.join(dir, 'streamed.bin')
    const mid = path.join(dir, 'mid.bin')
    writeFilled(streamed, bigSize, 't')
    writeFilled(mid, STREAM_READ_SIZE, 'm')
    shares = await interleave(Object.keys(streamers), rounds, (side) => streamBeside(side, streamed, mid, STREAM_READ_SIZE, probeMs),
      (p) => progress(`stream share ${p}`))
  } finally {
    removeTmpDir(dir)
  }
  const stat = (cond, side, p) => percentile(latencies[cond][side], p)
  const micros = (cond, side, p) => fmtNum(stat(cond, side, p) * 1000)
  const rows = SIDES.map((side) => {
    const isNode = side !== 'fairfs-cb'
    return [
      side.replace('-', ' '),
      micros('idle', side, 50), micros('idle', side, 99),
      micros('loaded', side, 50), micros('loaded', side, 99),
      latencies.loaded[side].length.toLocaleString('en-US'),
      fmtNum(median(loadMiBPerSec[side])),
      isNode ? fmtRatio(stat('loaded', side, 50) / stat('loaded', 'fairfs-cb', 50)) : '—',
      isNode ? fmtRatio(stat('loaded', side, 99) / stat('loaded', 'fairfs-cb', 99)) : '—',
    ]
  })
  const ratios = ['node-cb', 'node-promises'].flatMap((side) => [50, 99].map((p) => ({
    label: `loaded p${p}: ${side.replace('-', ' ')} ÷ fairfs`,
    value: stat('loaded', side, p) / stat('loaded', 'fairfs-cb', p),
  })))
  return {
    notes: [
      `Load: ${BIG_LOOPS} concurrent loops re-reading a ${fmtSize(bigSize)} file with the same library as the small reads.`,
      `Small reads: one at a time for ${probeMs} ms per side and round, ${rounds} interleaved rounds; percentiles over the pooled samples.`,
    ],
    tables: [{
      caption: 'latency in µs; ratios = node latency ÷ fairfs latency (> 1 = fairfs faster)',
      columns: ['reader', 'idle p50', 'idle p99', 'loaded p50', 'loaded p99', 'loaded samples', 'big reads MiB/s',
        'loaded p50: node ÷ fairfs', 'loaded p99: node ÷ fairfs'],
      rows,
    }, {
      caption: `one createReadStream (64 KiB highWaterMark) of ${fmtSize(bigSize)} next to ${STREAM_READERS} looping readFiles of ${fmtSize(STREAM_READ_SIZE)}, ` +
        `${probeMs} ms per side and round, medians; a fair share is 1.00× (the stream is one reader among ${STREAM_READERS + 1})`,
      columns: ['reader', 'stream MiB/s', 'each readFile MiB/s', 'stream share ÷ fair share'],
      rows: Object.entries(shares).map(([side, xs]) => {
        const stream = median(xs.map((x) => x.streamMiBPerSec))
        const each = median(xs.map((x) => x.readerMiBPerSec))
        return [side.replace('-cb', ''), fmtNum(stream), fmtNum(each), fmtRatio(stream / each)]
      }),
    }],
    ratios,
    // Percentile summaries rather than every sample: an idle probe yields tens of thousands.
    raw: {
      latencyMs: Object.fromEntries(Object.entries(latencies).map(([cond, bySide]) => [cond, Object.fromEntries(
        Object.entries(bySide).map(([side, xs]) => [side, summarize(xs)]),
      )])),
      loadMiBPerSec,
      streamShares: shares,
    },
  }
}
