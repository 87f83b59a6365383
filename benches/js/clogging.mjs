// clogging: Node's benchmark/fs/readfile-partitioned.js. `concurrent` readFile
// loops share the process with ONE zlib.deflate loop; node:fs reads and zlib
// queue on the same libuv threadpool, fairfs reads run on their own pool.
// The headline is how many zips/s survive next to the reads, relative to zlib alone.

import path from 'node:path'
import zlib from 'node:zlib'
import {
  fairfs, KiB, MiB, readers, checkLength, interleave, medians, loops,
  makeTmpDir, removeTmpDir, writeFilled, fmtSize, fmtNum, fmtRatio,
} from './common.mjs'

export const name = 'clogging'
export const title = 'clogging: readFile loops + one zlib.deflate loop (Node benchmark/fs/readfile-partitioned.js)'

const READ_SIDES = ['node-cb', 'node-promises', 'fairfs-cb']
const SIDES = ['zlib-alone', ...READ_SIDES]
const zipInput = Buffer.alloc(1024, 'a')

const zipOnce = (done) => zlib.deflate(zipInput, (err, out) => done(err ?? (out.length > 0 ? null : new Error('empty deflate output'))))

/** Reads/s and zips/s with both kinds of loops running for the same `durationMs`;
 *  for fairfs also what its contention governor did (kept in results.json), since
 *  zlib's share depends on how soon it backs off. */
async function measure(durationMs, concurrent, issueRead, isFairfs) {
  const before = isFairfs ? fairfs.stats() : undefined
  const end = performance.now() + durationMs
  const keepGoing = () => performance.now() < end
  const [reads, zips] = await Promise.all([
    issueRead ? loops(concurrent, issueRead, keepGoing) : null,
    loops(1, zipOnce, keepGoing),
  ])
  const after = isFairfs ? fairfs.stats() : undefined
  const governor = after && { backoffs: after.largeBackoffs - before.largeBackoffs, limitAtEnd: after.largeLimit, libuvThreads: after.libuvThreads }
  return { reads: reads ? reads.ops / reads.seconds : 0, zips: zips.ops / zips.seconds, governor }
}

export async function run({ quick, progress }) {
  const durationMs = quick ? 100 : 600
  const rounds = quick ? 2 : 5
  const dir = makeTmpDir(name)
  const zipRows = []
  const readRows = []
  const ratios = []
  const raw = []
  try {
    for (const len of [KiB, 16 * MiB]) {
      const file = path.join(dir, `${len}.bin`)
      writeFilled(file, len, 'x')
      for (const concurrent of [1, 10]) {
        for (const encoding of [null, 'utf-8']) {
          const label = `len=${fmtSize(len)} c=${concurrent} enc=${encoding ?? 'buffer'}`
          const check = (data) => checkLength(data, len)
          const samples = await interleave(
            SIDES, rounds,
            (side) => measure(durationMs, concurrent, side === 'zlib-alone' ? null : readers[side](file, { encoding }, check), side === 'fairfs-cb'),
            (p) => progress(`${label} ${p}`),
          )
          const zips = medians(Object.fromEntries(SIDES.map((s) => [s, samples[s].map((x) => x.zips)])))
          const reads = medians(Object.fromEntries(READ_SIDES.map((s) => [s, samples[s].map((x) => x.reads)])))
          const kept = Object.fromEntries(READ_SIDES.map((s) => [s, zips[s] / zips['zlib-alone']]))
          raw.push({ len, concurrent, encoding, samples })
          const cfg = [fmtSize(len), String(concurrent), encoding ?? 'buffer']
          zipRows.push([
            ...cfg, fmtNum(zips['zlib-alone']), ...READ_SIDES.map((s) => fmtNum(zips[s])),
            ...READ_SIDES.map((s) => `${(kept[s] * 100).toFixed(0)}%`),
            fmtRatio(kept['fairfs-cb'] / kept['node-cb']),
          ])
          readRows.push([
            ...cfg, ...READ_SIDES.map((s) => fmtNum(reads[s])),
            fmtRatio(reads['fairfs-cb'] / reads['node-cb']), fmtRatio(reads['fairfs-cb'] / reads['node-promises']),
          ])
          ratios.push({ label: `${fmtSize(len)} c=${concurrent} ${encoding ?? 'buffer'}: zips kept, fairfs ÷ node cb`, value: kept['fairfs-cb'] / kept['node-cb'] })
        }
      }
    }
  } finally {
    removeTmpDir(dir)
  }
  return {
    notes: [
      `${rounds} interleaved rounds of ${durationMs} ms per side; zlib alone is measured in the same rounds.`,
      'Reads/s and zips/s are reported separately (summing them, as the original benchmark did, hides who loses).',
      '"kept" = zips/s with the reads running ÷ zips/s of zlib alone (100% = reads do not slow zlib at all).',
    ],
    tables: [
      {
        caption: 'zlib.deflate throughput while reads run (headline); last column > 1 = fairfs leaves zlib more room',
        columns: ['len', 'c', 'encoding', 'zips/s alone', 'zips/s + node cb', 'zips/s + node promises', 'zips/s + fairfs',
          'kept: node cb', 'kept: node promises', 'kept: fairfs', 'fairfs kept ÷ node cb kept'],
        rows: zipRows,
      },
      {
        caption: 'reads/s during the same runs; ratios > 1 = fairfs faster',
        columns: ['len', 'c', 'encoding', 'node cb', 'node promises', 'fairfs cb', 'fairfs ÷ node cb', 'fairfs ÷ node promises'],
        rows: readRows,
      },
    ],
    ratios,
    raw,
  }
}
