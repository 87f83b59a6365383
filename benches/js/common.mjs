// Shared helpers for the benchmark modules: the libraries under test, timing,
// statistics, interleaved rounds, request loops and temp files.

import fs from 'node:fs'
import fsp from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
export const fairfs = require('../../index.js')
export { fs, fsp }

export const KiB = 1024
export const MiB = 1024 * KiB

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** Milliseconds elapsed since `t0` (a `process.hrtime.bigint()` value). */
export const msSince = (t0) => Number(process.hrtime.bigint() - t0) / 1e6

export function median(xs) {
  const s = [...xs].sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2
}

/** Nearest-rank percentile, `p` in 0..100. */
export function percentile(xs, p) {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]
}

/**
 * Runs `measure(side)` for every side in every round and returns
 * `{ side: [sample per round] }`. An untimed warm-up round comes first (JIT,
 * lazily started thread pools, zlib and page cache state). The order rotates
 * each round so no side always runs first or right after the same neighbour:
 * GC debt, cache warmth and CPU frequency drift spread evenly over all sides.
 */
export async function interleave(sides, rounds, measure, progress) {
  const samples = Object.fromEntries(sides.map((s) => [s, []]))
  for (let r = -1; r < rounds; r++) {
    for (let i = 0; i < sides.length; i++) {
      const side = sides[(i + r + sides.length) % sides.length]
      progress?.(r < 0 ? `warm-up ${side}` : `round ${r + 1}/${rounds} ${side}`)
      const sample = await measure(side)
      if (r >= 0) samples[side].push(sample)
    }
  }
  return samples
}

/** `{ side: [samples] }` -> `{ side: median }`. */
export const medians = (samples) =>
  Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, median(v)]))

/**
 * Node's readfile.js loop: `concurrent` loops each issue a request and re-issue
 * it on completion while `keepGoing()` is true. `issue(done)` must call
 * `done(err)` asynchronously. Resolves `{ ops, seconds }` once every loop has
 * drained, so the elapsed time includes the requests still in flight at the end.
 */
export function loops(concurrent, issue, keepGoing) {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint()
    let ops = 0
    let running = concurrent
    let failed = null
    const done = (err) => {
      if (err) failed ??= err
      else ops++
      if (!failed && keepGoing()) issue(done)
      else if (--running === 0) failed ? reject(failed) : resolve({ ops, seconds: msSince(t0) / 1000 })
    }
    for (let i = 0; i < concurrent; i++) issue(done)
  })
}

/** `loops` for a fixed duration; resolves operations per second. */
export async function ratePerSecond(concurrent, durationMs, issue) {
  const end = performance.now() + durationMs
  const { ops, seconds } = await loops(concurrent, issue, () => performance.now() < end)
  return ops / seconds
}

/** Calls `fn()` back to back for `durationMs`; resolves calls per second. */
export function syncRatePerSecond(durationMs, fn) {
  const t0 = process.hrtime.bigint()
  const end = performance.now() + durationMs
  let ops = 0
  do {
    fn()
    ops++
  } while (performance.now() < end)
  return ops / (msSince(t0) / 1000)
}

/** Error for a result whose size is not the expected one (it also keeps the read from being optimized away). */
export const checkLength = (data, expected) =>
  data.length === expected ? null : new Error(`read ${data.length} units, expected ${expected}`)

/** Adapters giving every readFile flavour the `issue(done)` shape used by `loops`. */
export const readers = {
  'node-cb': (file, options, check) => (done) => fs.readFile(file, options, (err, data) => done(err ?? check(data))),
  'node-promises': (file, options, check) => (done) =>
    fsp.readFile(file, options).then((data) => done(check(data)), done),
  'fairfs-cb': (file, options, check) => (done) => fairfs.readFile(file, options, (err, data) => done(err ?? check(data))),
  'fairfs-promise': (file, options, check) => (done) =>
    fairfs.readFile(file, options).then((data) => done(check(data)), done),
}

const tmpDirs = new Set()

/** A fresh directory under os.tmpdir(); removed by `removeTmpDir` or `removeAllTmpDirs`. */
export function makeTmpDir(name) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `fairfs-bench-${name}-`))
  tmpDirs.add(dir)
  return dir
}

export function removeTmpDir(dir) {
  fs.rmSync(dir, { recursive: true, force: true })
  tmpDirs.delete(dir)
}

export function removeAllTmpDirs() {
  for (const dir of tmpDirs) removeTmpDir(dir)
}

/** Writes `size` bytes repeating `fill` in 1 MiB pieces, so a 1 GB file needs no 1 GB buffer. */
export function writeFilled(file, size, fill) {
  const piece = Buffer.alloc(Math.min(size, MiB), fill)
  const fd = fs.openSync(file, 'w')
  try {
    for (let written = 0; written < size; ) written += fs.writeSync(fd, piece, 0, Math.min(piece.length, size - written))
  } finally {
    fs.closeSync(fd)
  }
}

/** '1KiB', '16MiB', '3300B'. */
export function fmtSize(bytes) {
  if (bytes >= MiB && bytes % MiB === 0) return `${bytes / MiB}MiB`
  if (bytes >= KiB && bytes % KiB === 0) return `${bytes / KiB}KiB`
  return `${bytes}B`
}

/** Whole numbers with thousands separators from 100 up, else one or two decimals. */
export function fmtNum(x) {
  if (!Number.isFinite(x)) return String(x)
  if (Math.abs(x) >= 100) return Math.round(x).toLocaleString('en-US')
  return x.toFixed(Math.abs(x) >= 10 ? 1 : 2)
}

export const fmtRatio = (x) => (Number.isFinite(x) ? `${x.toFixed(2)}×` : '—')

/** A benchmark's table of its `ratios` ({ label, value }). */
export const ratioTable = (ratios) => ({
  caption: 'ratios > 1 favour fairfs',
  columns: ['ratio', 'value'],
  rows: ratios.map((r) => [r.label, fmtRatio(r.value)]),
})

/** Cell text for a fairfs API that does not exist yet. */
export const NOT_IMPLEMENTED = 'not implemented yet'
