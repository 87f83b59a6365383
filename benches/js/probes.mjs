// Fresh processes measured side by side: each side runs benches/js/peers/probe.mjs in
// a process of its own over the same files, sides interleaved round by round. Used by
// the fresh benchmark (node:fs and fairfs) and by peers (with Bun and Deno).

import path from 'node:path'
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { KiB, MiB, interleave, median, makeTmpDir, removeTmpDir, writeFilled, fmtNum } from './common.mjs'

export const probe = path.join(path.dirname(fileURLToPath(import.meta.url)), 'peers', 'probe.mjs')

/** The probe's measurements: key, label, and whether higher is better. */
export const CASES = [
  ['big1', '16 MiB c=1, reads/s', true],
  ['big10', '16 MiB c=10, reads/s', true],
  ['big10MarkCompacts', 'the same: mark-compacts in 1.5 s', false],
  ['big10GcMs', 'the same: GC pause ms in 1.5 s', false],
  ['small1', '1 KiB c=1, reads/s', true],
  ['small10', '1 KiB c=10, reads/s', true],
  ['p99ms', '1 KiB every 2 ms under ten 256 MiB readers: p99 ms', false],
  ['maxMs', 'the same: max ms', false],
  ['latencyMarkCompacts', 'the same: mark-compacts in 3 s', false],
  ['latencyGcMs', 'the same: GC pause ms in 3 s', false],
  ['latencyGcMsPerGB', 'the same: GC pause ms per GB the readers read', false],
  ['streamForAwait', '256 MiB stream, default chunks, for await: GB/s', true],
  ['streamData', 'the same, data events: GB/s', true],
  ['stream1MiBForAwait', '256 MiB stream, 1 MiB highWaterMark, for await: GB/s', true],
  ['stream1MiBData', 'the same, data events: GB/s', true],
  ['streamForAwaitGcMs', 'GC pause ms over three default for-await streams', false],
  ['stream1MiBDataGcMs', 'GC pause ms over three 1 MiB data-event streams', false],
  ['peakRssMB', 'peak RSS of the process, MB', false],
]

/** Runs a probe process and gives the JSON of its last line of output. */
export function runProbe(cmd, args) {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`${cmd} ${args.join(' ')}: ${err.message}\n${stderr}`))
      resolve(JSON.parse(stdout.trim().split('\n').pop()))
    })
  })
}

/**
 * Runs `sides` ({ name: [command, args before the probe's own] }) in fresh processes,
 * `rounds` interleaved rounds after a warm-up; returns { side: [sample per round] }.
 */
export async function probeSides(sides, { quick, progress, rounds }) {
  const dir = makeTmpDir('probes')
  try {
    progress('writing files')
    for (let i = 0; i < 10; i++) writeFilled(path.join(dir, `big-${i}`), 16 * MiB, String(i))
    for (let i = 0; i < 1000; i++) writeFilled(path.join(dir, `small-${i}`), KiB, 's')
    writeFilled(path.join(dir, 'huge.bin'), 256 * MiB, 'h')
    return await interleave(Object.keys(sides), rounds, (side) => {
      const [cmd, args] = sides[side]
      return runProbe(cmd, [...args, dir, quick ? '1' : '0'])
    }, progress)
  } finally {
    removeTmpDir(dir)
  }
}

const finite = (xs) => xs.filter((x) => typeof x === 'number' && Number.isFinite(x))

/** The median of a side's samples of `key` (NaN where the side has none). */
export const med = (samples, side, key) => {
  const xs = finite(samples[side].map((s) => s[key]))
  return xs.length ? median(xs) : NaN
}

/** 'median (min–max)' of a side's samples of `key`, or '—'. */
export function cell(samples, side, key) {
  const xs = finite(samples[side].map((s) => s[key]))
  if (!xs.length) return '—'
  return `${fmtNum(median(xs))} (${fmtNum(Math.min(...xs))}–${fmtNum(Math.max(...xs))})`
}

/** One row per case, one column per side: medians with the rounds' spread. */
export function caseTable(samples, rounds) {
  const names = Object.keys(samples)
  return {
    caption: `median (min–max) of ${rounds} fresh processes per side`,
    columns: ['case', ...names],
    rows: CASES.filter(([key]) => names.some((n) => finite(samples[n].map((s) => s[key])).length))
      .map(([key, label]) => [label, ...names.map((n) => cell(samples, n, key))]),
  }
}
