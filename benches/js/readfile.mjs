// readfile: Node's benchmark/fs/readfile.js grid (len × concurrency × encoding),
// reads per second, every node:fs flavour next to fairfs.

import path from 'node:path'
import {
  KiB, MiB, fs, readers, checkLength, interleave, medians, ratePerSecond, syncRatePerSecond,
  makeTmpDir, removeTmpDir, writeFilled, fmtSize, fmtNum, fmtRatio,
} from './common.mjs'

export const name = 'readfile'
export const title = 'readfile: reads/s (Node benchmark/fs/readfile.js loop)'

const SIDES = ['node-cb', 'node-promises', 'node-sync', 'fairfs-cb', 'fairfs-promise']

export async function run({ quick, progress }) {
  const durationMs = quick ? 100 : 600
  const rounds = quick ? 2 : 5
  const dir = makeTmpDir(name)
  const rows = []
  const ratios = []
  const raw = []
  try {
    for (const len of [KiB, 16 * MiB]) {
      const file = path.join(dir, `${len}.bin`)
      writeFilled(file, len, 'x')
      for (const concurrent of [1, 10]) {
        for (const encoding of [null, 'utf-8']) {
          const label = `len=${fmtSize(len)} c=${concurrent} enc=${encoding ?? 'buffer'}`
          const options = { encoding }
          // 'x' is one byte in utf-8 too, so buffers and strings both have `len` units.
          const check = (data) => checkLength(data, len)
          const measure = (side) => {
            if (side === 'node-sync') {
              return syncRatePerSecond(durationMs, () => {
                const err = check(fs.readFileSync(file, options))
                if (err) throw err
              })
            }
            return ratePerSecond(concurrent, durationMs, readers[side](file, options, check))
          }
          const samples = await interleave(SIDES, rounds, measure, (p) => progress(`${label} ${p}`))
          const m = medians(samples)
          const bestNode = Math.max(m['node-cb'], m['node-promises'], m['node-sync'])
          const bestFairfs = Math.max(m['fairfs-cb'], m['fairfs-promise'])
          raw.push({ len, concurrent, encoding, samples })
          rows.push([
            fmtSize(len), String(concurrent), encoding ?? 'buffer',
            ...SIDES.map((s) => fmtNum(m[s])),
            fmtRatio(m['fairfs-cb'] / m['node-cb']),
            fmtRatio(m['fairfs-promise'] / m['node-promises']),
            fmtRatio(bestFairfs / bestNode),
          ])
          ratios.push({ label: `${fmtSize(len)} c=${concurrent} ${encoding ?? 'buffer'}: fairfs cb ÷ node cb`, value: m['fairfs-cb'] / m['node-cb'] })
        }
      }
    }
  } finally {
    removeTmpDir(dir)
  }
  return {
    notes: [
      `${rounds} interleaved rounds of ${durationMs} ms per side; each round counts completed reads (in-flight reads drain before the clock stops, as in Node's readfile.js).`,
      'node sync = readFileSync back to back (concurrency does not apply to it). "best" = the fastest flavour on each side, sync included.',
    ],
    tables: [{
      caption: 'reads/s (median); ratios > 1 = fairfs faster',
      columns: ['len', 'c', 'encoding', 'node cb', 'node promises', 'node sync', 'fairfs cb', 'fairfs promise',
        'fairfs cb ÷ node cb', 'fairfs promise ÷ node promises', 'fairfs best ÷ node best'],
      rows,
    }],
    ratios,
    raw,
  }
}
