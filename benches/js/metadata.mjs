// metadata: stat, lstat, access, realpath and readdir calls per second, node:fs against
// fairfs, at c=1 and c=10, idle and next to 4 crypto.pbkdf2 hashes kept in flight on
// libuv's pool (what a login endpoint does to a server's fs.stat). Every call is the
// promise form on a cached entry; fairfs's stat and lstat may be answered on the
// calling thread (configure({ fastPath })), the others go through its pool.

import path from 'node:path'
import crypto from 'node:crypto'
import { fairfs, fsp, interleave, median, ratePerSecond, makeTmpDir, removeTmpDir, writeFilled, fmtNum, fmtRatio, percentile } from './common.mjs'

export const name = 'metadata'
export const title = 'metadata: stat, lstat, access, realpath and readdir calls/s, idle and next to 4 pbkdf2'

const HASHES = 4
const CALLS = ['stat', 'lstat', 'access', 'realpath', 'readdir']

/** Keeps `n` pbkdf2 hashes in flight until the returned stop() is called. */
function hashes(n) {
  let on = true
  const one = () => crypto.pbkdf2('secret', 'salt', 20_000, 64, 'sha512', () => on && one())
  for (let i = 0; i < n; i++) one()
  return () => { on = false }
}

export async function run({ quick, progress }) {
  const durationMs = quick ? 300 : 1000
  const rounds = quick ? 1 : 3
  const dir = makeTmpDir(name)
  const file = path.join(dir, 'f.txt')
  writeFilled(file, 1024, 'm')
  for (let i = 0; i < 20; i++) writeFilled(path.join(dir, `e-${i}`), 10, 'e')
  const args = { stat: [file], lstat: [file], access: [file], realpath: [file], readdir: [dir] }
  const sides = []
  for (const neighbour of ['idle', '4 pbkdf2']) {
    for (const c of [1, 10]) for (const call of CALLS) for (const lib of ['node', 'fairfs']) sides.push(`${call} c=${c}, ${neighbour}: ${lib}`)
  }
  let samples
  try {
    samples = await interleave(sides, rounds, async (side) => {
      const [, call, concurrent, neighbour, lib] = side.match(/^(\w+) c=(\d+), (.+): (\w+)$/)
      const api = lib === 'node' ? fsp : fairfs.promises
      const stop = neighbour === 'idle' ? () => {} : hashes(HASHES)
      const latencies = []
      try {
        const rate = await ratePerSecond(Number(concurrent), durationMs, (done) => {
          const t0 = process.hrtime.bigint()
          api[call](...args[call]).then(() => {
            latencies.push(Number(process.hrtime.bigint() - t0) / 1e6)
            done()
          }, done)
        })
        return { rate, p99: percentile(latencies, 99) }
      } finally {
        stop()
      }
    }, progress)
  } finally {
    removeTmpDir(dir)
  }
  const med = (side, key) => median(samples[side].map((s) => s[key]))
  const rows = []
  const ratios = []
  for (const neighbour of ['idle', '4 pbkdf2']) {
    for (const c of [1, 10]) {
      for (const call of CALLS) {
        const key = `${call} c=${c}, ${neighbour}`
        const [node, ours] = [`${key}: node`, `${key}: fairfs`]
        rows.push([key, fmtNum(med(node, 'rate')), fmtNum(med(ours, 'rate')), fmtNum(med(node, 'p99')), fmtNum(med(ours, 'p99')), fmtRatio(med(ours, 'rate') / med(node, 'rate'))])
        ratios.push({ label: `${key}: calls/s, fairfs ÷ node`, value: med(ours, 'rate') / med(node, 'rate') })
      }
    }
  }
  return {
    notes: [
      `The promise form of each call on a cached 1 KiB file (readdir: a directory of 20 entries), \`concurrent\` loops for ${durationMs} ms. "4 pbkdf2": this process keeps ${HASHES} crypto.pbkdf2 hashes (sha512, 20,000 iterations) in flight on libuv's pool meanwhile.`,
      `${rounds} interleaved rounds; medians. p99 in ms.`,
    ],
    tables: [{
      caption: 'calls per second and p99 latency (ms)',
      columns: ['call', 'node:fs calls/s', 'fairfs calls/s', 'node:fs p99', 'fairfs p99', 'fairfs ÷ node'],
      rows,
    }],
    ratios,
    raw: samples,
  }
}
