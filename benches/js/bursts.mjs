// bursts: many reads started at once, as a server sees them. node:fs starts them all
// together (every file open, every buffer allocated); graceful-fs queues opens that
// meet EMFILE and retries them; fairfs admits reads under its open-file and byte
// limits. Each measurement runs in a child process of its own, so that `ulimit -n`
// and the peak RSS apply to that side alone.

import path from 'node:path'
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { readFileSync } from 'node:fs'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { MiB, interleave, median, makeTmpDir, removeTmpDir, writeFilled, fmtNum, fmtSize } from './common.mjs'

export const name = 'bursts'
export const title = 'bursts: concurrent reads past the fd limit, and past memory'

const SIDES = ['node:fs', 'graceful-fs', 'fairfs']

/** `readFile(file)` of each side, as a promise. */
function reader(side) {
  const require = createRequire(import.meta.url)
  if (side === 'node:fs') return require('node:fs').promises.readFile
  if (side === 'graceful-fs') {
    const gfs = require('graceful-fs')
    return (file) => new Promise((resolve, reject) => gfs.readFile(file, (err, data) => (err ? reject(err) : resolve(data))))
  }
  return require('../../index.js').promises.readFile
}

/** Child: `count` reads of `file` started at once, each result dropped on arrival. */
async function child({ side, file, count, size }) {
  const read = reader(side)
  globalThis.gc?.()
  const base = process.memoryUsage().rss
  const t0 = performance.now()
  let done = 0
  let errors = 0
  let short = 0
  await Promise.all(
    Array.from({ length: count }, () =>
      read(file).then(
        (data) => (data.length === size ? done++ : short++),
        () => errors++,
      ),
    ),
  )
  const ms = performance.now() - t0
  // VmHWM, this process's own high-water mark: getrusage's maxRSS keeps the parent's
  // across fork and exec, so in a full run (a bench process grown to ~1 GB) every side
  // read the same 949 MB.
  const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))
  const peak = hwm ? Number(hwm[1]) * 1024 : process.resourceUsage().maxRSS * 1024
  process.stdout.write(JSON.stringify({ done, errors, short, ms, peakAboveBaseMB: (peak - base) / 1e6 }))
}

function runChild(opts, fdLimit) {
  const self = fileURLToPath(import.meta.url)
  const cmd = `${fdLimit ? `ulimit -n ${fdLimit} && ` : ''}exec "${process.execPath}" --expose-gc "${self}" --child '${JSON.stringify(opts)}'`
  return new Promise((resolve, reject) => {
    const proc = spawn('sh', ['-c', cmd], { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    proc.stdout.setEncoding('utf8').on('data', (d) => { stdout += d })
    proc.stderr.setEncoding('utf8').on('data', (d) => { stderr += d })
    proc.on('error', reject)
    proc.on('close', (code) => (code === 0 ? resolve(JSON.parse(stdout)) : reject(new Error(`child exited ${code}: ${stderr.slice(-2000)}`))))
  })
}

export async function run({ quick, progress }) {
  const rounds = quick ? 1 : 3
  const scenarios = [
    { key: 'fds', count: 2000, size: 2 * MiB, fdLimit: 256, label: '2,000 × 2MiB, ulimit -n 256' },
    { key: 'memory', count: quick ? 40 : 150, size: 64 * MiB, fdLimit: 0, label: `${quick ? 40 : 150} × 64MiB` },
  ]
  const dir = makeTmpDir(name)
  const rows = []
  const ratios = []
  const raw = []
  try {
    for (const sc of scenarios) {
      const file = path.join(dir, `${sc.key}.bin`)
      writeFilled(file, sc.size, 'b')
      const samples = await interleave(SIDES, rounds, (side) => runChild({ side, file, count: sc.count, size: sc.size }, sc.fdLimit), (p) => progress(`${sc.key} ${p}`))
      raw.push({ scenario: sc.label, samples })
      const m = (side, field) => median(samples[side].map((s) => s[field]))
      for (const side of SIDES) {
        const count = (x) => Math.round(x).toLocaleString('en-US')
        rows.push([sc.label, side, count(m(side, 'done')), count(m(side, 'errors') + m(side, 'short')), fmtNum(m(side, 'ms')), fmtNum(m(side, 'peakAboveBaseMB'))])
      }
      ratios.push({ label: `${sc.label}: time, node:fs ÷ fairfs`, value: m('node:fs', 'ms') / m('fairfs', 'ms') })
      ratios.push({ label: `${sc.label}: peak RSS above idle, node:fs ÷ fairfs`, value: m('node:fs', 'peakAboveBaseMB') / m('fairfs', 'peakAboveBaseMB') })
    }
  } finally {
    removeTmpDir(dir)
  }
  return {
    notes: [
      'Each row: one child process per round starts every read at once (`promises.readFile`; graceful-fs\'s callback `readFile`) and drops each result on arrival; medians over ' +
        `${rounds} interleaved round${rounds > 1 ? 's' : ''}. "failed" counts errors (EMFILE) and short results; time is until the last read settles, failures included.`,
      `fairfs runs with its defaults: under ulimit -n 256 it opens at most 64 files at once, and it grants big files at most ${fmtSize(64 * MiB)} of result buffers at once.`,
    ],
    tables: [{
      caption: 'reads done, failed, ms until all settled, and peak RSS above the idle process (MB), medians',
      columns: ['burst', 'side', 'done', 'failed', 'ms', 'peak RSS above idle (MB)'],
      rows,
    }],
    ratios,
    raw,
  }
}

if (process.argv[2] === '--child' && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await child(JSON.parse(process.argv[3]))
}
